package api_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestRecordTimesAgreeAcrossFormats: a record's time reads the same in
// JSON and CSV, to the microsecond the store keeps, and Parquet's
// timestamp is that instant: snapshots, trades, and markets (whose CSV is
// the export's).
func TestRecordTimesAgreeAcrossFormats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addActivity(t, b.store)
	ctx := t.Context()
	slug, _ := snapshotMarket()
	m, err := b.store.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot and a trade after every other, at instants with a
	// microsecond part that milliseconds would lose.
	at := m.EndTime.Add(-time.Second + 123456*time.Microsecond)
	if _, err := b.store.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: at, CoinPrice: 95001, PriceUp: 0.6, PriceDown: 0.4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.AppendMarketTrades(ctx, slug, []store.MarketTrade{{Time: at.Add(7 * time.Microsecond), Outcome: store.OutcomeUp,
		Price: 0.6, Size: 1, Side: store.SideBuy, TxHash: "0xlast"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what, path, list string
		want             time.Time
	}{
		{"snapshots", "/v1/markets/" + slug + "/snapshots?limit=1", "snapshots", at},
		{"trades", "/v1/markets/" + slug + "/trades?limit=1", "trades", at.Add(7 * time.Microsecond)},
	} {
		js, cs, pq := formsOf(b, tc.path)
		rows := decode[map[string]any](t, js)[tc.list].([]any)
		jsTime, _ := rows[0].(map[string]any)["time"].(string)
		header, csvRows := csvTable(t, cs)
		csvTime := csvRows[0][slices.Index(header, "time")]
		want := tc.want.UTC().Format("2006-01-02T15:04:05.000000Z")
		if jsTime != want || csvTime != want {
			t.Errorf("%s: time in JSON %q, in CSV %q; want %q in both", tc.what, jsTime, csvTime, want)
		}
		var pqTime time.Time
		if tc.what == "trades" {
			pqTime = readParquet[transfer.ParquetTrade](t, pq)[0].Time
		} else {
			pqTime = readParquet[transfer.ParquetSnapshot](t, pq)[0].Time
		}
		if !pqTime.Equal(tc.want) {
			t.Errorf("%s: Parquet time %v, want %v", tc.what, pqTime, tc.want)
		}
	}

	// Markets: the API's JSON and the export's CSV write the same strings.
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.Truncate(time.Second).Add(654321*time.Microsecond), m.UpdatedAt.Truncate(time.Second).Add(987654*time.Microsecond)
	if err := b.store.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	m, err = b.store.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	enc, err := transfer.NewEncoder(&export, transfer.CSV, transfer.Markets)
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(transfer.Record{Market: &m}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	header, rows := csvTable(t, response{status: 200, body: export.Bytes()})
	js := decode[map[string]any](t, b.get(store.Pro, "/v1/markets/"+slug))
	for _, f := range []string{"start_time", "end_time", "resolved_at", "created_at", "updated_at"} {
		cell := rows[0][slices.Index(header, f)]
		if js[f] != cell || len(cell) != len("2006-01-02T15:04:05.000000Z") {
			t.Errorf("market %s: JSON %v, export CSV %q; want the same microsecond string", f, js[f], cell)
		}
	}
}

// TestRowsPagesCarryTheirFields: a page's CSV and Parquet forms, whose
// bodies hold rows alone, carry what else its JSON form says as headers:
// next_cursor (absent after the last page), total, matched and warning,
// so that a walk by cursor and a window's cut work in every form. The
// JSON form has them in its body only.
func TestRowsPagesCarryTheirFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addActivity(t, b.store)
	loadHistory(t, b.store)
	slug, _ := snapshotMarket()
	old := itoa(now.AddDate(0, 0, -40).UnixMilli()) // before PRO's 31-day window
	for _, path := range []string{
		"/v1/markets/" + slug + "/snapshots?limit=2&order=asc",
		"/v1/markets/" + slug + "/snapshots?limit=1000",
		"/v1/markets/" + slug + "/trades?limit=3",
		"/v1/btc/spot/snapshots?limit=5&start_time=" + old,
		"/v1/btc/future/snapshots?limit=1000",
	} {
		js, cs, pq := formsOf(b, path)
		var page struct {
			NextCursor *string `json:"next_cursor"`
			Total      int     `json:"total"`
			Matched    *int    `json:"matched"`
			Warning    string  `json:"warning"`
		}
		if err := json.Unmarshal(js.body, &page); err != nil || js.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, js.status, js.body)
		}
		if h := js.header.Get("X-Total-Count"); h != "" {
			t.Errorf("%s: the JSON form has X-Total-Count %q; its body says it", path, h)
		}
		for form, r := range map[string]response{"CSV": cs, "Parquet": pq} {
			h := r.header
			want := map[string]string{"X-Total-Count": itoa(int64(page.Total)), "X-Warning": page.Warning, "X-Next-Cursor": "", "X-Matched-Count": ""}
			if page.NextCursor != nil {
				want["X-Next-Cursor"] = *page.NextCursor
			}
			if page.Matched != nil {
				want["X-Matched-Count"] = itoa(int64(*page.Matched))
			}
			for name, v := range want {
				if got := h.Get(name); got != v || v == "" && len(h.Values(name)) > 0 {
					t.Errorf("%s as %s: %s %q, want %q (the JSON form's)", path, form, name, got, v)
				}
			}
		}
		if strings.Contains(path, "start_time="+old) && page.Warning == "" {
			t.Errorf("%s: no warning for a start before the window: the test checks none", path)
		}
		if strings.Contains(path, "limit=2&") && page.NextCursor == nil {
			t.Errorf("%s: no next_cursor on a first page of 2: the test checks none", path)
		}
	}
	// A CSV walk by the header's cursor sees every snapshot once.
	path := "/v1/markets/" + slug + "/snapshots?limit=7&order=asc"
	seen := 0
	for r := b.getAccept(store.Pro, path, "text/csv"); ; {
		_, rows := csvTable(t, r)
		seen += len(rows)
		next := r.header.Get("X-Next-Cursor")
		if next == "" {
			if total := r.header.Get("X-Total-Count"); itoa(int64(seen)) != total {
				t.Errorf("a CSV walk by X-Next-Cursor saw %d snapshots of %s", seen, total)
			}
			break
		}
		r = b.getAccept(store.Pro, path+"&cursor="+url.QueryEscape(next), "text/csv")
	}
}

