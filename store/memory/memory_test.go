package memory_test

import (
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memory.New()
		t.Cleanup(s.Close)
		return s
	})
}

// seriesStart is when the generated series begin.
var seriesStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// generated returns n snapshots of one market, 300 ms apart, with books
// of the given depth shaped like Polymarket's: prices on a 0.01 tick, sizes
// to the cent.
func generated(n, depth int) []store.Snapshot {
	snaps := make([]store.Snapshot, n)
	for i := range snaps {
		up := 0.01 * float64(20+i%60)
		snaps[i] = store.Snapshot{
			Time:      seriesStart.Add(time.Duration(i) * 300 * time.Millisecond),
			CoinPrice: 97000 + float64(i%1000)/100,
			PriceUp:   up,
			PriceDown: 1 - up,
			BookUp:    generatedBook(i, depth),
			BookDown:  generatedBook(i+7, depth),
		}
	}
	return snaps
}

func generatedBook(seed, depth int) *store.Book {
	b := &store.Book{Bids: make([]store.Level, depth), Asks: make([]store.Level, depth)}
	mid := 20 + seed%60
	for l := range depth {
		size := float64((seed*31+l*977)%500000) / 100
		b.Bids[l] = store.Level{Price: float64(mid-l-1) / 100, Size: size}
		b.Asks[l] = store.Level{Price: float64(mid+l+1) / 100, Size: size + 1}
	}
	return b
}

func BenchmarkListSnapshots(b *testing.B) {
	s := memory.New()
	m := store.Market{Slug: "btc-updown-5m-1748779200", MarketID: "1", Coin: store.BTC, MarketType: store.M5, StartTime: seriesStart}
	ctx := b.Context()
	if err := s.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AppendSnapshots(ctx, m.Slug, generated(3000, 10)); err != nil {
		b.Fatal(err)
	}
	q := store.SnapshotQuery{Limit: 1000, Offset: 1000, WithBooks: true}
	b.ReportAllocs()
	for b.Loop() {
		snaps, total, err := s.ListSnapshots(ctx, m.Slug, q)
		if err != nil || len(snaps) != 1000 || total != 3000 {
			b.Fatalf("got %d snapshots, total %d, error %v", len(snaps), total, err)
		}
	}
}
