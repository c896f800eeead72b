package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
)

// This file checks a sweep's statistics end to end against references
// written apart from package stats, from DESIGN 14 and the literature:
// the deflated Sharpe ratio of Bailey and López de Prado (2014), CSCV's
// probability of backtest overfitting of Bailey, Borwein, López de Prado
// and Zhu (2017), and DESIGN's HOLDOUT and WALK_FORWARD cuts. Nothing
// here calls package stats: the normal quantile is a bisection of erfc,
// the moments are written out, and PBO sorts its ranks.

// refPhi is Φ.
func refPhi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// refPhiInv is Φ⁻¹ by bisection: slow, and exact to the last bits.
func refPhiInv(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if refPhi(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// refSR0 is the expected maximum Sharpe ratio of n trials whose Sharpe
// ratios have variance v: √v·((1 − γ)·Φ⁻¹(1 − 1/n) + γ·Φ⁻¹(1 − 1/(n·e))).
func refSR0(n int, v float64) float64 {
	const gamma = 0.57721566490153286 // the Euler-Mascheroni constant
	N := float64(n)
	return math.Sqrt(v) * ((1-gamma)*refPhiInv(1-1/N) + gamma*refPhiInv(1-1/(N*math.E)))
}

// refMeanSD is the mean and the sample standard deviation (n − 1).
func refMeanSD(xs []float64) (float64, float64) {
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(xs)-1))
}

// refSharpe is mean/sd (n − 1); ok false below 2 values or with no spread.
func refSharpe(xs []float64) (float64, bool) {
	if len(xs) < 2 {
		return 0, false
	}
	m, sd := refMeanSD(xs)
	if sd < 1e-12*math.Max(1, math.Abs(m)) {
		return 0, false
	}
	return m / sd, true
}

// refDSR is the deflated Sharpe ratio: best the best trial's per-market
// pnl over the markets it traded, sharpes every trial's defined per-market
// Sharpe ratio, n the trials tried. Z = (SR − SR₀)·√(T − 1) /
// √(1 − γ₃·SR + (γ₄ − 1)/4·SR²), γ₃ and γ₄ population moments.
func refDSR(best, sharpes []float64, n int) (float64, bool) {
	sr, ok := refSharpe(best)
	if !ok || len(sharpes) < 2 || n < 2 {
		return 0, false
	}
	_, sdS := refMeanSD(sharpes)
	sr0 := refSR0(n, sdS*sdS)
	T := float64(len(best))
	m, _ := refMeanSD(best)
	var m2, m3, m4 float64
	for _, x := range best {
		d := x - m
		m2 += d * d / T
		m3 += d * d * d / T
		m4 += d * d * d * d / T
	}
	skew, kurt := m3/math.Pow(m2, 1.5), m4/(m2*m2)
	return refPhi((sr - sr0) * math.Sqrt(T-1) / math.Sqrt(1-skew*sr+(kurt-1)/4*sr*sr)), true
}

// refScore is one trial's objective over a set of markets' results: pnl
// in tenths, summed exactly as integers (a sum of 0.1, 0.2 and −0.3 is 0,
// as it is in decimal); traded marks a market with a trade (one each
// here). NaN: undefined.
func refScore(objective string, tenths []int, traded []bool) float64 {
	var xs []float64
	var total int
	for j := range tenths {
		total += tenths[j]
		if traded[j] {
			xs = append(xs, float64(tenths[j]))
		}
	}
	switch objective {
	case "total_pnl":
		return float64(total) / 10
	case "ev_per_trade":
		if len(xs) == 0 {
			return math.NaN()
		}
		return float64(total) / 10 / float64(len(xs))
	case "sharpe_per_market": // scale-free: the tenths' ratio
		if len(xs) < 2 {
			return math.NaN()
		}
		_, sd := refMeanSD(xs)
		if sd == 0 {
			return math.NaN()
		}
		return float64(total) / float64(len(xs)) / sd
	}
	panic(objective)
}

