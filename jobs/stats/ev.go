package stats

import (
	"math"
	"sync/atomic"
)

// WilsonZ is the normal quantile of the Wilson intervals, DESIGN 14's
// 1.96 (Φ⁻¹(0.975) = 1.95996… rounded).
const WilsonZ = 1.96

// Expectancy is what a strategy makes a trade: ev_per_trade, ev_ci95 and
// sqn.
type Expectancy struct {
	// Mean is the mean trade pnl, nil for no trades.
	Mean *float64
	// CI95 is Mean ± t(0.975, n − 1)·sd/√n, Student's t interval with sd
	// the sample standard deviation (n − 1); nil below two trades.
	CI95 *Interval
	// SQN is Van Tharp's system quality number √n·mean/sd; nil below two
	// trades or with no spread.
	SQN *float64
}

// EV is the Expectancy of trade pnls (DESIGN 14).
func EV(pnls []float64) Expectancy {
	var e Expectancy
	if len(pnls) == 0 {
		return e
	}
	mean, sd, ok := meanSD(pnls)
	if !ok {
		e.Mean = finite(mean)
		return e
	}
	return expectancy(float64(len(pnls)), mean, sd)
}

// expectancy is the Expectancy of n ≥ 2 trades of that mean pnl and
// sample standard deviation.
func expectancy(n, mean, sd float64) Expectancy {
	e := Expectancy{Mean: finite(mean)}
	half := t975(n-1) * sd / math.Sqrt(n)
	if lo, hi := mean-half, mean+half; finite(lo) != nil && finite(hi) != nil {
		e.CI95 = &Interval{lo, hi}
	}
	if sd > 0 {
		e.SQN = finite(math.Sqrt(n) * mean / sd)
	}
	return e
}

// sqrtNonNeg is √x, 0 for a negative x (a sum of squares that rounding
// took below 0).
func sqrtNonNeg(x float64) float64 { return math.Sqrt(max(x, 0)) }

// t975s memoizes TQuantile(0.975, df) for whole df under its length, as
// the bits of the float (0: not yet computed). A sweep asks EV for the
// interval of every trial on its train and its test markets, and the
// quantile (Newton on the incomplete beta function) was most of the cost
// of summarizing a sweep. A pure function's memo: two goroutines that
// compute the same entry store the same bits.
var t975s [4096]atomic.Uint64

// t975 is TQuantile(0.975, df), memoized for whole df.
func t975(df float64) float64 {
	if df >= 1 && df < float64(len(t975s)) && df == math.Trunc(df) {
		e := &t975s[int(df)]
		if b := e.Load(); b != 0 {
			return math.Float64frombits(b)
		}
		t := TQuantile(0.975, df)
		e.Store(math.Float64bits(t))
		return t
	}
	return TQuantile(0.975, df)
}

// Wilson is the Wilson score interval of a proportion (E. B. Wilson,
// JASA 22, 1927) with z = WilsonZ: for p̂ = successes/n,
//
//	(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n).
//
// successes may be fractional (a 50-50 resolution counts half). Nil for
// n ≤ 0 or successes outside [0, n].
func Wilson(successes, n float64) *Interval {
	if !(n > 0) || !(successes >= 0 && successes <= n) || math.IsInf(n, 0) {
		return nil
	}
	const z = WilsonZ
	p := successes / n
	den := 1 + z*z/n
	center := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	return &Interval{math.Max(0, center-half), math.Min(1, center+half)}
}
