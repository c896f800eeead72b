package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestZstdDump imports a ws-jsonl dump compressed with zstd, as dumps of
// the market channel are often kept (the PMXT archive compresses with it
// too): the same snapshots and trades as the plain file, where its
// compressed bytes were read as a frame that is not JSON. A truncated one
// is an error naming the file and line, as a truncated gzip is.
func TestZstdDump(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	plain := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, plain, fx.events)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	compressed := filepath.Join(dir, "dump.jsonl.zst")
	if err := os.WriteFile(compressed, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	imported := func(name string) (archive.Summary, []store.Snapshot) {
		t.Helper()
		st := memory.New()
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{name}, Markets: []store.Market{fx.known, fx.unknown}, Prices: fx.klines(t)})
		if err != nil {
			t.Fatalf("import %s: %v", filepath.Base(name), err)
		}
		return sum, snapshotsOf(t, st, fx.known.Slug)
	}
	wantSum, want := imported(plain)
	gotSum, got := imported(compressed)
	if len(want) == 0 || len(got) != len(want) || gotSum.Events != wantSum.Events || gotSum.Import.Trades != wantSum.Import.Trades {
		t.Fatalf("zstd: %d events, %d snapshots, %d trades; plain: %d, %d, %d", gotSum.Events, len(got), gotSum.Import.Trades,
			wantSum.Events, len(want), wantSum.Import.Trades)
	}

	truncated := filepath.Join(dir, "cut.jsonl.zst")
	if err := os.WriteFile(truncated, buf.Bytes()[:buf.Len()*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = archive.Import(ctx, memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{truncated}, Markets: []store.Market{fx.known, fx.unknown}, Prices: fx.klines(t)})
	for _, w := range []string{"cut.jsonl.zst", "line ", "zstd", "truncated"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a truncated zstd dump: %v, want an error saying %q", err, w)
		}
	}
}
