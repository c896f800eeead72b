package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/store"
)

// walkMarket is a resolved 15m market of n snapshots a second apart, with
// books on both outcomes and a few recorded trades.
func walkMarket(rng *rand.Rand, k, n int) (store.Market, []store.Snapshot, []store.MarketTrade) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(k) * 15 * time.Minute)
	winner := store.OutcomeUp
	if rng.IntN(2) == 0 {
		winner = store.OutcomeDown
	}
	m := store.Market{Slug: fmt.Sprintf("btc-updown-15m-%d", start.Unix()), Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute), Winner: &winner}
	up, coin := 0.5, 90000.0
	snaps := make([]store.Snapshot, n)
	var trades []store.MarketTrade
	for i := range snaps {
		up = math.Round(min(0.95, max(0.05, up+float64(rng.IntN(5)-2)/100))*100) / 100
		coin += float64(rng.IntN(21) - 10)
		book := func(p float64) *store.Book {
			return &store.Book{Bids: []store.Level{{Price: p - 0.01, Size: float64(10 + rng.IntN(200))}, {Price: p - 0.02, Size: 100}},
				Asks: []store.Level{{Price: p, Size: float64(10 + rng.IntN(200))}, {Price: p + 0.01, Size: 100}}}
		}
		t := start.Add(time.Duration(i) * time.Second)
		snaps[i] = store.Snapshot{Time: t, CoinPrice: coin, PriceUp: up, PriceDown: math.Round((1-up+0.01)*100) / 100,
			BookUp: book(up), BookDown: book(math.Round((1-up+0.01)*100) / 100)}
		if rng.IntN(3) == 0 {
			trades = append(trades, store.MarketTrade{Time: t.Add(500 * time.Millisecond), Outcome: store.OutcomeUp,
				Side: store.SideSell, Price: up - 0.01, Size: float64(5 + rng.IntN(100)), TxHash: fmt.Sprintf("0x%x", rng.Uint32())})
		}
	}
	return m, snaps, trades
}

