package collect_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestCollectorRestartLosesOnlyDowntime stops a collector and starts
// another on the same store: the markets are neither rediscovered as new
// records nor overwritten, the snapshots continue on the same grid, and
// the only hole is the time no collector ran.
func TestCollectorRestartLosesOnlyDowntime(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			scheme := hourScheme()
			r := newRig(t, mk(t), scheme)
			now := time.Now()
			r.poly.AddRange(twoSeries, now, now.Add(time.Hour))
			cfg := r.config(scheme, twoSeries)
			ctx := context.Background()

			first, stopFirst := start(t, cfg)
			eventually(t, 60*time.Second, "start prices recorded", func() bool {
				m, err := r.st.GetMarket(ctx, collect.Slug(store.BTC, store.M5, scheme.Origin))
				return err == nil && m.CoinPriceStart != nil
			})
			time.Sleep(time.Second)
			stopFirst()
			down := time.Now()
			before, _ := r.st.GetMarket(ctx, collect.Slug(store.BTC, store.M5, scheme.Origin))
			time.Sleep(700 * time.Millisecond)
			up := time.Now()
			second, stopSecond := start(t, cfg)
			// The hole lasts until the second collector records: on a
			// loaded machine its start-up takes a while, which is not lost
			// recording.
			eventually(t, 60*time.Second, "the second collector recording", func() bool { return second.Stats().Snapshots > 0 })
			recording := time.Now()
			time.Sleep(time.Second)
			stopSecond()

			markets, total, err := r.st.ListMarkets(ctx, store.MarketFilter{})
			if err != nil || total != 2*len(twoSeries) {
				t.Fatalf("%d markets stored (%v), want the current and next of %d series", total, err, len(twoSeries))
			}
			after, _ := r.st.GetMarket(ctx, before.Slug)
			if after.CoinPriceStart == nil || *after.CoinPriceStart != *before.CoinPriceStart || !after.CreatedAt.Equal(before.CreatedAt) {
				t.Errorf("the restart rewrote %s: %+v, was %+v", before.Slug, after, before)
			}
			if want := r.bin.Price(store.BTC, scheme.Origin); *after.CoinPriceStart != want {
				t.Errorf("start price %v, Binance opened the second at %v", *after.CoinPriceStart, want)
			}

			stored := 0
			for _, m := range markets {
				if m.StartTime.After(now) {
					continue // the next window: not live yet
				}
				snaps := allSnapshots(t, r.st, m.Slug)
				stored += len(snaps)
				checkSnapshots(t, r.bin, m.Coin, m.Slug, snaps, cfg.Interval, m.StartTime, m.EndTime)
				// The hole around the downtime is the time no collector
				// recorded (the downtime and the second's start-up), give
				// or take a tick and the last answers in flight.
				for i := 1; i < len(snaps); i++ {
					prev, next := snaps[i-1].Time, snaps[i].Time
					if !prev.After(up) && !next.Before(down) && next.Sub(prev) > recording.Sub(down)+cfg.MaxLag+time.Second {
						t.Errorf("%s: no snapshots from %v to %v, but no collector recorded only from %v to %v (started again at %v)", m.Slug, prev, next, down, recording, up)
					}
				}
			}
			if got := first.Stats().Snapshots + second.Stats().Snapshots; got != int64(stored) {
				t.Errorf("the collectors wrote %d snapshots, the store holds %d: something was written twice or lost at shutdown", got, stored)
			}
			if strings.Contains(r.logs.String(), "level=ERROR") {
				t.Errorf("errors logged:\n%s", r.logs)
			}
		})
	}
}

