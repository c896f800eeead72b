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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/worker"
)

// serviceFlags are the flags every service process shares.
type serviceFlags struct {
	addr        string
	databaseURL string
	redisURL    string
}

func (f *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", ":"+envOr("PORT", "8080"), "listen address (env PORT)")
	f.registerBackends(fs)
}

// registerBackends registers --database-url and --redis-url, whose
// defaults, from the environment, -h shows without their passwords.
func (f *serviceFlags) registerBackends(fs *flag.FlagSet) {
	urlFlagVar(fs, &f.databaseURL, "database-url", envOr("DATABASE_URL", ""), "Postgres `URL` (env DATABASE_URL)")
	urlFlagVar(fs, &f.redisURL, "redis-url", envOr("REDIS_URL", ""), "Redis `URL` (env REDIS_URL)")
}

// require checks that the flags name both backends, and parses
// REDIS_URL, once, for openBackends.
func (f *serviceFlags) require() (redisConn, error) {
	var missing []string
	if f.databaseURL == "" {
		missing = append(missing, "DATABASE_URL")
	}
	if f.redisURL == "" {
		missing = append(missing, "REDIS_URL")
	}
	if len(missing) > 0 {
		return redisConn{}, fmt.Errorf("%s must be set (or use `updown dev` for an embedded setup)", strings.Join(missing, " and "))
	}
	// A REDIS_URL that does not parse is told before the process listens
	// or connects: a port another process holds must not hide it.
	return parseRedisURL(f.redisURL)
}

func runAPI(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.register(fs)
	migrateOnStart, _ := strconv.ParseBool(envOr("MIGRATE_ON_START", "true")) // checkEnv took its form
	migrate := fs.Bool("migrate", migrateOnStart, "apply migrations at start (env MIGRATE_ON_START)")
	fs.Usage = commandUsage(fs, "updown api [flags]\n\nThe HTTP API: market data, replays and backtests (run by workers), the Backtest AI agent, billing webhooks.", apiEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rconn, err := f.require()
	if err != nil {
		return err
	}
	secret, err := tokenSecret()
	if err != nil {
		return err
	}
	hookSecret, err := webhookSecret()
	if err != nil {
		return err
	}
	if err := refuseDevSecrets(secret, hookSecret); err != nil {
		return err
	}
	monToken, err := monitoringToken()
	if err != nil {
		return err
	}
	if err := checkAPISettings(); err != nil {
		return err
	}
	log := newLogger(stderr, "json")
	// The address is served from the start, as a worker's ops address is:
	// an api migrating the database or waiting for the schema is alive
	// (/healthz 200), not ready (/readyz 503), and answers everything else
	// 503 (startingAPI); it swaps in the api once its backends are open.
	// Opened only then, a liveness probe found nothing listening and
	// restarted it, in a loop for as long as a migration took.
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("--addr (PORT): listen on %s: %w", f.addr, err)
	}
	h := &swapHandler{}
	h.set(startingAPI(log))
	g, gctx := errgroup.WithContext(ctx)
	served := make(chan struct{})
	g.Go(func() error {
		defer close(served)
		return serveOn(gctx, "api", ln, h, log, nil)
	})
	g.Go(func() error {
		b, closeBackends, err := openBackends(gctx, f.databaseURL, rconn, *migrate, log)
		if err != nil {
			return err
		}
		defer closeBackends()
		// A request's reads take milliseconds: one Postgres does not
		// answer (frozen, cut off without a reset) answers 503 after this
		// rather than hanging until its client gives up. Set after the
		// migration, which may take long.
		b.store.SetQueryTimeout(apiQueryTimeout)
		st, rdb, connOpt := b.store, b.rdb, b.connOpt
		srv, jobs, err := newAPIServer(gctx, apiDeps{store: st, rdb: rdb, connOpt: connOpt, reg: newRegistry(rdb, log), log: log,
			tokenSecret: secret, webhookSecret: hookSecret, monitoringToken: monToken})
		if err != nil {
			return err
		}
		defer jobs.Close()
		stopWaitingBeforeGrace(gctx, jobs)
		h.set(srv)
		log.Info("api ready: the database and Redis are open, requests are served", "addr", ln.Addr().String())
		// The backends stay open until the server has finished the
		// requests in flight (graceful shutdown).
		<-served
		return nil
	})
	return g.Wait()
}