// TestBareFormatWordsAreNotMediaTypes: Accept: csv (json, parquet: a word,
// not a media type) is answered as any Accept the API has no form for, in
// the default JSON with Content-Type application/json, where the word was
// taken for a media type and written back as the Content-Type ("csv",
// which no client reads as CSV). A media type beside the word still counts.
func TestBareFormatWordsAreNotMediaTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	for _, path := range []string{
		"/v1/markets/" + slug + "/snapshots?limit=2", // has CSV and Parquet forms
		"/v1/btc/spot/snapshots?limit=2",             // has CSV and Parquet forms
		"/v1/markets?coin=BTC&limit=2",               // JSON only
	} {
		for _, accept := range []string{"csv", "CSV", "json", "parquet", "csv, json", "csv;q=1, application/json;q=0.1", "application/xml", "garbage"} {
			r := b.getAccept(store.Pro, path, accept)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !json.Valid(r.body) {
				t.Errorf("%s with Accept %q: %d, Content-Type %q; want 200 JSON as application/json", path, accept, r.status, r.header.Get("Content-Type"))
			}
		}
	}
	path := "/v1/markets/" + slug + "/snapshots?limit=2"
	for accept, want := range map[string]string{
		"csv, text/csv":                             "text/csv",
		"json, text/csv;q=0.5":                      "text/csv",
		"parquet, " + transfer.ParquetMediaType:     transfer.ParquetMediaType,
		"csv, text/csv;q=0.5, application/json;q=1": "application/json",
	} {
		r := b.getAccept(store.Pro, path, accept)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != want {
			t.Errorf("Accept %q: %d, Content-Type %q; want 200 %s", accept, r.status, r.header.Get("Content-Type"), want)
		}
	}
}

// TestAcceptOverSeveralLines: Accept sent as several header lines is one
// list (RFC 9110 5.3), negotiated as if sent on one line, where the first
// line alone was read: text/csv;q=0.1 then application/json answered CSV.
func TestAcceptOverSeveralLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	path := "/v1/markets/" + slug + "/snapshots?limit=2"
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{"text/csv;q=0.1", "application/json"}, "application/json"},
		{[]string{"application/json;q=0.1", "text/csv"}, "text/csv"},
		{[]string{"csv", "text/csv"}, "text/csv"},
		{[]string{"application/json;q=0.2", transfer.ParquetMediaType + ";q=0.9", "text/csv;q=0.5"}, transfer.ParquetMediaType},
	} {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", b.keys[store.Pro])
		for _, l := range tc.lines {
			req.Header.Add("Accept", l)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != tc.want {
			t.Errorf("Accept lines %q: %d, Content-Type %q; want 200 %s", tc.lines, res.StatusCode, res.Header.Get("Content-Type"), tc.want)
		}
	}
}
