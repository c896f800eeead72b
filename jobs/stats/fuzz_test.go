package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzAggregate: for any finite input, huge or tiny, every figure of the
// summary is finite or null (json.Marshal refuses NaN and ±Inf), and PBO
// and DSR over the same numbers are in [0, 1] or nil.
func FuzzAggregate(f *testing.F) {
	f.Add(uint64(1), uint8(30), 1.0, 0.5, 10.0, false)
	f.Add(uint64(2), uint8(3), 1e300, -1e300, 1e-300, true)
	f.Add(uint64(3), uint8(200), -5.0, 1e-12, 100.0, false)
	f.Add(uint64(4), uint8(40), math.MaxFloat64, math.SmallestNonzeroFloat64, math.MaxFloat64, false)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, scale, price, size float64, counts bool) {
		for _, x := range []float64{scale, price, size} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Skip()
			}
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		markets := make([]Market, n)
		for i := range markets {
			m := Market{Slug: "m", End: start.Add(time.Duration(rng.IntN(60*24)) * time.Hour)}
			k := rng.IntN(4)
			for range k {
				// Inputs stay finite: products and sums saturate.
				tr := Trade{PnL: saturate(scale * rng.NormFloat64()), EntryPrice: price * rng.Float64(),
					EntryMid: price * rng.Float64(), Won: float64(rng.IntN(3)) / 2}
				m.PnL = saturate(m.PnL + tr.PnL)
				m.Fees = saturate(m.Fees + math.Abs(scale)*rng.Float64())
				if tr.PnL > 0 {
					m.Wins++
				}
				m.Trades = append(m.Trades, tr)
			}
			m.NTrades = k
			if counts {
				m.Trades = nil
			}
			markets[i] = m
		}
		s := Aggregate(markets, size)
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("%v: %+v", err, s)
		}
		if s.NMarkets != int(n) {
			t.Fatalf("n_markets %d of %d", s.NMarkets, n)
		}
		for _, p := range []*float64{s.PSR0, s.WinRate} {
			if p != nil && (*p < 0 || *p > 100) {
				t.Fatalf("a probability out of range: %v", *p)
			}
		}
		// Two trials from the same markets: one as is, one negated.
		trials := make([][]Tally, 2)
		var pnl []float64
		for _, m := range markets {
			trials[0] = append(trials[0], TallyOf(m))
			neg := m
			neg.PnL = -m.PnL
			trials[1] = append(trials[1], TallyOf(neg))
			if m.NTrades > 0 {
				pnl = append(pnl, m.PnL)
			}
		}
		for _, name := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market", "sqn"} {
			obj, _ := ObjectiveNamed(name)
			if p := PBO(trials, obj); p != nil && !(*p >= 0 && *p <= 1) {
				t.Fatalf("pbo by %s: %v", name, *p)
			}
		}
		if d := DSR(pnl, []float64{scale, price, size}, 3); d != nil && !(*d >= 0 && *d <= 1) {
			t.Fatalf("dsr %v", *d)
		}
	})
}