// refCmp orders two objectives, NaN below every number; values within a
// relative 1e-9 tie (a ratio of the same numbers summed in another order).
func refCmp(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return -1
	case math.IsNaN(b):
		return 1
	case math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)):
		return 0
	case a < b:
		return -1
	}
	return 1
}

// refPBO is CSCV over pnl[trial][market] (traded likewise): S = 8 blocks
// ⌊bT/8⌋ … ⌊(b+1)T/8⌋ − 1, every choice of 4 as in-sample; the in-sample
// best among the trials with an in-sample objective (the lowest index
// among ties; none: no λ); the N trials with an objective out of sample;
// the best without one there and N ≥ 1: overfit; with one and N ≥ 2, not
// all N tied: its out-of-sample rank among the N by sorting (1 the worst, ties averaged),
// λ = ln(ω/(1 − ω)) with ω = rank/(N + 1); otherwise no λ. PBO = the
// share of λ ≤ 0 among the choices that gave a λ.
func refPBO(objective string, pnl [][]int, traded [][]bool) (float64, int, bool) {
	n := len(pnl)
	if n < 2 || len(pnl[0]) < 16 {
		return 0, 0, false
	}
	T := len(pnl[0])
	block := func(j int) int { // the block of market j
		for b := range 8 {
			if j < (b+1)*T/8 {
				return b
			}
		}
		return 7
	}
	overfit, choices := 0, 0
	for mask := range 256 {
		in := 0
		for b := range 8 {
			in += mask >> b & 1
		}
		if in != 4 {
			continue
		}
		score := func(i int, inSample bool) float64 {
			var p []int
			var tr []bool
			for j := range T {
				if (mask>>block(j)&1 == 1) == inSample {
					p, tr = append(p, pnl[i][j]), append(tr, traded[i][j])
				}
			}
			return refScore(objective, p, tr)
		}
		best := -1
		for i := range n {
			if !math.IsNaN(score(i, true)) && (best < 0 || refCmp(score(i, true), score(best, true)) > 0) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		var ranked []int // the trials with an objective out of sample
		for i := range n {
			if !math.IsNaN(score(i, false)) {
				ranked = append(ranked, i)
			}
		}
		if math.IsNaN(score(best, false)) {
			tradedOut := false
			for j := range T {
				if mask>>block(j)&1 == 0 && traded[best][j] {
					tradedOut = true
				}
			}
			// The best did nothing where others did: overfit. One that
			// traded without an objective (one market, no spread): none.
			if !tradedOut && len(ranked) > 0 {
				choices++
				overfit++
			}
			continue
		}
		if len(ranked) < 2 {
			continue
		}
		out := map[int]float64{}
		order := append([]int(nil), ranked...)
		for _, i := range ranked {
			out[i] = score(i, false)
		}
		sort.SliceStable(order, func(a, b int) bool { return refCmp(out[order[a]], out[order[b]]) < 0 })
		if refCmp(out[order[0]], out[order[len(order)-1]]) == 0 {
			continue // all N tied: no ranking
		}
		choices++
		var rank float64
		for k := 0; k < len(order); {
			e := k
			for e < len(order) && refCmp(out[order[e]], out[order[k]]) == 0 {
				e++
			}
			for q := k; q < e; q++ {
				if order[q] == best {
					rank = float64(k+1+e) / 2
				}
			}
			k = e
		}
		w := rank / float64(len(ranked)+1)
		if math.Log(w/(1-w)) <= 0 {
			overfit++
		}
	}
	if choices == 0 {
		return 0, 0, false
	}
	return float64(overfit) / float64(choices), choices, true
}

// refFolds is DESIGN 14's split of n markets in time order: HOLDOUT the
// first markets train and the last ⌈testFraction·n⌉ test, the embargo
// dropped between them; WALK_FORWARD folds + 1 blocks as even as they
// can be (the larger first), fold k training on blocks 0 … k − 1 less the
// embargo's markets at their end and testing on block k.
func refFolds(s Split, n int) []Fold {
	span := func(lo, hi int) []int {
		out := []int{}
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	switch s.Kind {
	case SplitHoldout:
		test := int(math.Ceil(math.Round(s.TestFraction*float64(n)*1e6) / 1e6))
		return []Fold{{Train: span(0, n-test-s.EmbargoMarkets), Test: span(n-test, n)}}
	case SplitWalkForward:
		var starts []int
		at := 0
		for b := range s.Folds + 1 {
			starts = append(starts, at)
			at += n / (s.Folds + 1)
			if b < n%(s.Folds+1) {
				at++
			}
		}
		starts = append(starts, n)
		var folds []Fold
		for k := 1; k <= s.Folds; k++ {
			folds = append(folds, Fold{Train: span(0, starts[k]-s.EmbargoMarkets), Test: span(starts[k], starts[k+1])})
		}
		return folds
	}
	return []Fold{{Train: span(0, n), Test: []int{}}}
}

// TestSummarizeAgainstReference runs Summarize on random sweeps (1 to 7
// trials, 5 to 60 markets, every split, three objectives; pnl in tenths
// from −0.6 to 0.6, so that ties happen and sums of several cancel, a
// quarter of the replays untraded, three quarters or all of them in a
// third of the trials, so that objectives are undefined on a half or on
// every market, a tenth of the markets without data) and checks its
// splits, best trial, walk forward, DSR and PBO against the references
// above.
func TestSummarizeAgainstReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 14))
	objectives := []string{"total_pnl", "ev_per_trade", "sharpe_per_market"}
	checked := map[string]int{}
	for round := range 300 {
		nt, n := 1+rng.IntN(7), 5+rng.IntN(56)
		objective := objectives[rng.IntN(len(objectives))]
		var split map[string]any
		switch rng.IntN(3) {
		case 0:
			split = map[string]any{"kind": "NONE"}
		case 1:
			split = map[string]any{"kind": "HOLDOUT", "testFraction": 0.1 + float64(rng.IntN(41))/100, "embargoMarkets": rng.IntN(3)}
		case 2:
			split = map[string]any{"kind": "WALK_FORWARD", "folds": 2 + rng.IntN(4), "embargoMarkets": rng.IntN(3)}
		}
		values := make([]any, nt)
		for i := range values {
			values[i] = 10 + 5*i
		}
		p, err := plan(t, body(func(b map[string]any) {
			b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": values}}
			b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
			b["split"], b["objective"] = split, objective
		}), ProLimits)
		if err != nil {
			t.Fatal(err)
		}
		folds, err := p.Request.Split.Cut(n)
		if err != nil {
			continue // too few markets for the split: said so
		}
		name := fmt.Sprintf("round %d (%d trials, %d markets, %v, %s)", round, nt, n, split, objective)
		if want := refFolds(p.Request.Split, n); !reflect.DeepEqual(folds, want) {
			t.Errorf("%s: folds %v, want %v", name, folds, want)
			continue
		}
		// pnl[trial][market] in tenths, traded likewise; noData[market].
		pnl, trd := make([][]int, nt), make([][]bool, nt)
		noData := make([]bool, n)
		for m := range n {
			noData[m] = rng.IntN(10) == 0
		}
		markets := make([]MarketInfo, n)
		outcomes := make([][]TrialMarket, n)
		for m := range n {
			markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1, 0, 15*m, 0, 0, time.UTC)}
			outcomes[m] = make([]TrialMarket, nt)
		}
		for tr := range nt {
			pnl[tr], trd[tr] = make([]int, n), make([]bool, n)
			untraded := 1 // replays in 4; in a third of the trials 3 in 4, or all (it never trades)
			if rng.IntN(3) == 0 {
				untraded = 3 + rng.IntN(2)
			}
			for m := range n {
				switch {
				case noData[m]:
					outcomes[m][tr] = TrialMarket{Error: "NO_DATA"}
				case rng.IntN(4) < untraded:
					outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{}}
				default:
					pnl[tr][m], trd[tr][m] = rng.IntN(13)-6, true
					outcomes[m][tr] = traded(float64(pnl[tr][m]) / 10)
				}
			}
		}
		res, err := p.Summarize(markets, outcomes, folds)
		if err != nil {
			t.Fatal(err)
		}
		// The markets of a set that have data, as the reference's rows.
		rows := func(tr int, idx []int) ([]int, []bool) {
			var p []int
			var d []bool
			for _, m := range idx {
				if !noData[m] {
					p, d = append(p, pnl[tr][m]), append(d, trd[tr][m])
				}
			}
			return p, d
		}
		objectiveOn := func(tr int, idx []int) float64 {
			p, d := rows(tr, idx)
			if len(p) == 0 {
				return math.NaN()
			}
			return refScore(objective, p, d)
		}
		bestOn := func(idx []int) int {
			best := -1
			for tr := range nt {
				if v := objectiveOn(tr, idx); !math.IsNaN(v) && (best < 0 || v > objectiveOn(best, idx)) {
					best = tr
				}
			}
			return best
		}
		train := folds[len(folds)-1].Train
		best := bestOn(train)
		if best < 0 {
			if res.Best != nil {
				t.Errorf("%s: best trial %d where no trial has an objective", name, res.Best.Trial)
			}
			continue
		}
		if res.Best == nil || res.Best.Trial != best {
			t.Errorf("%s: best %+v, want trial %d", name, res.Best, best)
			continue
		}
		checked["best"]++
		// DSR: the best trial's pnl on the train markets it traded, every
		// trial's defined Sharpe ratio there, all nt trials tried.
		var bestPnL, sharpes []float64
		for _, m := range train {
			if !noData[m] && trd[best][m] {
				bestPnL = append(bestPnL, float64(pnl[best][m])/10)
			}
		}
		for tr := range nt {
			p, d := rows(tr, train)
			if sr := refScore("sharpe_per_market", p, d); !math.IsNaN(sr) {
				sharpes = append(sharpes, sr)
			}
		}
		switch want, ok := refDSR(bestPnL, sharpes, nt); {
		case !ok && res.DSR != nil:
			t.Errorf("%s: dsr %v, want null", name, *res.DSR)
		case ok && (res.DSR == nil || math.Abs(*res.DSR-want) > 2e-6):
			t.Errorf("%s: dsr %s, want %.6f", name, fmtPtr(res.DSR), want)
		case ok:
			checked["dsr"]++
		}
		// PBO: the train markets with data, the same for every trial.
		var ranked []int
		for _, m := range train {
			if !noData[m] {
				ranked = append(ranked, m)
			}
		}
		mp, mt := make([][]int, nt), make([][]bool, nt)
		for tr := range nt {
			mp[tr], mt[tr] = rows(tr, ranked)
		}
		switch want, choices, ok := refPBO(objective, mp, mt); {
		case !ok && res.PBO != nil:
			t.Errorf("%s: pbo %v, want null", name, *res.PBO)
		case ok && (res.PBO == nil || math.Abs(*res.PBO-want) > 1e-6 || res.PBOChoices == nil || *res.PBOChoices != choices):
			got := -1
			if res.PBOChoices != nil {
				got = *res.PBOChoices
			}
			t.Errorf("%s: pbo %s over %d choices, want %.6f over %d", name, fmtPtr(res.PBO), got, want, choices)
		case ok:
			checked["pbo"]++
		}
		if p.Request.Split.Kind != SplitWalkForward {
			continue
		}
		// The walk forward: each fold's choice on its train markets, and
		// the total pnl of each test block replayed with it.
		var total int
		for k, f := range folds {
			chose := bestOn(f.Train)
			if got := foldTrial(res.Folds[k]); got != chose {
				t.Errorf("%s: fold %d chose %d, want %d", name, k+1, got, chose)
			}
			if chose >= 0 {
				p, _ := rows(chose, f.Test)
				for _, x := range p {
					total += x
				}
			}
		}
		if math.Abs(res.Best.Test.TotalPnL-float64(total)/10) > 1e-9 {
			t.Errorf("%s: walk-forward test pnl %v, want %v", name, res.Best.Test.TotalPnL, float64(total)/10)
		}
		checked["walk forward"]++
	}
	// The rounds must have reached every check, or the test proves little.
	for _, k := range []string{"best", "dsr", "pbo", "walk forward"} {
		if checked[k] < 20 {
			t.Errorf("only %d rounds checked %s", checked[k], k)
		}
	}
}

