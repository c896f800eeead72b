package collect

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestRestartRecordsTheTailOfMarketsEndedWhileDown: a collector that
// stopped in the middle of a market's window and starts again after the
// window ended records the stretch from the market's last snapshot to its
// end as a gap, as a collector running at its end does; resolved or not
// (a market ends and resolves within a minute). One fully recorded, or
// of another collector's series, gets none.
func TestRestartRecordsTheTailOfMarketsEndedWhileDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	now := time.Date(2026, 11, 29, 12, 7, 0, 0, time.UTC)
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stopped := start.Add(2 * time.Minute) // the last snapshot before the stop
	up := "Up"
	mk := func(c store.Coin, mt store.MarketType, s time.Time, d time.Duration, id string, resolved bool) store.Market {
		m := store.Market{Slug: Slug(c, mt, s), MarketID: id, Coin: c, MarketType: mt, StartTime: s, EndTime: s.Add(d),
			ClobTokenUp: id + "u", ClobTokenDown: id + "d"}
		if resolved {
			p, at := 1.0, s.Add(d+time.Minute)
			m.Winner, m.CoinPriceStart, m.CoinPriceEnd, m.ResolvedAt, m.ResolutionSource = &up, &p, &p, &at, store.SourceChainlink
		}
		return m
	}
	halfBTC := mk(store.BTC, store.M5, start, 5*time.Minute, "1", true)                  // ended 12:05, resolved
	halfETH := mk(store.ETH, store.M5, start, 5*time.Minute, "2", false)                 // ended 12:05, not yet resolved
	whole := mk(store.SOL, store.M5, start, 5*time.Minute, "3", true)                    // recorded to its end
	other := mk(store.BTC, store.M15, start, 5*time.Minute, "4", false)                  // not this collector's series
	live := mk(store.BTC, store.M5, start.Add(5*time.Minute), 5*time.Minute, "5", false) // live now
	if err := st.UpsertMarkets(ctx, []store.Market{halfBTC, halfETH, whole, other, live}); err != nil {
		t.Fatal(err)
	}
	snaps := func(from, to time.Time) []store.Snapshot {
		var out []store.Snapshot
		for at := from; at.Before(to); at = at.Add(300 * time.Millisecond) {
			out = append(out, store.Snapshot{Time: at, CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5})
		}
		return out
	}
	for _, m := range []store.Market{halfBTC, halfETH, other} {
		if _, err := st.AppendSnapshots(ctx, m.Slug, snaps(start, stopped.Add(time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AppendSnapshots(ctx, whole.Slug, snaps(start, whole.EndTime)); err != nil {
		t.Fatal(err)
	}
	c := offlineCollector(t, Config{Store: st, Now: func() time.Time { return now },
		Series: []Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.ETH, MarketType: store.M5}, {Coin: store.SOL, MarketType: store.M5}}})
	c.load(ctx)
	if !c.known(live.Slug) {
		t.Errorf("the live market %s is not picked up", live.Slug)
	}
	c.closeEnded(book.Next(now, c.cfg.Interval))
	for len(c.work) > 0 {
		(<-c.work)(ctx)
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	for _, tc := range []struct {
		m    store.Market
		want []store.Gap
	}{
		{halfBTC, []store.Gap{{From: stopped, To: halfBTC.EndTime}}},
		{halfETH, []store.Gap{{From: stopped, To: halfETH.EndTime}}},
		{whole, nil},
		{other, nil},
	} {
		if got := c.w.gaps[tc.m.Slug]; !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: gaps %+v, want %+v", tc.m.Slug, got, tc.want)
		}
	}
}
