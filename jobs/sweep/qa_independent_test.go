package sweep

// An independent check of the split cuts and of Summarize's best trial,
// DSR and PBO, computed here by hand and from the textbook formulas
// without the stats package's helpers.

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func qaSpan(lo, hi int) []int {
	out := []int{}
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func TestQACutByHand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    Split
		n    int
		want []Fold
	}{
		// test = ⌈0.3·10⌉ = 3, embargo 1, train the first 6.
		{"holdout 10 0.3 e1", Split{Kind: SplitHoldout, TestFraction: 0.3, EmbargoMarkets: 1}, 10, []Fold{{Train: qaSpan(0, 6), Test: qaSpan(7, 10)}}},
		// test = ⌈2.1⌉ = 3.
		{"holdout 7 0.3 e0", Split{Kind: SplitHoldout, TestFraction: 0.3, EmbargoMarkets: 0}, 7, []Fold{{Train: qaSpan(0, 4), Test: qaSpan(4, 7)}}},
		{"holdout 10 0.1 e2", Split{Kind: SplitHoldout, TestFraction: 0.1, EmbargoMarkets: 2}, 10, []Fold{{Train: qaSpan(0, 7), Test: qaSpan(9, 10)}}},
		// 3 blocks of 4, 4, 3: bounds 0, 4, 8, 11.
		{"walk 11 f2 e1", Split{Kind: SplitWalkForward, Folds: 2, EmbargoMarkets: 1}, 11, []Fold{
			{Train: qaSpan(0, 3), Test: qaSpan(4, 8)}, {Train: qaSpan(0, 7), Test: qaSpan(8, 11)}}},
		{"walk 6 f2 e1", Split{Kind: SplitWalkForward, Folds: 2, EmbargoMarkets: 1}, 6, []Fold{
			{Train: qaSpan(0, 1), Test: qaSpan(2, 4)}, {Train: qaSpan(0, 3), Test: qaSpan(4, 6)}}},
	} {
		got, err := tc.s.Cut(tc.n)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := (Split{Kind: SplitWalkForward, Folds: 2, EmbargoMarkets: 1}).Cut(5); err == nil {
		t.Errorf("walk 5 f2 e1: no error")
	}
}

func qaPhi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func qaPhiInv(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if qaPhi(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

func TestQASummarizeHoldout(t *testing.T) {
	t.Parallel()
	const nt, n = 5, 40
	rng := rand.New(rand.NewPCG(7, 8))
	pnl := make([][]float64, n) // [market][trial], whole cents
	for m := range pnl {
		for tr := range nt {
			pnl[m] = append(pnl[m], float64(rng.IntN(2001)-1000+tr*40)/100)
		}
	}
	res, folds := summarizeTrials(t, nt, n, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "HOLDOUT", "testFraction": 0.3, "embargoMarkets": 2}
	}, func(m, tr int) TrialMarket { return traded(pnl[m][tr]) })
	// test ⌈12⌉ = 12, embargo 2, train 26.
	train := qaSpan(0, 26)
	if !reflect.DeepEqual(folds, []Fold{{Train: train, Test: qaSpan(28, 40)}}) {
		t.Fatalf("folds %v", folds)
	}
	cents := func(tr int, ms []int) int64 {
		var s int64
		for _, m := range ms {
			s += int64(math.Round(pnl[m][tr] * 100))
		}
		return s
	}
	best := 0
	for tr := range nt {
		if cents(tr, train) > cents(best, train) {
			best = tr
		}
	}
	if res.Best == nil || res.Best.Trial != best || *res.Best.TrainObjective != float64(cents(best, train))/100 ||
		*res.Best.TestObjective != float64(cents(best, qaSpan(28, 40)))/100 {
		t.Fatalf("best %+v, want trial %d", res.Best, best)
	}
	// DSR: PSR(SR₀) of the best's train pnl, N = 5, V the trials' Sharpe variance.
	sharpe := func(xs []float64) float64 {
		var m, ss float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		return m / math.Sqrt(ss/float64(len(xs)-1))
	}
	col := func(tr int) []float64 {
		var out []float64
		for _, m := range train {
			out = append(out, pnl[m][tr])
		}
		return out
	}
	var sh []float64
	for tr := range nt {
		sh = append(sh, sharpe(col(tr)))
	}
	var ms, v float64
	for _, s := range sh {
		ms += s
	}
	ms /= nt
	for _, s := range sh {
		v += (s - ms) * (s - ms)
	}
	v /= nt - 1
	x := col(best)
	T := float64(len(x))
	var mean, m2, m3, m4 float64
	for _, y := range x {
		mean += y
	}
	mean /= T
	for _, y := range x {
		d := y - mean
		m2, m3, m4 = m2+d*d, m3+d*d*d, m4+d*d*d*d
	}
	m2, m3, m4 = m2/T, m3/T, m4/T
	g3, g4, sr := m3/math.Pow(m2, 1.5), m4/(m2*m2), sharpe(x)
	const gamma = 0.5772156649015329
	sr0 := math.Sqrt(v) * ((1-gamma)*qaPhiInv(1-1.0/nt) + gamma*qaPhiInv(1-1/(nt*math.E)))
	dsr := qaPhi((sr - sr0) * math.Sqrt(T-1) / math.Sqrt(1-g3*sr+(g4-1)/4*sr*sr))
	if res.DSR == nil || math.Abs(*res.DSR-dsr) > 2e-6 {
		t.Errorf("DSR %v, want %.6f", res.DSR, dsr)
	}
	// PBO: CSCV over the 26 train markets, 8 blocks ⌊26b/8⌋.
	over, splits := 0, 0
	for mask := range 256 {
		k := 0
		for b := range 8 {
			k += mask >> b & 1
		}
		if k != 4 {
			continue
		}
		var in, out []int
		for b := range 8 {
			for j := b * 26 / 8; j < (b+1)*26/8; j++ {
				if mask>>b&1 == 1 {
					in = append(in, j)
				} else {
					out = append(out, j)
				}
			}
		}
		bi := 0
		for tr := range nt {
			if cents(tr, in) > cents(bi, in) {
				bi = tr
			}
		}
		rank := 1.0
		for tr := range nt {
			switch {
			case tr == bi:
			case cents(tr, out) < cents(bi, out):
				rank++
			case cents(tr, out) == cents(bi, out):
				rank += 0.5
			}
		}
		w := rank / (nt + 1)
		splits++
		if math.Log(w/(1-w)) <= 0 {
			over++
		}
	}
	pbo := math.Round(float64(over)/float64(splits)*1e6) / 1e6
	if res.PBO == nil || *res.PBO != pbo || res.PBOChoices == nil || *res.PBOChoices != 70 {
		t.Errorf("PBO %v (%v choices), want %v of 70", res.PBO, res.PBOChoices, pbo)
	}
	t.Logf("best %d, DSR %.6f, PBO %.6f", best, dsr, pbo)
}

