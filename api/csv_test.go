package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
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
