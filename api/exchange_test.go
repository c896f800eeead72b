package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/store/redis/redistest"
)

// liveStores are the LiveExchange implementations the api is tested on:
// the in-memory one and Redis (a throwaway redis-server).
func liveStores() map[string]func(t *testing.T) store.LiveExchange {
	return map[string]func(t *testing.T) store.LiveExchange{
		"memory": func(*testing.T) store.LiveExchange { return memory.NewLive() },
		"redis": func(t *testing.T) store.LiveExchange {
			return redislive.New(redistest.Client(t), "")
		},
	}
}

// The live fixture: numbers chosen so that rounding shows.
const fixtureTradeID = 4_123_456_789

var fixtureMillis = now.Add(-time.Second).UnixMilli()

func fixtureDepth(kind store.ExchangeKind) store.DepthSnapshot {
	return store.DepthSnapshot{
		Symbol: "BTCUSDT", Kind: kind, Time: time.UnixMilli(fixtureMillis), CoinPrice: 95123.456789, LastUpdateID: 73829374829,
		Bids: []store.DepthLevel{{Price: 95123.45, Quantity: 0.123456789}, {Price: 95120.1, Quantity: 2}},
		Asks: []store.DepthLevel{{Price: 95123.4651, Quantity: 1.000004999}, {Price: 95130, Quantity: 0.000001}},
	}
}

// fixtureLatestDepth is fixtureDepth as the latest endpoints must write it.
const fixtureLatestDepth = `{"data":{"coin_price":95123.46,` +
	`"bids":[{"price":95123.45,"quantity":0.12346},{"price":95120.1,"quantity":2}],` +
	`"asks":[{"price":95123.47,"quantity":1},{"price":95130,"quantity":0}]}}`

// fixtureTrades are 150 older trades and the newest, whose numbers need
// rounding. Every trade carries IsBestMatch, futures too: the api must
// leave it out on futures whatever the store holds.
func fixtureTrades() []store.Trade {
	yes := true
	var out []store.Trade
	for id := int64(1000); id < 1150; id++ {
		out = append(out, store.Trade{ID: id, Price: 95000 + float64(id-1000), Qty: 0.5, QuoteQty: 47500,
			Time: time.UnixMilli(fixtureMillis - 1000 + id), IsBuyerMaker: id%2 == 0, IsBestMatch: &yes})
	}
	return append(out, store.Trade{ID: fixtureTradeID, Price: 95123.456789, Qty: 0.123456789, QuoteQty: 11743.63869555,
		Time: time.UnixMilli(fixtureMillis), IsBuyerMaker: true, IsBestMatch: &yes})
}

func fixtureTradeJSON(kind store.ExchangeKind) string {
	s := fmt.Sprintf(`{"id":4123456789,"price":95123.46,"qty":0.12346,"quoteQty":11743.6387,"time":%d,"isBuyerMaker":true`, fixtureMillis)
	if kind == store.Spot {
		s += `,"isBestMatch":true`
	}
	return s + "}"
}

// loadLive records the fixture for BTC, spot and futures.
func loadLive(t *testing.T, l store.LiveExchange) {
	t.Helper()
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		if err := l.SetLatestDepth(t.Context(), store.BTC, k, fixtureDepth(k)); err != nil {
			t.Fatal(err)
		}
		if err := l.AddTrades(t.Context(), store.BTC, k, fixtureTrades()); err != nil {
			t.Fatal(err)
		}
	}
}

// liveSetup is a server whose LiveExchange holds the BTC fixture.
func liveSetup(t *testing.T, newLive func(*testing.T) store.LiveExchange) *bundle {
	t.Helper()
	l := newLive(t)
	loadLive(t, l)
	return setup(t, func(o *setupOpts) { o.live = l })
}

// exchangePaths are the eight endpoints of SPEC 4.3 for BTC.
var exchangePaths = []string{
	"/v1/btc/spot/snapshots", "/v1/btc/future/snapshots",
	"/v1/btc/spot/latest", "/v1/btc/future/latest",
	"/v1/btc/spot/trades", "/v1/btc/future/trades",
	"/v1/btc/spot/trade/latest", "/v1/btc/future/trade/latest",
}

