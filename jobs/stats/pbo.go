package stats

import (
	"math"
	"math/bits"
)

// Tally is the additive summary of a trial's replays on a set of markets,
// from which every objective of DESIGN 14 is computed: the tally of a set
// of markets is the sum (Add) of its markets' tallies, so that PBO scores
// any subset of blocks from per-block sums rather than per-market results.
//
// The spreads are kept as a mean and a sum of squared deviations from it
// (Welford's form, added by Chan's rule), not as Σx²: markets or trades of
// one same pnl then have a spread of exactly 0, where Σx² − n·x̄² leaves a
// rounding residue (1e-18) whose ratio of 1e7 or more would rank them
// first.
type Tally struct {
	Traded int     // markets with at least one trade
	Trades int     // round trips
	PnL    float64 // Σ pnl (a market's, equally its trades')
	// MarketMean and MarketM2 are the mean of the traded markets' pnl and
	// the sum of its squared deviations from that mean (an untraded
	// market adds nothing).
	MarketMean, MarketM2 float64
	// TradeMean and TradeM2 are the same over the trades' pnl.
	TradeMean, TradeM2 float64
}

// Add is the tally of the union of two disjoint sets of markets.
func (t Tally) Add(u Tally) Tally {
	out := Tally{Traded: t.Traded + u.Traded, Trades: t.Trades + u.Trades, PnL: t.PnL + u.PnL}
	out.MarketMean, out.MarketM2 = chan2(t.Traded, t.MarketMean, t.MarketM2, u.Traded, u.MarketMean, u.MarketM2)
	out.TradeMean, out.TradeM2 = chan2(t.Trades, t.TradeMean, t.TradeM2, u.Trades, u.TradeMean, u.TradeM2)
	return out
}

// chan2 is the mean and sum of squared deviations of two disjoint samples
// together, of na and nb values (Chan, Golub and LeVeque's pairwise
// update). Equal means add no spread.
func chan2(na int, ma, qa float64, nb int, mb, qb float64) (mean, m2 float64) {
	switch {
	case nb == 0:
		return ma, qa
	case na == 0:
		return mb, qb
	}
	n := float64(na + nb)
	d := mb - ma
	return ma + d*float64(nb)/n, qa + qb + d*d*float64(na)*float64(nb)/n
}

// TallyOf is m's tally. Its trades' spread needs m's trades (Market.Trades
// or Sums); without them it is NaN, and so is SQN of any set that holds m.
func TallyOf(m Market) Tally {
	t := Tally{Trades: m.NTrades, PnL: m.PnL}
	if m.NTrades > 0 {
		t.Traded, t.MarketMean = 1, m.PnL
	}
	if !m.detailed() {
		t.TradeMean, t.TradeM2 = math.NaN(), math.NaN()
		return t
	}
	s := m.tradeSums()
	t.TradeMean, t.TradeM2 = s.Mean, s.M2
	return t
}

// Objective scores a trial on a set of markets from its tally; higher is
// better, NaN undefined (PBO neither chooses nor ranks the trial on that
// half of a split).
type Objective func(Tally) float64

// ObjectiveNamed is DESIGN 14's objective of that name: total_pnl,
// ev_per_trade, sharpe_per_market or sqn.
func ObjectiveNamed(name string) (Objective, bool) {
	switch name {
	case "total_pnl":
		return TotalPnL, true
	case "ev_per_trade":
		return EVPerTrade, true
	case "sharpe_per_market":
		return SharpePerMarket, true
	case "sqn":
		return SQN, true
	}
	return nil, false
}

// TotalPnL is the objective total_pnl: Σ pnl.
func TotalPnL(t Tally) float64 { return t.PnL }

// EVPerTrade is the objective ev_per_trade: Σ pnl / trades, NaN without a
// trade.
func EVPerTrade(t Tally) float64 {
	if t.Trades == 0 {
		return math.NaN()
	}
	return t.PnL / float64(t.Trades)
}

