package collect

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// A Gamma market as the real API writes one: lists JSON-encoded in strings,
// volume both as a string and a number, Down listed first here.
const gammaSample = `{
	"id": "1043567",
	"question": "Bitcoin Up or Down - December 28, 8:40PM-8:45PM ET",
	"conditionId": "0xabc",
	"slug": "btc-updown-5m-1766972400",
	"startDate": "2025-12-28T01:40:12.345Z",
	"eventStartTime": "2025-12-29T01:40:00Z",
	"endDate": "2025-12-29T01:45:00Z",
	"outcomes": "[\"Down\", \"Up\"]",
	"outcomePrices": "[\"0\", \"1\"]",
	"clobTokenIds": "[\"222\", \"111\"]",
	"volume": "12345.67",
	"volumeNum": 12345.67,
	"liquidity": "100.5",
	"closed": true,
	"closedTime": "2025-12-29 01:46:12+00",
	"events": [{"id": 98765}]
}`

func TestGammaMarketShapes(t *testing.T) {
	t.Parallel()
	var g gammaMarket
	if err := json.Unmarshal([]byte(gammaSample), &g); err != nil {
		t.Fatal(err)
	}
	up, down, err := g.tokens()
	if err != nil || up != "111" || down != "222" {
		t.Fatalf("tokens: up %q down %q err %v; want outcomes[i] paired with clobTokenIds[i]", up, down, err)
	}
	if w := g.outcome(); w != store.OutcomeUp {
		t.Errorf("outcome %q, want Up (outcomePrices follow outcomes' order)", w)
	}
	if v := g.volume(); v == nil || *v != 12345.67 {
		t.Errorf("volume %v", v)
	}
	if l := g.liquidity(); l == nil || *l != 100.5 {
		t.Errorf("liquidity from the string field: %v", l)
	}
	if g.Events[0].ID != "98765" {
		t.Errorf("event id %q from a number", g.Events[0].ID)
	}
	if ct, ok := parseTime(g.ClosedTime); !ok || !ct.Equal(time.Date(2025, 12, 29, 1, 46, 12, 0, time.UTC)) {
		t.Errorf("closedTime %q parsed as %v %v", g.ClosedTime, ct, ok)
	}

	start, end := time.Date(2025, 12, 29, 1, 40, 0, 0, time.UTC), time.Date(2025, 12, 29, 1, 45, 0, 0, time.UTC)
	m, note, err := toMarket(gammaFound{market: g, event: g.Events[0]}, store.BTC, store.M5, start, end)
	if err != nil || note != "" {
		t.Fatalf("toMarket: %v %q", err, note)
	}
	want := store.Market{Slug: "btc-updown-5m-1766972400", MarketID: "1043567", EventID: "98765", Coin: store.BTC,
		MarketType: store.M5, StartTime: start, EndTime: end, ConditionID: "0xabc", ClobTokenUp: "111", ClobTokenDown: "222"}
	if m.Slug != want.Slug || m.MarketID != want.MarketID || m.ClobTokenUp != want.ClobTokenUp || !m.StartTime.Equal(start) || !m.EndTime.Equal(end) {
		t.Errorf("toMarket = %+v, want %+v", m, want)
	}

	// Gamma's times win over a window that disagrees, and are noted.
	m, note, err = toMarket(gammaFound{market: g}, store.BTC, store.M5, start.Add(5*time.Minute), end.Add(5*time.Minute))
	if err != nil || !m.StartTime.Equal(start) || !strings.Contains(note, "eventStartTime") {
		t.Errorf("disagreeing window: %v %v %q", m.StartTime, err, note)
	}
	// A market far longer than the window is not this series' market.
	if _, _, err := toMarket(gammaFound{market: g}, store.BTC, store.H1, start, start.Add(time.Hour)); !errors.Is(err, errMalformed) {
		t.Errorf("a 5-minute market accepted for an hour window: %v", err)
	}
}

func TestGammaOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		closed   bool
		outcomes []string
		prices   []string
		want     string
	}{
		{true, []string{"Up", "Down"}, []string{"1", "0"}, store.OutcomeUp},
		{true, []string{"Up", "Down"}, []string{"0", "1"}, store.OutcomeDown},
		{true, []string{"Up", "Down"}, []string{"0.9999", "0.0001"}, store.OutcomeUp},
		{false, []string{"Up", "Down"}, []string{"1", "0"}, ""},                         // not closed
		{true, []string{"Up", "Down"}, []string{"0.5", "0.5"}, store.OutcomeFiftyFifty}, // a daily tie
		{false, []string{"Up", "Down"}, []string{"0.5", "0.5"}, ""},                     // open, not settled
		{true, []string{"Up", "Down"}, []string{"0.505", "0.495"}, ""},                  // not settled
		{true, []string{"Up", "Down"}, []string{"1", "1"}, ""},                          // nonsense
		{true, []string{"Up", "Down"}, []string{"one", "0"}, ""},                        // malformed
		{true, []string{"Yes", "No"}, []string{"1", "0"}, ""},                           // not an up/down market
		{true, []string{"Up", "Down", "X"}, []string{"1", "0"}, ""},                     // three outcomes
		{true, []string{"Up", "Down"}, []string{"1"}, ""},                               // missing price
	} {
		g := gammaMarket{Closed: flexBool(tc.closed), Outcomes: tc.outcomes, OutcomePrices: tc.prices}
		if got := g.outcome(); got != tc.want {
			t.Errorf("closed=%v %v %v: outcome %q, want %q", tc.closed, tc.outcomes, tc.prices, got, tc.want)
		}
	}
}

func TestFlexibleFields(t *testing.T) {
	t.Parallel()
	var l jsonList
	for in, want := range map[string][]string{
		`"[\"Up\", \"Down\"]"`: {"Up", "Down"},
		`["Up","Down"]`:        {"Up", "Down"},
		`"[123, \"456\"]"`:     {"123", "456"},
		`null`:                 nil,
		`""`:                   nil,
	} {
		if err := json.Unmarshal([]byte(in), &l); err != nil || !slices.Equal(l, want) {
			t.Errorf("jsonList %s = %q %v, want %q", in, l, err, want)
		}
	}
	for _, bad := range []string{`"[1, "`, `{}`, `"up"`} {
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("jsonList accepted %s as %q", bad, l)
		}
	}
	var f flexFloat
	for in, want := range map[string]flexFloat{`"0.52"`: {V: 0.52, Set: true}, `0.52`: {V: 0.52, Set: true}, `""`: {}, `null`: {}, `"1e3"`: {V: 1000, Set: true}} {
		if err := json.Unmarshal([]byte(in), &f); err != nil || f != want {
			t.Errorf("flexFloat %s = %+v %v", in, f, err)
		}
	}
	for _, bad := range []string{`"NaN"`, `"Infinity"`, `"abc"`, `true`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &f); err == nil {
			t.Errorf("flexFloat accepted %s as %+v", bad, f)
		}
	}
	var b flexBool
	for in, want := range map[string]bool{`true`: true, `false`: false, `"true"`: true, `"false"`: false} {
		if err := json.Unmarshal([]byte(in), &b); err != nil || bool(b) != want {
			t.Errorf("flexBool %s = %v %v", in, b, err)
		}
	}
}

func TestClobBook(t *testing.T) {
	t.Parallel()
	// The CLOB lists levels worst first; an emptied level has size 0.
	raw := `{"market":"0xabc","asset_id":"111","timestamp":"1766972400123","hash":"h",
		"bids":[{"price":"0.48","size":"10"},{"price":"0.5","size":"0"},{"price":"0.49","size":"20.5"}],
		"asks":[{"price":"0.53","size":"7"},{"price":"0.52","size":"3"},{"price":"0.51","size":"1.25"}],
		"min_order_size":"5","tick_size":"0.01","neg_risk":false,"last_trade_price":"0.51"}`
	var b clobBook
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	book, err := b.book(2)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Book{
		Bids: []store.Level{{Price: 0.49, Size: 20.5}, {Price: 0.48, Size: 10}},
		Asks: []store.Level{{Price: 0.51, Size: 1.25}, {Price: 0.52, Size: 3}},
	}
	if !slices.Equal(book.Bids, want.Bids) || !slices.Equal(book.Asks, want.Asks) {
		t.Errorf("book = %+v, want best first, top 2, no empty level: %+v", book, want)
	}
	for _, bad := range []string{
		`{"bids":[{"price":"0.5"}]}`,             // no size
		`{"asks":[{"price":"1.5","size":"1"}]}`,  // outside (0, 1)
		`{"asks":[{"price":"0.5","size":"-1"}]}`, // negative size
		`{"asks":[{"price":"abc","size":"1"}]}`,  // not a number
	} {
		var b clobBook
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			_, err = b.book(10)
			if !errors.Is(err, errMalformed) {
				t.Errorf("book %s: %v, want errMalformed", bad, err)
			}
		}
	}
}

