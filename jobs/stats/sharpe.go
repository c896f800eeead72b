package stats

import "math"

// EulerGamma is the Euler-Mascheroni constant γ of the expected maximum
// Sharpe ratio, to DESIGN 14's ten digits.
const EulerGamma = 0.5772156649

// PSR is the probabilistic Sharpe ratio (Bailey and López de Prado, "The
// Sharpe Ratio Efficient Frontier", J. of Risk 15(2), 2012): the
// probability that the true Sharpe ratio exceeds sr0, given sr measured
// over t observations of skewness skew (γ₃) and kurtosis kurt (γ₄, 3 for
// a normal):
//
//	PSR = Φ((sr − sr0)·√(t − 1) / √(1 − γ₃·sr + (γ₄ − 1)/4·sr²)).
//
// Nil for t < 2 or a denominator that is not positive (it is positive for
// every sample's population moments, γ₄ ≥ 1 + γ₃², but for a two-point
// sample at one sr).
func PSR(sr, sr0 float64, t int, skew, kurt float64) *float64 {
	den := 1 - skew*sr + (kurt-1)/4*sr*sr
	if t < 2 || !(den > 0) {
		return nil
	}
	return finite(NormalCDF((sr - sr0) * math.Sqrt(float64(t-1)) / math.Sqrt(den)))
}

// ExpectedMaxSharpe is SR₀, the Sharpe ratio the best of n trials reaches
// by luck when the true ratios are 0 and the trials' ratios vary with
// variance v (Bailey and López de Prado, "The Deflated Sharpe Ratio",
// J. of Portfolio Management 40(5), 2014):
//
//	SR₀ = √v·((1 − γ)·Φ⁻¹(1 − 1/n) + γ·Φ⁻¹(1 − 1/(n·e))).
//
// NaN for n < 2 or v < 0.
func ExpectedMaxSharpe(n int, v float64) float64 {
	if n < 2 || !(v >= 0) {
		return math.NaN()
	}
	N := float64(n)
	return math.Sqrt(v) * ((1-EulerGamma)*NormalQuantile(1-1/N) + EulerGamma*NormalQuantile(1-1/(N*math.E)))
}

// DeflatedSharpe is the deflated Sharpe ratio: the PSR of the best
// trial's sr (over t observations of skewness skew and kurtosis kurt)
// against SR₀ = ExpectedMaxSharpe(trials, v). DESIGN 14's check: 100
// trials of variance 0.002, and sr 0.158114 over 1,250 observations with
// γ₃ = −3, γ₄ = 10, give SR₀ = 0.11317 and a DSR of 0.90040.
func DeflatedSharpe(sr float64, t int, skew, kurt float64, trials int, v float64) *float64 {
	sr0 := ExpectedMaxSharpe(trials, v)
	if math.IsNaN(sr0) {
		return nil
	}
	return PSR(sr, sr0, t, skew, kurt)
}

// DSR is DeflatedSharpe from data: best is the best trial's pnl per traded
// market, in time order, sharpes the per-market Sharpe ratio of every
// trial of the sweep whose ratio is defined (best's among them), and
// trials the sweep's trials, every one tried whether or not its ratio is
// defined (DESIGN 14's N: a search is deflated by all it tried, not only
// by the settings that traded enough for a ratio). sr is Sharpe(best),
// t = len(best), γ₃ and γ₄ best's population moments, and v the sharpes'
// sample variance (n − 1). Nil below two trials, two defined ratios or two
// markets, or when best's Sharpe is undefined (its pnl does not vary).
func DSR(best, sharpes []float64, trials int) *float64 {
	sr := Sharpe(best)
	skew, kurt, ok := moments(best)
	_, sd, okV := meanSD(sharpes)
	if sr == nil || !ok || !okV || trials < len(sharpes) {
		return nil
	}
	return DeflatedSharpe(*sr, len(best), skew, kurt, trials, sd*sd)
}

// PSR0 is the PSR of pnls' Sharpe ratio against 0 (psr0: pnls the
// per-market pnl of the traded markets). Nil when the Sharpe ratio is.
func PSR0(pnls []float64) *float64 {
	sr := Sharpe(pnls)
	skew, kurt, ok := moments(pnls)
	if sr == nil || !ok {
		return nil
	}
	return PSR(*sr, 0, len(pnls), skew, kurt)
}
