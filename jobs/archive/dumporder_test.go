package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDumpsOrderedPastTheirInitialBooks imports, in one import, two
// dumps of a market, the second begun with its subscription's initial
// dump, which lists first a book quiet since hours before the first
// dump began (a book is stamped with its last change: a market listed a
// day ahead of its window): named in either order, they are read in the
// order of their events and import as the two concatenated do, where the
// second, dated by that book, was read first and the first's events were
// folded in as a clock gone back.
func TestDumpsOrderedPastTheirInitialBooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	m := fx.known
	evs := fx.eventsOf(m)
	cut := m.StartTime.Add(2 * time.Minute).UnixMilli()
	down, up := bookAt(t, evs, m.ClobTokenDown, cut), bookAt(t, evs, m.ClobTokenUp, cut)
	down.market, up.market = m.ConditionID, m.ConditionID
	down.ts = m.StartTime.Add(-3 * time.Hour).UnixMilli() // quiet for hours
	var first, second []string
	for _, e := range evs {
		if e.received < cut {
			first = append(first, string(e.frame()))
		} else {
			second = append(second, string(e.frame()))
		}
	}
	second = append([]string{"[" + string(down.frame()) + "," + string(up.frame()) + "]"}, second...)
	dir := t.TempDir()
	write := func(name string, lines ...[]string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(slices.Concat(lines...), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b, cat := write("a.jsonl", first), write("b.jsonl", second), write("cat.jsonl", first, second)
	imp := func(files ...string) []store.Snapshot {
		t.Helper()
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{m}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("import %v: %v", files, err)
		}
		return snapshotsOf(t, st, m.Slug)
	}
	want := imp(cat)
	if len(want) < 500 {
		t.Fatalf("%d snapshots of the dumps concatenated", len(want))
	}
	for _, files := range [][]string{{a, b}, {b, a}} {
		got := imp(files...)
		if len(got) != len(want) {
			t.Errorf("%s then %s: %d snapshots, the dumps concatenated %d", filepath.Base(files[0]), filepath.Base(files[1]), len(got), len(want))
			continue
		}
		for i := range got {
			if !got[i].Time.Equal(want[i].Time) || !sameSnapshot(got[i], want[i]) {
				t.Errorf("%s then %s: snapshot %d at %s, the dumps concatenated's at %s", filepath.Base(files[0]), filepath.Base(files[1]), i, got[i].Time, want[i].Time)
				break
			}
		}
	}
}
