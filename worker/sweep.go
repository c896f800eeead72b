package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
)

// SweepWatch is how often a running shard looks whether its sweep was
// cancelled: a DELETE stops its shards within about this long.
const SweepWatch = 250 * time.Millisecond

// registerSweeps adds the sweep shard handler; at most slots shards run at
// once on this worker.
//
// The slots are taken when a shard is fetched, not when its handler
// starts (gate.slots): a server whose slots are all busy does not take
// shards at all, and leaves them in the queue for a worker with a free
// one, or for its own slot as it frees, which wakes the gate so that the
// next shard starts at once. A shard's handler always runs once fetched:
// shards have a timeout, not a deadline, which Asynq checks before it
// starts them. The slot is freed when the handler returns (slotRelease).
//
// Shards are CPU-bound, and a worker keeps a CPU for everything else it
// runs (DESIGN 14: replays, its Asynq loop, the Redis round trips that
// start and answer them): at most GOMAXPROCS − 1 slots, and at least one.
// With a shard on every CPU, each step of a replay's path (a wake, a
// dequeue, its answer) waited for the Go scheduler to preempt a shard, up
// to 10 ms a step, and a replay's p99 beside a sweep was 15x its idle p99;
// a second worker process, as the Procfile scales them, uses the other
// CPU.
func (s *Server) registerSweeps(slots int) {
	s.gate.slots[pendingKey(jobs.QueueSweeps)] = make(chan struct{}, max(min(slots, runtime.GOMAXPROCS(0)-1), 1))
	var plans sweep.Plans // a sweep's plan, once for all its shards here
	fg := newForeground()
	s.mux.Use(fg.track)
	s.mux.HandleFunc(sweep.TaskType, func(ctx context.Context, t *asynq.Task) error {
		var task sweep.ShardTask
		if err := json.Unmarshal(t.Payload(), &task); err != nil {
			return fmt.Errorf("undecodable sweep shard: %w: %w", err, asynq.SkipRetry)
		}
		start := time.Now()
		ctx, cancel := context.WithCancel(store.WithQueryTimeout(ctx, s.queryTimeout))
		defer cancel()
		go watchSweep(ctx, s.store, task.Sweep, cancel)
		_, err := runWork(ctx, func(ctx context.Context, _ []byte) (any, error) {
			return nil, sweep.WorkYielding(ctx, s.store, task, &plans, fg.wait)
		}, nil)
		outcome := "ok"
		// failNow says why the shard failed for good on this try, when no
		// try can do better: its sweep fails now, and it is not retried.
		failNow := ""
		var p *workPanic
		switch {
		case errors.As(err, &p):
			// A bug: the shard would panic on every try, for hours
			// (shardMaxRetry), and Asynq's own recovery of a panic
			// skips the look at the last attempt below, leaving the
			// sweep RUNNING for good.
			id, _ := asynq.GetTaskID(ctx)
			s.log.ErrorContext(ctx, "sweep shard panicked", "sweep", task.Sweep, "market", task.Market, "task_id", id,
				"panic", p.value, "stack", string(p.stack))
			failNow = fmt.Sprintf("the shard of market %s failed with an internal error, logged on the worker", task.Market)
		case errors.Is(err, sweep.ErrStopped), err != nil && ctx.Err() != nil && stopped(s.store, task.Sweep):
			outcome, err = "stopped", nil
		case err != nil && !worthRetry(ctx, err):
			// Bad data, a bug, an error of the engine: every try would
			// fail alike, so the sweep fails now rather than after two
			// hours of them (shardMaxRetry), RUNNING all the while.
			failNow = fmt.Sprintf("the shard of market %s failed: %v", task.Market, err)
		case err != nil:
			outcome = "error"
			if lastAttempt(ctx) {
				tries, _ := asynq.GetRetryCount(ctx)
				s.failSweep(ctx, task, fmt.Sprintf("the shard of market %s failed %d times; its last error: %v", task.Market, tries+1, err), err)
			}
		}
		if failNow != "" {
			outcome = "error"
			s.failSweep(ctx, task, failNow, err)
			err = fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		s.metrics.observe(sweep.TaskType, outcome, time.Since(start))
		return err
	})
}

// worthRetry reports whether a shard that failed with err may do better
// on a later try: its database was out of reach, or it was stopped
// (a shutdown, its timeout, its lease lost). Any other error is the
// shard's for good (DESIGN 7: no retry for what a retry cannot mend).
func worthRetry(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// failSweep marks the sweep of a shard that failed for good (its last
// attempt, an error no retry mends, or a panic) FAILED, saying why (reason): its other shards
// cannot make a whole sweep, and left RUNNING it would hold one of its
// customer's sweeps in flight for good.
func (s *Server) failSweep(ctx context.Context, task sweep.ShardTask, reason string, shardErr error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := sweep.Fail(ctx, s.store, task.Sweep, reason); err != nil {
		s.log.ErrorContext(ctx, "mark a sweep failed after its shard failed for good", "sweep", task.Sweep, "market", task.Market, "err", err)
		return
	}
	s.log.WarnContext(ctx, "sweep failed: a shard failed for good", "sweep", task.Sweep, "market", task.Market, "err", shardErr)
}

// slotRelease is the middleware that frees the slot a task took when it
// was fetched (gate.slots: sweep shards, generations), once its handler
// returns.
func (s *Server) slotRelease(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if q, ok := asynq.GetQueueName(ctx); ok {
			defer s.gate.release(q)
		}
		return next.ProcessTask(ctx, t)
	})
}

