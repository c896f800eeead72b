package collect_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
)

// TestCollectorRecordsEverySeries runs the collector at the real cadence
// against the fakes, with Polymarket's own slug forms, and checks
// everything it should record: the current and next market of every
// series, snapshots on the 300 ms grid with sorted books, exchange depth
// and trades, and resolution scheduled for each market.
//
// The end-to-end tests run one at a time: they measure cadence, which
// other tests' load would blur.
func TestCollectorRecordsEverySeries(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			scheme := collect.NewPolymarketScheme()
			recordsEverySeries(t, newRig(t, mk(t), scheme), scheme, time.Time{})
		})
	}
}

// TestCollectorRecordsAcrossWindowEnds is TestCollectorRecordsEverySeries
// begun 4 s before noon US Eastern, when the windows of every series end
// at once (the daily ones included), and checked after noon: the markets
// starting then are recorded, and the ones after them are discovered
// before they start. (Begun 1.5 s before, a loaded machine's start-up of
// the collector outlasted the windows it was to find live.)
func TestCollectorRecordsAcrossWindowEnds(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			scheme := collect.NewPolymarketScheme()
			_, noon := scheme.Window(store.BTC, store.H24, time.Now())
			recordsEverySeries(t, newRigAt(t, mk(t), scheme, noon.Add(-4*time.Second)), scheme, noon)
		})
	}
}

// recordsEverySeries is the body of the tests above, on the rig's clock;
// the markets are checked at an instant not before after.
func recordsEverySeries(t *testing.T, r *rig, scheme collect.SlugScheme, after time.Time) {
	series := collect.AllSeries()
	began := r.clock()
	// Gamma lists markets ahead of their windows. List every series'
	// windows from the one before began's through the one after
	// began+1min's: the run lasts well under a minute (3 s, and at most
	// 20 s more waiting for discovery), so whenever it starts, across the
	// end of a window too, the markets live during it and the next ones are
	// listed.
	r.poly.AddAround(series, began)
	r.poly.AddRange(series, began, began.Add(time.Minute))
	r.poly.AddAround(series, began.Add(time.Minute))
	// Quirks the real Gamma has shown, on some of the current markets.
	quirks := map[store.MarketType]func(*polytest.Market){
		store.M5:  func(m *polytest.Market) { m.DownFirst = true },
		store.M15: func(m *polytest.Market) { m.NumericID = true },
		store.H1:  func(m *polytest.Market) { m.OmitEventStartTime = true },
	}
	for mt, q := range quirks {
		r.poly.Edit(r.poly.AddWindow(store.ETH, mt, began), q)
	}

	cfg := r.config(scheme, series)
	cfg.Interval = 300 * time.Millisecond
	c, stop := start(t, cfg)
	time.Sleep(3 * time.Second)
	// Discovery writes two markets of each series, current and next: on a
	// loaded machine the first round can outlast the sleep, so wait for it
	// (bounded) rather than stop it midway. The markets are then checked
	// at checked, the last instant waited at, while the collector still
	// ran: a window that ends between then and ended (after stop) has a
	// next market no discovery round looked for.
	// Exchange data (checkExchange) is waited for the same way: a loaded
	// machine may not have polled every coin's trades within the sleep.
	// Snapshots likewise: each market live at checked is waited for until
	// it has a few, however slowly a loaded machine records them.
	var checked time.Time
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		checked = r.clock()
		if !checked.Before(after) && allDiscovered(t.Context(), r.st, scheme, series, checked) && exchangeRecorded(t.Context(), r) &&
			liveRecorded(t.Context(), r.st, scheme, series, checked, minLiveSnapshots) || time.Now().After(deadline) {
			break
		}
	}
	stop()
	ended := r.clock()

	ctx := context.Background()
	total, want := 0, 0.0
	for _, sr := range series {
		for _, at := range []time.Time{began, checked} {
			start, end := scheme.Window(sr.Coin, sr.MarketType, at)
			up := r.poly.AddWindow(sr.Coin, sr.MarketType, at) // the listed market
			slug := collect.Slug(sr.Coin, sr.MarketType, start)
			m, err := r.st.GetMarket(ctx, slug)
			if err != nil {
				t.Fatalf("%s: market %s not stored: %v", sr, slug, err)
			}
			if m.MarketID != up.ID || m.EventID != up.EventID || m.ConditionID != up.ConditionID ||
				m.ClobTokenUp != up.UpToken || m.ClobTokenDown != up.DownToken ||
				!m.StartTime.Equal(start) || !m.EndTime.Equal(end) || m.Coin != sr.Coin || m.MarketType != sr.MarketType {
				t.Errorf("%s: stored %+v, upstream %+v", sr, m, *up)
			}
			if d := r.sched.delays(slug); len(d) == 0 {
				t.Errorf("%s: resolution of %s not scheduled", sr, slug)
			} else if due := end.Add(cfg.ResolveDelay).Sub(r.clock()); (d[0] - due).Abs() > 5*time.Second+r.clock().Sub(began) {
				t.Errorf("%s: resolution of %s scheduled in %v, want about %v", sr, slug, d[0], due)
			}
			// The next market is stored before it starts.
			if _, err := r.st.GetMarket(ctx, collect.Slug(sr.Coin, sr.MarketType, end)); err != nil {
				t.Errorf("%s: next market not stored: %v", sr, err)
			}
		}
		// Snapshots of the markets live during the run.
		seen := map[string]bool{}
		for _, at := range []time.Time{began, ended} {
			start, end := scheme.Window(sr.Coin, sr.MarketType, at)
			slug := collect.Slug(sr.Coin, sr.MarketType, start)
			if seen[slug] {
				continue
			}
			seen[slug] = true
			live := minTime(end, ended).Sub(maxTime(start, began))
			want += live.Seconds() / cfg.Interval.Seconds()
			snaps := allSnapshots(t, r.st, slug)
			total += len(snaps)
			checkSnapshots(t, r.bin, sr.Coin, slug, snaps, cfg.Interval, start, end)
		}
	}
	// How many of the instants were recorded is the machine's speed (a
	// loaded one answers some ticks late, and they are dropped as gaps):
	// logged below, not asserted. What is asserted is that every market
	// live at checked was recorded.
	if !liveRecorded(ctx, r.st, scheme, series, checked, minLiveSnapshots) {
		t.Errorf("markets live at %v lack snapshots (want %d each); log:\n%s", checked, minLiveSnapshots, r.logs)
	}
	if got := c.Stats().Snapshots; got != int64(total) {
		t.Errorf("collector reports %d snapshots written, the store holds %d", got, total)
	}
	t.Logf("%d snapshots of %d series in %v (%.0f expected at 300 ms)", total, len(series), ended.Sub(began).Round(time.Millisecond), want)

	checkExchange(t, r, cfg, began)
	if strings.Contains(r.logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", r.logs)
	}
}

