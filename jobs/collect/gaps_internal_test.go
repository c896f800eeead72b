package collect

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestGapsWaitForLateSnapshots: snapshots of instants recorded side by side
// arrive out of order; a gap is recorded only once no snapshot can still
// come for an instant inside it, and one that does cuts it.
func TestGapsWaitForLateSnapshots(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cfg := Config{GapAfter: 3 * time.Second, MaxLag: time.Second, Activity: memory.New()}
	c := &Collector{cfg: cfg, lastSnap: map[string]time.Time{}, heldGaps: map[string][]store.Gap{},
		w: newWriter(&cfg, slog.New(slog.DiscardHandler), nil)}
	m := store.Market{Slug: "eth-updown-15m-1", StartTime: t0, EndTime: t0.Add(15 * time.Minute)}
	c.lastSnap[m.Slug] = t0
	gaps := func() []store.Gap {
		c.w.mu.Lock()
		defer c.w.mu.Unlock()
		return append([]store.Gap(nil), c.w.gaps[m.Slug]...)
	}
	ctx := context.Background()

	c.sawSnapshot(ctx, m, at(4100)) // 4.1 s without a snapshot
	if g := gaps(); len(g) != 0 {
		t.Fatalf("gap recorded while a late snapshot may still cut it: %+v", g)
	}
	c.sawSnapshot(ctx, m, at(4000)) // the instant before, late
	c.sawSnapshot(ctx, m, at(4400))
	if g := gaps(); len(g) != 0 {
		t.Fatalf("gap recorded before MaxLag passed: %+v", g)
	}
	c.sawSnapshot(ctx, m, at(5000)) // 4.0 s + MaxLag: nothing can cut it now
	if g, want := gaps(), []store.Gap{{From: t0, To: at(4000)}}; !reflect.DeepEqual(g, want) {
		t.Fatalf("gaps %+v, want %+v", g, want)
	}

	// A gap still held when the collector stops is recorded then.
	c.sawSnapshot(ctx, m, at(9000))
	c.releaseGaps("")
	if g, want := gaps(), []store.Gap{{From: t0, To: at(4000)}, {From: at(5000), To: at(9000)}}; !reflect.DeepEqual(g, want) {
		t.Fatalf("gaps %+v, want %+v", g, want)
	}
}

func TestSplitGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	g := func(from, to float64) store.Gap { return store.Gap{From: s(from), To: s(to)} }
	for _, tc := range []struct {
		name string
		in   []store.Gap
		at   float64
		want []store.Gap
	}{
		{"outside", []store.Gap{g(0, 10)}, 11, []store.Gap{g(0, 10)}},
		{"on an end", []store.Gap{g(0, 10)}, 10, []store.Gap{g(0, 10)}},
		{"both parts long", []store.Gap{g(0, 10)}, 5, []store.Gap{g(0, 5), g(5, 10)}},
		{"one part short", []store.Gap{g(0, 10)}, 8, []store.Gap{g(0, 8)}},
		{"both short", []store.Gap{g(0, 5)}, 2.5, []store.Gap{}},
		{"the second of two", []store.Gap{g(0, 4), g(10, 20)}, 15, []store.Gap{g(0, 4), g(10, 15), g(15, 20)}},
	} {
		if got := splitGaps(tc.in, s(tc.at), 3*time.Second); !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestFirstSnapshotMeasuredFromStoredBeforeIt: the first snapshot a
// process records of a market is measured from the latest snapshot stored
// before its instant. One stored at that instant or later (another
// collector's, or this one's own flushed already) is not a reason to
// measure from the window's start: the market was recorded all along.
func TestFirstSnapshotMeasuredFromStoredBeforeIt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		stored []time.Duration // snapshots already stored, after t0
		at     time.Duration
		want   []store.Gap
	}{
		{"stored up to the instant before", []time.Duration{0, 300 * time.Millisecond, 9700 * time.Millisecond}, 10 * time.Second, nil},
		{"the instant itself stored", []time.Duration{0, 300 * time.Millisecond, 9700 * time.Millisecond, 10 * time.Second}, 10 * time.Second, nil},
		{"later instants stored too", []time.Duration{0, 9700 * time.Millisecond, 10 * time.Second, 10300 * time.Millisecond}, 10 * time.Second, nil},
		{"a real gap before the instant", []time.Duration{0, 2 * time.Second, 10 * time.Second}, 10 * time.Second,
			[]store.Gap{{From: t0.Add(2 * time.Second), To: t0.Add(10 * time.Second)}}},
		{"nothing stored", nil, 10 * time.Second, []store.Gap{{From: t0, To: t0.Add(10 * time.Second)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			m := store.Market{Slug: "btc-updown-15m-1777467600", MarketID: "1", Coin: store.BTC, MarketType: store.M15,
				StartTime: t0, EndTime: t0.Add(15 * time.Minute), ClobTokenUp: "u", ClobTokenDown: "d"}
			if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
				t.Fatal(err)
			}
			var snaps []store.Snapshot
			for _, d := range tc.stored {
				snaps = append(snaps, store.Snapshot{Time: t0.Add(d), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5})
			}
			if _, err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
				t.Fatal(err)
			}
			cfg := Config{GapAfter: 3 * time.Second, MaxLag: time.Second, Activity: st, Store: st}
			c := &Collector{cfg: cfg, lastSnap: map[string]time.Time{}, heldGaps: map[string][]store.Gap{},
				w: newWriter(&cfg, slog.New(slog.DiscardHandler), nil)}
			c.sawSnapshot(ctx, m, t0.Add(tc.at))
			c.releaseGaps("")
			c.w.mu.Lock()
			got := c.w.gaps[m.Slug]
			c.w.mu.Unlock()
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("gaps %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestWindowClosedOnlyOnceNoSnapshotCanCome: the answers for a market's
// last instants may still be on their way when its window ends (a
// snapshot is recorded up to MaxLag after its instant). Its recording is
// closed once none can come: a late last snapshot is not measured from the
// store (which may lag behind, its writes kept for the next flush) as if
// it were the market's first, which recorded a gap over the stretch the
// collector had recorded.
func TestWindowClosedOnlyOnceNoSnapshotCanCome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	end := t0.Add(5 * time.Minute)
	st := memory.New()
	m := store.Market{Slug: "btc-updown-5m-1777467600", MarketID: "1", Coin: store.BTC, MarketType: store.M5,
		StartTime: t0, EndTime: end, ClobTokenUp: "u", ClobTokenDown: "d"}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	// The store has the snapshots up to 5 s before the end: the writes of
	// the last seconds failed and wait for the next flush.
	var stored []store.Snapshot
	for at := t0; at.Before(end.Add(-5 * time.Second)); at = at.Add(300 * time.Millisecond) {
		stored = append(stored, store.Snapshot{Time: at, CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5})
	}
	if _, err := st.AppendSnapshots(ctx, m.Slug, stored); err != nil {
		t.Fatal(err)
	}
	cfg := Config{GapAfter: 3 * time.Second, MaxLag: time.Second, Activity: st, Store: st}
	c := &Collector{cfg: cfg, lastSnap: map[string]time.Time{}, heldGaps: map[string][]store.Gap{}, gapsClosed: map[string]bool{},
		markets: map[string]store.Market{m.Slug: m}, work: make(chan func(context.Context), 16),
		w: newWriter(&cfg, slog.New(slog.DiscardHandler), nil)}
	runWork := func() {
		for len(c.work) > 0 {
			(<-c.work)(ctx)
		}
	}
	// Recorded by this process through the end, but for the last instant.
	for at := end.Add(-10 * time.Second); at.Before(end.Add(-300 * time.Millisecond)); at = at.Add(300 * time.Millisecond) {
		c.sawSnapshot(ctx, m, at)
	}
	c.closeEnded(end)
	runWork()
	c.sawSnapshot(ctx, m, end.Add(-300*time.Millisecond)) // its answer came 700 ms late, within MaxLag
	for at := end.Add(300 * time.Millisecond); !at.After(end.Add(2 * time.Second)); at = at.Add(300 * time.Millisecond) {
		c.closeEnded(at)
		runWork()
	}
	c.releaseGaps("")
	c.w.mu.Lock()
	gaps := c.w.gaps[m.Slug]
	c.w.mu.Unlock()
	if len(gaps) != 0 {
		t.Errorf("gaps %+v, want none: the market was recorded to its end", gaps)
	}
	c.gapMu.Lock()
	defer c.gapMu.Unlock()
	if last, ok := c.lastSnap[m.Slug]; ok {
		t.Errorf("the ended market's last snapshot (%v) is still followed", last)
	}
}