func TestExchangePlanGating(t *testing.T) {
	t.Parallel()
	b := liveSetup(t, liveStores()["memory"])
	loadHistory(t, b.store)
	for _, path := range exchangePaths {
		for _, tier := range []store.Tier{store.Starter, store.ProTrial} {
			e := wantError(t, b.get(tier, path), http.StatusForbidden, "TIER_ACCESS_DENIED")
			d, _ := e["details"].(map[string]any)
			if d["required_tier"] != "PRO" || d["current_tier"] != string(tier) || d["upgrade_url"] != "/v1/account/billing" {
				t.Errorf("%s %s: details = %v", tier, path, e["details"])
			}
		}
		for _, tier := range []store.Tier{store.Pro, store.Suite, store.Enterprise} {
			if r := b.get(tier, path); r.status != http.StatusOK {
				t.Errorf("%s %s: %d %s", tier, path, r.status, r.body)
			}
		}
		wantError(t, b.get("", path), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	// The plan is checked before the coin: a Starter learns what to buy.
	wantError(t, b.get(store.Starter, "/v1/doge/spot/latest"), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

func TestLatestDepth(t *testing.T) {
	t.Parallel()
	for name, newLive := range liveStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := liveSetup(t, newLive)
			for _, path := range []string{"/v1/btc/spot/latest", "/v1/btc/future/latest", "/v1/BTC/spot/latest", "/v1/Btc/future/latest"} {
				r := b.get(store.Pro, path)
				if r.status != http.StatusOK || string(r.body) != fixtureLatestDepth {
					t.Errorf("%s: %d\n got %s\nwant %s", path, r.status, r.body, fixtureLatestDepth)
				}
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s: Content-Type %q", path, ct)
				}
				// How old the depth is: a collector that stopped hearing
				// from Binance leaves the last one.
				if lm, want := r.header.Get("Last-Modified"), time.UnixMilli(fixtureMillis).UTC().Format(http.TimeFormat); lm != want {
					t.Errorf("%s: Last-Modified %q, want %q (the depth's time)", path, lm, want)
				}
			}
		})
	}
}

// TestLatestDepthRoundsHalfCentMid checks SPEC 2.4's rounding of the
// coin price on the common case of BTC spot: a one-cent spread, whose mid
// is a half cent. Halves round away from zero whatever float holds them;
// rounded as floats, 16% of such mids (76600.02/76600.03 among them) came
// out as the bid and the rest as the ask.
func TestLatestDepthRoundsHalfCentMid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		bid, ask, mid float64
		want          string
	}{
		{76600.02, 76600.03, 76600.025, "76600.03"},
		{76600.05, 76600.06, 76600.055, "76600.06"},
		{76600.03, 76600.04, 76600.035, "76600.04"},
	} {
		l := memory.NewLive()
		d := store.DepthSnapshot{Symbol: "BTCUSDT", Kind: store.Spot, Time: time.UnixMilli(fixtureMillis), CoinPrice: c.mid, LastUpdateID: 1,
			Bids: []store.DepthLevel{{Price: c.bid, Quantity: 1}}, Asks: []store.DepthLevel{{Price: c.ask, Quantity: 1}}}
		if err := l.SetLatestDepth(t.Context(), store.BTC, store.Spot, d); err != nil {
			t.Fatal(err)
		}
		b := setup(t, func(o *setupOpts) { o.live = l })
		r := b.get(store.Pro, "/v1/btc/spot/latest")
		var got struct {
			Data struct {
				CoinPrice json.Number `json:"coin_price"`
			} `json:"data"`
		}
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.UseNumber()
		if err := dec.Decode(&got); r.status != http.StatusOK || err != nil {
			t.Fatalf("%d %v %s", r.status, err, r.body)
		}
		if string(got.Data.CoinPrice) != c.want {
			t.Errorf("bid %v ask %v: coin_price %s, want %s", c.bid, c.ask, got.Data.CoinPrice, c.want)
		}
	}
}

type tradePage struct {
	Data  []map[string]any `json:"data"`
	Total int              `json:"total"`
	Limit int              `json:"limit"`
}