// checkSnapshots checks one market's snapshots are real recordings: on the
// grid, inside the window, in order, with books best first whose best asks
// are the prices, and the coin price Binance had then.
func checkSnapshots(t *testing.T, bin *binancetest.Server, coin store.Coin, slug string, snaps []store.Snapshot, grid time.Duration, start, end time.Time) {
	t.Helper()
	for i, s := range snaps {
		if s.Time.Truncate(grid) != s.Time || s.Time.Before(start) || !s.Time.Before(end) {
			t.Fatalf("%s: snapshot at %v is off the %v grid or outside [%v, %v)", slug, s.Time, grid, start, end)
		}
		if i > 0 && !s.Time.After(snaps[i-1].Time) {
			t.Fatalf("%s: snapshot times %v then %v", slug, snaps[i-1].Time, s.Time)
		}
		if s.BookUp == nil || s.BookDown == nil || len(s.BookUp.Asks) == 0 || len(s.BookDown.Asks) == 0 {
			t.Fatalf("%s: snapshot at %v without books", slug, s.Time)
		}
		if s.PriceUp != s.BookUp.Asks[0].Price || s.PriceDown != s.BookDown.Asks[0].Price {
			t.Fatalf("%s: prices %v/%v are not the best asks %v/%v", slug, s.PriceUp, s.PriceDown, s.BookUp.Asks[0], s.BookDown.Asks[0])
		}
		for _, b := range []*store.Book{s.BookUp, s.BookDown} {
			if len(b.Bids) > 10 || len(b.Asks) > 10 {
				t.Fatalf("%s: book of %d/%d levels, want the top 10", slug, len(b.Bids), len(b.Asks))
			}
			if !slices.IsSortedFunc(b.Bids, func(x, y store.Level) int { return -cmpF(x.Price, y.Price) }) ||
				!slices.IsSortedFunc(b.Asks, func(x, y store.Level) int { return cmpF(x.Price, y.Price) }) {
				t.Fatalf("%s: book not best first: %+v", slug, b)
			}
		}
		// The fake's price moves little within the request's round trip.
		if want := bin.Price(coin, s.Time); math.Abs(s.CoinPrice-want)/want > 0.002 {
			t.Fatalf("%s: coin price %v at %v, Binance had %v", slug, s.CoinPrice, s.Time, want)
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkExchange checks the latest depth and recent trades of every coin and
// kind, and the BTCUSDT depth history.
// exchangeRecorded reports whether the collector holds what checkExchange
// looks for: recent trades of every coin and kind, and BTC's depth history.
func exchangeRecorded(ctx context.Context, r *rig) bool {
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			if trades, err := r.live.RecentTrades(ctx, c, k, 0); err != nil || len(trades) < 100 {
				return false
			}
		}
	}
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		if _, n, err := r.st.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: k}); err != nil || n < 5 {
			return false
		}
	}
	return true
}

