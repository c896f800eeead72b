package archive_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestFilesOutOfOrder imports a ws-jsonl dump cut in two files, named in
// the wrong order (as a shell glob lists dump-10 before dump-9): the files
// are read in the order of the times they hold, as pmxt-v2's hours are, so
// that the import is the one of the files in order, not a market whose
// later half came first and whose earlier half was then thrown away.
func TestFilesOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "dump-9.jsonl"), filepath.Join(dir, "dump-10.jsonl")
	writeJSONL(t, first, evs[:len(evs)/2])
	writeJSONL(t, second, evs[len(evs)/2:])

	imp := func(files ...string) (archive.Summary, []store.Snapshot) {
		t.Helper()
		st := memory.New()
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		if err != nil {
			t.Fatalf("import %v: %v", files, err)
		}
		return sum, snapshotsOf(t, st, fx.known.Slug)
	}
	inOrder, want := imp(first, second)
	if len(want) < 500 {
		t.Fatalf("the files in order imported %d snapshots", len(want))
	}
	reversed, got := imp(second, first)
	if len(got) != len(want) || reversed.Import.Snapshots != inOrder.Import.Snapshots {
		t.Fatalf("the files named out of order imported %d snapshots, in order %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || got[i].PriceUp != want[i].PriceUp || got[i].PriceDown != want[i].PriceDown {
			t.Fatalf("snapshot %d: out of order %s %v/%v, in order %s %v/%v", i, got[i].Time, got[i].PriceUp, got[i].PriceDown,
				want[i].Time, want[i].PriceUp, want[i].PriceDown)
		}
	}
	if reversed.Import.Key != inOrder.Import.Key {
		t.Errorf("the same files in another order are another import (%s, %s): a re-run would write them again", reversed.Import.Key, inOrder.Import.Key)
	}
}
