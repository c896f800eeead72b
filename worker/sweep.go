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
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
)

// errSweepBusy is a sweep shard that found every sweep slot of its worker
// taken: it goes back to the queue shortly (retryDelay), so that a worker
// always keeps slots for replays (DESIGN 14).
var errSweepBusy = errors.New("worker: every sweep slot is busy")

// sweepBusyDelay is how soon a shard refused for a busy worker comes back.
const sweepBusyDelay = 200 * time.Millisecond

// SweepWatch is how often a running shard looks whether its sweep was
// cancelled: a DELETE stops its shards within about this long.
const SweepWatch = 250 * time.Millisecond

// registerSweeps adds the sweep shard handler; at most slots shards run at
// once on this worker.
//
// A server whose sweep slots are all busy does not take shards at all
// (gate.full): refusing them (errSweepBusy) sends each to the retry set,
// whence it comes back only after sweepBusyDelay and a pass of Asynq's
// forwarder, so that a worker's free goroutine would empty the queue of
// shards while its slot was busy and leave the slot idle waiting for them.
// A slot that frees wakes the gate, so that the next shard is taken at
// once. A shard taken in the instant before the last slot filled is still
// refused.
//
// Shards are CPU-bound: slots beyond the CPUs (GOMAXPROCS) add no
// throughput, only goroutines a replay's must be scheduled among, so
// there are at most as many.
func (s *Server) registerSweeps(slots int) {
	sem := make(chan struct{}, max(min(slots, runtime.GOMAXPROCS(0)), 1))
	pending := "asynq:{" + jobs.QueueSweeps + "}:pending" // Asynq's key of the queue's pending tasks
	s.gate.full = func(key string) bool { return key == pending && len(sem) == cap(sem) }
	var plans sweep.Plans // a sweep's plan, once for all its shards here
	fg := newForeground()
	s.mux.Use(fg.track)
	s.mux.HandleFunc(sweep.TaskType, func(ctx context.Context, t *asynq.Task) error {
		var task sweep.ShardTask
		if err := json.Unmarshal(t.Payload(), &task); err != nil {
			return fmt.Errorf("undecodable sweep shard: %w: %w", err, asynq.SkipRetry)
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem; s.gate.wake() }()
		default:
			return errSweepBusy
		}
		start := time.Now()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go watchSweep(ctx, s.store, task.Sweep, cancel)
		err := sweep.WorkYielding(ctx, s.store, task, &plans, fg.wait)
		outcome := "ok"
		switch {
		case errors.Is(err, sweep.ErrStopped), err != nil && ctx.Err() != nil && stopped(s.store, task.Sweep):
			outcome, err = "stopped", nil
		case err != nil:
			outcome = "error"
		}
		s.metrics.observe(sweep.TaskType, outcome, time.Since(start))
		return err
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
	sw, err := st.GetSweep(ctx, id)
	return err == nil && !sw.Status.Active()
}

// foreground counts the tasks other than sweep shards running on a worker
// (replays, backtest shards, generations, resolutions). Sweep shards give
// way to them (wait): a worker runs several shards at once, which would
// otherwise take the CPU a replay needs and hold it past its usual time
// (DESIGN 14). A shard pauses between trials, within a few replays' time,
// and goes on once no foreground task runs.
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

// track is the middleware that counts every task but a sweep shard.
func (f *foreground) track(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if t.Type() == sweep.TaskType {
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
func (f *foreground) wait(ctx context.Context) error {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