// TestTwoCollectorsWriteEachInstantOnce runs two collectors at once on one
// store: they record the same grid instants, and the store keeps each once.
func TestTwoCollectorsWriteEachInstantOnce(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			scheme := hourScheme()
			r := newRig(t, mk(t), scheme)
			now := time.Now()
			r.poly.AddRange(twoSeries, now, now.Add(time.Hour))
			cfg := r.config(scheme, twoSeries)

			began := time.Now()
			a, stopA := start(t, cfg)
			b, stopB := start(t, cfg)
			// Both record a while, however slowly a loaded machine starts
			// them.
			eventually(t, 60*time.Second, "both collectors recording", func() bool {
				return a.Stats().Snapshots >= 10 && b.Stats().Snapshots >= 10
			})
			time.Sleep(time.Second)
			stopA()
			stopB()
			ran := time.Since(began)

			stored := 0
			for _, sr := range twoSeries {
				start, end := scheme.Window(sr.Coin, sr.MarketType, now)
				slug := collect.Slug(sr.Coin, sr.MarketType, start)
				snaps := allSnapshots(t, r.st, slug)
				checkSnapshots(t, r.bin, sr.Coin, slug, snaps, cfg.Interval, start, end)
				if max := int(ran/cfg.Interval) + 1; len(snaps) > max {
					t.Errorf("%s: %d snapshots in %v: more than the %d instants of the grid", slug, len(snaps), ran, max)
				}
				stored += len(snaps)
			}
			written := a.Stats().Snapshots + b.Stats().Snapshots
			// How many instants both answered in time is the machine's
			// speed; that the store kept an instant both wrote once is not.
			if written <= int64(stored) {
				t.Errorf("the collectors wrote %d and %d snapshots, the store holds %d: they should overlap",
					a.Stats().Snapshots, b.Stats().Snapshots, stored)
			}
			t.Logf("two collectors wrote %d + %d snapshots; the store keeps %d", a.Stats().Snapshots, b.Stats().Snapshots, stored)

			// Depth history likewise: one snapshot per grid instant.
			hist, n, err := r.st.ListDepth(context.Background(), store.DepthFilter{Symbol: "BTCUSDT", Kind: store.Spot})
			if err != nil || n > int(ran/cfg.DepthInterval)+1 {
				t.Errorf("%d BTCUSDT spot depth snapshots in %v (%v): more than the grid's instants", n, ran, err)
			}
			for i := 1; i < len(hist); i++ {
				if hist[i].Time.Equal(hist[i-1].Time) {
					t.Errorf("two depth snapshots at %v", hist[i].Time)
				}
			}
			if strings.Contains(r.logs.String(), "level=ERROR") {
				t.Errorf("errors logged:\n%s", r.logs)
			}
		})
	}
}

// TestCollectorKeepsToItsSeries: a collector started on a store that
// holds a live market of a series it does not record (another
// collector's, under COLLECT_SERIES) leaves that market alone: it
// records no snapshots of it and no gaps. An ended market of such a series
// it does schedule for resolution, as any collector does (a task per
// market), so that none stays unresolved once no collector records its
// series.
func TestCollectorKeepsToItsSeries(t *testing.T) {
	scheme := hourScheme()
	st := memory.New()
	r := newRig(t, st, scheme)
	now := time.Now()
	// The fake serves a third series too, which another collector found
	// and stored: this one could record it, and must not.
	sol := collect.Series{Coin: store.SOL, MarketType: store.M5}
	r.poly.AddRange(append(slices.Clone(twoSeries), sol), now, now.Add(time.Hour))
	ctx := context.Background()
	var other store.Market
	for _, m := range r.poly.Markets() {
		if m.Coin == store.SOL && !m.Start.After(now) && m.End.After(now) {
			other = store.Market{Slug: polytest.SlugOf(&m), MarketID: m.ID, ConditionID: m.ConditionID, ClobTokenUp: m.UpToken, ClobTokenDown: m.DownToken,
				Coin: m.Coin, MarketType: m.MarketType, StartTime: m.Start, EndTime: m.End}
		}
	}
	if other.Slug == "" {
		t.Fatal("the fake has no live SOL market")
	}
	ended := store.Market{Slug: collect.Slug(store.SOL, store.M5, now.Truncate(5*time.Minute).Add(-10*time.Minute)), MarketID: "ended",
		Coin: store.SOL, MarketType: store.M5, StartTime: now.Add(-11 * time.Minute), EndTime: now.Add(-6 * time.Minute)}
	if err := st.UpsertMarkets(ctx, []store.Market{other, ended}); err != nil {
		t.Fatal(err)
	}
	c, stop := start(t, r.config(scheme, twoSeries))
	eventually(t, 60*time.Second, "the collector recording its own series", func() bool { return c.Stats().Snapshots > 0 })
	time.Sleep(time.Second)
	stop()
	if _, n, err := st.ListSnapshots(ctx, other.Slug, store.SnapshotQuery{Limit: 1}); err != nil || n != 0 {
		t.Errorf("%d snapshots of %s, a series the collector does not record (%v)", n, other.Slug, err)
	}
	r.act.mu.Lock()
	gaps := r.act.gaps[other.Slug]
	r.act.mu.Unlock()
	if len(gaps) != 0 {
		t.Errorf("gaps of %s: %v", other.Slug, gaps)
	}
	r.sched.mu.Lock()
	calls := r.sched.calls[ended.Slug]
	r.sched.mu.Unlock()
	if len(calls) == 0 {
		t.Errorf("the collector did not schedule the resolution of %s, ended and unresolved", ended.Slug)
	}
}
