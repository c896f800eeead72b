package replay

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimeLeftRulesArePercentRules: a condition on time_remaining_pct,
// made a condition on the time left (ruleSet.inTimeLeft), holds at exactly
// the snapshots where DESIGN 6's percentage, 100·left/span computed as
// written, meets it: for every operator, at values a snapshot meets
// exactly (99.9 left of a 5m market on its 300 ms grid, the percentage of
// a random snapshot) and random ones, at every millisecond of a 5m market
// and every 300 ms of the longer ones, at random instants (before the
// start and past the end too), for random spans, and for a market
// without a positive span (0 at every snapshot).
func TestTimeLeftRulesArePercentRules(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 6))
	ops := []string{"<", ">", "<=", ">=", "==", "crosses_above", "crosses_below"}
	pct := func(span, left int64) float64 {
		if span <= 0 {
			return 0
		}
		return float64(left) * 100 / float64(span)
	}
	check := func(span int64, value float64, lefts []int64) {
		t.Helper()
		for _, op := range ops {
			var set ruleSet
			set.r[0], set.n = compileRule(Condition{Field: FieldTimeRemainingPct, Operator: op, Value: value}), 1
			want := set.r[0]
			set.inTimeLeft(span)
			got := set.r[0]
			for k := 1; k < len(lefts); k++ {
				var curP, prevP, curL, prevL values
				curP[fTimeRemaining], prevP[fTimeRemaining] = pct(span, lefts[k]), pct(span, lefts[k-1])
				curL[fTimeRemaining], prevL[fTimeRemaining] = float64(lefts[k]), float64(lefts[k-1])
				if w, g := want.holds(&curP, &prevP), got.holds(&curL, &prevL); w != g {
					t.Fatalf("span %d ns, time_remaining_pct %s %v, %d then %d ns left (%v then %v): holds %v on the time left, %v on the percentage",
						span, op, value, lefts[k-1], lefts[k], prevP[fTimeRemaining], curP[fTimeRemaining], g, w)
				}
			}
		}
	}
	grid := func(span, step int64) []int64 {
		var out []int64
		for left := span + 2*step; left >= -2*step; left -= step {
			out = append(out, left)
		}
		return out
	}
	m5 := int64(5 * time.Minute)
	ms := grid(m5, int64(time.Millisecond))
	for _, v := range []float64{99.9, 97.9, 99.65, 50, 10, 0, 100, 33.3, 66.7, -1, 101, 1e-9, 99.89999999999999} {
		check(m5, v, ms)
	}
	for _, d := range []time.Duration{15 * time.Minute, time.Hour, 4 * time.Hour, 24 * time.Hour} {
		span := int64(d)
		g := grid(span, int64(300*time.Millisecond))
		for range 20 {
			check(span, pct(span, g[rng.IntN(len(g))]), g)
		}
		check(span, 99.9, g)
	}
	for range 300 {
		span := 1 + rng.Int64N(int64(25*time.Hour))
		lefts := make([]int64, 200)
		for k := range lefts {
			lefts[k] = rng.Int64N(3*span) - span
		}
		check(span, pct(span, lefts[rng.IntN(len(lefts))]), lefts)
		check(span, rng.Float64()*120-10, lefts)
	}
	for _, v := range []float64{0, -1, 1, 1e-10} {
		check(0, v, []int64{5, 4, 3})
		check(-int64(time.Minute), v, []int64{5, 4, 3})
	}
}

// TestFirstFromAnyGuess: firstFrom finds the first time from which a
// condition holds whatever time it starts from: near the answer, far
// from it on either side, at the ends of the range, and when the
// condition holds everywhere or nowhere.
func TestFirstFromAnyGuess(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 7))
	answers := []int64{-maxLeft, -maxLeft + 1, -1, 0, 1, 299_700_000_000, maxLeft - 1, maxLeft, maxLeft + 1}
	for range 2000 {
		answers = append(answers, rng.Int64N(2*maxLeft+2)-maxLeft)
	}
	for _, want := range answers {
		guesses := []int64{want, want - 1, want + 1, want - 2, want + 2, want - 1000, want + 1000, -maxLeft, maxLeft, 0,
			-maxLeft - 5, maxLeft + 5, rng.Int64N(2*maxLeft+1) - maxLeft}
		for _, g := range guesses {
			evaluated := 0
			if got := firstFrom(func(t int64) bool { evaluated++; return t >= want }, g); got != want {
				t.Fatalf("answer %d, starting from %d: found %d", want, g, got)
			}
			if g == want && want > -maxLeft && want <= maxLeft && evaluated > 2 {
				t.Errorf("answer %d, starting from it: %d evaluations, want 2", want, evaluated)
			}
		}
	}
}
