package archive_test

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestLaterImportGapEdge imports a market's first minute, then, in a
// second import, a stretch of its window further on: the gap the first
// import left over the rest of the window is cut where the second one's
// snapshots are, and none of the gaps stored holds a snapshot. The second
// import's snapshots go on past its last event (its books are trusted
// GapAfter longer), where the gap it left was cut at that last event, and
// said there was no data over seconds of its own snapshots.
func TestLaterImportGapEdge(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		laterImportGapEdge(t, memory.New())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		laterImportGapEdge(t, pgtest.NewStore(t))
	})
}

func laterImportGapEdge(t *testing.T, st archive.Store) {
	ctx := context.Background()
	fx := newFxSet()
	evs := slices.Clone(fx.eventsOf(fx.known))
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	start := fx.known.StartTime.UnixMilli()
	part := func(from, to time.Duration) []fxEvent {
		var out []fxEvent
		for _, e := range evs {
			if e.ts >= start+from.Milliseconds() && e.ts < start+to.Milliseconds() {
				out = append(out, e)
			}
		}
		return out
	}
	dir := t.TempDir()
	for i, p := range [][2]time.Duration{{-20 * time.Second, time.Minute}, {2 * time.Minute, 3 * time.Minute}} {
		lines := part(p[0], p[1])
		if i == 1 {
			// The second capture begins with both books, as one does.
			var books []fxEvent
			for _, e := range evs {
				if e.kind == "book" && e.ts < start+p[0].Milliseconds() {
					books = slices.DeleteFunc(books, func(b fxEvent) bool { return b.asset == e.asset })
					b := e
					b.ts, b.received = start+p[0].Milliseconds(), start+p[0].Milliseconds()
					books = append(books, b)
				}
			}
			lines = append(books, lines...)
		}
		path := filepath.Join(dir, "part"+string(rune('a'+i))+".jsonl")
		writeLines(t, path, lines)
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("import %d: %v", i+1, err)
		}
	}
	snaps, _, err := st.ListSnapshots(ctx, fx.known.Slug, store.SnapshotQuery{Ascending: true})
	if err != nil {
		t.Fatal(err)
	}
	gaps, err := st.ListGaps(ctx, fx.known.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) == 0 || len(gaps) == 0 {
		t.Fatalf("%d snapshots, %d gaps", len(snaps), len(gaps))
	}
	for _, g := range gaps {
		if g.Kind != store.GapSnapshots {
			continue
		}
		for _, s := range snaps {
			if s.Time.After(g.From) && s.Time.Before(g.To) {
				t.Errorf("the gap %s to %s holds the snapshot at %s", g.From.Format("15:04:05.000"), g.To.Format("15:04:05.000"), s.Time.Format("15:04:05.000"))
				break
			}
		}
	}
}
