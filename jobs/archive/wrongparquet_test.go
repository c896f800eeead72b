package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestExportParquetGivenAsEvents imports a Parquet file `updown export`
// wrote as archived events: as pmxt-v2 (told from its first bytes) the
// error says it is an export and names the command that imports it,
// where it said only that a PMXT column was missing; named after a
// ws-jsonl dump, it says it is a Parquet file, where its bytes were a
// frame on line 1 that is not JSON.
func TestExportParquetGivenAsEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "snapshots.parquet")
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
	fx := newFxSet()
	dump := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, dump, fx.events)
	for _, c := range []struct {
		format archive.Format
		files  []string
		want   []string
	}{
		{archive.PMXTv2, []string{name}, []string{name, "updown export", "updown import --in"}},
		{archive.WSJSONL, []string{dump, name}, []string{name, "Parquet", "pmxt-v2"}},
	} {
		_, err := archive.Import(context.Background(), memory.New(), archive.Options{Format: c.format, Files: c.files, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: %v, want an error saying %q", c.format, c.files, err, w)
			}
		}
	}
}
