package store_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestMergeTicksAsLookingUpEach checks MergeTickChanges against the plain way:
// each change of add looked up among those kept so far, kept when its
// instant is new, and all sorted by time. Random lists of changes at few
// instants, so that instants repeat within and across the two.
func TestMergeTicksAsLookingUpEach(t *testing.T) {
	plain := func(old, add []store.TickSizeChange) []store.TickSizeChange {
		out := slices.Clone(old)
		for _, c := range add {
			if !slices.ContainsFunc(out, func(o store.TickSizeChange) bool { return o.Time.Equal(c.Time) }) {
				out = append(out, c)
			}
		}
		slices.SortStableFunc(out, func(a, b store.TickSizeChange) int { return a.Time.Compare(b.Time) })
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	gen := func(n int) []store.TickSizeChange {
		var out []store.TickSizeChange
		for range n {
			out = append(out, store.TickSizeChange{Time: base.Add(time.Duration(rng.IntN(40)) * time.Millisecond), TickSize: []float64{0.01, 0.001}[rng.IntN(2)]})
		}
		return out
	}
	for range 2000 {
		old, add := gen(rng.IntN(20)), gen(rng.IntN(30))
		if got, want := store.MergeTickChanges(old, add), plain(old, add); !reflect.DeepEqual(got, want) {
			t.Fatalf("MergeTickChanges(%v, %v) = %v, want %v", old, add, got, want)
		}
	}
}