// TestShardAnswersAsReplay: a sweep trial's result on a market is byte for
// byte the performance POST /v1/replay answers for the same strategy with
// the parameters substituted (every trial, MARKET and GTC, both sides).
func TestShardAnswersAsReplay(t *testing.T) {
	t.Parallel()
	b := body(func(b map[string]any) {
		b["parameters"] = []any{
			map[string]any{"path": "/entryConditions/0/value", "values": []any{0.45, 0.5, 0.55}},
			map[string]any{"path": "/orderType", "values": []any{"MARKET", "LIMIT", "GTC"}},
			map[string]any{"path": "/side", "values": []any{"UP", "DOWN"}},
		}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": 5}
	})
	p, err := plan(t, b, ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for k := range 5 {
		m, snaps, trades := walkMarket(rng, k, 300)
		up, _ := store.TapeOf(snaps, store.OutcomeUp)
		down, _ := store.TapeOf(snaps, store.OutcomeDown)
		strategies := make([]replay.Strategy, len(p.Trials))
		for i, tr := range p.Trials {
			strategies[i] = tr.Strategy
		}
		need := NeedsOf(strategies)
		if !need.Up || !need.Down || !need.Trades {
			t.Fatalf("needs %+v", need)
		}
		out, err := RunShard(MarketData{Market: m, Up: up, Down: down, Trades: trades}, strategies)
		if err != nil {
			t.Fatal(err)
		}
		traded := 0
		for i, tr := range p.Trials {
			want, err := replay.RunTrades(m, snaps, trades, tr.Strategy)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(out[i].Performance)
			w, _ := json.Marshal(want.Performance)
			if string(got) != string(w) {
				t.Fatalf("market %d, trial %d (%v): shard %s, replay %s", k, i, tr.Values, got, w)
			}
			if n := out[i].Sums; want.Performance.TotalTrades > 0 && (n == nil || n.N != want.Performance.TotalTrades) ||
				want.Performance.TotalTrades == 0 && n != nil {
				t.Fatalf("market %d, trial %d: sums %+v for %d trades", k, i, n, want.Performance.TotalTrades)
			}
			if want.Performance.TotalTrades > 0 {
				traded++
			}
		}
		if traded == 0 {
			t.Fatalf("market %d: no trial traded", k)
		}
	}
}

// TestSummarizeHandWorked: two trials over four markets with a 0.5
// holdout and no embargo (train markets 0-1, test 2-3). Trial 0 makes 1
// on every market; trial 1 makes 3 and 2 in training, then −1 twice.
// Trial 1 is the train-best by total pnl (5 against 2) and loses 2 on
// test; its only neighbour, trial 0, has a train objective of 2.
func TestSummarizeHandWorked(t *testing.T) {
	t.Parallel()
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": []any{20, 40}}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": 4}
		b["split"] = map[string]any{"kind": "HOLDOUT", "testFraction": 0.5, "embargoMarkets": 0}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(4)
	if err != nil {
		t.Fatal(err)
	}
	pnl := [][]float64{{1, 3}, {1, 2}, {1, -1}, {1, -1}} // [market][trial]
	markets := make([]MarketInfo, 4)
	outcomes := make([][]TrialMarket, 4)
	for m := range 4 {
		markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1+m, 12, 0, 0, 0, time.UTC)}
		outcomes[m] = make([]TrialMarket, 2)
		for tr := range 2 {
			win := 0
			if pnl[m][tr] > 0 {
				win = 1
			}
			outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{TotalPnL: pnl[m][tr], TotalTrades: 1, WinningTrades: win},
				Sums: replay.SumTrips([]Trip{{EntryFill: 0.5, EntryMid: 0.49, PnL: pnl[m][tr], Won: float64(win)}})}
		}
	}
	res, err := p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.Trial != 1 || *res.Best.TrainObjective != 5 || *res.Best.TestObjective != -2 {
		t.Fatalf("best %+v", res.Best)
	}
	if *res.Trials[0].TrainObjective != 2 || *res.Trials[0].TestObjective != 2 || res.Trials[1].Test.NMarkets != 2 {
		t.Errorf("trials %+v", res.Trials)
	}
	if st := res.Stability; st.Neighbours != 1 || *st.NeighbourMean != 2 || *st.Objective != 5 {
		t.Errorf("stability %+v", st)
	}
	if len(res.Best.PerMarket) != 4 || !res.Best.PerMarket[2].Test || res.Best.PerMarket[0].Test || res.Best.PerMarket[3].PnL != -1 {
		t.Errorf("per market %+v", res.Best.PerMarket)
	}
	if res.PBO != nil {
		t.Errorf("PBO with 2 train markets: %v", *res.PBO)
	}
	// Walk forward over the same markets, 3 folds of one market each:
	// fold 1 trains on market 0 (trial 1, 3 against 1) and tests on
	// market 1 (2); fold 2 trains on 0-1 (trial 1, 5 against 2) and tests
	// on 2 (−1); fold 3 trains on 0-2 (trial 1, 4 against 3) and tests on
	// 3 (−1). The concatenated test pnl is 2 − 1 − 1 = 0.
	p.Request.Split = Split{Kind: SplitWalkForward, Folds: 3}
	folds, err = p.Request.Split.Cut(4)
	if err != nil {
		t.Fatal(err)
	}
	res, err = p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Folds) != 3 || foldTrial(res.Folds[0]) != 1 || *res.Folds[0].TestObjective != 2 || foldTrial(res.Folds[1]) != 1 ||
		foldTrial(res.Folds[2]) != 1 || *res.Folds[2].TrainObjective != 4 || *res.Best.TestObjective != 0 {
		t.Errorf("folds %d, best test objective %v", len(res.Folds), *res.Best.TestObjective)
	}
	// A trial's own test figures are the last fold's test block alone
	// (market 3), which its train figures (markets 0-2) never count:
	// markets 1 and 2 were tested in folds 1 and 2 but train in fold 3.
	for tr, want := range []float64{1, -1} {
		got := res.Trials[tr]
		if got.Test == nil || got.TestObjective == nil {
			t.Fatalf("walk forward trial %d: no test figures", tr)
		}
		if got.Train.NMarkets != 3 || got.Test.NMarkets != 1 || *got.TestObjective != want {
			t.Errorf("walk forward trial %d: train over %d markets, test over %d, test objective %v; want 3 train markets and market 3 alone tested (%v)",
				tr, got.Train.NMarkets, got.Test.NMarkets, *got.TestObjective, want)
		}
	}

	// A fold that chooses another trial than the best: on market 0 trial 0
	// makes 4 (against trial 1's 3), so fold 1 chooses it and tests it on
	// market 1, where it loses 5; the best is still trial 1. The per-market pnl of the test markets is the walk
	// forward's out-of-sample path, each its fold's choice, and sums to
	// best.test's: −5 − 1 − 1.
	outcomes[0][0].Performance.TotalPnL = 4
	outcomes[1][0].Performance.TotalPnL = -5
	res, err = p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	sum := 0.0
	for _, mp := range res.Best.PerMarket {
		tr := "-"
		if mp.Trial != nil {
			tr = strconv.Itoa(*mp.Trial)
		}
		if mp.Test {
			sum += mp.PnL
		}
		path = append(path, fmt.Sprintf("%s %v %v %s", mp.Slug, mp.Test, mp.PnL, tr))
	}
	if got, want := strings.Join(path, "; "), "m0 false 3 -; m1 true -5 0; m2 true -1 1; m3 true -1 1"; got != want || foldTrial(res.Folds[0]) != 0 {
		t.Errorf("walk forward per market %s, want %s (fold 1 chose %d)", got, want, foldTrial(res.Folds[0]))
	}
	if res.Best.Test.TotalPnL != sum {
		t.Errorf("best.test total_pnl %v, the test markets' per-market pnl sum to %v", res.Best.Test.TotalPnL, sum)
	}

	// A fold with nothing to choose: market 0, fold 1's only train market,
	// failed for every trial, so no trial has a train objective there.
	// Fold 1 chooses none, and its test block (market 1) counts in no
	// figure; folds 2 and 3 choose trial 1 (2 against −5, then 1 against
	// −4), which loses 1 on each of markets 2 and 3: best.test is −2.
	for tr := range 2 {
		outcomes[0][tr] = TrialMarket{Error: "no snapshots"}
	}
	res, err = p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Folds[0]; f.Trial != nil || f.TrainObjective != nil || f.TestObjective != nil || f.Test.NMarkets != 0 {
		t.Errorf("fold 1 with no train objective: trial %v, train %v, test %v %+v; want nothing chosen and nothing tested",
			f.Trial, f.TrainObjective, f.TestObjective, f.Test)
	}
	if mp := res.Best.PerMarket[1]; mp.Trial != nil || mp.PnL != 0 || !mp.Test {
		t.Errorf("fold 1's test market %+v: want pnl 0 and no trial", mp)
	}
	if foldTrial(res.Folds[1]) != 1 || foldTrial(res.Folds[2]) != 1 || res.Best.Test.TotalPnL != -2 || res.Best.Test.NMarkets != 2 {
		t.Errorf("folds chose %d and %d, best.test %+v; want trial 1 twice and −2 over 2 markets",
			foldTrial(res.Folds[1]), foldTrial(res.Folds[2]), res.Best.Test)
	}
	b, err := json.Marshal(res.Folds[0])
	if err != nil || !strings.Contains(string(b), `"trial":null`) {
		t.Errorf("fold 1 as JSON %s (%v): want trial null", b, err)
	}
}

