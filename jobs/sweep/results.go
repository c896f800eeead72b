package sweep

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/jobs/stats"
)

// MarketInfo names one of a sweep's markets, oldest first.
type MarketInfo struct {
	Slug string    `json:"slug"`
	End  time.Time `json:"end_time"`
}

// Results is a finished sweep's answer (DESIGN 14): every trial's
// statistics on its train and test markets, the best trial and how it did
// out of sample, its stability among its grid neighbours, and the
// deflated Sharpe ratio and the probability of backtest overfitting that
// say whether its edge is more than the luck of many tries.
type Results struct {
	Objective string        `json:"objective"`
	Split     string        `json:"split"`
	Trials    []TrialResult `json:"trials"`
	Best      *Best         `json:"best"`
	// Folds is WALK_FORWARD's: the trial each fold chose on its train
	// markets and how it did on its test block.
	Folds     []FoldResult `json:"folds,omitempty"`
	Stability *Stability   `json:"stability"`
	DSR       *float64     `json:"dsr" doc:"Deflated Sharpe ratio of the best trial's per-market Sharpe on the train markets, against the best that as many trials would reach by luck; 0 to 1, the probability that its Sharpe is above 0 after the search is counted (every trial counts as tried, whether or not it traded). It deflates the per-market Sharpe ratio whatever the objective (DESIGN 14): the best trial is the one the objective chose, and under another objective than sharpe_per_market its Sharpe can be below the largest of the trials', so that measuring it against the largest luck would give is conservative. Its sample is the best trial's train n_markets_traded: the formula takes the Sharpe estimate as normal, and a handful of markets (whose kurtosis cannot reach a normal's 3) gives a DSR far surer than the data (0.99 from 3 markets of pnl 0.9, 1 and 1.1 against one other trial of Sharpe 0); under 30 it is not evidence. Null below 2 trials with a per-market Sharpe or 2 traded markets, or when the best trial's pnl does not vary from market to market (the same pnl on every market it traded: no spread, so no Sharpe ratio)."`
	PBO       *float64     `json:"pbo" doc:"Probability of backtest overfitting (CSCV, 8 blocks of the train markets): the share of 70 splits in which the in-sample best trial ranks in the bottom half out of sample. Each split chooses its in-sample best among the trials whose objective is defined in-sample, and ranks it among the trials whose objective is defined out of sample (a trial that never trades has no sharpe_per_market, ev_per_trade or sqn there, and is not ranked); an in-sample best that made no trade out of sample, where another trial has an objective, counts as overfit; a split where no trial has an objective in-sample, or the best is alone out of sample (or none is there), or every trial scored the same out of sample (identical trials: nothing to rank; ties otherwise share their average rank), or the best traded there without an objective (pnl without spread), is left out. Near 0: the search found something stable; 0.5 or more: the best trial is a coin toss. Null under 16 train markets with data (a NO_DATA market is left out), under 2 trials, or when every split is left out."`
	// PBOChoices is PBO's denominator: the splits that ranked 2 trials or
	// more.
	PBOChoices *int `json:"pbo_choices" doc:"How many of the 70 splits were not left out (see pbo): pbo is the share of these that overfit. Null with pbo."`
}

// TrialResult is one trial: its parameter values and its statistics.
type TrialResult struct {
	Trial      int              `json:"trial"`
	Parameters []ParameterValue `json:"parameters"`
	Train      stats.Summary    `json:"train"`
	// Test is its statistics on the test markets, which its train
	// statistics never count: for WALK_FORWARD the last fold's test block
	// (the earlier blocks train in later folds); the walk forward's whole
	// out-of-sample path is Best.Test.
	Test *stats.Summary `json:"test" doc:"The trial's statistics on the test markets, which its train statistics never count: for WALK_FORWARD the last fold's test block, the markets after the largest train set (earlier blocks train in later folds; the whole walk forward is best.test and folds). Null under NONE."`
	// TrainObjective and TestObjective are the objective's values; nil
	// where undefined (too few trades for sqn, …).
	TrainObjective *float64 `json:"train_objective"`
	TestObjective  *float64 `json:"test_objective"`
}

