// Package stats computes the statistics of an edge (DESIGN 14): the
// aggregate statistics of a strategy's replays over many markets, the
// probabilistic and deflated Sharpe ratios, and the probability of
// backtest overfitting by combinatorially symmetric cross-validation.
//
// Everything here is a pure function of its arguments: no I/O, no clock,
// no global state. A figure that is undefined for the data (a standard
// deviation of one value, a ratio over a zero denominator, an overflow) is
// nil, which encodes as JSON null; every number returned is finite.
//
// Choices where DESIGN 14 is silent:
//
//   - Standard deviations divide by n − 1 (the sample estimator), and are
//     nil below two values. The skewness γ₃ and kurtosis γ₄ of the
//     probabilistic Sharpe ratio are population moments, m₃/m₂^{3/2} and
//     m₄/m₂² with mᵣ = Σ(x − x̄)ʳ/n, as Bailey and López de Prado compute
//     them; γ₄ is 3 for a normal (not excess kurtosis).
//   - Percentiles interpolate linearly between order statistics: the p-th
//     of n sorted values x₀ ≤ … ≤ xₙ₋₁ is x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋₊₁ − x_⌊h⌋)
//     with h = (n − 1)·p, numpy's default ("linear", Hyndman and Fan's
//     type 7).
//   - win_rate and its Wilson interval are percentages (0 to 100), as the
//     replay and the agent's aggregate write win_rate; calibration's
//     shares and prices are fractions (0 to 1), the scale of a price.
//   - A 50-50 resolution counts half a win in calibration (Trade.Won 0.5).
//   - Daily figures group the markets by the UTC date of their end time;
//     only days with a market count (no empty days are filled in).
//   - In the probability of backtest overfitting, a trial whose objective
//     is undefined (NaN) on a half of a split is neither chosen nor ranked
//     there, and an in-sample best that made no trade out of sample counts
//     as overfit (the whole rule, and the readings it replaced: PBO's
//     doc). Ties go to the lowest index in-sample and share their average
//     rank out of sample, where a split in which every ranked trial ties
//     gives no logit (identical trials, a parameter that changes nothing,
//     are not overfit for tying); objectives are compared rounded to 6 decimals,
//     as the sweep chooses its best trial (a sum of 0.1, 0.2 and −0.3 is
//     0, not the 5.6e-17 of its binary sum), and within a relative 1e-12
//     of each other tie.
//   - Figures are rounded to 6 decimals at Aggregate's edge, as the replay
//     rounds money; the functions that compute them do not round (but PBO
//     its comparisons, above).
package stats
