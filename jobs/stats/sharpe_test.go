package stats

import (
	"math"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestDeflatedSharpeDesign is DESIGN 14's check. With N = 100 trials,
// Φ⁻¹(1 − 1/100) = 2.326348 and Φ⁻¹(1 − 1/(100e)) = Φ⁻¹(0.996321) =
// 2.680210, so SR₀ = √0.002·(0.422784·2.326348 + 0.577216·2.680210) =
// 0.044721·(0.983543 + 1.547059) = 0.113172. Then
// z = (0.158114 − 0.113172)·√1249 / √(1 + 3·0.158114 + 9/4·0.158114²)
// = 0.044942·35.341194 / √1.530592 = 1.283819, and Φ(z) = 0.90040.
func TestDeflatedSharpeDesign(t *testing.T) {
	t.Parallel()
	sr0 := ExpectedMaxSharpe(100, 0.002)
	if math.Round(sr0*1e5)/1e5 != 0.11317 {
		t.Errorf("SR₀ = %.7f, want 0.11317", sr0)
	}
	dsr := DeflatedSharpe(0.158114, 1250, -3, 10, 100, 0.002)
	if dsr == nil || math.Round(*dsr*1e5)/1e5 != 0.90040 {
		t.Fatalf("DSR = %v, want 0.90040", dsr)
	}
	for _, tc := range []struct {
		name   string
		trials int
		v      float64
	}{{"one trial", 1, 0.002}, {"negative variance", 100, -1}} {
		if got := DeflatedSharpe(0.158114, 1250, -3, 10, tc.trials, tc.v); got != nil {
			t.Errorf("%s: DSR %v, want nil", tc.name, *got)
		}
	}
}

// TestPSR: a normal case and the edges.
func TestPSR(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		sr, sr0    float64
		n          int
		skew, kurt float64
		want       float64 // -1: nil
	}{
		// √(1 + (3 − 1)/4·0.01) = √1.005 = 1.002497; z = 0.1·√100/1.002497
		// = 0.997509; Φ(z) = 0.840741.
		{"normal", 0.1, 0, 101, 0, 3, 0.840741},
		// At sr = sr0 the probability is ½ whatever the moments.
		{"at the benchmark", 0.3, 0.3, 50, -2, 9, 0.5},
		// A negative skew widens the error of a positive Sharpe:
		// √(1 + 1·0.2 + 0.5·0.04) = √1.22 = 1.104536; z = 0.2·√24/1.104536 =
		// 0.887066; Φ(z) = 0.812478.
		{"skewed", 0.2, 0, 25, -1, 3, 0.812478},
		{"one observation", 0.1, 0, 1, 0, 3, -1},
		// Two points: γ₃ = 0, γ₄ = 1, denominator 1 (positive): fine. A
		// denominator 1 − 2·1 + 0 < 0 cannot come from data; nil.
		{"impossible moments", 1, 0, 10, 2, 1, -1},
	} {
		got := PSR(tc.sr, tc.sr0, tc.n, tc.skew, tc.kurt)
		switch {
		case tc.want < 0 && got != nil:
			t.Errorf("%s: %v, want nil", tc.name, *got)
		case tc.want >= 0 && (got == nil || !near(*got, tc.want, 5e-7)):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMoments: a Bernoulli(¼) sample [0 0 0 1] has population skewness
// (1 − 2p)/√(pq) = 0.5/√(3/16) = 2/√3 and kurtosis (1 − 6pq)/pq + 3 = 7/3.
func TestMoments(t *testing.T) {
	t.Parallel()
	skew, kurt, ok := moments([]float64{0, 0, 0, 1})
	if !ok || !near(skew, 2/math.Sqrt(3), 1e-12) || !near(kurt, 7.0/3, 1e-12) {
		t.Errorf("skew %v kurt %v ok %v", skew, kurt, ok)
	}
	// Scale-free, and no overflow however large the values.
	skew2, kurt2, _ := moments([]float64{0, 0, 0, 1e300})
	if !near(skew2, skew, 1e-12) || !near(kurt2, kurt, 1e-12) {
		t.Errorf("scaled: skew %v kurt %v", skew2, kurt2)
	}
	if _, _, ok := moments([]float64{2, 2}); ok {
		t.Error("no spread has moments")
	}
}

// TestDSR computes the deflated Sharpe ratio from data and checks it
// against DeflatedSharpe of the data's own figures.
func TestDSR(t *testing.T) {
	t.Parallel()
	best := []float64{1, -0.5, 2, 0.5, -1, 3, 0.25, 1.5}
	sharpes := []float64{0.1, 0.3, -0.2, 0.05, 0.4}
	sr := Sharpe(best)
	skew, kurt, _ := moments(best)
	// The sharpes' mean is 0.13 and Σ(s − 0.13)² = 0.0009 + 0.0289 +
	// 0.1089 + 0.0064 + 0.0729 = 0.218, so v = 0.218/4 = 0.0545.
	want := DeflatedSharpe(*sr, 8, skew, kurt, 5, 0.0545)
	got := DSR(best, sharpes, 5)
	if got == nil || want == nil || !near(*got, *want, 1e-12) {
		t.Errorf("DSR %v, want %v", got, want)
	}
	if DSR(best, sharpes[:1], 5) != nil || DSR(best[:1], sharpes, 5) != nil || DSR([]float64{1, 1, 1}, sharpes, 5) != nil ||
		DSR(best, sharpes, 4) != nil {
		t.Error("DSR of too little data")
	}
	if PSR0([]float64{1}) != nil || PSR0(nil) != nil {
		t.Error("psr0 of one market")
	}
}

// TestDSRAgainstReference pins DSR and PSR0 to figures computed apart from
// this package: Python's statistics module (NormalDist's exact inverse
// and distribution, stdev and variance with n − 1) on the formulas of
// Bailey and López de Prado, population skewness and kurtosis. Ten
// per-market pnls of the best trial, six defined trial Sharpe ratios and
// eight trials tried give SR = 0.670548457399326, γ₃ = 0.208697657786926,
// γ₄ = 2.151827708044760, V = 0.084666666666667, SR₀ = 0.424537162823794,
// DSR = 0.770934130573483 and PSR0 = 0.978425043655810.
func TestDSRAgainstReference(t *testing.T) {
	t.Parallel()
	best := []float64{1.2, -0.4, 2.5, 0.3, -1.1, 3.0, 0.8, 1.6, -0.2, 0.9}
	sharpes := []float64{0.1, 0.45, -0.2, 0.3, 0.05, 0.6}
	if got := ExpectedMaxSharpe(8, 0.084666666666667); !near(got, 0.424537162823794, 1e-12) {
		t.Errorf("SR₀ %.15f", got)
	}
	if got := DSR(best, sharpes, 8); got == nil || !near(*got, 0.770934130573483, 1e-12) {
		t.Errorf("DSR %v, want 0.770934130573483", got)
	}
	if got := PSR0(best); got == nil || !near(*got, 0.978425043655810, 1e-12) {
		t.Errorf("PSR0 %v, want 0.978425043655810", got)
	}
}

// TestDSRTinySample works the sweep's dsr doc's example by hand: DSR
// applies its formula to whatever sample it has, and a handful of markets
// gives an answer far surer than the data. The best trial made 0.9, 1 and
// 1.1 on its 3 traded markets: mean 1, sd 0.1, SR = 10; γ₃ = 0 and
// γ₄ = m₄/m₂² = (2·0.1⁴/3)/(2·0.1²/3)² = 1.5, the most 3 values can
// have (a normal's 3 is out of their reach), so the denominator is
// √(1 + 0.5/4·100) = √13.5. Beside one other trial of Sharpe 0, V = 50:
// SR₀ = √50·(0.422784·Φ⁻¹(½) + 0.577216·Φ⁻¹(1 − 1/(2e))) =
// 7.071068·0.577216·0.900453 = 3.675225, z = (10 − 3.675225)·√2/√13.5 =
// 2.434407 and DSR = Φ(z) = 0.992542.
func TestDSRTinySample(t *testing.T) {
	t.Parallel()
	best := []float64{0.9, 1, 1.1}
	if skew, kurt, ok := moments(best); !ok || !near(skew, 0, 1e-12) || !near(kurt, 1.5, 1e-12) {
		t.Errorf("moments %v %v, want 0 and 1.5", skew, kurt)
	}
	if got := ExpectedMaxSharpe(2, 50); !near(got, 3.675225, 1e-6) {
		t.Errorf("SR₀ %v, want 3.675225", got)
	}
	if got := DSR(best, []float64{10, 0}, 2); got == nil || !near(*got, 0.992542, 1e-6) {
		t.Errorf("DSR %s, want 0.992542", fmtF(got))
	}
}
