package archive_test

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestPMXTNotSortedByMarket imports Parquet hours in PMXT's columns whose
// rows are not in PMXT's order by market (files rewritten by another
// tool): the importer reads a market's rows together, and a market's
// rows met again after other markets' were folded into its books at the
// time of its last event read, out of time order: an hour sorted by token
// took no snapshot of a market at all, silently. A file in the order rows
// were received imports as the ws-jsonl dump of the same events does; one
// by token (the markets' tokens taking turns) is the same import too, or
// an error naming the row, never other snapshots.
func TestPMXTNotSortedByMarket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	markets := []store.Market{fx.known, fx.unknown}
	want := inOrderImport(t, fx, dir, markets)
	rank := map[string]int{fx.known.ClobTokenUp: 0, fx.unknown.ClobTokenUp: 1, fx.known.ClobTokenDown: 2, fx.unknown.ClobTokenDown: 3}
	for _, c := range []struct {
		name      string
		order     func(a, b fxEvent) int
		mayRefuse bool
	}{
		{"received", func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) }, false},
		{"token", func(a, b fxEvent) int {
			return cmp.Or(cmp.Compare(rank[a.asset], rank[b.asset]), cmp.Compare(a.received, b.received))
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := slices.Clone(fx.events)
			slices.SortStableFunc(evs, c.order)
			rows := make([]pmxtRow, len(evs))
			for i, e := range evs {
				rows[i] = e.row()
			}
			pq := filepath.Join(dir, c.name+".parquet")
			writePMXT(t, pq, rows)
			got := memory.New()
			_, err := archive.Import(ctx, got, archive.Options{Format: archive.PMXTv2, Files: []string{pq}, Markets: markets, Prices: fx.klines(t)})
			if err != nil {
				var ie *archive.InputError
				if !c.mayRefuse || !errors.As(err, &ie) || ie.Pos.Row == 0 {
					t.Fatalf("error %v: want the import, or an error naming the row", err)
				}
				if imps, _ := got.ListImports(ctx); len(imps) != 0 {
					t.Fatalf("%d imports recorded after the error", len(imps))
				}
				return
			}
			for _, m := range markets {
				sameSnapshots(t, m.Slug, "ws-jsonl", want, "pmxt-v2", got)
			}
		})
	}
}
