package archive_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestImportOverBackfilledTrades imports a dump over a market whose
// collector was down for two minutes and backfilled that stretch's trades
// from the Data API (times in whole seconds, as that API gives them): each
// trade, told by its transaction hash, is stored once, where the dump's
// copy, timed to the millisecond, was stored beside the backfilled one and
// the market's trades doubled over the outage.
func TestImportOverBackfilledTrades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	m := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	evs := fxStream(m, m.StartTime.Add(-20*time.Second), m.EndTime.Add(10*time.Second), 5, 0)
	from, to := m.StartTime.Add(time.Minute), m.StartTime.Add(3*time.Minute)
	var backfilled []store.MarketTrade
	dumped := 0
	for _, e := range evs {
		if e.kind != "last_trade_price" {
			continue
		}
		dumped++
		at := time.UnixMilli(e.ts).UTC()
		if at.Before(from) || !at.Before(to) {
			continue
		}
		outcome := store.OutcomeUp
		if e.asset == m.ClobTokenDown {
			outcome = store.OutcomeDown
		}
		p, _ := strconv.ParseFloat(e.price, 64)
		s, _ := strconv.ParseFloat(e.size, 64)
		backfilled = append(backfilled, store.MarketTrade{Time: at.Truncate(time.Second), Outcome: outcome, Price: p, Size: s, Side: e.side, TxHash: e.tx})
	}
	if len(backfilled) < 50 {
		t.Fatalf("the fixture has %d trades in the outage", len(backfilled))
	}
	if _, err := st.AppendMarketTrades(ctx, m.Slug, backfilled); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	writeJSONL(t, dump, evs)
	prices := archive.NewCoinPrices()
	writeKlines(t, prices, store.BTC, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{dump}, Markets: []store.Market{m}, Prices: prices}); err != nil {
		t.Fatal(err)
	}
	trades, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, tr := range trades {
		seen[tr.TxHash]++
	}
	for h, n := range seen {
		if n > 1 {
			t.Errorf("trade %s stored %d times", h, n)
		}
	}
	if len(seen) != dumped {
		t.Errorf("%d trades stored, the dump has %d", len(seen), dumped)
	}
}
