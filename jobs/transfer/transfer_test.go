package transfer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// seeded is a memory store with generated data: every series, a live
// market per series, a collector gap, books of ten levels, at most
// perMarket snapshots a market (a 5m market has 1,000 at 300 ms).
func seeded(t testing.TB, perSeries, perMarket int) (*memory.Store, gen.Stats) {
	t.Helper()
	cfg := gen.DefaultConfig(time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC))
	for mt := range cfg.Markets {
		cfg.Markets[mt] = perSeries
	}
	cfg.MaxSnapshotsPerMarket = perMarket
	cfg.DepthHistory = 0
	st := memory.New()
	stats, err := gen.Seed(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, stats
}

func export(t testing.TB, st transfer.Source, opt transfer.ExportOptions) ([]byte, transfer.Stats) {
	t.Helper()
	var buf bytes.Buffer
	stats, err := transfer.Export(context.Background(), st, &buf, opt)
	if err != nil {
		t.Fatalf("export %+v: %v", opt, err)
	}
	return buf.Bytes(), stats
}

func importInto(t testing.TB, st transfer.Sink, data []byte, opt transfer.ImportOptions) transfer.Stats {
	t.Helper()
	stats, err := transfer.Import(context.Background(), st, bytes.NewReader(data), opt)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return stats
}

// enrich gives some of the store's markets what the generator may leave
// out: the upstream's fields, a 50-50 winner, trades and gaps, so that the
// round trip carries every kind of record whatever the generator makes.
func enrich(t testing.TB, st store.Store) {
	t.Helper()
	ctx := context.Background()
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	rate, exp, rebate, tick := 0.07, 1, 0.2, 0.01
	for i := 0; i < len(ms); i += 3 {
		m := ms[i]
		m.UpstreamSlug = "up-" + m.Slug
		m.TakerFeeRate, m.FeeExponent, m.TickSize = &rate, &exp, &tick
		// Some with a maker rebate, some without (null), whatever the
		// generator gives.
		m.MakerRebateRate = nil
		if i%2 == 0 {
			m.MakerRebateRate = &rebate
		}
		// Fee types of both curves, and none (unknown).
		m.FeeType = []string{store.FeeTypeCryptoV2, store.FeeTypeCrypto, ""}[i/3%3]
		m.TickSizeChanges = []store.TickSizeChange{{Time: m.StartTime.Add(time.Second + 1234*time.Microsecond), TickSize: 0.001}}
		m.ResolutionSource = store.SourceBinance1h
		// Markets an archive import created or extended name their sources.
		m.DataSources = [][]string{{store.DataRecorder, "pmxt-v2"}, {"ws-jsonl"}}[i%2]
		if m.Winner != nil && i%2 == 0 {
			ff := store.OutcomeFiftyFifty
			m.Winner, m.FinalPrice = &ff, m.CoinPriceStart
		}
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		var trades []store.MarketTrade
		for k := range 3 + i%40 {
			trades = append(trades, store.MarketTrade{Time: m.StartTime.Add(time.Duration(k) * 700 * time.Millisecond),
				Outcome: []string{store.OutcomeUp, store.OutcomeDown}[k%2], Price: 0.01 * float64(1+k%99), Size: 5 + float64(k)/8,
				Side: []string{store.SideBuy, store.SideSell}[k%3%2], FeeRateBps: float64(k % 2 * 1000), TxHash: fmt.Sprintf("0x%x", k)})
		}
		if _, err := st.AppendMarketTrades(ctx, m.Slug, trades); err != nil {
			t.Fatal(err)
		}
		gaps := []store.Gap{{From: m.StartTime.Add(10 * time.Second), To: m.StartTime.Add(14*time.Second + 3*time.Microsecond)},
			// The trade feed down over the same stretch: a gap of its own kind.
			{From: m.StartTime.Add(11 * time.Second), To: m.StartTime.Add(20 * time.Second), Kind: store.GapTrades}}
		if i%2 == 1 {
			gaps = append(gaps, store.Gap{From: m.StartTime.Add(30 * time.Second), To: m.StartTime.Add(40 * time.Second)})
		}
		if _, err := st.RecordGaps(ctx, m.Slug, gaps); err != nil {
			t.Fatal(err)
		}
	}
}

// activity counts the trades and gaps of every market of the store.
func activity(t testing.TB, st store.Store) (trades, gaps int) {
	t.Helper()
	ctx := context.Background()
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		_, n, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		g, err := st.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		trades, gaps = trades+n, gaps+len(g)
	}
	return trades, gaps
}

