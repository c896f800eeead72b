package gen

import (
	"math"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// checkDepthHistory checks BTCUSDT spot and futures history: oldest first,
// one per interval over the configured span, books sound, futures a few
// dollars off spot.
func checkDepthHistory(t *testing.T, g *Generator, h []store.DepthSnapshot) {
	t.Helper()
	cfg := g.Config()
	want := int(cfg.DepthHistory / cfg.DepthInterval)
	if len(h) < 2*want || len(h) > 2*(want+1) || len(h)%2 != 0 {
		t.Fatalf("%d depth snapshots, want about 2 × %d", len(h), want)
	}
	spot, fut := h[:len(h)/2], h[len(h)/2:]
	for k, run := range map[store.ExchangeKind][]store.DepthSnapshot{store.Spot: spot, store.Future: fut} {
		if first, last := run[0].Time, run[len(run)-1].Time; cfg.Now.Sub(first) > cfg.DepthHistory || cfg.Now.Sub(last) > cfg.DepthInterval+maxDepthLag || last.After(cfg.Now) {
			t.Errorf("%s history spans %v–%v, want the %v before %v", k, first, last, cfg.DepthHistory, cfg.Now)
		}
		for i, d := range run {
			checkDepth(t, d, store.BTC, k, cfg.DepthLevels)
			if i == 0 {
				continue
			}
			if gap := d.Time.Sub(run[i-1].Time); gap <= 0 || math.Abs(float64(gap-cfg.DepthInterval)) > float64(cfg.DepthInterval)/20 {
				t.Fatalf("%s depth %d and %d are %v apart, want about %v", k, i-1, i, gap, cfg.DepthInterval)
			}
			if d.LastUpdateID <= run[i-1].LastUpdateID {
				t.Errorf("%s last update id does not increase at %d", k, i)
			}
		}
	}
	var maxBasis float64
	for i := range spot {
		p, _ := g.CoinPrice(store.BTC, spot[i].Time)
		if math.Abs(spot[i].CoinPrice-p) > 0.01 {
			t.Errorf("spot coin price %v at %v, path %v", spot[i].CoinPrice, spot[i].Time, p)
		}
		if !fut[i].Time.Equal(spot[i].Time) {
			t.Errorf("futures snapshot %d at %v, spot at %v", i, fut[i].Time, spot[i].Time)
		}
		maxBasis = max(maxBasis, math.Abs(fut[i].CoinPrice-spot[i].CoinPrice))
	}
	if maxBasis > 25 || maxBasis < 1 {
		t.Errorf("futures are up to $%.2f off spot, want a few dollars", maxBasis)
	}
}

// checkTrades checks a run of recent trades as Trades returns it.
func checkTrades(t *testing.T, g *Generator, c store.Coin, k store.ExchangeKind, trades []store.Trade, n int) {
	t.Helper()
	now := g.Config().Now
	in := instrumentOf(c, k)
	if len(trades) != n {
		t.Fatalf("%s %s: %d trades, want %d", c, k, len(trades), n)
	}
	if last := trades[len(trades)-1].Time; last.After(now) || now.Sub(last) > 5*time.Second {
		t.Errorf("%s %s: newest trade at %v, want just before %v", c, k, last, now)
	}
	buyerMaker := 0
	for i, tr := range trades {
		if i > 0 && (tr.ID <= trades[i-1].ID || tr.Time.Before(trades[i-1].Time)) {
			t.Fatalf("%s %s: trade %d (id %d at %v) is not after trade %d (id %d at %v)",
				c, k, i, tr.ID, tr.Time, i-1, trades[i-1].ID, trades[i-1].Time)
		}
		if !tr.Time.Truncate(time.Millisecond).Equal(tr.Time) || tr.Time.Location() != time.UTC {
			t.Errorf("%s %s: trade time %v is not UTC to the millisecond", c, k, tr.Time)
		}
		if (k == store.Spot) != (tr.IsBestMatch != nil) || tr.IsBestMatch != nil && !*tr.IsBestMatch {
			t.Errorf("%s %s: isBestMatch %v", c, k, tr.IsBestMatch)
		}
		if tr.Qty <= 0 || roundTo(tr.Qty, in.qtyDec) != tr.Qty || roundTo(tr.Price, in.priceDec) != tr.Price {
			t.Errorf("%s %s: trade %+v off the tick or lot", c, k, tr)
		}
		if math.Abs(tr.QuoteQty-tr.Price*tr.Qty) > 1e-8*max(1, tr.QuoteQty) {
			t.Errorf("%s %s: quoteQty %v, price × qty %v", c, k, tr.QuoteQty, tr.Price*tr.Qty)
		}
		if p, _ := g.CoinPrice(c, tr.Time); math.Abs(tr.Price/p-1) > 5e-4 {
			t.Errorf("%s %s: trade at %v while the coin is at %v", c, k, tr.Price, p)
		}
		if tr.IsBuyerMaker {
			buyerMaker++
		}
	}
	if buyerMaker < n/3 || buyerMaker > 2*n/3 {
		t.Errorf("%s %s: %d of %d trades are buyer-maker", c, k, buyerMaker, n)
	}
}

func TestExchange(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.DepthHistory = 2 * time.Hour
	g := mustNew(t, cfg)
	h := g.DepthHistory()
	checkDepthHistory(t, g, h)
	for _, i := range []int{0, 17, len(h)/2 + 5, len(h) - 1} {
		d, err := g.Depth(store.BTC, h[i].Kind, h[i].Time)
		if err != nil || !sameJSON(t, d, h[i]) {
			t.Errorf("Depth at %v = %+v, %v; history holds %+v", h[i].Time, d, err, h[i])
		}
	}

	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			trades, err := g.Trades(c, k, 3000)
			if err != nil {
				t.Fatal(err)
			}
			checkTrades(t, g, c, k, trades, 3000)
			if few, _ := g.Trades(c, k, 10); !sameJSON(t, few, trades[len(trades)-10:]) {
				t.Errorf("%s %s: the 10 latest trades are not the tail of the 3,000 latest", c, k)
			}
			if none, err := g.Trades(c, k, 0); err != nil || len(none) != 0 {
				t.Errorf("Trades(0) = %v, %v", none, err)
			}
			at := testNow().Add(-90 * time.Minute)
			d1, _ := g.Depth(c, k, at)
			d2, _ := g.Depth(c, k, at)
			if !sameJSON(t, d1, d2) {
				t.Errorf("%s %s: Depth is not a function of time", c, k)
			}
			checkDepth(t, d1, c, k, cfg.DepthLevels)
		}
	}
	for _, err := range []error{
		func() error { _, err := g.Depth("DOGE", store.Spot, testNow()); return err }(),
		func() error { _, err := g.Depth(store.BTC, "margin", testNow()); return err }(),
		func() error { _, err := g.Trades(store.BTC, store.Spot, maxTrades+1); return err }(),
		func() error { _, err := g.LatestDepth(store.ETH, ""); return err }(),
	} {
		if err == nil {
			t.Error("a bad exchange request succeeded")
		}
	}
	if Symbol(store.SOL) != "SOLUSDT" {
		t.Errorf("Symbol(SOL) = %q", Symbol(store.SOL))
	}

	// No BTC, no depth history (SPEC keeps it for BTC only).
	cfg.Coins = DefaultCoins()[1:]
	cfg.Markets = map[store.MarketType]int{store.M5: 1}
	if h := mustNew(t, cfg).DepthHistory(); len(h) != 0 {
		t.Errorf("%d depth snapshots without BTC", len(h))
	}
}

