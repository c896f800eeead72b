package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestGzipZeroPadded imports a gzip dump followed by zero bytes, as a file
// written into space allocated ahead, or a block device's copy, ends:
// gzip itself reads it whole (`gzip -t` passes, `zcat` prints every
// line), and so does the import, the same as the dump without them, where
// the zeros were taken for a corrupt member and the whole file refused.
// Bytes other than zeros after the last member are still an error.
func TestGzipZeroPadded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	plain := filepath.Join(dir, "dump.jsonl.gz")
	writeLines(t, plain, fx.eventsOf(fx.known))
	gzipFile(t, plain)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	imp := func(name string, b []byte) (archive.Summary, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return archive.Import(ctx, memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	}
	want, err := imp("whole.jsonl.gz", data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := imp("padded.jsonl.gz", append(append([]byte(nil), data...), make([]byte, 4096)...))
	if err != nil {
		t.Fatalf("a gzip dump padded with zeros: %v", err)
	}
	if got.Events != want.Events || got.Import.Snapshots != want.Import.Snapshots || got.Import.Trades != want.Import.Trades {
		t.Errorf("padded with zeros: %d events, %d snapshots, %d trades; without: %d, %d, %d", got.Events, got.Import.Snapshots, got.Import.Trades,
			want.Events, want.Import.Snapshots, want.Import.Trades)
	}
	// Other bytes after the last member, after zeros or not, a few or
	// more than a gzip header: an error that says so, where a few were
	// called a file cut short ("the file ends before its data does").
	for name, tail := range map[string][]byte{
		"junk.jsonl.gz":       append(make([]byte, 100), "junk"...),
		"short.jsonl.gz":      []byte("junk"),
		"long.jsonl.gz":       []byte("this is not another gzip member\n"),
		"near-magic.jsonl.gz": {0x1f},
	} {
		_, err := imp(name, append(append([]byte(nil), data...), tail...))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "gzip file goes on after its last member") || strings.Contains(err.Error(), "truncated") {
			t.Errorf("a gzip dump followed by %q: %v, want an error naming the file and the bytes after its last member", tail, err)
		}
	}
}
