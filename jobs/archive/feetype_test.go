package archive_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
)

// TestLoadMarketsParquetWithoutFeeType reads a markets Parquet file written
// before fee_type existed (no such column): its markets load with every
// other field, their fee type unknown ("").
func TestLoadMarketsParquetWithoutFeeType(t *testing.T) {
	t.Parallel()
	// The columns of an older export that this test needs; no fee_type.
	type oldMarket struct {
		Slug         string    `parquet:"slug"`
		MarketID     string    `parquet:"market_id"`
		Coin         string    `parquet:"coin"`
		MarketType   string    `parquet:"market_type"`
		StartTime    time.Time `parquet:"start_time,timestamp(microsecond:utc)"`
		EndTime      time.Time `parquet:"end_time,timestamp(microsecond:utc)"`
		ConditionID  string    `parquet:"condition_id"`
		TakerFeeRate *float64  `parquet:"taker_fee_rate,optional"`
		FeeExponent  *int64    `parquet:"fee_exponent,optional"`
	}
	start := time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC)
	rate, exp := 0.25, int64(2)
	path := filepath.Join(t.TempDir(), "markets.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := parquet.Write(f, []oldMarket{{Slug: "btc-updown-15m-1772000100", MarketID: "7", Coin: "BTC", MarketType: "15m",
		StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "0xc7", TakerFeeRate: &rate, FeeExponent: &exp}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ms, _, err := archive.LoadMarkets(path)
	if err != nil || len(ms) != 1 {
		t.Fatalf("LoadMarkets: %d markets, %v", len(ms), err)
	}
	m := ms[0]
	if m.Slug != "btc-updown-15m-1772000100" || m.MarketType != store.M15 || m.FeeType != "" ||
		m.TakerFeeRate == nil || *m.TakerFeeRate != 0.25 || m.FeeExponent == nil || *m.FeeExponent != 2 || !m.EndTime.Equal(start.Add(15*time.Minute)) {
		t.Errorf("old markets file read as %+v", m)
	}
}
