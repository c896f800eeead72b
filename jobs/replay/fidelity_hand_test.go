package replay

import (
	"math"
	"testing"

	"github.com/updown/updown/store"
)

// Costs worked out by hand from REFERENCE (Polymarket's taker fee
// shares × rate × (p(1−p))^exponent per fill, rounded down to 5 decimals;
// makers pay none and earn a rebate; settlement at 1/0/0.5 with no fee)
// and DESIGN 6, for cases the other hand tests leave out: extreme prices,
// a walk whose per-level fee differs from the fee on its average, a
// delayed stop loss executing on a snapshot without a book, a GTC that
// crosses at activation, maker rebates near 1, limits off a changed tick.

// A MARKET entry walking two levels far apart pays each level's fee, not
// the fee at the average price; a sell at 0.99 and a buy at 0.01 pay the
// curve's tiny fee at the extreme.
func TestHandFeeExtremes(t *testing.T) {
	t.Parallel()
	t.Run("per level, not on the average", func(t *testing.T) {
		t.Parallel()
		snaps := []store.Snapshot{
			withUp(snap(0, 0.10, 0.90), book(levels(lv(0.09, 100)), levels(lv(0.10, 5), lv(0.90, 100)))),
			withUp(snap(10, 0.995, 0.005), book(levels(lv(0.99, 100)), levels(lv(0.995, 100)))),
		}
		s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.10)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.99)))
		s.FeeModel = FeeMarket
		r, err := runFull(t, feeMarket("Up"), snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Trades) != 2 {
			t.Fatalf("%d trade events: %+v", len(r.Trades), r.Trades)
		}
		en, ex := r.Trades[0], r.Trades[1]
		// 5 × 0.10 + 5 × 0.90 = 5.00 over 10 shares
		qaNear(t, "entry fill", en.FillPrice, 0.50)
		qaNear(t, "entry slippage", en.Slippage, 0.40)
		// 5 × 0.07 × 0.10 × 0.90 + 5 × 0.07 × 0.90 × 0.10 = 0.0315 + 0.0315 = 0.063
		// (on the average price it would be 10 × 0.07 × 0.25 = 0.175)
		qaNear(t, "entry fee", en.Fee, 0.063)
		// 10 × 0.07 × 0.99 × 0.01 = 0.00693
		qaNear(t, "exit fill", ex.FillPrice, 0.99)
		qaNear(t, "exit fee", ex.Fee, 0.00693)
		// 10 × (0.99 − 0.50) − 0.063 − 0.00693 = 4.83007
		qaNear(t, "pnl", ex.PositionPnL, 4.83007)
		p := r.Performance
		qaNear(t, "total_fees", p.TotalFees, 0.06993)
		// over the entry cost 5.00 + 0.063
		qaNear(t, "total_pnl_percent", p.TotalPnLPercent, round6(4.83007/5.063*100))
	})
	t.Run("a buy at 0.01 on a 0.001 tick, held to a win", func(t *testing.T) {
		t.Parallel()
		snaps := []store.Snapshot{
			withDown(snap(0, 0.99, 0.01), book(levels(lv(0.009, 100)), levels(lv(0.01, 3), lv(0.011, 100)))),
			withDown(snap(10, 0.90, 0.10), book(levels(lv(0.09, 100)), levels(lv(0.10, 100)))),
		}
		s := strategy(SideDown, 7, conds(cond(FieldPriceDown, OpLessOrEqual, 0.01)), never())
		s.FeeModel = FeeMarket
		r, err := runFull(t, feeMarket("Down"), snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		en, ex := r.Trades[0], r.Trades[1]
		// 3 × 0.01 + 4 × 0.011 = 0.074 over 7
		qaNear(t, "entry fill", en.FillPrice, round6(0.074/7))
		// 3 × 0.07 × 0.01 × 0.99 + 4 × 0.07 × 0.011 × 0.989
		//   = 0.002079 + 0.00304612 = 0.00512512 → 0.00512
		qaNear(t, "entry fee", en.Fee, 0.00512)
		if ex.Reason != ReasonMarketEnd {
			t.Fatalf("exit %+v, want MARKET_END", ex)
		}
		// the winner settles at 1 with no fee: 7 × 1 − 0.074 − 0.00512
		qaNear(t, "settle", ex.FillPrice, 1)
		qaNear(t, "settle fee", ex.Fee, 0)
		qaNear(t, "pnl", ex.PositionPnL, 6.92088)
		qaNear(t, "total_fees", r.Performance.TotalFees, 0.00512)
	})
	t.Run("a fee under a unit of the 5th decimal rounds to 0", func(t *testing.T) {
		t.Parallel()
		// 5 × 0.07 × 0.001 × 0.999 = 0.00034965 → 0.00034; the loser settles at 0
		snaps := []store.Snapshot{
			withUp(snap(0, 0.001, 0.999), book(nil, levels(lv(0.001, 100)))),
			snap(10, 0.001, 0.999),
		}
		s := strategy(SideUp, 5, conds(cond(FieldPriceUp, OpLessOrEqual, 0.001)), never())
		s.FeeModel = FeeMarket
		r, err := runFull(t, feeMarket("Down"), snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		en, ex := r.Trades[0], r.Trades[1]
		qaNear(t, "entry fee", en.Fee, 0.00034)
		qaNear(t, "settle", ex.FillPrice, 0)
		// 5 × (0 − 0.001) − 0.00034
		qaNear(t, "pnl", ex.PositionPnL, -0.00534)
		qaNear(t, "total_pnl_percent", r.Performance.TotalPnLPercent, -100)
	})
}

// A 50-50 market settles at 0.5 a share with no fee at settlement; the
// entry's fee stays in the pnl and in the cost total_pnl_percent divides by.
func TestHandFiftyFiftyWithFees(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.40, 0.60), book(levels(lv(0.39, 100)), levels(lv(0.40, 100)))),
		withUp(snap(10, 0.45, 0.55), book(levels(lv(0.44, 100)), levels(lv(0.45, 100)))),
	}
	s := customFee(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.4)), never()), 0.07, 1)
	r, err := runFull(t, market(store.OutcomeFiftyFifty), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	en, ex := r.Trades[0], r.Trades[1]
	// 10 × 0.07 × 0.4 × 0.6 = 0.168
	qaNear(t, "entry fee", en.Fee, 0.168)
	qaNear(t, "settle", ex.FillPrice, 0.5)
	qaNear(t, "settle fee", ex.Fee, 0)
	// 10 × (0.5 − 0.4) − 0.168 = 0.832
	qaNear(t, "pnl", ex.PositionPnL, 0.832)
	qaNear(t, "total_pnl_percent", r.Performance.TotalPnLPercent, round6(0.832/4.168*100))
}

