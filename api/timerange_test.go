package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

type rangePage struct {
	Snapshots  []map[string]any `json:"snapshots"`
	Total      int              `json:"total"`
	Matched    int              `json:"matched"`
	Limit      int              `json:"limit"`
	Offset     int              `json:"offset"`
	NextCursor *string          `json:"next_cursor"`
}

// times returns the snapshots' times as the fixture's indexes (30 s apart
// from the market's start).
func (p rangePage) indexes(t *testing.T, start time.Time) []int {
	t.Helper()
	out := make([]int, len(p.Snapshots))
	for i, s := range p.Snapshots {
		at, err := time.Parse(time.RFC3339Nano, s["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = int(at.Sub(start) / (30 * time.Second))
	}
	return out
}

func span(from, to int, step int) []int {
	var out []int
	for i := from; step > 0 && i <= to || step < 0 && i >= to; i += step {
		out = append(out, i)
	}
	return out
}

func TestSnapshotsByTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, marketID := snapshotMarket()
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * 30 * time.Second) }
	iso := func(i int) string { return url.QueryEscape(at(i).Format(time.RFC3339)) }
	ms := func(i int) string { return itoa(at(i).UnixMilli()) }
	base := "/v1/markets/" + slug + "/snapshots"

	cases := []struct {
		name    string
		query   string
		want    []int
		matched int
		more    bool
	}{
		{"range, newest first", "start_time=" + iso(2) + "&end_time=" + ms(10), span(9, 2, -1), 8, false},
		{"range, oldest first", "start_time=" + ms(2) + "&end_time=" + iso(10) + "&order=asc", span(2, 9, 1), 8, false},
		{"start only", "start_time=" + ms(25), span(29, 25, -1), 5, false},
		{"end only, paged", "end_time=" + ms(20) + "&limit=5&offset=3", span(16, 12, -1), 20, true},
		{"between snapshots", "start_time=" + itoa(at(3).UnixMilli()+1) + "&end_time=" + itoa(at(6).UnixMilli()+1) + "&order=asc", span(4, 6, 1), 3, false},
		{"no range, ascending", "order=asc&limit=3", span(0, 2, 1), 30, true},
		{"empty range", "start_time=" + ms(40) + "&end_time=" + ms(50), nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := decode[rangePage](t, b.get(store.Pro, base+"?"+tc.query))
			if got := p.indexes(t, start); fmt.Sprint(got) != fmt.Sprint(tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("snapshots %v, want %v", got, tc.want)
			}
			if p.Total != 30 || p.Matched != tc.matched {
				t.Errorf("total %d matched %d, want 30 and %d", p.Total, p.Matched, tc.matched)
			}
			if (p.NextCursor != nil) != tc.more {
				t.Errorf("next_cursor %v, want one: %t", p.NextCursor, tc.more)
			}
		})
	}

	// Walks by cursor cover the range exactly, on either route, and end
	// with a null next_cursor.
	for _, order := range []string{"asc", "desc"} {
		q := "start_time=" + ms(3) + "&end_time=" + ms(27) + "&order=" + order + "&limit=7"
		var got []int
		path := base + "?" + q
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("walk does not end")
			}
			p := decode[rangePage](t, b.get(store.Pro, path))
			got = append(got, p.indexes(t, start)...)
			if p.NextCursor == nil {
				break
			}
			if p.Offset != 0 || p.Matched != 24 {
				t.Errorf("page: offset %d matched %d", p.Offset, p.Matched)
			}
			// Alternate routes: a cursor belongs to the market, not the path.
			route := base
			if pages%2 == 0 {
				route = "/v1/markets/by-market-id/" + marketID + "/snapshots"
			}
			path = route + "?" + q + "&cursor=" + *p.NextCursor
		}
		want := span(3, 26, 1)
		if order == "desc" {
			want = span(26, 3, -1)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("walk %s = %v, want %v", order, got, want)
		}
	}

	// A walk of a page size that divides the range ends on a full page
	// whose next_cursor is null: the store was asked for one more.
	p := decode[rangePage](t, b.get(store.Pro, base+"?order=asc&limit=15"))
	p = decode[rangePage](t, b.get(store.Pro, base+"?order=asc&limit=15&cursor="+*p.NextCursor))
	if len(p.Snapshots) != 15 || p.NextCursor != nil {
		t.Errorf("last full page: %d snapshots, next_cursor %v", len(p.Snapshots), p.NextCursor)
	}

	cursor := *decode[rangePage](t, b.get(store.Pro, base+"?limit=2&start_time="+ms(1))).NextCursor
	other := slugOf(store.BTC, store.M15, start.Add(-15*time.Minute))
	for _, bad := range []string{
		base + "?cursor=" + cursor + "&start_time=" + ms(1) + "&offset=2",               // cursor with offset
		base + "?cursor=" + cursor + "&start_time=" + ms(2),                             // another range
		base + "?cursor=" + cursor + "&start_time=" + ms(1) + "&order=asc",              // another order
		"/v1/markets/" + other + "/snapshots?cursor=" + cursor + "&start_time=" + ms(1), // another market
		base + "?cursor=not-a-cursor",
		base + "?cursor=" + cursor[:len(cursor)-2] + "&start_time=" + ms(1),
		base + "?start_time=" + ms(9) + "&end_time=" + ms(3), // from after to
		base + "?start_time=" + ms(9) + "&end_time=" + ms(9), // empty by definition
		base + "?start_time=yesterday",
		base + "?order=up",
		"/v1/btc/spot/snapshots?cursor=" + cursor + "&start_time=" + ms(1), // another series
	} {
		wantError(t, b.get(store.Enterprise, bad), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	if r := b.get(store.Pro, base+"?limit=2&start_time="+ms(1)+"&cursor="+cursor); r.status != http.StatusOK {
		t.Errorf("the cursor on its own query: %d %s", r.status, r.body)
	}
}

// TestTimeParamForms: every ISO 8601 form of an instant selects what its
// epoch milliseconds select. Minutes with a zone are what `date -Iminutes`
// and Python's isoformat(timespec="minutes") write; they were refused while
// minutes without a zone were taken. An offset's + sent unescaped arrives
// as a space: the answer says so rather than that the time is not ISO 8601.
func TestTimeParamForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	from, to := start.Add(time.Minute), start.Add(4*time.Minute) // snapshots 2 to 7
	base := "/v1/markets/" + slug + "/snapshots?end_time=" + itoa(to.UnixMilli()) + "&start_time="
	want := decode[rangePage](t, b.get(store.Pro, base+itoa(from.UnixMilli()))).Matched
	if want != 6 {
		t.Fatalf("epoch ms: matched %d, want 6", want)
	}
	east := time.FixedZone("", 2*3600)
	for _, v := range []string{
		from.Format(time.RFC3339),
		from.Format("2006-01-02T15:04"),
		from.Format("2006-01-02T15:04Z07:00"),
		from.In(east).Format("2006-01-02T15:04Z07:00"),
		from.In(east).Format("2006-01-02T15:04:05.000Z07:00"),
		// Python's str(datetime) and Postgres part date and time with a
		// space; RFC 3339 allows small letters.
		from.Format("2006-01-02 15:04:05-07:00"),
		from.In(east).Format("2006-01-02 15:04:05.999999-07:00"),
		strings.ToLower(from.Format(time.RFC3339)),
		// ISO 8601's offsets without a colon or without minutes: what
		// Postgres writes (its timestamptz as text), `date +%FT%T%z` and
		// Python's strftime("%z").
		from.Format("2006-01-02 15:04:05-07"),
		from.In(east).Format("2006-01-02 15:04:05.999999-07"),
		from.In(east).Format("2006-01-02T15:04:05-0700"),
		from.Format("2006-01-02T15:04:05-0700"),
		from.In(east).Format("2006-01-02T15:04-0700"),
		from.In(east).Format("2006-01-02T15:04-07"),
	} {
		p := decode[rangePage](t, b.get(store.Pro, base+url.QueryEscape(v)))
		if p.Matched != want {
			t.Errorf("start_time=%s: matched %d, want %d", v, p.Matched, want)
		}
	}

	// Epoch seconds read as milliseconds would be January 1970, before
	// any market: refused with the milliseconds they likely meant.
	sec := itoa(from.Unix())
	r := b.get(store.Pro, base+sec)
	wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	if !strings.Contains(string(r.body), "epoch seconds") || !strings.Contains(string(r.body), sec+"000") {
		t.Errorf("start_time=%s (epoch seconds): the message does not say so, nor give %s000: %s", sec, sec, r.body)
	}

	// "+02:00" unescaped in a query string is " 02:00".
	for _, v := range []string{from.In(east).Format(time.RFC3339), from.In(east).Format("2006-01-02T15:04Z07:00"), from.In(east).Format("2006-01-02T15:04:05-0700")} {
		r := b.get(store.Pro, base+strings.ReplaceAll(v, "+", "%20"))
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if !strings.Contains(string(r.body), "%2B") {
			t.Errorf("start_time=%s sent with its + unescaped: the message does not say to send it as %%2B: %s", v, r.body)
		}
	}
}

