package store

import "math"

// finite reports whether x is a number a store keeps: neither NaN nor an
// infinity.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// NonFinite locates the first NaN or infinity of a record, which no store
// keeps, no import takes and no export writes (JSON has neither). The
// exports and the imports of every format ask a record for it, so that
// both refuse the same numbers and name the same field.
type NonFinite struct {
	// Field names the number as an export's columns do (coin_price,
	// orderbook_up, tick_size_changes, fee_rate_bps, ...); "" when every
	// number of the record is finite.
	Field string
	// Index is the number's element in a list field: the tick size change,
	// or the book level counting bids then asks; 0 otherwise.
	Index int
	// Value is the number itself.
	Value float64
}

// FirstNonFinite returns m's first NaN or infinity, its optional numbers
// first and then its tick size changes, or a zero NonFinite.
func (m Market) FirstNonFinite() NonFinite {
	for _, f := range [...]struct {
		name string
		p    *float64
	}{
		{"coin_price_start", m.CoinPriceStart}, {"coin_price_end", m.CoinPriceEnd},
		{"final_volume", m.FinalVolume}, {"final_liquidity", m.FinalLiquidity},
		{"taker_fee_rate", m.TakerFeeRate}, {"maker_rebate_rate", m.MakerRebateRate},
		{"tick_size", m.TickSize}, {"min_order_size", m.MinOrderSize},
		{"price_to_beat", m.PriceToBeat}, {"final_price", m.FinalPrice},
	} {
		if f.p != nil && !finite(*f.p) {
			return NonFinite{Field: f.name, Value: *f.p}
		}
	}
	for i, c := range m.TickSizeChanges {
		if !finite(c.TickSize) {
			return NonFinite{Field: "tick_size_changes", Index: i, Value: c.TickSize}
		}
	}
	return NonFinite{}
}

// FirstNonFinite returns s's first NaN or infinity, its prices first and
// then its books' levels (Up's, then Down's), or a zero NonFinite. It
// allocates nothing: exports ask it of every snapshot.
func (s *Snapshot) FirstNonFinite() NonFinite {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"coin_price", s.CoinPrice}, {"price_up", s.PriceUp}, {"price_down", s.PriceDown}} {
		if !finite(f.v) {
			return NonFinite{Field: f.name, Value: f.v}
		}
	}
	if nf := bookNonFinite("orderbook_up", s.BookUp); nf.Field != "" {
		return nf
	}
	return bookNonFinite("orderbook_down", s.BookDown)
}

// bookNonFinite returns the first NaN or infinity of b's levels, bids
// then asks, named field.
func bookNonFinite(field string, b *Book) NonFinite {
	if b == nil {
		return NonFinite{}
	}
	for i, l := range b.Bids {
		if nf := levelNonFinite(field, i, l); nf.Field != "" {
			return nf
		}
	}
	for i, l := range b.Asks {
		if nf := levelNonFinite(field, len(b.Bids)+i, l); nf.Field != "" {
			return nf
		}
	}
	return NonFinite{}
}

func levelNonFinite(field string, i int, l Level) NonFinite {
	switch {
	case !finite(l.Price):
		return NonFinite{Field: field, Index: i, Value: l.Price}
	case !finite(l.Size):
		return NonFinite{Field: field, Index: i, Value: l.Size}
	}
	return NonFinite{}
}

// FirstNonFinite returns t's first NaN or infinity (price, size, then
// fee_rate_bps), or a zero NonFinite.
func (t MarketTrade) FirstNonFinite() NonFinite {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"price", t.Price}, {"size", t.Size}, {"fee_rate_bps", t.FeeRateBps}} {
		if !finite(f.v) {
			return NonFinite{Field: f.name, Value: f.v}
		}
	}
	return NonFinite{}
}