// A MAX_LOSS decided at 2 s (at its mark, the best bid 0.20) executes with
// latency 1 s on the snapshot at 3 s, which has no book: it fills at that
// snapshot's price for the whole position, and that pair pays the fee; the
// event's price is the deciding snapshot's (0.21), so the slippage shows
// what the delay cost (here it gained).
func TestHandDelayedStopWithoutBook(t *testing.T) {
	t.Parallel()
	bk := func(s store.Snapshot, bid, ask float64) store.Snapshot {
		return withUp(s, book(levels(lv(bid, 100)), levels(lv(ask, 100))))
	}
	snaps := []store.Snapshot{
		bk(snapMs(0, 0.50, 0.50), 0.49, 0.50),    // entry decided
		bk(snapMs(1000, 0.50, 0.50), 0.49, 0.50), // fills 10 @0.50
		bk(snapMs(2000, 0.21, 0.79), 0.20, 0.21), // mark 0.20: MAX_LOSS decided
		snapMs(2500, 0.35, 0.65),                 // before the due time
		snapMs(3000, 0.25, 0.75),                 // no book: sells at 0.25
		bk(snapMs(4000, 0.60, 0.40), 0.59, 0.60),
	}
	s := customFee(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never()), 0.07, 1)
	s.LatencyMs, s.MaxLossPercent = 1000, 50
	r, err := runFull(t, market("Up"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != 2 {
		t.Fatalf("%d trade events: %+v", len(r.Trades), r.Trades)
	}
	en, ex := r.Trades[0], r.Trades[1]
	// entry: 10 × 0.07 × 0.25 = 0.175; cost 5.175; 50% = 2.5875;
	// at 2 s the loss is 5.175 − 10 × 0.20 = 3.175 ≥ 2.5875
	qaNear(t, "entry fee", en.Fee, 0.175)
	if ex.Reason != ReasonMaxLoss || ex.Time != formatTime(qaAt(3000)) {
		t.Fatalf("exit %s at %s, want MAX_LOSS at 3 s", ex.Reason, ex.Time)
	}
	qaNear(t, "exit price", ex.Price, 0.21)
	qaNear(t, "exit fill", ex.FillPrice, 0.25)
	qaNear(t, "exit slippage", ex.Slippage, 0.21-0.25)
	// 10 × 0.07 × 0.25 × 0.75 = 0.13125
	qaNear(t, "exit fee", ex.Fee, 0.13125)
	// 10 × (0.25 − 0.50) − 0.175 − 0.13125 = −2.80625
	qaNear(t, "pnl", ex.PositionPnL, -2.80625)
	qaNear(t, "total_fees", r.Performance.TotalFees, 0.30625)
}

// A GTC entry decided at 0 s (best bid 0.48, two ticks up: L = 0.50) and
// live at 1 s finds asks at 0.49 and 0.50 there: it crosses, so it
// executes as a LIMIT taker at 0.50 on that book and pays the taker fee
// per level; nothing rests.
func TestHandGTCCrossesAtActivation(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snapMs(0, 0.51, 0.49), book(levels(lv(0.48, 100)), levels(lv(0.51, 100)))),
		withUp(snapMs(1000, 0.49, 0.51), book(levels(lv(0.47, 100)), levels(lv(0.49, 4), lv(0.50, 10), lv(0.51, 100)))),
		withUp(snapMs(2000, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.55, 100)))),
	}
	s := customFee(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.51)), never()), 0.07, 1)
	s.OrderType, s.LimitOffsetTicks, s.LatencyMs = OrderGTC, 2, 1000
	r, err := runFull(t, market("Up"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	en := r.Trades[0]
	if en.Time != formatTime(qaAt(1000)) || en.Liquidity != "TAKER" {
		t.Fatalf("entry %+v, want a TAKER fill at 1 s", en)
	}
	// 4 × 0.49 + 6 × 0.50 = 4.96 over 10
	qaNear(t, "fill", en.FillPrice, 0.496)
	// against the deciding snapshot's price 0.51
	qaNear(t, "slippage", en.Slippage, 0.496-0.51)
	// 4 × 0.07 × 0.49 × 0.51 + 6 × 0.07 × 0.50 × 0.50 = 0.069972 + 0.105 = 0.174972 → 0.17497
	qaNear(t, "fee", en.Fee, 0.17497)
	if en.MakerRebate != nil && *en.MakerRebate != 0 {
		t.Errorf("a taker fill has maker_rebate %v", *en.MakerRebate)
	}
	if len(r.Orders) != 2 || r.Orders[0].Action != OrderPlaced || r.Orders[1].Action != OrderFilled {
		t.Fatalf("orders %+v, want PLACED then FILLED", r.Orders)
	}
	qaNear(t, "placed at", r.Orders[0].Price, 0.50)
	qaNear(t, "filled at", r.Orders[1].Price, 0.496)
	// settles at 1: 10 × (1 − 0.496) − 0.17497
	qaNear(t, "pnl", r.Trades[1].PositionPnL, 5.04-0.17497)
}

// Maker fills near 1: a resting BUY at 0.95 and a resting SELL at 0.99,
// each filled by a taker trade at its price, pay no fee and earn
// floor₅(shares × 0.07 × L(1 − L) × 0.2); with includeRebates both count
// in the exit's pnl.
func TestHandMakerRebatesNearOne(t *testing.T) {
	t.Parallel()
	bk := func(s store.Snapshot, bid, ask float64) store.Snapshot {
		return withUp(s, book(levels(lv(bid, 100)), levels(lv(ask, 100))))
	}
	snaps := []store.Snapshot{
		bk(snap(0, 0.97, 0.03), 0.95, 0.97), // BUY 10 @0.95 placed
		bk(snap(2, 0.97, 0.03), 0.95, 0.97), // (filled at 1 s)
		bk(snap(4, 0.99, 0.01), 0.98, 0.99), // SELL 10 @0.99 placed
		bk(snap(6, 0.99, 0.01), 0.98, 0.99), // (filled at 5 s)
		bk(snap(8, 0.99, 0.01), 0.98, 0.99),
	}
	tr := func(sec int, price float64, side string) store.MarketTrade {
		return store.MarketTrade{Time: at(sec), Outcome: store.OutcomeUp, Price: price, Size: 10, Side: side}
	}
	trades := []store.MarketTrade{tr(1, 0.95, store.SideSell), tr(5, 0.99, store.SideBuy)}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.97)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.99)))
	s.OrderType, s.QueueModel, s.IncludeRebates, s.FeeModel = OrderGTC, QueueFront, true, FeeMarket
	m := feeMarket("Up")
	m.MakerRebateRate = ptr(0.2)
	r, err := runFull(t, m, snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != 2 {
		t.Fatalf("%d trade events: %+v", len(r.Trades), r.Trades)
	}
	en, ex := r.Trades[0], r.Trades[1]
	if en.Time != ts(1) || ex.Time != ts(5) || en.Liquidity != "MAKER" || ex.Liquidity != "MAKER" {
		t.Fatalf("entry %+v exit %+v, want MAKER fills at 1 s and 5 s", en, ex)
	}
	qaNear(t, "entry fee", en.Fee, 0)
	qaNear(t, "exit fee", ex.Fee, 0)
	if en.MakerRebate == nil || ex.MakerRebate == nil {
		t.Fatal("a maker fill without maker_rebate")
	}
	// 10 × 0.07 × 0.95 × 0.05 × 0.2 = 0.00665
	qaNear(t, "entry rebate", *en.MakerRebate, 0.00665)
	// 10 × 0.07 × 0.99 × 0.01 × 0.2 = 0.001386 → 0.00138
	qaNear(t, "exit rebate", *ex.MakerRebate, 0.00138)
	// 10 × (0.99 − 0.95) + 0.00665 + 0.00138 = 0.40803
	qaNear(t, "pnl", ex.PositionPnL, 0.40803)
	p := r.Performance
	if p.TotalMakerRebates == nil {
		t.Fatal("no total_maker_rebates")
	}
	qaNear(t, "total_maker_rebates", *p.TotalMakerRebates, 0.00803)
	qaNear(t, "total_fees", p.TotalFees, 0)
	// entry cost 9.5, no fee, the rebates not in it
	qaNear(t, "total_pnl_percent", p.TotalPnLPercent, round6(0.40803/9.5*100))
}

