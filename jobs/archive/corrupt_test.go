package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestCorruptGzip imports a gzip dump with two bytes of its compressed
// data changed, as a bad disk or download leaves it: the error names the
// file and line and says the gzip stream is corrupt, where a stream that
// still inflated (to garbage, its checksum not yet read) was reported as
// a frame that is not JSON, as if the dump's frames were at fault; nothing
// is written.
func TestCorruptGzip(t *testing.T) {
	t.Parallel()
	fx := newFxSet()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, e := range fx.eventsOf(fx.known) {
		zw.Write(append(e.frame(), '\n'))
	}
	zw.Close()
	b := buf.Bytes()
	b[len(b)/2] ^= 0xff
	b[len(b)/2+1] ^= 0x55
	path := filepath.Join(t.TempDir(), "dump.jsonl.gz")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	_, err := archive.Import(context.Background(), st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	for _, w := range []string{path + ": line ", "gzip", "corrupt"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a corrupt gzip dump: %v, want an error saying %q", err, w)
		}
	}
	if ms, n, _ := st.ListMarkets(context.Background(), store.MarketFilter{}); n != 0 {
		t.Errorf("a failed import stored %d markets: %v", n, ms)
	}
}
