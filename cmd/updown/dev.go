package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/worker"
)

// demoCustomers are dev mode's fixed customers, one per plan (DESIGN 3).
func demoCustomers() []store.Customer {
	out := make([]store.Customer, 0, len(store.Tiers))
	for _, t := range store.Tiers {
		name := strings.ToLower(string(t))
		out = append(out, store.Customer{Email: name + "@example.com", Name: "Demo " + name, Tier: t})
	}
	return out
}

// devTokenSecret signs bearer tokens in dev mode unless TOKEN_SECRET is
// set; it is printed at start, so it must never sign production tokens.
const devTokenSecret = "updown-dev-token-secret-not-for-production"

// demoKey is the fixed dev key of a tier, e.g. ud_dev_pro_trial.
func demoKey(t store.Tier) string { return api.DevKeyPrefix + strings.ToLower(string(t)) }

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Dev is for one machine: loopback unless --addr says otherwise, and
	// Postgres only when named here, never DATABASE_URL (DESIGN 3).
	addr := fs.String("addr", "127.0.0.1:"+envOr("PORT", "8080"), "listen address (env PORT, on 127.0.0.1); e.g. :8080 for every interface")
	databaseURL := fs.String("database", "", "use this Postgres database instead of the in-memory store: an empty one, or one dev made (DATABASE_URL is ignored)")
	seed := fs.Int64("seed", 1, "generator seed (same seed, same data)")
	perMarket := fs.Int("snapshots-per-market", 1000, "at most this many generated snapshots per market")
	collectEvery := fs.Duration("collect-every", 5*time.Second, "how often the dev collector moves generated data to the present (0: never)")
	fs.Usage = commandUsage(fs, "updown dev [flags]\n\nThe api, a worker and generated data in one process, on an embedded Redis and the in-memory store;\n"+
		"demo keys and built-in secrets that work only here.", devEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *collectEvery < 0 {
		return fmt.Errorf("dev: --collect-every %v: want a duration above 0, or 0 for never", *collectEvery)
	}
	if err := checkPerMarket(*perMarket); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	start := time.Now()
	// The address first: a port another process holds is told at once,
	// before seconds of data generation and a worker that would be wasted.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		// Another process holding the address is the common case; an
		// address of the wrong form (--addr 8080) was told as one too.
		var form *net.AddrError
		switch {
		case errors.As(err, &form):
			return fmt.Errorf("dev: cannot listen on %q: want host:port, e.g. 127.0.0.1:8080 or :8080 (every interface): %w", *addr, err)
		case errors.Is(err, syscall.EADDRINUSE):
			return fmt.Errorf("dev: cannot listen on %s (another updown dev, or another server, may hold it: stop it, or give --addr or PORT): %w", *addr, err)
		}
		return fmt.Errorf("dev: cannot listen on %s: %w", *addr, err)
	}
	defer ln.Close() // on an early return; serving closes it too
	log := newLogger(stderr, "text")
	if os.Getenv("DATABASE_URL") != "" && *databaseURL == "" {
		log.Info("DATABASE_URL is ignored: updown dev uses Postgres only when given --database")
	}

	// The settings next: one in a form it does not take is told at once,
	// naming it, before seconds of data generation.
	generator, err := aiGenerator(envOr("AI_PROVIDER", strategy.ProviderBuiltin))
	if err != nil {
		return err
	}
	secret, secretNote := []byte(devTokenSecret), "built in: "+devTokenSecret
	if os.Getenv("TOKEN_SECRET") != "" {
		if secret, err = tokenSecret(); err != nil {
			return err
		}
		secretNote = "from TOKEN_SECRET"
	}
	hookSecret, hookNote := api.DevWebhookSecret, "built in: "+api.DevWebhookSecret
	if os.Getenv("WEBHOOK_SECRET") != "" {
		if hookSecret, err = webhookSecret(); err != nil {
			return err
		}
		hookNote = "from WEBHOOK_SECRET"
	}
	if err := checkAPISettings(); err != nil {
		return err
	}
	secrets := []string{
		"Token secret (bearer tokens): " + secretNote,
		"Webhook secret (POST /v1/webhook/dodo, Standard Webhooks): " + hookNote,
	}

	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return fmt.Errorf("start embedded redis: %w", err)
	}
	defer mr.Close()
	mr.ClockTTL(true) // let TTLs (Asynq leases, rate-limit windows) expire on the wall clock
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	cfg := genConfig(*seed, *perMarket, start)
	st, storeName, reused, err := devStore(ctx, *databaseURL, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := ensureDemoCustomers(ctx, st); err != nil {
		return err
	}
	live := redislive.New(rdb, redislive.DefaultPrefix)
	liveStats, err := gen.LoadLive(ctx, cfg, live)
	if err != nil {
		return fmt.Errorf("load live exchange data: %w", err)
	}
	log.Info("loaded live exchange data", "depth", liveStats.Depth, "trades", liveStats.Trades)

	reg := newRegistry(rdb, log)
	// A small replay cache: dev keeps its whole store in memory already,
	// and promises to stay under 1 GiB.
	w, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: log, Metrics: reg, CacheBytes: 64 << 20,
		Backtest: worker.BacktestConfig{Generator: generator}})
	if err != nil {
		return err
	}
	srv, jobs, err := newAPIServer(ctx, apiDeps{store: st, rdb: rdb, connOpt: asynq.RedisClientOpt{Addr: mr.Addr()}, reg: reg, log: log, dev: true,
		tokenSecret: secret, webhookSecret: hookSecret})
	if err != nil {
		return err
	}
	defer jobs.Close()

	g, gctx := errgroup.WithContext(ctx)
	stopWaitingBeforeGrace(gctx, jobs) // as runAPI
	g.Go(func() error { return w.Run(gctx) })
	if *collectEvery > 0 {
		dc := &devCollector{store: st, live: live, cfg: cfg, log: log, last: cfg.Now}
		if reused {
			if dc, err = resumeDevCollector(ctx, st, live, cfg, log); err != nil {
				return err
			}
		}
		g.Go(func() error { return dc.run(gctx, *collectEvery) })
	}
	g.Go(func() error {
		return serveOn(gctx, "api", ln, srv, log, func(a net.Addr) {
			printBanner(stdout, a, storeName, time.Since(start), secrets)
		})
	})
	return g.Wait()
}

