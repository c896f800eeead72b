package stats

import (
	"math"
	"slices"
)

// Interval is a closed interval [lo, hi]; it encodes as a two-number
// JSON array.
type Interval [2]float64

// Distribution describes a sample: its mean, standard deviation (n − 1;
// nil below two values) and 5th, 50th and 95th percentiles (linear
// interpolation between order statistics, see Percentile).
type Distribution struct {
	Mean float64  `json:"mean"`
	SD   *float64 `json:"sd" nullable:"true"`
	P5   float64  `json:"p5"`
	P50  float64  `json:"p50"`
	P95  float64  `json:"p95"`
}

// Describe is the Distribution of xs, nil for none.
func Describe(xs []float64) *Distribution {
	if len(xs) == 0 {
		return nil
	}
	mean, sd, ok := meanSD(xs)
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	d := &Distribution{
		Mean: mean,
		P5:   Percentile(sorted, 0.05),
		P50:  Percentile(sorted, 0.50),
		P95:  Percentile(sorted, 0.95),
	}
	if ok {
		d.SD = &sd
	}
	return d
}

// Percentile is the p-th quantile (0 ≤ p ≤ 1) of sorted, ascending values,
// by linear interpolation between order statistics (numpy's default,
// Hyndman and Fan's type 7): with h = (n − 1)·p, it is
// x_⌊h⌋ + (h − ⌊h⌋)·(x_⌊h⌋₊₁ − x_⌊h⌋). NaN for no values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	// a + f·(b − a) written as (1 − f)·a + f·b, which cannot overflow
	// between two finite values.
	f := h - float64(lo)
	return (1-f)*sorted[lo] + f*sorted[lo+1]
}

// Sharpe is mean / sd of xs (sd with n − 1), nil below two values or
// with no spread. Over per-market pnl it is sharpe_per_market, a Sharpe
// ratio per market, not annualized.
func Sharpe(xs []float64) *float64 {
	mean, sd, ok := meanSD(xs)
	if !ok || sd == 0 {
		return nil
	}
	return finite(mean / sd)
}

// meanSD is the mean and the sample standard deviation (n − 1) of xs,
// computed in two passes over xs scaled by its largest magnitude, so that
// no finite input overflows a sum or a square. ok is false below two
// values.
func meanSD(xs []float64) (mean, sd float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN(), false
	}
	s := scale(xs)
	var sum float64
	for _, x := range xs {
		sum += x / s
	}
	m := sum / float64(n)
	if n < 2 {
		return m * s, math.NaN(), false
	}
	var ss float64
	for _, x := range xs {
		d := x/s - m
		ss += d * d
	}
	return m * s, math.Sqrt(ss/float64(n-1)) * s, true
}

// moments is the population skewness γ₃ = m₃/m₂^{3/2} and kurtosis
// γ₄ = m₄/m₂² of xs (mᵣ = Σ(x − x̄)ʳ/n; γ₄ = 3 for a normal), as Bailey and
// López de Prado use them in the probabilistic Sharpe ratio. ok is false
// for no values or no spread.
func moments(xs []float64) (skew, kurt float64, ok bool) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0, false
	}
	s := scale(xs)
	var sum float64
	for _, x := range xs {
		sum += x / s
	}
	m := sum / n
	var m2, m3, m4 float64
	for _, x := range xs {
		d := x/s - m
		d2 := d * d
		m2 += d2
		m3 += d2 * d
		m4 += d2 * d2
	}
	m2, m3, m4 = m2/n, m3/n, m4/n
	if !(m2 > 0) {
		return 0, 0, false
	}
	return m3 / math.Pow(m2, 1.5), m4 / (m2 * m2), true
}

// scale is the largest magnitude in xs, or 1 when all are 0.
func scale(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s = math.Max(s, math.Abs(x))
	}
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return 1
	}
	return s
}

// finite is &x, or nil when x is NaN or infinite.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
