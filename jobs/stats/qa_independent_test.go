package stats_test

// An independent check of DSR and PBO against the textbook formulas
// (Bailey and López de Prado 2014; Bailey, Borwein, López de Prado and Zhu
// 2017), written without the package's helpers: its own Φ (erfc), its own
// Φ⁻¹ (bisection on that Φ), its own moments and its own CSCV over
// integer-valued pnl, so that ties are exact.

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/updown/updown/jobs/stats"
)

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

// qaDSR is PSR(SR₀) from the best trial's per-period returns, every trial's
// Sharpe ratio and N. ok false where a figure is undefined.
func qaDSR(best, sharpes []float64, n int) (float64, bool) {
	T := float64(len(best))
	if len(best) < 2 || len(sharpes) < 2 || n < 2 {
		return 0, false
	}
	var mean float64
	for _, x := range best {
		mean += x
	}
	mean /= T
	var m2, m3, m4 float64
	for _, x := range best {
		d := x - mean
		m2 += d * d
		m3 += d * d * d
		m4 += d * d * d * d
	}
	if m2 == 0 {
		return 0, false
	}
	sr := mean / math.Sqrt(m2/(T-1))
	m2, m3, m4 = m2/T, m3/T, m4/T
	g3, g4 := m3/math.Pow(m2, 1.5), m4/(m2*m2)
	var ms float64
	for _, s := range sharpes {
		ms += s
	}
	ms /= float64(len(sharpes))
	var v float64
	for _, s := range sharpes {
		v += (s - ms) * (s - ms)
	}
	v /= float64(len(sharpes) - 1)
	N := float64(n)
	const gamma = 0.5772156649015329
	sr0 := math.Sqrt(v) * ((1-gamma)*qaPhiInv(1-1/N) + gamma*qaPhiInv(1-1/(N*math.E)))
	return qaPhi((sr - sr0) * math.Sqrt(T-1) / math.Sqrt(1-g3*sr+(g4-1)/4*sr*sr)), true
}