func TestTrades(t *testing.T) {
	t.Parallel()
	for name, newLive := range liveStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := liveSetup(t, newLive)
			for _, kind := range []store.ExchangeKind{store.Spot, store.Future} {
				base := "/v1/btc/" + string(kind)

				// Exact bytes of a one-trade page and of the latest trade.
				one := b.get(store.Pro, base+"/trades?limit=1")
				if want := `{"data":[` + fixtureTradeJSON(kind) + `],"total":1,"limit":1}`; string(one.body) != want {
					t.Errorf("%s trades?limit=1:\n got %s\nwant %s", kind, one.body, want)
				}
				latest := b.get(store.Enterprise, base+"/trade/latest")
				if want := `{"data":` + fixtureTradeJSON(kind) + `}`; string(latest.body) != want {
					t.Errorf("%s trade/latest:\n got %s\nwant %s", kind, latest.body, want)
				}
				if lm := latest.header.Get("Last-Modified"); lm == "" {
					t.Errorf("%s trade/latest: no Last-Modified", kind)
				}

				// Default limit, newest first, total is the number returned.
				page := decode[tradePage](t, b.get(store.Suite, base+"/trades"))
				if page.Total != 100 || len(page.Data) != 100 || page.Limit != 100 {
					t.Fatalf("%s default page: total %d, %d trades, limit %d", kind, page.Total, len(page.Data), page.Limit)
				}
				if page.Data[0]["id"] != float64(fixtureTradeID) || page.Data[1]["id"] != 1149.0 || page.Data[99]["id"] != 1051.0 {
					t.Errorf("%s trades not newest first: %v, %v … %v", kind, page.Data[0]["id"], page.Data[1]["id"], page.Data[99]["id"])
				}
				all := decode[tradePage](t, b.get(store.Pro, base+"/trades?limit=1000"))
				if all.Total != 151 || len(all.Data) != 151 || all.Limit != 1000 {
					t.Errorf("%s limit=1000: total %d, %d trades, limit %d", kind, all.Total, len(all.Data), all.Limit)
				}
				// isBestMatch: on every spot trade, on no futures trade (absent,
				// not null or false).
				raw := b.get(store.Pro, base+"/trades?limit=1000").body
				if n := strings.Count(string(raw), `"isBestMatch"`); (kind == store.Spot) != (n == 151) || (kind == store.Future) != (n == 0) {
					t.Errorf("%s: isBestMatch appears %d times in 151 trades", kind, n)
				}
				for _, tr := range all.Data {
					want := 6
					if kind == store.Spot {
						want = 7
					}
					if len(tr) != want {
						t.Fatalf("%s trade has fields %v, want %d", kind, tr, want)
					}
				}
				for _, q := range []string{"limit=0", "limit=1001", "limit=ten", "limit=-1"} {
					wantError(t, b.get(store.Pro, base+"/trades?"+q), http.StatusBadRequest, "VALIDATION_ERROR")
				}
			}
		})
	}
}

// TestSpotTradeWithoutBestMatch: a spot trade the exchange sent without
// isBestMatch is served without it rather than with an invented value.
func TestSpotTradeWithoutBestMatch(t *testing.T) {
	t.Parallel()
	l := memory.NewLive()
	tr := store.Trade{ID: 7, Price: 180.123, Qty: 2, QuoteQty: 360.246, Time: time.UnixMilli(fixtureMillis)}
	if err := l.AddTrades(t.Context(), store.SOL, store.Spot, []store.Trade{tr}); err != nil {
		t.Fatal(err)
	}
	b := setup(t, func(o *setupOpts) { o.live = l })
	want := fmt.Sprintf(`{"data":{"id":7,"price":180.12,"qty":2,"quoteQty":360.246,"time":%d,"isBuyerMaker":false}}`, fixtureMillis)
	if r := b.get(store.Pro, "/v1/sol/spot/trade/latest"); string(r.body) != want {
		t.Errorf("got %s\nwant %s", r.body, want)
	}
}

