package transfer_test

import (
	"fmt"
	"testing"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportCountsWrittenAndKept: an import counts the records the store
// stored apart from those it had already and kept, in both stores: the
// BTC markets' records first, then everything (the BTC ones kept, the
// rest written), then everything again (all kept but the markets, which
// a record as new as the stored one writes again).
func TestImportCountsWrittenAndKept(t *testing.T) {
	t.Parallel()
	src, _ := seeded(t, 2, 120)
	enrich(t, src)
	all, allStats := export(t, src, transfer.ExportOptions{Books: true})
	btc, btcStats := export(t, src, transfer.ExportOptions{Books: true, Filter: store.MarketFilter{Coin: store.BTC}})
	if btcStats.Snapshots == 0 || btcStats.Trades == 0 || btcStats.Gaps == 0 || btcStats.Snapshots == allStats.Snapshots ||
		btcStats.Trades == allStats.Trades || btcStats.Gaps == allStats.Gaps {
		t.Fatalf("BTC's records %+v of all %+v: want some of each kind, and not all", btcStats, allStats)
	}
	rest := transfer.Stats{Markets: allStats.Markets, Snapshots: allStats.Snapshots - btcStats.Snapshots,
		Trades: allStats.Trades - btcStats.Trades, Gaps: allStats.Gaps - btcStats.Gaps,
		Kept: transfer.Kept{Snapshots: btcStats.Snapshots, Trades: btcStats.Trades, Gaps: btcStats.Gaps}}
	again := transfer.Stats{Markets: allStats.Markets,
		Kept: transfer.Kept{Snapshots: allStats.Snapshots, Trades: allStats.Trades, Gaps: allStats.Gaps}}
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			var dst store.Store = memory.New()
			if pg {
				dst = pgtest.NewStore(t)
			}
			for _, step := range []struct {
				name string
				data []byte
				want transfer.Stats
			}{
				{"BTC's", btc, btcStats},
				{"all, BTC's held", all, rest},
				{"all again", all, again},
			} {
				got := importInto(t, dst, step.data, transfer.ImportOptions{MarketBatch: 5, SnapshotBatch: 64})
				if got != step.want {
					t.Errorf("import of %s records: %+v, want %+v", step.name, got, step.want)
				}
			}
		})
	}
}