func qaSharpe(xs []float64) (float64, bool) {
	if len(xs) < 2 {
		return 0, false
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	if ss == 0 {
		return 0, false
	}
	return m / math.Sqrt(ss/float64(len(xs)-1)), true
}

// qaPBO is CSCV with total pnl as the objective: T markets cut into 8
// blocks of ⌊bT/8⌋..⌊(b+1)T/8⌋; in-sample best the lowest index among
// ties; out-of-sample rank 1 the worst, ties averaged; λ ≤ 0 overfit; a
// split where every trial ties out of sample gives no λ (NaN: none does).
func qaPBO(pnl [][]int64, strict bool) float64 {
	n, T := len(pnl), len(pnl[0])
	over, splits := 0, 0
	var rec func(start int, chosen []int)
	rec = func(start int, chosen []int) {
		if len(chosen) == 4 {
			in := map[int]bool{}
			for _, b := range chosen {
				in[b] = true
			}
			is, oos := make([]int64, n), make([]int64, n)
			for i := range n {
				for b := range 8 {
					for j := b * T / 8; j < (b+1)*T/8; j++ {
						if in[b] {
							is[i] += pnl[i][j]
						} else {
							oos[i] += pnl[i][j]
						}
					}
				}
			}
			best := 0
			for i := range n {
				if is[i] > is[best] {
					best = i
				}
			}
			var below, tied float64
			for i := range n {
				if i != best && oos[i] < oos[best] {
					below++
				} else if i != best && oos[i] == oos[best] {
					tied++
				}
			}
			if tied == float64(n-1) {
				return // every trial scored the same: no ranking, no λ
			}
			rank := 1 + below + tied/2
			w := rank / float64(n+1)
			l := math.Log(w / (1 - w))
			splits++
			if l < 0 || (!strict && l <= 0) {
				over++
			}
			return
		}
		for b := start; b < 8; b++ {
			rec(b+1, append(chosen, b))
		}
	}
	rec(0, nil)
	if splits == 0 {
		return math.NaN()
	}
	return float64(over) / float64(splits)
}

func qaTallies(pnl [][]int64) [][]stats.Tally {
	out := make([][]stats.Tally, len(pnl))
	for i, row := range pnl {
		for _, x := range row {
			out[i] = append(out[i], stats.TallyOf(stats.Market{PnL: float64(x), NTrades: 1, Wins: 0}))
		}
	}
	return out
}

func TestQAIndependentDSR(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	noise := func(trials, T int, drift float64) ([][]float64, []float64) {
		r := make([][]float64, trials)
		var sh []float64
		for i := range r {
			for range T {
				r[i] = append(r[i], drift*float64(i)+rng.NormFloat64())
			}
			if s, ok := qaSharpe(r[i]); ok {
				sh = append(sh, s)
			}
		}
		return r, sh
	}
	argmax := func(r [][]float64) int {
		b := 0
		for i := range r {
			si, _ := qaSharpe(r[i])
			sb, _ := qaSharpe(r[b])
			if si > sb {
				b = i
			}
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		trials int
		T      int
		drift  float64
	}{
		{"noise 50x100", 50, 100, 0},
		{"noise 20x30", 20, 30, 0},
		{"one dominates", 10, 60, 0.1},
		{"tiny T=2", 5, 2, 0},
		{"tiny T=3", 5, 3, 0},
	} {
		r, sh := noise(tc.trials, tc.T, tc.drift)
		b := argmax(r)
		want, ok := qaDSR(r[b], sh, tc.trials)
		got := stats.DSR(r[b], sh, tc.trials)
		switch {
		case !ok && got != nil:
			t.Errorf("%s: DSR %v, want nil", tc.name, *got)
		case ok && got == nil:
			t.Errorf("%s: DSR nil, want %v", tc.name, want)
		case ok && math.Abs(*got-want) > 1e-9:
			t.Errorf("%s: DSR %.12f, want %.12f", tc.name, *got, want)
		}
		if ok {
			t.Logf("%s: DSR %.6f (best %d)", tc.name, want, b)
		}
	}
	// All trials identical: V = 0, SR₀ = 0, DSR = PSR against 0.
	same := []float64{1, -0.5, 2, 0.25, -1, 3}
	sr, _ := qaSharpe(same)
	got := stats.DSR(same, []float64{sr, sr, sr, sr}, 4)
	want, _ := qaDSR(same, []float64{sr, sr, sr, sr}, 4)
	if got == nil || math.Abs(*got-want) > 1e-12 || math.Abs(*got-*stats.PSR0(same)) > 1e-12 {
		t.Errorf("identical trials: DSR %v, want %v = PSR0 %v", got, want, *stats.PSR0(same))
	}
	// Zero variance of the best's returns, and one return: nil.
	if g := stats.DSR([]float64{2, 2, 2}, []float64{0.1, 0.2}, 2); g != nil {
		t.Errorf("flat best: DSR %v", *g)
	}
	if g := stats.DSR([]float64{2}, []float64{0.1, 0.2}, 2); g != nil {
		t.Errorf("one return: DSR %v", *g)
	}
	// Pure noise over many trials: the best's DSR is low.
	r, sh := noise(200, 50, 0)
	if g := stats.DSR(r[argmax(r)], sh, 200); g == nil || *g > 0.5 {
		t.Errorf("noise 200 trials: DSR %v, want low", g)
	}
}

func TestQAIndependentPBO(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	mk := func(trials, T int, f func(i, j int) int64) [][]int64 {
		p := make([][]int64, trials)
		for i := range p {
			for j := range T {
				p[i] = append(p[i], f(i, j))
			}
		}
		return p
	}
	cases := []struct {
		name string
		pnl  [][]int64
	}{
		{"identical", mk(6, 16, func(i, j int) int64 { return int64(j%3) - 1 })},
		{"one dominates", mk(6, 24, func(i, j int) int64 {
			if i == 3 {
				return 100 + rng.Int64N(5)
			}
			return rng.Int64N(21) - 10
		})},
		{"noise N=10 T=40", mk(10, 40, func(i, j int) int64 { return rng.Int64N(201) - 100 })},
		{"noise N=3 T=32", mk(3, 32, func(i, j int) int64 { return rng.Int64N(201) - 100 })},
		{"noise N=50 T=80", mk(50, 80, func(i, j int) int64 { return rng.Int64N(201) - 100 })},
		{"T=17 uneven blocks", mk(4, 17, func(i, j int) int64 { return rng.Int64N(11) - 5 })},
	}
	for _, tc := range cases {
		want := qaPBO(tc.pnl, false)
		got := stats.PBO(qaTallies(tc.pnl), stats.TotalPnL)
		if math.IsNaN(want) != (got == nil) || got != nil && math.Abs(*got-want) > 1e-12 {
			t.Errorf("%s: PBO %v, want %v", tc.name, got, want)
			continue
		}
		t.Logf("%s: PBO %.4f (with λ < 0 strict: %.4f)", tc.name, want, qaPBO(tc.pnl, true))
	}
	if g := stats.PBO(qaTallies(mk(4, 15, func(i, j int) int64 { return int64(i + j) })), stats.TotalPnL); g != nil {
		t.Errorf("15 markets: PBO %v, want nil", *g)
	}
	if g := stats.PBO(qaTallies(mk(1, 40, func(i, j int) int64 { return int64(j) })), stats.TotalPnL); g != nil {
		t.Errorf("1 trial: PBO %v, want nil", *g)
	}
	// Pure noise: the mean PBO over many sweeps is ½ for even N and
	// (N+1)/(2N) for odd N (the median rank counts as overfit).
	for _, n := range []int{2, 3, 10} {
		var sum float64
		const reps = 200
		for range reps {
			p := mk(n, 16, func(i, j int) int64 { return rng.Int64N(1_000_001) - 500_000 })
			sum += *stats.PBO(qaTallies(p), stats.TotalPnL)
		}
		t.Logf("noise N=%d: mean PBO over %d sweeps %.3f", n, reps, sum/reps)
	}
}
