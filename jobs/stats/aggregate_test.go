package stats

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

func day(d, hour int) time.Time { return time.Date(2026, 11, d, hour, 0, 0, 0, time.UTC) }

// jsonEqual compares v's encoding with want's, as values.
func jsonEqual(t *testing.T, name string, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", name, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
	}
}

// TestAggregate works every figure of a small sample by hand. Four
// markets, newest first as the agent lists them; m3 resolved 50-50.
//
//   - trades 0.5, −0.1, −0.35, 0.05: n = 4, Σ = 0.1, ev 0.025;
//     deviations 0.475 −0.125 −0.375 0.025, Σ² = 0.3825, sd = √0.1275 =
//     0.357071; t(0.975, 3) = 3.182446, half = 3.182446·0.357071/2 =
//     0.568180: ev_ci95 [−0.543180, 0.593180]; sqn = 2·0.025/0.357071 =
//     0.140028.
//   - 2 wins of 4: win_rate 50; Wilson: centre (0.5 + 0.4802)/1.9604 = 0.5,
//     half 1.96·√(0.0625 + 0.060025)/1.9604 = 0.349964: [15.003571,
//     84.996429] in percent.
//   - traded markets' pnl 0.4, −0.35, 0.05: mean 0.033333; deviations
//     0.366667 −0.383333 0.016667, Σ² = 0.281667, sd = √0.140833 =
//     0.375278; sorted −0.35 0.05 0.4: p5 at h = 0.1 is −0.35 + 0.1·0.4 =
//     −0.31, p50 0.05, p95 at h = 1.9 is 0.05 + 0.9·0.35 = 0.365; sharpe
//     0.033333/0.375278 = 0.088823.
//   - psr0: population m₂ = 0.093889, γ₃ = −0.081428, γ₄ = 1.5; z =
//     0.088823·√2/√(1 + 0.081428·0.088823 + 0.125·0.088823²) =
//     0.125614/1.004101 = 0.125101; Φ(z) = 0.549779.
//   - days (UTC): Nov 1 holds m1 and m2 (0.4 − 0.35 = 0.05), Nov 2 m3 and m4
//     (0.05); two days, so no daily ratios.
//   - cumulative pnl in end order 0.4, 0.05, 0.1, 0.1: drawdown 0.35.
//   - buckets: 0.45 and 0.48 in [0.4, 0.5): mean 0.465, won (1 + 0.5)/2 =
//     0.75, Wilson(1.5, 2) = [0.197863, 0.973323]; 0.62 alone in
//     [0.6, 0.7), won 1, [0.206543, 1]; 0.35 alone in [0.3, 0.4), won 0,
//     [0, 0.793457].
//   - brier_entry ((0.45 − 1)² + (0.62 − 1)² + 0.35² + (0.48 − 0.5)²)/4 =
//     (0.3025 + 0.1444 + 0.1225 + 0.0004)/4 = 0.14245; brier_market with
//     the mids 0.44, 0.6, 0.34, 0.5: (0.3136 + 0.16 + 0.1156 + 0)/4 = 0.1473.
func TestAggregate(t *testing.T) {
	t.Parallel()
	markets := []Market{
		{Slug: "m4", End: day(2, 20)},
		{Slug: "m3", End: day(2, 8), PnL: 0.05, NTrades: 1, Wins: 1,
			Trades: []Trade{{PnL: 0.05, EntryPrice: 0.48, EntryMid: 0.5, Won: 0.5}}},
		{Slug: "m2", End: day(1, 20), PnL: -0.35, Fees: 0.02, NTrades: 1,
			Trades: []Trade{{PnL: -0.35, EntryPrice: 0.35, EntryMid: 0.34, Won: 0}}},
		{Slug: "m1", End: day(1, 8), PnL: 0.4, Fees: 0.01, NTrades: 2, Wins: 1,
			Trades: []Trade{{PnL: 0.5, EntryPrice: 0.45, EntryMid: 0.44, Won: 1}, {PnL: -0.1, EntryPrice: 0.62, EntryMid: 0.6, Won: 1}}},
	}
	empty := func(from, to float64) string {
		b, _ := json.Marshal(Bucket{From: from, To: to})
		return string(b)
	}
	want := `{"n_markets":4,"n_markets_traded":3,"n_trades":4,"total_pnl":0.1,"total_fees":0.03,
		"win_rate":50,"ev_per_trade":0.025,"ev_ci95":[-0.54318,0.59318],"sqn":0.140028,
		"win_rate_ci95":[15.003571,84.996429],
		"pnl_per_market":{"mean":0.033333,"sd":0.375278,"p5":-0.31,"p50":0.05,"p95":0.365},
		"sharpe_per_market":0.088823,
		"daily":[{"date":"2026-11-01","markets":2,"pnl":0.05},{"date":"2026-11-02","markets":2,"pnl":0.05}],
		"sharpe_daily_ann":null,"sortino_daily_ann":null,"portfolio_max_drawdown":0.35,
		"calibration":[` + empty(0, 0.1) + `,` + empty(0.1, 0.2) + `,` + empty(0.2, 0.3) + `,
			{"from":0.3,"to":0.4,"entries":1,"mean_price":0.35,"side_won":0,"side_won_ci95":[0,0.793457]},
			{"from":0.4,"to":0.5,"entries":2,"mean_price":0.465,"side_won":0.75,"side_won_ci95":[0.197863,0.973323]},
			` + empty(0.5, 0.6) + `,
			{"from":0.6,"to":0.7,"entries":1,"mean_price":0.62,"side_won":1,"side_won_ci95":[0.206543,1]},
			` + empty(0.7, 0.8) + `,` + empty(0.8, 0.9) + `,` + empty(0.9, 1) + `],
		"brier_entry":0.14245,"brier_market":0.1473,"psr0":0.549779}`
	jsonEqual(t, "aggregate", Aggregate(markets, 1), want)

	// Without the trades (a backtest shard's performance), the figures
	// that need them are null and ev_per_trade is total_pnl/n_trades.
	counts := make([]Market, len(markets))
	for i, m := range markets {
		m.Trades = nil
		counts[i] = m
	}
	s := Aggregate(counts, 1)
	if s.EVCI95 != nil || s.SQN != nil || s.Calibration != nil || s.BrierEntry != nil || s.BrierMarket != nil {
		t.Errorf("per-trade figures without trades: %+v", s.Edge)
	}
	if s.EVPerTrade == nil || *s.EVPerTrade != 0.025 || s.PSR0 == nil || *s.PSR0 != 0.549779 || s.WinRateCI95 == nil {
		t.Errorf("figures from counts: %+v", s)
	}
}