func checkExchange(t *testing.T, r *rig, cfg collect.Config, began time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			d, err := r.live.LatestDepth(ctx, c, k)
			if err != nil {
				t.Fatalf("latest depth of %s %s: %v", c, k, err)
			}
			if d.Symbol != collect.Symbol(c) || len(d.Bids) != 20 || len(d.Asks) != 20 || d.Time.Before(began) ||
				d.Bids[0].Price >= d.Asks[0].Price || d.LastUpdateID == 0 {
				t.Errorf("latest depth of %s %s: %s at %v, %d/%d levels, best %v/%v", c, k, d.Symbol, d.Time, len(d.Bids), len(d.Asks), d.Bids[0], d.Asks[0])
			}
			want := r.bin.Depth(c, k, d.Time)
			if math.Abs(d.CoinPrice-(want.Bids[0].Price+want.Asks[0].Price)/2)/d.CoinPrice > 0.002 {
				t.Errorf("latest depth of %s %s: coin price %v, the book's mid near then %v", c, k, d.CoinPrice, want.CoinPrice)
			}
			trades, err := r.live.RecentTrades(ctx, c, k, 0)
			if err != nil || len(trades) < 100 {
				t.Fatalf("recent trades of %s %s: %d, %v; log:\n%s", c, k, len(trades), err, r.logs)
			}
			for _, tr := range trades {
				if (k == store.Spot) != (tr.IsBestMatch != nil) {
					t.Fatalf("%s %s trade %d: isBestMatch %v", c, k, tr.ID, tr.IsBestMatch)
				}
			}
		}
	}
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		hist, n, err := r.st.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: k})
		if err != nil || n < 5 {
			t.Fatalf("BTCUSDT %s depth history: %d snapshots, %v", k, n, err)
		}
		for _, d := range hist {
			if d.Time.Truncate(cfg.DepthInterval) != d.Time {
				t.Fatalf("depth history at %v, off the %v grid", d.Time, cfg.DepthInterval)
			}
		}
	}
	for _, c := range []store.Coin{store.ETH, store.SOL} {
		if _, n, _ := r.st.ListDepth(ctx, store.DepthFilter{Symbol: collect.Symbol(c), Kind: store.Spot}); n != 0 {
			t.Errorf("%s depth history kept: SPEC keeps BTC's only", c)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// minLiveSnapshots is how many snapshots each live market is waited for.
const minLiveSnapshots = 3

// liveRecorded reports whether every series' market live at the time at has
// at least n snapshots.
func liveRecorded(ctx context.Context, st store.Store, scheme collect.SlugScheme, series []collect.Series, at time.Time, n int) bool {
	for _, sr := range series {
		start, _ := scheme.Window(sr.Coin, sr.MarketType, at)
		if _, total, err := st.ListSnapshots(ctx, collect.Slug(sr.Coin, sr.MarketType, start), store.SnapshotQuery{Limit: 1}); err != nil || total < n {
			return false
		}
	}
	return true
}

// allDiscovered reports whether the current and next market of every
// series at the time at are stored.
func allDiscovered(ctx context.Context, st store.Store, scheme collect.SlugScheme, series []collect.Series, at time.Time) bool {
	for _, sr := range series {
		start, end := scheme.Window(sr.Coin, sr.MarketType, at)
		for _, t := range []time.Time{start, end} {
			if _, err := st.GetMarket(ctx, collect.Slug(sr.Coin, sr.MarketType, t)); err != nil {
				return false
			}
		}
	}
	return true
}
