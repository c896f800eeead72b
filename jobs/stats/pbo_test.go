package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// matrix makes trials × markets tallies of one traded market each, with
// the pnl f(trial, market).
func matrix(trials, markets int, f func(i, j int) float64) [][]Tally {
	out := make([][]Tally, trials)
	for i := range out {
		out[i] = make([]Tally, markets)
		for j := range out[i] {
			out[i][j] = TallyOf(Market{PnL: f(i, j), NTrades: 1, Trades: []Trade{{PnL: f(i, j)}}})
		}
	}
	return out
}

func TestPBO(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		trials [][]Tally
		obj    Objective
		want   float64 // NaN: nil
	}{
		// Trial 2 earns 3 a market, trial 1 2, trial 0 1: trial 2 is
		// best in-sample in every split and best out of sample, rank 3 of
		// N = 3, ω = 3/4, logit ln 3 > 0 in all 70: PBO 0.
		{"best everywhere", matrix(3, 16, func(i, j int) float64 { return float64(i + 1) }), TotalPnL, 0},
		// The same by the Sharpe ratio: each trial's pnl varies by market
		// (i+1 + j%2), so the ratios order the trials as their means do.
		{"best everywhere, sharpe", matrix(3, 24, func(i, j int) float64 { return float64(i+1) + float64(j%2) }), SharpePerMarket, 0},
		// Two trials whose difference A − B is +1 on even blocks and −1 on
		// odd ones (2 markets a block), a total of 0: a split whose
		// in-sample difference is d has out-of-sample difference −d. With
		// d > 0, A is chosen and is worst out of sample (rank 1, ω = ⅓);
		// with d < 0 B likewise: 34 splits, all overfit. With d = 0 (2 even
		// and 2 odd blocks in-sample, 36 splits) A is chosen (the lower
		// index) and ties B out of sample: the two scored the same, no
		// ranking, no logit (ranked 1.5 of 2, ω = ½, logit 0, they once
		// counted as overfit). PBO 1 over 34.
		{"best in-sample, worst out", matrix(2, 16, func(i, j int) float64 {
			if i == 1 {
				return 0
			}
			if (j/2)%2 == 0 {
				return 0.5
			}
			return -0.5
		}), TotalPnL, 1},
		// A − B is 1 on block 0 and 0 elsewhere. The 35 splits with block 0
		// in-sample choose A, which ties B out of sample: no ranking, no
		// logit (at rank 1.5 of 2, ω = ½, they once counted as overfit:
		// PBO 0.5). The 35 with block 0 out of sample tie in-sample,
		// choose A, and A is best out of sample: rank 2, ω = ⅔, not
		// overfit. PBO 0 over 35.
		{"ties", matrix(2, 16, func(i, j int) float64 {
			if i == 0 && j < 2 {
				return 0.5
			}
			return 0
		}), TotalPnL, 0},
		// An objective undefined everywhere (the Sharpe ratio of a constant
		// pnl): no split has an in-sample best to rank, so there is no
		// PBO. (Trial 0 once stood in as the choice, tied at rank 1.5 of 2,
		// and every split counted as overfit: PBO 1, "the search is
		// overfit", of a search that chose nothing.)
		{"undefined objective", matrix(2, 16, func(i, j int) float64 { return 1 }), SharpePerMarket, math.NaN()},
		// Trial 0 makes 0 and 2 on every block's 2 markets: a Sharpe
		// ratio of 1/√(8/7) = 0.935 on either half. Trial 1 trades on
		// block 0 only (pnl 1 and 3, a ratio of √2) and on block 7 (−1
		// and −3, −√2): it has a ratio on a half that holds block 0 or 7
		// (0 on a half that holds both). Block 0 in, 7 out (20 splits):
		// trial 1 is chosen and is last out of sample (−√2): overfit.
		// Block 7 in, 0 out (20): trial 0 is chosen, and trial 1 beats it
		// out of sample (√2): overfit. Both in (15): trial 0 is chosen
		// (0.935 > 0) and is alone out of sample, where trial 1 has no
		// ratio: no ranking, left out. Both out (15): trial 0 is chosen,
		// the only trial with an in-sample ratio, and beats trial 1 out of
		// sample (0.935 > 0), rank 2 of 2: not overfit. PBO 40/55. (Ranked
		// below every number, trial 1's undefined ratio once made the 15
		// with both in "not overfit" too: 40/70; ranking only the trials
		// defined on both halves left the 15 with both out out as well:
		// 40/40.)
		{"no ranking in some splits", func() [][]Tally {
			m := matrix(2, 16, func(i, j int) float64 { return float64(2 * (j % 2)) })
			for j := range 16 {
				m[1][j] = Tally{}
			}
			for j, p := range map[int]float64{0: 1, 1: 3, 14: -1, 15: -3} {
				m[1][j] = TallyOf(Market{PnL: p, NTrades: 1, Trades: []Trade{{PnL: p}}})
			}
			return m
		}(), SharpePerMarket, 40.0 / 55},
		{"15 markets", matrix(3, 15, func(i, j int) float64 { return float64(i) }), TotalPnL, math.NaN()},
		{"one trial", matrix(1, 40, func(i, j int) float64 { return 1 }), TotalPnL, math.NaN()},
		{"ragged", append(matrix(1, 16, func(i, j int) float64 { return 1 }), make([]Tally, 17)), TotalPnL, math.NaN()},
	} {
		got, choices := PBOChoices(tc.trials, tc.obj)
		if want, ok := map[string]int{"no ranking in some splits": 55, "best in-sample, worst out": 34, "ties": 35}[tc.name]; ok && choices != want {
			t.Errorf("%s: %d choices, want %d", tc.name, choices, want)
		}
		switch {
		case math.IsNaN(tc.want) && got != nil:
			t.Errorf("%s: %v, want nil", tc.name, *got)
		case !math.IsNaN(tc.want) && (got == nil || *got != tc.want):
			t.Errorf("%s: %s over %d, want %v", tc.name, fmtF(got), choices, tc.want)
		}
	}
}