// SharpePerMarket is the objective sharpe_per_market: mean/sd of the
// traded markets' pnl (sd with n − 1); NaN below two traded markets or
// with no spread.
func SharpePerMarket(t Tally) float64 { return sharpeOf(t.Traded, t.PnL, t.MarketM2) }

// SQN is the objective sqn: √n·mean/sd over the trades; NaN below two
// trades, with no spread, or without the trades' pnl (TallyOf).
func SQN(t Tally) float64 {
	return math.Sqrt(float64(t.Trades)) * sharpeOf(t.Trades, t.PnL, t.TradeM2)
}

// sharpeOf is mean/sd of n values of that sum and sum of squared
// deviations m2 (sd² = m2/(n − 1)). The mean is sum/n, not the running
// mean that serves m2's updates: a set whose pnl adds up to 0 has a
// ratio of exactly 0, as every other trial's of the same sum.
func sharpeOf(n int, sum, m2 float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	v := m2 / float64(n-1)
	if !(v > 0) {
		return math.NaN()
	}
	return sum / float64(n) / math.Sqrt(v)
}

// PBOBlocks is S, the blocks CSCV cuts the markets into; PBO needs two
// markets a block.
const PBOBlocks = 8

// PBO is the probability of backtest overfitting by combinatorially
// symmetric cross-validation (Bailey, Borwein, López de Prado and Zhu,
// "The Probability of Backtest Overfitting", J. of Computational Finance
// 20(4), 2017). trials[i][j] is trial i's tally on market j, the markets
// in time order and the same for every trial.
//
// The T markets are cut into S = 8 contiguous blocks, block b holding
// markets ⌊bT/8⌋ to ⌊(b+1)T/8⌋ − 1. For each of the C(8,4) = 70 choices
// of 4 blocks as in-sample (the other 4 out-of-sample), the trial with
// the best objective in-sample is chosen among those whose objective is
// defined (not NaN) in-sample (the lowest index among ties; objectives
// compared to 6 decimals, as the sweep chooses its best; none defined: no
// logit). The N trials whose objective is defined out of sample are
// ranked by it, rank 1 the worst, tied trials sharing their average rank.
// If the chosen trial is among them and N ≥ 2, with ω = rank/(N + 1) the
// choice counts as overfit when the logit ln(ω/(1 − ω)) ≤ 0, that is when
// rank ≤ (N+1)/2, unless all N tie: every trial scored the same out of
// sample, so the ranking says nothing of the choice (as N = 1 says
// nothing), and the choice gives no logit. Average ranks keep a grid whose
// trials come in groups of k identical ones (a parameter that changes
// nothing) to the verdicts of the grid of one trial a group: a group at
// place g of G holds ranks (g − 1)·k + 1 … g·k, of average rank
// (g − 1)·k + (k + 1)/2 ≤ (Gk + 1)/2 exactly when g ≤ (G + 1)/2; but a
// single group (G = 1), all tied at (N + 1)/2, would be overfit in every
// split, PBO 1 for a search that had nothing to choose. If the chosen trial made no trade out of sample and
// N ≥ 1, the choice counts as overfit: the in-sample best did nothing
// where others did something. Otherwise (the chosen trial alone out of
// sample, no trial there, every trial there tied, or the chosen trial
// traded there without an objective: one market's Sharpe ratio, pnl
// without spread) the choice gives no logit and is left out. PBO is the share of the choices that overfit, of those
// that gave a logit. A trial undefined out of sample is not ranked below
// every number: trials that never trade would put the in-sample best in
// the top half of every split, and a search of one losing trial among
// seven that never trade would read as not overfit. Nor is a chosen trial
// undefined out of sample dropped for the runner-up: a setting that won
// big on a few markets and then never traded would read as not overfit.
//
// Nil under 16 markets, under 2 trials, when trials' rows differ in
// length, or when no choice gives a logit.
func PBO(trials [][]Tally, objective Objective) *float64 {
	pbo, _ := PBOChoices(trials, objective)
	return pbo
}

