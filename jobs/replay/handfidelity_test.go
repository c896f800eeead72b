package replay

import (
	"math"
	"testing"

	"github.com/updown/updown/store"
)

// Hand-made tapes whose figures are worked out by hand from DESIGN 6, for
// what the stores cannot carry (NaN levels, snapshots at one instant) and
// for the first crypto fee curve.

// The early-2026 crypto curve (rate 0.25, exponent 2, times p once more)
// on a MARKET entry that walks two levels and a thin MARKET exit that
// sells the rest at the worst recorded bid; each fill's fee is summed over
// its levels and rounded down to 5 decimals.
func TestHandCryptoCurveWalks(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.52, 0.48), book(levels(lv(0.51, 100)), levels(lv(0.52, 3), lv(0.53, 10)))),
		withUp(snap(10, 0.70, 0.30), book(levels(lv(0.69, 5), lv(0.68, 1)), levels(lv(0.70, 10)))),
	}
	s := strategy(SideUp, 7, conds(cond(FieldPriceUp, OpLessOrEqual, 0.52)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.7)))
	s.FeeModel = FeeMarket
	r, err := runFull(t, cryptoV1Market("Down"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	en, ex := r.Trades[0], r.Trades[1]
	// 3 × 0.52 + 4 × 0.53 = 3.68 over 7
	qaNear(t, "entry fill", en.FillPrice, round6(3.68/7))
	// 0.25 × (3 × 0.52 × 0.2496² + 4 × 0.53 × 0.2491²) = 0.05718399…
	qaNear(t, "entry fee", en.Fee, 0.05718)
	// 5 × 0.69 + 1 × 0.68 + 1 × 0.68 (beyond the levels) = 4.81 over 7
	qaNear(t, "exit fill", ex.FillPrice, round6(4.81/7))
	qaNear(t, "exit slippage", ex.Slippage, round6(0.70-4.81/7))
	// 0.25 × (5 × 0.69 × 0.2139² + 2 × 0.68 × 0.2176²) = 0.05556106…
	qaNear(t, "exit fee", ex.Fee, 0.05556)
	qaNear(t, "pnl", ex.PositionPnL, 1.13-0.05718-0.05556)
	p := r.Performance
	qaNear(t, "total_fees", p.TotalFees, 0.11274)
	qaNear(t, "total_pnl_percent", p.TotalPnLPercent, round6(1.01726/(3.68+0.05718)*100))
	// equity at the entry: 7 + 7 × (0.51 − 3.68/7) − 0.05718
	qaNear(t, "max_drawdown", p.MaxDrawdown, 0.16718)
	qaNear(t, "max_drawdown_percent", p.MaxDrawdownPercent, round6(0.16718/7*100))
}

// A fee that is a whole number of 1e-5 units is kept whole, not floored a
// unit down by float noise: 100 × 0.07 × 0.3 × 0.7 = 1.47.
func TestHandFeeOnTheUnit(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{snap(0, 0.30, 0.70), snap(1, 0.30, 0.70)}
	s := customFee(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.3)), never()), 0.07, 1)
	r, err := runFull(t, market("Up"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	qaNear(t, "fee", r.Trades[0].Fee, 1.47)
	qaNear(t, "pnl", r.Trades[1].PositionPnL, 70-1.47)
}

// Levels with a NaN price or size, or a size of 0, are no levels: a LIMIT
// entry takes the 4 shares at its limit behind them, and a bid side of
// such levels alone marks the position at the snapshot's price.
func TestHandNaNLevels(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 0), lv(0.48, 50)), levels(lv(0.50, 0), lv(nan, 5), lv(0.50, nan), lv(0.50, 4), lv(0.51, 100)))),
		withUp(snap(10, 0.30, 0.70), book(levels(lv(nan, 10), lv(0.29, nan)), levels(lv(0.30, 5)))),
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never())
	s.OrderType = OrderLimit
	r, err := runFull(t, market("Down"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	en := r.Trades[0]
	qaNear(t, "shares", en.Shares, 4)
	qaNear(t, "fill", en.FillPrice, 0.50)
	// marked at 0.48, then at the price 0.30: 10 + 4 × (0.30 − 0.50)
	qaNear(t, "curve", r.PnLCurve[1].UnrealizedPnL, -0.8)
	qaNear(t, "max_drawdown", r.Performance.MaxDrawdown, 2.0) // settled at 0: 4 × 0.5
}

// With latency 1 s the entry decided at 0 s skips the snapshot at the same
// instant and the one at 0.5 s and executes at 1 s; a MAX_LOSS decided at
// 1.5 s at its mark walks the book at 2.5 s, priced against 1.5 s; the
// entry decided at 3 s finds no snapshot to execute on.
func TestHandLatencyEqualTimes(t *testing.T) {
	t.Parallel()
	bk := func(s store.Snapshot, bids, asks []store.Level) store.Snapshot { return withUp(s, book(bids, asks)) }
	snaps := []store.Snapshot{
		bk(snapMs(0, 0.50, 0.50), levels(lv(0.49, 100)), levels(lv(0.50, 100))),
		snapMs(0, 0.50, 0.50),
		snapMs(500, 0.50, 0.50),
		bk(snapMs(1000, 0.52, 0.48), nil, levels(lv(0.52, 100))),
		bk(snapMs(1500, 0.40, 0.60), levels(lv(0.38, 100)), levels(lv(0.40, 100))),
		bk(snapMs(2000, 0.45, 0.55), levels(lv(0.44, 100)), levels(lv(0.45, 100))),
		bk(snapMs(2500, 0.48, 0.52), levels(lv(0.47, 4), lv(0.46, 2)), levels(lv(0.48, 100))),
		snapMs(3000, 0.50, 0.50),
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never())
	s.LatencyMs, s.MaxLossPercent = 1000, 20
	r, err := runFull(t, market("Up"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != 2 {
		t.Fatalf("%d trade events: %+v", len(r.Trades), r.Trades)
	}
	en, ex := r.Trades[0], r.Trades[1]
	if en.Time != formatTime(qaAt(1000)) || ex.Time != formatTime(qaAt(2500)) || ex.Reason != ReasonMaxLoss {
		t.Fatalf("entry at %s, %s exit at %s; want 1 s and a MAX_LOSS at 2.5 s", en.Time, ex.Reason, ex.Time)
	}
	qaNear(t, "entry slippage", en.Slippage, 0.02)
	// 4 × 0.47 + 6 × 0.46 (the rest at the worst bid) = 4.64
	qaNear(t, "exit fill", ex.FillPrice, 0.464)
	qaNear(t, "exit slippage", ex.Slippage, 0.40-0.464)
	qaNear(t, "pnl", ex.PositionPnL, -0.56)
	p := r.Performance
	qaNear(t, "time_in_position_pct", p.TimeInPositionPct, 50)
	qaNear(t, "max_drawdown", p.MaxDrawdown, 1.4)
	qaNear(t, "max_drawdown_percent", p.MaxDrawdownPercent, 14)
}