// TestPBOBlocks: 17 markets cut into blocks ⌊17b/8⌋: sizes 2 2 2 2 2 2 2 3.
// Trial 0 earns 1 on the last market only, trial 1 nothing: as in "ties"
// above, PBO 0 over the 35 splits with the last block, the one of 3
// markets, out of sample.
func TestPBOBlocks(t *testing.T) {
	t.Parallel()
	m := matrix(2, 17, func(i, j int) float64 {
		if i == 0 && j == 16 {
			return 1
		}
		return 0
	})
	if got, choices := PBOChoices(m, TotalPnL); got == nil || *got != 0 || choices != 35 {
		t.Errorf("PBO %s over %d, want 0 over 35", fmtF(got), choices)
	}
}

// TestObjectives works each objective on one tally: markets 2, −1, 0
// (untraded) and 5, trades 1, 1, −1, 2, 3.
// total_pnl 6; ev_per_trade 6/5 = 1.2; sharpe over the traded 2, −1, 5:
// mean 2, Σx² = 30, sd² = (30 − 3·4)/2 = 9, 2/3; sqn over the trades:
// mean 1.2, Σx² = 16, sd² = (16 − 5·1.44)/4 = 2.2, √5·1.2/√2.2 = 1.809068.
func TestObjectives(t *testing.T) {
	t.Parallel()
	ms := []Market{
		{PnL: 2, NTrades: 2, Trades: []Trade{{PnL: 1}, {PnL: 1}}},
		{PnL: -1, NTrades: 1, Trades: []Trade{{PnL: -1}}},
		{},
		{PnL: 5, NTrades: 2, Trades: []Trade{{PnL: 2}, {PnL: 3}}},
	}
	var sum Tally
	for _, m := range ms {
		sum = sum.Add(TallyOf(m))
	}
	for _, tc := range []struct {
		name string
		want float64
	}{{"total_pnl", 6}, {"ev_per_trade", 1.2}, {"sharpe_per_market", 2.0 / 3}, {"sqn", 1.809068}} {
		obj, ok := ObjectiveNamed(tc.name)
		if !ok || !near(obj(sum), tc.want, 1e-6) {
			t.Errorf("%s: %v, want %v", tc.name, obj(sum), tc.want)
		}
	}
	if _, ok := ObjectiveNamed("profit"); ok {
		t.Error("an unknown objective")
	}
	if !math.IsNaN(SQN(TallyOf(Market{PnL: 1, NTrades: 2}))) || !math.IsNaN(EVPerTrade(Tally{})) {
		t.Error("sqn without trades, or ev of none")
	}
	// The Sharpe objective agrees with Sharpe on the same values.
	if s := Sharpe([]float64{2, -1, 5}); s == nil || !near(SharpePerMarket(sum), *s, 1e-12) {
		t.Errorf("sharpe objective %v vs Sharpe %v", SharpePerMarket(sum), s)
	}
}