// The tick goes to 0.001 at 0 s and back to 0.01 at 5 s. A GTC entry
// decided at 10 s on a best bid left from the finer tick (0.953), one tick
// up, is 0.963: off the 0.01 grid in force, so it joins the grid on the
// passive side, 0.96. The exit placed at a best ask of 0.977 with offset 1
// is 0.967, up to 0.97.
func TestHandLimitOffChangedTick(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.97, 0.03), book(levels(lv(0.95, 100)), levels(lv(0.97, 100)))),
		withUp(snap(10, 0.97, 0.03), book(levels(lv(0.953, 100)), levels(lv(0.97, 100)))),
		withUp(snap(20, 0.98, 0.02), book(levels(lv(0.96, 100)), levels(lv(0.977, 100)))),
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.97), cond(FieldTimeRemainingPct, OpLess, 95)),
		conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.98)))
	s.OrderType, s.LimitOffsetTicks, s.QueueModel = OrderGTC, 1, QueueFront
	m := market("Up")
	m.TickSizeChanges = []store.TickSizeChange{{Time: at(0), TickSize: 0.001}, {Time: at(5), TickSize: 0.01}}
	trades := []store.MarketTrade{{Time: at(15), Outcome: store.OutcomeUp, Price: 0.96, Size: 10, Side: store.SideSell}}
	r, err := runFull(t, m, snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Orders) < 3 {
		t.Fatalf("orders %+v", r.Orders)
	}
	qaNear(t, "entry limit", r.Orders[0].Price, 0.96)
	qaNear(t, "entry fill", r.Trades[0].FillPrice, 0.96)
	qaNear(t, "exit limit", r.Orders[2].Price, 0.97)
}

