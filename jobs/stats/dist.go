package stats

import "math"

// NormalCDF is Φ, the standard normal distribution function:
// Φ(x) = erfc(−x/√2)/2, accurate to a relative 1e-15 in both tails (no
// 1 − erf cancellation).
func NormalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// NormalQuantile is Φ⁻¹, the inverse of NormalCDF, by Acklam's rational
// approximation (P. J. Acklam, "An algorithm for computing the inverse
// normal cumulative distribution function", 2003; relative error below
// 1.15e-9) refined by one step of Halley's method on Φ(x) − p, which
// brings it to full double precision. The lower tail is computed as
// such and the upper by symmetry, so Φ⁻¹(1e-300) is as exact as Φ⁻¹(0.3).
// It is −Inf at 0, +Inf at 1 and NaN outside [0, 1].
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p > 0.5:
		return -NormalQuantile(1 - p)
	}
	const pLow = 0.02425
	var x float64
	if p < pLow {
		q := math.Sqrt(-2 * math.Log(p))
		x = (((((acklamC[0]*q+acklamC[1])*q+acklamC[2])*q+acklamC[3])*q+acklamC[4])*q + acklamC[5]) /
			((((acklamD[0]*q+acklamD[1])*q+acklamD[2])*q+acklamD[3])*q + 1)
	} else {
		q := p - 0.5
		r := q * q
		x = (((((acklamA[0]*r+acklamA[1])*r+acklamA[2])*r+acklamA[3])*r+acklamA[4])*r + acklamA[5]) * q /
			(((((acklamB[0]*r+acklamB[1])*r+acklamB[2])*r+acklamB[3])*r+acklamB[4])*r + 1)
	}
	// Halley: e = Φ(x) − p, u = e/φ(x), x −= u/(1 + x·u/2). Φ(x) for x ≤ 0
	// is erfc of a positive number, accurate relative to p however small;
	// φ(x) underflows only below x = −38, where p is subnormal.
	if x > -38 {
		e := NormalCDF(x) - p
		u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
		x -= u / (1 + x*u/2)
	}
	return x
}

// Acklam's coefficients: central region (a, b) and tails (c, d).
var (
	acklamA = [6]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
		1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	acklamB = [5]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
		6.680131188771972e+01, -1.328068155288572e+01}
	acklamC = [6]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
		-2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	acklamD = [4]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
		3.754408661907416e+00}
)

// TQuantile is the p-quantile of Student's t distribution with df degrees
// of freedom (df > 0), accurate to about 1e-12: closed forms for df 1,
// tan(π(p − ½)), and 2, (2p − 1)/√(2p(1 − p)); the Cornish-Fisher
// expansion about Φ⁻¹(p) to the 1/df⁴ term (Abramowitz and Stegun
// 26.7.5) for df above 10⁴ and p within 1e-15 of neither end, where its
// error is below 1e-12; otherwise
// Newton's method on the upper tail ½·I_{df/(df+t²)}(df/2, ½) (A&S
// 26.7.1, the regularized incomplete beta function by its continued
// fraction), started from the expansion. It is NaN for a df ≤ 0 or a p
// outside (0, 1).
func TQuantile(p, df float64) float64 {
	if !(df > 0) || math.IsInf(df, 0) || !(p > 0 && p < 1) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	// Solve the upper tail q = 1 − p for t > 0, then mirror.
	sign, q := 1.0, 1-p
	if p < 0.5 {
		sign, q = -1, p
	}
	switch df {
	case 1:
		return sign * math.Tan(math.Pi*(0.5-q))
	case 2:
		return sign * (1 - 2*q) / math.Sqrt(2*q*(1-q))
	}
	z := -NormalQuantile(q)
	t := cornishFisher(z, df)
	if df > 1e4 && z < 8 {
		return sign * t
	}
	if !(t > 0) || math.IsInf(t, 0) {
		t = 1
	}
	// The tail is convex and decreasing in t > 0, so Newton's iterates
	// approach the root from below once one step has been taken; a step
	// past 0 is pulled back to 0, where the tail (½) exceeds q.
	for range 500 {
		next := t + (tTail(t, df)-q)/tDensity(t, df)
		if next < 0 {
			next = 0
		}
		if math.Abs(next-t) <= 1e-14*math.Max(1, t) {
			t = next
			break
		}
		t = next
	}
	return sign * t
}

// cornishFisher is the t quantile of the normal quantile z, A&S 26.7.5.
func cornishFisher(z, df float64) float64 {
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
}

// tTail is P(T > t) for t ≥ 0: ½·I_x(df/2, ½) with x = df/(df + t²).
func tTail(t, df float64) float64 {
	d := df + t*t
	return 0.5 * regIncBeta(df/2, 0.5, df/d, t*t/d)
}

// tDensity is Student's t density.
func tDensity(t, df float64) float64 {
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	return math.Exp(lg1 - lg2 - 0.5*math.Log(df*math.Pi) - (df+1)/2*math.Log1p(t*t/df))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), with
// y = 1 − x passed in so that neither loses digits near 1. The continued
// fraction (A&S 26.5.8, evaluated by the modified Lentz method as in
// Numerical Recipes' betacf) converges fast for x < (a+1)/(a+b+2); above
// it, I_x(a, b) = 1 − I_y(b, a).
func regIncBeta(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(y))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, y)/b
}

// betaFraction evaluates the continued fraction of I_x(a, b).
func betaFraction(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 10_000; m++ {
		m2 := float64(2 * m)
		fm := float64(m)
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return h
}
