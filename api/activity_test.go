package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// onBothStores runs test against the real router on the memory store and
// on Postgres, each holding the fixtures and activityFixtures.
func onBothStores(t *testing.T, test func(t *testing.T, b *bundle)) {
	t.Helper()
	eachStore(t, true, func(t *testing.T, st store.Store) {
		b := setup(t, func(o *setupOpts) { o.store = st })
		addActivity(t, b.store)
		test(t, b)
	})
}

// eachStore runs test in a subtest per store, memory and Postgres, each
// holding the fixture markets; parallel runs the subtests side by side.
func eachStore(t *testing.T, parallel bool, test func(t *testing.T, st store.Store)) {
	t.Helper()
	for _, name := range []string{"memory", "postgres"} {
		t.Run(name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			var st store.Store = memory.New()
			if name == "postgres" {
				st = pgtest.NewStore(t)
			}
			loadFixtures(t, st)
			test(t, st)
		})
	}
}

// activityTrades are the trades of the snapshot market: 150, one every
// 1.5 s from its start, alternating outcome and side.
func activityTrades() []store.MarketTrade {
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	var out []store.MarketTrade
	for i := range 150 {
		out = append(out, store.MarketTrade{
			Time:    start.Add(time.Duration(i) * 1500 * time.Millisecond),
			Outcome: []string{store.OutcomeUp, store.OutcomeDown}[i%2], Price: 0.01 * float64(1+i%99), Size: 5 + float64(i),
			Side: []string{store.SideBuy, store.SideSell}[i/2%2], FeeRateBps: 1000, TxHash: fmt.Sprintf("0x%04x", i),
		})
	}
	return out
}

// activityGaps are the snapshot market's recording gaps.
func activityGaps() []store.Gap {
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	return []store.Gap{
		{From: start.Add(2 * time.Minute), To: start.Add(2*time.Minute + 4500*time.Millisecond)},
		{From: start.Add(9 * time.Minute), To: start.Add(10 * time.Minute)},
		{From: start.Add(9*time.Minute + 30*time.Second), To: start.Add(11 * time.Minute), Kind: store.GapTrades},
	}
}

