package transfer_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// infiniteBooks is a source whose snapshots' Down books have an infinite
// size: what the stores refuse to write (in a snapshot, as in a trade),
// but an export still meets in a database an older build wrote.
type infiniteBooks struct{ *memory.Store }

func (s infiniteBooks) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	snaps, n, err := s.Store.ListSnapshots(ctx, slug, q)
	for i := range snaps {
		if b := snaps[i].BookDown; b != nil && len(b.Asks) > 0 {
			b.Asks[0].Size = math.Inf(1)
		}
	}
	return snaps, n, err
}

// TestExportRefusesNonFinite: a stored NaN or infinity (which no import
// takes back; stores refuse one in a snapshot or a trade) stops an export in every format with an error naming the
// record and the field, where a Parquet export wrote it and JSON Lines and
// CSV said only "not a finite number".
func TestExportRefusesNonFinite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nan := math.NaN()
	src := infiniteBooks{memory.New()}
	markets := []store.Market{
		{Slug: "btc-updown-15m-1772366400", MarketID: "1", Coin: store.BTC, MarketType: store.M15, StartTime: start, EndTime: start.Add(15 * time.Minute), MakerRebateRate: &nan},
		{Slug: "eth-updown-15m-1772366400", MarketID: "2", Coin: store.ETH, MarketType: store.M15, StartTime: start, EndTime: start.Add(15 * time.Minute)},
	}
	if err := src.UpsertMarkets(ctx, markets); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AppendSnapshots(ctx, markets[1].Slug, []store.Snapshot{{Time: start, CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5,
		BookDown: &store.Book{Asks: []store.Level{{Price: 0.5, Size: 1}}}}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []transfer.Format{transfer.JSONL, transfer.CSV, transfer.Parquet} {
		for _, c := range []struct {
			what  transfer.What
			coin  store.Coin
			wants []string
		}{
			{transfer.Markets, store.BTC, []string{markets[0].Slug, "maker_rebate_rate", "not a finite number"}},
			{transfer.Snapshots, store.ETH, []string{markets[1].Slug, "orderbook_down", "not a finite number"}},
		} {
			var buf bytes.Buffer
			_, err := transfer.Export(ctx, src, &buf, transfer.ExportOptions{Format: f, What: c.what, Books: true, Filter: store.MarketFilter{Coin: c.coin}})
			for _, w := range c.wants {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s export of %s: %v, want an error naming %q", f, c.what, err, w)
					break
				}
			}
		}
	}
}
