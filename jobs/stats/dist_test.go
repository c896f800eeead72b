package stats

import (
	"math"
	"testing"
)

// TestTQuantile checks t(0.975, df) against the printed tables (Fisher and
// Yates; any statistics text) to their 4 decimals, and p = 0.995 and the
// lower tail besides.
func TestTQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, df, want, tol float64
	}{
		{0.975, 1, 12.7062, 5e-5}, // tan(0.475π) = 12.70620
		{0.975, 2, 4.3027, 5e-5},  // 0.95/√(2·0.975·0.025) = 4.30265
		{0.975, 3, 3.1824, 5e-5},
		{0.975, 5, 2.5706, 5e-5},
		{0.975, 10, 2.2281, 5e-5},
		{0.975, 30, 2.0423, 5e-5},
		{0.975, 100, 1.9840, 5e-5},
		{0.975, 1e6, 1.959966, 5e-7}, // the normal's 1.959964 plus (z³+z)/4df
		{0.995, 4, 4.6041, 5e-5},
		{0.995, 20, 2.8453, 5e-5},
		{0.025, 10, -2.2281, 5e-5},
		{0.5, 7, 0, 0},
	} {
		if got := TQuantile(tc.p, tc.df); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("t(%v, %v) = %.7f, want %v", tc.p, tc.df, got, tc.want)
		}
	}
	for _, bad := range [][2]float64{{0, 5}, {1, 5}, {0.5, 0}, {0.9, -1}, {math.NaN(), 3}} {
		if got := TQuantile(bad[0], bad[1]); !math.IsNaN(got) {
			t.Errorf("t(%v, %v) = %v, want NaN", bad[0], bad[1], got)
		}
	}
}

// TestTQuantileRoundTrip: the tail at the quantile is the probability
// asked for, across degrees of freedom and deep tails. (Far beyond 10⁴
// degrees of freedom the tail itself loses digits to the log-gamma
// differences of its front factor; the quantile there is the expansion's.)
func TestTQuantileRoundTrip(t *testing.T) {
	t.Parallel()
	for _, df := range []float64{3, 4, 7, 19, 50, 249, 1000, 9999, 20_000} {
		for _, q := range []float64{0.4, 0.1, 0.025, 1e-3, 1e-6, 1e-10, 1e-14} {
			p := 1 - q
			q = 1 - p // the tail p stands for, once 1 − q has rounded
			x := TQuantile(p, df)
			if got := tTail(x, df); math.Abs(got-q) > 1e-9*q {
				t.Errorf("df %v: P(T > t(1−%v)) = %v", df, q, got)
			}
			if y := TQuantile(q, df); math.Abs(x+y) > 1e-9*x {
				t.Errorf("df %v, q %v: quantiles %v and %v are not symmetric", df, q, x, y)
			}
		}
	}
}

// TestNormalQuantile: table values, and Φ(Φ⁻¹(p)) = p to a relative
// 1e-13 from 1e-300 to 1 − 1e-15, and Φ⁻¹(Φ(x)) = x.
func TestNormalQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ p, want float64 }{
		{0.5, 0},
		{0.975, 1.959963984540054},
		{0.99, 2.326347874040841},
		{0.025, -1.959963984540054},
		{1e-10, -6.361340902404056},
	} {
		if got := NormalQuantile(tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Φ⁻¹(%v) = %.15f, want %.15f", tc.p, got, tc.want)
		}
	}
	for _, p := range []float64{1e-300, 1e-100, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-9, 1 - 1e-15} {
		back := NormalCDF(NormalQuantile(p))
		if p <= 0.5 && math.Abs(back-p) > 1e-13*p || p > 0.5 && math.Abs((1-back)-(1-p)) > 1e-13*(1-p)+1e-16 {
			t.Errorf("Φ(Φ⁻¹(%v)) = %v", p, back)
		}
	}
	// Above 0, Φ(x) rounds to 1 − (a multiple of 2⁻⁵³): only modest x
	// come back to 1e-9.
	for _, x := range []float64{-30, -8, -3, -1, 0, 0.5, 2, 4} {
		if got := NormalQuantile(NormalCDF(x)); math.Abs(got-x) > 1e-9 {
			t.Errorf("Φ⁻¹(Φ(%v)) = %v", x, got)
		}
	}
	if !math.IsInf(NormalQuantile(0), -1) || !math.IsInf(NormalQuantile(1), 1) || !math.IsNaN(NormalQuantile(1.5)) {
		t.Error("Φ⁻¹ at 0, 1 or outside [0, 1]")
	}
}