// apiQueryTimeout bounds each of the api's queries (SetQueryTimeout).
const apiQueryTimeout = store.DefaultQueryTimeout

// startingAPI answers for an api still opening its backends (migrating,
// or waiting for the schema): the ops endpoints of waitingOps, and 503
// SERVICE_UNAVAILABLE to any other request.
func startingAPI(log *slog.Logger) http.Handler {
	ops := waitingOps(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			ops.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the api is starting (opening the database and Redis, or waiting for the schema); retry with backoff"},"timestamp":%q}`+"\n",
			time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	})
}

// stopWaitingBeforeGrace lets requests waiting on jobs go on waiting after
// ctx is done (SIGTERM) for most of the server's grace period, so that a
// job that finishes in it is answered, and then ends their waits: they
// answer 504 JOB_TIMEOUT with the job's id, fetchable later, before the
// grace period ends, rather than being cut off with no answer at all.
func stopWaitingBeforeGrace(ctx context.Context, jobs *worker.Client) {
	go func() {
		<-ctx.Done()
		time.AfterFunc(shutdownGrace-shutdownGrace/5, jobs.StopWaiting)
	}()
}

func runWorker(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.registerBackends(fs) // no --addr: a worker listens on its ops address only
	concurrency := fs.Int("concurrency", 0, "tasks run at once (default 8 per CPU; large replays wait for WORKER_MEMORY_MB)")
	shutdownTimeout := fs.Duration("shutdown-timeout", envDuration("SHUTDOWN_TIMEOUT", defaultShutdownTimeout),
		"on SIGTERM, how long running tasks may finish before they go back to the queue (env SHUTDOWN_TIMEOUT)")
	cacheMiB := fs.Int64("cache-mib", envInt64("REPLAY_CACHE_MIB", worker.DefaultCacheBytes>>20),
		"memory for the tapes of resolved markets kept for the next replay, in MiB; 0 turns it off (env REPLAY_CACHE_MIB)")
	fs.String("ops-addr", opsAddrOf("WORKER_ADDR", ":9090"), "address of /healthz, /readyz and /metrics (env WORKER_ADDR, else :$PORT, else :9090; "+
		"\"off\" disables); without this flag or WORKER_ADDR, a worker whose address is taken (by another worker) serves none")
	fs.Usage = commandUsage(fs, "updown worker [flags]\n\nAn Asynq worker: replays, backtest shards, strategy generation, market resolution.", workerEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkWorkerFlags(*concurrency, *shutdownTimeout, *cacheMiB); err != nil {
		return err
	}
	rconn, err := f.require()
	if err != nil {
		return err
	}
	generator, err := aiGenerator(os.Getenv("AI_PROVIDER"))
	if err != nil {
		return err
	}
	memory, err := workerMemory()
	if err != nil {
		return err
	}
	log := newLogger(stderr, "json")
	// The ops address opens first: a worker waiting for the schema (or
	// its backends) is alive, and says so on /healthz, while /readyz
	// answers 503 until the worker runs (waitingOps).
	opsLn, err := listenOps(fs, "ops-addr", "worker", "WORKER_ADDR", log)
	if err != nil {
		return fmt.Errorf("--ops-addr (WORKER_ADDR): %w", err)
	}
	return runWithOps(ctx, "worker", opsLn, log, func(gctx context.Context, ops *swapHandler) error {
		b, closeBackends, err := openBackends(gctx, f.databaseURL, rconn, false, log)
		if err != nil {
			return err
		}
		defer closeBackends()
		st, rdb := b.store, b.rdb
		reg := newRegistry(rdb, log)
		w, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: log, Concurrency: *concurrency, Metrics: reg,
			ShutdownTimeout: *shutdownTimeout, CacheBytes: cacheBytes(*cacheMiB), MemoryBudget: memory,
			Backtest: worker.BacktestConfig{Generator: generator}})
		if err != nil {
			return err
		}
		ops.set(api.OpsHandler(reg, b.checks(), log))
		return w.Run(gctx)
	})
}

