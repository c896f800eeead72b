package archive_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestPMXTBookLevelsAsPairs imports a pmxt-v2 hour whose book rows spell
// their sides as the PMXT archive v2 documents them, [["price","size"],...]
// (archive.pmxt.dev, v2 data overview, columns bids and asks): the same
// market as from the market channel's [{"price","size"},...], where each
// such row failed the import.
func TestPMXTBookLevelsAsPairs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	objects, pairs := filepath.Join(dir, "objects.parquet"), filepath.Join(dir, "pairs.parquet")
	writePMXT(t, objects, pmxtRows(evs))
	rows := pmxtRows(evs)
	books := 0
	for i, e := range rows {
		if e.EventType != "book" {
			continue
		}
		books++
		for _, side := range []**string{&rows[i].Bids, &rows[i].Asks} {
			var levels []map[string]string
			if err := json.Unmarshal([]byte(**side), &levels); err != nil {
				t.Fatal(err)
			}
			out := make([][2]string, len(levels))
			for j, l := range levels {
				out[j] = [2]string{l["price"], l["size"]}
			}
			b, _ := json.Marshal(out)
			*side = opt(string(b))
		}
	}
	if books == 0 {
		t.Fatal("the stream has no book")
	}
	writePMXT(t, pairs, rows)
	imp := func(name string) []store.Snapshot {
		t.Helper()
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{name}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		return snapshotsOf(t, st, fx.known.Slug)
	}
	want, got := imp(objects), imp(pairs)
	if len(want) < 100 || !reflect.DeepEqual(got, want) {
		t.Errorf("levels as pairs: %d snapshots, as objects %d (or they differ)", len(got), len(want))
	}
}