// TestRoundTrip exports a store, imports the export into an empty store
// (memory or Postgres) and exports that: the two exports must be the same
// bytes, in each format, with and without books, in small pages and
// batches (so that paging and batching are crossed many times).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	src, seed := seeded(t, 3, 200)
	enrich(t, src)
	trades, gaps := activity(t, src)
	if trades == 0 || gaps == 0 {
		t.Fatalf("the source has %d trades and %d gaps: nothing to carry", trades, gaps)
	}
	small := func(o transfer.ExportOptions) transfer.ExportOptions {
		o.MarketPage, o.SnapshotPage = 7, 50
		return o
	}
	csvFiles := []transfer.ExportOptions{
		{Format: transfer.CSV, What: transfer.Markets},
		small(transfer.ExportOptions{Format: transfer.CSV, What: transfer.Snapshots, Books: true}),
		small(transfer.ExportOptions{Format: transfer.CSV, What: transfer.Trades}),
		{Format: transfer.CSV, What: transfer.Gaps},
	}
	for _, tc := range []struct {
		name     string
		opts     []transfer.ExportOptions // files imported one after another
		postgres bool
	}{
		{"jsonl", []transfer.ExportOptions{{Format: transfer.JSONL, Books: true}}, false},
		{"jsonl-small-pages", []transfer.ExportOptions{small(transfer.ExportOptions{Format: transfer.JSONL, Books: true})}, false},
		{"jsonl-without-books", []transfer.ExportOptions{{Format: transfer.JSONL}}, false},
		{"csv", csvFiles, false},
		{"jsonl-postgres", []transfer.ExportOptions{small(transfer.ExportOptions{Format: transfer.JSONL, Books: true})}, true},
		{"csv-postgres", csvFiles, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dst store.Store = memory.New()
			if tc.postgres {
				dst = pgtest.NewStore(t)
			}
			var first [][]byte
			for _, o := range tc.opts {
				data, stats := export(t, src, o)
				all := transfer.Stats{Markets: seed.Markets, Snapshots: seed.Snapshots, Trades: trades, Gaps: gaps}
				want := map[transfer.What]transfer.Stats{
					"": all, transfer.All: all,
					transfer.Markets: {Markets: all.Markets}, transfer.Snapshots: {Snapshots: all.Snapshots},
					transfer.Trades: {Trades: all.Trades}, transfer.Gaps: {Gaps: all.Gaps},
				}[o.What]
				if stats != want {
					t.Errorf("exported %+v, the store has %+v", stats, want)
				}
				in := importInto(t, dst, data, transfer.ImportOptions{MarketBatch: 5, SnapshotBatch: 64})
				if in != stats {
					t.Errorf("imported %+v of an export of %+v", in, stats)
				}
				first = append(first, data)
			}
			sameSourcesAndGaps(t, src, dst)
			for i, o := range tc.opts {
				again, _ := export(t, dst, o)
				if !bytes.Equal(first[i], again) {
					t.Fatalf("export → import → export differs (%d vs %d bytes), first difference at byte %d:\n%s",
						len(first[i]), len(again), diffAt(first[i], again), around(again, diffAt(first[i], again)))
				}
			}
		})
	}
}