// TestObjectivesNoSpread: markets (and trades) that all made the same pnl
// have no spread, so the Sharpe ratio and sqn objectives are undefined
// (NaN), as Sharpe and the summary's sqn say. A one-pass variance
// Σx²/n − x̄² left a rounding residue of about 1e-18 there, and a ratio of
// 1e7 or more that ranked such a trial first.
func TestObjectivesNoSpread(t *testing.T) {
	t.Parallel()
	for _, pnl := range []float64{0.1, 0.3, 0.7, 1.1, 12.34} {
		for _, n := range []int{3, 10, 17, 100} {
			var tl Tally
			ms := make([]Market, n)
			for i := range ms {
				ms[i] = Market{PnL: pnl, NTrades: 1, Trades: []Trade{{PnL: pnl}}}
				tl = tl.Add(TallyOf(ms[i]))
			}
			if s := SharpePerMarket(tl); !math.IsNaN(s) {
				t.Errorf("%d markets of pnl %v: sharpe_per_market objective %v, want NaN", n, pnl, s)
			}
			if q := SQN(tl); !math.IsNaN(q) {
				t.Errorf("%d trades of pnl %v: sqn objective %v, want NaN", n, pnl, q)
			}
			if s := Aggregate(ms, 100); s.SharpePerMarket != nil || s.SQN != nil {
				t.Errorf("%d markets of pnl %v: summary sharpe %v sqn %v, want null", n, pnl, s.SharpePerMarket, s.SQN)
			}
		}
	}
}

