package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/updown/updown/store"
)

// SweepRetention is how long a finished sweep and its shards are kept
// (DESIGN 14: 30 days).
const SweepRetention = 30 * 24 * time.Hour

// SweepPruneEvery is how often a worker deletes the sweeps past
// SweepRetention.
const SweepPruneEvery = time.Hour

// SweepPruner deletes the sweeps that finished more than Keep ago, at once
// and then every Every. Every worker process runs one: deleting is
// idempotent, so pruners of several processes only find less to delete,
// and the sweeps go on being pruned while any worker runs.
type SweepPruner struct {
	Store store.SweepStore
	Log   *slog.Logger
	// Keep is SweepRetention and Every SweepPruneEvery when zero; Now is
	// time.Now when nil.
	Keep, Every time.Duration
	Now         func() time.Time
}

func (p SweepPruner) withDefaults() SweepPruner {
	if p.Keep <= 0 {
		p.Keep = SweepRetention
	}
	if p.Every <= 0 {
		p.Every = SweepPruneEvery
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	return p
}

// Prune deletes the sweeps finished more than Keep ago and returns how
// many it deleted.
func (p SweepPruner) Prune(ctx context.Context) (int, error) {
	p = p.withDefaults()
	before := p.Now().Add(-p.Keep)
	n, err := p.Store.DeleteSweepsFinishedBefore(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("worker: delete sweeps finished before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}

// Run prunes at once and then every Every until ctx is done. A failed
// prune is logged and tried again at the next tick.
func (p SweepPruner) Run(ctx context.Context) {
	p = p.withDefaults()
	repeat(ctx, p.Every, true, func(ctx context.Context) {
		switch n, err := p.Prune(ctx); {
		case err != nil && ctx.Err() == nil:
			p.Log.WarnContext(ctx, "sweep retention", "err", err)
		case n > 0:
			p.Log.InfoContext(ctx, "sweeps past their retention deleted", "sweeps", n, "retention", p.Keep.String())
		}
	})
}

// repeat calls f every d (and once at the start when now) until ctx ends.
func repeat(ctx context.Context, d time.Duration, now bool, f func(context.Context)) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	if now {
		f(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f(ctx)
		}
	}
}
