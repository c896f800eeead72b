package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/updown/updown/jobs/book"
)

// TestSortedReadCountsBothPasses reads a file out of order in time order:
// the bytes it counts for the import's progress go on while its frames
// are handed over, to twice the file's size (it is read twice), where
// they were all counted by the first pass, before any frame was folded,
// and a progress bar stood at 100% while the import did its work.
func TestSortedReadCountsBothPasses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	var lines []byte
	for i := range 3000 {
		ts := 1778584200000 + int64((i*7919)%3000)*100 // out of order
		lines = fmt.Appendf(lines, `{"event_type":"price_change","market":"0x1","timestamp":"%d","price_changes":[{"asset_id":"1","price":"0.5","size":"%d","side":"BUY"}]}`+"\n", ts, i+1)
	}
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(len(lines))
	var counted atomic.Int64
	var atFirst int64 = -1
	frames := 0
	err := readWSJSONLSorted(context.Background(), path, &counted, func(evs []book.Event, pos Pos) error {
		if frames++; frames == 1 {
			atFirst = counted.Load()
		}
		return nil
	}, func(coinPoint) {})
	if err != nil {
		t.Fatal(err)
	}
	if frames != 3000 {
		t.Fatalf("%d frames handed over, want 3000", frames)
	}
	// The first pass counts the file whole; the second its share a frame,
	// the first frame's before that frame is handed over.
	if want := size + size/3000; atFirst != want {
		t.Errorf("counted %d bytes when the first frame was handed over, want %d (the first pass's %d and one frame's share)", atFirst, want, size)
	}
	if counted.Load() != 2*size {
		t.Errorf("counted %d bytes at the end, want %d (the file's %d bytes, read twice)", counted.Load(), 2*size, size)
	}
}

// TestSortedReadKeepsLineOrder reads in time order a file whose frames
// share times: those of one time are handed over in the file's order.
func TestSortedReadKeepsLineOrder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	var lines []byte
	for i := range 5000 {
		ts := 1778584200000 + int64(4-i%5)*1000 // five times, out of order
		lines = fmt.Appendf(lines, `{"event_type":"price_change","market":"0x1","timestamp":"%d","price_changes":[{"asset_id":"1","price":"0.5","size":"%d","side":"BUY"}]}`+"\n", ts, i+1)
	}
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	var prevAt int64
	var prevLine int64
	err := readWSJSONLSorted(context.Background(), path, nil, func(evs []book.Event, pos Pos) error {
		at := evs[0].Time.UnixNano()
		if at < prevAt || (at == prevAt && pos.Line <= prevLine) {
			t.Fatalf("line %d at %d handed over after line %d at %d", pos.Line, at, prevLine, prevAt)
		}
		prevAt, prevLine = at, pos.Line
		return nil
	}, func(coinPoint) {})
	if err != nil {
		t.Fatal(err)
	}
}