// ParameterValue is one parameter's value in a trial.
type ParameterValue struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Best is the train-best trial and how it did on the test markets.
type Best struct {
	Trial          int              `json:"trial"`
	Parameters     []ParameterValue `json:"parameters"`
	TrainObjective *float64         `json:"train_objective"`
	TestObjective  *float64         `json:"test_objective"`
	// Test is its statistics on the test markets; for WALK_FORWARD, on
	// every fold's test block, each replayed with the trial its fold chose.
	Test *stats.Summary `json:"test"`
	// PerMarket is its pnl per market (train and test), oldest first. For
	// WALK_FORWARD a test market's is the pnl of the trial its fold chose
	// (Trial names it), the walk forward's out-of-sample path, whose sum
	// Test is.
	PerMarket []MarketPnL `json:"per_market"`
}

// MarketPnL is one market's pnl for a trial. Test marks a test market;
// Embargo one the split dropped between train and test, which counts in
// neither (DESIGN 14); the others trained. Under WALK_FORWARD a market of
// one fold's test block trains in the later folds: Test marks a market
// tested in any fold, and no market is in neither (a fold's embargo
// trains or tests in another fold).
type MarketPnL struct {
	Slug    string  `json:"slug"`
	PnL     float64 `json:"pnl"`
	Test    bool    `json:"test"`
	Embargo bool    `json:"embargo,omitempty" doc:"Set for a market the split's embargo dropped between train and test: in neither the train nor the test statistics."`
	Error   string  `json:"error,omitempty"`
	// Trial is set on WALK_FORWARD's test markets: the trial whose pnl
	// this is, the one the market's fold chose on its train markets
	// (absent, and pnl 0, where the fold chose none).
	Trial *int `json:"trial,omitempty" doc:"WALK_FORWARD test markets only: the trial whose pnl pnl is, the one the market's fold chose on its train markets (best.test sums these); absent, with pnl 0, where the fold chose none."`
}

// FoldResult is one WALK_FORWARD fold.
type FoldResult struct {
	Fold int `json:"fold"`
	// Trial is the trial the fold chose on its train markets; nil when no
	// trial has a defined objective there (too few traded markets for a
	// Sharpe ratio, say): nothing was chosen, and the fold's test block
	// counts in no figure (Test is empty).
	Trial          *int          `json:"trial" doc:"The trial the fold chose on its train markets; null when no trial has a defined objective there: nothing was chosen, and the fold's test block counts in no figure (its test is empty)."`
	TrainObjective *float64      `json:"train_objective"`
	Test           stats.Summary `json:"test"`
	TestObjective  *float64      `json:"test_objective"`
}

// Stability sets the best trial's train objective beside the mean of its
// grid neighbours' (one step each way in each parameter).
type Stability struct {
	Trial         int      `json:"trial"`
	Objective     *float64 `json:"objective"`
	NeighbourMean *float64 `json:"neighbour_mean"`
	Neighbours    int      `json:"neighbours"`
}

// Summarize computes a sweep's results from its shards' outcomes:
// outcomes[m][t] is trial t's replay of market m, the markets oldest first
// as in markets. folds is Request.Split.Cut(len(markets)).
func (p *Plan) Summarize(markets []MarketInfo, outcomes [][]TrialMarket, folds []Fold) (Results, error) {
	return p.summarize(context.Background(), markets, outcomes, folds, nil)
}