// devStore is the memory store filled with generated data, or, given
// --database, that Postgres database once dev has claimed it as its own
// (claimDevDatabase), migrated, and seeded when it has no markets yet;
// reused when it has (an earlier dev's data, which the collector goes on
// from: resumeDevCollector).
func devStore(ctx context.Context, databaseURL string, cfg gen.Config, log *slog.Logger) (store.Store, string, bool, error) {
	if databaseURL == "" {
		st := memory.New()
		stats, err := gen.Seed(ctx, cfg, st)
		if err != nil {
			return nil, "", false, fmt.Errorf("generate dev data: %w", err)
		}
		log.Info("generated dev data", "markets", stats.Markets, "snapshots", stats.Snapshots)
		return st, "memory (generated data)", false, nil
	}
	st, err := openPostgres(ctx, databaseURL, false)
	if err != nil {
		return nil, "", false, err
	}
	fresh, err := claimDevDatabase(ctx, st.Pool())
	if err != nil {
		st.Close()
		return nil, "", false, err
	}
	if fresh {
		log.Info("claimed an empty database for dev: marked it as dev's own (table " + devMarkerTable + ")")
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, "", false, fmt.Errorf("migrate: %w", err)
	}
	demo := map[string][]byte{}
	for _, c := range demoCustomers() {
		demo[demoKey(c.Tier)] = api.HashKey(demoKey(c.Tier))
	}
	restored, err := restoreRevokedKeys(ctx, st.Pool(), demo)
	if err != nil {
		st.Close()
		return nil, "", false, err
	}
	if len(restored) > 0 {
		log.Info("restored demo keys an earlier run revoked: they are fixed, printed below, and always work in dev", "keys", restored)
	}
	n, err := st.CountMarkets(ctx, store.MarketFilter{})
	if err != nil {
		st.Close()
		return nil, "", false, fmt.Errorf("count markets: %w", err)
	}
	if n == 0 {
		stats, err := gen.Seed(ctx, cfg, st)
		if err != nil {
			st.Close()
			return nil, "", false, fmt.Errorf("seed database: %w", err)
		}
		log.Info("seeded database", "markets", stats.Markets, "snapshots", stats.Snapshots)
	}
	return st, "postgres", n > 0, nil
}

