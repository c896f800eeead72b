package postgres_test

import (
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportMergeKeepsChunksInTheirMonth: an import into a stored market
// whose recorded snapshots span a month's end, between them, is merged
// with them at Commit. The merge cut its chunks every 512 snapshots
// whatever their months, so a June partition held July's snapshots, which
// a drop of June took with it (or drop-snapshots had to rescue).
func TestImportMergeKeepsChunksInTheirMonth(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	end := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, end.Add(-2*time.Hour))
	all := newMarketSim(32, end.Add(-2*time.Minute)).series(3 * 512)
	var even, odd []store.Snapshot
	for i, sn := range all {
		if i%2 == 0 {
			even = append(even, sn)
		} else {
			odd = append(odd, sn)
		}
	}
	if _, err := s.AppendSnapshots(ctx, slug, even); err != nil {
		t.Fatal(err)
	}
	tx, _ := importInto(ctx, t, s, slug)
	if _, err := tx.AppendSnapshots(ctx, slug, odd); err != nil {
		t.Fatal(err)
	}
	imp, _, err := tx.Commit(ctx, store.Import{Key: "month", Source: "pmxt-v2"})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Snapshots != int64(len(odd)) {
		t.Errorf("import counted %d, want %d", imp.Snapshots, len(odd))
	}
	for i, c := range checkChunks(t, s, slug, len(all)) {
		if !monthOf(c.First).Equal(monthOf(c.Last)) {
			t.Errorf("chunk %d runs from %v to %v (n=%d), across a month's end", i, c.First, c.Last, c.N)
		}
	}
	checkPages(t, s, slug, all, 0, 100)
	d, err := s.DropSnapshotsBefore(ctx, end, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Kept != 0 {
		t.Errorf("the drop before July rewrote %d snapshots of a chunk begun in June: %+v", d.Kept, d)
	}
	got, total := list(t, s, slug, store.SnapshotQuery{Ascending: true})
	july := 0
	for _, sn := range all {
		if !sn.Time.Before(end) {
			july++
		}
	}
	if len(got) != july || total != july {
		t.Errorf("after the drop: %d snapshots listed, total %d, want July's %d", len(got), total, july)
	}
}