// sameSourcesAndGaps fails unless every market of want is in got with the
// same data sources and the same gaps, kinds included.
func sameSourcesAndGaps(t testing.TB, want, got store.Store) {
	t.Helper()
	ctx := context.Background()
	ms, _, err := want.ListMarkets(ctx, store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[store.GapKind]int{}
	for _, m := range ms {
		g, err := got.GetMarket(ctx, m.Slug)
		if err != nil {
			t.Fatalf("market %s: %v", m.Slug, err)
		}
		if !slices.Equal(g.DataSources, m.DataSources) {
			t.Errorf("market %s: data sources %q, want %q", m.Slug, g.DataSources, m.DataSources)
		}
		wg, err := want.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		gg, err := got.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(wg, gg, func(a, b store.Gap) bool { return a.From.Equal(b.From) && a.To.Equal(b.To) && a.Kind == b.Kind }) {
			t.Errorf("market %s: gaps %v, want %v", m.Slug, gg, wg)
		}
		for _, g := range wg {
			kinds[g.Kind]++
		}
	}
	if kinds[store.GapSnapshots] == 0 || kinds[store.GapTrades] == 0 {
		t.Errorf("the source's gaps by kind: %v: both kinds are needed to tell them apart", kinds)
	}
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func around(b []byte, i int) string {
	return string(b[max(0, i-200):min(len(b), i+200)])
}

func TestExportShapes(t *testing.T) {
	t.Parallel()
	st := memory.New()
	ctx := context.Background()
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	up, p := store.OutcomeUp, 95000.5
	resolved := start.Add(5*time.Minute + 12345*time.Microsecond)
	rate, exp, rebate, tick, minSize := 0.07, 1, 0.2, 0.001, 5.0
	m := store.Market{Slug: "btc-updown-5m-1777467600", MarketID: "1043567", EventID: "98765", Coin: store.BTC, MarketType: store.M5,
		StartTime: start, EndTime: start.Add(5 * time.Minute), CoinPriceStart: &p, ConditionID: "0xab\"c", ClobTokenUp: "1", ClobTokenDown: "2",
		Winner: &up, ResolvedAt: &resolved, CreatedAt: start.Add(-time.Minute), UpdatedAt: resolved,
		UpstreamSlug: "btc-updown-5m-1777467600", TakerFeeRate: &rate, FeeExponent: &exp, FeeType: store.FeeTypeCryptoV2, MakerRebateRate: &rebate, TickSize: &tick,
		TickSizeChanges: []store.TickSizeChange{{Time: start.Add(90 * time.Second), TickSize: 0.001}}, MinOrderSize: &minSize,
		ResolutionSource: store.SourceChainlink, PriceToBeat: &p, DataSources: []string{store.DataRecorder, "pmxt-v2"}}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	trades := []store.MarketTrade{
		{Time: start.Add(1500 * time.Millisecond), Outcome: store.OutcomeUp, Price: 0.52, Size: 12.5, Side: store.SideBuy, FeeRateBps: 1000, TxHash: "0x1"},
		{Time: start.Add(2 * time.Second), Outcome: store.OutcomeDown, Price: 0.48, Size: 5, Side: store.SideSell},
	}
	if _, err := st.AppendMarketTrades(ctx, m.Slug, trades); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordGaps(ctx, m.Slug, []store.Gap{{From: start.Add(time.Minute), To: start.Add(65 * time.Second)},
		{From: start.Add(time.Minute), To: start.Add(70 * time.Second), Kind: store.GapTrades}}); err != nil {
		t.Fatal(err)
	}
	snaps := []store.Snapshot{
		{Time: start, CoinPrice: 95000.5, PriceUp: 0.52, PriceDown: 0.49,
			BookUp:   &store.Book{Bids: []store.Level{{Price: 0.51, Size: 100}}, Asks: []store.Level{{Price: 0.52, Size: 12.5}, {Price: 0.53, Size: 1}}},
			BookDown: &store.Book{}},
		{Time: start.Add(300 * time.Millisecond), CoinPrice: 95001, PriceUp: 0.5, PriceDown: 0.51},
	}
	if _, err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
		t.Fatal(err)
	}
	data, _ := export(t, st, transfer.ExportOptions{Books: true})
	want := `{"type":"market","slug":"btc-updown-5m-1777467600","market_id":"1043567","event_id":"98765","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z","coin_price_start":95000.5,"coin_price_end":null,` +
		`"condition_id":"0xab\"c","clob_token_up":"1","clob_token_down":"2","winner":"Up","final_volume":null,"final_liquidity":null,` +
		`"resolved_at":"2026-04-29T13:05:00.012345Z","created_at":"2026-04-29T12:59:00.000000Z","updated_at":"2026-04-29T13:05:00.012345Z",` +
		`"upstream_slug":"btc-updown-5m-1777467600","taker_fee_rate":0.07,"fee_exponent":1,"fee_type":"crypto_fees_v2","maker_rebate_rate":0.2,"tick_size":0.001,` +
		`"tick_size_changes":[{"time":"2026-04-29T13:01:30.000000Z","tick_size":0.001}],"min_order_size":5,` +
		`"resolution_source":"chainlink","price_to_beat":95000.5,"final_price":null,"data_sources":["recorder","pmxt-v2"]}` + "\n" +
		`{"type":"snapshot","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:00.000000Z","coin_price":95000.5,"price_up":0.52,"price_down":0.49,` +
		`"orderbook_up":{"bids":[{"price":0.51,"size":100}],"asks":[{"price":0.52,"size":12.5},{"price":0.53,"size":1}]},"orderbook_down":{"bids":[],"asks":[]}}` + "\n" +
		`{"type":"snapshot","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:00.300000Z","coin_price":95001,"price_up":0.5,"price_down":0.51}` + "\n" +
		`{"type":"trade","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:01.500000Z","outcome":"Up","price":0.52,"size":12.5,"side":"BUY","fee_rate_bps":1000,"tx_hash":"0x1"}` + "\n" +
		`{"type":"trade","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:02.000000Z","outcome":"Down","price":0.48,"size":5,"side":"SELL","fee_rate_bps":0,"tx_hash":""}` + "\n" +
		`{"type":"gap","slug":"btc-updown-5m-1777467600","from":"2026-04-29T13:01:00.000000Z","to":"2026-04-29T13:01:05.000000Z","kind":"snapshots"}` + "\n" +
		`{"type":"gap","slug":"btc-updown-5m-1777467600","from":"2026-04-29T13:01:00.000000Z","to":"2026-04-29T13:01:10.000000Z","kind":"trades"}` + "\n"
	if string(data) != want {
		t.Errorf("JSON Lines export:\n%s\nwant:\n%s", data, want)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Snapshots, Books: true})
	want = "slug,time,coin_price,price_up,price_down,orderbook_up,orderbook_down\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:00.000000Z,95000.5,0.52,0.49,0.51:100|0.52:12.5 0.53:1,|\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:00.300000Z,95001,0.5,0.51,,\n"
	if string(data) != want {
		t.Errorf("CSV snapshots export:\n%s\nwant:\n%s", data, want)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Markets})
	if !strings.Contains(string(data), `"0xab""c"`) || !strings.HasPrefix(string(data), "slug,market_id,event_id,coin,market_type,") ||
		!strings.Contains(string(data), ",taker_fee_rate,fee_exponent,fee_type,maker_rebate_rate,tick_size,") ||
		!strings.HasSuffix(string(data), ",btc-updown-5m-1777467600,0.07,1,crypto_fees_v2,0.2,0.001,2026-04-29T13:01:30.000000Z=0.001,5,chainlink,95000.5,,recorder pmxt-v2\n") {
		t.Errorf("CSV markets export:\n%s", data)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Trades})
	want = "slug,time,outcome,price,size,side,fee_rate_bps,tx_hash\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:01.500000Z,Up,0.52,12.5,BUY,1000,0x1\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:02.000000Z,Down,0.48,5,SELL,0,\n"
	if string(data) != want {
		t.Errorf("CSV trades export:\n%s\nwant:\n%s", data, want)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Gaps})
	want = "slug,from,to,kind\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:01:00.000000Z,2026-04-29T13:01:05.000000Z,snapshots\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:01:00.000000Z,2026-04-29T13:01:10.000000Z,trades\n"
	if string(data) != want {
		t.Errorf("CSV gaps export:\n%s\nwant:\n%s", data, want)
	}
	if _, err := transfer.Export(ctx, st, io.Discard, transfer.ExportOptions{Format: transfer.CSV}); err == nil {
		t.Errorf("a CSV export of markets and snapshots together was accepted")
	}
	// Filters select markets.
	data, stats := export(t, st, transfer.ExportOptions{Filter: store.MarketFilter{Coin: store.ETH}})
	if stats.Markets != 0 || len(data) != 0 {
		t.Errorf("ETH export of a BTC store: %+v %q", stats, data)
	}
}