// A GTC BUY decided at 0 s (best bid 0.40, 100 shown) goes live with
// latency 1 s at the snapshot at 1 s, whose book shows 30 at 0.40: that is
// its queue. A taker sale at 0.40 between decision and activation counts
// for nothing; after it, 35 at 0.40 clears the 30 ahead and counts 5, 2
// more at 0.40 make 7, and a sale through the limit at 0.39 counts its
// whole 3 although nothing stands ahead any longer: 10, filled at 3 s, at
// 0.40, as a maker.
func TestHandGTCQueueAfterLatency(t *testing.T) {
	t.Parallel()
	bk := func(bid float64) *store.Book {
		return book(levels(lv(0.40, bid), lv(0.39, 100)), levels(lv(0.42, 100)))
	}
	snaps := []store.Snapshot{
		withUp(snapMs(0, 0.42, 0.58), bk(100)),
		withUp(snapMs(1000, 0.42, 0.58), bk(30)),
		withUp(snapMs(2000, 0.42, 0.58), bk(500)),
		withUp(snapMs(4000, 0.42, 0.58), bk(500)),
	}
	tr := func(ms int, price, size float64) store.MarketTrade {
		return store.MarketTrade{Time: qaAt(ms), Outcome: store.OutcomeUp, Price: price, Size: size, Side: store.SideSell}
	}
	trades := []store.MarketTrade{
		tr(500, 0.40, 60),  // before activation: not evidence
		tr(1500, 0.40, 35), // Q 30 → 0, 5 counted
		tr(2500, 0.40, 2),  // 7
		tr(3000, 0.39, 3),  // through the limit: 10, fills
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.42)), never())
	s.OrderType, s.LatencyMs, s.FeeModel = OrderGTC, 1000, FeeMarket
	r, err := runFull(t, feeMarket("Up"), snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	en := r.Trades[0]
	if en.Time != formatTime(qaAt(3000)) || en.Liquidity != LiquidityMaker {
		t.Fatalf("entry %+v, want a maker fill at 3 s", en)
	}
	qaNear(t, "fill", en.FillPrice, 0.40)
	qaNear(t, "slippage", en.Slippage, 0) // DESIGN 6: a maker fill is at L, slippage 0
	qaNear(t, "fee", en.Fee, 0)
	// settles at 1: 10 × 0.60
	qaNear(t, "pnl", r.Trades[1].PositionPnL, 6)
}

