package replay

import (
	"math"
	"slices"
	"testing"

	"github.com/updown/updown/store"
)

// valuesAt runs the extended fields of s over the market and returns every
// tick's values of field f (NaN: no value).
func valuesAt(t *testing.T, m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, f string) []float64 {
	t.Helper()
	s := strategy(SideUp, 10, conds(cond(f, OpGreater, 0)), never())
	up, err := store.TapeOf(snaps, store.OutcomeUp)
	if err != nil {
		t.Fatal(err)
	}
	down, err := store.TapeOf(snaps, store.OutcomeDown)
	if err != nil {
		t.Fatal(err)
	}
	s.applyDefaults()
	e := newEngine(Input{Market: m, Tape: up, Other: down, Trades: trades}, s, keepAll)
	fi, _ := parseField(f)
	out := make([]float64, len(snaps))
	for i := range e.ticks {
		var v values
		e.extend(i, &e.ticks[i], &v)
		out[i] = v[fi]
	}
	return out
}

func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) || !math.IsNaN(a[i]) && math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// TestFieldsAtTheirEdges pins the fields beyond SPEC's five (DESIGN 6) where
// a book, a bid, a trade or a reference price is missing.
func TestFieldsAtTheirEdges(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	wide := book(levels(lv(0.40, 30)), levels(lv(0.60, 10)))                // spread 0.20
	tight := book(levels(lv(0.48, 30), lv(0.47, 10)), levels(lv(0.50, 20))) // spread 0.02
	noBid := book(nil, levels(lv(0.52, 10)))
	snaps := []store.Snapshot{
		snap(0, 0.51, 0.49),                  // no book
		withUp(snap(10, 0.52, 0.48), noBid),  // no bid
		withUp(snap(30, 0.50, 0.50), tight),  // a tight book
		withUp(snap(61, 0.55, 0.45), wide),   // wider than 0.10, no Up trade yet
		withUp(snap(70, 0.55, 0.45), wide),   // wider, after an Up trade at 0.57
		withDown(snap(80, 0.45, 0.55), wide), // the Down book only
	}
	trades := []store.MarketTrade{mtrade(65_000, "Up", "BUY", 0.57, 5, "0x1"), mtrade(66_000, "Down", "SELL", 0.44, 5, "0x2")}
	m := market(store.OutcomeUp)
	tests := []struct {
		field string
		m     store.Market
		want  []float64
	}{
		// The recorded price without a bid; the best bid with one.
		{FieldBidUp, m, []float64{0.51, 0.52, 0.48, 0.40, 0.40, 0.45}},
		{FieldBidDown, m, []float64{0.49, 0.48, 0.50, 0.45, 0.45, 0.40}},
		{FieldMidUp, m, []float64{0.51, 0.52, 0.49, 0.50, 0.50, 0.45}},
		// The mid within 0.10; past it the last trade of the outcome,
		// else the mid; the last trade, else the mid, without a bid.
		{FieldDisplayUp, m, []float64{0.51, 0.52, 0.49, 0.50, 0.57, 0.57}},
		{FieldDisplayDown, m, []float64{0.49, 0.48, 0.50, 0.45, 0.44, 0.44}},
		{FieldImbalanceUp, m, []float64{nan, -1, 0.333333333333, 0.5, 0.5, nan}},
		{FieldImbalanceDown, m, []float64{nan, nan, nan, nan, nan, 0.5}},
		{FieldTimeRemaining, m, []float64{100, 90, 70, 39, 30, 20}},
		// No value until a snapshot 60 s back exists.
		{FieldCoinReturn60s, m, []float64{nan, nan, nan, 100 * 61 / 50000.0, 100 * 60 / 50010.0, 100 * 70 / 50010.0}},
		// Without price_to_beat or coin_price_start: the first coin price.
		{FieldCoinMovePct, m, []float64{0, 100 * 10 / 50000.0, 100 * 30 / 50000.0, 100 * 61 / 50000.0, 100 * 70 / 50000.0, 100 * 80 / 50000.0}},
		{FieldCoinMovePct, func() store.Market { m := m; m.CoinPriceStart = ptr(50050.0); return m }(),
			[]float64{-100 * 50 / 50050.0, -100 * 40 / 50050.0, -100 * 20 / 50050.0, 100 * 11 / 50050.0, 100 * 20 / 50050.0, 100 * 30 / 50050.0}},
		{FieldCoinMovePct, func() store.Market { m := m; m.CoinPriceStart, m.PriceToBeat = ptr(50050.0), ptr(50010.0); return m }(),
			[]float64{-100 * 10 / 50010.0, 0, 100 * 20 / 50010.0, 100 * 51 / 50010.0, 100 * 60 / 50010.0, 100 * 70 / 50010.0}},
	}
	for _, tt := range tests {
		if got := valuesAt(t, tt.m, snaps, trades, tt.field); !sameValues(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.field, got, tt.want)
		}
		// Trades in any order are read in time order.
		reversed := slices.Clone(trades)
		slices.Reverse(reversed)
		if got := valuesAt(t, tt.m, snaps, reversed, tt.field); !sameValues(got, tt.want) {
			t.Errorf("%s with the trades reversed: got %v, want %v", tt.field, got, tt.want)
		}
	}
}

// TestReentryControl: the cooldown holds entries back after each exit, and
// maxEntriesPerMarket stops them. The market enters at price_up 0.50 and
// exits at 0.60, alternating every 10 s.
func TestReentryControl(t *testing.T) {
	t.Parallel()
	var snaps []store.Snapshot
	for sec := 0; sec < 100; sec += 10 {
		up := 0.50
		if sec%20 == 10 {
			up = 0.60
		}
		snaps = append(snaps, snap(sec, up, 1-up))
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6)))
	entries := func(s Strategy) []string {
		r, err := Run(market(store.OutcomeUp), snaps, s)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tr := range r.Trades {
			if tr.Type == TradeEntry {
				out = append(out, tr.Time)
			}
		}
		return out
	}
	if got := entries(s); len(got) != 5 {
		t.Errorf("no control: %d entries %v", len(got), got)
	}
	c := s
	c.ReentryCooldownMs = 25_000 // exits at 10 s: next entry at 40 s, not 20 s
	if got, want := entries(c), []string{ts(0), ts(40), ts(80)}; !equalStrings(got, want) {
		t.Errorf("cooldown: %v, want %v", got, want)
	}
	c = s
	c.MaxEntriesPerMarket = 2
	if got, want := entries(c), []string{ts(0), ts(20)}; !equalStrings(got, want) {
		t.Errorf("max entries: %v, want %v", got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