// addActivity gives the snapshot market the upstream's fields, trades and
// gaps, and makes the newest resolved 24hr market a 50-50 tie.
func addActivity(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	slug, _ := snapshotMarket()
	m, err := st.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	m.UpstreamSlug = "btc-updown-15m-" + slug[strings.LastIndexByte(slug, '-')+1:]
	m.TakerFeeRate, m.FeeExponent, m.TickSize, m.MinOrderSize = ptr(0.07), ptr(1), ptr(0.001), ptr(5.0)
	m.FeeType = store.FeeTypeCryptoV2
	m.TickSizeChanges = []store.TickSizeChange{{Time: m.StartTime.Add(7*time.Minute + 250*time.Millisecond), TickSize: 0.001}}
	m.ResolutionSource, m.PriceToBeat, m.FinalPrice = store.SourceChainlink, m.CoinPriceStart, m.CoinPriceEnd
	day := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	tie, err := st.GetMarket(ctx, slugOf(store.BTC, store.H24, day))
	if err != nil {
		t.Fatal(err)
	}
	tie.Winner, tie.CoinPriceEnd = ptr(store.OutcomeFiftyFifty), tie.CoinPriceStart
	tie.ResolutionSource = store.SourceBinance1mNoonET
	if err := st.UpsertMarkets(ctx, []store.Market{m, tie}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMarketTrades(ctx, slug, activityTrades()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordGaps(ctx, slug, activityGaps()); err != nil {
		t.Fatal(err)
	}
}

// upstreamFields are the market object's fields beyond SPEC's.
var upstreamFields = []string{"upstream_slug", "taker_fee_rate", "fee_exponent", "fee_type", "maker_rebate_rate", "tick_size", "tick_size_changes",
	"min_order_size", "resolution_source", "price_to_beat", "final_price"}

func TestMarketUpstreamFields(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, b *bundle) {
		slug, _ := snapshotMarket()
		check := func(where string, m map[string]any) {
			t.Helper()
			want := map[string]any{"upstream_slug": "btc-updown-15m-" + slug[strings.LastIndexByte(slug, '-')+1:],
				"taker_fee_rate": 0.07, "fee_exponent": 1.0, "fee_type": "crypto_fees_v2", "tick_size": 0.001, "min_order_size": 5.0,
				"resolution_source": "chainlink", "price_to_beat": 95000.0, "final_price": 95100.0}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s: %s = %v, want %v", where, k, m[k], v)
				}
			}
			changes, _ := m["tick_size_changes"].([]any)
			if len(changes) != 1 {
				t.Fatalf("%s: tick_size_changes = %v", where, m["tick_size_changes"])
			}
			c := changes[0].(map[string]any)
			if c["time"] != "2026-04-29T12:52:00.250000Z" || c["tick_size"] != 0.001 || len(c) != 2 {
				t.Errorf("%s: tick size change = %v", where, c)
			}
		}
		check("GET market", decode[map[string]any](t, b.get(store.Pro, "/v1/markets/"+slug)))
		check("snapshots page", decode[snapshotResp](t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?limit=1")).Market)
		list := decode[marketList](t, b.get(store.Pro, "/v1/markets?coin=BTC&market_type=15m&limit=2"))
		check("market list", list.Markets[1])

		// A market that knows none of them: nulls, and no tick changes.
		live := decode[map[string]any](t, b.get(store.Pro, "/v1/markets/"+slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute))))
		for _, f := range upstreamFields {
			v, ok := live[f]
			switch {
			case !ok:
				t.Errorf("live market: %s missing", f)
			case f == "tick_size_changes":
				if a, isArr := v.([]any); !isArr || len(a) != 0 {
					t.Errorf("live market: tick_size_changes = %v, want []", v)
				}
			case v != nil:
				t.Errorf("live market: %s = %v, want null", f, v)
			}
		}

		// A daily tie is served as 50-50 and counts as resolved.
		day := slugOf(store.BTC, store.H24, now.Truncate(24*time.Hour).Add(-24*time.Hour))
		tie := decode[map[string]any](t, b.get(store.Pro, "/v1/markets/"+day))
		if tie["winner"] != "50-50" || tie["coin_price_end"] != tie["coin_price_start"] || tie["resolution_source"] != "binance-1m-noon-et" {
			t.Errorf("daily tie = %v", tie)
		}
		resolved := decode[marketList](t, b.get(store.Pro, "/v1/markets?coin=BTC&market_type=24hr&resolved=true"))
		if len(resolved.Markets) == 0 || resolved.Markets[0]["winner"] != "50-50" {
			t.Errorf("resolved=true does not list the 50-50 market first: %v", resolved.Markets)
		}
	})
}

type marketTradePage struct {
	Market map[string]any   `json:"market"`
	Trades []map[string]any `json:"trades"`
	Total  int              `json:"total"`
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
}