// TestExchangeMissingData: nothing recorded yet is a clear answer, never
// a 500.
func TestExchangeMissingData(t *testing.T) {
	t.Parallel()
	for name, newLive := range liveStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := liveSetup(t, newLive) // BTC only: ETH and SOL have nothing
			e := wantError(t, b.get(store.Pro, "/v1/eth/future/latest"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
			if e["message"] != "no depth recorded yet for eth futures" {
				t.Errorf("message %q", e["message"])
			}
			e = wantError(t, b.get(store.Pro, "/v1/sol/spot/trade/latest"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
			if e["message"] != "no trades recorded yet for sol spot" {
				t.Errorf("message %q", e["message"])
			}
			for _, path := range []string{"/v1/eth/spot/trades", "/v1/sol/future/trades?limit=7"} {
				r := b.get(store.Pro, path)
				if want := `{"data":[],"total":0,"limit":`; r.status != http.StatusOK || !strings.HasPrefix(string(r.body), want) {
					t.Errorf("%s: %d %s", path, r.status, r.body)
				}
			}
			for _, path := range []string{"/v1/doge/spot/latest", "/v1/doge/future/trades", "/v1/markets/spot/trade/latest"} {
				e := wantError(t, b.get(store.Pro, path), http.StatusNotFound, "RESOURCE_NOT_FOUND")
				if msg := e["message"].(string); !strings.Contains(msg, "unknown coin") || !strings.Contains(msg, "btc, eth and sol") {
					t.Errorf("%s: message %q", path, msg)
				}
			}
		})
	}
}

// TestExchangeLiveUnavailable: a Redis that is down is 503
// SERVICE_UNAVAILABLE (clients retry); a server without live data
// configured says so with 503 too.
func TestExchangeLiveUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	down := setup(t, func(o *setupOpts) { o.live = redislive.New(rdb, "") })
	none := setup(t)
	for _, path := range exchangePaths[2:] {
		e := wantError(t, down.get(store.Pro, path), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		if msg := e["message"].(string); strings.Contains(msg, addr) || strings.Contains(msg, "refused") {
			t.Errorf("%s: internals leaked: %q", path, msg)
		}
		e = wantError(t, none.get(store.Pro, path), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		if msg := e["message"].(string); !strings.Contains(msg, "not configured") {
			t.Errorf("%s without live data: message %q", path, msg)
		}
	}
	// History does not need the live data.
	if r := none.get(store.Pro, "/v1/btc/spot/snapshots"); r.status != http.StatusOK {
		t.Errorf("history without live data: %d %s", r.status, r.body)
	}
}

// History fixture: BTCUSDT snapshots every 12 hours over 40 days, the
// newest half a second before now. The 31-day window holds i = 0..61.
const (
	historyCount = 80
	inWindow     = 62
)

func historyAt(i int) time.Time {
	return now.Add(-time.Duration(i)*12*time.Hour - 500*time.Millisecond)
}

func historyDepth(kind store.ExchangeKind, i int) store.DepthSnapshot {
	d := store.DepthSnapshot{Symbol: "BTCUSDT", Kind: kind, Time: historyAt(i), CoinPrice: 95000.123456789 + float64(i),
		LastUpdateID: 1000 + int64(i),
		Bids:         []store.DepthLevel{{Price: 94999.99, Quantity: 0.123456789}},
		Asks:         []store.DepthLevel{{Price: 95000.01, Quantity: 1.5}, {Price: 95000.02, Quantity: 3}},
	}
	if kind == store.Future {
		d.CoinPrice += 10
		d.LastUpdateID += 1_000_000
	}
	return d
}

func loadHistory(t *testing.T, st store.Store) {
	t.Helper()
	var snaps []store.DepthSnapshot
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		for i := range historyCount {
			snaps = append(snaps, historyDepth(k, i))
		}
	}
	// An ETHUSDT snapshot the BTC endpoints must never serve.
	eth := historyDepth(store.Spot, 0)
	eth.Symbol = "ETHUSDT"
	snaps = append(snaps, eth)
	if err := st.AppendDepth(t.Context(), snaps); err != nil {
		t.Fatal(err)
	}
}

type depthPage struct {
	Data       []map[string]any `json:"data"`
	Total      int              `json:"total"`
	Limit      int              `json:"limit"`
	Offset     int              `json:"offset"`
	NextCursor string           `json:"next_cursor"`
	Warning    *string          `json:"warning"`
}

// ids returns the last_update_id of each snapshot of a page, which
// identifies it in the fixture.
func (p depthPage) ids() []int {
	out := make([]int, len(p.Data))
	for i, d := range p.Data {
		out[i] = int(d["last_update_id"].(float64))
	}
	return out
}

func TestDepthHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loadHistory(t, b.store)

	// Exact bytes of the newest spot snapshot: numbers as recorded.
	one := b.get(store.Enterprise, "/v1/btc/spot/snapshots?limit=1")
	want := fmt.Sprintf(`{"data":[{"symbol":"BTCUSDT","time_epoch_ms":%d,"coin_price":95000.123456789,`+
		`"bids":[{"price":94999.99,"quantity":0.123456789}],"asks":[{"price":95000.01,"quantity":1.5},{"price":95000.02,"quantity":3}],`+
		`"last_update_id":1000}],"total":80,"limit":1,"offset":0,"next_cursor":%q}`, historyAt(0).UnixMilli(), decode[depthPage](t, one).NextCursor)
	if one.status != http.StatusOK || string(one.body) != want {
		t.Errorf("newest spot snapshot: %d\n got %s\nwant %s", one.status, one.body, want)
	}
	fut := decode[depthPage](t, b.get(store.Enterprise, "/v1/btc/future/snapshots?limit=2"))
	if fut.Total != historyCount || fut.Data[0]["coin_price"] != 95010.123456789 || fut.ids()[1] != 1_001_001 {
		t.Errorf("futures: total %d, first %v", fut.Total, fut.Data[0])
	}

	ms := func(i int) string { return itoa(historyAt(i).UnixMilli()) }
	cases := []struct {
		name       string
		query      string
		total      int
		first, len int // first = i of the first snapshot on the page
	}{
		{"default page", "", historyCount, 0, historyCount},
		{"limit", "limit=10", historyCount, 0, 10},
		{"limit and offset", "limit=10&offset=75", historyCount, 75, 5},
		{"offset past the end", "offset=500", historyCount, 0, 0},
		{"start_time inclusive", "start_time=" + ms(10), 11, 0, 11},
		{"end_time inclusive", "end_time=" + ms(10), historyCount - 10, 10, historyCount - 10},
		{"both", "start_time=" + ms(20) + "&end_time=" + ms(15), 6, 15, 6},
		{"both equal", "start_time=" + ms(20) + "&end_time=" + ms(20), 1, 20, 1},
		{"ISO 8601", "start_time=" + historyAt(3).Format(time.RFC3339Nano), 4, 0, 4},
		{"nothing in range", "start_time=" + itoa(historyAt(3).UnixMilli()+1) + "&end_time=" + itoa(historyAt(2).UnixMilli()-1), 0, 0, 0},
		{"limit 1000", "limit=1000", historyCount, 0, historyCount},
	}
	for _, tc := range cases {
		p := decode[depthPage](t, b.get(store.Enterprise, "/v1/btc/spot/snapshots?"+tc.query))
		if p.Total != tc.total || len(p.Data) != tc.len || p.Warning != nil {
			t.Errorf("%s: total %d, %d snapshots, warning %v; want %d, %d", tc.name, p.Total, len(p.Data), p.Warning, tc.total, tc.len)
			continue
		}
		if p.Data == nil {
			t.Errorf("%s: data is null, want []", tc.name)
		}
		for j, id := range p.ids() {
			if id != 1000+tc.first+j {
				t.Errorf("%s: snapshot %d is i=%d, want %d (newest first)", tc.name, j, id-1000, tc.first+j)
				break
			}
		}
	}
	raw := b.get(store.Enterprise, "/v1/btc/spot/snapshots?offset=500")
	if !strings.HasPrefix(string(raw.body), `{"data":[],`) || strings.Contains(string(raw.body), "warning") {
		t.Errorf("empty page: %s", raw.body)
	}

	for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "start_time=yesterday", "end_time=1e12",
		"start_time=" + ms(10) + "&end_time=" + ms(11)} {
		wantError(t, b.get(store.Enterprise, "/v1/btc/spot/snapshots?"+q), http.StatusBadRequest, "VALIDATION_ERROR")
	}
}

func TestDepthHistoryWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loadHistory(t, b.store)
	windowStart := now.Add(-31 * 24 * time.Hour).Format("2006-01-02T15:04:05.000Z")
	for _, tier := range []store.Tier{store.Pro, store.Suite} {
		for _, kind := range []string{"spot", "future"} {
			path := "/v1/btc/" + kind + "/snapshots"
			// Without start_time the history begins at the window, silently.
			p := decode[depthPage](t, b.get(tier, path+"?limit=1000"))
			if p.Total != inWindow || len(p.Data) != inWindow || p.Warning != nil {
				t.Errorf("%s %s: total %d, %d snapshots, warning %v; want %d and no warning", tier, kind, p.Total, len(p.Data), p.Warning, inWindow)
			}
			if r := b.get(tier, path); strings.Contains(string(r.body), "warning") {
				t.Errorf("%s %s: a request inside the window carries a warning: %.200s", tier, kind, r.body)
			}
			// A start_time before the window: what the window allows, and a warning.
			p = decode[depthPage](t, b.get(tier, path+"?limit=1000&start_time="+itoa(historyAt(70).UnixMilli())))
			if p.Total != inWindow || p.Warning == nil || !strings.Contains(*p.Warning, windowStart) || !strings.Contains(*p.Warning, string(tier)) {
				t.Errorf("%s %s start_time before the window: total %d, warning %v", tier, kind, p.Total, p.Warning)
			}
			// An end_time before the window: nothing, and a warning.
			p = decode[depthPage](t, b.get(tier, path+"?end_time="+itoa(historyAt(65).UnixMilli())))
			if p.Total != 0 || len(p.Data) != 0 || p.Warning == nil || !strings.Contains(*p.Warning, "no snapshots") {
				t.Errorf("%s %s end_time before the window: total %d, warning %v", tier, kind, p.Total, p.Warning)
			}
			// Inside the window, filters work as for everyone.
			p = decode[depthPage](t, b.get(tier, path+"?start_time="+itoa(historyAt(61).UnixMilli())+"&end_time="+itoa(historyAt(60).UnixMilli())))
			if p.Total != 2 || p.Warning != nil {
				t.Errorf("%s %s inside the window: total %d, warning %v", tier, kind, p.Total, p.Warning)
			}
		}
	}
	// Enterprise sees everything, without a warning.
	p := decode[depthPage](t, b.get(store.Enterprise, "/v1/btc/spot/snapshots?limit=1000&start_time=0"))
	if p.Total != historyCount || p.Warning != nil {
		t.Errorf("enterprise: total %d, warning %v", p.Total, p.Warning)
	}
}

