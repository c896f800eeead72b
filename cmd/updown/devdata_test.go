package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDevCollectorMovesData: after time passes, a new 5m market exists with
// snapshots up to the new now, and the market live before has resolved.
func TestDevCollectorMovesData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 4, 29, 13, 2, 0, 0, time.UTC)
	cfg := genConfig(1, 100, t0)
	st := memory.New()
	if _, err := gen.Seed(ctx, cfg, st); err != nil {
		t.Fatal(err)
	}
	live := memory.NewLive()
	d := &devCollector{store: st, live: live, cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), last: t0}

	liveBefore := gen.Slug(store.BTC, store.M5, t0.Truncate(5*time.Minute))
	if m, err := st.GetMarket(ctx, liveBefore); err != nil || m.Resolved() {
		t.Fatalf("live market at t0: %+v %v", m, err)
	}
	t1 := t0.Add(6 * time.Minute)
	if err := d.tick(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetMarket(ctx, liveBefore); err != nil || !m.Resolved() {
		t.Errorf("the market live at t0 is not resolved 6 minutes later: %+v %v", m, err)
	}
	next := gen.Slug(store.BTC, store.M5, t1.Truncate(5*time.Minute))
	if _, err := st.GetMarket(ctx, next); err != nil {
		t.Fatalf("the market live at t1 is missing: %v", err)
	}
	snaps, n, err := st.ListSnapshots(ctx, next, store.SnapshotQuery{Limit: 1})
	if err != nil || n == 0 || snaps[0].Time.After(t1) || t1.Sub(snaps[0].Time) > 10*time.Second {
		t.Errorf("newest snapshot of %s: %v (of %d), want just before %v; err %v", next, snaps, n, t1, err)
	}
	// Trades arrive with the snapshots, each once: the collector's trades
	// are the generator's, up to t1.
	g, err := gen.New(func() gen.Config { c := cfg; c.Now = t1; return c }())
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{liveBefore, next} {
		m, err := st.GetMarket(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		want, err := g.MarketTrades(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, n, err := st.ListMarketTrades(ctx, slug, store.MarketTradeQuery{}); err != nil || n != len(want) || n == 0 {
			t.Errorf("%s: %d trades stored (%v), the generator has %d up to t1", slug, n, err, len(want))
		}
	}
	if d, err := live.LatestDepth(ctx, store.ETH, store.Future); err != nil || d.Time.Before(t1.Add(-10*time.Second)) {
		t.Errorf("latest ETH futures depth %v, %v: not moved to t1", d.Time, err)
	}

	// The depth history the tick added (it generates only the window since
	// the last tick) is what a dev started at t1 has for that window.
	fresh := cfg
	fresh.Now = t1
	g, err = gen.New(fresh)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []store.ExchangeKind{store.Spot, store.Future} {
		after := t0.Add(time.Millisecond) // what the seed had at t0 is not the tick's
		got, _, err := st.ListDepth(ctx, store.DepthFilter{Symbol: gen.Symbol(store.BTC), Kind: kind, From: &after, To: &t1})
		if err != nil {
			t.Fatal(err)
		}
		var want []store.DepthSnapshot
		for _, ds := range g.DepthHistory() {
			if ds.Kind == kind && ds.Time.After(t0) {
				want = append(want, ds)
			}
		}
		slices.SortFunc(got, func(a, b store.DepthSnapshot) int { return a.Time.Compare(b.Time) })
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		if len(want) == 0 || !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("%s depth after the tick: %d snapshots, a fresh start has %d, or they differ", kind, len(got), len(want))
		}
		// One snapshot a collector tick: dev started on a tick (t0), whose
		// snapshot the seed and the tick must not both store, at the tick
		// and a moment after it.
		all, _, err := st.ListDepth(ctx, store.DepthFilter{Symbol: gen.Symbol(store.BTC), Kind: kind, Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(all); i++ {
			if gap := all[i].Time.Sub(all[i-1].Time); gap < cfg.DepthInterval/2 {
				t.Errorf("%s depth history: snapshots at %v and %v, %v apart: one tick stored twice", kind, all[i-1].Time, all[i].Time, gap)
			}
		}
	}
}

// TestDevCollectorKeepsItsOutage: the collector outage of the generated
// data is where dev started it, however long dev runs. The generator
// places it OutageAgo before its Now, so a tick past the next boundary of
// the outage's length put it a step later and recorded that stretch as a
// gap of the markets live across it (4hr, 24hr), which hold snapshots
// there: /gaps said "no snapshot stored" beside the snapshots.
func TestDevCollectorKeepsItsOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 4, 29, 13, 2, 0, 0, time.UTC)
	cfg, st, from, to := seededWithOutage(ctx, t, t0)
	d := &devCollector{store: st, live: memory.NewLive(), cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), last: t0}
	now := t0
	for range 5 { // ticks across the next boundaries of the outage's length
		now = now.Add(cfg.Outage/2 + time.Minute)
		if err := d.tick(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	var slug string // a market live across the outage
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Coin: store.BTC, MarketType: store.H24})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !m.StartTime.After(from) && m.EndTime.After(to) {
			slug = m.Slug
		}
	}
	if slug == "" {
		t.Fatalf("no 24hr market across the outage [%v, %v)", from, to)
	}
	gaps, err := st.ListGaps(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || !gaps[0].From.Equal(from) || !gaps[0].To.Equal(to) {
		t.Errorf("gaps of %s after the ticks: %v, want the outage [%v, %v) alone", slug, gaps, from, to)
	}
}