// foldTrial is the trial a fold chose, −1 for none.
func foldTrial(f FoldResult) int {
	if f.Trial == nil {
		return -1
	}
	return *f.Trial
}

// TestEachTrialRunsEveryTrialOnce: the trials' statistics run on several
// goroutines, each trial once, and a yield that fails stops them with its
// error.
func TestEachTrialRunsEveryTrialOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 7, 8, 9, 100, 1001} {
		runs := make([]atomic.Int32, n)
		if err := eachTrial(context.Background(), n, nil, func(t int) { runs[t].Add(1) }); err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			if got := runs[i].Load(); got != 1 {
				t.Errorf("n %d: trial %d ran %d times", n, i, got)
			}
		}
	}
	stop := errors.New("stop")
	var yields atomic.Int32
	err := eachTrial(context.Background(), 1000, func(context.Context) error {
		if yields.Add(1) > 3 {
			return stop
		}
		return nil
	}, func(int) {})
	if !errors.Is(err, stop) {
		t.Errorf("eachTrial with a failing yield: %v, want %v", err, stop)
	}
}

// TestPerMarketMarksTheEmbargo: the best trial's per-market pnl marks the
// markets a HOLDOUT's embargo dropped, so that the train markets' pnl adds
// up to the train objective (total pnl) and the test markets' to the test
// objective.
func TestPerMarketMarksTheEmbargo(t *testing.T) {
	t.Parallel()
	const n = 10
	res, folds := summarizeHoldout(t, n, 2, func(m, tr int) TrialMarket {
		return traded(float64(m+1) * float64(tr+1)) // every market a pnl of its own
	})
	var train, test float64
	embargoed := 0
	for _, mp := range res.Best.PerMarket {
		switch {
		case mp.Embargo && mp.Test:
			t.Errorf("%s is marked test and embargo", mp.Slug)
		case mp.Embargo:
			embargoed++
		case mp.Test:
			test += mp.PnL
		default:
			train += mp.PnL
		}
	}
	if embargoed != 2 || n-len(folds[0].Train)-len(folds[0].Test) != 2 {
		t.Errorf("%d markets marked embargo; the split trains on %d and tests on %d of %d", embargoed, len(folds[0].Train), len(folds[0].Test), n)
	}
	if train != *res.Best.TrainObjective || test != *res.Best.TestObjective {
		t.Errorf("per-market pnl: train %v test %v; objectives %v and %v", train, test, *res.Best.TrainObjective, *res.Best.TestObjective)
	}
}