// TestBetter: the order PBO ranks objectives by.
func TestBetter(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		a, b float64
		want bool
	}{
		{1, 0, true}, {0, 1, false}, {1, 1, false},
		{0.25 + 1e-17, 0.25, false}, {0.25, 0.25 + 1e-17, false}, // rounding: a tie
		{0.25 + 1e-9, 0.25, true},
		{0, nan, true}, {nan, 0, false}, {nan, nan, false},
		{inf, 1e300, true}, {1e300, inf, false}, {inf, inf, false}, {-inf, 0, false}, {0, -inf, true},
	} {
		if got := better(tc.a, tc.b); got != tc.want {
			t.Errorf("better(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestPBOBreakEvenTies: trial 0 makes 0.1, 0.2 and −0.3 in each block of 3
// markets, trial 1 0.5, −0.5 and 0: both break even on every block, so
// every split ties them in-sample (trial 0 chosen, the lower index) and
// out of sample: no ranking, no split gives a logit, and there is no PBO,
// by every objective, as for two identical trials. Summed in binary, trial 0's
// blocks come to 5.6e-17, not 0, and that residue once made it the
// in-sample best and the out-of-sample best alike: PBO 0, "stable", for a
// trial that made nothing. PBO compares the objectives as the sweep
// chooses its best trial, to the 6 decimals it answers.
func TestPBOBreakEvenTies(t *testing.T) {
	t.Parallel()
	pnl := [2][3]float64{{0.1, 0.2, -0.3}, {0.5, -0.5, 0}}
	m := matrix(2, 24, func(i, j int) float64 { return pnl[i][j%3] })
	for _, name := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market"} {
		obj, _ := ObjectiveNamed(name)
		if got, choices := PBOChoices(m, obj); got != nil || choices != 0 {
			t.Errorf("%s: PBO %s over %d, want none", name, fmtF(got), choices)
		}
	}
}

// TestPBOUntradedTrials: a search of 8 trials of which 6 never trade.
// Trials 6 and 7 mirror each other: trial 6 makes 1 and 3 on each even
// block's 2 markets and −1 and −3 on each odd block's, trial 7 the
// opposite. A split with more even blocks in-sample than odd chooses trial
// 6, whose mean is then negative out of sample, below trial 7's: rank 1 of
// the 2 trials with an objective out of sample, overfit; more odd blocks, trial 7
// likewise (34 splits); 2 of each (36), both break even on both halves,
// trial 6 is chosen and ties trial 7 out of sample: no ranking, no logit.
// PBO 1, by every objective, over 34 splits. The untraded trials have no Sharpe
// ratio, EV per trade or SQN on either half, and are not ranked; ranked
// below every number they once put the chosen trial at rank 7 or more of
// 8, never in the bottom half: PBO 0, "unlikely to be overfit", for a
// search whose best in-sample was always worst out of sample. (Total pnl
// is defined for every trial, 0 untraded, and ranks all 8: trial 6 or 7
// last, or all 8 tied at 0, no logit: PBO 1 over 34 as well.)
//
// With trial 7 untraded too, trial 6 alone has an objective: it is chosen
// in every split and is alone out of sample, a ranking of one: no split
// gives a logit, and there is no PBO (it was 0).
func TestPBOUntradedTrials(t *testing.T) {
	t.Parallel()
	mirror := func(traded int) [][]Tally {
		m := make([][]Tally, 8)
		for i := range m {
			m[i] = make([]Tally, 16)
		}
		for j := range 16 {
			p := float64(1 + 2*(j%2)) // 1, 3 on each block's 2 markets
			if (j/2)%2 == 1 {
				p = -p
			}
			for i, sign := range []float64{1, -1}[:traded] {
				x := sign * p
				m[6+i][j] = TallyOf(Market{PnL: x, NTrades: 1, Trades: []Trade{{PnL: x}}})
			}
		}
		return m
	}
	for _, name := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market", "sqn"} {
		obj, _ := ObjectiveNamed(name)
		if got, choices := PBOChoices(mirror(2), obj); got == nil || *got != 1 || choices != 34 {
			t.Errorf("two traded trials of 8, %s: PBO %s over %d splits, want 1 over 34", name, fmtF(got), choices)
		}
		if name == "total_pnl" {
			continue
		}
		if got, choices := PBOChoices(mirror(1), obj); got != nil || choices != 0 {
			t.Errorf("one traded trial of 8, %s: PBO %s over %d splits, want none", name, fmtF(got), choices)
		}
	}
}

// TestPBOBestWithoutSpreadIsNotOverfit: trial A makes 2 or 0.5 in turn on
// the markets of blocks 0-3 and 1 on every market of blocks 4-7; B loses
// 0.8 and makes 1 in turn: A beats B on every market. Of the 70 splits:
//   - in-sample blocks 0-3: A is chosen; out of sample it made 1 on every
//     market, a Sharpe ratio without spread, undefined. It traded there,
//     so this is no overfit (as it was counted before): no logit;
//   - in-sample blocks 4-7: A has no objective in-sample (no spread), B is
//     chosen and A beats it out of sample: overfit;
//   - the other 68: A is chosen on both halves and ranks first: not
//     overfit.
//
// PBO = 1/69.
func TestPBOBestWithoutSpreadIsNotOverfit(t *testing.T) {
	t.Parallel()
	trials := make([][]Tally, 2)
	for j := range 16 {
		a, b := 1.0, 1.0
		if j < 8 && j%2 == 0 {
			a = 2
		} else if j < 8 {
			a = 0.5
		}
		if j%2 == 0 {
			b = -0.8
		}
		for i, x := range []float64{a, b} {
			trials[i] = append(trials[i], TallyOf(Market{PnL: x, NTrades: 1, Trades: []Trade{{PnL: x}}}))
		}
	}
	for _, name := range []string{"sharpe_per_market", "sqn"} {
		obj, _ := ObjectiveNamed(name)
		if got, choices := PBOChoices(trials, obj); got == nil || *got != 1.0/69 || choices != 69 {
			t.Errorf("%s: PBO %s over %d splits, want 1/69: a chosen trial that traded out of sample without spread is not overfit", name, fmtF(got), choices)
		}
	}
}

// TestPBOIdenticalTrials: a grid with a parameter that changes nothing
// holds each setting as k identical trials, and must read as the grid of
// one trial a setting, not as overfit because its copies tie.
//
//   - 4 identical trials whose pnl varies by market: every split ties them
//     in-sample and out of sample, so nothing was chosen over anything and
//     there is no PBO (at the average rank 2.5 of 4, ω = ½, logit 0, every
//     split once counted as overfit: PBO 1, "the search is overfit").
//   - "ties" of TestPBO (A − B = 1 on block 0, 0 elsewhere) with each of A
//     and B three times (A A A B B B): the 35 splits with block 0 in-sample
//     choose the first A, and all six tie out of sample: no logit (rank
//     3.5 of 6, ω = ½, once overfit); the 35 with it out of sample choose
//     the first A, which ties the other As at ranks 4-6, average 5, ω = 5/7:
//     not overfit. PBO 0 over 35, as A and B alone (it was 35/70 = 0.5).
//   - random grids of G = 1 to 4 settings, each copied k = 1 to 3 times in
//     a row: PBO and its choices are those of the G settings alone (G = 1:
//     none).
func TestPBOIdenticalTrials(t *testing.T) {
	t.Parallel()
	// copies repeats each trial's row k times, as a no-op parameter does.
	copies := func(m [][]Tally, k int) [][]Tally {
		var out [][]Tally
		for _, row := range m {
			for range k {
				out = append(out, row)
			}
		}
		return out
	}
	same := matrix(4, 16, func(i, j int) float64 { return float64(j%3) - 0.5 })
	for _, name := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market", "sqn"} {
		obj, _ := ObjectiveNamed(name)
		if got, choices := PBOChoices(same, obj); got != nil || choices != 0 {
			t.Errorf("4 identical trials, %s: PBO %s over %d splits, want none", name, fmtF(got), choices)
		}
	}
	ab := matrix(2, 16, func(i, j int) float64 {
		if i == 0 && j < 2 {
			return 0.5
		}
		return 0
	})
	if got, choices := PBOChoices(copies(ab, 3), TotalPnL); got == nil || *got != 0 || choices != 35 {
		t.Errorf("A A A B B B: PBO %s over %d splits, want 0 over 35", fmtF(got), choices)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		g, k := 1+rng.IntN(4), 1+rng.IntN(3)
		// Pnl in halves from −1 to 1: settings tie on some halves.
		m := matrix(g, 16+rng.IntN(17), func(i, j int) float64 { return float64(rng.IntN(5)-2) / 2 })
		for _, name := range []string{"total_pnl", "ev_per_trade", "sharpe_per_market"} {
			obj, _ := ObjectiveNamed(name)
			want, wantChoices := PBOChoices(m, obj)
			got, choices := PBOChoices(copies(m, k), obj)
			if fmtF(got) != fmtF(want) || choices != wantChoices {
				t.Errorf("round %d, %d settings × %d copies, %s: PBO %s over %d splits, the settings alone %s over %d",
					round, g, k, name, fmtF(got), choices, fmtF(want), wantChoices)
			}
		}
	}
}