// TestDepthHistoryOtherCoins: only BTC has history; other coins are 404
// saying so, whatever the plan (the path does not exist).
func TestDepthHistoryOtherCoins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ path, says string }{
		{"/v1/eth/spot/snapshots", "btc only"},
		{"/v1/sol/future/snapshots?limit=5", "btc only"},
		{"/v1/ETH/future/snapshots", "/v1/eth/future/latest"},
		{"/v1/doge/spot/snapshots", `unknown coin "doge"`},
	} {
		for _, tier := range []store.Tier{store.Enterprise, store.Starter, ""} {
			e := wantError(t, b.get(tier, tc.path), http.StatusNotFound, "RESOURCE_NOT_FOUND")
			if msg := e["message"].(string); !strings.Contains(msg, tc.says) {
				t.Errorf("%s: message %q does not say %q", tc.path, msg, tc.says)
			}
		}
	}
	e := wantError(t, b.do(http.MethodPost, "/v1/btc/spot/snapshots", b.keys[store.Pro], "application/json", "{}"), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	if !strings.Contains(e["message"].(string), "GET") {
		t.Errorf("405 message %q", e["message"])
	}
	wantError(t, b.get(store.Pro, "/v1/eth/swap/snapshots"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
}

func TestExchangeOpenAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/btc/spot/snapshots", "/v1/btc/future/snapshots", "/v1/{coin}/spot/latest", "/v1/{coin}/future/latest",
		"/v1/{coin}/spot/trades", "/v1/{coin}/future/trades", "/v1/{coin}/spot/trade/latest", "/v1/{coin}/future/trade/latest"} {
		op, ok := doc.Paths[p]["get"]
		if !ok {
			t.Errorf("path %s missing", p)
			continue
		}
		for _, status := range []string{"200", "403", "404", "503"} {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s does not document %s", p, status)
			}
		}
	}
	schemaOf := func(path string) string {
		ref, _ := doc.Paths[path]["get"].Responses["200"].Content["application/json"].Schema["$ref"].(string)
		return ref[strings.LastIndexByte(ref, '/')+1:]
	}
	spot, fut := schemaOf("/v1/{coin}/spot/trades"), schemaOf("/v1/{coin}/future/trade/latest")
	if spot == "" || fut == "" || spot == fut {
		t.Fatalf("trade schemas: spot %q, futures %q", spot, fut)
	}
	if _, ok := doc.Components.Schemas["SpotTradeJSON"].Properties["isBestMatch"]; !ok {
		t.Errorf("spot trade schema lacks isBestMatch: %v", doc.Components.Schemas["SpotTradeJSON"])
	}
	if _, ok := doc.Components.Schemas["FutureTradeJSON"].Properties["isBestMatch"]; ok {
		t.Errorf("futures trade schema has isBestMatch")
	}
	if p := doc.Components.Schemas["DepthPage"].Properties; p["warning"] == nil || p["data"] == nil {
		t.Errorf("depth page schema = %v", p)
	}

	// offset skips in the chosen order: oldest first with order=asc.
	var params struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Description string `json:"description"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &params); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/btc/spot/snapshots", "/v1/btc/future/snapshots"} {
		for _, prm := range params.Paths[p]["get"].Parameters {
			if prm.Name == "offset" && !strings.Contains(prm.Schema.Description, "in the chosen order") {
				t.Errorf("%s: offset is documented as %q: it skips in the chosen order (oldest first with order=asc)", p, prm.Schema.Description)
			}
		}
	}
}