func TestImportRejectsBadInput(t *testing.T) {
	t.Parallel()
	const market = `{"type":"market","slug":"btc-updown-5m-1","coin":"BTC","market_type":"5m","start_time":"2026-01-01T00:00:00Z","end_time":"2026-01-01T00:05:00Z"}`
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "{nope\n", "line 1"},
		{"unknown type", `{"type":"order"}`, "not market, snapshot, trade or gap"},
		{"bad 50/50", strings.Replace(market, `"coin"`, `"winner":"50/50","coin"`, 1), "50/50"},
		{"bad tick change", strings.Replace(market, `"coin"`, `"tick_size_changes":[{"time":"2026-01-01T00:01:00Z"}],"coin"`, 1), "tick_size"},
		{"trade with a bad outcome", market + "\n" + `{"type":"trade","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:01Z","outcome":"Yes","price":0.5,"size":1,"side":"BUY"}`, "outcome"},
		{"trade without a size", market + "\n" + `{"type":"trade","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:01Z","outcome":"Up","price":0.5,"side":"BUY"}`, "price and size"},
		{"trade of no market", `{"type":"trade","slug":"btc-updown-5m-9","time":"2026-01-01T00:00:01Z","outcome":"Up","price":0.5,"size":1,"side":"SELL"}`, "btc-updown-5m-9 is not stored: import its market first"},
		{"gap ending before it starts", market + "\n" + `{"type":"gap","slug":"btc-updown-5m-1","from":"2026-01-01T00:00:05Z","to":"2026-01-01T00:00:01Z"}`, "does not end after"},
		{"csv trade side", "slug,time,outcome,price,size,side\nx,2026-01-01T00:00:00Z,Up,0.5,1,HOLD\n", "HOLD"},
		{"csv gap time", "slug,from,to\nx,2026-01-01T00:00:00Z,later\n", "to: not an RFC 3339"},
		{"csv tick change", "slug,coin,market_type,start_time,end_time,tick_size_changes\nx,BTC,5m,2026-01-01T00:00:00Z,2026-01-01T00:05:00Z,0.01\n", "time=size"},
		{"bad coin", strings.Replace(market, `"BTC"`, `"DOGE"`, 1), "DOGE"},
		{"bad type", strings.Replace(market, `"5m"`, `"7m"`, 1), "7m"},
		{"end before start", strings.Replace(market, `00:05:00Z`, `00:00:00Z`, 1), "not after"},
		{"bad time", strings.Replace(market, `2026-01-01T00:00:00Z`, `yesterday`, 1), "RFC 3339"},
		{"bad winner", strings.Replace(market, `"coin"`, `"winner":"Sideways","coin"`, 1), "Sideways"},
		{"snapshot without price", market + "\n" + `{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5}`, "line 2"},
		{"level without size", market + "\n" + `{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5,"price_down":0.5,"orderbook_up":{"bids":[{"price":0.5}]}}`, "price and size"},
		{"snapshot of no market", `{"type":"snapshot","slug":"btc-updown-5m-9","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5,"price_down":0.5}`, "btc-updown-5m-9 is not stored: import its market first"},
		{"csv unknown header", "a,b,c\n1,2,3\n", "neither the market columns"},
		{"csv NaN", "slug,time,coin_price,price_up,price_down\nx,2026-01-01T00:00:00Z,NaN,0.5,0.5\n", "not a finite number"},
		{"csv bad book", "slug,time,coin_price,price_up,price_down,orderbook_up\nx,2026-01-01T00:00:00Z,1,0.5,0.5,0.5:1\n", "bids|asks"},
		{"csv ragged", "slug,time,coin_price,price_up,price_down\nx,2026-01-01T00:00:00Z,1\n", "wrong number of fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := transfer.Import(context.Background(), memory.New(), strings.NewReader(tc.in), transfer.ImportOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import of %s: %v, want an error mentioning %q", tc.name, err, tc.want)
			}
		})
	}
}