// A resting SELL exit is cancelled when MAX_LOSS hits at the mark; the
// stop is a MARKET taker exit walking the bids, paying the taker fee per
// level. The entry was a maker fill (no fee), so the stop's threshold is
// on the entry cost 10 × 0.50 = 5; with includeRebates the entry's rebate
// counts in the exit's pnl, never in that threshold.
func TestHandStopCancelsRestingExit(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.52, 0.48), book(levels(lv(0.50, 100)), levels(lv(0.52, 100)))), // BUY 10 @0.50 (FRONT)
		withUp(snap(2, 0.56, 0.44), book(levels(lv(0.54, 100)), levels(lv(0.56, 100)))), // exit: SELL 10 @0.56 rests
		withUp(snap(4, 0.30, 0.70), book(levels(lv(0.25, 6), lv(0.20, 100)), levels(lv(0.30, 100)))),
		withUp(snap(6, 0.30, 0.70), book(levels(lv(0.25, 100)), levels(lv(0.30, 100)))),
	}
	trades := []store.MarketTrade{{Time: at(1), Outcome: store.OutcomeUp, Price: 0.50, Size: 10, Side: store.SideSell}}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.52)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.56)))
	s.OrderType, s.QueueModel, s.MaxLossPercent, s.FeeModel = OrderGTC, QueueFront, 40, FeeMarket
	s.MaxEntriesPerMarket, s.IncludeRebates = 1, true
	m := feeMarket("Down")
	m.MakerRebateRate = ptr(0.2)
	r, err := runFull(t, m, snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != 2 {
		t.Fatalf("%d trade events: %+v", len(r.Trades), r.Trades)
	}
	en, ex := r.Trades[0], r.Trades[1]
	if en.Time != ts(1) || en.Liquidity != LiquidityMaker {
		t.Fatalf("entry %+v, want a maker fill at 1 s", en)
	}
	// at 4 s: loss 5 − 10 × 0.25 = 2.5 ≥ 40% of 5 = 2
	if ex.Reason != ReasonMaxLoss || ex.Time != ts(4) || ex.Liquidity != LiquidityTaker {
		t.Fatalf("exit %+v, want a TAKER MAX_LOSS at 4 s", ex)
	}
	// 6 × 0.25 + 4 × 0.20 = 2.3 over 10
	qaNear(t, "exit fill", ex.FillPrice, 0.23)
	qaNear(t, "exit slippage", ex.Slippage, 0.30-0.23)
	// 6 × 0.07 × 0.25 × 0.75 + 4 × 0.07 × 0.20 × 0.80 = 0.07875 + 0.0448 = 0.12355
	qaNear(t, "exit fee", ex.Fee, 0.12355)
	// entry rebate 10 × 0.07 × 0.50 × 0.50 × 0.2 = 0.035; the taker exit earns none
	if en.MakerRebate == nil {
		t.Fatal("the maker entry has no maker_rebate")
	}
	qaNear(t, "entry rebate", *en.MakerRebate, 0.035)
	if ex.MakerRebate != nil && *ex.MakerRebate != 0 {
		t.Errorf("the taker exit has maker_rebate %v", *ex.MakerRebate)
	}
	// 10 × (0.23 − 0.50) − 0.12355 + 0.035
	qaNear(t, "pnl", ex.PositionPnL, -2.78855)
	var cancelled bool
	for _, o := range r.Orders {
		if o.Action == OrderCancelled && o.Side == "SELL" && o.Reason == OrderReasonMaxLoss {
			cancelled = true
			qaNear(t, "cancelled at", o.Price, 0.56)
		}
	}
	if !cancelled {
		t.Errorf("orders %+v, want the resting SELL cancelled for MAX_LOSS", r.Orders)
	}
}

