package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestLoadMarketsReadsEveryExportFormat: --markets takes our own markets
// export in each format `updown export` writes, Parquet (the markets file
// of --split) as JSON Lines and CSV, with every field; a Parquet file of
// another kind is refused saying so.
func TestLoadMarketsReadsEveryExportFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	start := time.Date(2026, 5, 12, 13, 0, 0, 0, time.UTC)
	rate, exp, rebate, tick, ptb := 0.07, 1, 0.2, 0.01, 80123.45
	winner := store.OutcomeUp
	resolved := start.Add(5*time.Minute + 1234*time.Microsecond)
	markets := []store.Market{
		{Slug: "btc-updown-5m-1778590800", MarketID: "1", EventID: "e1", Coin: store.BTC, MarketType: store.M5,
			StartTime: start, EndTime: start.Add(5 * time.Minute), ConditionID: "0xc1", ClobTokenUp: "11", ClobTokenDown: "12",
			Winner: &winner, ResolvedAt: &resolved, UpstreamSlug: "btc-updown-5m-1778590800", TakerFeeRate: &rate, FeeExponent: &exp,
			FeeType: store.FeeTypeCryptoV2, MakerRebateRate: &rebate, TickSize: &tick, TickSizeChanges: []store.TickSizeChange{{Time: start.Add(time.Minute), TickSize: 0.01}},
			ResolutionSource: store.SourceChainlink, PriceToBeat: &ptb, DataSources: []string{store.DataRecorder, "pmxt-v2"}},
		{Slug: "btc-updown-5m-1778591100", MarketID: "2", Coin: store.BTC, MarketType: store.M5,
			StartTime: start.Add(5 * time.Minute), EndTime: start.Add(10 * time.Minute), ConditionID: "0xc2", ClobTokenUp: "21", ClobTokenDown: "22"},
	}
	if err := st.UpsertMarkets(ctx, markets); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, opt transfer.ExportOptions) string {
		t.Helper()
		var buf bytes.Buffer
		if _, err := transfer.Export(ctx, st, &buf, opt); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	want, _, err := archive.LoadMarkets(write("markets.jsonl", transfer.ExportOptions{What: transfer.Markets}))
	if err != nil || len(want) != len(markets) {
		t.Fatalf("markets.jsonl: %d markets, %v", len(want), err)
	}
	for _, f := range []struct {
		name   string
		format transfer.Format
	}{{"markets.csv", transfer.CSV}, {"markets.parquet", transfer.Parquet}} {
		got, _, err := archive.LoadMarkets(write(f.name, transfer.ExportOptions{Format: f.format, What: transfer.Markets}))
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s reads as\n%+v\nwant (as markets.jsonl)\n%+v", f.name, got, want)
		}
	}
	snaps := write("snapshots.parquet", transfer.ExportOptions{Format: transfer.Parquet, What: transfer.Snapshots})
	if _, _, err := archive.LoadMarkets(snaps); err == nil || !strings.Contains(err.Error(), "not an updown markets export") {
		t.Errorf("a snapshots Parquet file as --markets: %v, want it refused", err)
	}
}
