package backtest_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDirectEndTimes: a shard reports each market's end_time beside its
// performance, as a replay writes times, and the aggregate places the
// markets in their UTC days from it.
func TestDirectEndTimes(t *testing.T) {
	t.Parallel()
	st, ms := seed15m(t, 6, 60, 4)
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

// TestDirectPerTradeStatistics: a shard reports its market's round
// trips, so the aggregate's per-trade statistics (ev_ci95, sqn,
// calibration, brier_*) are those of every round trip of every market,
// as the statistics compute them from the replays' own trips; the
// answer's results do not carry the trips.
func TestDirectPerTradeStatistics(t *testing.T) {
	t.Parallel()
	st, ms := seed15m(t, 8, 300, 6)
	rules, err := strategy.ParseCode("coin=BTC type=15m side=UP entry: price_up < 0.5 exit: price_up > 0.52 size=10")
	if err != nil {
		t.Fatal(err)
	}
	req := backtest.Request{Strategy: strategy.Spec{Rules: rules, Explanation: "why"}}
	for _, m := range ms {
		req.Markets = append(req.Markets, m.Slug)
	}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	var markets []stats.Market
	for _, m := range ms {
		// The replay's own sums of its round trips (replay's tests hold
		// them to the trips its trade events pair).
		_, perf, sums, err := jobs.ReplaySums(t.Context(), st, replay.Request{MarketSlug: m.Slug, Strategy: req.Strategy.Strategy})
		if err != nil {
			t.Fatal(err)
		}
		sm := stats.Market{Slug: m.Slug, End: m.EndTime, PnL: perf.TotalPnL, Fees: perf.TotalFees, NTrades: perf.TotalTrades, Wins: perf.WinningTrades, Sums: sums}
		markets = append(markets, sm)
	}
	rep, err := backtest.Direct(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	want := stats.Aggregate(markets, req.Strategy.Strategy.PositionSize)
	a := rep.Aggregate
	if want.NTrades < 2 || want.EVCI95 == nil || want.SQN == nil || want.Calibration == nil || want.BrierEntry == nil || want.BrierMarket == nil {
		t.Fatalf("the strategy made %d trades: the statistics to compare are null (%+v)", want.NTrades, want.Edge)
	}
	if a.NTrades != want.NTrades || !reflect.DeepEqual(a.Edge, want.Edge) {
		t.Errorf("aggregate %d trades, %+v\nwant %d trades, %+v", a.NTrades, a.Edge, want.NTrades, want.Edge)
	}
	body, err := rep.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte(`"trips"`)) || bytes.Contains(body, []byte(`"sums"`)) || bytes.Contains(body, []byte(`"m2"`)) {
		t.Errorf("the answer carries the shards' sums: %.300s", body)
	}
}

// seed15m generates n BTC 15m markets of the given snapshots each and
// returns the store and the newest resolved ones, at most limit and at
// least 3.
func seed15m(t *testing.T, n, snapshots, limit int) (*memory.Store, []store.Market) {
	t.Helper()
	cfg := gen.DefaultConfig(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	cfg.Coins = gen.DefaultCoins()[:1]
	cfg.Markets = map[store.MarketType]int{store.M15: n}
	cfg.MaxSnapshotsPerMarket = snapshots
	cfg.BookLevels = 3
	cfg.DepthHistory = 0
	cfg.Outage = 0 // every market recorded
	st := memory.New()
	if _, err := gen.Seed(t.Context(), cfg, st); err != nil {
		t.Fatal(err)
	}
	resolved := true
	ms, _, err := st.ListMarkets(t.Context(), store.MarketFilter{Coin: store.BTC, MarketType: store.M15, Resolved: &resolved, Limit: limit})
	if err != nil || len(ms) < 3 {
		t.Fatalf("%d markets: %v", len(ms), err)
	}
	return st, ms
}
