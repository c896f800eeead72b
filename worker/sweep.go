package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func (s *Server) registerSweeps(slots int) {
	sem := make(chan struct{}, max(slots, 1))
	pending := "asynq:{" + jobs.QueueSweeps + "}:pending" // Asynq's key of the queue's pending tasks
	s.gate.full = func(key string) bool { return key == pending && len(sem) == cap(sem) }
	var plans sweep.Plans // a sweep's plan, once for all its shards here
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
		err := sweep.Work(ctx, s.store, task, &plans)
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
