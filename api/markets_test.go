package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

type marketList struct {
	Markets []map[string]any `json:"markets"`
	Total   int              `json:"total"`
	Limit   int              `json:"limit"`
	Offset  int              `json:"offset"`
	Warning *string          `json:"warning"`
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode: %v\n%s", err, r.body)
	}
	return v
}

func TestListMarketsValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, query, field string
	}{
		{"missing coin", "", "coin"},
		{"unknown coin", "coin=DOGE", "coin"},
		{"limit zero", "coin=BTC&limit=0", "limit"},
		{"limit 101", "coin=BTC&limit=101", "limit"},
		{"limit not a number", "coin=BTC&limit=ten", "limit"},
		{"negative offset", "coin=BTC&offset=-1", "offset"},
		{"unknown market type", "coin=BTC&market_type=2m", "market_type"},
		{"4hr for ETH", "coin=ETH&market_type=4hr", "market_type"},
		{"resolved not boolean", "coin=BTC&resolved=maybe", "resolved"},
		{"malformed start_time", "coin=BTC&start_time=yesterday", "start_time"},
		{"malformed end_time", "coin=BTC&end_time=2026-13-45", "end_time"},
		{"end before start", "coin=BTC&start_time=1777467600000&end_time=1777467500000", "end_time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := wantError(t, b.get(store.Pro, "/v1/markets?"+tc.query), http.StatusBadRequest, "VALIDATION_ERROR")
			if msg := e["message"].(string); !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
			details, _ := e["details"].(map[string]any)
			if details == nil || details["errors"] == nil {
				t.Errorf("details.errors missing: %v", e)
			}
		})
	}
}

// TestMalformedQueryEscapes checks that a query parameter whose percent-
// escape is malformed is 400 VALIDATION_ERROR naming it. Go's query parser
// drops such a pair without a word, so ?start_time=%zz answered the whole
// series as if no start_time had been given, and ?coin=%zz said coin was
// missing.
func TestMalformedQueryEscapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	cases := []struct {
		path, field string
	}{
		{"/v1/markets?coin=BTC&start_time=2026-04-29T12:00%zz", "start_time"},
		{"/v1/markets?coin=%zz", "coin"},
		{"/v1/markets?coin=BTC&limit=%2", "limit"},
		{"/v1/markets/" + slug + "/snapshots?end_time=%G0", "end_time"},
		{"/v1/markets/" + slug + "/snapshots?order=asc&cur%zzsor=x", "cur%zzsor"},
		{"/v1/btc/spot/snapshots?start_time=%zz", "start_time"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			e := wantError(t, b.get(store.Pro, tc.path), http.StatusBadRequest, "VALIDATION_ERROR")
			if msg := e["message"].(string); !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
		})
	}
	// An escape done right, and a literal + (a space), are read as ever.
	if r := b.get(store.Pro, "/v1/markets?coin=%42TC&start_time=2026-04-29T12:00:00%2B01:00"); r.status != http.StatusOK {
		t.Errorf("well-formed escapes: %d %s", r.status, r.body)
	}
}

func TestListMarketsOrderFiltersPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	all := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC"))
	if all.Total != 55+52+26+25+7 || len(all.Markets) != 100 || all.Limit != 100 || all.Offset != 0 || all.Warning != nil {
		t.Fatalf("total %d, %d markets, limit %d, offset %d, warning %v", all.Total, len(all.Markets), all.Limit, all.Offset, all.Warning)
	}
	starts := make([]string, len(all.Markets))
	for i, m := range all.Markets {
		starts[i] = m["start_time"].(string)
	}
	if !sort.SliceIsSorted(starts, func(i, j int) bool { return starts[i] > starts[j] }) {
		t.Errorf("markets are not sorted by start_time descending")
	}

	page := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=btc&market_type=5m&limit=10&offset=50"))
	if page.Total != 55 || len(page.Markets) != 5 || page.Offset != 50 || page.Limit != 10 {
		t.Fatalf("page: total %d len %d", page.Total, len(page.Markets))
	}
	active := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&resolved=false"))
	if active.Total != 5 {
		t.Errorf("resolved=false: %d markets, want one live per BTC series (5)", active.Total)
	}
	for _, m := range active.Markets {
		for _, f := range []string{"winner", "coin_price_end", "final_volume", "final_liquidity", "resolved_at"} {
			if v, ok := m[f]; !ok || v != nil {
				t.Errorf("active market %s: %s = %v, want null", m["slug"], f, v)
			}
		}
	}
	resolved := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&resolved=true&market_type=24hr"))
	if resolved.Total != 6 || resolved.Markets[0]["winner"] != "Up" {
		t.Errorf("resolved=true 24hr: total %d", resolved.Total)
	}
	// resolved takes the booleans include_orderbook takes.
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"market_type=24hr&resolved=1", 6}, {"market_type=24hr&resolved=T", 6}, {"market_type=24hr&resolved=TRUE", 6},
		{"resolved=0", active.Total}, {"resolved=f", active.Total},
	} {
		if n := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&"+tc.query)).Total; n != tc.want {
			t.Errorf("%s: total %d, want %d", tc.query, n, tc.want)
		}
	}

	// Time filters: epoch ms and ISO 8601 select the same markets.
	from := now.Add(-time.Hour)
	ms := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&market_type=5m&start_time="+itoa(from.UnixMilli())))
	iso := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&market_type=5m&start_time="+from.Format(time.RFC3339)))
	if ms.Total != 12 || iso.Total != ms.Total {
		t.Errorf("start_time filter: epoch %d, iso %d, want 12 (strictly after)", ms.Total, iso.Total)
	}
	before := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&market_type=5m&end_time="+itoa(from.UnixMilli())))
	if before.Total != 55-12 {
		t.Errorf("end_time filter: %d, want %d (strictly before)", before.Total, 55-12)
	}
}

func TestMarketObjectShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	m := decode[map[string]any](t, b.get(store.Pro, "/v1/markets/"+slug))
	want := []string{"slug", "market_id", "event_id", "market_type", "start_time", "end_time", "coin_price_start",
		"coin_price_end", "condition_id", "clob_token_up", "clob_token_down", "winner", "final_volume",
		"final_liquidity", "resolved_at", "created_at", "updated_at"}
	want = append(want, upstreamFields...) // DESIGN 9's extra fields (activity_test.go)
	want = append(want, "data_sources")    // where the data came from (issue 26)
	if len(m) != len(want) {
		t.Errorf("market has %d fields, want %d: %v", len(m), len(want), m)
	}
	for _, f := range want {
		if _, ok := m[f]; !ok {
			t.Errorf("field %s missing", f)
		}
	}
	if ds, _ := m["data_sources"].([]any); len(ds) != 1 || ds[0] != "recorder" {
		t.Errorf("data_sources = %v, want [recorder]", m["data_sources"])
	}
	if m["slug"] != slug || m["market_type"] != "15m" || m["winner"] != "Up" || m["coin_price_end"] != 95100.0 {
		t.Errorf("market = %v", m)
	}
	for _, f := range []string{"start_time", "end_time", "resolved_at", "created_at", "updated_at"} {
		if _, err := time.Parse(time.RFC3339Nano, m[f].(string)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(m["created_at"].(string), ".") {
		t.Errorf("created_at %q has no fractional seconds", m["created_at"])
	}
	wantError(t, b.get(store.Pro, "/v1/markets/btc-updown-15m-1"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
}

func TestStarterWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list := decode[marketList](t, b.get(store.Starter, "/v1/markets?coin=BTC&market_type=5m"))
	if list.Total != 50 || list.Warning == nil || !strings.Contains(*list.Warning, "5 older") {
		t.Fatalf("starter 5m: total %d warning %v", list.Total, list.Warning)
	}
	all := decode[marketList](t, b.get(store.Starter, "/v1/markets?coin=BTC&limit=100&offset=100"))
	if all.Total != 50+50+24+24+5 {
		t.Errorf("starter all BTC: total %d, want 153", all.Total)
	}
	day := decode[marketList](t, b.get(store.Starter, "/v1/markets?coin=BTC&market_type=24hr"))
	if day.Total != 5 || day.Warning == nil {
		t.Errorf("starter 24hr: total %d warning %v", day.Total, day.Warning)
	}
	inside := decode[marketList](t, b.get(store.Starter, "/v1/markets?coin=BTC&market_type=5m&limit=10"))
	if inside.Warning == nil {
		t.Errorf("a page inside the window still reports the hidden markets")
	}

	// ETH and SOL are not in the Starter plan.
	e := wantError(t, b.get(store.Starter, "/v1/markets?coin=ETH"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	d := e["details"].(map[string]any)
	if d["required_tier"] != "PRO" || d["current_tier"] != "STARTER" || d["upgrade_url"] != "/v1/account/billing" {
		t.Errorf("details = %v", d)
	}

	// A single market outside the window: the 51st newest 5m.
	old := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-50*5*time.Minute))
	wantError(t, b.get(store.Starter, "/v1/markets/"+old), http.StatusForbidden, "TIER_ACCESS_DENIED")
	wantError(t, b.get(store.Starter, "/v1/markets/"+old+"/snapshots"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	edge := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-49*5*time.Minute))
	if r := b.get(store.Starter, "/v1/markets/"+edge); r.status != http.StatusOK {
		t.Errorf("50th newest 5m market: %d %s", r.status, r.body)
	}
	// Pro sees it, and ETH.
	if r := b.get(store.Pro, "/v1/markets/"+old); r.status != http.StatusOK {
		t.Errorf("pro: %d", r.status)
	}
	if eth := decode[marketList](t, b.get(store.Pro, "/v1/markets?coin=ETH")); eth.Total != 3 || eth.Warning != nil {
		t.Errorf("pro ETH: %d %v", eth.Total, eth.Warning)
	}
}

// TestStarterWindowCountsStartedMarkets: the collector stores the next
// window's market before it starts (and, on new_market, windows further
// ahead); such a market has no data yet and must not take one of the
// Starter's last N places, for every market type.
func TestStarterWindowCountsStartedMarkets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		mt   store.MarketType
		n    int // the Starter's last N
		have int // fixture markets, the live one included
	}{
		{store.M5, 50, 55},
		{store.M15, 50, 60},
		{store.H1, 24, 26},
		{store.H4, 24, 25},
		{store.H24, 5, 7},
	}
	const ahead = 2 // upcoming markets stored per type
	for _, tc := range cases {
		d := tc.mt.Duration()
		live := now.Truncate(d)
		var upcoming []store.Market
		for i := 1; i <= ahead; i++ {
			start := live.Add(time.Duration(i) * d)
			upcoming = append(upcoming, store.Market{Slug: slugOf(store.BTC, tc.mt, start), MarketID: fmt.Sprintf("next-%s-%d", tc.mt, i),
				EventID: fmt.Sprintf("ev-next-%s-%d", tc.mt, i), Coin: store.BTC, MarketType: tc.mt,
				StartTime: start, EndTime: start.Add(d), ConditionID: "0xabc", ClobTokenUp: "111", ClobTokenDown: "222"})
		}
		if err := b.store.UpsertMarkets(t.Context(), upcoming); err != nil {
			t.Fatal(err)
		}
		// The N-th newest market that has started is inside the window,
		// the one before it outside.
		edge := slugOf(store.BTC, tc.mt, live.Add(-time.Duration(tc.n-1)*d))
		if r := b.get(store.Starter, "/v1/markets/"+edge); r.status != http.StatusOK {
			t.Errorf("%s: the %dth newest started market %s: %d %s", tc.mt, tc.n, edge, r.status, r.body)
		}
		if tc.have > tc.n {
			old := slugOf(store.BTC, tc.mt, live.Add(-time.Duration(tc.n)*d))
			wantError(t, b.get(store.Starter, "/v1/markets/"+old), http.StatusForbidden, "TIER_ACCESS_DENIED")
		}
		list := decode[marketList](t, b.get(store.Starter, "/v1/markets?coin=BTC&market_type="+string(tc.mt)))
		if list.Total != tc.n+ahead {
			t.Errorf("%s: starter list total %d, want the %d newest started markets and the %d upcoming", tc.mt, list.Total, tc.n, ahead)
		}
	}
}

func TestThirtyOneDayWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The oldest 4hr market started 24*4h = 4 days ago and the oldest 24hr
	// one 6 days ago: inside 31 days. Move the clock with a market 40 days old.
	old := store.Market{Slug: "btc-updown-24hr-1", MarketID: "old", Coin: store.BTC, MarketType: store.H24,
		StartTime: now.Add(-40 * 24 * time.Hour), EndTime: now.Add(-39 * 24 * time.Hour)}
	if err := b.store.UpsertMarkets(t.Context(), []store.Market{old}); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []store.Tier{store.Pro, store.ProTrial, store.Suite} {
		list := decode[marketList](t, b.get(tier, "/v1/markets?coin=BTC&market_type=24hr"))
		if list.Total != 7 || list.Warning == nil {
			t.Errorf("%s: total %d warning %v, want 7 and a warning", tier, list.Total, list.Warning)
		}
		e := wantError(t, b.get(tier, "/v1/markets/btc-updown-24hr-1"), http.StatusForbidden, "TIER_ACCESS_DENIED")
		if e["details"].(map[string]any)["current_tier"] != string(tier) {
			t.Errorf("%s: details %v", tier, e["details"])
		}
	}
	if list := decode[marketList](t, b.get(store.Enterprise, "/v1/markets?coin=BTC&market_type=24hr")); list.Total != 8 || list.Warning != nil {
		t.Errorf("enterprise: %d %v", list.Total, list.Warning)
	}
}

type snapshotResp struct {
	Market    map[string]any   `json:"market"`
	Snapshots []map[string]any `json:"snapshots"`
	Total     int              `json:"total"`
	Limit     int              `json:"limit"`
	Offset    int              `json:"offset"`
}

