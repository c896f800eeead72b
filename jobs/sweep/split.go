package sweep

import (
	"fmt"
	"math"

	"github.com/updown/updown/jobs/replay"
)

// Fold is one train/test pair of a split: indices into the markets in
// start_time order. A NONE split has one fold and no test markets.
type Fold struct {
	Train []int `json:"train"`
	Test  []int `json:"test"`
}

// Cut splits n markets, oldest first, as s says (DESIGN 14). The embargo
// is the embargoMarkets markets just before each test set: they train and
// test in no fold, so that a market whose window overlaps the test set's
// first cannot leak into training. Too few markets for the split is a
// VALIDATION_ERROR saying how many it needs.
func (s Split) Cut(n int) ([]Fold, error) {
	span := func(lo, hi int) []int {
		out := make([]int, 0, max(hi-lo, 0))
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	switch s.Kind {
	case SplitNone, "":
		if n < 1 {
			return nil, invalid("markets.count", "the sweep found no market to run on")
		}
		return []Fold{{Train: span(0, n), Test: []int{}}}, nil
	case SplitHoldout:
		test := int(math.Ceil(s.TestFraction*float64(n) - 1e-9))
		train := n - test - s.EmbargoMarkets
		if test < 1 || train < 1 {
			return nil, invalid("markets.count", "a HOLDOUT of %s with an embargo of %d needs at least %d markets; the sweep has %d",
				replay.FormatNum(s.TestFraction), s.EmbargoMarkets, holdoutNeeds(s), n)
		}
		return []Fold{{Train: span(0, train), Test: span(n-test, n)}}, nil
	case SplitWalkForward:
		blocks := s.Folds + 1
		// Each block must hold at least one market more than the embargo,
		// so that every fold trains on something after the embargo.
		if need := blocks * (s.EmbargoMarkets + 1); n < need {
			return nil, invalid("markets.count", "a WALK_FORWARD of %d folds with an embargo of %d needs at least %d markets; the sweep has %d",
				s.Folds, s.EmbargoMarkets, need, n)
		}
		// Block sizes differ by at most one, the larger ones first.
		bounds := make([]int, blocks+1)
		for b := range blocks {
			size := n / blocks
			if b < n%blocks {
				size++
			}
			bounds[b+1] = bounds[b] + size
		}
		folds := make([]Fold, s.Folds)
		for k := 1; k <= s.Folds; k++ {
			folds[k-1] = Fold{Train: span(0, bounds[k]-s.EmbargoMarkets), Test: span(bounds[k], bounds[k+1])}
		}
		return folds, nil
	}
	return nil, fmt.Errorf("sweep: split kind %q", s.Kind)
}

// holdoutNeeds is the fewest markets a HOLDOUT split can cut.
func holdoutNeeds(s Split) int {
	for n := 2; ; n++ {
		test := int(math.Ceil(s.TestFraction*float64(n) - 1e-9))
		if test >= 1 && n-test-s.EmbargoMarkets >= 1 {
			return n
		}
	}
}