// A LIMIT entry of 7.5 shares decided at 0 s (limit: the best ask 0.50)
// executes with latency 1 s on the book at 1 s, which moved: it takes the
// 3 at 0.49 and the 2 at 0.50, not the 0.51 above its limit, and the rest
// is cancelled; each level pays its fee, and the price and slippage are
// the deciding snapshot's. The 5 shares are the position.
func TestHandLimitEntryAcrossMovedBook(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snapMs(0, 0.50, 0.50), book(levels(lv(0.48, 100)), levels(lv(0.50, 100)))),
		withUp(snapMs(1000, 0.49, 0.51), book(levels(lv(0.47, 100)), levels(lv(0.49, 3), lv(0.50, 2), lv(0.51, 100)))),
		withUp(snapMs(2000, 0.60, 0.40), book(levels(lv(0.58, 1), lv(0.57, 100)), levels(lv(0.60, 100)))),
	}
	s := customFee(strategy(SideUp, 7.5, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), 0.07, 1)
	s.OrderType, s.LatencyMs = OrderLimit, 1000
	r, err := runFull(t, market("Up"), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	en := r.Trades[0]
	if en.Time != formatTime(qaAt(1000)) {
		t.Fatalf("entry at %s, want 1 s", en.Time)
	}
	qaNear(t, "shares", en.Shares, 5)
	// 3 × 0.49 + 2 × 0.50 = 2.47 over 5
	qaNear(t, "fill", en.FillPrice, 0.494)
	qaNear(t, "price", en.Price, 0.50)
	qaNear(t, "slippage", en.Slippage, 0.494-0.50)
	// 3 × 0.07 × 0.49 × 0.51 + 2 × 0.07 × 0.25 = 0.052479 + 0.035 = 0.087479 → 0.08747
	qaNear(t, "fee", en.Fee, 0.08747)
	// The exit decided at 2 s has no snapshot after it to execute on: the
	// 5 shares settle at 1 with no fee.
	ex := r.Trades[1]
	if ex.Reason != ReasonMarketEnd {
		t.Fatalf("exit %+v, want MARKET_END", ex)
	}
	// 5 × (1 − 0.494) − 0.08747 = 2.44253
	qaNear(t, "pnl", ex.PositionPnL, 2.44253)
	qaNear(t, "total_pnl_percent", r.Performance.TotalPnLPercent, round6(2.44253/(2.47+0.08747)*100))
}

