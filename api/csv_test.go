package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// getWith sends a GET with extra headers through a transport that leaves
// compression to the test.
func (b *bundle) getWith(tier store.Tier, path string, headers map[string]string) response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	req.Header.Set("X-API-Key", b.keys[tier])
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	res, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: body}
}

func TestSnapshotsAsCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	path := "/v1/markets/" + slug + "/snapshots?include_orderbook=true&limit=5"
	// Fill the page cache with the JSON form first: CSV must not be served from it.
	jsonPage := decode[snapshotResp](t, b.get(store.Pro, path))
	r := b.getWith(store.Pro, path, map[string]string{"Accept": "text/csv"})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(rows) != 6 {
		t.Fatalf("%d rows, %v:\n%s", len(rows), err, r.body)
	}
	if strings.Join(rows[0], ",") != "slug,time,coin_price,price_up,price_down,orderbook_up,orderbook_down" {
		t.Errorf("header = %v", rows[0])
	}
	// The CSV is the export format: it decodes to the very snapshots the
	// JSON page holds, newest first.
	dec, err := transfer.NewDecoder(bytes.NewReader(r.body), transfer.CSV)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		rec, err := dec.Decode()
		if err != nil {
			t.Fatal(err)
		}
		want := jsonPage.Snapshots[i]
		got, _ := time.Parse(time.RFC3339Nano, want["time"].(string))
		if rec.Slug != slug || !rec.Snapshot.Time.Equal(got) || rec.Snapshot.PriceUp != want["price_up"] || rec.Snapshot.CoinPrice != want["coin_price"] {
			t.Errorf("row %d = %+v, JSON has %v", i, rec.Snapshot, want)
		}
		if i == 1 && (rec.Snapshot.BookUp == nil || len(rec.Snapshot.BookUp.Asks) != 2 || rec.Snapshot.BookUp.Asks[0].Size != 200.5) {
			t.Errorf("row 1 book = %+v", rec.Snapshot.BookUp)
		}
	}
	if _, err := dec.Decode(); err != io.EOF {
		t.Errorf("after 5 rows: %v", err)
	}

	// Errors stay JSON envelopes.
	e := b.getWith(store.Pro, "/v1/markets/btc-updown-5m-1/snapshots", map[string]string{"Accept": "text/csv"})
	wantError(t, e, http.StatusNotFound, "RESOURCE_NOT_FOUND")
	if !strings.HasPrefix(e.header.Get("Content-Type"), "application/json") {
		t.Errorf("error content type %q", e.header.Get("Content-Type"))
	}
	// Routes without a CSV form answer JSON.
	list := b.getWith(store.Pro, "/v1/markets?coin=BTC&limit=1", map[string]string{"Accept": "text/csv"})
	if list.status != http.StatusOK || !strings.HasPrefix(list.header.Get("Content-Type"), "application/json") || !json.Valid(list.body) {
		t.Errorf("list with Accept: text/csv: %d %s", list.status, list.header.Get("Content-Type"))
	}
}

func TestDepthHistoryAsCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := now.Add(-time.Minute).Truncate(time.Millisecond)
	if err := b.store.AppendDepth(t.Context(), []store.DepthSnapshot{{Symbol: "BTCUSDT", Kind: store.Spot, Time: at, CoinPrice: 95000.5,
		Bids: []store.DepthLevel{{Price: 95000, Quantity: 1.5}}, Asks: []store.DepthLevel{{Price: 95001, Quantity: 0.25}}, LastUpdateID: 42}}); err != nil {
		t.Fatal(err)
	}
	r := b.getWith(store.Enterprise, "/v1/btc/spot/snapshots", map[string]string{"Accept": "text/csv"})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %v %v", rows, err)
	}
	want := []string{"BTCUSDT", itoa(at.UnixMilli()), "95000.5", `[{"price":95000,"quantity":1.5}]`, `[{"price":95001,"quantity":0.25}]`, "42"}
	if strings.Join(rows[1], "|") != strings.Join(want, "|") {
		t.Errorf("row = %v\nwant  %v", rows[1], want)
	}
}

func TestGzip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	path := "/v1/markets/" + slug + "/snapshots?include_orderbook=true"
	plain := b.getWith(store.Pro, path, nil)
	zipped := b.getWith(store.Pro, path, map[string]string{"Accept-Encoding": "gzip"})
	if zipped.header.Get("Content-Encoding") != "gzip" || plain.header.Get("Content-Encoding") != "" {
		t.Fatalf("Content-Encoding: gzip %q, plain %q", zipped.header.Get("Content-Encoding"), plain.header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, plain.body) || len(zipped.body) >= len(plain.body) {
		t.Errorf("gzip body: %d bytes for %d plain; equal after inflating: %v", len(zipped.body), len(plain.body), bytes.Equal(unzipped, plain.body))
	}
	if !strings.Contains(zipped.header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("Vary = %q", zipped.header.Get("Vary"))
	}
}