// runWithOps runs run beside the process's ops address (ln; nil: none),
// served from the start: "alive, not ready" (waitingOps) while run opens
// the backends or waits for the schema, then whatever run sets on ops.
func runWithOps(ctx context.Context, name string, ln net.Listener, log *slog.Logger, run func(ctx context.Context, ops *swapHandler) error) error {
	ops := &swapHandler{}
	ops.set(waitingOps(log))
	g, gctx := errgroup.WithContext(ctx)
	if ln != nil {
		g.Go(func() error { return serveOn(gctx, name+" ops", ln, ops, log, nil) })
	}
	g.Go(func() error { return run(gctx, ops) })
	return g.Wait()
}

// swapHandler serves the handler last set: a process's ops endpoints
// before and after its backends are ready.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// waitingOps are the ops endpoints of a process still opening its
// backends (waiting for the schema): alive, not ready, and the Go
// runtime's metrics.
func waitingOps(log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return api.OpsHandler(reg, map[string]func(context.Context) error{
		"startup": func(context.Context) error {
			return fmt.Errorf("%w: opening the database and Redis, or waiting for the schema", api.ErrStarting)
		},
	}, log)
}

// checkWorkerFlags refuses worker settings in a form they do not take, as
// checkEnv does their variables: a --shutdown-timeout of 0 was read as the
// default and a negative one as no time at all, a negative --concurrency
// as the default, a --cache-mib beyond an int64 of bytes wrapped round.
func checkWorkerFlags(concurrency int, shutdownTimeout time.Duration, cacheMiB int64) error {
	switch {
	case concurrency < 0:
		return fmt.Errorf("--concurrency %d: want a number of tasks above 0, or 0 for the default (8 per CPU)", concurrency)
	case shutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout %v (env SHUTDOWN_TIMEOUT): want a duration above 0, such as 25s", shutdownTimeout)
	case cacheMiB > maxMiB:
		return fmt.Errorf("--cache-mib %d (env REPLAY_CACHE_MIB): want a number of MiB, at most %d (0: off)", cacheMiB, int64(maxMiB))
	}
	return nil
}

// listenOps opens the ops address of a process, the value of fs's flag
// flagName (what: worker, collector; env: the variable that sets it); nil
// when it is "off". An address the operator chose (the flag or env set)
// must be had; the default one, when taken, most likely by another such
// process on the machine started without a PORT of its own, is given up
// with a warning rather than the process: work matters more than its
// metrics.
func listenOps(fs *flag.FlagSet, flagName, what, env string, log *slog.Logger) (net.Listener, error) {
	addr := fs.Lookup(flagName).Value.String()
	explicit := os.Getenv(env) != ""
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == flagName })
	if addr == "off" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case !explicit && errors.Is(err, syscall.EADDRINUSE):
		log.Warn(what+" ops address taken, serving no /healthz, /readyz or /metrics: set "+env+" (or PORT) per process to have them",
			"addr", addr)
		return nil, nil
	default:
		return nil, fmt.Errorf("%s ops: listen on %s: %w", what, addr, err)
	}
}

// opsAddrOf is where a process serves its health and metrics: the
// variable env, else PORT (Procfile runners give each process its own),
// else fallback.
func opsAddrOf(env, fallback string) string {
	if a := os.Getenv(env); a != "" {
		return a
	}
	if p := os.Getenv("PORT"); p != "" {
		return ":" + p
	}
	return fallback
}

// newRegistry is a process's Prometheus registry: Go runtime, process and
// Asynq queue metrics.
func newRegistry(rdb redis.UniversalClient, log *slog.Logger) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		worker.NewQueueCollector(rdb, log))
	return reg
}

// backends are a service process's Postgres and Redis.
type backends struct {
	store   *postgres.Store
	rdb     redis.UniversalClient
	connOpt asynq.RedisConnOpt
}

// checks are the readiness checks of a process using the backends.
func (b backends) checks() map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"store": storeReady(b.store),
		"redis": func(ctx context.Context) error { return b.rdb.Ping(ctx).Err() },
	}
}

// storeReady is the readiness check of st: the database answers, and its
// schema is at this build's version or newer. A database recreated empty
// or restored from an older backup under a running process answers a
// ping while every request on it fails, so a ping alone kept /readyz
// ready while the api answered 500 to all.
func storeReady(st *postgres.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		have, want, err := schemaVersions(ctx, st)
		if err != nil {
			return err
		}
		if have < want {
			return fmt.Errorf("database schema version %d is older than this build's %d: run updown migrate", have, want)
		}
		return nil
	}
}