// TestImportWithoutMakerRebate imports market files written before
// maker_rebate_rate existed (JSON Lines without the key, CSV without the
// column) and files that give it: the old ones store it null, not 0.
func TestImportWithoutMakerRebate(t *testing.T) {
	t.Parallel()
	const slug = "btc-updown-5m-1777467600"
	const jsonOld = `{"type":"market","slug":"` + slug + `","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z",` +
		`"upstream_slug":"` + slug + `","taker_fee_rate":0.07,"fee_exponent":1,"tick_size":0.01}` + "\n"
	const csvOld = "slug,coin,market_type,start_time,end_time,upstream_slug,taker_fee_rate,fee_exponent,tick_size\n" +
		slug + ",BTC,5m,2026-04-29T13:00:00.000000Z,2026-04-29T13:05:00.000000Z," + slug + ",0.07,1,0.01\n"
	const csvNew = "slug,coin,market_type,start_time,end_time,maker_rebate_rate,taker_fee_rate\n" +
		slug + ",BTC,5m,2026-04-29T13:00:00.000000Z,2026-04-29T13:05:00.000000Z,0.2,0.07\n"
	rebate := 0.2
	for _, tc := range []struct {
		name, in string
		want     *float64
	}{
		{"jsonl without the key", jsonOld, nil},
		{"jsonl null", strings.Replace(jsonOld, `"tick_size"`, `"maker_rebate_rate":null,"tick_size"`, 1), nil},
		{"jsonl with a rebate", strings.Replace(jsonOld, `"tick_size"`, `"maker_rebate_rate":0.2,"tick_size"`, 1), &rebate},
		{"csv without the column", csvOld, nil},
		{"csv with the column", csvNew, &rebate},
	} {
		st := memory.New()
		importInto(t, st, []byte(tc.in), transfer.ImportOptions{})
		m, err := st.GetMarket(context.Background(), slug)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m.TakerFeeRate == nil || *m.TakerFeeRate != 0.07 {
			t.Errorf("%s: taker fee rate %v, want 0.07", tc.name, m.TakerFeeRate)
		}
		switch {
		case tc.want == nil && m.MakerRebateRate != nil:
			t.Errorf("%s: maker rebate rate %v, want null", tc.name, *m.MakerRebateRate)
		case tc.want != nil && (m.MakerRebateRate == nil || *m.MakerRebateRate != *tc.want):
			t.Errorf("%s: maker rebate rate %v, want %v", tc.name, m.MakerRebateRate, *tc.want)
		}
	}
	// A rebate that is not a number is refused, as every rate is.
	bad := strings.Replace(csvNew, ",0.2,", ",NaN,", 1)
	if _, err := transfer.Import(context.Background(), memory.New(), strings.NewReader(bad), transfer.ImportOptions{}); err == nil ||
		!strings.Contains(err.Error(), "maker_rebate_rate") {
		t.Errorf("import of a NaN maker_rebate_rate: %v, want an error naming it", err)
	}
}

// TestImportFeeType imports market files written before fee_type existed
// (JSON Lines without the key, CSV without the column) and files that
// give it: the old ones store it unknown ("").
func TestImportFeeType(t *testing.T) {
	t.Parallel()
	const slug = "btc-updown-5m-1772000000"
	const jsonOld = `{"type":"market","slug":"` + slug + `","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-02-25T06:13:20.000000Z","end_time":"2026-02-25T06:18:20.000000Z",` +
		`"taker_fee_rate":0.25,"fee_exponent":2,"tick_size":0.01}` + "\n"
	const csvOld = "slug,coin,market_type,start_time,end_time,taker_fee_rate,fee_exponent\n" +
		slug + ",BTC,5m,2026-02-25T06:13:20.000000Z,2026-02-25T06:18:20.000000Z,0.25,2\n"
	for _, tc := range []struct{ name, in, want string }{
		{"jsonl without the key", jsonOld, ""},
		{"jsonl null", strings.Replace(jsonOld, `"tick_size"`, `"fee_type":null,"tick_size"`, 1), ""},
		{"jsonl with a type", strings.Replace(jsonOld, `"tick_size"`, `"fee_type":"crypto_fees","tick_size"`, 1), store.FeeTypeCrypto},
		{"csv without the column", csvOld, ""},
		{"csv with the column", strings.Replace(strings.Replace(csvOld, "fee_exponent", "fee_exponent,fee_type", 1), ",2\n", ",2,crypto_fees\n", 1), store.FeeTypeCrypto},
	} {
		st := memory.New()
		importInto(t, st, []byte(tc.in), transfer.ImportOptions{})
		m, err := st.GetMarket(context.Background(), slug)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m.FeeType != tc.want || m.TakerFeeRate == nil || *m.TakerFeeRate != 0.25 {
			t.Errorf("%s: fee type %q rate %v, want %q and 0.25", tc.name, m.FeeType, m.TakerFeeRate, tc.want)
		}
	}
}

// TestImportIsIdempotent imports one export twice: nothing is stored twice.
func TestImportIsIdempotent(t *testing.T) {
	t.Parallel()
	src, seed := seeded(t, 1, 200)
	data, _ := export(t, src, transfer.ExportOptions{Books: true})
	dst := memory.New()
	importInto(t, dst, data, transfer.ImportOptions{})
	importInto(t, dst, data, transfer.ImportOptions{})
	again, stats := export(t, dst, transfer.ExportOptions{Books: true})
	if stats.Snapshots != seed.Snapshots || !bytes.Equal(data, again) {
		t.Errorf("after importing twice: %d snapshots (want %d), export equal: %v", stats.Snapshots, seed.Snapshots, bytes.Equal(data, again))
	}
}

