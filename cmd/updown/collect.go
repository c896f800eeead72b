package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/api"
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
	healthAddr := fs.String("health-addr", envOr("COLLECT_HEALTH_ADDR", ""), "serve /healthz, /readyz and /metrics at this address; off when empty (env COLLECT_HEALTH_ADDR)")
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
		ops := api.OpsHandler(newRegistry(rdb, log), b.checks(), log)
		g.Go(func() error { return serveHTTP(gctx, "collector ops", *healthAddr, ops, log, nil) })
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
