// Package sweep plans a parameter sweep (DESIGN 14): it reads and
// validates the body of POST /v1/sweeps, expands its parameters into
// trials by a grid or a seeded random search, substitutes each trial's
// values into the strategy through JSON Pointers, splits the markets into
// train and test sets in time order with an embargo between them, checks
// the plan's size against the caller's limits, and defines the shard a
// worker runs: one market × every trial.
//
// It is pure code: no I/O, no queue, no HTTP. The choices DESIGN 14
// leaves open are these, and the tests pin each:
//
//   - Sweepable paths: the strategy's numbers (positionSize,
//     maxLossPercent, feeRate, feeExponent, latencyMs, reentryCooldownMs,
//     maxEntriesPerMarket, limitOffsetTicks, cancelAfterMs and every
//     condition's value) and its enums (side, orderType, feeModel,
//     queueModel, a condition's field and operator), plus the booleans
//     postOnly and includeRebates. A path to a condition must name one the
//     strategy has. Anything else is refused by name.
//   - A range expands decimal-exactly: its values are rounded to the
//     decimals of from, to and step, so 0.1 steps give 0.3, not
//     0.30000000000000004. At most MaxValues values a parameter.
//   - Every trial is validated with the replay validator before the sweep
//     is accepted; the first trial the validator refuses makes the whole
//     sweep a VALIDATION_ERROR that names the trial's values.
//   - HOLDOUT tests the last ⌈testFraction·n⌉ markets; WALK_FORWARD cuts
//     the markets into folds + 1 blocks whose sizes differ by at most one,
//     the larger blocks first. The embargo drops the markets just before
//     each test set. A trial's own train and test figures are the last
//     fold's (for WALK_FORWARD the largest train set and the block after
//     it), never overlapping; the walk forward's whole out-of-sample path
//     is best.test and folds.
package sweep
