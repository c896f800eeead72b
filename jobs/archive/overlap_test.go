package archive_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestFilesOfOneHour imports dumps that cover the same stretch of time,
// one per market (as per-market or per-coin captures are kept): the
// market of the second file is imported whole, as alone, though the
// first file's events have taken the input's clock past its end before
// the second is read.
func TestFilesOfOneHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	btc := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	eth := fxMarket(store.ETH, fxHour.Add(10*time.Minute), 2)
	var first []fxEvent
	// The first file: its market, and enough of other markets' events
	// (skipped, but counted) that the second file's are read where the
	// import looks for markets that ended.
	first = append(first, fxStream(btc, btc.StartTime.Add(-20*time.Second), btc.EndTime.Add(10*time.Second), 1, 0)...)
	for n := 3; len(first) < 6000; n++ {
		o := fxMarket(store.SOL, fxHour.Add(10*time.Minute), n)
		first = append(first, fxStream(o, o.StartTime.Add(-20*time.Second), o.EndTime.Add(10*time.Second), uint64(n), 0)...)
	}
	second := fxStream(eth, eth.StartTime.Add(-20*time.Second), eth.EndTime, 2, 0)
	if len(first) >= 8192 || len(first)+len(second) <= 8192 {
		t.Fatalf("the fixture's counts (%d, %d) miss the look for ended markets", len(first), len(second))
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "btc.jsonl"), filepath.Join(dir, "eth.jsonl")
	writeJSONL(t, a, first)
	writeJSONL(t, b, second)
	prices := func() *archive.CoinPrices {
		cp := archive.NewCoinPrices()
		for _, c := range []store.Coin{store.BTC, store.ETH} {
			writeKlines(t, cp, c, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 3000 + float64(at.Unix()%97) })
		}
		return cp
	}
	imp := func(files ...string) []store.Snapshot {
		t.Helper()
		st := memory.New()
		_, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{btc, eth}, Prices: prices()})
		if err != nil {
			t.Fatalf("import %v: %v", files, err)
		}
		return snapshotsOf(t, st, eth.Slug)
	}
	want, got := imp(b), imp(a, b)
	if len(want) < 500 || len(got) != len(want) {
		t.Fatalf("the second file's market: %d snapshots beside the first file, %d alone", len(got), len(want))
	}
}