// TestPBOLeavesOutMarketsWithoutData: a market no trial could replay
// (NO_DATA) is in no trial's statistics, and PBO must not rank the trials
// on it as a flat market either: 15 train markets with data and 2 without
// give no PBO (under 16), and 16 with data and 2 without give the PBO of
// the 16 alone.
func TestPBOLeavesOutMarketsWithoutData(t *testing.T) {
	t.Parallel()
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": []any{20, 30, 40}}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": 18}
		b["split"] = map[string]any{"kind": "NONE"}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	const nt = 3
	// Trial pnl by market: varied, so that the trials' ranks change
	// from block to block.
	pnlOf := func(m, tr int) float64 { return float64((m*7+tr*5)%11) - 5 }
	build := func(n int, missing map[int]bool) ([]MarketInfo, [][]TrialMarket, [][]stats.Tally) {
		markets := make([]MarketInfo, n)
		outcomes := make([][]TrialMarket, n)
		tallies := make([][]stats.Tally, nt)
		for m := range n {
			markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1, m, 0, 0, 0, time.UTC)}
			outcomes[m] = make([]TrialMarket, nt)
			for tr := range nt {
				if missing[m] {
					outcomes[m][tr] = TrialMarket{Error: "NO_DATA"}
					continue
				}
				pnl := pnlOf(m, tr)
				outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{TotalPnL: pnl, TotalTrades: 1}}
				tallies[tr] = append(tallies[tr], stats.TallyOf(stats.Market{PnL: pnl, NTrades: 1}))
			}
		}
		return markets, outcomes, tallies
	}
	missing := map[int]bool{3: true, 9: true}
	objective, _ := stats.ObjectiveNamed(p.Request.Objective)
	for _, c := range []struct {
		n       int
		wantNil bool
	}{{17, true}, {18, false}} {
		markets, outcomes, tallies := build(c.n, missing)
		folds, err := p.Request.Split.Cut(c.n)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Summarize(markets, outcomes, folds)
		if err != nil {
			t.Fatal(err)
		}
		if c.wantNil {
			if res.PBO != nil {
				t.Errorf("%d markets, 2 without data: PBO %v, want null (15 markets with data)", c.n, *res.PBO)
			}
			continue
		}
		want := stats.PBO(tallies, objective)
		if want == nil {
			t.Fatal("the 16 markets with data have no PBO: the test's trials rank alike")
		}
		if res.PBO == nil || *res.PBO != round6(*want) {
			t.Errorf("%d markets, 2 without data: PBO %v, want %v, the PBO of the 16 with data", c.n, fmtPtr(res.PBO), round6(*want))
		}
	}
}