// TestQASummarizeWalkForward: 28 markets in 4 blocks of 7, 3 folds, an
// embargo of 1: fold k chooses on markets 0..7k−2 by total pnl and tests
// on block k; best.test sums the chosen trials' test blocks; the trials'
// test figures are the last block's; PBO is over the last fold's 20 train
// markets.
func TestQASummarizeWalkForward(t *testing.T) {
	t.Parallel()
	const nt, n = 4, 28
	rng := rand.New(rand.NewPCG(9, 10))
	pnl := make([][]int64, n) // cents
	for m := range pnl {
		for range nt {
			pnl[m] = append(pnl[m], int64(rng.IntN(2001)-1000))
		}
	}
	res, folds := summarizeTrials(t, nt, n, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "WALK_FORWARD", "folds": 3, "embargoMarkets": 1}
	}, func(m, tr int) TrialMarket { return traded(float64(pnl[m][tr]) / 100) })
	want := []Fold{{Train: qaSpan(0, 6), Test: qaSpan(7, 14)}, {Train: qaSpan(0, 13), Test: qaSpan(14, 21)}, {Train: qaSpan(0, 20), Test: qaSpan(21, 28)}}
	if !reflect.DeepEqual(folds, want) {
		t.Fatalf("folds %v", folds)
	}
	sum := func(tr int, ms []int) int64 {
		var s int64
		for _, m := range ms {
			s += pnl[m][tr]
		}
		return s
	}
	argmax := func(ms []int) int {
		b := 0
		for tr := range nt {
			if sum(tr, ms) > sum(b, ms) {
				b = tr
			}
		}
		return b
	}
	var oos int64
	for k, f := range want {
		c := argmax(f.Train)
		fr := res.Folds[k]
		if fr.Trial == nil || *fr.Trial != c || *fr.TrainObjective != float64(sum(c, f.Train))/100 || *fr.TestObjective != float64(sum(c, f.Test))/100 {
			t.Errorf("fold %d: %+v, want trial %d", k+1, fr, c)
		}
		oos += sum(c, f.Test)
	}
	if res.Best.Test == nil || res.Best.Test.TotalPnL != float64(oos)/100 || *res.Best.TestObjective != float64(oos)/100 {
		t.Errorf("best.test %v, want %v", res.Best.Test, float64(oos)/100)
	}
	if b := argmax(want[2].Train); res.Best.Trial != b {
		t.Errorf("best %d, want %d", res.Best.Trial, b)
	}
	for tr := range nt {
		if *res.Trials[tr].TestObjective != float64(sum(tr, want[2].Test))/100 {
			t.Errorf("trial %d test %v", tr, *res.Trials[tr].TestObjective)
		}
	}
	if res.PBO == nil || *res.PBOChoices != 70 {
		t.Errorf("PBO %v over %v choices", res.PBO, res.PBOChoices)
	}
}