func TestBinanceShapes(t *testing.T) {
	t.Parallel()
	var d binanceDepth
	raw := `{"lastUpdateId":1027024,"E":1700000000123,"T":1700000000120,
		"bids":[["94999.90000000","0.5"],["95000.00000000","1.25"]],
		"asks":[["95000.10","2"],["95000.20","0"]]}`
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1700000000000)
	s, err := d.snapshot(store.BTC, store.Future, at, 20)
	if err != nil {
		t.Fatal(err)
	}
	if s.Symbol != "BTCUSDT" || s.Kind != store.Future || !s.Time.Equal(at) || s.LastUpdateID != 1027024 ||
		s.Bids[0].Price != 95000 || len(s.Asks) != 1 || math.Abs(s.CoinPrice-95000.05) > 1e-9 {
		t.Errorf("depth snapshot %+v", s)
	}
	if _, err := (binanceDepth{}).snapshot(store.BTC, store.Spot, at, 20); !errors.Is(err, errMalformed) {
		t.Errorf("an empty book: %v", err)
	}

	var trades []binanceTrade
	raw = `[{"id":28457,"price":"4.00000100","qty":"12.00000000","quoteQty":"48.000012","time":1499865549590,"isBuyerMaker":true,"isBestMatch":true},
		{"id":28458,"price":"4.1","qty":"1","time":1499865549591,"isBuyerMaker":false}]`
	if err := json.Unmarshal([]byte(raw), &trades); err != nil {
		t.Fatal(err)
	}
	spot, err := trades[0].trade(store.Spot)
	if err != nil || spot.IsBestMatch == nil || !*spot.IsBestMatch || spot.QuoteQty != 48.000012 || spot.Time.UnixMilli() != 1499865549590 {
		t.Errorf("spot trade %+v %v", spot, err)
	}
	fut, err := trades[1].trade(store.Future)
	if err != nil || fut.IsBestMatch != nil || fut.QuoteQty != 4.1 {
		t.Errorf("futures trade %+v %v: want no isBestMatch and quoteQty computed", fut, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"2":                             2 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"soon":                          0,
		"-1":                            0,
		"172800":                        48 * time.Hour, // a two-day Binance ban
		"1e12":                          maxRetryAfter,
		"Sat, 01 Jan 2028 00:00:00 GMT": maxRetryAfter,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	for n := 1; n <= 10; n++ {
		ceil := min(b.Base<<(n-1), b.Max)
		for range 100 {
			if d := b.Delay(n); d < 0 || d > ceil {
				t.Fatalf("delay %d = %v, want within [0, %v]", n, d, ceil)
			}
		}
	}
	if d := (Backoff{}).Delay(3); d != 0 {
		t.Errorf("zero backoff waits %v", d)
	}
}

// FuzzUpstreamShapes feeds arbitrary bodies to every upstream decoder: none
// may panic, and what decodes must convert or fail with an error.
func FuzzUpstreamShapes(f *testing.F) {
	f.Add([]byte(gammaSample))
	f.Add([]byte(`{"bids":[{"price":"0.5","size":"1"}],"asks":[]}`))
	f.Add([]byte(`{"lastUpdateId":1,"bids":[["1","2"]],"asks":[["3","4"]]}`))
	f.Add([]byte(`{"outcomes":"[\"Up\"]","clobTokenIds":[1,2],"closed":"true","outcomePrices":"[\"1\",\"0\"]"}`))
	f.Add([]byte(`{"id":1,"price":"NaN","qty":"1","time":5}`))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var g gammaMarket
		if json.Unmarshal(body, &g) == nil {
			_, _, _ = g.tokens()
			_ = g.outcome()
			if m, _, err := toMarket(gammaFound{market: g}, store.BTC, store.M5, start, start.Add(5*time.Minute)); err == nil && (m.ClobTokenUp == "" || m.MarketID == "") {
				t.Errorf("toMarket accepted a market without tokens or id: %+v", m)
			}
		}
		var b clobBook
		if json.Unmarshal(body, &b) == nil {
			if bk, err := b.book(5); err == nil {
				for _, l := range append(slices.Clone(bk.Bids), bk.Asks...) {
					if !(l.Price > 0 && l.Price < 1 && l.Size > 0) {
						t.Errorf("book kept level %+v", l)
					}
				}
			}
		}
		var d binanceDepth
		if json.Unmarshal(body, &d) == nil {
			if s, err := d.snapshot(store.BTC, store.Spot, start, 5); err == nil && (math.IsNaN(s.CoinPrice) || len(s.Bids) > 5) {
				t.Errorf("depth snapshot %+v", s)
			}
		}
		var tr binanceTrade
		if json.Unmarshal(body, &tr) == nil {
			if x, err := tr.trade(store.Spot); err == nil && (math.IsNaN(x.Price) || x.IsBestMatch == nil) {
				t.Errorf("trade %+v", x)
			}
		}
	})
}