// TestPBORanksOnlyTrialsThatTrade: a sweep of 8 trials over 16 train
// markets by sharpe_per_market, in which trials 0 to 5 never trade. A
// trial that never trades has no Sharpe ratio on either half of a CSCV
// split, and PBO neither chooses it in-sample nor ranks it out of sample.
//
// Trials 6 and 7 mirror each other: trial 6 makes 0.1 and 0.3 on each
// even block's 2 markets and −0.1 and −0.3 on each odd block's, trial 7
// the opposite. A split with more even blocks in-sample chooses trial 6,
// which then loses out of sample where trial 7 gains (rank 1 of 2:
// overfit); more odd blocks, trial 7 likewise (34 splits); as many of
// each (36), both break even on both halves and tie: no ranking, no logit.
// PBO 1 over 34 splits, where ranking the 6 that never trade below every number put
// the chosen trial at rank 7 or 8 of 8 in every split: PBO 0, "unlikely
// to be overfit".
//
// With only trial 7 trading, and losing on balance (a Sharpe ratio of
// −5/12 on its 16 markets; none on the others), it is chosen in every
// split and is alone out of sample, nothing to rank it against: pbo and
// pbo_choices are null, where they were 0 over 70.
func TestPBORanksOnlyTrialsThatTrade(t *testing.T) {
	t.Parallel()
	const nt, n = 8, 16
	values := make([]any, nt)
	for i := range values {
		values[i] = 10 + 5*i
	}
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": values}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		b["split"] = map[string]any{"kind": "NONE"}
		b["objective"] = "sharpe_per_market"
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(n)
	if err != nil {
		t.Fatal(err)
	}
	summarize := func(pnl func(m, tr int) (float64, bool)) Results {
		t.Helper()
		markets := make([]MarketInfo, n)
		outcomes := make([][]TrialMarket, n)
		for m := range n {
			markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1, m, 0, 0, 0, time.UTC)}
			outcomes[m] = make([]TrialMarket, nt)
			for tr := range nt {
				outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{}}
				if x, ok := pnl(m, tr); ok {
					outcomes[m][tr] = traded(x)
				}
			}
		}
		res, err := p.Summarize(markets, outcomes, folds)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// mirror is trial 6's pnl on market m (2 markets a block).
	mirror := func(m int) float64 {
		x := float64(1+2*(m%2)) / 10
		if (m/2)%2 == 1 {
			return -x
		}
		return x
	}
	res := summarize(func(m, tr int) (float64, bool) {
		switch tr {
		case 6:
			return mirror(m), true
		case 7:
			return -mirror(m), true
		}
		return 0, false
	})
	if res.PBO == nil || *res.PBO != 1 || res.PBOChoices == nil || *res.PBOChoices != 34 {
		t.Errorf("2 trading trials of 8: pbo %s over %s splits, want 1 over 34", fmtPtr(res.PBO), fmtIntPtr(res.PBOChoices))
	}
	// Trial 7 alone trades: −1 on the 6 markets 0, 3, … 15 and 0.2 on
	// the other 10: mean −0.25, sd √((6·0.75² + 10·0.45²)/15) = 0.6, a
	// Sharpe ratio of −5/12.
	res = summarize(func(m, tr int) (float64, bool) {
		if tr != 7 {
			return 0, false
		}
		if m%3 == 0 {
			return -1, true
		}
		return 0.2, true
	})
	if s := res.Trials[7].Train.SharpePerMarket; s == nil || *s != -0.416667 {
		t.Fatalf("the losing trial's Sharpe ratio %s, want −5/12", fmtPtr(s))
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"pbo":null,"pbo_choices":null`) {
		t.Errorf("1 trading trial of 8: pbo %s over %s splits, want null: %s", fmtPtr(res.PBO), fmtIntPtr(res.PBOChoices), out[strings.Index(string(out), `"dsr"`):])
	}
}

// TestPBOCountsAnUntradedInSampleBest: the reviewer's case. Three trials
// over 16 markets (8 blocks of 2) by sharpe_per_market, split NONE.
// Trial 0 trades only markets 0 to 3 (blocks 0 and 1), 10, 12, 10, 12: a
// Sharpe ratio of 11/√2 on any half that holds one of those blocks, none
// on a half that holds neither. Trial 1 makes 1, 2, 1, 2, … on every
// market (ratio 1.5/0.516), trial 2 0.5, 1.5, … (1/0.516): trial 0 is
// best, then 1, then 2, wherever each is defined.
//
//   - Blocks 0 and 1 both in-sample (15 splits): trial 0 is the in-sample
//     best and has no ratio out of sample, where trials 1 and 2 have one:
//     overfit.
//   - One of them in-sample (40): trial 0 is chosen and is best out of
//     sample too, rank 3 of 3: not overfit.
//   - Neither (15): trial 1 is chosen; out of sample trial 0 beats it,
//     rank 2 of 3, ω = ½, logit 0: overfit.
//
// PBO 30/70 = 0.428571. Keeping only the trials defined on both halves
// dropped trial 0 from the first 15 splits and ranked the runner-up
// instead: 0 over 70, "not overfit", for a best trial (trial 0) that won
// big on 4 markets and then did nothing.
func TestPBOCountsAnUntradedInSampleBest(t *testing.T) {
	t.Parallel()
	res, _ := summarizeTrials(t, 3, 16, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "NONE"}
		b["objective"] = "sharpe_per_market"
	}, func(m, tr int) TrialMarket {
		switch tr {
		case 0:
			if m >= 4 {
				return TrialMarket{Performance: &replay.Performance{}}
			}
			return traded(float64(10 + 2*(m%2)))
		case 1:
			return traded(float64(1 + m%2))
		}
		return traded(0.5 + float64(m%2))
	})
	if res.Best == nil || res.Best.Trial != 0 {
		t.Fatalf("best %+v, want trial 0", res.Best)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"pbo":0.428571,"pbo_choices":70`) {
		t.Errorf("pbo %s over %s splits, want 0.428571 over 70: %s", fmtPtr(res.PBO), fmtIntPtr(res.PBOChoices), out[strings.Index(string(out), `"dsr"`):])
	}
}

func fmtIntPtr(x *int) string {
	if x == nil {
		return "null"
	}
	return strconv.Itoa(*x)
}

func fmtPtr(x *float64) string {
	if x == nil {
		return "null"
	}
	return fmt.Sprint(*x)
}

