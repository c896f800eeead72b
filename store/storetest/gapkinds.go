package storetest

import (
	"fmt"
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
		mustOK(t, s.RecordGaps(t.Context(), slug, st.record), "RecordGaps "+st.name)
		t.Run(st.name, func(t *testing.T) { checkGaps(t, s, slug, st.want) })
	}
	bad := gap(70, 80)
	bad.Kind = "quotes"
	wantErr(t, s.RecordGaps(t.Context(), slug, []store.Gap{tgap(65, 68), bad}), store.ErrInvalid, fmt.Sprintf("RecordGaps with %v", bad))
	checkGaps(t, s, slug, steps[len(steps)-1].want)
}