func TestSnapshots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, marketID := snapshotMarket()
	page := decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots"))
	if page.Total != 30 || len(page.Snapshots) != 30 || page.Limit != 1000 || page.Offset != 0 || page.Market["slug"] != slug {
		t.Fatalf("total %d len %d limit %d", page.Total, len(page.Snapshots), page.Limit)
	}
	first, last := page.Snapshots[0], page.Snapshots[29]
	if first["time"].(string) <= last["time"].(string) {
		t.Errorf("snapshots not newest first: %v .. %v", first["time"], last["time"])
	}
	if first["coin_price"] != 95029.0 || first["price_up"] != 0.79 {
		t.Errorf("newest snapshot = %v", first)
	}
	for _, s := range page.Snapshots {
		if _, ok := s["orderbook_up"]; ok {
			t.Fatalf("orderbook present without include_orderbook: %v", s)
		}
		if len(s) != 4 {
			t.Fatalf("snapshot fields = %v", s)
		}
	}

	books := decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?include_orderbook=true&limit=2&offset=1"))
	if books.Total != 30 || len(books.Snapshots) != 2 || books.Limit != 2 || books.Offset != 1 {
		t.Fatalf("paged: %+v", books)
	}
	// offset 1 is i = 28 (a book), then i = 27 (no book: empty sides).
	up := books.Snapshots[0]["orderbook_up"].(map[string]any)
	asks := up["asks"].([]any)
	if len(asks) != 2 || asks[0].(map[string]any)["price"] != 0.51 || asks[0].(map[string]any)["size"] != 200.5 {
		t.Errorf("orderbook_up = %v", up)
	}
	down := books.Snapshots[0]["orderbook_down"].(map[string]any)
	if a := down["asks"].([]any); len(a) != 0 {
		t.Errorf("empty ask side = %v", a)
	}
	none := books.Snapshots[1]["orderbook_up"].(map[string]any)
	if len(none["asks"].([]any)) != 0 || len(none["bids"].([]any)) != 0 {
		t.Errorf("unrecorded book = %v", none)
	}

	byID := decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/by-market-id/"+marketID+"/snapshots?limit=5"))
	if byID.Total != 30 || len(byID.Snapshots) != 5 || byID.Market["market_id"] != marketID {
		t.Errorf("by market id: %+v", byID)
	}
	wantError(t, b.get(store.Pro, "/v1/markets/by-market-id/nope/snapshots"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?limit=1001"), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?include_orderbook=yes"), http.StatusBadRequest, "VALIDATION_ERROR")

	past := decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?offset=500"))
	if past.Total != 30 || len(past.Snapshots) != 0 {
		t.Errorf("offset past the end: %+v", past)
	}
	// A market without snapshots answers an empty page, not an error.
	live := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute))
	if e := decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/"+live+"/snapshots")); e.Total != 0 || e.Snapshots == nil {
		t.Errorf("no snapshots: %+v (%s)", e, b.get(store.Pro, "/v1/markets/"+live+"/snapshots").body)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestResolvedIsBoolean: SPEC calls resolved a boolean. /openapi.json
// says so, it takes what include_orderbook takes, and a refusal of
// either says which values those are (it said "must be true or false"
// while 1, t and TRUE were taken).
func TestResolvedIsBoolean(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Type string `json:"type"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range doc.Paths["/v1/markets"]["get"].Parameters {
		if p.Name == "resolved" {
			found = true
			if p.Schema.Type != "boolean" {
				t.Errorf("/openapi.json: resolved is %q, want boolean", p.Schema.Type)
			}
		}
	}
	if !found {
		t.Fatal("/openapi.json: /v1/markets has no resolved parameter")
	}
	slug, _ := snapshotMarket()
	for _, path := range []string{"/v1/markets?coin=BTC&resolved=maybe", "/v1/markets/" + slug + "/snapshots?include_orderbook=maybe"} {
		e := wantError(t, b.get(store.Pro, path), http.StatusBadRequest, "VALIDATION_ERROR")
		msg, _ := e["message"].(string)
		for _, v := range []string{"true", "false", "1", "0", "t", "f"} {
			if !strings.Contains(msg, " "+v) {
				t.Errorf("%s: message %q does not name %s", path, msg, v)
			}
		}
	}
	for _, q := range []string{"true", "1", "t", "T", "True", "TRUE", "false", "0", "f", "F", "False", "FALSE"} {
		if r := b.get(store.Pro, "/v1/markets?coin=BTC&resolved="+q); r.status != http.StatusOK {
			t.Errorf("resolved=%s: status %d: %s", q, r.status, r.body)
		}
	}
}
