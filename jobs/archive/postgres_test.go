package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestPostgresImport runs imports on Postgres, one transaction each: a
// failed one leaves the database as it was; a good one keeps the rows the
// recorder stored (recorded wins), adds its source to the market, and
// fills only the instants the recorder missed.
func TestPostgresImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := pgtest.NewStore(t)
	fx := newFxSet()
	dir := t.TempDir()
	pq := filepath.Join(dir, "2026-05-12T13.parquet")
	writePMXT(t, pq, pmxtRows(fx.events))

	// The recorder stored the market and a few instants of it.
	if err := st.UpsertMarkets(ctx, []store.Market{fx.known}); err != nil {
		t.Fatal(err)
	}
	recorded := []store.Snapshot{}
	for i := range 5 {
		at := fx.known.StartTime.Add(time.Duration(30+i) * 300 * time.Millisecond)
		recorded = append(recorded, store.Snapshot{Time: at, CoinPrice: 1, PriceUp: 0.99, PriceDown: 0.99,
			BookUp: &store.Book{Asks: []store.Level{{Price: 0.99, Size: 1}}}, BookDown: &store.Book{Asks: []store.Level{{Price: 0.99, Size: 1}}}})
	}
	if _, err := st.AppendSnapshots(ctx, fx.known.Slug, recorded); err != nil {
		t.Fatal(err)
	}

	// A failed import (its second file is bad): nothing changes.
	bad := filepath.Join(dir, "2026-05-12T14.parquet")
	rows := pmxtRows(fxStream(fx.known, fxHour.Add(time.Hour), fxHour.Add(time.Hour+time.Minute), 9, 0))
	cheap := "cheap" // a price that is no number
	rows[len(rows)/2].Price = &cheap
	writePMXT(t, bad, rows)
	_, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{pq, bad}, Markets: []store.Market{fx.known, fx.unknown}, Prices: fx.klines(t)})
	if err == nil {
		t.Fatal("imported a bad file")
	}
	if _, n, _ := st.ListSnapshots(ctx, fx.known.Slug, store.SnapshotQuery{}); n != len(recorded) {
		t.Fatalf("a failed import left %d snapshots, want the %d recorded", n, len(recorded))
	}
	if _, err := st.GetMarket(ctx, fx.unknown.Slug); err == nil {
		t.Fatal("a failed import left a market")
	}
	if m, _ := st.GetMarket(ctx, fx.known.Slug); !slices.Equal(m.DataSources, []string{store.DataRecorder}) {
		t.Fatalf("a failed import changed the sources: %v", m.DataSources)
	}

	sum, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{pq}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := snapshotsOf(t, st, fx.known.Slug)
	if int64(len(got)) != sum.Import.Snapshots+int64(len(recorded)) {
		t.Errorf("%d snapshots stored, import says %d new beside %d recorded", len(got), sum.Import.Snapshots, len(recorded))
	}
	for _, r := range recorded {
		i := slices.IndexFunc(got, func(s store.Snapshot) bool { return s.Time.Equal(r.Time) })
		if i < 0 || got[i].PriceUp != 0.99 {
			t.Errorf("the recorded snapshot at %s was not kept", r.Time)
		}
	}
	m, err := st.GetMarket(ctx, fx.known.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.DataSources, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Errorf("data sources %v, want [recorder pmxt-v2]", m.DataSources)
	}
	imps, err := st.ListImports(ctx)
	if err != nil || len(imps) != 1 || imps[0].Source != "pmxt-v2" || !imps[0].From.Equal(fxHour) || !imps[0].To.Equal(fxHour.Add(time.Hour)) {
		t.Errorf("imports %+v %v", imps, err)
	}
	// Again: nothing changes.
	again, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{pq}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	if err != nil || again.Fresh {
		t.Fatalf("re-run: %+v %v", again, err)
	}
	if n := len(snapshotsOf(t, st, fx.known.Slug)); n != len(got) {
		t.Errorf("a re-run changed the snapshots: %d, was %d", n, len(got))
	}
}

