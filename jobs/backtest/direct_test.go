package backtest_test

import (
	"testing"
	"time"

	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDirectEndTimes: a shard reports each market's end_time beside its
// performance, as a replay writes times, and the aggregate places the
// markets in their UTC days from it.
func TestDirectEndTimes(t *testing.T) {
	t.Parallel()
	cfg := gen.DefaultConfig(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	cfg.Coins = gen.DefaultCoins()[:1]
	cfg.Markets = map[store.MarketType]int{store.M15: 6}
	cfg.MaxSnapshotsPerMarket = 60
	cfg.BookLevels = 3
	cfg.DepthHistory = 0
	st := memory.New()
	if _, err := gen.Seed(t.Context(), cfg, st); err != nil {
		t.Fatal(err)
	}
	resolved := true
	ms, _, err := st.ListMarkets(t.Context(), store.MarketFilter{Coin: store.BTC, MarketType: store.M15, Resolved: &resolved, Limit: 4})
	if err != nil || len(ms) == 0 {
		t.Fatalf("%d markets: %v", len(ms), err)
	}
	req := backtest.Request{Strategy: spec(t)}
	for _, m := range ms {
		req.Markets = append(req.Markets, m.Slug)
	}
	req.Markets = append(req.Markets, "no-such-market")
	rep, err := backtest.Direct(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	days := map[string]int{}
	for i, m := range ms {
		r := rep.Results[i]
		if want := m.EndTime.UTC().Format("2006-01-02T15:04:05.000000Z"); r.EndTime != want || r.Performance == nil {
			t.Errorf("%s: end_time %q, want %q (performance %v)", m.Slug, r.EndTime, want, r.Performance)
		}
		days[m.EndTime.UTC().Format(time.DateOnly)]++
	}
	if last := rep.Results[len(ms)]; last.EndTime != "" || last.Error == nil {
		t.Errorf("an unknown market: %+v", last)
	}
	a := rep.Aggregate
	if a.NMarkets != len(ms) || a.MarketsTested != len(ms)+1 || len(a.Daily) != len(days) || a.PortfolioMaxDrawdown == nil {
		t.Errorf("aggregate %+v", a)
	}
	for _, d := range a.Daily {
		if d.Markets != days[d.Date] {
			t.Errorf("day %s has %d markets, want %d", d.Date, d.Markets, days[d.Date])
		}
	}
}
