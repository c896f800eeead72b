package store_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// newGapsByMerging is NewGaps as its doc says it: each gap of batch, in
// order, is held when it lies within one gap of its kind of everything
// before it, merged again (MergeGaps) after each new one.
func newGapsByMerging(stored, batch []store.Gap) int {
	held := store.MergeGaps(stored)
	n := 0
	for _, g := range batch {
		if slices.ContainsFunc(held, func(h store.Gap) bool {
			return h.Kind == g.Kind && !h.From.After(g.From) && !g.To.After(h.To)
		}) {
			continue
		}
		n++
		held = store.MergeGaps(append(held, g))
	}
	return n
}

// TestNewGapsAsMerging: NewGaps keeps what MergeGaps does and counts what
// merging everything again after each new gap counts, on random gaps of both kinds that overlap,
// touch, repeat and nest, before and after stored ones.
func TestNewGapsAsMerging(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 2026))
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	kinds := []store.GapKind{store.GapSnapshots, store.GapTrades}
	gaps := func(n, span int) []store.Gap {
		out := make([]store.Gap, n)
		for i := range out {
			from := rng.IntN(span)
			out[i] = store.Gap{
				From: base.Add(time.Duration(from) * time.Second),
				To:   base.Add(time.Duration(from+1+rng.IntN(span/8+1)) * time.Second),
				Kind: kinds[rng.IntN(len(kinds))],
			}
		}
		return out
	}
	for i := range 5000 {
		span := 10 + rng.IntN(400)
		stored, batch := gaps(rng.IntN(12), span), gaps(rng.IntN(40), span)
		if rng.IntN(4) == 0 && len(batch) > 1 { // a gap again
			batch = append(batch, batch[rng.IntN(len(batch))])
		}
		storedCopy, batchCopy := slices.Clone(stored), slices.Clone(batch)
		merged, got := store.NewGaps(stored, batch)
		if want := newGapsByMerging(stored, batch); got != want {
			t.Fatalf("case %d: NewGaps(%v, %v) = %d, want %d", i, stored, batch, got, want)
		}
		if want := store.MergeGaps(append(slices.Clone(stored), batch...)); !slices.Equal(merged, want) {
			t.Fatalf("case %d: NewGaps(%v, %v) keeps %v, want %v (MergeGaps)", i, stored, batch, merged, want)
		}
		if !slices.Equal(stored, storedCopy) || !slices.Equal(batch, batchCopy) {
			t.Fatalf("case %d: NewGaps changed its arguments", i)
		}
	}
}
