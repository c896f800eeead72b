// Package replay replays a trading strategy tick by tick against one
// resolved up/down market (SPEC 4.2, DESIGN 6) and validates replay
// requests (SPEC 7, DESIGN 5).
//
// It knows nothing of queues or HTTP. Its types are the wire shapes: the
// api decodes a POST /v1/replay body into a Request, calls Normalize
// (answering an *Error with its Code) and enqueues the normalized request;
// the worker calls Run and returns the Result, which the api serves as the
// response's data. The backtest agent reuses Strategy as its
// generated_strategy and Fields, Operators, Sides and OrderTypes to
// describe the rules to a model.
//
// Where DESIGN 6 leaves a choice open, the choices are these, and the tests
// pin each of them:
//
//   - side and orderType are case-sensitive; a near miss ("up") is rejected
//     with a message naming the right spelling.
//   - An explicit maxLossPercent of 0 is rejected; leaving it out (or null)
//     takes the default 50. positionSize may be fractional.
//   - At most MaxConditions conditions per list; condition values are not
//     range-checked beyond being finite (a value no snapshot reaches simply
//     never holds).
//   - time_remaining_pct is not clamped: a snapshot recorded after
//     end_time has a negative value. A market whose end is not after its
//     start has 0 at every snapshot.
//   - A MAX_LOSS test needs a positive entry cost: a position bought at 0
//     cannot lose.
//   - The MARKET_END event is at end_time, or at the last snapshot's time if
//     snapshots were recorded past end_time, so events stay in time order.
//   - Equity starts at positionSize before the first snapshot and is
//     observed after the action of every snapshot and after a settlement;
//     max_drawdown is measured on that series at full resolution, not on
//     the sampled curve. Of falls equal within 1e-9 (float noise), the
//     first is the largest: its peak is max_drawdown_percent's.
//   - An equity point's pnl is realized plus unrealized pnl (equity less
//     positionSize). A MARKET_END settlement, or a maker exit filled by a
//     trade recorded after the last snapshot, adds one last point at its
//     time (within the 1,000). If the snapshots with trades exceed the budget,
//     the curve keeps an evenly spaced selection of them and the last one.
//     A market of more than 1,000 snapshots always gets 1,000 points: an
//     evenly spaced point that falls on a trade's snapshot is made up for
//     by another, evenly spaced among the snapshots not yet shown.
//   - A trade is winning or losing by its pnl as shown (rounded to 6
//     decimals), so a trade shown as 0 is neither.
//   - time_in_position_pct counts a position held to MARKET_END up to the
//     last snapshot (the end of the recorded span), and so a maker fill
//     after the last snapshot (a resting order rests until end_time, and
//     the trades recorded after that snapshot fill it) counts no later
//     than it. With a span of one
//     instant it is 100 if a position was opened, else 0.
//   - The winner is matched to the side without regard to case (Up / UP).
//   - Snapshots must be in time order (equal times are allowed) and have
//     finite prices, else Run fails with a plain error: bad data, not a
//     bad request. Book levels with a size that is not positive, or a price
//     that is not finite, are not levels.
//   - Times are RFC 3339 in UTC with six fractional digits, the store's
//     precision.
//   - A body key the request does not have, at the top or in a condition,
//     is refused by name (keys match without regard to case, as
//     encoding/json matches them); so is a condition without a value or
//     with "value": null.
//   - Costs (fees and latency) show in every answer, whether or not the
//     request named a feeModel or a latencyMs: strategy echoes feeModel
//     (NONE when none was named) and latencyMs, every trade event carries
//     fee (0 under NONE and at MARKET_END) and performance carries
//     total_fees. An explicit latencyMs of 0 is the same request as none.
//   - MARKET charges nothing on a market without a recorded rate (or with a
//     rate that is not a positive number); a missing exponent counts as 1.
//     strategy echoes the rate and exponent that applied. p(1−p) is taken
//     as 0 for a corrupt level priced outside [0, 1], so no fee is negative.
//   - A resting order's limit off the tick grid (a best level left from a
//     finer tick) goes onto it on the passive side: down for a BUY, up for
//     a SELL, never across the spread the strategy meant to rest behind.
//   - A postOnly GTC with no price to rest at (no bid for a BUY, no ask
//     for a SELL, or no book), which acts as LIMIT, is REJECTED where that
//     LIMIT would take liquidity: its limit at or through the other side's
//     best level, or no level there (it would fill at the snapshot's
//     price). postOnly never takes. One that would take nothing is
//     CANCELLED, as a LIMIT that fills nothing is.
//   - A positionSize under the market's min_order_size trades all the
//     same (SPEC allows 1 to 10000), and the answer carries a warning that
//     Polymarket would have refused those orders, once an order was made.
//     So does a sell order under it that a partial entry's position made
//     (an exit other than MARKET_END, or a resting SELL placed).
//   - A resting order whose cancelAfterMs takes effect at or before
//     end_time is CANCELLED then, also when no snapshot came to activate
//     it: DESIGN's "one that never activates is EXPIRED at end_time" is
//     for an order no cancel ended first.
//   - A match recorded on both outcomes (one transaction hash) is evidence
//     for a resting order once, whichever outcome's event comes first
//     (REFERENCE: count a transaction hash once): DESIGN names the other
//     outcome's twin of a trade counted; its mirror image, this outcome's
//     twin of a mirror counted, is skipped as well.
//   - With latency, the position is marked and equity observed on every
//     snapshot between a decision and its execution, as on any snapshot in
//     position; an entry that waits is not in position yet.
package replay
