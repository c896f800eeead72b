package stats

import (
	"math"
	"testing"
)

func TestEV(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pnls []float64
		mean float64
		ci   *Interval
		sqn  float64 // NaN: nil
	}{
		// mean 3; deviations −2, −1, 3: Σ² = 14, sd = √7 = 2.645751;
		// t(0.975, 2) = 4.302653, half = 4.302653·2.645751/√3 = 6.572411;
		// sqn = √3·3/2.645751 = 1.963961.
		{"three trades", []float64{1, 2, 6}, 3, &Interval{-3.572411, 9.572411}, 1.963961},
		// mean 0.5; deviations ±1.5, Σ² = 4.5 over n − 1 = 1: sd =
		// 2.121320; t(0.975, 1) = 12.706205, half = 12.706205·2.121320/√2 =
		// 19.059307; sqn = √2·0.5/2.121320 = 0.333333.
		{"two trades", []float64{-1, 2}, 0.5, &Interval{-18.559307, 19.559307}, 1.0 / 3},
		{"one trade", []float64{4}, 4, nil, math.NaN()},
		{"no spread", []float64{2, 2, 2}, 2, &Interval{2, 2}, math.NaN()},
	} {
		e := EV(tc.pnls)
		if e.Mean == nil || !near(*e.Mean, tc.mean, 1e-12) {
			t.Errorf("%s: mean %v, want %v", tc.name, e.Mean, tc.mean)
		}
		switch {
		case (e.CI95 == nil) != (tc.ci == nil):
			t.Errorf("%s: ci %v, want %v", tc.name, e.CI95, tc.ci)
		case tc.ci != nil && (!near(e.CI95[0], tc.ci[0], 1e-6) || !near(e.CI95[1], tc.ci[1], 1e-6)):
			t.Errorf("%s: ci %v, want %v", tc.name, *e.CI95, *tc.ci)
		}
		switch {
		case math.IsNaN(tc.sqn) && e.SQN != nil:
			t.Errorf("%s: sqn %v, want nil", tc.name, *e.SQN)
		case !math.IsNaN(tc.sqn) && (e.SQN == nil || !near(*e.SQN, tc.sqn, 1e-6)):
			t.Errorf("%s: sqn %v, want %v", tc.name, e.SQN, tc.sqn)
		}
	}
	if e := EV(nil); e.Mean != nil || e.CI95 != nil || e.SQN != nil {
		t.Errorf("no trades: %+v", e)
	}
}

func TestWilson(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		k, n float64
		want *Interval
	}{
		// p̂ = 0.7, z² = 3.8416: centre (0.7 + 0.19208)/1.38416 = 0.644492,
		// half 1.96·√(0.021 + 0.009604)/1.38416 = 0.247719.
		{"7 of 10", 7, 10, &Interval{0.396773, 0.892211}},
		// p̂ = 0: centre 0.19208/1.38416 = 0.138770 = half; lo 0.
		{"0 of 10", 0, 10, &Interval{0, 0.277540}},
		// Half wins count: p̂ = 0.625, z²/n = 0.9604: centre (0.625 +
		// 0.4802)/1.9604 = 0.563763, half 1.96·√(0.058594 + 0.060025)/1.9604
		// = 0.344341.
		{"2.5 of 4", 2.5, 4, &Interval{0.219422, 0.908103}},
		{"no trials", 0, 0, nil},
		{"more wins than trials", 3, 2, nil},
	} {
		got := Wilson(tc.k, tc.n)
		switch {
		case (got == nil) != (tc.want == nil):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		case got != nil && (!near(got[0], tc.want[0], 1e-6) || !near(got[1], tc.want[1], 1e-6)):
			t.Errorf("%s: %v, want %v", tc.name, *got, *tc.want)
		}
	}
}

// TestDescribe: [1 2 3 4 10]: mean 4; deviations −3 −2 −1 0 6, Σ² = 50,
// sd = √12.5 = 3.535534; p5 at h = 0.2: 1 + 0.2·1 = 1.2; p50 at h = 2: 3;
// p95 at h = 3.8: 4 + 0.8·6 = 8.8. Sharpe 4/3.535534 = 1.131371.
func TestDescribe(t *testing.T) {
	t.Parallel()
	xs := []float64{10, 2, 4, 1, 3} // unsorted on purpose
	d := Describe(xs)
	if d == nil || d.SD == nil || !near(d.Mean, 4, 1e-12) || !near(*d.SD, math.Sqrt(12.5), 1e-12) ||
		!near(d.P5, 1.2, 1e-12) || !near(d.P50, 3, 1e-12) || !near(d.P95, 8.8, 1e-12) {
		t.Errorf("describe %+v", d)
	}
	if xs[0] != 10 {
		t.Error("Describe sorted its argument")
	}
	if s := Sharpe(xs); s == nil || !near(*s, 4/math.Sqrt(12.5), 1e-12) {
		t.Errorf("sharpe %v", s)
	}
	one := Describe([]float64{-2})
	if one == nil || one.SD != nil || one.P5 != -2 || one.P95 != -2 || one.Mean != -2 {
		t.Errorf("one value %+v", one)
	}
	if Describe(nil) != nil || Sharpe([]float64{1}) != nil || Sharpe([]float64{1, 1}) != nil {
		t.Error("describe or sharpe of too little")
	}
}

// TestT975MatchesTQuantile: the memo answers TQuantile's bits, the first
// time and after, inside and outside the table.
func TestT975MatchesTQuantile(t *testing.T) {
	t.Parallel()
	for _, df := range []float64{1, 2, 3, 7.5, 99, 4095, 4096, 1e5} {
		want := TQuantile(0.975, df)
		for k := range 2 {
			if got := t975(df); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("t975(%v), call %d = %v, TQuantile %v", df, k+1, got, want)
			}
		}
	}
}
