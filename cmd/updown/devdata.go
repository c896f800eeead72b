package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
)

// devCollector keeps dev mode's generated data moving as the real collector
// keeps recorded data moving: new markets start, live ones gain snapshots
// and resolve once they end, and the exchange's latest depth and trades
// advance. The generator continues its own history for a later Now, and
// every write is idempotent, so a tick only adds what time has brought.
type devCollector struct {
	store store.Store
	live  store.LiveExchange
	cfg   gen.Config
	log   *slog.Logger
	last  time.Time // the Now of the previous tick
}

// tick brings the data up to now.
func (d *devCollector) tick(ctx context.Context, now time.Time) error {
	cfg := d.cfg
	cfg.Now = now.UTC().Truncate(time.Millisecond) // as gen.New takes it
	// The outage stays where the seed put it: the generator places it
	// OutageAgo before its Now, so a later Now would move it, and the gaps
	// written below would claim stretches that hold snapshots.
	if d.cfg.Outage > 0 {
		seedNow := d.cfg.Now.UTC().Truncate(time.Millisecond)
		from := seedNow.Add(-d.cfg.OutageAgo).Truncate(d.cfg.Outage)
		cfg.OutageAgo = cfg.Now.Sub(from)
	}
	// Only the depth since the last tick is new: generating the whole
	// history again each tick was most of an idle dev's CPU. A depth
	// snapshot depends on its own time only, so the window changes nothing.
	if since := now.Sub(d.last) + cfg.DepthInterval; cfg.DepthHistory > since {
		cfg.DepthHistory = since
	}
	g, err := gen.New(cfg)
	if err != nil {
		return fmt.Errorf("dev collector: %w", err)
	}
	markets := g.Markets()
	if err := d.store.UpsertMarkets(ctx, markets); err != nil {
		return fmt.Errorf("dev collector: markets: %w", err)
	}
	snapshots := 0
	for _, m := range markets {
		if m.EndTime.Before(d.last) || m.StartTime.After(now) {
			continue // nothing new can have happened in it
		}
		snaps, err := g.Snapshots(m)
		if err != nil {
			return fmt.Errorf("dev collector: snapshots of %s: %w", m.Slug, err)
		}
		fresh := snaps[:0:0]
		for _, s := range snaps {
			if s.Time.After(d.last) {
				fresh = append(fresh, s)
			}
		}
		if err := d.activity(ctx, g, m); err != nil {
			return err
		}
		if len(fresh) == 0 {
			continue
		}
		if _, err := d.store.AppendSnapshots(ctx, m.Slug, fresh); err != nil {
			return fmt.Errorf("dev collector: snapshots of %s: %w", m.Slug, err)
		}
		snapshots += len(fresh)
	}
	var depth []store.DepthSnapshot
	for _, ds := range g.DepthHistory() {
		if ds.Time.After(d.last) {
			depth = append(depth, ds)
		}
	}
	if err := d.store.AppendDepth(ctx, depth); err != nil {
		return fmt.Errorf("dev collector: depth: %w", err)
	}
	if d.live != nil {
		if _, err := g.LoadLive(ctx, d.live); err != nil {
			return fmt.Errorf("dev collector: live exchange data: %w", err)
		}
	}
	d.log.Debug("dev collector", "snapshots", snapshots, "depth", len(depth))
	d.last = now
	return nil
}

// activity writes the trades of m since the last tick and its gaps (the
// store merges a gap it holds already).
func (d *devCollector) activity(ctx context.Context, g *gen.Generator, m store.Market) error {
	trades, err := g.MarketTrades(m)
	if err != nil {
		return fmt.Errorf("dev collector: trades of %s: %w", m.Slug, err)
	}
	fresh := trades[:0:0]
	for _, t := range trades {
		if t.Time.After(d.last) {
			fresh = append(fresh, t)
		}
	}
	if len(fresh) > 0 {
		if _, err := d.store.AppendMarketTrades(ctx, m.Slug, fresh); err != nil {
			return fmt.Errorf("dev collector: trades of %s: %w", m.Slug, err)
		}
	}
	gaps, err := g.Gaps(m)
	if err != nil {
		return fmt.Errorf("dev collector: gaps of %s: %w", m.Slug, err)
	}
	if len(gaps) > 0 {
		if _, err := d.store.RecordGaps(ctx, m.Slug, gaps); err != nil {
			return fmt.Errorf("dev collector: gaps of %s: %w", m.Slug, err)
		}
	}
	return nil
}

// run ticks every interval until ctx is done; a failed tick is logged and
// the next one tries again.
func (d *devCollector) run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := d.tick(ctx, now); err != nil && ctx.Err() == nil {
				d.log.Warn("dev collector tick failed", "err", err)
			}
		}
	}
}

// resumeDevCollector is the collector of a dev started again on a
// database an earlier dev filled. It goes on from where the stored data
// ends, so that what happened while dev was stopped is generated as if it
// had run: going on from this start instead stored the markets of that
// stretch resolved with no snapshots, and /gaps said nothing was missing.
// It places no outage: the seed's is stored, before the data's end, where
// nothing is written again, and one placed before this start (OutageAgo)
// would be recorded as a gap of markets that hold snapshots there.
func resumeDevCollector(ctx context.Context, st store.Store, live store.LiveExchange, cfg gen.Config, log *slog.Logger) (*devCollector, error) {
	last, err := storedUntil(ctx, st, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("dev collector: %w", err)
	}
	cfg.Outage = 0
	return &devCollector{store: st, live: live, cfg: cfg, log: log, last: last}, nil
}

// storedUntil is the time of the newest snapshot of the latest markets
// of every series started by now, where an earlier dev's collector
// stopped (every series was written up to its last tick); now when there
// is none.
func storedUntil(ctx context.Context, st store.Store, now time.Time) (time.Time, error) {
	var last time.Time
	for _, c := range store.Coins {
		for _, mt := range store.MarketTypes {
			if !mt.AvailableFor(c) {
				continue
			}
			// The latest few: the newest may have been listed before it
			// started, and have no snapshot.
			ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Coin: c, MarketType: mt, StartBefore: &now, Limit: 3})
			if err != nil {
				return now, err
			}
			for _, m := range ms {
				snaps, _, err := st.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Limit: 1})
				if err != nil {
					return now, err
				}
				if len(snaps) > 0 && snaps[0].Time.After(last) {
					last = snaps[0].Time
				}
			}
		}
	}
	if last.IsZero() || last.After(now) {
		return now, nil
	}
	return last, nil
}