// ensureDemoCustomers creates the demo customers and their fixed keys, or
// leaves them as they are when they exist (a reused database).
func ensureDemoCustomers(ctx context.Context, st store.CustomerStore) error {
	for _, c := range demoCustomers() {
		created, err := st.CreateCustomer(ctx, c)
		if errors.Is(err, store.ErrConflict) {
			created, err = st.GetCustomerByEmail(ctx, c.Email)
		}
		if err != nil {
			return fmt.Errorf("demo customer %s: %w", c.Email, err)
		}
		if _, err := st.CreateAPIKey(ctx, api.KeyRecord(created.ID, demoKey(c.Tier))); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("demo key for %s: %w", c.Email, err)
		}
	}
	return nil
}

func printBanner(w io.Writer, a net.Addr, storeName string, took time.Duration, secrets []string) {
	host := a.String()
	if tcp, ok := a.(*net.TCPAddr); ok && (tcp.IP.IsUnspecified() || tcp.IP == nil) {
		host = fmt.Sprintf("localhost:%d", tcp.Port)
	}
	base := "http://" + host
	fmt.Fprintf(w, "\nupdown dev is up in %.1fs (store: %s, redis: embedded)\n\n", took.Seconds(), storeName)
	fmt.Fprintf(w, "  Dashboard  %s/app/ (sign in with a demo key below)\n", base)
	fmt.Fprintf(w, "  API        %s/v1/markets?coin=BTC\n", base)
	fmt.Fprintf(w, "  Docs       %s/docs\n", base)
	fmt.Fprintf(w, "  OpenAPI    %s/openapi.json\n", base)
	fmt.Fprintf(w, "  Monitoring %s/monitoring/\n", base)
	fmt.Fprintf(w, "  Health     %s/healthz  %s/readyz  %s/metrics\n\n", base, base, base)
	fmt.Fprintln(w, "  Demo API keys (send as X-API-Key; they work only in dev mode):")
	for _, c := range demoCustomers() {
		fmt.Fprintf(w, "    %-11s %-22s %s\n", c.Tier, demoKey(c.Tier), c.Email)
	}
	fmt.Fprintln(w)
	for _, line := range secrets {
		fmt.Fprintln(w, "  "+line)
	}
	fmt.Fprintf(w, "\n  Try: curl -H 'X-API-Key: %s' '%s/v1/markets?coin=BTC&limit=2'\n\n", demoKey(store.Pro), base)
	if tcp, ok := a.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		// The address was asked for (--addr, PORT on every interface):
		// say what it exposes, as the demo keys are fixed and printed, and
		// the built-in secrets are in the source.
		fmt.Fprintf(w, "  WARNING: dev is listening on %s, reachable beyond this machine: whoever reaches it can use the demo keys, "+
			"/monitoring and, unless TOKEN_SECRET and WEBHOOK_SECRET are set, forge bearer tokens and billing webhooks "+
			"with the built-in secrets. Dev is for one machine: leave --addr at 127.0.0.1 unless this is what you want.\n\n", a)
	}
}