// getAccept sends a GET with an Accept header.
func (b *bundle) getAccept(tier store.Tier, path, accept string) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", b.keys[tier])
	req.Header.Set("Accept", accept)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		b.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: buf.Bytes()}
}

func readParquet[T any](t *testing.T, r response) []T {
	t.Helper()
	if r.status != http.StatusOK || r.header.Get("Content-Type") != transfer.ParquetMediaType {
		t.Fatalf("status %d, Content-Type %q: %.300s", r.status, r.header.Get("Content-Type"), r.body)
	}
	rows, err := parquet.Read[T](bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatalf("read parquet: %v", err)
	}
	return rows
}

func TestSnapshotsParquet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loadHistory(t, b.store)
	slug, _ := snapshotMarket()
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	base := "/v1/markets/" + slug + "/snapshots"

	rows := readParquet[transfer.ParquetBookSnapshot](t, b.getAccept(store.Pro, base+"?include_orderbook=true&order=asc&limit=4", transfer.ParquetMediaType))
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for i, r := range rows {
		if !r.Time.Equal(start.Add(time.Duration(i)*30*time.Second)) || r.Slug != slug || r.CoinPrice != 95000+float64(i) || r.PriceUp != 0.5+float64(i)/100 {
			t.Errorf("row %d = %+v", i, r)
		}
	}
	if up := rows[0].BookUpAsks; len(up) != 2 || up[0] != (transfer.ParquetLevel{Price: 0.51, Size: 200.5}) || len(rows[0].BookDownAsks) != 0 || len(rows[1].BookUpBids) != 0 {
		t.Errorf("books: %+v", rows[:2])
	}
	// Without books the file has no book columns.
	plain := b.getAccept(store.Pro, base+"?limit=3", transfer.ParquetMediaType)
	flat := readParquet[transfer.ParquetSnapshot](t, plain)
	if len(flat) != 3 || !flat[0].Time.Equal(start.Add(29*30*time.Second)) {
		t.Errorf("rows without books: %+v", flat)
	}
	f, err := parquet.OpenFile(bytes.NewReader(plain.body), int64(len(plain.body)))
	if err != nil {
		t.Fatal(err)
	}
	if cols := fmt.Sprint(f.Schema().Columns()); cols != "[[slug] [time] [coin_price] [price_up] [price_down]]" {
		t.Errorf("columns %s", cols)
	}
	if typ, _ := f.Schema().Lookup("time"); fmt.Sprint(typ.Node.Type().LogicalType()) != "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)" {
		t.Errorf("time column is %v, want a UTC microsecond timestamp", typ.Node.Type().LogicalType())
	}

	depth := readParquet[transfer.ParquetDepth](t, b.getAccept(store.Enterprise, "/v1/btc/future/snapshots?limit=2&order=asc", transfer.ParquetMediaType))
	if len(depth) != 2 || depth[0].Symbol != "BTCUSDT" || !depth[0].Time.Equal(historyAt(historyCount-1).Truncate(time.Millisecond)) || len(depth[0].Asks) != 2 {
		t.Errorf("depth rows: %+v", depth)
	}
	// Errors stay JSON; routes without a Parquet form answer JSON.
	wantError(t, b.getAccept(store.Pro, base+"?order=up", transfer.ParquetMediaType), http.StatusBadRequest, "VALIDATION_ERROR")
	if r := b.getAccept(store.Pro, "/v1/markets/"+slug, transfer.ParquetMediaType); r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("market object with Accept parquet: %d %q", r.status, r.header.Get("Content-Type"))
	}
}

func TestDepthHistoryCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loadHistory(t, b.store)
	for _, order := range []string{"asc", "desc"} {
		path := "/v1/btc/spot/snapshots?limit=25&order=" + order
		var ids []int
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("walk does not end")
			}
			p := decode[depthPage](t, b.get(store.Enterprise, path))
			ids = append(ids, p.ids()...)
			if p.Total != historyCount {
				t.Errorf("total %d", p.Total)
			}
			if p.NextCursor == "" {
				break
			}
			path = "/v1/btc/spot/snapshots?limit=25&order=" + order + "&cursor=" + p.NextCursor
		}
		if len(ids) != historyCount {
			t.Fatalf("%s walk saw %d snapshots", order, len(ids))
		}
		for i := range ids {
			want := 1000 + i // newest first: i-th newest
			if order == "asc" {
				want = 1000 + historyCount - 1 - i
			}
			if ids[i] != want {
				t.Fatalf("%s walk: %v", order, ids)
			}
		}
	}
	// Depth's end_time stays inclusive, as SPEC has it.
	at := historyAt(3).UnixMilli()
	if p := decode[depthPage](t, b.get(store.Enterprise, "/v1/btc/spot/snapshots?start_time="+itoa(at)+"&end_time="+itoa(at))); p.Total != 1 {
		t.Errorf("start_time = end_time: total %d", p.Total)
	}
}

