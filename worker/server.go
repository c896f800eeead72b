// Package worker runs updown's Asynq server: handlers that decode task
// payloads and call package jobs. It also holds the client side the api uses
// to enqueue work and wait for its result.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/jobs/throttle"
	"github.com/updown/updown/store"
)

// Config is what a worker process needs.
type Config struct {
	Redis  redis.UniversalClient
	Store  store.Store
	Logger *slog.Logger
	// Concurrency is the number of tasks run at once (8 per GOMAXPROCS
	// when 0). It is well above the CPUs: replays large enough to matter
	// are admitted by MemoryBudget, not by slots, and one customer's jobs
	// (capped by the api, DESIGN 4) must leave slots for everyone else's.
	Concurrency int
	// TaskCheckInterval is how long a server whose queues were empty
	// sleeps before it looks again. Asynq's 1 s default would add up to a
	// second to every synchronous request (DESIGN 7). The default here is
	// 1 ns, no sleep at all: the gate (wake.go) does the waiting instead,
	// until whoever enqueues says so, and a sleep could not be cut short by
	// a wake. Go sleeps no less than about a millisecond once its threads
	// are idle, so even a sleep of microseconds held up the first task
	// after a worker's queues ran dry by 1-1.5 ms (BenchmarkQueueOverhead).
	TaskCheckInterval time.Duration
	// Metrics, when set, receives the task duration histogram.
	Metrics prometheus.Registerer
	// Backtest configures multi-market backtests and strategy generation.
	Backtest BacktestConfig
	// ShutdownTimeout bounds how long shutdown waits for running tasks
	// before returning them to the queue (default 25 s).
	ShutdownTimeout time.Duration
	// CacheBytes bounds the tapes of resolved markets the worker keeps for
	// the next replay of the same market (DefaultCacheBytes when 0; a
	// negative value turns the cache off).
	CacheBytes int64
	// MemoryBudget bounds the bytes of market data the replays running at
	// once hold (DefaultMemoryBudget when 0; membudget.go).
	MemoryBudget int64
	// Cache, when set, is the cache to use instead of a new one of
	// CacheBytes: what a worker process keeps across the servers it runs
	// one after another (tests that restart a worker in one process).
	Cache *Cache
	// QueryTimeout bounds each store query of a replay or a sweep's shard
	// (store.WithQueryTimeout; store.DefaultQueryTimeout when 0), the
	// taking of its connection from the pool included: a Postgres that
	// accepts a query, or the pool's ping of an idle connection, and
	// never answers (frozen, a stuck pooler, a network that drops what it
	// sends) fails it in this time, as store.ErrUnavailable, where it
	// waited for the task's deadline (2 min): a replay's request answered
	// 504 JOB_TIMEOUT after its whole JOB_WAIT, and every retry of the
	// task waited as long again.
	QueryTimeout time.Duration
}

// Server is an Asynq server with updown's handlers.
type Server struct {
	srv     *asynq.Server
	gate    *gate
	mux     *asynq.ServeMux
	rdb     redis.UniversalClient
	store   store.Store
	cache   *Cache
	log     *slog.Logger
	metrics *taskMetrics
	budget  *memoryBudget
	results resultBuffers
	waits   *shardWaits
	// queryTimeout is Config.QueryTimeout.
	queryTimeout time.Duration
}

