package store_test

import (
	"math"
	"testing"

	"github.com/updown/updown/store"
)

// TestFirstNonFinite: each record names its first NaN or infinity as an
// export's columns do, with the list element it sits in, and nothing when
// every number is finite.
func TestFirstNonFinite(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(-1)
	half := 0.5
	level := func(p, s float64) store.Level { return store.Level{Price: p, Size: s} }
	for _, c := range []struct {
		name  string
		got   store.NonFinite
		field string
		index int
	}{
		{"finite market", store.Market{TickSize: &half, TickSizeChanges: []store.TickSizeChange{{TickSize: 0.01}}}.FirstNonFinite(), "", 0},
		{"market number", store.Market{CoinPriceStart: &half, FinalPrice: &nan, TakerFeeRate: &inf}.FirstNonFinite(), "taker_fee_rate", 0},
		{"tick size change", store.Market{TickSizeChanges: []store.TickSizeChange{{TickSize: 0.01}, {TickSize: inf}}}.FirstNonFinite(), "tick_size_changes", 1},
		{"finite snapshot", (&store.Snapshot{CoinPrice: 1, BookUp: &store.Book{Bids: []store.Level{level(0.5, 1)}}}).FirstNonFinite(), "", 0},
		{"snapshot price", (&store.Snapshot{CoinPrice: 1, PriceUp: 0.5, PriceDown: nan, BookUp: &store.Book{Asks: []store.Level{level(inf, 1)}}}).FirstNonFinite(), "price_down", 0},
		{"book ask", (&store.Snapshot{BookDown: &store.Book{Bids: []store.Level{level(0.4, 1)}, Asks: []store.Level{level(0.5, 1), level(0.6, nan)}}}).FirstNonFinite(), "orderbook_down", 2},
		{"finite trade", store.MarketTrade{Price: 0.5, Size: 1}.FirstNonFinite(), "", 0},
		{"trade fee", store.MarketTrade{Price: 0.5, Size: 1, FeeRateBps: inf}.FirstNonFinite(), "fee_rate_bps", 0},
	} {
		if c.got.Field != c.field || c.got.Index != c.index {
			t.Errorf("%s: %+v, want field %q index %d", c.name, c.got, c.field, c.index)
		}
		if c.field != "" && !math.IsNaN(c.got.Value) && !math.IsInf(c.got.Value, 0) {
			t.Errorf("%s: value %v, want the NaN or infinity", c.name, c.got.Value)
		}
	}
}