// TestAggregateEdges: nothing replayed, nothing traded, an unknown end.
func TestAggregateEdges(t *testing.T) {
	t.Parallel()
	jsonEqual(t, "no markets", Aggregate(nil, 10), `{"n_markets":0,"n_markets_traded":0,"n_trades":0,
		"total_pnl":0,"total_fees":0,"win_rate":null,"ev_per_trade":null,"ev_ci95":null,"sqn":null,
		"win_rate_ci95":null,"pnl_per_market":null,"sharpe_per_market":null,"daily":null,
		"sharpe_daily_ann":null,"sortino_daily_ann":null,"portfolio_max_drawdown":null,
		"calibration":null,
		"brier_entry":null,"brier_market":null,"psr0":null}`)

	s := Aggregate([]Market{{Slug: "a", End: day(3, 1)}, {Slug: "b", PnL: 1, NTrades: 1, Wins: 1}}, 10)
	if s.Daily != nil || s.PortfolioMaxDrawdown != nil {
		t.Errorf("an unknown end_time: daily %v, drawdown %v", s.Daily, s.PortfolioMaxDrawdown)
	}
	if s.PnLPerMarket == nil || s.PnLPerMarket.SD != nil || s.SharpePerMarket != nil || s.PSR0 != nil || s.EVCI95 != nil {
		t.Errorf("one traded market: %+v", s)
	}
}

// TestCalibrationBuckets: each bound opens its bucket; 1.0 closes the
// last; prices outside [0, 1] go to the nearest end bucket.
func TestCalibrationBuckets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		price  float64
		bucket int
	}{{0, 0}, {0.099999, 0}, {0.1, 1}, {0.3, 3}, {0.6, 6}, {0.7, 7}, {0.899999, 8}, {0.9, 9}, {1, 9}, {-0.2, 0}, {1.5, 9}} {
		b, _, _ := Calibration([]Trade{{EntryPrice: tc.price}})
		for k := range b {
			if (b[k].Entries == 1) != (k == tc.bucket) {
				t.Errorf("price %v: bucket %d has %d entries, want it in %d", tc.price, k, b[k].Entries, tc.bucket)
			}
		}
	}
}

