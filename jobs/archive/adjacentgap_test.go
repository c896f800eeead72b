package archive_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestAdjacentDumpsGapsAsOneImport imports two dumps of one market one
// after the other, in both orders: the gaps must be those of one import
// of both, where a stored gap that the second dump covers only in part
// (the first dump's gap to the window's end, or from its start) is
// measured again with the second's snapshots, not cut at the second's
// first or last event, leaving a stretch of under 3 s called a gap.
func TestAdjacentDumpsGapsAsOneImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	m := fx.known
	evs := fx.eventsOf(m)
	// A dump as a capture begins one at `at`: each book of before it
	// dated then, and the events from then on.
	from := func(at time.Time) []fxEvent {
		var out []fxEvent
		for _, e := range evs {
			if e.kind == "book" && !time.UnixMilli(e.ts).After(at) {
				b := e
				b.ts, b.received = at.UnixMilli(), at.UnixMilli()
				out = append(out, b)
			}
		}
		for _, e := range evs {
			if time.UnixMilli(e.ts).After(at) {
				out = append(out, e)
			}
		}
		return out
	}
	before := func(in []fxEvent, at time.Time) []fxEvent {
		var out []fxEvent
		for _, e := range in {
			if time.UnixMilli(e.ts).Before(at) {
				out = append(out, e)
			}
		}
		return out
	}
	// first: from 100 ms into the window to a minute in; second: from
	// 2 s after that (under 3 s between their snapshots: no gap) to the
	// end. (An import takes no snapshot past its input's end: over a hole
	// of over 3 s between dumps imported apart there is a gap, as the
	// first import cannot tell a hole from the next dump taking over.)
	cut := m.StartTime.Add(time.Minute)
	first := before(from(m.StartTime.Add(100*time.Millisecond)), cut)
	second := from(cut.Add(2 * time.Second))
	dir := t.TempDir()
	files := map[string]string{"first": filepath.Join(dir, "first.jsonl"), "second": filepath.Join(dir, "second.jsonl")}
	writeJSONL(t, files["first"], first)
	writeJSONL(t, files["second"], second)
	opts := func(names ...string) archive.Options {
		o := archive.Options{Format: archive.WSJSONL, Markets: []store.Market{m}, Prices: fx.klines(t)}
		for _, n := range names {
			o.Files = append(o.Files, files[n])
		}
		return o
	}
	gapsOf := func(st store.Store) []store.Gap {
		gaps, err := st.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		return gaps
	}
	one := memory.New()
	if _, err := archive.Import(ctx, one, opts("first", "second")); err != nil {
		t.Fatal(err)
	}
	want := gapsOf(one)
	for _, order := range [][]string{{"first", "second"}, {"second", "first"}} {
		st := memory.New()
		for _, n := range order {
			if _, err := archive.Import(ctx, st, opts(n)); err != nil {
				t.Fatal(err)
			}
		}
		if got := gapsOf(st); !sameGaps(got, want) {
			t.Errorf("imported %v one after the other: gaps\n%v\nwant those of one import of both:\n%v", order, got, want)
		}
	}
}

func sameGaps(a, b []store.Gap) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].From.Equal(b[i].From) || !a[i].To.Equal(b[i].To) || a[i].Kind != b[i].Kind {
			return false
		}
	}
	return true
}
