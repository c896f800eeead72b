package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/store"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/worker"
)

// runCollect is `updown collect`: it records markets, snapshots and
// exchange data from the upstreams into DATABASE_URL and REDIS_URL, and
// schedules each market's resolution for the workers.
func runCollect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	fs.StringVar(&f.databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres URL (env DATABASE_URL)")
	fs.StringVar(&f.redisURL, "redis-url", envOr("REDIS_URL", ""), "Redis URL (env REDIS_URL)")
	up := collect.UpstreamsFromEnv(os.Getenv)
	fs.StringVar(&up.Gamma, "gamma-url", up.Gamma, "Polymarket Gamma API base URL (env "+collect.EnvGammaURL+")")
	fs.StringVar(&up.CLOB, "clob-url", up.CLOB, "Polymarket CLOB API base URL (env "+collect.EnvCLOBURL+")")
	fs.StringVar(&up.PolymarketWS, "ws-url", up.PolymarketWS, "Polymarket CLOB websocket market channel URL, the first source of books; empty polls --clob-url only (env "+collect.EnvPolymarketWSURL+")")
	fs.StringVar(&up.BinanceSpot, "binance-spot-url", up.BinanceSpot, "Binance spot API base URL (env "+collect.EnvBinanceSpotURL+")")
	fs.StringVar(&up.BinanceFutures, "binance-futures-url", up.BinanceFutures, "Binance USDⓈ-M futures API base URL (env "+collect.EnvBinanceFuturesURL+")")
	interval := fs.Duration("interval", envDuration("COLLECT_INTERVAL", 300*time.Millisecond), "snapshot cadence (env COLLECT_INTERVAL)")
	bookLevels := fs.Int("book-levels", 10, "levels of each side of each book a snapshot keeps")
	seriesList := fs.String("series", envOr("COLLECT_SERIES", "all"), "series to record: all, or a list such as btc:5m,btc:15m,eth:1hr (env COLLECT_SERIES)")
	healthAddr := fs.String("health-addr", envOr("COLLECT_HEALTH_ADDR", ""), "serve /healthz and /readyz at this address; off when empty (env COLLECT_HEALTH_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := f.require(); err != nil {
		return err
	}
	series, err := parseSeries(*seriesList)
	if err != nil {
		return err
	}
	log := newLogger(stderr, "json")
	b, closeBackends, err := openBackends(ctx, f, false)
	if err != nil {
		return err
	}
	defer closeBackends()
	st, rdb := b.store, b.rdb

	c, err := collect.New(collect.Config{
		Upstreams:  up,
		Store:      st,
		Live:       redislive.New(rdb, redislive.DefaultPrefix),
		Scheduler:  worker.NewResolutionScheduler(rdb),
		Logger:     log,
		Series:     series,
		Interval:   *interval,
		BookLevels: *bookLevels,
	})
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.Run(gctx) })
	if *healthAddr != "" {
		checks := map[string]func(context.Context) error{
			"store": st.Ping,
			"redis": func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		}
		g.Go(func() error { return serveHealth(gctx, *healthAddr, checks, log) })
	}
	return g.Wait()
}

// parseSeries reads "all" or a comma-separated list of coin:type.
func parseSeries(v string) ([]collect.Series, error) {
	if strings.TrimSpace(v) == "" || strings.EqualFold(strings.TrimSpace(v), "all") {
		return nil, nil
	}
	var out []collect.Series
	for item := range strings.SplitSeq(v, ",") {
		coin, mt, ok := strings.Cut(strings.TrimSpace(item), ":")
		s := collect.Series{Coin: store.Coin(strings.ToUpper(coin)), MarketType: store.MarketType(strings.ToLower(mt))}
		if !ok || !s.MarketType.AvailableFor(s.Coin) {
			return nil, fmt.Errorf("--series: %q is not a coin:type SPEC allows (btc, eth, sol with 5m, 15m, 1hr; btc with 4hr, 24hr)", item)
		}
		out = append(out, s)
	}
	return out, nil
}

// serveHealth answers /healthz (the process is alive) and /readyz (the
// store and Redis answer) until ctx is done.
func serveHealth(ctx context.Context, addr string, checks map[string]func(context.Context) error, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for name, check := range checks {
			if err := check(ctx); err != nil {
				http.Error(w, name+" unreachable", http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("collector health endpoints listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("health: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("health: shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