// openBackends opens the Postgres of databaseURL and the Redis of conn
// (serviceFlags.require); close releases both. Postgres is migrated when
// asked, else waited for until another process has migrated it
// (waitForSchema).
func openBackends(ctx context.Context, databaseURL string, conn redisConn, migrate bool, log *slog.Logger) (b backends, close func(), err error) {
	st, err := openPostgres(ctx, databaseURL, false)
	if err != nil {
		return b, nil, err
	}
	if migrate {
		err = migrateSaying(ctx, st, log)
	} else {
		err = waitForSchema(ctx, st, log, schemaPoll)
	}
	if err != nil {
		st.Close()
		return b, nil, err
	}
	rdb, err := openRedis(ctx, conn)
	if err != nil {
		st.Close()
		return b, nil, err
	}
	return backends{store: st, rdb: rdb, connOpt: conn.asynq}, func() { _ = rdb.Close(); st.Close() }, nil
}

func openPostgres(ctx context.Context, url string, migrate bool) (*postgres.Store, error) {
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := st.Ping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("database unreachable at DATABASE_URL: %w", err)
	}
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	return st, nil
}

// migrateSaying applies the migrations to st and logs, at INFO, what
// `updown migrate` prints (migratedMessage), with the version the schema
// was at when this process came to migrate it: a process migrating at
// start did it without a word. A
// schema newer than this build's is left as it is, and told by
// warnNewerSchema.
func migrateSaying(ctx context.Context, st *postgres.Store, log *slog.Logger) error {
	// The version found under the migration's lock (MigrateFrom): of
	// processes starting together, only the one that migrated says 0.
	from, err := st.MigrateFrom(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	have, want, err := schemaVersions(ctx, st)
	if err != nil {
		return err
	}
	if have <= want {
		log.Info(migratedMessage(have), "version", have, "from", from)
	} else {
		warnNewerSchema(log, have, want)
	}
	return nil
}

// schemaVersions reads the version st's schema is at and this build's.
func schemaVersions(ctx context.Context, st *postgres.Store) (have, want int, err error) {
	if want, err = postgres.LatestSchemaVersion(); err != nil {
		return 0, 0, err
	}
	if have, err = st.SchemaVersion(ctx); err != nil {
		return 0, 0, fmt.Errorf("read the database schema's version: %w", err)
	}
	return have, want, nil
}

// migratedMessage is what `updown migrate` says, and a process migrating
// at start logs, once the schema is at version (this build's).
func migratedMessage(version int) string {
	return fmt.Sprintf("migrations applied: schema at version %d", version)
}

// warnNewerSchema says that the database's schema, at version have, is
// newer than this build's want (a build rolled back, or an old binary
// deployed by mistake): the process runs on it, as README's Production
// allows, but the operator is told, as `updown migrate` tells it. The
// processes say it where they read the version anyway (migrateSaying,
// waitForSchema).
func warnNewerSchema(log *slog.Logger, have, want int) {
	log.Warn(fmt.Sprintf("database schema version %d is newer than this build's %d: a newer build migrated it; this build runs on it, but README's Production says what an older build cannot read", have, want),
		"have", have, "want", want)
}

// schemaPoll is how often a process waiting for the schema looks again.
const schemaPoll = time.Second

// waitForSchema returns once the database's schema is at the version this
// build needs. The processes start together (Procfile) and only the api
// migrates: a worker or collector that queried before it did would fail
// on tables and columns not there yet, so it waits, saying so once.
func waitForSchema(ctx context.Context, st *postgres.Store, log *slog.Logger, every time.Duration) error {
	want, err := postgres.LatestSchemaVersion()
	if err != nil {
		return err
	}
	waited := false
	for {
		have, err := st.SchemaVersion(ctx)
		if err != nil {
			return fmt.Errorf("database schema: %w", err)
		}
		if have >= want {
			if waited {
				log.Info("database schema ready", "version", have)
			}
			if have > want {
				warnNewerSchema(log, have, want)
			}
			return nil
		}
		if !waited {
			waited = true
			log.Info(fmt.Sprintf("waiting for database schema version %d (have %d); run updown migrate or start the api", want, have),
				"want", want, "have", have)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for database schema version %d: %w", want, context.Cause(ctx))
		case <-time.After(every):
		}
	}
}

// apiDeps is what the api process (or dev) hands the api.
type apiDeps struct {
	store         store.Store
	rdb           redis.UniversalClient
	connOpt       asynq.RedisConnOpt // for the monitoring UI
	reg           *prometheus.Registry
	log           *slog.Logger
	dev           bool // accept the ud_dev_ demo keys
	tokenSecret   []byte
	webhookSecret string
	// monitoringToken, when set, turns the monitoring UI on in production,
	// behind HTTP Basic auth with it as the password; without it the UI is
	// off (dev has it open).
	monitoringToken string
}

// checkAPISettings refuses the api's settings that newAPIServer reads
// (JOBS_IN_FLIGHT, READS_IN_FLIGHT, MONITORING_WRITE,
// BILLING_PRODUCT_TIERS) in a form they do
// not take, so that a process tells of one, naming it, before it
// connects to anything or generates data, as checkEnv does.
func checkAPISettings() error {
	if _, err := jobsInFlight(); err != nil {
		return err
	}
	if _, err := readsInFlight(); err != nil {
		return err
	}
	if _, err := billingProductTiers(); err != nil {
		return err
	}
	_, err := monitoringWrite(os.Getenv)
	return err
}

// newAPIServer wires the api with its Redis-backed parts. The returned
// job client is closed by the caller when the server stops.
func newAPIServer(ctx context.Context, d apiDeps) (*api.Server, *worker.Client, error) {
	caps, err := jobsInFlight()
	if err != nil {
		return nil, nil, err
	}
	reads, err := readsInFlight()
	if err != nil {
		return nil, nil, err
	}
	// Heavy reads take at most half the pool's connections (readcap.go).
	heavy := 0
	checks := map[string]func(context.Context) error{
		"redis": func(ctx context.Context) error { return d.rdb.Ping(ctx).Err() },
	}
	if ps, ok := d.store.(*postgres.Store); ok {
		heavy = max(1, int(ps.Pool().Config().MaxConns)/2)
		checks["store"] = storeReady(ps)
	}
	write, err := monitoringWrite(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	products, err := billingProductTiers()
	if err != nil {
		return nil, nil, err
	}
	jobs, err := worker.NewClient(ctx, worker.ClientConfig{Redis: d.rdb, Logger: d.log})
	if err != nil {
		return nil, nil, err
	}
	mon := monitoringUI(d.connOpt, monitoringOptions{Dev: d.dev, AdminToken: d.monitoringToken, Write: write})
	srv, err := api.New(api.Config{
		Store:               d.store,
		Logger:              d.log,
		Metrics:             d.reg,
		Live:                redislive.New(d.rdb, redislive.DefaultPrefix),
		DevKeys:             d.dev,
		Monitoring:          mon,
		Jobs:                jobs,
		Sweeps:              jobs,
		JobWait:             envDuration("JOB_WAIT", 60*time.Second),
		JobsInFlight:        caps,
		ReadsInFlight:       reads,
		HeavyReads:          heavy,
		AI:                  api.AIConfig{TokenSecret: d.tokenSecret},
		Redis:               d.rdb,
		WebhookSecret:       d.webhookSecret,
		BillingProductTiers: products,
		PublicURL:           os.Getenv("PUBLIC_URL"),
		BillingURL:          os.Getenv("BILLING_URL"),
		Checks:              checks,
	})
	if err != nil {
		_ = jobs.Close()
		return nil, nil, err
	}
	return srv, jobs, nil
}

// tokenSecret reads TOKEN_SECRET, which signs bearer tokens: production
// refuses to start without one (DESIGN 3).
func tokenSecret() ([]byte, error) {
	s := os.Getenv("TOKEN_SECRET")
	if len(s) < api.MinTokenSecret {
		return nil, fmt.Errorf("TOKEN_SECRET must be set, at least %d bytes (e.g. openssl rand -hex 32)", api.MinTokenSecret)
	}
	return []byte(s), nil
}

// minMonitoringToken is the shortest MONITORING_ADMIN_TOKEN accepted.
const minMonitoringToken = 16

// monitoringToken reads MONITORING_ADMIN_TOKEN, the password of
// /monitoring (off when unset). Anyone who reaches the api can try
// passwords there as fast as the server answers, with no limit, and the UI
// shows every queue (and, with MONITORING_WRITE, changes them): a short
// token is refused at start, as a short TOKEN_SECRET is. The error never
// quotes the token.
func monitoringToken() (string, error) {
	s := os.Getenv("MONITORING_ADMIN_TOKEN")
	if s != "" && len(s) < minMonitoringToken {
		return "", fmt.Errorf("MONITORING_ADMIN_TOKEN is %d characters: at least %d are needed, since anyone who reaches the api can guess at it "+
			"(e.g. openssl rand -hex 16); leave it unset to keep /monitoring off", len(s), minMonitoringToken)
	}
	return s, nil
}

// refuseDevSecrets fails when either secret is one of the dev secrets,
// which are public (printed by `updown dev`, in the source): a production
// process holding one would accept forged tokens and webhooks. Keys are
// compared as the HMAC keys they are, so no other spelling of a dev secret
// (unpadded base64, say) gets through.
func refuseDevSecrets(token []byte, webhook string) error {
	if api.SameHMACKey(token, []byte(devTokenSecret)) {
		return errors.New("TOKEN_SECRET is the built-in dev secret, which is public: set a secret of your own (e.g. openssl rand -hex 32)")
	}
	if api.IsDevWebhookSecret(webhook) {
		return errors.New("WEBHOOK_SECRET is the built-in dev secret, which is public: set the billing provider's signing secret")
	}
	return nil
}

// webhookSecret reads WEBHOOK_SECRET, the billing provider's Standard
// Webhooks signing secret: production refuses to start without one.
func webhookSecret() (string, error) {
	s := os.Getenv("WEBHOOK_SECRET")
	if s == "" {
		return "", errors.New("WEBHOOK_SECRET must be set: the billing provider's webhook signing secret (whsec_...)")
	}
	// Told here, before anything connects, and naming the variable: api.New
	// refused a malformed one only once Postgres was migrated and Redis
	// reached, as "api: webhook secret: ...".
	if err := api.CheckWebhookSecret(s); err != nil {
		return "", fmt.Errorf("WEBHOOK_SECRET is not the billing provider's whsec_... signing secret: %w", err)
	}
	return s, nil
}

// aiGenerator is the Backtest AI generator of AI_PROVIDER (builtin, openai,
// or empty: openai when OPENAI_API_KEY or OPENAI_BASE_URL is set) and
// OPENAI_*.
func aiGenerator(provider string) (strategy.Generator, error) {
	return strategy.New(aiConfig(provider, os.Getenv))
}

// aiConfig is the generator's configuration from OPENAI_* as getenv reads
// them.
func aiConfig(provider string, getenv func(string) string) strategy.Config {
	timeout, _ := time.ParseDuration(getenv("OPENAI_TIMEOUT")) // checkEnv bounds it; 0: strategy.DefaultTimeout
	return strategy.Config{
		Provider: provider,
		APIKey:   getenv("OPENAI_API_KEY"),
		BaseURL:  getenv("OPENAI_BASE_URL"),
		Model:    getenv("OPENAI_MODEL"),
		Timeout:  timeout,
	}
}

// envDuration reads a duration such as "30s" from the environment.
func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}

// defaultShutdownTimeout is how long a stopping worker's running tasks may
// take to finish before they go back to the queue (SHUTDOWN_TIMEOUT).
const defaultShutdownTimeout = 25 * time.Second

// shutdownGrace is how long a stopping server's requests in flight may
// take to finish.
const shutdownGrace = 25 * time.Second

// serveOn serves h on ln, which it closes, until ctx is done, then shuts
// down gracefully: in-flight requests get up to shutdownGrace to finish.
// ready, when set, is called with the bound address once it serves.
func serveOn(ctx context.Context, name string, ln net.Listener, h http.Handler, log *slog.Logger, ready func(net.Addr)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info(name+" listening", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info(name+" stopped", "addr", ln.Addr().String())
	return nil
}

// envInt64 reads an integer variable, def when it is unset or not a number.
func envInt64(key string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(key), 10, 64); err == nil {
		return n
	}
	return def
}

// cacheBytes turns --cache-mib into worker.Config.CacheBytes, where 0 is
// the default and a negative size is off.
func cacheBytes(mib int64) int64 {
	if mib <= 0 {
		return -1
	}
	return mib << 20
}