// Near 1 on the 0.001 tick: a GTC BUY ten ticks over a best bid of 0.995
// would be 1.005, capped at 1 − tick = 0.999; that crosses the asks, so it
// takes them as a LIMIT at 0.999, paying the curve's fee at 0.997 and
// 0.998.
func TestHandGTCCapNearOne(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.997, 0.003), book(levels(lv(0.995, 50)), levels(lv(0.997, 4), lv(0.998, 100)))),
		withUp(snap(10, 0.998, 0.002), book(levels(lv(0.996, 50)), levels(lv(0.998, 100)))),
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.997)), never())
	s.OrderType, s.LimitOffsetTicks, s.FeeModel = OrderGTC, 10, FeeMarket
	m := feeMarket("Up")
	m.TickSizeChanges = []store.TickSizeChange{{Time: at(0), TickSize: 0.001}}
	r, err := runFull(t, m, snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Orders) != 2 || r.Orders[1].Action != OrderFilled {
		t.Fatalf("orders %+v, want PLACED then FILLED", r.Orders)
	}
	qaNear(t, "limit", r.Orders[0].Price, 0.999)
	en := r.Trades[0]
	if en.Liquidity != LiquidityTaker {
		t.Fatalf("entry %+v, want a taker fill", en)
	}
	// 4 × 0.997 + 6 × 0.998 = 3.988 + 5.988 = 9.976 over 10
	qaNear(t, "fill", en.FillPrice, 0.9976)
	// 4 × 0.07 × 0.997 × 0.003 + 6 × 0.07 × 0.998 × 0.002 = 0.00083748 + 0.00083832 = 0.0016758 → 0.00167
	qaNear(t, "fee", en.Fee, 0.00167)
	// settles at 1: 10 − 9.976 − 0.00167
	qaNear(t, "pnl", r.Trades[1].PositionPnL, 0.02233)
}

// Polymarket's published fee table for its first crypto curve (5- and
// 15-minute markets, early 2026: rate 0.25, exponent 2; docs.polymarket.com
// /trading/fees of that time) lists the fee on a trade of 100 shares at
// each price, in cents (at 0.05 to a tenth of a cent). Its figures hold
// only with the extra factor p: at 0.50, 100 × 0.25 × 0.5 × 0.25² =
// 0.78125 ($0.78), where 100 × 0.25 × 0.25² would be 1.56. A MARKET entry
// of 100 shares without a book pays its fee at the snapshot's price.
func TestHandCryptoCurveFeeTable(t *testing.T) {
	t.Parallel()
	table := []struct{ p, fee, unit float64 }{
		{0.01, 0.00, 0.01}, {0.05, 0.003, 0.001}, {0.10, 0.02, 0.01}, {0.15, 0.06, 0.01}, {0.20, 0.13, 0.01},
		{0.25, 0.22, 0.01}, {0.30, 0.33, 0.01}, {0.35, 0.45, 0.01}, {0.40, 0.58, 0.01}, {0.45, 0.69, 0.01},
		{0.50, 0.78, 0.01}, {0.55, 0.84, 0.01}, {0.60, 0.86, 0.01}, {0.65, 0.84, 0.01}, {0.70, 0.77, 0.01},
		{0.75, 0.66, 0.01}, {0.80, 0.51, 0.01}, {0.85, 0.35, 0.01}, {0.90, 0.18, 0.01}, {0.95, 0.05, 0.01},
		{0.99, 0.00, 0.01},
	}
	for _, row := range table {
		snaps := []store.Snapshot{snap(0, row.p, 1-row.p), snap(10, row.p, 1-row.p)}
		s := strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, row.p)), never())
		s.FeeModel = FeeMarket
		r, err := runFull(t, cryptoV1Market("Up"), snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		if fee := r.Trades[0].Fee; math.Abs(fee-row.fee) > row.unit/2+1e-9 {
			t.Errorf("100 shares at %.2f: fee %.5f, Polymarket's table %.3f", row.p, fee, row.fee)
		}
	}
}