// TestSummarizeEdges: the edge cases of DSR and PBO as the references
// above and DESIGN 14 have them.
func TestSummarizeEdges(t *testing.T) {
	t.Parallel()
	pnl := func(m int) float64 { return float64((m*7)%5-1) / 10 } // −0.1 … 0.3
	// Two identical trials: the trials' Sharpe ratios have no variance,
	// SR₀ = 0 and the DSR is the PSR against 0 (psr0); every CSCV split
	// ties them in and out of sample: no ranking, no PBO (rank 1.5 of 2,
	// logit 0, once made it 1: "overfit" for a search with nothing to
	// choose).
	res, _ := summarizeTwoTrials(t, 40, func(b map[string]any) { b["split"] = map[string]any{"kind": "NONE"} },
		func(m, tr int) TrialMarket { return traded(pnl(m)) })
	var xs []float64
	for m := range 40 {
		xs = append(xs, pnl(m))
	}
	want, _ := refDSR(xs, []float64{1, 1}, 2)
	if res.DSR == nil || res.Trials[0].Train.PSR0 == nil || math.Abs(*res.DSR-want) > 1e-6 || *res.DSR != *res.Trials[0].Train.PSR0 {
		t.Errorf("identical trials: dsr %s, psr0 %s, want %.6f both", fmtPtr(res.DSR), fmtPtr(res.Trials[0].Train.PSR0), want)
	}
	if res.PBO != nil || res.PBOChoices != nil {
		t.Errorf("identical trials: pbo %s over %v, want null", fmtPtr(res.PBO), res.PBOChoices)
	}
	// 15 markets: fewer than two a block, no PBO; a DSR all the same.
	res, _ = summarizeTwoTrials(t, 15, func(b map[string]any) { b["split"] = map[string]any{"kind": "NONE"} },
		func(m, tr int) TrialMarket { return traded(pnl(m) * float64(tr+1)) })
	if res.PBO != nil || res.PBOChoices != nil || res.DSR == nil {
		t.Errorf("15 markets: pbo %s over %v, dsr %s", fmtPtr(res.PBO), res.PBOChoices, fmtPtr(res.DSR))
	}
	// A trial that never trades has no Sharpe ratio: with one trial
	// defined there is no variance to deflate by, and no DSR.
	res, _ = summarizeTwoTrials(t, 20, func(b map[string]any) { b["split"] = map[string]any{"kind": "NONE"} },
		func(m, tr int) TrialMarket {
			if tr == 1 {
				return TrialMarket{Performance: &replay.Performance{}}
			}
			return traded(pnl(m))
		})
	if res.DSR != nil || res.Best == nil || res.Best.Trial != 0 {
		t.Errorf("one defined Sharpe ratio: dsr %s, best %+v", fmtPtr(res.DSR), res.Best)
	}
	// The best trial by total_pnl made 0.5 on every market: its pnl does
	// not vary, it has no Sharpe ratio to deflate, and there is no DSR,
	// though the other two trials' ratios are defined.
	res, _ = summarizeTrials(t, 3, 40, func(b map[string]any) {
		b["split"], b["objective"] = map[string]any{"kind": "NONE"}, "total_pnl"
	}, func(m, tr int) TrialMarket {
		if tr == 0 {
			return traded(0.5)
		}
		return traded(pnl(m) * float64(tr))
	})
	if res.DSR != nil || res.Best == nil || res.Best.Trial != 0 || res.Trials[1].Train.SharpePerMarket == nil || res.Trials[2].Train.SharpePerMarket == nil {
		t.Errorf("a best trial of flat pnl: dsr %s, best %+v", fmtPtr(res.DSR), res.Best)
	}
}
