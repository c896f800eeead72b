package archive_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDumpStartingInsideAMarket imports a dump that begins two minutes
// into a market the import creates: its first two minutes have no
// snapshot, which is a gap, as the recorder records one from the window's
// start when it begins recording a market late. A later import of a dump
// that covers them fills them in, and the gap is gone.
func TestDumpStartingInsideAMarket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	m := fx.known
	evs := fx.eventsOf(m)
	late := m.StartTime.Add(2 * time.Minute)
	i := slices.IndexFunc(evs, func(e fxEvent) bool { return !time.UnixMilli(e.ts).Before(late) })
	// The dump begins as a capture does: each book, then the changes.
	lateEvs := []fxEvent{}
	for _, e := range evs {
		if e.kind == "book" && !time.UnixMilli(e.ts).After(late) {
			b := e
			b.ts, b.received = late.UnixMilli(), late.UnixMilli()
			lateEvs = append(lateEvs, b)
		}
	}
	lateEvs = append(lateEvs, evs[i:]...)
	dir := t.TempDir()
	lateFile, wholeFile := filepath.Join(dir, "late.jsonl"), filepath.Join(dir, "whole.jsonl")
	writeJSONL(t, lateFile, lateEvs)
	writeJSONL(t, wholeFile, evs)

	st := memory.New()
	opts := func(file string) archive.Options {
		return archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: []store.Market{m}, Prices: fx.klines(t)}
	}
	if _, err := archive.Import(ctx, st, opts(lateFile)); err != nil {
		t.Fatal(err)
	}
	snaps := snapshotsOf(t, st, m.Slug)
	if len(snaps) == 0 || snaps[0].Time.Before(late) {
		t.Fatalf("%d snapshots, the first at %v: want the first at %s or after", len(snaps), snaps[0].Time, late)
	}
	gaps, err := st.ListGaps(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) == 0 || !gaps[0].From.Equal(m.StartTime) || !gaps[0].To.Equal(snaps[0].Time) {
		t.Fatalf("gaps %v: want one from the market's start %s to its first snapshot %s", gaps, m.StartTime, snaps[0].Time)
	}

	if _, err := archive.Import(ctx, st, opts(wholeFile)); err != nil {
		t.Fatal(err)
	}
	gaps, err = st.ListGaps(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(gaps, func(g store.Gap) bool {
		return g.From.Before(late) && g.Kind == store.GapSnapshots && g.From.Equal(m.StartTime)
	}) {
		t.Errorf("gaps %v after the whole stream was imported: the first minutes are filled", gaps)
	}
	if snaps := snapshotsOf(t, st, m.Slug); !snaps[0].Time.Equal(m.StartTime) {
		t.Errorf("first snapshot at %s after the whole stream, want %s", snaps[0].Time, m.StartTime)
	}
}

// TestDumpEndingInsideAMarket imports a dump cut short two minutes before
// the end of a market (long over) that the import creates: the rest of
// its window has no snapshot, which is a gap to its end, as the recorder
// records one from a market's last snapshot to its end.
func TestDumpEndingInsideAMarket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	m := fx.known
	evs := fx.eventsOf(m)
	cut := m.EndTime.Add(-2 * time.Minute)
	i := slices.IndexFunc(evs, func(e fxEvent) bool { return !time.UnixMilli(e.ts).Before(cut) })
	file := filepath.Join(t.TempDir(), "early.jsonl")
	writeJSONL(t, file, evs[:i])
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: []store.Market{m}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	snaps := snapshotsOf(t, st, m.Slug)
	last := snaps[len(snaps)-1].Time
	if !last.Before(cut.Add(4 * time.Second)) {
		t.Fatalf("last snapshot at %s, after the dump ends at %s", last, cut)
	}
	gaps, err := st.ListGaps(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) == 0 || !gaps[len(gaps)-1].From.Equal(last) || !gaps[len(gaps)-1].To.Equal(m.EndTime) {
		t.Fatalf("gaps %v: want the last from the last snapshot %s to the market's end %s", gaps, last, m.EndTime)
	}
}
