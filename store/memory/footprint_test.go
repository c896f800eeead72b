package memory_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

var footprintSnapshots = flag.Int("footprint", 100_000, "snapshots TestFootprint loads (dev mode loads about 500000)")

// maxBytesPerSnapshot bounds the heap a snapshot with two 10-level books
// takes; unpacked it would be over 700 bytes.
const maxBytesPerSnapshot = 300

// TestFootprint loads snapshots with books as dev mode does and checks the
// heap they take.
func TestFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("loads many snapshots")
	}
	const perMarket = 1000
	markets := max(*footprintSnapshots/perMarket, 1)
	series := generated(perMarket, 10)

	before := heapInUse()
	start := time.Now()
	s := memory.New()
	for i := range markets {
		m := store.Market{
			Slug: fmt.Sprintf("btc-updown-5m-%d", i), MarketID: fmt.Sprint(i),
			Coin: store.BTC, MarketType: store.M5, StartTime: seriesStart,
		}
		if err := s.UpsertMarkets(t.Context(), []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendSnapshots(t.Context(), m.Slug, series); err != nil {
			t.Fatal(err)
		}
	}
	load := time.Since(start)
	used := heapInUse() - before
	n := markets * perMarket
	perSnapshot := float64(used) / float64(n)
	t.Logf("%d snapshots with two 10-level books: heap %.1f MiB (%.0f B/snapshot), loaded in %v; process RSS %s",
		n, float64(used)/(1<<20), perSnapshot, load.Round(time.Millisecond), rss())
	if perSnapshot > maxBytesPerSnapshot {
		t.Errorf("%.0f bytes of heap a snapshot, want at most %d", perSnapshot, maxBytesPerSnapshot)
	}
	runtime.KeepAlive(s)
}

// heapInUse returns the bytes of live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// rss returns the process's resident set size as /proc reports it, or
// "unknown".
func rss() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return "unknown"
}
