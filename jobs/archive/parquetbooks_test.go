package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestParquetRoundTripKeepsBooks: snapshots exported as Parquet and
// imported keep their books as the store has them: an up book only, a
// down book only, books recorded without levels, and no books, where
// every snapshot with any level came back with both books and one whose
// books had no levels came back with none.
func TestParquetRoundTripKeepsBooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	book := func() *store.Book {
		return &store.Book{Bids: []store.Level{{Price: 0.5, Size: 10}, {Price: 0.49, Size: 1}}, Asks: []store.Level{{Price: 0.52, Size: 3}}}
	}
	cases := []struct {
		name     string
		up, down *store.Book
	}{
		{"both books", book(), book()},
		{"up book only", book(), nil},
		{"down book only", nil, book()},
		{"books without levels", &store.Book{}, &store.Book{}},
		{"one book without levels", &store.Book{}, nil},
		{"no books", nil, nil},
	}
	src := memory.New()
	m := store.Market{Slug: "btc-updown-15m-1772366400", MarketID: "1", Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "0xc"}
	if err := src.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	snaps := make([]store.Snapshot, len(cases))
	for i, tc := range cases {
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i+1)*time.Second + 7*time.Microsecond), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5, BookUp: tc.up, BookDown: tc.down}
	}
	if _, err := src.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := memory.New()
	for _, what := range []transfer.What{transfer.Markets, transfer.Snapshots} {
		var buf bytes.Buffer
		if _, err := transfer.Export(ctx, src, &buf, transfer.ExportOptions{Format: transfer.Parquet, What: what, Books: true}); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, string(what)+".parquet")
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := archive.ImportExportParquet(ctx, dst, name); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := dst.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil || len(got) != len(cases) {
		t.Fatalf("%d snapshots imported (%v), want %d", len(got), err, len(cases))
	}
	has := func(b *store.Book) bool { return b != nil }
	for i, tc := range cases {
		if has(got[i].BookUp) != has(tc.up) || has(got[i].BookDown) != has(tc.down) ||
			tc.up != nil && !slices.Equal(got[i].BookUp.Bids, tc.up.Bids) || tc.down != nil && !slices.Equal(got[i].BookDown.Asks, tc.down.Asks) {
			t.Errorf("%s: imported as up %+v, down %+v; want up %+v, down %+v", tc.name, got[i].BookUp, got[i].BookDown, tc.up, tc.down)
		}
	}
}

// TestParquetSnapshotsWithoutRecordedColumns reads a snapshots file
// written before book_up_recorded and book_down_recorded: a side with
// levels is a book, a side without is none.
func TestParquetSnapshotsWithoutRecordedColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type oldSnapshot struct {
		Slug         string                  `parquet:"slug,dict"`
		Time         time.Time               `parquet:"time,timestamp(microsecond:utc),delta"`
		CoinPrice    float64                 `parquet:"coin_price"`
		PriceUp      float64                 `parquet:"price_up"`
		PriceDown    float64                 `parquet:"price_down"`
		BookUpBids   []transfer.ParquetLevel `parquet:"book_up_bids,list"`
		BookUpAsks   []transfer.ParquetLevel `parquet:"book_up_asks,list"`
		BookDownBids []transfer.ParquetLevel `parquet:"book_down_bids,list"`
		BookDownAsks []transfer.ParquetLevel `parquet:"book_down_asks,list"`
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slug := "btc-updown-15m-1772366400"
	dst := memory.New()
	if err := dst.UpsertMarkets(ctx, []store.Market{{Slug: slug, MarketID: "1", Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "0xc"}}); err != nil {
		t.Fatal(err)
	}
	lv := []transfer.ParquetLevel{{Price: 0.5, Size: 1}}
	name := filepath.Join(t.TempDir(), "snapshots.parquet")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := parquet.Write(f, []oldSnapshot{
		{Slug: slug, Time: start.Add(time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5, BookUpBids: lv, BookDownAsks: lv},
		{Slug: slug, Time: start.Add(2 * time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5, BookUpBids: lv},
		{Slug: slug, Time: start.Add(3 * time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5},
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.ImportExportParquet(ctx, dst, name); err != nil {
		t.Fatal(err)
	}
	got, _, err := dst.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil || len(got) != 3 {
		t.Fatalf("%d snapshots imported (%v), want 3", len(got), err)
	}
	for i, want := range [][2]bool{{true, true}, {true, false}, {false, false}} {
		if (got[i].BookUp != nil) != want[0] || (got[i].BookDown != nil) != want[1] {
			t.Errorf("row %d: up %+v, down %+v; want books %v", i+1, got[i].BookUp, got[i].BookDown, want)
		}
	}
	if got[0].BookUp == nil || len(got[0].BookUp.Bids) != 1 || got[0].BookDown == nil || len(got[0].BookDown.Asks) != 1 {
		t.Errorf("row 1's levels: up %+v, down %+v", got[0].BookUp, got[0].BookDown)
	}
}
