package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/updown/updown/jobs/book"
)

// TestSortedReadLeavesNoTempFile reads in time order a compressed file
// out of order, which is read again from a temporary copy of its lines:
// the copy has no name in TMPDIR while it is read (it is removed once
// open), so a process killed then leaves nothing behind, where the copy
// was removed only when the read returned.
func TestSortedReadLeavesNoTempFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file cannot be removed on Windows")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	path := filepath.Join(t.TempDir(), "dump.jsonl.gz")
	var raw bytes.Buffer
	zw := gzip.NewWriter(&raw)
	for i := range 300 {
		ts := 1778584200000 + int64((i*7919)%300)*100 // out of order
		fmt.Fprintf(zw, `{"event_type":"price_change","market":"0x1","timestamp":"%d","price_changes":[{"asset_id":"1","price":"0.5","size":"%d","side":"BUY"}]}`+"\n", ts, i+1)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	frames := 0
	err := readWSJSONLSorted(context.Background(), path, nil, func(evs []book.Event, pos Pos) error {
		if frames++; frames == 1 {
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("the temporary copy %s has a name in TMPDIR while it is read: a killed import leaves it", e.Name())
			}
		}
		return nil
	}, func(coinPoint) {})
	if err != nil {
		t.Fatal(err)
	}
	if frames != 300 {
		t.Fatalf("%d frames handed over, want 300", frames)
	}
}
