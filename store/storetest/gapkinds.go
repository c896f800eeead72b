package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/updown/updown/store"
)

// tgap is a trades gap (store.GapTrades) from and to some seconds after t0.
func tgap(from, to int) store.Gap {
	g := gap(from, to)
	g.Kind = store.GapTrades
	return g
}

// testGapKinds: gaps of each kind are merged with their own kind only,
// kept apart where they overlap one of the other kind, and listed
// together oldest first (snapshots first at an equal start); a kind the
// store does not know is ErrInvalid.
func testGapKinds(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	steps := []struct {
		name   string
		record []store.Gap
		want   []store.Gap
	}{
		{"one of each, overlapping", []store.Gap{gap(10, 20), tgap(15, 40)}, []store.Gap{gap(10, 20), tgap(15, 40)}},
		{"a trades gap touching the snapshots gap", []store.Gap{tgap(5, 10)}, []store.Gap{tgap(5, 10), gap(10, 20), tgap(15, 40)}},
		{"a trades gap joining two", []store.Gap{tgap(9, 16)}, []store.Gap{tgap(5, 40), gap(10, 20)}},
		{"a snapshots gap inside the trades gap", []store.Gap{gap(30, 35)}, []store.Gap{tgap(5, 40), gap(10, 20), gap(30, 35)}},
		{"equal starts", []store.Gap{tgap(50, 60), gap(50, 55)}, []store.Gap{tgap(5, 40), gap(10, 20), gap(30, 35), gap(50, 55), tgap(50, 60)}},
	}
	for _, st := range steps {
		mustOK(t, errOf(s.RecordGaps(t.Context(), slug, st.record)), "RecordGaps "+st.name)
		t.Run(st.name, func(t *testing.T) { checkGaps(t, s, slug, st.want) })
	}
	bad := gap(70, 80)
	bad.Kind = "quotes"
	wantErr(t, errOf(s.RecordGaps(t.Context(), slug, []store.Gap{tgap(65, 68), bad})), store.ErrInvalid, fmt.Sprintf("RecordGaps with %v", bad))
	checkGaps(t, s, slug, steps[len(steps)-1].want)
}

// testGapsRemove takes stretches out of the stored gaps step by step (a
// trades gap backfilled): each cuts only gaps of its own kind, a gap
// inside one goes, one overlapping keeps the parts outside, a stretch
// without gaps changes nothing; an invalid one is ErrInvalid and removes
// nothing of its call.
func testGapsRemove(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	mustOK(t, errOf(s.RecordGaps(t.Context(), slug, []store.Gap{gap(10, 20), tgap(10, 40), tgap(50, 60), tgap(70, 80)})), "RecordGaps")
	steps := []struct {
		name   string
		remove []store.Gap
		want   []store.Gap
	}{
		{"nothing", nil, []store.Gap{gap(10, 20), tgap(10, 40), tgap(50, 60), tgap(70, 80)}},
		{"a stretch without gaps", []store.Gap{tgap(42, 48)}, []store.Gap{gap(10, 20), tgap(10, 40), tgap(50, 60), tgap(70, 80)}},
		{"the middle of a trades gap", []store.Gap{tgap(15, 25)}, []store.Gap{gap(10, 20), tgap(10, 15), tgap(25, 40), tgap(50, 60), tgap(70, 80)}},
		{"a whole gap and the end of another", []store.Gap{tgap(35, 60)}, []store.Gap{gap(10, 20), tgap(10, 15), tgap(25, 35), tgap(70, 80)}},
		{"exactly one gap", []store.Gap{tgap(70, 80)}, []store.Gap{gap(10, 20), tgap(10, 15), tgap(25, 35)}},
		{"a snapshots stretch leaves trades gaps", []store.Gap{gap(0, 12)}, []store.Gap{tgap(10, 15), gap(12, 20), tgap(25, 35)}},
		{"several at once", []store.Gap{tgap(0, 12), tgap(30, 31), tgap(33, 40)}, []store.Gap{gap(12, 20), tgap(12, 15), tgap(25, 30), tgap(31, 33)}},
	}
	for _, st := range steps {
		mustOK(t, s.RemoveGaps(t.Context(), slug, st.remove), "RemoveGaps "+st.name)
		t.Run(st.name, func(t *testing.T) { checkGaps(t, s, slug, st.want) })
	}
	last := steps[len(steps)-1].want
	wantErr(t, s.RemoveGaps(t.Context(), slug, []store.Gap{tgap(12, 15), tgap(30, 25)}), store.ErrInvalid, "RemoveGaps with an empty stretch")
	bad := tgap(25, 30)
	bad.Kind = "quotes"
	wantErr(t, s.RemoveGaps(t.Context(), slug, []store.Gap{tgap(12, 15), bad}), store.ErrInvalid, "RemoveGaps of an unknown kind")
	checkGaps(t, s, slug, last)
	// Recorded again, a removed stretch is a gap again.
	mustOK(t, errOf(s.RecordGaps(t.Context(), slug, []store.Gap{tgap(70, 80)})), "RecordGaps")
	checkGaps(t, s, slug, append(last, tgap(70, 80)))
}