// summarize is Summarize yielding (nil: never) between trials: a large
// sweep's statistics are a fraction of a second or more.
func (p *Plan) summarize(ctx context.Context, markets []MarketInfo, outcomes [][]TrialMarket, folds []Fold, yield Yield) (Results, error) {
	r := p.Request
	n, nt := len(markets), len(p.Trials)
	if len(outcomes) != n {
		return Results{}, fmt.Errorf("sweep: %d markets' outcomes for %d markets", len(outcomes), n)
	}
	for m := range outcomes {
		if len(outcomes[m]) != nt {
			return Results{}, fmt.Errorf("sweep: market %s has %d trials' outcomes of %d", markets[m].Slug, len(outcomes[m]), nt)
		}
	}
	objective, ok := stats.ObjectiveNamed(r.Objective)
	if !ok {
		return Results{}, fmt.Errorf("sweep: objective %q", r.Objective)
	}
	size := r.Strategy.PositionSize
	// The markets every trial trains and tests on: the last fold's, a
	// NONE or HOLDOUT split's one fold. For WALK_FORWARD that is the
	// largest train set and the block after it, disjoint as HOLDOUT's:
	// every test block but the last trains in a later fold, so a trial's
	// test figures over all of them would count markets its train figures
	// count too. The walk forward's whole out-of-sample path, each block
	// replayed with its fold's choice, is best.test and folds.
	last := folds[len(folds)-1]
	train, test := last.Train, last.Test
	var tested []int // every fold's test block, for the per-market marks
	for _, f := range folds {
		tested = append(tested, f.Test...)
	}
	statsOf := func(t int, idx []int) []stats.Market {
		out := make([]stats.Market, 0, len(idx))
		for _, m := range idx {
			if sm, ok := statsMarket(markets[m], outcomes[m][t]); ok {
				// Its trial's stake scales its day's return: a walk
				// forward's test path joins trials that may differ in it.
				sm.PositionSize = p.Trials[t].Strategy.PositionSize
				out = append(out, sm)
			}
		}
		return out
	}
	// The objective of no replayed market is undefined, even total_pnl's
	// sum: a set that was never replayed did not break even.
	objectiveOf := func(ms []stats.Market) *float64 {
		if len(ms) == 0 {
			return nil
		}
		var tl stats.Tally
		for _, m := range ms {
			tl = tl.Add(stats.TallyOf(m))
		}
		return finitePtr(objective(tl))
	}
	res := Results{Objective: r.Objective, Split: r.Split.Kind, Trials: make([]TrialResult, nt)}
	params := r.Parameters
	valuesOf := func(t int) []ParameterValue {
		out := make([]ParameterValue, len(params))
		for j, pr := range params {
			out[j] = ParameterValue{Path: pr.Path, Value: p.Trials[t].Values[j]}
		}
		return out
	}
	// PBO ranks every trial on the same markets: the train markets that
	// every trial replayed (a market without data, NO_DATA, is in no
	// trial's statistics, and must not count as a flat one here).
	var ranked []int
	for _, m := range train {
		if !slices.ContainsFunc(outcomes[m], func(o TrialMarket) bool { return o.Performance == nil }) {
			ranked = append(ranked, m)
		}
	}
	tallies := make([][]stats.Tally, nt) // per trial, per ranked market, for PBO
	trial := func(t int) {
		tr := statsOf(t, train)
		res.Trials[t] = TrialResult{Trial: t, Parameters: valuesOf(t), Train: stats.Aggregate(tr, size), TrainObjective: objectiveOf(tr)}
		if len(test) > 0 {
			te := statsOf(t, test)
			sum := stats.Aggregate(te, size)
			res.Trials[t].Test, res.Trials[t].TestObjective = &sum, objectiveOf(te)
		}
		tallies[t] = make([]stats.Tally, len(ranked))
		for k, m := range ranked {
			sm, _ := statsMarket(markets[m], outcomes[m][t]) // replayed: see ranked
			tallies[t][k] = stats.TallyOf(sm)
		}
	}
	if err := eachTrial(ctx, nt, yield, trial); err != nil {
		return Results{}, err
	}
	sharpes := make([]float64, 0, nt)
	for t := range nt {
		if s := res.Trials[t].Train.SharpePerMarket; s != nil {
			sharpes = append(sharpes, *s)
		}
	}
	best := bestOf(res.Trials, func(tr TrialResult) *float64 { return tr.TrainObjective })
	if best < 0 {
		// No trial has a defined objective: nothing to choose. A walk
		// forward still lists its folds, each choosing none (no fold's
		// train markets are more than the last's, where none has one).
		if r.Split.Kind == SplitWalkForward {
			for k := range folds {
				res.Folds = append(res.Folds, FoldResult{Fold: k + 1, Test: stats.Aggregate(nil, size)})
			}
		}
		return res, nil
	}
	b := &Best{Trial: best, Parameters: valuesOf(best), TrainObjective: res.Trials[best].TrainObjective,
		TestObjective: res.Trials[best].TestObjective, Test: res.Trials[best].Test}
	isTest, isTrain := map[int]bool{}, map[int]bool{}
	for _, m := range tested {
		isTest[m] = true
	}
	for _, m := range train {
		isTrain[m] = true
	}
	for m := range markets {
		o := outcomes[m][best]
		mp := MarketPnL{Slug: markets[m].Slug, Test: isTest[m], Embargo: !isTest[m] && !isTrain[m], Error: o.Error}
		if o.Performance != nil {
			mp.PnL = o.Performance.TotalPnL
		}
		b.PerMarket = append(b.PerMarket, mp)
	}
	if r.Split.Kind == SplitWalkForward {
		var chosen []stats.Market
		for k, f := range folds {
			fr := FoldResult{Fold: k + 1}
			ft := make([]TrialResult, nt)
			for t := range nt {
				ft[t].TrainObjective = objectiveOf(statsOf(t, f.Train))
			}
			chose := bestOf(ft, func(tr TrialResult) *float64 { return tr.TrainObjective })
			if chose < 0 {
				// No trial to choose: the block is tested with none.
				fr.Test = stats.Aggregate(nil, size)
				for _, m := range f.Test {
					mp := &b.PerMarket[m]
					mp.PnL, mp.Error, mp.Trial = 0, "", nil
				}
				res.Folds = append(res.Folds, fr)
				continue
			}
			fr.Trial = &chose
			fr.TrainObjective = ft[chose].TrainObjective
			te := statsOf(chose, f.Test)
			fr.Test, fr.TestObjective = stats.Aggregate(te, size), objectiveOf(te)
			for _, m := range f.Test {
				o, mp := outcomes[m][chose], &b.PerMarket[m]
				mp.PnL, mp.Error, mp.Trial = 0, o.Error, fr.Trial
				if o.Performance != nil {
					mp.PnL = o.Performance.TotalPnL
				}
			}
			chosen = append(chosen, te...)
			res.Folds = append(res.Folds, fr)
		}
		all := stats.Aggregate(chosen, size)
		b.Test, b.TestObjective = &all, objectiveOf(chosen)
	}
	res.Best = b
	st := &Stability{Trial: best, Objective: b.TrainObjective}
	var sum float64
	for _, k := range p.Neighbours(best) {
		if v := res.Trials[k].TrainObjective; v != nil {
			sum += *v
			st.Neighbours++
		}
	}
	if st.Neighbours > 0 {
		st.NeighbourMean = finitePtr(sum / float64(st.Neighbours))
	}
	res.Stability = st
	var bestPnL []float64
	for _, m := range train {
		if o := outcomes[m][best]; o.Performance != nil && o.Performance.TotalTrades > 0 {
			bestPnL = append(bestPnL, o.Performance.TotalPnL)
		}
	}
	res.DSR = roundPtr(stats.DSR(bestPnL, sharpes, nt))
	pbo, choices := stats.PBOChoices(tallies, objective)
	if res.PBO = roundPtr(pbo); res.PBO != nil {
		res.PBOChoices = &choices
	}
	return res, nil
}

