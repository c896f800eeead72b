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
// instant is new, and all sorted by time, less each change to the tick of
// the one before it (no change). Random lists of changes at few
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
		var kept []store.TickSizeChange
		for _, c := range out {
			if n := len(kept); n == 0 || kept[n-1].TickSize != c.TickSize {
				kept = append(kept, c)
			}
		}
		return kept
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

// TestSortTickChanges: changes come back oldest first with the first listed
// of those at one instant; changes in order already are returned as they
// are, and the input is never changed.
func TestSortTickChanges(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	c := func(sec int, size float64) store.TickSizeChange {
		return store.TickSizeChange{Time: base.Add(time.Duration(sec) * time.Second), TickSize: size}
	}
	tests := []struct {
		name      string
		in, want  []store.TickSizeChange
		unchanged bool // the input slice itself comes back
	}{
		{name: "none", in: nil, want: nil, unchanged: true},
		{name: "one", in: []store.TickSizeChange{c(1, 0.01)}, want: []store.TickSizeChange{c(1, 0.01)}, unchanged: true},
		{name: "in order", in: []store.TickSizeChange{c(1, 0.001), c(2, 0.01)}, want: []store.TickSizeChange{c(1, 0.001), c(2, 0.01)}, unchanged: true},
		{name: "reversed", in: []store.TickSizeChange{c(2, 0.01), c(1, 0.001)}, want: []store.TickSizeChange{c(1, 0.001), c(2, 0.01)}},
		{name: "one instant twice", in: []store.TickSizeChange{c(1, 0.001), c(1, 0.01)}, want: []store.TickSizeChange{c(1, 0.001)}},
		{name: "out of order and twice", in: []store.TickSizeChange{c(3, 0.01), c(1, 0.001), c(3, 0.001), c(2, 0.01), c(1, 0.01)},
			want: []store.TickSizeChange{c(1, 0.001), c(2, 0.01), c(3, 0.01)}},
		{name: "one instant in two zones", in: []store.TickSizeChange{c(1, 0.01), {Time: base.Add(time.Second).In(time.FixedZone("x", 3600)), TickSize: 0.001}},
			want: []store.TickSizeChange{c(1, 0.01)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tc.in)
			got := store.SortTickChanges(in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("SortTickChanges(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Errorf("SortTickChanges changed its input to %v", in)
			}
			if tc.unchanged && len(got) > 0 && &got[0] != &in[0] {
				t.Errorf("SortTickChanges copied changes in order already")
			}
		})
	}
}

// TestAppendTickChange: a tick heard of is a change, appended at its
// instant in UTC, unless it is the tick in force already or older news
// than the last change.
func TestAppendTickChange(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	c := func(sec int, size float64) store.TickSizeChange {
		return store.TickSizeChange{Time: base.Add(time.Duration(sec) * time.Second), TickSize: size}
	}
	fine, coarse := 0.001, 0.01
	tests := []struct {
		name    string
		changes []store.TickSizeChange
		cur     *float64
		tick    float64
		at      time.Time
		want    []store.TickSizeChange
		added   bool
	}{
		{name: "first, tick unknown", tick: fine, at: base, want: []store.TickSizeChange{c(0, fine)}, added: true},
		{name: "first, from another tick", cur: &coarse, tick: fine, at: base, want: []store.TickSizeChange{c(0, fine)}, added: true},
		{name: "first, the tick in force", cur: &fine, tick: fine, at: base, want: nil},
		{name: "after the last", changes: []store.TickSizeChange{c(0, fine)}, cur: &fine, tick: coarse, at: base.Add(time.Second),
			want: []store.TickSizeChange{c(0, fine), c(1, coarse)}, added: true},
		{name: "the tick in force, later", changes: []store.TickSizeChange{c(0, fine)}, cur: &fine, tick: fine, at: base.Add(time.Second),
			want: []store.TickSizeChange{c(0, fine)}},
		{name: "at the last's instant", changes: []store.TickSizeChange{c(5, fine)}, cur: &fine, tick: coarse, at: base.Add(5 * time.Second),
			want: []store.TickSizeChange{c(5, fine)}},
		{name: "older news", changes: []store.TickSizeChange{c(5, fine)}, cur: &fine, tick: coarse, at: base.Add(time.Second),
			want: []store.TickSizeChange{c(5, fine)}},
		{name: "tick unknown, after the last", changes: []store.TickSizeChange{c(0, fine)}, tick: fine, at: base.Add(time.Second),
			want: []store.TickSizeChange{c(0, fine), c(1, fine)}, added: true},
		{name: "in UTC", cur: &coarse, tick: fine, at: base.Add(time.Second).In(time.FixedZone("x", 3600)),
			want: []store.TickSizeChange{c(1, fine)}, added: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, added := store.AppendTickChange(slices.Clone(tc.changes), tc.cur, tc.tick, tc.at)
			if added != tc.added || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("AppendTickChange(%v, %v) = %v, %v; want %v, %v", tc.changes, tc.tick, got, added, tc.want, tc.added)
			}
		})
	}
}
