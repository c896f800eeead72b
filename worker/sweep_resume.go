package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
)

// SweepStallAfter is how long a QUEUED or RUNNING sweep may go without a
// stored shard before SweepResumer puts its missing shards back on the
// queue.
const SweepStallAfter = 2 * time.Minute

// SweepResumeEvery is how often a worker looks for stalled sweeps.
const SweepResumeEvery = time.Minute

// SweepResumer puts back on the queue the shards of sweeps that stopped
// moving because their tasks were lost with Redis (a restart without
// persistence, a failover that lost the last writes, an eviction): a
// sweep lives in Postgres, its shards only in Redis, and without this it
// stayed RUNNING for ever, holding one of its customer's sweeps in flight
// (DESIGN 14: a sweep survives restarts of every process). A shard's task
// id is its sweep and market, so a shard still queued, running or
// retrying is not enqueued twice, and a shard that runs twice counts once.
type SweepResumer struct {
	Store store.SweepStore
	// Enqueue puts shards on the sweeps queue and wakes the workers
	// (Client.EnqueueSweep).
	Enqueue func(ctx context.Context, shards []sweep.ShardTask) error
	Log     *slog.Logger
	// After is SweepStallAfter and Every SweepResumeEvery when zero; Now
	// is time.Now when nil.
	After, Every time.Duration
	Now          func() time.Time
}

func (r SweepResumer) withDefaults() SweepResumer {
	if r.After <= 0 {
		r.After = SweepStallAfter
	}
	if r.Every <= 0 {
		r.Every = SweepResumeEvery
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Log == nil {
		r.Log = slog.Default()
	}
	return r
}

// Resume enqueues the missing shards of every sweep in flight unchanged
// for After, and returns how many shards it enqueued (or found queued
// already).
func (r SweepResumer) Resume(ctx context.Context) (int, error) {
	r = r.withDefaults()
	stalled, err := r.Store.ListStalledSweeps(ctx, r.Now().Add(-r.After))
	if err != nil {
		return 0, fmt.Errorf("worker: list stalled sweeps: %w", err)
	}
	n := 0
	for _, sw := range stalled {
		stored, err := r.Store.StoredShardMarkets(ctx, sw.ID)
		if err != nil {
			return n, fmt.Errorf("worker: list the shards of sweep %s: %w", sw.ID, err)
		}
		done := make(map[string]bool, len(stored))
		for _, m := range stored {
			done[m] = true
		}
		var missing []sweep.ShardTask
		for _, m := range sw.Markets {
			if !done[m] {
				missing = append(missing, sweep.ShardTask{Sweep: sw.ID, Market: m})
			}
		}
		if len(missing) == 0 && len(sw.Markets) > 0 {
			// Every shard is stored, and the worker that stored the last
			// one stopped before it summarized them: a shard run again
			// stores nothing and finishes the sweep.
			missing = []sweep.ShardTask{{Sweep: sw.ID, Market: sw.Markets[len(sw.Markets)-1]}}
		}
		if len(missing) == 0 {
			continue
		}
		if err := r.Enqueue(ctx, missing); err != nil {
			gu, ok := errors.AsType[*shardsGivenUp](err)
			if !ok {
				return n, fmt.Errorf("worker: enqueue the shards of sweep %s: %w", sw.ID, err)
			}
			// Asynq gave a shard up without its sweep failing (its worker
			// died on its every try, or the sweep could not be failed
			// then): its archived task holds its id, it never runs again,
			// and the sweep cannot finish.
			reason := fmt.Sprintf("the shard of market %s was given up on after its every try; start the sweep anew", gu.markets[0])
			if err := sweep.Fail(ctx, r.Store, sw.ID, reason); err != nil {
				return n, fmt.Errorf("worker: fail sweep %s, a shard of which was given up on: %w", sw.ID, err)
			}
			r.Log.WarnContext(ctx, "sweep failed: a shard was given up on", "sweep", sw.ID, "markets", gu.markets)
			continue
		}
		n += len(missing)
		if sw.Status == store.SweepQueued { // the api stopped between storing it and queueing its shards
			if _, err := r.Store.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil && !errors.Is(err, store.ErrConflict) {
				return n, fmt.Errorf("worker: start sweep %s: %w", sw.ID, err)
			}
		}
	}
	return n, nil
}

// Run resumes stalled sweeps every Every until ctx is done. A failed round
// is logged and tried again at the next tick.
func (r SweepResumer) Run(ctx context.Context) {
	r = r.withDefaults()
	repeat(ctx, r.Every, false, func(ctx context.Context) {
		switch n, err := r.Resume(ctx); {
		case err != nil && ctx.Err() == nil:
			r.Log.WarnContext(ctx, "resume stalled sweeps", "err", err)
		case n > 0:
			r.Log.InfoContext(ctx, "shards of stalled sweeps queued again", "shards", n)
		}
	})
}