// TestImportStopsOnCancel checks a cancelled import returns at once.
func TestImportStopsOnCancel(t *testing.T) {
	t.Parallel()
	src, _ := seeded(t, 1, 200)
	data, _ := export(t, src, transfer.ExportOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := transfer.Import(ctx, memory.New(), bytes.NewReader(data), transfer.ImportOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled import: %v", err)
	}
}

// TestImportGapKinds imports gaps written before gaps had kinds (JSON Lines
// without the key, CSV without the column), which are snapshot gaps, and
// refuses a kind that is neither, naming the field.
func TestImportGapKinds(t *testing.T) {
	t.Parallel()
	const slug = "btc-updown-5m-1777467600"
	const market = `{"type":"market","slug":"` + slug + `","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z"}` + "\n"
	const jsonGap = `{"type":"gap","slug":"` + slug + `","from":"2026-04-29T13:00:10.000000Z","to":"2026-04-29T13:00:20.000000Z"}` + "\n"
	for _, tc := range []struct {
		name, gaps string
		want       store.GapKind
	}{
		{"jsonl without the key", jsonGap, store.GapSnapshots},
		{"jsonl trades", strings.Replace(jsonGap, `"}`, `","kind":"trades"}`, 1), store.GapTrades},
		{"csv without the column", "slug,from,to\n" + slug + ",2026-04-29T13:00:10.000000Z,2026-04-29T13:00:20.000000Z\n", store.GapSnapshots},
		{"csv trades", "slug,kind,from,to\n" + slug + ",trades,2026-04-29T13:00:10.000000Z,2026-04-29T13:00:20.000000Z\n", store.GapTrades},
	} {
		st := memory.New()
		importInto(t, st, []byte(market), transfer.ImportOptions{})
		importInto(t, st, []byte(tc.gaps), transfer.ImportOptions{})
		gaps, err := st.ListGaps(context.Background(), slug)
		if err != nil || len(gaps) != 1 || gaps[0].Kind != tc.want {
			t.Errorf("%s: gaps %v %v, want one of kind %q", tc.name, gaps, err, tc.want)
		}
	}
	bad := strings.Replace(jsonGap, `"}`, `","kind":"books"}`, 1)
	st := memory.New()
	importInto(t, st, []byte(market), transfer.ImportOptions{})
	if _, err := transfer.Import(context.Background(), st, strings.NewReader(bad), transfer.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("import of a gap of kind books: %v, want an error naming the kind", err)
	}
}

// TestImportKeepsAMarketNewerThanTheExport: importing an export taken
// before a market resolved does not take its resolution back (the record
// is older than the stored market by updated_at); a newer record updates.
func TestImportKeepsAMarketNewerThanTheExport(t *testing.T) {
	ctx := context.Background()
	st, _ := seeded(t, 2, 50)
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m store.Market) bool { return m.Winner != nil })
	if i < 0 {
		t.Fatal("no resolved market")
	}
	resolved := ms[i]
	exportOf := func(m store.Market) []byte {
		src := memory.New()
		if err := src.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		data, _ := export(t, src, transfer.ExportOptions{Format: transfer.JSONL, What: transfer.Markets})
		return data
	}

	stale := resolved
	stale.Winner, stale.CoinPriceEnd, stale.FinalVolume, stale.FinalLiquidity, stale.ResolvedAt, stale.FinalPrice = nil, nil, nil, nil, nil, nil
	stale.UpdatedAt = resolved.UpdatedAt.Add(-time.Hour)
	if stats := importInto(t, st, exportOf(stale), transfer.ImportOptions{}); stats != (transfer.Stats{Kept: transfer.Kept{Markets: 1}}) {
		t.Errorf("import of an older record of a stored market: %+v, want it counted as kept", stats)
	}
	got, err := st.GetMarket(ctx, resolved.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if got.Winner == nil || *got.Winner != *resolved.Winner || got.ResolvedAt == nil || !got.UpdatedAt.Equal(resolved.UpdatedAt) {
		t.Fatalf("an older export of %s took back its resolution: winner %v resolved_at %v updated_at %v (stored: %v, %v, %v)",
			resolved.Slug, got.Winner, got.ResolvedAt, got.UpdatedAt, *resolved.Winner, resolved.ResolvedAt, resolved.UpdatedAt)
	}

	newer := resolved
	volume := 12345.5
	newer.FinalVolume, newer.UpdatedAt = &volume, resolved.UpdatedAt.Add(time.Hour)
	if stats := importInto(t, st, exportOf(newer), transfer.ImportOptions{}); stats != (transfer.Stats{Markets: 1}) {
		t.Errorf("import of a newer record of a stored market: %+v, want it counted as written", stats)
	}
	if got, err = st.GetMarket(ctx, resolved.Slug); err != nil || got.FinalVolume == nil || *got.FinalVolume != volume {
		t.Fatalf("a newer export of %s did not update it: final_volume %v, %v", resolved.Slug, got.FinalVolume, err)
	}
}

