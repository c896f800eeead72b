package backtest_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/strategy"
)

func perf(pnl float64, trades, wins, losses int, dd, ddPct float64) *replay.Performance {
	return &replay.Performance{TotalPnL: pnl, TotalTrades: trades, WinningTrades: wins, LosingTrades: losses,
		MaxDrawdown: dd, MaxDrawdownPercent: ddPct}
}

func TestSummarize(t *testing.T) {
	results := []backtest.MarketResult{
		{Slug: "m1", Performance: perf(12.5, 3, 2, 1, 4, 3.5)},
		{Slug: "m2", Error: &jobs.Failure{Code: "NO_DATA", Message: "no snapshots"}},
		{Slug: "m3", Performance: perf(0, 0, 0, 0, 0, 0)},     // replayed, never entered
		{Slug: "m4", Performance: perf(-20, 2, 0, 2, 25, 20)}, // the worst, deepest in dollars
		{Slug: "m5", Performance: perf(12.5, 1, 1, 0, 1, 30)}, // ties m1 for best: m1 is newer
		{Slug: "m6", Performance: perf(0.1, 1, 0, 0, 0, 0)},   // a trade shown as neither winning nor losing
	}
	got := backtest.Summarize(results, 10)
	// DESIGN 14's statistics beside DESIGN 8's figures: 5 markets
	// replayed, 4 traded with pnl 12.5, −20, 12.5, 0.1: mean 1.275;
	// deviations 11.225 −21.275 11.225 −1.175, Σ² = 706.0075, sd =
	// √235.335833 = 15.340659; Sharpe 1.275/15.340659 = 0.083112. 3 wins of
	// 7: Wilson centre (3/7 + 0.274400)/1.548800 = 0.453883, half
	// 1.96·√(0.034985 + 0.019600)/1.548800 = 0.295664: [15.821692,
	// 74.954577] in percent, around win_rate's 42.857143. No end_time (a
	// result from an older worker): no days, no portfolio drawdown. No
	// trades in a shard's result: no interval on ev_per_trade (5.1/7).
	if got.NMarkets != 5 || got.NMarketsTraded != 4 || got.NTrades != 7 {
		t.Errorf("counts %d %d %d", got.NMarkets, got.NMarketsTraded, got.NTrades)
	}
	e := got.Edge
	if d := e.PnLPerMarket; d == nil || d.Mean != 1.275 || d.SD == nil || *d.SD != 15.340659 || e.SharpePerMarket == nil || *e.SharpePerMarket != 0.083112 {
		t.Errorf("pnl_per_market %+v, sharpe %v", d, e.SharpePerMarket)
	}
	if ci := e.WinRateCI95; ci == nil || *ci != (stats.Interval{15.821692, 74.954577}) {
		t.Errorf("win_rate_ci95 %v", ci)
	}
	if e.EVPerTrade == nil || *e.EVPerTrade != 0.728571 || e.EVCI95 != nil || e.SQN != nil || e.Calibration != nil || e.BrierEntry != nil ||
		e.Daily != nil || e.SharpeDailyAnn != nil || e.PortfolioMaxDrawdown != nil {
		t.Errorf("statistics without per-trade results or end times: %+v", e)
	}
	got.NMarkets, got.NMarketsTraded, got.NTrades, got.Edge = 0, 0, 0, stats.Edge{}
	want := backtest.Aggregate{
		MarketsTested: 6, MarketsFailed: 1, MarketsTraded: 4,
		TotalTrades: 7, WinningTrades: 3, LosingTrades: 3,
		WinRate:      42.857143, // 3/7
		TotalPnL:     5.1,       // 12.5 - 20 + 12.5 + 0.1
		AvgMarketPnL: 1.02,      // 5.1 over the 5 replayed markets
		AvgTradePnL:  0.728571,  // 5.1 / 7
		BestMarket:   &backtest.MarketPnL{Slug: "m1", TotalPnL: 12.5},
		WorstMarket:  &backtest.MarketPnL{Slug: "m4", TotalPnL: -20},
		MaxDrawdown:  25, MaxDrawdownPercent: 30, // each the largest of any one market
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestSummarizeEdges(t *testing.T) {
	empty := backtest.Summarize(nil, 10)
	if !reflect.DeepEqual(empty, backtest.Aggregate{}) {
		t.Errorf("no markets: %+v", empty)
	}
	allFailed := backtest.Summarize([]backtest.MarketResult{{Slug: "a", Error: &jobs.Failure{Code: "NO_DATA"}}, {Slug: "b", Error: &jobs.Failure{Code: "JOB_TIMEOUT"}}}, 10)
	if allFailed.MarketsTested != 2 || allFailed.MarketsFailed != 2 || allFailed.BestMarket != nil || allFailed.AvgMarketPnL != 0 {
		t.Errorf("all failed: %+v", allFailed)
	}
	noTrades := backtest.Summarize([]backtest.MarketResult{{Slug: "a", Performance: perf(0, 0, 0, 0, 0, 0)}}, 10)
	if noTrades.MarketsTraded != 0 || noTrades.BestMarket != nil || noTrades.WorstMarket != nil || noTrades.WinRate != 0 {
		t.Errorf("no trades: %+v", noTrades)
	}
	b, _ := json.Marshal(noTrades)
	if !strings.Contains(string(b), `"best_market":null`) {
		t.Errorf("best_market must be null, not absent: %s", b)
	}
	// Sums of rounded figures are rounded again; no -0 reaches JSON.
	r := backtest.Summarize([]backtest.MarketResult{
		{Slug: "a", Performance: perf(0.1, 1, 1, 0, 0, 0)}, {Slug: "b", Performance: perf(0.2, 1, 1, 0, 0, 0)},
		{Slug: "c", Performance: perf(-0.3, 1, 0, 1, 0, 0)}}, 10)
	if r.TotalPnL != 0 || r.AvgTradePnL != 0 {
		t.Errorf("0.1+0.2-0.3 = %v (avg %v), want 0", r.TotalPnL, r.AvgTradePnL)
	}
	if b, _ := json.Marshal(r); strings.Contains(string(b), "-0,") {
		t.Errorf("negative zero in %s", b)
	}
}

func spec(t *testing.T) strategy.Spec {
	t.Helper()
	rules, err := strategy.ParseCode("coin=BTC type=15m side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=10")
	if err != nil {
		t.Fatal(err)
	}
	return strategy.Spec{Rules: rules, Explanation: "why"}
}

func TestCollect(t *testing.T) {
	req := backtest.Request{Strategy: spec(t), Markets: []string{"a", "b", "c"}, Quota: &backtest.Quota{Used: 1, ResetsAt: "x"}}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	groups := req.Groups()
	if len(groups) != 3 || groups[1].Markets[0] != "b" || !reflect.DeepEqual(groups[1].Strategy, req.Strategy.Strategy) {
		t.Fatalf("groups %+v", groups)
	}
	ok, _ := json.Marshal(backtest.MarketResult{Slug: "a", Performance: &replay.Performance{TotalPnL: 3, TotalTrades: 1, WinningTrades: 1}})
	okGroup, _ := json.Marshal([]jobs.Outcome{{Result: ok}})
	results, err := backtest.Ungroup(groups, []*jobs.Outcome{
		{Result: okGroup},
		{Failure: &jobs.Failure{Code: "NO_DATA", Message: "none"}},
		nil, // unfinished at the deadline
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := backtest.Collect(req, results)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StrategyCode != strategy.FormatCode(req.Strategy.Rules) || rep.Quota != req.Quota || rep.GeneratedStrategy.Explanation != "why" {
		t.Errorf("report head %+v", rep)
	}
	if r := rep.Results; r[0].Performance == nil || r[0].Performance.TotalPnL != 3 || r[1].Error.Code != "NO_DATA" || r[2].Error.Code != backtest.CodeTimeout {
		t.Errorf("results %+v", r)
	}
	if a := rep.Aggregate; a.MarketsTested != 3 || a.MarketsFailed != 2 || a.TotalPnL != 3 {
		t.Errorf("aggregate %+v", a)
	}
	if _, err := backtest.Collect(req, results[:2]); err == nil {
		t.Error("missing results were accepted")
	}
}

func TestRequestNormalize(t *testing.T) {
	many := make([]string, backtest.MaxMarkets+1)
	for i := range many {
		many[i] = strings.Repeat("m", i+1)
	}
	bad := []backtest.Request{
		{Strategy: spec(t)},
		{Strategy: spec(t), Markets: many},
		{Strategy: spec(t), Markets: []string{"a", "a"}},
		{Strategy: spec(t), Markets: []string{""}},
		{Strategy: strategy.Spec{}, Markets: []string{"a"}},
	}
	for i, r := range bad {
		if err := r.Normalize(); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

// TestSummarizeFees: total_fees sums the markets' fees, and is 0 (never
// absent) without any (DESIGN 6: total_fees in every answer).
func TestSummarizeFees(t *testing.T) {
	withFees := func(p *replay.Performance, fees float64) *replay.Performance { p.TotalFees = fees; return p }
	got := backtest.Summarize([]backtest.MarketResult{
		{Slug: "m1", Performance: withFees(perf(1, 1, 1, 0, 0, 0), 1.75)},
		{Slug: "m2", Error: &jobs.Failure{Code: "NO_DATA"}},
		{Slug: "m3", Performance: withFees(perf(0, 0, 0, 0, 0, 0), 0)},
		{Slug: "m4", Performance: withFees(perf(-2, 1, 0, 1, 0, 0), 0.33333)},
	}, 10)
	if got.TotalFees != 2.08333 {
		t.Errorf("total_fees %v, want 2.08333", got.TotalFees)
	}
	b, _ := json.Marshal(backtest.Summarize([]backtest.MarketResult{{Slug: "m1", Performance: perf(1, 1, 1, 0, 0, 0)}}, 10))
	if !strings.Contains(string(b), `"total_fees":0`) {
		t.Errorf("total_fees without fees: %s", b)
	}
}

// TestGroupUngroup: markets travel to the workers in at most 16 groups of
// consecutive markets of nearly equal size, and their outcomes come back
// one per market in the request's order, whatever befell each group.
func TestGroupUngroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window string // the strategy's market type; "" for none
		n      int
		groups int
	}{
		{"15m", 1, 1}, {"15m", 2, 2}, {"15m", 15, 4}, {"15m", 17, 4}, {"15m", 100, 4}, // 300,000 snapshots
		{"5m", 100, 4},                 // at least minGroups
		{"1h", 15, 4}, {"1h", 100, 16}, // 180,000 and 1,200,000 snapshots
		{"4h", 17, 11}, // 816,000
		{"24hr", 5, 5}, {"24hr", 100, 16},
		{"", 17, 16}, {"", 100, 16}, // the window unknown: as many as may be
	} {
		code := "coin=BTC side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=10"
		if tc.window != "" {
			code = "coin=BTC type=" + tc.window + " side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=10"
		}
		rules, err := strategy.ParseCode(code)
		if err != nil {
			t.Fatal(err)
		}
		req := backtest.Request{Strategy: strategy.Spec{Rules: rules}}
		for i := range tc.n {
			req.Markets = append(req.Markets, fmt.Sprint("m", i))
		}
		groups := req.Groups()
		if len(groups) != tc.groups {
			t.Fatalf("%d markets of %q: %d groups, want %d", tc.n, tc.window, len(groups), tc.groups)
		}
		var flat []string
		small, large := tc.n, 0
		for _, g := range groups {
			if !reflect.DeepEqual(g.Strategy, req.Strategy.Strategy) {
				t.Fatalf("%d markets: a group's strategy is %+v", tc.n, g.Strategy)
			}
			flat = append(flat, g.Markets...)
			small, large = min(small, len(g.Markets)), max(large, len(g.Markets))
		}
		if !reflect.DeepEqual(flat, req.Markets) || large-small > 1 {
			t.Fatalf("%d markets: groups %v", tc.n, groups)
		}
	}

	groups := []backtest.ShardGroup{{Markets: []string{"a", "b"}}, {Markets: []string{"c", "d"}}, {Markets: []string{"e"}}}
	// A market's result names it (RunShard's); Ungroup names it by its
	// place in the group all the same.
	ok, _ := json.Marshal([]jobs.Outcome{{Result: []byte(`{"slug":"x","end_time":"2026-11-27T10:15:00.000000Z","performance":{"total_pnl":1.5,"total_trades":2}}`)},
		{Failure: &jobs.Failure{Code: "NO_DATA"}}})
	failed := &jobs.Failure{Code: "INTERNAL_ERROR"}
	got, err := backtest.Ungroup(groups, []*jobs.Outcome{{Result: ok}, {Failure: failed}, nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Slug != "a" || got[0].EndTime != "2026-11-27T10:15:00.000000Z" || got[0].Performance == nil || got[0].Performance.TotalPnL != 1.5 || got[0].Performance.TotalTrades != 2 ||
		got[1].Slug != "b" || got[1].Error.Code != "NO_DATA" || got[2].Slug != "c" || got[2].Error != failed || got[3].Error != failed ||
		got[4].Slug != "e" || got[4].Error.Code != backtest.CodeTimeout {
		t.Errorf("ungrouped %+v", got)
	}
	// A group's outcome over 64 KiB arrives deflated when the worker
	// client read it (DecodeOutcome): it ungroups the same.
	var many []jobs.Outcome
	for range 2 {
		many = append(many, jobs.Outcome{Failure: &jobs.Failure{Code: "NO_DATA", Message: strings.Repeat("m", 40_000)}})
	}
	largeJSON, _ := json.Marshal(many)
	wire, err := jobs.Outcome{Result: largeJSON}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	peeked, err := jobs.DecodeOutcome(wire)
	if err != nil || peeked.Deflated == nil {
		t.Fatalf("a %d-byte group outcome was not deflated: %v", len(largeJSON), err)
	}
	if got, err := backtest.Ungroup(groups[:1], []*jobs.Outcome{&peeked}); err != nil || len(got) != 2 || got[1].Error.Code != "NO_DATA" {
		t.Errorf("a deflated group outcome ungrouped to %+v, %v", got, err)
	}
	for name, bad := range map[string]string{
		"a group answering for 1 of its 2 markets": `[{"failure":{"code":"NO_DATA"}}]`,
		"an undecodable group result":              `[{`,
		"a market's result without performance":    `[{"result":{"slug":"a"}},{"failure":{"code":"NO_DATA"}}]`,
		"a market without result or failure":       `[{},{"failure":{"code":"NO_DATA"}}]`,
	} {
		if _, err := backtest.Ungroup(groups, []*jobs.Outcome{{Result: []byte(bad)}, nil, nil}); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
	if _, err := backtest.Ungroup(groups, nil); err == nil {
		t.Error("missing outcomes accepted")
	}
}

// TestSummarizeStatistics works DESIGN 14's statistics of a backtest by
// hand. Newest first: m5 (Nov 2 20:00, +1, 1 trade won), m1 (Nov 2 10:00,
// +3, 2 trades, 1 won), m2 failed, m3 (Nov 1 12:00, no trade), m4 (Nov 1
// 08:00, −1, 1 trade lost).
//
//   - n_markets 4 (m2 failed), n_markets_traded 3, n_trades 4;
//     ev_per_trade 3/4 = 0.75, with no interval or sqn (no trades in a
//     shard's result); 2 wins of 4: Wilson centre 0.5, half 0.349964:
//     [15.003571, 84.996429].
//   - traded pnl 1, 3, −1: mean 1, deviations 0 2 −2, sd √(8/2) = 2; sorted
//     −1 1 3: p5 = −1 + 0.1·2 = −0.8, p50 1, p95 = 1 + 0.9·2 = 2.8; Sharpe
//     0.5. Population m₂ = 8/3, m₃ = 0, m₄ = 32/3: γ₃ = 0, γ₄ = 1.5;
//     psr0 = Φ(0.5·√2/√(1 + 0.5/4·0.25)) = Φ(0.696311) = 0.756883.
//   - days: Nov 1 holds m3 and m4 (−1), Nov 2 m1 and m5 (+4): under 20
//     days, no ratios.
//   - cumulative pnl in end order (m4, m3, m1, m5): −1, −1, 2, 3: the
//     portfolio's drawdown 1, from the starting 0; max_drawdown keeps
//     DESIGN 8's meaning, the largest market's own (2.5).
func TestSummarizeStatistics(t *testing.T) {
	t.Parallel()
	results := []backtest.MarketResult{
		{Slug: "m5", EndTime: "2026-11-02T20:00:00.000000Z", Performance: perf(1, 1, 1, 0, 0, 0)},
		{Slug: "m1", EndTime: "2026-11-02T10:00:00.000000Z", Performance: perf(3, 2, 1, 1, 2.5, 20)},
		{Slug: "m2", Error: &jobs.Failure{Code: "NO_DATA"}},
		{Slug: "m3", EndTime: "2026-11-01T12:00:00.000000Z", Performance: perf(0, 0, 0, 0, 0, 0)},
		{Slug: "m4", EndTime: "2026-11-01T08:00:00.000000Z", Performance: perf(-1, 1, 0, 1, 1, 10)},
	}
	got, err := json.Marshal(backtest.Summarize(results, 10))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"markets_tested":5,"markets_failed":1,"markets_traded":3,"total_trades":4,"winning_trades":2,
		"losing_trades":2,"win_rate":50,"total_pnl":3,"total_fees":0,"avg_market_pnl":0.75,"avg_trade_pnl":0.75,
		"best_market":{"slug":"m1","total_pnl":3},"worst_market":{"slug":"m4","total_pnl":-1},
		"max_drawdown":2.5,"max_drawdown_percent":20,
		"n_markets":4,"n_markets_traded":3,"n_trades":4,
		"ev_per_trade":0.75,"ev_ci95":null,"sqn":null,"win_rate_ci95":[15.003571,84.996429],
		"pnl_per_market":{"mean":1,"sd":2,"p5":-0.8,"p50":1,"p95":2.8},"sharpe_per_market":0.5,
		"daily":[{"date":"2026-11-01","markets":2,"pnl":-1},{"date":"2026-11-02","markets":2,"pnl":4}],
		"sharpe_daily_ann":null,"sortino_daily_ann":null,"portfolio_max_drawdown":1,
		"calibration":null,"brier_entry":null,"brier_market":null,"psr0":0.756883}`
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// A result from a worker older than end_time leaves the days and the
	// portfolio drawdown null, and nothing else.
	results[0].EndTime = ""
	old := backtest.Summarize(results, 10)
	if old.Daily != nil || old.PortfolioMaxDrawdown != nil || old.PSR0 == nil || *old.PSR0 != 0.756883 {
		t.Errorf("without an end_time: %+v", old.Edge)
	}
}

// TestSummarizeReadsOlderWorkersTrips: a shard result from a worker older
// than the sums carries the round trips themselves (a rolling upgrade,
// the api first); they are added up, and the per-trade statistics are
// those of the same trips reported as sums.
func TestSummarizeReadsOlderWorkersTrips(t *testing.T) {
	t.Parallel()
	trips := []replay.RoundTrip{{EntryFill: 0.4, EntryMid: 0.41, PnL: 2, Won: 1}, {EntryFill: 0.7, EntryMid: 0.69, PnL: -1.5, Won: 0}, {EntryFill: 0.55, EntryMid: 0.5, PnL: 0.25, Won: 1}}
	tj, err := json.Marshal(trips)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"slug":"m1","end_time":"2026-11-02T10:00:00.000000Z","performance":{"total_pnl":0.75,"total_trades":3,"winning_trades":2,"losing_trades":1},"trips":` + string(tj) + `}`
	var r backtest.MarketResult
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	fromTrips := backtest.Summarize([]backtest.MarketResult{r}, 10)
	r.Trips, r.Sums = nil, replay.SumTrips(trips)
	fromSums := backtest.Summarize([]backtest.MarketResult{r}, 10)
	if fromTrips.EVCI95 == nil || fromTrips.SQN == nil || fromTrips.Calibration == nil || !reflect.DeepEqual(fromTrips.Edge, fromSums.Edge) {
		t.Errorf("from an older worker's trips %+v\nfrom the sums %+v", fromTrips.Edge, fromSums.Edge)
	}
}