func TestMarketTradesOrderAndParquet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addActivity(t, b.store)
	slug, _ := snapshotMarket()
	want := activityTrades()
	rows := readParquet[transfer.ParquetTrade](t, b.getAccept(store.Pro, "/v1/markets/"+slug+"/trades?order=asc&limit=5&offset=2", transfer.ParquetMediaType))
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
	for i, r := range rows {
		w := want[2+i]
		if r.Slug != slug || !r.Time.Equal(w.Time) || r.Outcome != w.Outcome || r.Side != w.Side || r.Price != w.Price ||
			r.Size != w.Size || r.FeeRateBps != w.FeeRateBps || r.TxHash != w.TxHash {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	page := decode[struct {
		Trades []struct {
			Time string `json:"time"`
		} `json:"trades"`
	}](t, b.get(store.Pro, "/v1/markets/"+slug+"/trades?limit=2"))
	if len(page.Trades) != 2 || page.Trades[0].Time <= page.Trades[1].Time {
		t.Errorf("default order is not newest first: %+v", page.Trades)
	}
	wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/trades?order=sideways"), http.StatusBadRequest, "VALIDATION_ERROR")
}

// TestTimeBoundsFinerThanStored: a time bound finer than the stores'
// microsecond (nanoseconds, as pandas writes a Timestamp) keeps what it
// says, where it was cut to the microsecond: start_time one nanosecond
// after a snapshot kept that snapshot, and end_time one nanosecond after
// one left it out, as a market list's end_time one nanosecond after a
// market's start left the market out.
func TestTimeBoundsFinerThanStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * 30 * time.Second) }
	nano := func(i int) string { return url.QueryEscape(at(i).Add(time.Nanosecond).Format(time.RFC3339Nano)) }
	base := "/v1/markets/" + slug + "/snapshots?order=asc"
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"&start_time=" + nano(3) + "&end_time=" + nano(6), span(4, 6, 1)},
		{"&start_time=" + nano(28), span(29, 29, 1)},
		{"&end_time=" + nano(1), span(0, 1, 1)},
	} {
		p := decode[rangePage](t, b.get(store.Pro, base+tc.query))
		if got := p.indexes(t, start); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: snapshots %v, want %v", tc.query, got, tc.want)
		}
	}
	// Markets starting before a nanosecond after this one's start hold it;
	// after a nanosecond before it, too.
	q := "/v1/markets?coin=BTC&market_type=15m&end_time=" + url.QueryEscape(start.Add(time.Nanosecond).Format(time.RFC3339Nano)) +
		"&start_time=" + url.QueryEscape(start.Add(-time.Nanosecond).Format(time.RFC3339Nano))
	type marketList struct {
		Markets []struct {
			Slug string `json:"slug"`
		} `json:"markets"`
	}
	list := decode[marketList](t, b.get(store.Pro, q))
	if len(list.Markets) != 1 || list.Markets[0].Slug != slug {
		t.Errorf("markets starting within a nanosecond of %s: %v, want %s", start.Format(time.RFC3339), list.Markets, slug)
	}
}
