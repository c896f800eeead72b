package gen

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// discard is a Writer that keeps nothing: it measures generation alone.
type discard struct{}

func (discard) UpsertMarkets(context.Context, []store.Market) error      { return nil }
func (discard) AppendDepth(context.Context, []store.DepthSnapshot) error { return nil }
func (discard) AppendSnapshots(_ context.Context, _ string, s []store.Snapshot) (int, error) {
	return len(s), nil
}
func (discard) AppendMarketTrades(_ context.Context, _ string, t []store.MarketTrade) (int, error) {
	return len(t), nil
}
func (discard) RecordGaps(_ context.Context, _ string, g []store.Gap) (int, error) {
	return len(g), nil
}

// BenchmarkGenerateDefault generates the dev data set, as `updown dev` does
// at start-up (DESIGN 3 allows 5 s for all of start-up; generation should
// take well under 2 s on two cores: go test -bench GenerateDefault -cpu 2).
func BenchmarkGenerateDefault(b *testing.B) {
	cfg := DefaultConfig(testNow())
	b.ReportAllocs()
	var st Stats
	for b.Loop() {
		var err error
		if st, err = Seed(context.Background(), cfg, discard{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Markets), "markets/op")
	b.ReportMetric(float64(st.Snapshots), "snapshots/op")
}

// BenchmarkGenerateDefaultRetained reports the heap the dev data set holds
// once generated, as a memory store that keeps the generated values would
// hold it: the bulk of dev mode's resident memory.
func BenchmarkGenerateDefaultRetained(b *testing.B) {
	cfg := DefaultConfig(testNow())
	var held float64
	for b.Loop() {
		b.StopTimer()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := newRecorder()
		b.StartTimer()
		if _, err := Seed(context.Background(), cfg, r); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
		runtime.KeepAlive(r)
		b.StartTimer()
	}
	b.ReportMetric(held, "MiB-held")
}

// BenchmarkMarket24hr generates one 24hr market at the reference's 300 ms
// cadence with ten-level books: 288,000 snapshots, the longest replay input.
func BenchmarkMarket24hr(b *testing.B) {
	cfg := DefaultConfig(testNow())
	cfg.MaxSnapshotsPerMarket = 0
	cfg.BookLevels = 10
	g := mustNew(b, cfg)
	m, err := g.Market(store.BTC, store.H24, testNow().Add(-48*time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		s, err := g.Snapshots(m)
		if err != nil {
			b.Fatal(err)
		}
		n = len(s)
	}
	b.ReportMetric(float64(n), "snapshots/op")
}