// TestShardKeepsSumsNotTrips: a trial that trades on nearly every
// snapshot keeps the sums of its round trips, of a fixed size, not the
// trips: a shard's stored results are as small for a strategy that makes
// thousands of trades as for one that makes a few, and the trial's
// statistics are those of its trips.
func TestShardKeepsSumsNotTrips(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 1))
	m, snaps, _ := walkMarket(rng, 0, 6000)
	up, _ := store.TapeOf(snaps, store.OutcomeUp)
	in := replay.Input{Market: m, Tape: up}
	every := replay.Strategy{Side: "UP", PositionSize: 10,
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: ">=", Value: 0}},
		ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">=", Value: 0}}}
	few := every
	few.MaxEntriesPerMarket = 2
	out, err := RunShard(MarketData{Market: m, Up: up}, []replay.Strategy{every, few})
	if err != nil {
		t.Fatal(err)
	}
	_, sums, err := replay.TradeSums(in, every)
	if err != nil {
		t.Fatal(err)
	}
	if sums == nil || sums.N < 2000 || out[0].Sums == nil || *out[0].Sums != *sums || out[0].Sums.N != out[0].Performance.TotalTrades {
		t.Fatalf("sums %+v; the shard's %+v", sums, out[0].Sums)
	}
	heavy := len(EncodeShard(out[:1]))
	light := len(EncodeShard(out[1:]))
	if heavy > light+64 || heavy > 1024 {
		t.Errorf("the stored trial of %d trades takes %d bytes, of %d trades %d", sums.N, heavy, out[1].Performance.TotalTrades, light)
	}
}

// TestSharpeObjectiveOfFlatPnL: by sharpe_per_market, a trial that made
// the same pnl on every train market has no Sharpe ratio (no spread):
// its train_objective is null, as its train.sharpe_per_market, and the
// train-best is the trial whose ratio is defined, not the flat one by a
// rounding residue's ratio of millions.
func TestSharpeObjectiveOfFlatPnL(t *testing.T) {
	t.Parallel()
	res, _ := summarizeTwoTrials(t, 10, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "NONE"}
		b["objective"] = "sharpe_per_market"
	}, func(m, tr int) TrialMarket {
		return traded([]float64{0.3, float64(m%3) - 0.5}[tr]) // trial 0 flat, trial 1 varied
	})
	if tr := res.Trials[0]; tr.Train.SharpePerMarket != nil || tr.TrainObjective != nil {
		t.Errorf("flat trial: train.sharpe_per_market %s, train_objective %s; want both null",
			fmtPtr(tr.Train.SharpePerMarket), fmtPtr(tr.TrainObjective))
	}
	if res.Best == nil || res.Best.Trial != 1 {
		t.Fatalf("best %+v, want trial 1", res.Best)
	}
	if s := res.Trials[1].Train.SharpePerMarket; s == nil || *res.Best.TrainObjective != *s {
		t.Errorf("best's train_objective %v, its train.sharpe_per_market %s", *res.Best.TrainObjective, fmtPtr(s))
	}
}

// TestDSRCountsEveryTrial: DESIGN 14's N is the sweep's trials, every one
// tried, whether or not its per-market Sharpe ratio is defined; V is the
// variance of the ratios that are. Four trials over ten train markets:
// trial 0 makes 1, −1, 2, 0.5, 1, 1.5, −0.5, 2, 1, 0.5 (total 8, the
// train-best), trial 1 makes m%3 − 0.5 (total 4), trials 2 and 3 never
// trade. An independent reference (Python's statistics.NormalDist):
// SR = 0.818393 and 0.456832, V = 0.065363, trial 0's γ₃ = −0.534148 and
// γ₄ = 2.401568; with N = 4, SR₀ = 0.268988 and DSR = 0.898798 (with the
// two defined ratios alone for N, SR₀ would be 0.132882 and DSR 0.944142:
// the search deflated as if half of it had not been tried).
func TestDSRCountsEveryTrial(t *testing.T) {
	t.Parallel()
	const n = 10
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": []any{20, 30, 40, 50}}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		b["split"] = map[string]any{"kind": "NONE"}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(n)
	if err != nil {
		t.Fatal(err)
	}
	best := []float64{1, -1, 2, 0.5, 1, 1.5, -0.5, 2, 1, 0.5}
	markets := make([]MarketInfo, n)
	outcomes := make([][]TrialMarket, n)
	for m := range n {
		markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1+m, 12, 0, 0, 0, time.UTC)}
		outcomes[m] = make([]TrialMarket, 4)
		for tr, pnl := range []float64{best[m], float64(m%3) - 0.5} {
			outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{TotalPnL: pnl, TotalTrades: 1},
				Sums: replay.SumTrips([]Trip{{EntryFill: 0.5, EntryMid: 0.5, PnL: pnl}})}
		}
		for tr := 2; tr < 4; tr++ {
			outcomes[m][tr] = TrialMarket{Performance: &replay.Performance{}}
		}
	}
	res, err := p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.Trial != 0 {
		t.Fatalf("best %+v, want trial 0", res.Best)
	}
	if res.DSR == nil || math.Abs(*res.DSR-0.898798) > 2e-6 {
		t.Errorf("DSR %s, want 0.898798 (N = 4 trials)", fmtPtr(res.DSR))
	}
}