func TestMarketTrades(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, b *bundle) {
		slug, marketID := snapshotMarket()
		all := activityTrades()
		page := decode[marketTradePage](t, b.get(store.Pro, "/v1/markets/"+slug+"/trades"))
		if page.Total != 150 || len(page.Trades) != 100 || page.Limit != 100 || page.Offset != 0 || page.Market["slug"] != slug {
			t.Fatalf("default page: total %d, %d trades, limit %d, offset %d", page.Total, len(page.Trades), page.Limit, page.Offset)
		}
		// Newest first, every field as stored.
		for i, got := range page.Trades {
			want := all[len(all)-1-i]
			if got["time"] != recordTime(want.Time) || got["outcome"] != want.Outcome ||
				got["price"] != want.Price || got["size"] != want.Size || got["side"] != want.Side || got["fee_rate_bps"] != 1000.0 ||
				got["tx_hash"] != want.TxHash || len(got) != 7 {
				t.Fatalf("trade %d = %v, want %+v", i, got, want)
			}
		}
		tail := decode[marketTradePage](t, b.get(store.Pro, "/v1/markets/"+slug+"/trades?limit=1000&offset=140"))
		if tail.Total != 150 || len(tail.Trades) != 10 || tail.Limit != 1000 || tail.Trades[9]["time"] != recordTime(all[0].Time) {
			t.Errorf("last page: total %d, %d trades, limit %d", tail.Total, len(tail.Trades), tail.Limit)
		}
		past := decode[marketTradePage](t, b.get(store.Pro, "/v1/markets/"+slug+"/trades?offset=150"))
		if past.Total != 150 || past.Trades == nil || len(past.Trades) != 0 {
			t.Errorf("offset past the end: %+v", past)
		}
		byID := decode[marketTradePage](t, b.get(store.Pro, "/v1/markets/by-market-id/"+marketID+"/trades?limit=3&offset=1"))
		if byID.Total != 150 || len(byID.Trades) != 3 || byID.Trades[0]["time"] != recordTime(all[148].Time) || byID.Market["market_id"] != marketID {
			t.Errorf("by market id: %+v", byID)
		}
		// A market without trades answers an empty page.
		live := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute))
		if e := decode[marketTradePage](t, b.get(store.Pro, "/v1/markets/"+live+"/trades")); e.Total != 0 || e.Trades == nil {
			t.Errorf("no trades: %+v", e)
		}

		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "offset=-1"} {
			e := wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/trades?"+q), http.StatusBadRequest, "VALIDATION_ERROR")
			if name, _, _ := strings.Cut(q, "="); !strings.Contains(e["message"].(string), name) {
				t.Errorf("%s: message %q does not name %s", q, e["message"], name)
			}
		}
		wantError(t, b.get(store.Pro, "/v1/markets/btc-updown-15m-1/trades"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		wantError(t, b.get(store.Pro, "/v1/markets/by-market-id/nope/trades"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		wantError(t, b.get("", "/v1/markets/"+slug+"/trades"), http.StatusUnauthorized, "UNAUTHORIZED")
		// The route shares its shape with the exchange's /v1/{coin}/spot/trades
		// (TestTrades covers those): other collections are not found.
		wantError(t, b.get(store.Pro, "/v1/things/"+slug+"/trades"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		// Snapshots' plan rules: the 51st newest 5m market is outside Starter's window.
		old := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-50*5*time.Minute))
		wantError(t, b.get(store.Starter, "/v1/markets/"+old+"/trades"), http.StatusForbidden, "TIER_ACCESS_DENIED")
		if r := b.get(store.Pro, "/v1/markets/"+old+"/trades"); r.status != http.StatusOK {
			t.Errorf("pro, old market: %d %s", r.status, r.body)
		}
	})
}

// recordTime is a stored record's time as every format writes it: UTC
// with microseconds.
func recordTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func TestMarketTradesAsCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addActivity(t, b.store)
	slug, _ := snapshotMarket()
	path := "/v1/markets/" + slug + "/trades?limit=7&offset=2"
	r := b.getWith(store.Pro, path, map[string]string{"Accept": "text/csv"})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if !bytes.HasPrefix(r.body, []byte("slug,time,outcome,price,size,side,fee_rate_bps,tx_hash\n")) {
		t.Errorf("header: %s", r.body)
	}
	// The CSV is the export format: it decodes to the page's trades, newest
	// first, tx hashes included.
	dec, err := transfer.NewDecoder(bytes.NewReader(r.body), transfer.CSV)
	if err != nil {
		t.Fatal(err)
	}
	all := activityTrades()
	for i := range 7 {
		rec, err := dec.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if want := all[len(all)-3-i]; rec.Slug != slug || rec.Trade == nil || *rec.Trade != want {
			t.Errorf("row %d = %s %+v, want %+v", i, rec.Slug, rec.Trade, want)
		}
	}
	if _, err := dec.Decode(); err != io.EOF {
		t.Errorf("after 7 rows: %v", err)
	}
	e := b.getWith(store.Pro, "/v1/markets/btc-updown-5m-1/trades", map[string]string{"Accept": "text/csv"})
	wantError(t, e, http.StatusNotFound, "RESOURCE_NOT_FOUND")
	// Gaps have no CSV form: JSON.
	g := b.getWith(store.Pro, "/v1/markets/"+slug+"/gaps", map[string]string{"Accept": "text/csv"})
	if g.status != http.StatusOK || !strings.HasPrefix(g.header.Get("Content-Type"), "application/json") || !json.Valid(g.body) {
		t.Errorf("gaps with Accept: text/csv: %d %s", g.status, g.header.Get("Content-Type"))
	}
}

