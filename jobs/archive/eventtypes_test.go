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
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestEventsWithoutBookChangeAreSkipped imports a stream that carries,
// beside the book's events, events of the market channel that change no
// book (best_bid_ask, new_market, market_resolved, and a type the
// channel may add later), in both formats: each format imports the same
// as the stream without them, counting them as events read, as one
// importer of one event stream does.
func TestEventsWithoutBookChangeAreSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	var plain []fxEvent
	for _, e := range fx.events {
		if e.market == fx.known.ConditionID {
			plain = append(plain, e)
		}
	}
	extra := slices.Clone(plain)
	for i, kind := range []string{"best_bid_ask", "new_market", "market_resolved", "some_later_event"} {
		at := plain[100*(i+1)]
		extra = append(extra, fxEvent{ts: at.ts, received: at.received, market: fx.known.ConditionID, kind: kind,
			asset: fx.known.ClobTokenUp, bestBid: "0.4", bestAsk: "0.6"})
	}

	dir := t.TempDir()
	for _, f := range []archive.Format{archive.WSJSONL, archive.PMXTv2} {
		t.Run(string(f), func(t *testing.T) {
			write := func(name string, evs []fxEvent) string {
				path := filepath.Join(dir, string(f)+"-"+name)
				if f == archive.WSJSONL {
					writeJSONL(t, path, evs)
				} else {
					writePMXT(t, path, pmxtRows(evs))
				}
				return path
			}
			imported := func(path string) (archive.Summary, []store.Snapshot) {
				st := memory.New()
				sum, err := archive.Import(ctx, st, archive.Options{Format: f, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
				if err != nil {
					t.Fatalf("import %s: %v", filepath.Base(path), err)
				}
				return sum, snapshotsOf(t, st, fx.known.Slug)
			}
			wantSum, want := imported(write("plain", plain))
			gotSum, got := imported(write("extra", extra))
			if gotSum.Events != wantSum.Events+4 {
				t.Errorf("%d events read, want %d: the stream's %d and the 4 that change no book", gotSum.Events, wantSum.Events+4, wantSum.Events)
			}
			if gotSum.Import.Snapshots != wantSum.Import.Snapshots || gotSum.Import.Trades != wantSum.Import.Trades || len(got) != len(want) {
				t.Fatalf("imported %d snapshots, %d trades; without the extra events %d, %d", len(got), gotSum.Import.Trades, len(want), wantSum.Import.Trades)
			}
			for i := range want {
				if !got[i].Time.Equal(want[i].Time) || !sameSnapshot(got[i], want[i]) {
					t.Fatalf("snapshot %d: %s %s, without the extra events %s %s", i, got[i].Time, fmtSnap(got[i]), want[i].Time, fmtSnap(want[i]))
				}
			}
		})
	}
}

// TestExportParquetOfMarketsNotStored imports a Parquet file of snapshots
// `updown export` wrote before the file of their markets: the error says
// which market is missing and what to import first, not only "not found".
func TestExportParquetOfMarketsNotStored(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "snapshots.parquet")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := transfer.NewParquetWriter[transfer.ParquetSnapshot](f)
	at := time.Date(2026, 5, 12, 13, 0, 0, 0, time.UTC)
	if err := w.Write(transfer.ParquetSnapshotRow("btc-updown-5m-1778590800", &store.Snapshot{Time: at, CoinPrice: 80000, PriceUp: 0.5, PriceDown: 0.5})); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = archive.ImportExportParquet(context.Background(), memory.New(), name)
	if err == nil || !strings.Contains(err.Error(), "btc-updown-5m-1778590800 is not stored: import its market first") {
		t.Fatalf("import of snapshots whose market is not stored: %v", err)
	}
}