// TestObjectiveOfNoMarket: when no test market could be replayed (every
// one NO_DATA), the best trial was never tested: its test_objective is
// null, not the total_pnl of nothing (0, a trial that broke even), and
// so is every trial's; test.n_markets says 0.
func TestObjectiveOfNoMarket(t *testing.T) {
	t.Parallel()
	res, _ := summarizeHoldout(t, 10, 0, func(m, tr int) TrialMarket {
		if m >= 7 { // the test markets
			return TrialMarket{Error: "NO_DATA"}
		}
		return traded(float64(m+1) * float64(tr+1))
	})
	if res.Best == nil || res.Best.Trial != 1 || res.Best.TrainObjective == nil {
		t.Fatalf("best %+v", res.Best)
	}
	if res.Best.TestObjective != nil || res.Best.Test == nil || res.Best.Test.NMarkets != 0 {
		t.Errorf("best: test_objective %s over %+v, want null over no market", fmtPtr(res.Best.TestObjective), res.Best.Test)
	}
	for _, tr := range res.Trials {
		if tr.TestObjective != nil {
			t.Errorf("trial %d: test_objective %v over no market", tr.Trial, *tr.TestObjective)
		}
	}
}

// summarizeHoldout summarizes summarizeTwoTrials's sweep split HOLDOUT
// (30% test, the embargo given).
func summarizeHoldout(t *testing.T, n, embargo int, outcome func(m, tr int) TrialMarket) (Results, []Fold) {
	t.Helper()
	return summarizeTwoTrials(t, n, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "HOLDOUT", "testFraction": 0.3, "embargoMarkets": embargo}
	}, outcome)
}

// summarizeTwoTrials summarizes a sweep of two trials (maxLossPercent 20
// and 40) over n BTC 15m markets a day apart, its body set by set (the
// split, the objective); outcome gives trial tr's replay of market m.
func summarizeTwoTrials(t *testing.T, n int, set func(map[string]any), outcome func(m, tr int) TrialMarket) (Results, []Fold) {
	t.Helper()
	return summarizeTrials(t, 2, n, set, outcome)
}

// summarizeTrials is summarizeTwoTrials of nt trials (/maxLossPercent 20,
// 40, 60, …).
func summarizeTrials(t *testing.T, nt, n int, set func(map[string]any), outcome func(m, tr int) TrialMarket) (Results, []Fold) {
	t.Helper()
	values := make([]any, nt)
	for i := range values {
		values[i] = 20 * (i + 1)
	}
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/maxLossPercent", "values": values}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		set(b)
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(n)
	if err != nil {
		t.Fatal(err)
	}
	markets := make([]MarketInfo, n)
	outcomes := make([][]TrialMarket, n)
	for m := range n {
		markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 11, 1+m, 12, 0, 0, 0, time.UTC)}
		outcomes[m] = make([]TrialMarket, nt)
		for tr := range nt {
			outcomes[m][tr] = outcome(m, tr)
		}
	}
	res, err := p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	return res, folds
}

// traded is a replay of one round trip of pnl, won when pnl > 0.
func traded(pnl float64) TrialMarket {
	win := 0
	if pnl > 0 {
		win = 1
	}
	return TrialMarket{Performance: &replay.Performance{TotalPnL: pnl, TotalTrades: 1, WinningTrades: win},
		Sums: replay.SumTrips([]Trip{{EntryFill: 0.5, EntryMid: 0.5, PnL: pnl, Won: float64(win)}})}
}

