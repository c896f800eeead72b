package archive_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestByteOrderMark imports a dump saved with a UTF-8 byte order mark
// before its first frame (as Windows editors and PowerShell's Out-File
// save text), in time order and shuffled (read again sorted, from the
// frames' places in the file): the same import as without it, where its
// first line was "not JSON".
func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.jsonl")
	writeJSONL(t, plain, fx.events)
	want := memory.New()
	opts := func(file string) archive.Options {
		return archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}
	}
	if _, err := archive.Import(ctx, want, opts(plain)); err != nil {
		t.Fatal(err)
	}
	shuffled := slices.Clone(fx.events)
	slices.SortStableFunc(shuffled, func(a, b fxEvent) int { return cmp.Compare(b.received, a.received) }) // newest first
	for name, evs := range map[string][]fxEvent{"in order": fx.events, "newest first": shuffled} {
		t.Run(name, func(t *testing.T) {
			data := []byte("\xef\xbb\xbf")
			if name == "in order" {
				sorted := slices.Clone(evs)
				slices.SortStableFunc(sorted, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
				evs = sorted
			}
			for _, e := range evs {
				data = append(append(data, e.frame()...), '\n')
			}
			file := filepath.Join(dir, "bom "+name+".jsonl")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			got := memory.New()
			if _, err := archive.Import(ctx, got, opts(file)); err != nil {
				t.Fatal(err)
			}
			a, b := snapshotsOf(t, want, fx.known.Slug), snapshotsOf(t, got, fx.known.Slug)
			if len(a) != len(b) {
				t.Fatalf("%d snapshots with the mark, %d without", len(b), len(a))
			}
			for i := range a {
				if !a[i].Time.Equal(b[i].Time) || !sameSnapshot(a[i], b[i]) {
					t.Fatalf("snapshot %d: without the mark %s %s, with %s %s", i, a[i].Time, fmtSnap(a[i]), b[i].Time, fmtSnap(b[i]))
				}
			}
		})
	}
}