// TestParquetRoundTrip exports an imported market as Parquet (markets,
// snapshots with books, trades, gaps) and imports the files into an empty
// store: the same market, snapshots, trades and gaps.
func TestParquetRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, jsonl, fx.events)
	src := memory.New()
	if _, err := archive.Import(ctx, src, archive.Options{Format: archive.WSJSONL, Files: []string{jsonl}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	// The recorder extended the market, and its trade feed was down for a
	// while: the sources and a gap of each kind must come back.
	m, err := src.GetMarket(ctx, fx.known.Slug)
	if err != nil {
		t.Fatal(err)
	}
	m.DataSources = []string{store.DataRecorder, "ws-jsonl"}
	if err := src.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	tradesGap := store.Gap{From: fx.known.StartTime.Add(2 * time.Second), To: fx.known.StartTime.Add(9 * time.Second), Kind: store.GapTrades}
	if _, err := src.RecordGaps(ctx, fx.known.Slug, []store.Gap{tradesGap}); err != nil {
		t.Fatal(err)
	}
	dst := memory.New()
	for _, what := range []transfer.What{transfer.Markets, transfer.Snapshots, transfer.Trades, transfer.Gaps} {
		var buf bytes.Buffer
		if _, err := transfer.Export(ctx, src, &buf, transfer.ExportOptions{Format: transfer.Parquet, What: what, Books: true}); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, string(what)+".parquet")
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if kind, err := archive.KindOfParquet(name); err != nil || string(kind) != string(what) {
			t.Fatalf("%s: kind %q %v", what, kind, err)
		}
		if _, err := archive.ImportExportParquet(ctx, dst, name); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	want, got := snapshotsOf(t, src, fx.known.Slug), snapshotsOf(t, dst, fx.known.Slug)
	if len(want) == 0 || len(want) != len(got) {
		t.Fatalf("round trip: %d snapshots, want %d", len(got), len(want))
	}
	for i := range want {
		if !want[i].Time.Equal(got[i].Time) || !sameSnapshot(want[i], got[i]) || want[i].CoinPrice != got[i].CoinPrice {
			t.Fatalf("snapshot %d: %s, want %s", i, fmtSnap(got[i]), fmtSnap(want[i]))
		}
	}
	wt, _, _ := src.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
	gt, _, _ := dst.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
	if len(wt) == 0 || !slices.Equal(wt, gt) {
		t.Errorf("trades: %d, want %d", len(gt), len(wt))
	}
	wg, _ := src.ListGaps(ctx, fx.known.Slug)
	gg, _ := dst.ListGaps(ctx, fx.known.Slug)
	if !slices.ContainsFunc(wg, func(g store.Gap) bool { return g.Kind == store.GapSnapshots }) || !slices.Contains(wg, tradesGap) ||
		!slices.EqualFunc(wg, gg, func(a, b store.Gap) bool { return a.From.Equal(b.From) && a.To.Equal(b.To) && a.Kind == b.Kind }) {
		t.Errorf("gaps %v, want %v", gg, wg)
	}
	wm, _ := src.GetMarket(ctx, fx.known.Slug)
	gm, err := dst.GetMarket(ctx, fx.known.Slug)
	if err != nil || gm.ConditionID != wm.ConditionID || gm.ClobTokenUp != wm.ClobTokenUp || len(gm.TickSizeChanges) != len(wm.TickSizeChanges) {
		t.Errorf("market %+v, want %+v", gm, wm)
	}
	if !slices.Equal(gm.DataSources, []string{store.DataRecorder, "ws-jsonl"}) {
		t.Errorf("data sources %q, want [recorder ws-jsonl]", gm.DataSources)
	}
}

// TestParquetImportKeepsAMarketNewerThanTheFile: a markets Parquet file
// exported before a market resolved does not take the resolution back
// from a store that has it (the row is older by updated_at).
func TestParquetImportKeepsAMarketNewerThanTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 12, 11, 10, 0, 0, time.UTC)
	winner, end := store.OutcomeUp, 81010.5
	resolvedAt := start.Add(5*time.Minute + 12*time.Second)
	resolved := store.Market{Slug: "btc-updown-5m-1778584200", MarketID: "2229686", EventID: "473573", Coin: store.BTC,
		MarketType: "5m", StartTime: start, EndTime: start.Add(5 * time.Minute), ConditionID: "0xa5c6",
		ClobTokenUp: "1", ClobTokenDown: "2", Winner: &winner, CoinPriceEnd: &end, ResolvedAt: &resolvedAt,
		CreatedAt: start.Add(-time.Hour), UpdatedAt: resolvedAt.Add(time.Second)}
	stale := resolved
	stale.Winner, stale.CoinPriceEnd, stale.ResolvedAt = nil, nil, nil
	stale.UpdatedAt = start.Add(time.Minute)
	src := memory.New()
	if err := src.UpsertMarkets(ctx, []store.Market{stale}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, src, &buf, transfer.ExportOptions{Format: transfer.Parquet, What: transfer.Markets}); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "markets.parquet")
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := memory.New()
	if err := dst.UpsertMarkets(ctx, []store.Market{resolved}); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.ImportExportParquet(ctx, dst, name); err != nil {
		t.Fatal(err)
	}
	got, err := dst.GetMarket(ctx, resolved.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if got.Winner == nil || got.ResolvedAt == nil || !got.UpdatedAt.Equal(resolved.UpdatedAt) {
		t.Fatalf("an older markets file took back the resolution: winner %v resolved_at %v updated_at %v", got.Winner, got.ResolvedAt, got.UpdatedAt)
	}
}