// TestImportWritesWhatCameBeforeABadLine: a file with a bad line stops at
// it, and what came before it is written (README: run it again once
// mended), not lost with the batch it was in.
func TestImportWritesWhatCameBeforeABadLine(t *testing.T) {
	t.Parallel()
	const slug = "btc-updown-5m-1777467600"
	const market = `{"type":"market","slug":"` + slug + `","market_id":"1","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z"}` + "\n"
	snap := func(s string) string {
		return `{"type":"snapshot","slug":"` + slug + `","time":"2026-04-29T13:00:0` + s + `.000000Z","coin_price":1,"price_up":0.5,"price_down":0.5}` + "\n"
	}
	const trade = `{"type":"trade","slug":"` + slug + `","time":"2026-04-29T13:00:01.000000Z","outcome":"Up","price":0.5,"size":1,"side":"BUY"}` + "\n"
	const csvHead = "slug,time,coin_price,price_up,price_down\n"
	csvRow := func(s string) string { return slug + ",2026-04-29T13:00:0" + s + ".000000Z,1,0.5,0.5\n" }
	for _, tc := range []struct {
		name, before, in, line string
		want                   transfer.Stats // stored before the error
	}{
		{"jsonl", "", market + snap("1") + snap("2") + trade + `{"type":"snapshot","slug":"` + slug + `","ti` + "\n" + snap("3"),
			"line 5", transfer.Stats{Markets: 1, Snapshots: 2, Trades: 1}},
		{"jsonl markets only", "", market + "{nope\n", "line 2", transfer.Stats{Markets: 1}},
		{"csv", market, csvHead + csvRow("1") + csvRow("2") + slug + ",2026-04-29T13:00:03.000000Z,one,0.5,0.5\n" + csvRow("4"),
			"line 4", transfer.Stats{Snapshots: 2}},
	} {
		for _, pg := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s postgres=%v", tc.name, pg), func(t *testing.T) {
				t.Parallel()
				var st store.Store = memory.New()
				if pg {
					st = pgtest.NewStore(t)
				}
				if tc.before != "" {
					importInto(t, st, []byte(tc.before), transfer.ImportOptions{})
				}
				stats, err := transfer.Import(context.Background(), st, strings.NewReader(tc.in), transfer.ImportOptions{})
				if err == nil || !strings.Contains(err.Error(), tc.line) {
					t.Fatalf("import: %v, want an error naming %s", err, tc.line)
				}
				if stats != tc.want {
					t.Errorf("import stopped at %s saying it stored %+v, want %+v", tc.line, stats, tc.want)
				}
				ctx := context.Background()
				if _, err := st.GetMarket(ctx, slug); err != nil {
					t.Fatalf("the market before the bad line: %v", err)
				}
				_, snaps, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Limit: 1})
				if err != nil || snaps != tc.want.Snapshots {
					t.Errorf("%d snapshots stored (%v), want the %d before the bad line", snaps, err, tc.want.Snapshots)
				}
				_, trades, err := st.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Limit: 1})
				if err != nil || trades != tc.want.Trades {
					t.Errorf("%d trades stored (%v), want the %d before the bad line", trades, err, tc.want.Trades)
				}
			})
		}
	}
}

// TestImportOfATruncatedGzip: a gzipped export cut off in the middle of a
// line is an error that says the input breaks off, at the line it breaks
// off in, not a JSON error blaming that line; what came before is written.
func TestImportOfATruncatedGzip(t *testing.T) {
	t.Parallel()
	src, _ := seeded(t, 1, 200)
	data, _ := export(t, src, transfer.ExportOptions{Books: true})
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{zbuf.Len() / 3, zbuf.Len() / 2, zbuf.Len() - 100} {
		zr, err := gzip.NewReader(bytes.NewReader(zbuf.Bytes()[:cut]))
		if err != nil {
			t.Fatal(err)
		}
		// How far the cut file decompresses, and so the line it breaks off in.
		got, _ := io.ReadAll(zr)
		if len(got) == 0 || got[len(got)-1] == '\n' {
			t.Fatalf("cut at %d: decompresses to %d bytes ending a line: cut elsewhere", cut, len(got))
		}
		line := bytes.Count(got, []byte("\n")) + 1
		zr, _ = gzip.NewReader(bytes.NewReader(zbuf.Bytes()[:cut]))
		st := memory.New()
		stats, err := transfer.Import(context.Background(), st, zr, transfer.ImportOptions{})
		want := fmt.Sprintf("line %d: the input breaks off", line)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("import of a gzip cut at byte %d of %d: %v, want an error saying %q", cut, zbuf.Len(), err, want)
		}
		if stats.Markets == 0 || stats.Snapshots == 0 {
			t.Errorf("import of a gzip cut at byte %d stored %+v: want what came before", cut, stats)
		}
	}
}

// TestImportPutsBooksInOrder imports a snapshot whose books list their
// sides worst first, as Polymarket's REST book does, in both formats: the
// store keeps them best first, where the replay engine reads the best.
func TestImportPutsBooksInOrder(t *testing.T) {
	t.Parallel()
	const slug = "btc-updown-5m-1777467600"
	const market = `{"type":"market","slug":"` + slug + `","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z"}` + "\n"
	const jsonl = market + `{"type":"snapshot","slug":"` + slug + `","time":"2026-04-29T13:00:01.000000Z","coin_price":95000,"price_up":0.5,"price_down":0.5,` +
		`"orderbook_up":{"bids":[{"price":0.47,"size":30},{"price":0.48,"size":20},{"price":0.49,"size":10}],"asks":[{"price":0.53,"size":3},{"price":0.51,"size":1},{"price":0.52,"size":2}]},` +
		`"orderbook_down":{"bids":[{"price":0.48,"size":5}],"asks":[{"price":0.52,"size":6}]}}` + "\n"
	want := store.Book{Bids: []store.Level{{Price: 0.49, Size: 10}, {Price: 0.48, Size: 20}, {Price: 0.47, Size: 30}},
		Asks: []store.Level{{Price: 0.51, Size: 1}, {Price: 0.52, Size: 2}, {Price: 0.53, Size: 3}}}
	csvIn := "slug,time,coin_price,price_up,price_down,orderbook_up,orderbook_down\n" +
		slug + ",2026-04-29T13:00:01.000000Z,95000,0.5,0.5,0.47:30 0.48:20 0.49:10|0.53:3 0.51:1 0.52:2,0.48:5|0.52:6\n"
	for name, in := range map[string]string{"jsonl": jsonl, "csv": csvIn} {
		st := memory.New()
		if name == "csv" { // one kind of record a CSV file: the market first
			importInto(t, st, []byte(market), transfer.ImportOptions{})
		}
		importInto(t, st, []byte(in), transfer.ImportOptions{})
		snaps, _, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{WithBooks: true})
		if err != nil || len(snaps) != 1 || snaps[0].BookUp == nil {
			t.Fatalf("%s: %d snapshots (%v)", name, len(snaps), err)
		}
		if got := *snaps[0].BookUp; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: up book stored as %+v, want best first %+v", name, got, want)
		}
	}
}