// TestSnapshotsAcceptForms: whatever Accept header a client sends, the
// format Huma negotiates is the format of the whole answer, also once the
// page is in the page cache (which holds JSON). Before one negotiation
// decided both, a CSV answer chosen past a first JSON or unknown entry was
// the cached JSON page written as CSV: a header row and nothing else.
// TestAcceptWeighsEveryType checks the negotiation of the row forms by
// their q-values wherever a type stands in Accept: Huma's parser took the
// last type's q as 1, so "text/csv, application/json;q=0.5" was answered
// JSON and "text/csv;q=0.5, application/vnd.apache.parquet;q=0.1" Parquet.
func TestAcceptWeighsEveryType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	const parquet = "application/vnd.apache.parquet"
	cases := []struct{ accept, want string }{
		{"text/csv, application/json;q=0.5", "text/csv"},
		{parquet + ", application/json;q=0.5", parquet},
		{"text/csv;q=0.5, " + parquet + ";q=0.1", "text/csv"},
		{parquet + ";q=0.2, text/csv;q=0.1", parquet},
		{"application/json, text/csv;q=0.5", "application/json"},
		{"text/csv;q=0.5, application/json;q=0.9", "application/json"},
		{"Text/CSV", "text/csv"},
		{"Application/Vnd.Apache.Parquet", parquet},
	}
	for _, path := range []string{"/v1/markets/" + slug + "/snapshots?limit=2", "/v1/btc/spot/snapshots?limit=2"} {
		for _, tc := range cases {
			r := b.getAccept(store.Pro, path, tc.accept)
			if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || !strings.HasPrefix(ct, tc.want) {
				t.Errorf("%s, Accept %q: %d %s, want %s", path, tc.accept, r.status, ct, tc.want)
			}
		}
	}
}

func TestSnapshotsAcceptForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	const limit = 5
	cases := []struct {
		accept string
		csv    bool
	}{
		{"", false},
		{"*/*", false},
		{"application/json", false},
		{"application/json; charset=utf-8", false},
		{"text/csv", true},
		{"text/csv; charset=utf-8", true},
		{"text/csv;q=0.9", true},
		{"application/json;q=0.1, text/csv", true},
		{"application/json;q=0.1,text/csv;q=0.2", true},
		{"text/plain, text/csv;q=0.9", true},
		{"text/plain, text/csv;q=0.9, */*;q=0.1", true},
		{"text/csv;q=0.5, application/json", false},
		// The last type's q counts too (Huma's parser took it as 1 and
		// answered JSON, its default, on the tie).
		{"text/csv, application/json;q=0.5", true},
		{"text/csv;q=1.0, application/json;q=0.5", true},
		{"text/csv; charset=utf-8; q=0.9, application/json;q=0.5", true},
		{"application/json, text/csv", false},
		{"application/json, text/csv;q=0.9", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"text/*", false},
		{"text/plain", false},
	}
	for _, books := range []bool{true, false} {
		path := fmt.Sprintf("/v1/markets/%s/snapshots?include_orderbook=%t&limit=%d", slug, books, limit)
		// Twice over: the first round may fill the page cache, the second
		// meets it for every form.
		for round := range 2 {
			for _, tc := range cases {
				r := b.getWith(store.Pro, path, map[string]string{"Accept": tc.accept})
				ct := r.header.Get("Content-Type")
				if r.status != http.StatusOK {
					t.Fatalf("Accept %q: %d %s", tc.accept, r.status, r.body)
				}
				if tc.csv {
					rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
					if !strings.HasPrefix(ct, "text/csv") || err != nil || len(rows) != limit+1 {
						t.Errorf("books=%t round %d, Accept %q: %s, %d rows (%v), want text/csv with %d:\n%s",
							books, round, tc.accept, ct, len(rows), err, limit+1, r.body)
					}
					continue
				}
				var page snapshotResp
				if !strings.HasPrefix(ct, "application/json") || json.Unmarshal(r.body, &page) != nil || len(page.Snapshots) != limit {
					t.Errorf("books=%t round %d, Accept %q: %s, want JSON with %d snapshots:\n%.200s",
						books, round, tc.accept, ct, limit, r.body)
				}
			}
		}
	}
}