// eachTrial runs trial(t) for every t < n, in blocks of 8 on up to as many
// goroutines as there are CPUs (at most 4): the trials' statistics are
// independent, and a sweep's last shard computes them while the other
// workers, its shards done, have nothing left to run (a fifth of a
// 4,000-replay sweep's time on one goroutine). Each block first calls
// yield (nil: never); its error, or ctx's, stops every goroutine.
func eachTrial(ctx context.Context, n int, yield Yield, trial func(t int)) error {
	const block = 8
	var next atomic.Int64
	work := func() error {
		for {
			lo := int(next.Add(block)) - block
			if lo >= n {
				return nil
			}
			if yield != nil {
				if err := yield(ctx); err != nil {
					return err
				}
			}
			for t := lo; t < min(lo+block, n); t++ {
				trial(t)
			}
		}
	}
	g, _ := errgroup.WithContext(ctx)
	for range max(1, min(runtime.GOMAXPROCS(0), 4, (n+block-1)/block)) {
		g.Go(work)
	}
	return g.Wait()
}

// bestOf is the index of the trial with the highest defined score, the
// lowest index among ties; −1 when none is defined.
func bestOf(trials []TrialResult, score func(TrialResult) *float64) int {
	best := -1
	for t := range trials {
		if v := score(trials[t]); v != nil && (best < 0 || *v > *score(trials[best])) {
			best = t
		}
	}
	return best
}

// statsMarket is one replay as the statistics read it; ok is false for a
// market the trial could not replay.
func statsMarket(m MarketInfo, o TrialMarket) (stats.Market, bool) {
	if o.Performance == nil {
		return stats.Market{}, false
	}
	p := o.Performance
	sm := stats.Market{Slug: m.Slug, End: m.End, PnL: p.TotalPnL, Fees: p.TotalFees, NTrades: p.TotalTrades, Wins: p.WinningTrades}
	switch {
	case o.Sums != nil:
		sm.Sums = o.Sums
	case p.TotalTrades > 0:
		sm.Sums = &stats.TradeSums{} // none kept: the per-trade figures are null
	}
	return sm, true
}

func roundPtr(x *float64) *float64 {
	if x == nil {
		return nil
	}
	return finitePtr(*x)
}

func finitePtr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	r := round6(x)
	return &r
}

// round6 rounds to 6 decimals, as every figure of an answer.
func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1e15 {
		return x
	}
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0
	}
	return r
}