// TestWalkForwardFoldsWithoutABest: a WALK_FORWARD sweep in which no trial
// has an objective (here none trades, so none has an ev_per_trade) still
// lists its folds, each choosing none (trial null, its test block in no
// figure), as a fold without a choice is listed beside others: the folds
// were left out altogether, and a caller reading results.folds of a
// WALK_FORWARD sweep found nothing there.
func TestWalkForwardFoldsWithoutABest(t *testing.T) {
	t.Parallel()
	res, folds := summarizeTwoTrials(t, 12, func(b map[string]any) {
		b["split"] = map[string]any{"kind": "WALK_FORWARD", "folds": 3}
		b["objective"] = "ev_per_trade"
	}, func(m, tr int) TrialMarket {
		return TrialMarket{Performance: &replay.Performance{}} // replayed, no trade
	})
	if res.Best != nil {
		t.Fatalf("best %+v, want none", res.Best)
	}
	if len(res.Folds) != len(folds) {
		t.Fatalf("%d folds listed, want %d", len(res.Folds), len(folds))
	}
	for k, f := range res.Folds {
		if f.Fold != k+1 || f.Trial != nil || f.TrainObjective != nil || f.TestObjective != nil || f.Test.NMarkets != 0 {
			t.Errorf("fold %d: %+v, want fold %d choosing none, its test empty", k+1, f, k+1)
		}
	}
}

// TestWalkForwardDailyReturnsPerStake: a WALK_FORWARD sweep of
// /positionSize whose folds choose different stakes answers best.test's
// sharpe_daily_ann and sortino_daily_ann over each day's pnl over the
// stake of the trial that made it (DESIGN 14: day pnl / positionSize).
// Each trial makes its stake times one same return a market, so the test
// path's daily returns are those returns whichever fold chose which
// trial: divided by the base strategy's stake instead, the first fold's
// days (a tenth of the stake) were a tenth of the return, and the ratios
// were those of a path the strategy never ran.
func TestWalkForwardDailyReturnsPerStake(t *testing.T) {
	t.Parallel()
	const n = 60 // three blocks of 20 markets, a day apart
	ret := func(m int) float64 {
		switch {
		case m < 20: // fold 1 trains here, losing: the smaller stake loses less
			return -0.01 * float64(1+m%3)
		case m < 40: // fold 2 trains on 0..39, winning: the larger stake wins more
			return 0.05 + 0.02*float64(m%5) - 0.03*float64(m%2)
		}
		return 0.04*float64(m%7) - 0.1
	}
	sizes := []float64{10, 100}
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/positionSize", "values": []any{sizes[0], sizes[1]}}}
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		b["split"] = map[string]any{"kind": "WALK_FORWARD", "folds": 2, "embargoMarkets": 0}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(n)
	if err != nil {
		t.Fatal(err)
	}
	markets := make([]MarketInfo, n)
	outcomes := make([][]TrialMarket, n)
	for m := range n {
		markets[m] = MarketInfo{Slug: fmt.Sprintf("m%d", m), End: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, m)}
		for _, size := range sizes {
			outcomes[m] = append(outcomes[m], traded(math.Round(size*ret(m)*1e6)/1e6))
		}
	}
	res, err := p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Folds) != 2 || foldTrial(res.Folds[0]) != 0 || foldTrial(res.Folds[1]) != 1 {
		t.Fatalf("folds %+v, want fold 1 to choose the stake of 10 and fold 2 that of 100", res.Folds)
	}
	// By hand: the test path's daily returns are ret(20..59).
	var r []float64
	for m := 20; m < n; m++ {
		r = append(r, ret(m))
	}
	var mean, ss, down float64
	for _, x := range r {
		mean += x / float64(len(r))
	}
	for _, x := range r {
		ss += (x - mean) * (x - mean)
		if x < 0 {
			down += x * x
		}
	}
	sharpe := mean / math.Sqrt(ss/float64(len(r)-1)) * math.Sqrt(365)
	sortino := mean / math.Sqrt(down/float64(len(r))) * math.Sqrt(365)
	got := res.Best.Test
	if got == nil || got.SharpeDailyAnn == nil || got.SortinoDailyAnn == nil ||
		math.Abs(*got.SharpeDailyAnn-sharpe) > 1e-5 || math.Abs(*got.SortinoDailyAnn-sortino) > 1e-5 {
		t.Errorf("best.test sharpe_daily_ann %s, sortino_daily_ann %s; want %.6f and %.6f", fmtPtr(got.SharpeDailyAnn), fmtPtr(got.SortinoDailyAnn), sharpe, sortino)
	}
	// A trial's own figures are its one stake's, as before.
	tr := res.Trials[0].Train
	if tr.SharpeDailyAnn == nil || res.Trials[1].Train.SharpeDailyAnn == nil || math.Abs(*tr.SharpeDailyAnn-*res.Trials[1].Train.SharpeDailyAnn) > 2e-6 {
		t.Errorf("the trials' train sharpe_daily_ann %s and %s, want the same ratio for stakes of one return", fmtPtr(tr.SharpeDailyAnn), fmtPtr(res.Trials[1].Train.SharpeDailyAnn))
	}
}