// TestDailyRatios: the daily ratios need 20 days. Twenty days, ten of
// pnl +2 and ten of −1 on a positionSize of 10: r = 0.2 and −0.1, mean
// 0.05; deviations ±0.15, Σ² = 20·0.0225 = 0.45, sd = √(0.45/19) =
// 0.153897; Sharpe 0.05/0.153897·√365 = 0.324893·19.104973 = 6.207075.
// Downside √(10·0.01/20) = √0.005 = 0.070711; Sortino
// 0.05/0.070711·√365 = 13.509256. Nov 3's +2 is two markets, one ending
// at 23:00 on Nov 2 in UTC−5, which is Nov 3 04:00 UTC.
func TestDailyRatios(t *testing.T) {
	t.Parallel()
	est := time.FixedZone("EST", -5*3600)
	var markets []Market
	for d := 1; d <= 20; d++ {
		pnl := 2.0
		if d%2 == 0 {
			pnl = -1
		}
		markets = append(markets, Market{Slug: "m", End: day(d, 12), PnL: pnl, NTrades: 1})
	}
	// Split day 3's +2 into 1.5 on day 3 and 0.5 at 23:00 EST on Nov 2,
	// which is Nov 3 04:00 UTC.
	markets[2].PnL = 1.5
	markets = append(markets, Market{Slug: "late", End: time.Date(2026, 11, 2, 23, 0, 0, 0, est), PnL: 0.5, NTrades: 1})

	for _, tc := range []struct {
		name            string
		days            int
		sharpe, sortino float64 // NaN: nil
	}{
		{"20 days", 20, 6.207075, 13.509256},
		{"19 days", 19, math.NaN(), math.NaN()},
	} {
		ms := markets
		if tc.days == 19 {
			ms = markets[1:] // drops Nov 1, a +2 day
		}
		s := Aggregate(ms, 10)
		if len(s.Daily) != tc.days {
			t.Fatalf("%s: %d days: %+v", tc.name, len(s.Daily), s.Daily)
		}
		if d := s.Daily[2-(20-tc.days)]; d.Date != "2026-11-03" || d.Markets != 2 || d.PnL != 2 {
			t.Errorf("%s: Nov 3 is %+v", tc.name, d)
		}
		for _, f := range []struct {
			what string
			got  *float64
			want float64
		}{{"sharpe_daily_ann", s.SharpeDailyAnn, tc.sharpe}, {"sortino_daily_ann", s.SortinoDailyAnn, tc.sortino}} {
			switch {
			case math.IsNaN(f.want) && f.got != nil:
				t.Errorf("%s: %s %v, want null", tc.name, f.what, *f.got)
			case !math.IsNaN(f.want) && (f.got == nil || *f.got != f.want):
				t.Errorf("%s: %s %v, want %v", tc.name, f.what, f.got, f.want)
			}
		}
	}
	// No losing day: no downside, so no Sortino; no positionSize, no ratios.
	var up []Market
	for d := 1; d <= 20; d++ {
		up = append(up, Market{End: day(d, 0), PnL: float64(d), NTrades: 1})
	}
	if s := Aggregate(up, 10); s.SharpeDailyAnn == nil || s.SortinoDailyAnn != nil {
		t.Errorf("all days up: sharpe %v sortino %v", s.SharpeDailyAnn, s.SortinoDailyAnn)
	}
	if s := Aggregate(up, 0); s.SharpeDailyAnn != nil || s.Daily == nil {
		t.Errorf("positionSize 0: sharpe %v, daily %v", s.SharpeDailyAnn, s.Daily)
	}
}

// TestPortfolioDrawdown: pnl +3, −2, +1, −4, +5 in end order (given newest
// first): cumulative 3, 1, 2, −2, 3, peak 3, the largest fall 3 − (−2) =
// 5. A first loss falls from the starting 0.
func TestPortfolioDrawdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pnls []float64 // in end order
		want float64
	}{
		{"recovering", []float64{3, -2, 1, -4, 5}, 5},
		{"a first loss", []float64{-1, -0.5, 2}, 1.5},
		{"only gains", []float64{1, 2}, 0},
	} {
		var ms []Market
		for i, p := range tc.pnls {
			ms = append([]Market{{End: day(1, i), PnL: p, NTrades: 1}}, ms...) // newest first
		}
		if got := Aggregate(ms, 1).PortfolioMaxDrawdown; got == nil || *got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
