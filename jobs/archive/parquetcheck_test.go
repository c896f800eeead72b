package archive_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// writeParquetRows writes rows as an `updown export` Parquet file.
func writeParquetRows[T any](t *testing.T, name string, rows []T) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	pw := transfer.NewParquetWriter[T](f)
	for _, r := range rows {
		if err := pw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestImportExportParquetRefusesWhatOtherFormatsRefuse: a Parquet export
// with a NaN or an infinity, or a market without a known coin, is refused
// as a JSON Lines or CSV import refuses it, naming the file and the row,
// and the bad row is not stored (where it was stored as it was).
func TestImportExportParquetRefusesWhatOtherFormatsRefuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slug := "btc-updown-15m-1772366400"
	good := transfer.ParquetMarket{Slug: slug, MarketID: "1", Coin: "BTC", MarketType: "15m", StartTime: start,
		EndTime: start.Add(15 * time.Minute), ConditionID: "0xc", CreatedAt: start, UpdatedAt: start}
	bad := good
	bad.Slug, bad.MarketID, bad.Coin = "doge-updown-15m-1772366400", "2", "DOGE"
	markets := filepath.Join(dir, "markets.parquet")
	writeParquetRows(t, markets, []transfer.ParquetMarket{good, bad})
	dst := memory.New()
	_, err := archive.ImportExportParquet(ctx, dst, markets)
	if err == nil || !strings.Contains(err.Error(), markets+": row 2:") || !strings.Contains(err.Error(), "DOGE") {
		t.Errorf("market with coin DOGE: %v, want a refusal naming %s, row 2 and the coin", err, markets)
	}
	if _, err := dst.GetMarket(ctx, bad.Slug); err == nil {
		t.Error("the DOGE market was stored")
	}
	if _, err := archive.ImportExportParquet(ctx, dst, writeMarketsOnly(t, dir, good)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		snap transfer.ParquetBookSnapshot
	}{
		{"nan.parquet", transfer.ParquetBookSnapshot{Slug: slug, Time: start.Add(2 * time.Second), CoinPrice: math.NaN(), PriceUp: 0.5, PriceDown: 0.5}},
		{"inf.parquet", transfer.ParquetBookSnapshot{Slug: slug, Time: start.Add(2 * time.Second), CoinPrice: 1, PriceUp: math.Inf(1), PriceDown: 0.5}},
		{"level.parquet", transfer.ParquetBookSnapshot{Slug: slug, Time: start.Add(2 * time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5,
			BookUpBids: []transfer.ParquetLevel{{Price: 0.5, Size: math.Inf(-1)}}}},
	} {
		name := filepath.Join(dir, tc.name)
		ok := transfer.ParquetBookSnapshot{Slug: slug, Time: start.Add(time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5}
		writeParquetRows(t, name, []transfer.ParquetBookSnapshot{ok, tc.snap})
		_, err := archive.ImportExportParquet(ctx, dst, name)
		if err == nil || !strings.Contains(err.Error(), name+": row 2:") || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("%s: %v, want a refusal naming the file, row 2 and the number", tc.name, err)
		}
		snaps, _, err := dst.ListSnapshots(ctx, slug, store.SnapshotQuery{WithBooks: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			if s.Time.Equal(tc.snap.Time) {
				t.Errorf("%s: the bad snapshot was stored: %+v", tc.name, s)
			}
		}
	}

	trades := filepath.Join(dir, "trades.parquet")
	writeParquetRows(t, trades, []transfer.ParquetTrade{{Slug: slug, Time: start, Outcome: "Up", Side: "BUY", Price: math.NaN(), Size: 1}})
	if _, err := archive.ImportExportParquet(ctx, dst, trades); err == nil || !strings.Contains(err.Error(), trades+": row 1:") {
		t.Errorf("a NaN trade price: %v, want a refusal naming the file and row 1", err)
	}
	gaps := filepath.Join(dir, "gaps.parquet")
	writeParquetRows(t, gaps, []transfer.ParquetGap{{Slug: slug, From: start.Add(time.Minute), To: start, Kind: "snapshots"}})
	if _, err := archive.ImportExportParquet(ctx, dst, gaps); err == nil || !strings.Contains(err.Error(), gaps+": row 1:") {
		t.Errorf("a gap ending before it starts: %v, want a refusal naming the file and row 1", err)
	}
}

func writeMarketsOnly(t *testing.T, dir string, m transfer.ParquetMarket) string {
	t.Helper()
	name := filepath.Join(dir, "good-markets.parquet")
	writeParquetRows(t, name, []transfer.ParquetMarket{m})
	return name
}

// TestLoadMarketsParquetChecksMarkets: a markets file given to `import
// events --markets` as Parquet is checked as one in JSON Lines or CSV is:
// a market with a NaN or an unknown coin is refused, naming the file and
// the row, where it was taken as it was.
func TestLoadMarketsParquetChecksMarkets(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nan := math.NaN()
	good := transfer.ParquetMarket{Slug: "btc-updown-15m-1772366400", MarketID: "1", Coin: "BTC", MarketType: "15m", StartTime: start,
		EndTime: start.Add(15 * time.Minute), ConditionID: "0xc"}
	for _, tc := range []struct {
		name string
		bad  func(*transfer.ParquetMarket)
		want string
	}{
		{"coin", func(m *transfer.ParquetMarket) { m.Coin = "DOGE" }, "DOGE"},
		{"nan", func(m *transfer.ParquetMarket) { m.MakerRebateRate = &nan }, "maker_rebate_rate"},
	} {
		bad := good
		bad.Slug, bad.MarketID = "eth-updown-15m-1772366400", "2"
		tc.bad(&bad)
		name := filepath.Join(t.TempDir(), "markets.parquet")
		writeParquetRows(t, name, []transfer.ParquetMarket{good, bad})
		ms, _, err := archive.LoadMarkets(name)
		if err == nil || !strings.Contains(err.Error(), name+": row 2") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %d markets, %v; want a refusal naming the file, row 2 and %s", tc.name, len(ms), err, tc.want)
		}
	}
}
