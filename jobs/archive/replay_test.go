package archive_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestFetchImportReplay takes the path of the README's Backfill: the
// markets of a series fetched from (the fake) Gamma, closed ones included,
// settled by the collector's rules; their events imported; and a GTC
// strategy replayed on an imported market, its resting order filled by the
// imported trades, the market's winner the one Gamma shows.
func TestFetchImportReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	poly := polytest.New(t, polytest.Options{})
	now := time.Now()
	from := now.Add(-2 * time.Hour).Truncate(5 * time.Minute)
	var listed []*polytest.Market
	for at := from; at.Before(from.Add(30 * time.Minute)); at = at.Add(5 * time.Minute) {
		listed = append(listed, poly.AddWindow(store.BTC, store.M5, at))
	}
	res, err := collect.FetchMarkets(ctx, collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: poly.URL}}, collect.Series{Coin: store.BTC, MarketType: store.M5},
		from, from.Add(35*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 7 || res.Missing != 1 || len(res.Events) != 6 {
		t.Fatalf("fetched %d events of %d windows (%d missing), want 6 of 7 (1 missing)", len(res.Events), res.Windows, res.Missing)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "markets.json")
	data, _ := json.Marshal(res.Events)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	markets, _, err := archive.LoadMarkets(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(markets) != len(listed) {
		t.Fatalf("%d markets read, want %d", len(markets), len(listed))
	}
	for i, m := range markets {
		pm := listed[i]
		start, end := poly.ReferencePrices(pm)
		if m.Slug != polytest.SlugOf(pm) || m.ConditionID != pm.ConditionID || m.ClobTokenUp != pm.UpToken || m.ClobTokenDown != pm.DownToken {
			t.Fatalf("market %d: %+v, want the fake's %+v", i, m, pm)
		}
		if m.Winner == nil || *m.Winner != poly.Winner(pm) || m.CoinPriceStart == nil || *m.CoinPriceStart != start || *m.CoinPriceEnd != end ||
			m.ResolutionSource != store.SourceChainlink {
			t.Fatalf("market %s not settled as the collector settles it: winner %v prices %v %v source %q", m.Slug, m.Winner, m.CoinPriceStart, m.CoinPriceEnd, m.ResolutionSource)
		}
	}

	m := markets[2]
	jsonl := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, jsonl, fxStream(m, m.StartTime.Add(-10*time.Second), m.EndTime, 5, 0))
	prices := archive.NewCoinPrices()
	writeKlines(t, prices, store.BTC, m.StartTime.Add(-time.Minute), m.EndTime.Add(time.Minute), func(at time.Time) float64 { return 90000 + float64(at.Unix()%13) })
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{jsonl}, Markets: markets, Prices: prices}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetMarket(ctx, m.Slug)
	if err != nil || stored.Winner == nil || *stored.Winner != *m.Winner {
		t.Fatalf("imported market %+v %v: want it resolved %s", stored, err, *m.Winner)
	}
	snaps := snapshotsOf(t, st, m.Slug)
	trades, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
	if err != nil || len(trades) == 0 {
		t.Fatalf("trades %d %v", len(trades), err)
	}
	s := replay.Strategy{Side: replay.SideUp, PositionSize: 10, OrderType: replay.OrderGTC, LimitOffsetTicks: 1,
		EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: ">", Value: 50}},
		ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 0}}, MaxEntriesPerMarket: 1}
	r, err := replay.RunTrades(stored, snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) > 0 {
		t.Errorf("warnings %v: an imported market has its trades", r.Warnings)
	}
	maker := 0
	for _, e := range r.Trades {
		if e.Liquidity == replay.LiquidityMaker {
			maker++
		}
	}
	if maker == 0 || r.Performance.FinalMarketOutcome != *m.Winner {
		t.Fatalf("replay: %d maker fills (want some, from the imported trades), outcome %q want %q; trades %+v", maker, r.Performance.FinalMarketOutcome, *m.Winner, r.Trades)
	}
}
