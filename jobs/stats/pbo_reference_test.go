package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// referencePBO is CSCV written from Bailey et al. (2017), section 2, as
// plainly as possible and in exact arithmetic (math/big), so that its
// ties are true ties: per-market pnl (NaN: untraded), every choice of
// S/2 of S = 8 blocks as the in-sample set J, the objective computed
// afresh on J's markets and on the others; the in-sample best n* among
// the trials defined on J (the lowest index among ties; none defined: no
// λ); the N trials defined out of sample; n* undefined out of sample with
// N ≥ 1: overfit (λ ≤ 0); n* defined and N ≥ 2, not all N tied: its
// out-of-sample rank among the N by sorting (ties averaged),
// ω = rank/(N + 1), λ = ln(ω/(1 − ω)); otherwise no λ. PBO = the share of λ ≤ 0 over the
// choices that gave a λ. The Sharpe ratio m/sd is compared
// through sign(m)·m²/sd², which orders the same.
func referencePBO(pnl [][]float64, objective string) float64 {
	n, t := len(pnl), len(pnl[0])
	score := func(i int, markets []int) *big.Rat { // nil: undefined
		var traded []*big.Rat
		total := new(big.Rat)
		for _, j := range markets {
			if !math.IsNaN(pnl[i][j]) {
				x := new(big.Rat).SetFloat64(pnl[i][j])
				traded = append(traded, x)
				total.Add(total, x)
			}
		}
		k := big.NewRat(int64(len(traded)), 1)
		switch objective {
		case "total_pnl":
			return total
		case "ev_per_trade": // one trade a traded market
			if len(traded) == 0 {
				return nil
			}
			return new(big.Rat).Quo(total, k)
		}
		if len(traded) < 2 {
			return nil
		}
		mean := new(big.Rat).Quo(total, k)
		ss := new(big.Rat)
		for _, x := range traded {
			d := new(big.Rat).Sub(x, mean)
			ss.Add(ss, d.Mul(d, d))
		}
		if ss.Sign() == 0 {
			return nil
		}
		v := ss.Quo(ss, big.NewRat(int64(len(traded)-1), 1))
		key := new(big.Rat).Mul(mean, mean)
		key.Quo(key, v)
		if mean.Sign() < 0 {
			key.Neg(key)
		}
		return key
	}
	// cmp orders scores (only defined ones are ranked).
	cmp := func(a, b *big.Rat) int { return a.Cmp(b) }
	var combos [][]int
	var pick func(from int, chosen []int)
	pick = func(from int, chosen []int) {
		if len(chosen) == 4 {
			combos = append(combos, append([]int(nil), chosen...))
			return
		}
		for b := from; b < 8; b++ {
			pick(b+1, append(chosen, b))
		}
	}
	pick(0, nil)
	overfit, chosen := 0, 0
	for _, in := range combos {
		isIn := map[int]bool{}
		for _, b := range in {
			isIn[b] = true
		}
		var inM, outM []int
		for b := range 8 {
			for j := b * t / 8; j < (b+1)*t/8; j++ {
				if isIn[b] {
					inM = append(inM, j)
				} else {
					outM = append(outM, j)
				}
			}
		}
		best := -1
		for i := range n {
			if score(i, inM) != nil && (best < 0 || cmp(score(i, inM), score(best, inM)) > 0) {
				best = i
			}
		}
		if best < 0 { // nothing chosen: no logit
			continue
		}
		var ranked []int // the trials defined out of sample
		for i := range n {
			if score(i, outM) != nil {
				ranked = append(ranked, i)
			}
		}
		if score(best, outM) == nil { // chosen, then no objective out of sample
			tradedOut := false
			for _, j := range outM {
				if !math.IsNaN(pnl[best][j]) {
					tradedOut = true
				}
			}
			// No trade there where others had an objective: overfit. A
			// trade without an objective (one market, no spread): none.
			if !tradedOut && len(ranked) > 0 {
				chosen++
				overfit++
			}
			continue
		}
		if len(ranked) < 2 { // no ranking: no logit
			continue
		}
		out := make(map[int]*big.Rat, len(ranked))
		order := append([]int(nil), ranked...)
		for _, i := range ranked {
			out[i] = score(i, outM)
		}
		sort.Slice(order, func(a, b int) bool { return cmp(out[order[a]], out[order[b]]) < 0 })
		if cmp(out[order[0]], out[order[len(order)-1]]) == 0 { // all tied: no ranking
			continue
		}
		chosen++
		var rank float64
		for k := 0; k < len(order); {
			e := k
			for e < len(order) && cmp(out[order[e]], out[order[k]]) == 0 {
				e++
			}
			for q := k; q < e; q++ {
				if order[q] == best {
					rank = float64(k+1+e) / 2 // the average of ranks k+1 … e
				}
			}
			k = e
		}
		w := rank / float64(len(ranked)+1)
		if math.Log(w/(1-w)) <= 0 {
			overfit++
		}
	}
	if chosen == 0 {
		return math.NaN()
	}
	return float64(overfit) / float64(chosen)
}

// TestPBOAgainstReference compares PBO with referencePBO on random
// matrices: pnl in halves from −1.5 to 1.5, so that ties happen (equal
// totals, Sharpe ratios of 0), a fifth of the markets untraded (nine
// tenths in a third of the trials, so that objectives are undefined on
// one half or both), and each objective the reference computes.
func TestPBOAgainstReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 2017))
	for round := range 30 {
		n, markets := 2+rng.IntN(6), 16+rng.IntN(30)
		pnl := make([][]float64, n)
		tallies := make([][]Tally, n)
		for i := range pnl {
			pnl[i] = make([]float64, markets)
			tallies[i] = make([]Tally, markets)
			untraded := 2 // in 10: a fifth of the markets, or in a third of the trials 9 in 10
			if rng.IntN(3) == 0 {
				untraded = 9
			}
			for j := range pnl[i] {
				if rng.IntN(10) < untraded {
					pnl[i][j] = math.NaN()
					tallies[i][j] = TallyOf(Market{})
					continue
				}
				p := float64(rng.IntN(7)-3) / 2
				pnl[i][j] = p
				tallies[i][j] = TallyOf(Market{PnL: p, NTrades: 1, Trades: []Trade{{PnL: p}}})
			}
		}
		for _, obj := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market"} {
			f, _ := ObjectiveNamed(obj)
			got := PBO(tallies, f)
			want := referencePBO(pnl, obj)
			if math.IsNaN(want) && got == nil {
				continue
			}
			if got == nil || math.Abs(*got-want) > 1e-12 {
				t.Errorf("round %d (%d trials, %d markets), %s: PBO %s, reference %v", round, n, markets, obj, fmtF(got), want)
			}
		}
	}
}

func fmtF(x *float64) string {
	if x == nil {
		return "nil"
	}
	return big.NewFloat(*x).String()
}