// PBOChoices is PBO and its denominator: how many of the 70 choices gave
// a logit (0 when PBO is nil).
func PBOChoices(trials [][]Tally, objective Objective) (*float64, int) {
	n := len(trials)
	if n < 2 {
		return nil, 0
	}
	markets := len(trials[0])
	for _, row := range trials {
		if len(row) != markets {
			return nil, 0
		}
	}
	if markets < 2*PBOBlocks {
		return nil, 0
	}
	// Each trial's tally per block.
	blocks := make([][PBOBlocks]Tally, n)
	for i, row := range trials {
		for b := range PBOBlocks {
			for _, t := range row[b*markets/PBOBlocks : (b+1)*markets/PBOBlocks] {
				blocks[i][b] = blocks[i][b].Add(t)
			}
		}
	}
	inScore, outScore := make([]float64, n), make([]float64, n)
	outTrades := make([]int, n)
	ranked := make([]int, 0, n)
	splits, overfit := 0, 0
	for mask := range 1 << PBOBlocks {
		if bits.OnesCount(uint(mask)) != PBOBlocks/2 {
			continue
		}
		for i := range blocks {
			var in, out Tally
			for b, t := range blocks[i] {
				if mask&(1<<b) != 0 {
					in = in.Add(t)
				} else {
					out = out.Add(t)
				}
			}
			// To 6 decimals, as the sweep chooses its best trial and
			// answers every figure: a block sum of 0.1, 0.2 and −0.3 is
			// 5.6e-17 in binary, which no relative tolerance ties with
			// another trial's exact 0.
			inScore[i], outScore[i] = round6(objective(in)), round6(objective(out))
			outTrades[i] = out.Trades
		}
		// Chosen on in-sample figures alone, among the trials with an
		// objective there; ranked among those with one out of sample (the
		// rule and why: PBO's doc).
		best := -1
		for i := range n {
			if !math.IsNaN(inScore[i]) && (best < 0 || better(inScore[i], inScore[best])) {
				best = i
			}
		}
		if best < 0 {
			continue // nothing chosen: no logit
		}
		ranked = ranked[:0]
		for i := range n {
			if !math.IsNaN(outScore[i]) {
				ranked = append(ranked, i)
			}
		}
		if math.IsNaN(outScore[best]) {
			// Overfit when it did not trade at all there. A best that
			// traded but has no objective (a Sharpe ratio of one market,
			// or of pnl without spread: a fixed stake winning the same
			// on every market) is not ranked, nor called overfit.
			if outTrades[best] == 0 && len(ranked) > 0 {
				splits++
				overfit++
			}
			continue // or nothing at all out of sample: no logit
		}
		if len(ranked) < 2 {
			continue // the chosen trial alone out of sample: no ranking
		}
		// Twice the average rank: 2 + 2·(lower) + (tied others).
		rank2, tied := 2, 0
		for _, i := range ranked {
			s := outScore[i]
			switch {
			case i == best:
			case better(outScore[best], s):
				rank2 += 2
			case !better(s, outScore[best]):
				rank2++
				tied++
			}
		}
		if tied == len(ranked)-1 {
			continue // every trial scored the same: no ranking
		}
		splits++
		if rank2 <= len(ranked)+1 { // rank ≤ (N+1)/2: ω ≤ ½, logit ≤ 0
			overfit++
		}
	}
	if splits == 0 {
		return nil, 0
	}
	pbo := float64(overfit) / float64(splits)
	return &pbo, splits
}

// better reports whether a ranks above b: a larger number, any number
// above NaN. Numbers within a relative rankTie of each other tie: the
// same ratio of other values (a Sharpe ratio of 0.25 from two different
// sets of markets) comes out of the block sums in different last bits,
// and those bits must not choose the in-sample best or split a tie.
func better(a, b float64) bool {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return !math.IsNaN(a) && math.IsNaN(b)
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return a > b
	}
	return a-b > rankTie*math.Max(math.Abs(a), math.Abs(b))
}

// rankTie is the relative difference under which two objectives tie
// (PBO): some thousand times the rounding of one addition.
const rankTie = 1e-12
