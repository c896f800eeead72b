package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestBadFrameInGzipMember imports a gzip dump of three members whose
// first member holds a line that is not JSON, the other two megabytes
// of frames: the error names the line, and the import reads on only to
// the end of that member, whose checksum tells a bad line from a corrupt
// stream, where it inflated the whole rest of the file first.
func TestBadFrameInGzipMember(t *testing.T) {
	t.Parallel()
	fx := newFxSet()
	rng := rand.New(rand.NewPCG(9, 10))
	var buf bytes.Buffer
	for m := range 3 {
		zw := gzip.NewWriter(&buf)
		n := 200
		if m > 0 {
			n = 80000 // some 2.5 MB a member: frames of random hashes compress little
		}
		for i := range n {
			if m == 0 && i == 10 {
				zw.Write([]byte("this line is not a frame\n"))
				continue
			}
			ts := fx.known.StartTime.UnixMilli() + int64(m*80000+i)*10
			fmt.Fprintf(zw, `{"event_type":"price_change","market":%q,"timestamp":"%d","price_changes":[{"asset_id":%q,"price":"0.5","size":"%d","side":"BUY","hash":"%016x%016x%016x"}]}`+"\n",
				fx.known.ConditionID, ts, fx.known.ClobTokenUp, i+1, rng.Uint64(), rng.Uint64(), rng.Uint64())
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "dump.jsonl.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var final archive.Progress
	_, err := archive.Import(context.Background(), memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t),
		Progress: func(p archive.Progress) {
			if p.Final {
				mu.Lock()
				final = p
				mu.Unlock()
			}
		}})
	if err == nil || !strings.Contains(err.Error(), path+": line 11") || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("a bad line in a gzip member: %v, want an error naming line 11, not JSON", err)
	}
	if size := int64(buf.Len()); final.Done > size/2 {
		t.Errorf("read %d bytes of the %d of the file to report a bad line in its first member (%d bytes)", final.Done, size, size)
	}
}