// watchSweep cancels a running shard once its sweep is no longer active.
func watchSweep(ctx context.Context, st store.Store, id string, cancel context.CancelFunc) {
	tick := time.NewTicker(SweepWatch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if stopped(st, id) {
				cancel()
				return
			}
		}
	}
}

// stopped reports whether the sweep is known to be no longer active.
func stopped(st store.Store, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sw, err := st.GetSweepInfo(ctx, id)
	return err == nil && !sw.Status.Active()
}

// foreground counts the tasks other than sweep shards running on a worker
// that use its CPU (replays, backtests; not generations, which wait on a
// model, nor market resolutions, which wait on Polymarket and Binance).
// Sweep shards give way to them (wait): a worker runs
// several shards at once, which would otherwise take the CPU a replay
// needs and hold it past its usual time (DESIGN 14). A shard pauses
// between trials, within a few replays' time, and goes on once no
// foreground task runs.
type foreground struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0
}

func newForeground() *foreground {
	idle := make(chan struct{})
	close(idle)
	return &foreground{idle: idle}
}

// track is the middleware that counts every task but a sweep shard, a
// generation and a market resolution, which spend their time waiting on
// the model or the upstreams: counted, a stream of them (the collector's
// resolutions, each tried again and again while an upstream is slow or
// down) held every sweep on the worker for as long.
func (f *foreground) track(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if t.Type() == sweep.TaskType || t.Type() == strategy.TaskType || t.Type() == jobs.TypeResolve {
			return next.ProcessTask(ctx, t)
		}
		f.mu.Lock()
		if f.n++; f.n == 1 {
			f.idle = make(chan struct{})
		}
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.n--; f.n == 0 {
				close(f.idle)
			}
			f.mu.Unlock()
		}()
		return next.ProcessTask(ctx, t)
	})
}

// wait returns once no foreground task runs, or ctx's error.
//
// With none running it still gives way for a moment, to whatever is ready
// to run: the goroutines waiting for the shard's P (runtime.Gosched) and,
// at the OS, any thread waiting for its CPU (yieldThread: redis-server,
// the api, this worker's own network threads), which costs a microsecond
// when nothing waits. A replay's way to the worker (its wake, the dequeue,
// their Redis round trips) comes before the worker knows of it, so only a
// shard that gives way all the time leaves it its usual time: without
// this, a shard on one of two cores held some of those steps for
// milliseconds, and a replay's p99 beside a sweep was 2.5-3.5x its idle
// p99 (1.1-1.4x with it, BenchmarkSweepFairness).
func (f *foreground) wait(ctx context.Context) error {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		runtime.Gosched()
		yieldThread()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
