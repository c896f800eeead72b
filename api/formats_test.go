package api_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// formsOf fetches path as JSON, CSV and Parquet.
func formsOf(b *bundle, path string) (js, cs, pq response) {
	return b.getAccept(store.Pro, path, "application/json"), b.getAccept(store.Pro, path, "text/csv"),
		b.getAccept(store.Pro, path, transfer.ParquetMediaType)
}

// csvTable is a CSV answer's header and rows.
func csvTable(t *testing.T, r response) (header []string, rows [][]string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("csv: %d %s", r.status, r.body)
	}
	all, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(all) == 0 {
		t.Fatalf("csv: %v\n%s", err, r.body)
	}
	return all[0], all[1:]
}

// parquetColumns are the top-level column names of a Parquet answer.
func parquetColumns(t *testing.T, r response) []string {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatalf("parquet: %v", err)
	}
	var cols []string
	for _, f := range f.Schema().Fields() {
		cols = append(cols, f.Name())
	}
	return cols
}

// sameFields fails unless the JSON rows' keys plus "slug" (which a JSON
// page carries once, in market.slug), the CSV header and the Parquet
// columns are one set.
func sameFields(t *testing.T, what string, jsonRow map[string]any, header, pqCols []string) {
	t.Helper()
	js := []string{"slug"}
	for k := range jsonRow {
		js = append(js, k)
	}
	slices.Sort(js)
	header, pqCols = slices.Sorted(slices.Values(header)), slices.Sorted(slices.Values(pqCols))
	if !slices.Equal(js, header) || !slices.Equal(js, pqCols) {
		t.Errorf("%s fields differ:\n JSON    %v\n CSV     %v\n Parquet %v", what, js, header, pqCols)
	}
}

// TestMarketTradesFormatsAgree: a trade page in JSON, CSV and Parquet
// carries the same fields, tx_hash among them, with the same values.
func TestMarketTradesFormatsAgree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addActivity(t, b.store)
	slug, _ := snapshotMarket()
	js, cs, pq := formsOf(b, "/v1/markets/"+slug+"/trades?limit=5&offset=3")
	page := decode[marketTradePage](t, js)
	header, rows := csvTable(t, cs)
	pqRows := readParquet[transfer.ParquetTrade](t, pq)
	if len(page.Trades) != 5 || len(rows) != 5 || len(pqRows) != 5 {
		t.Fatalf("%d JSON, %d CSV, %d Parquet rows; want 5 each", len(page.Trades), len(rows), len(pqRows))
	}
	sameFields(t, "trades", page.Trades[0], header, parquetColumns(t, pq))
	txCol := slices.Index(header, "tx_hash")
	all := activityTrades()
	for i, tr := range page.Trades {
		want := all[len(all)-4-i].TxHash
		if tr["tx_hash"] != want || txCol < 0 || rows[i][txCol] != want || pqRows[i].TxHash != want {
			t.Errorf("row %d: tx_hash JSON %v, CSV %v, Parquet %q; want %q", i, tr["tx_hash"], fmt.Sprint(rows[i]), pqRows[i].TxHash, want)
		}
	}
}