// NewServer builds a worker server; Run starts it.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Redis == nil {
		return nil, errors.New("worker: a Redis client is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TaskCheckInterval == 0 {
		cfg.TaskCheckInterval = time.Nanosecond // Asynq treats 0 as its 1 s default
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 25 * time.Second
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = store.DefaultQueryTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8 * runtime.GOMAXPROCS(0)
	}
	log := cfg.Logger.With("component", "worker")
	queues := jobs.QueuePriorities()
	g := newGate(slices.Sorted(maps.Keys(queues)), idlePoll)
	srv := asynq.NewServerFromRedisClient(gatedRedis{UniversalClient: cfg.Redis, g: g, log: log}, asynq.Config{
		Concurrency:       cfg.Concurrency,
		Queues:            queues,
		TaskCheckInterval: cfg.TaskCheckInterval,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		RetryDelayFunc:    retryDelay,
		// Retried tasks (a dead worker's task) are due at once: look for
		// them every second, not every 5 s
		// (Asynq's default). Each look is a script per queue: at 200 ms an
		// idle `updown dev` measured 4.1% of a core where DESIGN 3 wants
		// under 3%.
		DelayedTaskCheckInterval: time.Second,
		Logger:                   newSlogAdapter(log),
		LogLevel:                 asynq.WarnLevel,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			var f *jobs.Failure
			if errors.As(err, &f) { // answered to the user; not a fault
				log.InfoContext(ctx, "task refused", "type", t.Type(), "task_id", id, "code", f.Code)
				return
			}
			if errors.Is(err, collect.ErrNotSettled) { // an expected wait, retried
				log.InfoContext(ctx, "not settled upstream yet; retrying later", "type", t.Type(), "task_id", id, "err", err)
				return
			}
			log.ErrorContext(ctx, "task failed", "type", t.Type(), "task_id", id, "err", err)
		}),
	})
	if cfg.Store == nil {
		return nil, errors.New("worker: a store is required")
	}
	tm, err := newTaskMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("worker: register metrics: %w", err)
	}
	cache := cfg.Cache
	if cache == nil {
		if cfg.CacheBytes == 0 {
			cfg.CacheBytes = DefaultCacheBytes
		}
		if cache, err = NewCache(cfg.CacheBytes, cfg.Metrics); err != nil {
			return nil, fmt.Errorf("worker: register cache metrics: %w", err)
		}
	}
	s := &Server{srv: srv, gate: g, mux: asynq.NewServeMux(), rdb: cfg.Redis, store: cfg.Store, cache: cache, log: log, metrics: tm,
		budget: newMemoryBudget(cfg.MemoryBudget), waits: newShardWaits(cfg.Redis, log), queryTimeout: cfg.QueryTimeout}
	s.mux.HandleFunc(jobs.TypePing, s.handler(func(context.Context, []byte) (any, error) { return "pong", nil }))
	s.mux.HandleFunc(jobs.TypeReplay, s.handler(s.replayWork))
	s.registerCollect(cfg.Logger)
	s.registerBacktest(cfg.Backtest)
	// A task of a queue with slots (gate.slots) frees its slot when its
	// handler returns.
	s.mux.Use(s.slotRelease)
	// Generations wait seconds on a model, holding a slot all the while:
	// they take at most half the worker's slots, so that one customer's
	// burst of them (ENTERPRISE runs 16 jobs at once, a 2-core worker's
	// every slot) leaves replays the rest (DESIGN 4). With sweep shards'
	// slots besides, at the default concurrency (8 a core) replays keep
	// most; a worker run with 2 slots could have both taken.
	g.slots[pendingKey(jobs.QueueAI)] = make(chan struct{}, max(cfg.Concurrency/2, 1))
	// Sweep shards take at most half the worker's slots: the rest stay
	// free for replays and backtests (DESIGN 14).
	s.registerSweeps(cfg.Concurrency / 2)
	return s, nil
}