// testGapsEndingAfter: ListGapsEndingAfter answers the gaps of one kind,
// of every market, that end after an instant (one ending at it is not),
// by market slug and then oldest first; a kind the store does not know is
// ErrInvalid.
func testGapsEndingAfter(t *testing.T, s store.Store) {
	ctx := t.Context()
	var slugs []string
	for _, minutes := range []int{20, 0, 10} { // stored out of slug order
		slugs = append(slugs, seedSnapshotMarket(t, s, minutes))
	}
	mustOK(t, errOf(s.RecordGaps(ctx, slugs[0], []store.Gap{tgap(40, 50), gap(35, 60), tgap(10, 30)})), "RecordGaps")
	mustOK(t, errOf(s.RecordGaps(ctx, slugs[1], []store.Gap{tgap(31, 32), tgap(5, 20)})), "RecordGaps")
	mustOK(t, errOf(s.RecordGaps(ctx, slugs[2], []store.Gap{gap(0, 90)})), "RecordGaps")
	sorted := slices.Sorted(slices.Values(slugs))
	for _, tc := range []struct {
		name  string
		kind  store.GapKind
		after int
		want  []store.MarketGap
	}{
		{"trades after 30 s", store.GapTrades, 30, []store.MarketGap{
			{Market: slugs[1], Gap: tgap(31, 32)}, {Market: slugs[0], Gap: tgap(40, 50)}}},
		{"trades after 0 s", store.GapTrades, 0, []store.MarketGap{
			{Market: slugs[1], Gap: tgap(5, 20)}, {Market: slugs[1], Gap: tgap(31, 32)},
			{Market: slugs[0], Gap: tgap(10, 30)}, {Market: slugs[0], Gap: tgap(40, 50)}}},
		{"snapshots after 59 s", store.GapSnapshots, 59, []store.MarketGap{
			{Market: slugs[2], Gap: gap(0, 90)}, {Market: slugs[0], Gap: gap(35, 60)}}},
		{"nothing ends after 90 s", store.GapTrades, 90, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListGapsEndingAfter(ctx, tc.kind, sec(tc.after))
			mustOK(t, err, "ListGapsEndingAfter")
			slices.SortStableFunc(tc.want, func(a, b store.MarketGap) int {
				return slices.Index(sorted, a.Market) - slices.Index(sorted, b.Market)
			})
			if len(got) != len(tc.want) {
				t.Fatalf("ListGapsEndingAfter(%q, %d s) = %+v, want %+v", tc.kind, tc.after, got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Market != w.Market || !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Kind != w.Kind {
					t.Errorf("gap %d: %s %+v, want %s %+v", i, g.Market, g.Gap, w.Market, w.Gap)
				}
			}
		})
	}
	_, err := s.ListGapsEndingAfter(ctx, "quotes", sec(0))
	wantErr(t, err, store.ErrInvalid, "ListGapsEndingAfter of an unknown kind")
}