// resolvingSource is a store on which a market behind an export's
// position resolves (or, unresolved, leaves a --resolved=false filter)
// once the export has listed its first page of markets, as the collector
// resolves markets while a long export runs.
type resolvingSource struct {
	*memory.Store
	t      testing.TB
	market store.Market // written over the stored market after the first page
	pages  int
}

func (s *resolvingSource) ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error) {
	page, total, err := s.Store.ListMarkets(ctx, f)
	if f.Limit > 1 { // a page, not a count
		if s.pages++; s.pages == 1 {
			if err := s.Store.UpsertMarkets(ctx, []store.Market{s.market}); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	return page, total, err
}

// TestExportWhileMarketsResolve: an export filtered by resolved writes
// each market the filter selects once, and skips none it selected from
// start to end, when a market it has passed resolves meanwhile (joining
// the filter behind its position) or, for resolved=false, leaves it.
func TestExportWhileMarketsResolve(t *testing.T) {
	t.Parallel()
	for _, resolved := range []bool{true, false} {
		t.Run(fmt.Sprintf("resolved=%t", resolved), func(t *testing.T) {
			t.Parallel()
			st, _ := seeded(t, 6, 5)
			ctx := context.Background()
			f := store.MarketFilter{Resolved: &resolved}
			all, _, err := st.ListMarkets(ctx, store.MarketFilter{})
			if err != nil {
				t.Fatal(err)
			}
			// The oldest markets first, as the export goes.
			slices.Reverse(all)
			var moving store.Market // the second oldest: the first page passes it
			for _, m := range all[1:] {
				if m.Winner != nil {
					moving = m
					break
				}
			}
			// With resolved=true it starts unresolved and resolves; with
			// resolved=false it starts unresolved and resolves, leaving.
			was := moving
			moving.Winner, moving.ResolvedAt, moving.CoinPriceEnd, moving.FinalVolume, moving.FinalLiquidity = nil, nil, nil, nil, nil
			moving.UpdatedAt = moving.UpdatedAt.Add(-time.Second)
			if err := st.UpsertMarkets(ctx, []store.Market{moving}); err != nil {
				t.Fatal(err)
			}
			before, _, err := st.ListMarkets(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			src := &resolvingSource{Store: st, t: t, market: was}
			data, stats := export(t, src, transfer.ExportOptions{What: transfer.Markets, MarketPage: 3, Filter: f})
			after, _, err := st.ListMarkets(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			// Every market selected both before and after, once.
			want := map[string]bool{}
			for _, m := range before {
				want[m.Slug] = slices.ContainsFunc(after, func(a store.Market) bool { return a.Slug == m.Slug })
			}
			seen := map[string]int{}
			for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
				var rec struct {
					Slug string `json:"slug"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				seen[rec.Slug]++
			}
			for slug, n := range seen {
				if n > 1 {
					t.Errorf("market %s exported %d times", slug, n)
				}
			}
			for slug, inBoth := range want {
				if inBoth && seen[slug] == 0 {
					t.Errorf("market %s, selected throughout, was not exported", slug)
				}
			}
			if stats.Markets != len(seen) {
				t.Errorf("stats say %d markets, the file holds %d", stats.Markets, len(seen))
			}
		})
	}
}

// fillingSource is a store into which a snapshot is written among those an
// export has passed once it has read the first page of a market's
// snapshots, as an archive import fills a recording gap while an export
// runs.
type fillingSource struct {
	*memory.Store
	t     testing.TB
	slug  string
	early store.Snapshot
	pages int
}

func (s *fillingSource) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	page, total, err := s.Store.ListSnapshots(ctx, slug, q)
	if slug == s.slug {
		if s.pages++; s.pages == 1 {
			if _, err := s.Store.AppendSnapshots(ctx, slug, []store.Snapshot{s.early}); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	return page, total, err
}

// TestExportWhileSnapshotsFillIn: a snapshot written among those an
// export has passed does not make it write another twice.
func TestExportWhileSnapshotsFillIn(t *testing.T) {
	t.Parallel()
	st, _ := seeded(t, 2, 40)
	ctx := context.Background()
	ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Resolved: ptrTo(true), Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	slug := ms[0].Slug
	snaps, _, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Between the first two: among those the first page holds.
	early := snaps[0]
	early.Time = snaps[0].Time.Add(snaps[1].Time.Sub(snaps[0].Time) / 2).Truncate(time.Microsecond)
	src := &fillingSource{Store: st, t: t, slug: slug, early: early}
	data, _ := export(t, src, transfer.ExportOptions{What: transfer.Snapshots, SnapshotPage: 10, Filter: store.MarketFilter{Coin: ms[0].Coin, MarketType: ms[0].MarketType}})
	seen := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Slug string `json:"slug"`
			Time string `json:"time"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if seen[rec.Slug+" "+rec.Time]++; seen[rec.Slug+" "+rec.Time] == 2 {
			t.Errorf("snapshot %s of %s exported twice", rec.Time, rec.Slug)
		}
	}
}