// background runs f on a goroutine of its own until ctx ends or the
// returned stop is called, which waits for f to return.
func background(ctx context.Context, f func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// Run processes tasks until ctx is done, then shuts down gracefully:
// running tasks get ShutdownTimeout to finish, unfinished ones go back to
// the queue.
func (s *Server) Run(ctx context.Context) error {
	stopListening := listenForWakes(ctx, s.rdb, s.gate)
	defer stopListening()
	waiting := make(chan struct{})
	go func() { s.waits.run(); close(waiting) }() // until close: batches finishing in the shutdown still hear their shards
	defer func() { _ = s.waits.close(); <-waiting }()
	// Finished sweeps are kept 30 days (sweep_prune.go), and the shards of
	// sweeps lost with Redis are queued again (sweep_resume.go).
	defer background(ctx, SweepPruner{Store: s.store, Log: s.log}.Run)()
	shards := &Client{rdb: s.rdb, log: s.log, queue: asynq.NewClientFromRedisClient(s.rdb), insp: asynq.NewInspectorFromRedisClient(s.rdb)}
	defer background(ctx, SweepResumer{Store: s.store, Log: s.log, Enqueue: shards.EnqueueSweep}.Run)()
	if err := s.srv.Start(s.mux); err != nil {
		return fmt.Errorf("worker: start: %w", err)
	}
	s.log.Info("worker started")
	<-ctx.Done()
	s.gate.close() // a waiting dequeue returns, and the processor sees the shutdown
	s.srv.Shutdown()
	s.log.Info("worker stopped")
	return nil
}

// retryDelay is Asynq's default backoff, except for a task whose worker
// died (SIGKILL, OOM, lost host): Asynq only notices a minute after the
// lease lapsed, and someone may be waiting for the answer, so the task is
// retried at once rather than after another 15-45 s. A task a request
// waits on (a replay, a backtest) whose store was unreachable (Postgres
// restarting or failing over) is retried after 1, 4, 16 s, 30 s at most:
// an outage of a few seconds must not hold the answer 15-45 s, or past
// JOB_WAIT.
func retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, asynq.ErrLeaseExpired) {
		return 0
	}
	if errors.Is(err, store.ErrUnavailable) && awaited(t.Type()) {
		return min(time.Second<<(2*min(n, 5)), 30*time.Second)
	}
	if t.Type() == sweep.TaskType {
		// A customer watches a sweep run: its shard's tries end within
		// about two hours (shardMaxRetry), not Asynq's weeks, and then the
		// sweep fails with the shard's error.
		return min(asynq.DefaultRetryDelayFunc(n, err, t), shardRetryDelayMax)
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// shardMaxRetry and shardRetryDelayMax bound a sweep shard's tries: 25
// retries, each at most 5 minutes after the last.
const (
	shardMaxRetry      = 25
	shardRetryDelayMax = 5 * time.Minute
)

// awaited reports whether a request waits for tasks of the type.
func awaited(taskType string) bool {
	switch taskType {
	case jobs.TypeReplay, backtest.TaskType, backtest.GroupType, backtest.ShardType:
		return true
	}
	return false
}

// asynqLogEvery bounds how often one warning or error of Asynq's is
// logged. While Redis is down, Asynq's loops (the forwarder every second,
// the dequeuer, the janitor, the heartbeat, the syncer) fail alike and
// each reports every failure: about two ERROR lines a second per worker
// for as long as the outage lasts, where the Redis client's own messages
// are held back to one per 30 s (cmd/updown's redisLog).
const asynqLogEvery = 30 * time.Second

// slogAdapter gives Asynq a structured logger. A warning or error repeated
// within asynqLogEvery is held back and counted in the next one logged
// ("suppressed", "suppressed_over"), or logged on its own with its count
// once another message finds it gone quiet.
type slogAdapter struct {
	l        *slog.Logger
	throttle *throttle.Log
}

func newSlogAdapter(l *slog.Logger) slogAdapter {
	return slogAdapter{l: l, throttle: throttle.New(asynqLogEvery, nil)}
}

func (a slogAdapter) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a slogAdapter) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a slogAdapter) Warn(args ...any)  { a.held(slog.LevelWarn, fmt.Sprint(args...)) }
func (a slogAdapter) Error(args ...any) { a.held(slog.LevelError, fmt.Sprint(args...)) }

// held logs msg at level unless the same message at the same level went
// through within asynqLogEvery. The throttle's key is the level's name, a
// space and the message, so that a gone key is logged at its own level.
func (a slogAdapter) held(level slog.Level, msg string) {
	ok, n, gone := a.throttle.Allow(level.String() + " " + msg)
	every := a.throttle.Every().String()
	for _, g := range gone {
		name, text, _ := strings.Cut(g.Key, " ")
		var l slog.Level
		if l.UnmarshalText([]byte(name)) != nil {
			l = slog.LevelWarn
		}
		a.l.Log(context.Background(), l, text, "suppressed", g.N, "suppressed_over", every)
	}
	if !ok {
		return
	}
	if n > 0 {
		a.l.Log(context.Background(), level, msg, "suppressed", n, "suppressed_over", every)
		return
	}
	a.l.Log(context.Background(), level, msg)
}

// Fatal is called by Asynq only when it cannot go on; log it as an error
// (never held back) and let the process's Run loop notice the stopped
// server.
func (a slogAdapter) Fatal(args ...any) { a.l.Error("asynq fatal: " + fmt.Sprint(args...)) }