// TestDepthHistoryKeepsItsPast: the history at a later Now holds every
// snapshot the history at an earlier Now held, at the same time, and no
// other before that Now. The dev collector adds what a later Now brings
// (snapshots after its last tick), so a tick whose snapshot moved between
// two Nows was stored twice: once at the tick, once a moment after it,
// two snapshots for one collector tick, whenever dev started or ticked
// within that moment.
func TestDepthHistoryKeepsItsPast(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.DepthHistory = time.Hour
	tick := testNow().Truncate(cfg.DepthInterval)
	later := cfg
	later.Now = tick.Add(3 * cfg.DepthInterval)
	final := mustNew(t, later).DepthHistory()
	for _, d := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond, 249 * time.Millisecond, time.Second} {
		early := cfg
		early.Now = tick.Add(d)
		// Both windows hold the stretch from the later one's start on.
		from := later.Now.Add(-later.DepthHistory)
		var got, want []store.DepthSnapshot
		for _, s := range mustNew(t, early).DepthHistory() {
			if !s.Time.Before(from) {
				got = append(got, s)
			}
		}
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			for _, s := range final {
				if s.Kind == k && !s.Time.Before(from) && !s.Time.After(early.Now) {
					want = append(want, s)
				}
			}
		}
		if !sameJSON(t, got, want) {
			gotTimes, wantTimes := map[time.Time]bool{}, map[time.Time]bool{}
			for _, s := range got {
				gotTimes[s.Time] = true
			}
			for _, s := range want {
				wantTimes[s.Time] = true
			}
			for tm := range gotTimes {
				if !wantTimes[tm] {
					t.Errorf("Now %v after the tick: a snapshot at %v that a later Now does not have", d, tm)
				}
			}
			for tm := range wantTimes {
				if !gotTimes[tm] {
					t.Errorf("Now %v after the tick: no snapshot at %v, which a later Now has", d, tm)
				}
			}
			if len(gotTimes) == len(wantTimes) {
				t.Errorf("Now %v after the tick: the history differs from a later Now's", d)
			}
		}
	}
}
