package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTradeSumsAgreeWithTheTrades: the statistics of markets that carry
// their trades' sums (as a shard keeps them) are those of the same
// markets carrying the trades, and the sums of a split set of trades add
// up to the sums of the whole.
func TestTradeSumsAgreeWithTheTrades(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 14))
	for c := range 200 {
		markets := make([]Market, 1+rng.IntN(12))
		var all []Trade
		var pnls []float64
		for i := range markets {
			trades := make([]Trade, rng.IntN(40))
			var pnl float64
			for k := range trades {
				won := float64(rng.IntN(2))
				if rng.IntN(10) == 0 {
					won = 0.5
				}
				trades[k] = Trade{PnL: math.Round((rng.NormFloat64()*20+1)*1e6) / 1e6, EntryPrice: rng.Float64(), EntryMid: rng.Float64(), Won: won}
				pnl += trades[k].PnL
				pnls = append(pnls, trades[k].PnL)
			}
			all = append(all, trades...)
			markets[i] = Market{Slug: "m", PnL: pnl, NTrades: len(trades), Trades: trades}
		}
		withSums := make([]Market, len(markets))
		for i, m := range markets {
			s := SumTrades(m.Trades)
			m.Trades, m.Sums = nil, &s
			withSums[i] = m
		}
		want, got := Aggregate(markets, 100), Aggregate(withSums, 100)
		if !nearRelPtr(got.EVPerTrade, want.EVPerTrade) || !nearRelPtr(got.SQN, want.SQN) ||
			(got.EVCI95 == nil) != (want.EVCI95 == nil) || got.EVCI95 != nil && (!nearRel(got.EVCI95[0], want.EVCI95[0]) || !nearRel(got.EVCI95[1], want.EVCI95[1])) ||
			!nearRelPtr(got.BrierEntry, want.BrierEntry) || !nearRelPtr(got.BrierMarket, want.BrierMarket) || len(got.Calibration) != len(want.Calibration) {
			t.Fatalf("case %d: with sums %+v\nwith trades %+v", c, got.Edge, want.Edge)
		}
		for k := range want.Calibration {
			g, w := got.Calibration[k], want.Calibration[k]
			if g.Entries != w.Entries || !nearRelPtr(g.MeanPrice, w.MeanPrice) || !nearRelPtr(g.SideWon, w.SideWon) {
				t.Fatalf("case %d: bucket %d: %+v, want %+v", c, k, g, w)
			}
		}
		for i := range markets {
			if a, b := TallyOf(markets[i]), TallyOf(withSums[i]); a != b {
				t.Fatalf("case %d: market %d: tally %+v with sums, %+v with trades", c, i, b, a)
			}
		}
		// Added in parts, the sums are the whole's; EV of the sums is
		// EV of the pnls (two passes).
		cut := rng.IntN(len(all) + 1)
		parts, whole := SumTrades(all[:cut]).Add(SumTrades(all[cut:])), SumTrades(all)
		if parts.N != whole.N || !nearRel(parts.Mean, whole.Mean) || !nearRel(parts.M2, whole.M2) || !nearRel(parts.SumSq, whole.SumSq) {
			t.Fatalf("case %d: parts %+v, whole %+v", c, parts, whole)
		}
		if e, w := whole.EV(), EV(pnls); !nearRelPtr(e.Mean, w.Mean) || !nearRelPtr(e.SQN, w.SQN) {
			t.Fatalf("case %d: EV of the sums %+v, of the pnls %+v", c, e, w)
		}
	}
}

func nearRel(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func nearRelPtr(a, b *float64) bool {
	return a == nil && b == nil || a != nil && b != nil && nearRel(*a, *b)
}
