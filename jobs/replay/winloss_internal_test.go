package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWinLossIsTheSignOfRound6: a trade is a win or a loss by the pnl the
// client sees, round6; winLoss finds its sign without rounding, at and
// around every boundary, huge and non-finite values included.
func TestWinLossIsTheSignOfRound6(t *testing.T) {
	t.Parallel()
	sign := func(x float64) int {
		switch r := round6(x); {
		case r > 0:
			return 1
		case r < 0:
			return -1
		}
		return 0
	}
	xs := []float64{0, math.Copysign(0, -1), 5e-7, -5e-7, 4.999999999999999e-7, -4.999999999999999e-7,
		1e-6, -1e-6, 1e15, -1e15, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), 0.1 + 0.2 - 0.3, 1.5e-6, 2.5e-7}
	for _, x := range []float64{5e-7, -5e-7, 1e15, 1.8e302} {
		xs = append(xs, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), math.Nextafter(x, math.Inf(-1)))
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for range 100_000 {
		xs = append(xs, (rng.Float64()-0.5)*4e-6, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(40)-20)))
	}
	for _, x := range xs {
		if got, want := winLoss(x), sign(x); got != want {
			t.Errorf("winLoss(%v) = %d, round6 shows %v", x, got, round6(x))
		}
	}
}