type gapList struct {
	Market map[string]any      `json:"market"`
	Gaps   []map[string]string `json:"gaps"`
}

func TestMarketGaps(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, b *bundle) {
		slug, marketID := snapshotMarket()
		for _, path := range []string{"/v1/markets/" + slug + "/gaps", "/v1/markets/by-market-id/" + marketID + "/gaps"} {
			got := decode[gapList](t, b.get(store.Pro, path))
			want := activityGaps()
			if got.Market["slug"] != slug || len(got.Gaps) != len(want) {
				t.Fatalf("%s: %+v", path, got)
			}
			for i, g := range want {
				if got.Gaps[i]["from"] != recordTime(g.From) || got.Gaps[i]["to"] != recordTime(g.To) || got.Gaps[i]["kind"] != g.Kind.Name() || len(got.Gaps[i]) != 3 {
					t.Errorf("%s: gap %d = %v, want %v", path, i, got.Gaps[i], g)
				}
			}
		}
		live := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute))
		if e := decode[gapList](t, b.get(store.Pro, "/v1/markets/"+live+"/gaps")); e.Gaps == nil || len(e.Gaps) != 0 {
			t.Errorf("a market without gaps: %+v", e)
		}
		wantError(t, b.get(store.Pro, "/v1/markets/btc-updown-15m-1/gaps"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		wantError(t, b.get(store.Pro, "/v1/markets/by-market-id/nope/gaps"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		old := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-50*5*time.Minute))
		wantError(t, b.get(store.Starter, "/v1/markets/"+old+"/gaps"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	})
}

func TestActivityOpenAPI(t *testing.T) {
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
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/markets/{slug}/trades", "/v1/markets/by-market-id/{marketId}/trades",
		"/v1/markets/{slug}/gaps", "/v1/markets/by-market-id/{marketId}/gaps"} {
		op, ok := doc.Paths[p]["get"]
		if !ok {
			t.Errorf("path %s missing", p)
			continue
		}
		for _, status := range []string{"400", "401", "403", "404", "503"} {
			ref, _ := op.Responses[status].Content["application/json"].Schema["$ref"].(string)
			if !strings.HasSuffix(ref, "/ErrorEnvelope") {
				t.Errorf("%s %s schema = %v, want the envelope", p, status, op.Responses[status].Content)
			}
		}
		_, csv := op.Responses["200"].Content["text/csv"]
		if want := strings.HasSuffix(p, "/trades"); csv != want {
			t.Errorf("%s documents text/csv: %v, want %v", p, csv, want)
		}
	}
	market := doc.Components.Schemas["MarketJSON"].Properties
	for _, f := range upstreamFields {
		if _, ok := market[f]; !ok {
			t.Errorf("market schema lacks %s", f)
		}
	}
	if enum := fmt.Sprint(market["winner"]["enum"]); !strings.Contains(enum, "50-50") {
		t.Errorf("winner enum = %s, want 50-50 in it", enum)
	}
}