// seededWithOutage is dev's database seeded at t0 by the default
// generator config, and the collector outage that config places in it.
func seededWithOutage(ctx context.Context, t *testing.T, t0 time.Time) (cfg gen.Config, st *memory.Store, from, to time.Time) {
	t.Helper()
	cfg = genConfig(1, 100, t0)
	st = memory.New()
	if _, err := gen.Seed(ctx, cfg, st); err != nil {
		t.Fatal(err)
	}
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	from, to, ok := g.Outage()
	if !ok {
		t.Fatal("the default config has no outage")
	}
	return cfg, st, from, to
}

// TestDevResumesWhereItsDatabaseEnds: dev started again on a database an
// earlier dev filled went on from its own start, so the markets that ran
// while it was stopped were stored resolved with no snapshots and the one
// live when it stopped lost the rest of its own, with no gap to say so:
// /gaps said nothing was missing where nothing was stored. It generates
// that stretch as if it had run, as a dev started then has it.
func TestDevResumesWhereItsDatabaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 4, 29, 13, 2, 0, 0, time.UTC)
	st := memory.New()
	if _, err := gen.Seed(ctx, genConfig(1, 100, t0), st); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(20 * time.Minute) // started again
	d, err := resumeDevCollector(ctx, st, memory.NewLive(), genConfig(1, 100, t1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.tick(ctx, t1.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	cfg := genConfig(1, 100, t1.Add(5*time.Second))
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The 5m markets live when dev stopped, wholly while it was stopped,
	// and live when it started again.
	for at := t0.Truncate(5 * time.Minute); !at.After(t1); at = at.Add(5 * time.Minute) {
		m, err := st.GetMarket(ctx, gen.Slug(store.BTC, store.M5, at))
		if err != nil {
			t.Fatal(err)
		}
		want, err := g.Snapshots(m)
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := st.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		if n != len(want) || n == 0 || !got[0].Time.Equal(want[0].Time) || !got[n-1].Time.Equal(want[len(want)-1].Time) {
			t.Errorf("%s: %d snapshots stored, a dev started at the tick has %d", m.Slug, n, len(want))
		}
	}
}

// TestDevAgainKeepsTheSeededOutage: dev started again on its database
// placed the collector outage of the generated data before this start, not
// where the seed put it, and recorded that stretch as a gap of the markets
// live across it, which hold snapshots there (the seed's): /gaps said "no
// snapshot stored" beside the snapshots. The seeded outage stays the only
// one.
func TestDevAgainKeepsTheSeededOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 4, 29, 13, 2, 0, 0, time.UTC)
	cfg, st, from, to := seededWithOutage(ctx, t, t0)
	t1 := t0.Add(20 * time.Minute) // started again, past the next boundary of the outage's length
	d, err := resumeDevCollector(ctx, st, memory.NewLive(), genConfig(1, 100, t1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{t1.Add(5 * time.Second), t1.Add(cfg.Outage)} {
		if err := d.tick(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Coin: store.BTC, MarketType: store.H24})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, m := range ms {
		if !m.StartTime.Before(t1) || !m.EndTime.After(t1) {
			continue
		}
		live++ // live at t1, and across the seeded outage
		gaps, err := st.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if len(gaps) != 1 || !gaps[0].From.Equal(from) || !gaps[0].To.Equal(to) {
			t.Errorf("gaps of %s after dev started again: %v, want the seeded outage [%v, %v) alone", m.Slug, gaps, from, to)
		}
	}
	if live != 1 {
		t.Fatalf("%d 24hr markets live at %v, want 1", live, t1)
	}
}
