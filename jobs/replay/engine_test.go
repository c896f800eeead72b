package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func ptr[T any](v T) *T { return &v }

// TestRunArithmetic pins the engine's numbers on small markets worked out by
// hand. Equity starts at positionSize; the notes give each step.
func TestRunArithmetic(t *testing.T) {
	t.Parallel()
	limit := func(s Strategy) Strategy { s.OrderType = OrderLimit; return s }
	tests := []struct {
		name   string
		market store.Market
		snaps  []store.Snapshot
		strat  Strategy
		trades []TradeEvent
		perf   *Performance  // checked when set
		curve  []EquityPoint // checked when set
	}{
		{
			// Entry walks three asks: 40×0.50 + 30×0.51 + 30×0.53 = 20 + 15.3 + 15.9
			// = 51.2 for 100 shares, fill 0.512, slippage 0.512-0.50 = 0.012.
			// Marked at the 0.49 bid: unrealized 100×(0.49-0.512) = -2.2, equity 97.8.
			// Exit sells 100 of the 100 at 0.59: pnl 100×(0.59-0.512) = 7.8,
			// slippage 0.60-0.59 = 0.01. pnl% 7.8/51.2 = 15.234375%. Drawdown
			// 2.2 from 100 = 2.2%. In position 0 s→10 s of a 20 s span: 50%.
			name:   "MARKET entry walks three ask levels",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 500)), levels(lv(0.50, 40), lv(0.51, 30), lv(0.53, 50)))),
				withUp(snap(10, 0.60, 0.40), book(levels(lv(0.59, 100), lv(0.58, 100)), levels(lv(0.61, 100)))),
				snap(20, 0.40, 0.60),
			},
			strat: strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.512, 100, 0),
				exitEv(ReasonSignal, 10, 0.6, 0.59, 100, 7.8, 7.8),
			},
			perf: &Performance{TotalPnL: 7.8, TotalPnLPercent: 15.234375, MaxDrawdown: 2.2, MaxDrawdownPercent: 2.2,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 7.8, BestTrade: 7.8, WorstTrade: 7.8,
				TimeInPositionPct: 50, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, -2.2, -2.2, 0.5, true),
				point(10, 7.8, 0, 0.6, false),
				point(20, 7.8, 0, 0.4, false),
			},
		},
		{
			// LIMIT at 0.50 takes only asks at or under it: 30×0.49 + 20×0.50 =
			// 14.7 + 10 = 24.7 for 50 shares, fill 0.494, slippage -0.006 (an
			// improvement); the rest is cancelled. Marked at 0.48: 50×(0.48-0.494)
			// = -0.7. Exit LIMIT at 0.70 finds 100 ≥ 50 at 0.70: pnl
			// 50×(0.70-0.494) = 10.3, pnl% 10.3/24.7 = 41.700405%.
			name:   "LIMIT entry fills part of the size",
			market: market(store.OutcomeDown),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.48, 1000)), levels(lv(0.49, 30), lv(0.50, 20), lv(0.51, 100)))),
				withUp(snap(10, 0.70, 0.30), book(levels(lv(0.70, 100)), levels(lv(0.71, 10)))),
			},
			strat: limit(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.7)))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.494, 50, 0),
				exitEv(ReasonSignal, 10, 0.7, 0.7, 50, 10.3, 10.3),
			},
			perf: &Performance{TotalPnL: 10.3, TotalPnLPercent: 41.700405, MaxDrawdown: 0.7, MaxDrawdownPercent: 0.7,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 10.3, BestTrade: 10.3, WorstTrade: 10.3,
				TimeInPositionPct: 100, FinalMarketOutcome: "Down"},
		},
		{
			// No book at entry: 100 at 0.50. A LIMIT exit's limit is the best
			// bid at the decision (DESIGN 6). At 10 s the exit signal holds,
			// limit 0.60, but the bids at or above it hold 40 < 100: nothing
			// fills (equity marked at 0.60: 110). At 20 s limit 0.62, which
			// holds 60: nothing (equity 112, the peak). At 30 s limit 0.61,
			// which holds 120: all 100 at 0.61, slippage 0.60-0.61 = -0.01,
			// pnl 11. Equity 111, drawdown 1 from 112 = 0.892857%.
			name:   "LIMIT exit that cannot fill waits, then fills",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				snap(0, 0.50, 0.50),
				withUp(snap(10, 0.60, 0.40), book(levels(lv(0.60, 40), lv(0.59, 100)), nil)),
				withUp(snap(20, 0.62, 0.38), book(levels(lv(0.62, 60), lv(0.61, 50), lv(0.55, 10)), nil)),
				withUp(snap(30, 0.60, 0.40), book(levels(lv(0.61, 120), lv(0.60, 30), lv(0.59, 500)), nil)),
			},
			strat: limit(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6)))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 100, 0),
				exitEv(ReasonSignal, 30, 0.6, 0.61, 100, 11, 11),
			},
			perf: &Performance{TotalPnL: 11, TotalPnLPercent: 22, MaxDrawdown: 1, MaxDrawdownPercent: 0.892857,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 11, BestTrade: 11, WorstTrade: 11,
				TimeInPositionPct: 100, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, 0, 0, 0.5, true),
				point(10, 10, 10, 0.6, true),
				point(20, 12, 12, 0.62, true),
				point(30, 11, 0, 0.6, false),
			},
		},
		{
			// The same books, exits at the ask as before DESIGN 6's revision
			// would have priced them: the limit 0.60 (the side's price) is
			// under the best bid at 30 s, so the old rule filled 0.607 there;
			// the bid rule waits for a bid that holds the whole position and
			// here, with 70 at 0.61, never finds one: MARKET_END at 1.
			name:   "LIMIT exit at the bid waits for the whole position at the best bid",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				snap(0, 0.50, 0.50),
				withUp(snap(30, 0.60, 0.40), book(levels(lv(0.61, 70), lv(0.60, 30), lv(0.59, 500)), nil)),
			},
			strat: limit(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6)))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 100, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 100,
					PositionPnL: 50, CumulativePnL: 50, CoinPrice: 50030},
			},
		},
		{
			// 0.40 then 0.60: previous at or below 0.5 and current above, so the
			// cross is on the second snapshot. Held to the end and settled at 1
			// (Up won): pnl 10×(1-0.6) = 4, at end_time, coin price from the last
			// snapshot because coin_price_end is not recorded.
			name:   "crosses_above fires on the second snapshot",
			market: market(store.OutcomeUp),
			snaps:  []store.Snapshot{snap(0, 0.40, 0.60), snap(10, 0.60, 0.40)},
			strat:  strategy(SideUp, 10, conds(cond(FieldPriceUp, OpCrossesAbove, 0.5)), never()),
			trades: []TradeEvent{
				entryEv(10, 0.6, 0.6, 10, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 10,
					PositionPnL: 4, CumulativePnL: 4, CoinPrice: 50010},
			},
		},
		{
			// 0.60 on the first snapshot is above 0.5 but has no previous tick;
			// 0.70 after 0.60 does not cross either.
			name:   "nothing crosses on the first snapshot",
			market: market(store.OutcomeUp),
			snaps:  []store.Snapshot{snap(0, 0.60, 0.40), snap(10, 0.70, 0.30)},
			strat:  strategy(SideUp, 10, conds(cond(FieldPriceUp, OpCrossesAbove, 0.5)), never()),
			trades: []TradeEvent{},
		},
		{
			// Entry 10 at 0.50 (no book), cost 5; the threshold is 20% of 5 = 1.
			// At 10 s marked at 0.44: loss 0.6, held. At 20 s marked at 0.40:
			// loss 10×0.10 = 1 ≥ 1 (within 1e-9), so MAX_LOSS before the exit
			// signal that also holds, and as a MARKET order though the strategy
			// is LIMIT: 5×0.40 + 5×0.38 = 3.9 → fill 0.39, slippage 0.42-0.39 =
			// 0.03, pnl 10×(0.39-0.50) = -1.1, pnl% -22. Drawdown 1.1 from 10 =
			// 11%. In position 20 s of 30 s.
			name:   "MAX_LOSS exits at MARKET before an exit signal",
			market: market(store.OutcomeDown),
			snaps: []store.Snapshot{
				snap(0, 0.50, 0.50),
				withUp(snap(10, 0.45, 0.55), book(levels(lv(0.44, 100)), nil)),
				withUp(snap(20, 0.42, 0.58), book(levels(lv(0.40, 5), lv(0.38, 100)), nil)),
				snap(30, 0.42, 0.58),
			},
			strat: func() Strategy {
				s := limit(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpLess, 0.43))))
				s.MaxLossPercent = 20
				return s
			}(),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 10, 0),
				exitEv(ReasonMaxLoss, 20, 0.42, 0.39, 10, -1.1, -1.1),
			},
			perf: &Performance{TotalPnL: -1.1, TotalPnLPercent: -22, MaxDrawdown: 1.1, MaxDrawdownPercent: 11,
				TotalTrades: 1, LosingTrades: 1, AvgTradePnL: -1.1, BestTrade: -1.1, WorstTrade: -1.1,
				TimeInPositionPct: 66.666667, FinalMarketOutcome: "Down"},
		},
		{
			// DOWN bought 100 at 0.50; Up won, so it settles at 0: pnl -50 at
			// end_time with coin_price_end. Equity 100 → 80 (marked at 0.30) →
			// 50: drawdown 50 = 50%. The curve ends with the settlement.
			name: "held to MARKET_END on the losing side",
			market: func() store.Market {
				m := market(store.OutcomeUp)
				m.CoinPriceEnd = ptr(50100.25)
				return m
			}(),
			snaps: []store.Snapshot{snap(0, 0.50, 0.50), snap(50, 0.70, 0.30)},
			strat: strategy(SideDown, 100, conds(cond(FieldPriceDown, OpGreaterOrEqual, 0.5)), never()),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 100, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 0, FillPrice: 0, Shares: 100,
					PositionPnL: -50, CumulativePnL: -50, CoinPrice: 50100.25},
			},
			perf: &Performance{TotalPnL: -50, TotalPnLPercent: -100, MaxDrawdown: 50, MaxDrawdownPercent: 50,
				TotalTrades: 1, LosingTrades: 1, AvgTradePnL: -50, BestTrade: -50, WorstTrade: -50,
				TimeInPositionPct: 100, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, 0, 0, 0.5, true),
				point(50, -20, -20, 0.3, true),
				{Time: ts(100), PnL: -50, Price: 0, CoinPrice: 50100.25},
			},
		},
		{
			// UP bought 100 at the 0.52 ask (slippage 0.02), marked at the 0.48
			// bid: equity 96, drawdown 4 = 4%. Up won: settles at 1, pnl 48,
			// pnl% 48/52 = 92.307692%.
			name:   "held to MARKET_END on the winning side",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.48, 100)), levels(lv(0.52, 100)))),
				snap(50, 0.80, 0.20),
			},
			strat: strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), never()),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.52, 100, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 100,
					PositionPnL: 48, CumulativePnL: 48, CoinPrice: 50050},
			},
			perf: &Performance{TotalPnL: 48, TotalPnLPercent: 92.307692, MaxDrawdown: 4, MaxDrawdownPercent: 4,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 48, BestTrade: 48, WorstTrade: 48,
				TimeInPositionPct: 100, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, -4, -4, 0.5, true),
				point(50, 28, 28, 0.8, true),
				{Time: ts(100), PnL: 48, Price: 1, CoinPrice: 50050},
			},
		},
		{
			// At 0 s the only ask is above the 0.50 limit: the entry is skipped,
			// not kept resting. At 10 s the conditions hold afresh and 0.50 asks
			// fill all 100.
			name:   "LIMIT entry with nothing at its price is skipped, then retried",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.51, 500)))),
				withUp(snap(10, 0.50, 0.50), book(nil, levels(lv(0.50, 100), lv(0.51, 500)))),
			},
			strat:  limit(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never())),
			trades: []TradeEvent{entryEv(10, 0.5, 0.5, 100, 0), {Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 100, PositionPnL: 50, CumulativePnL: 50, CoinPrice: 50010}},
		},
		{
			// DOWN walks the DOWN book, never the UP one: 60×0.40 + 40×0.41 =
			// 40.4, fill 0.404. Exit sells at the DOWN bid 0.45: pnl
			// 100×(0.45-0.404) = 4.6.
			name:   "DOWN trades against the DOWN book",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withDown(withUp(snap(0, 0.61, 0.40), book(levels(lv(0.60, 1000)), levels(lv(0.62, 1000)))),
					book(levels(lv(0.39, 1000)), levels(lv(0.40, 60), lv(0.41, 40)))),
				withDown(withUp(snap(10, 0.55, 0.46), book(levels(lv(0.54, 1000)), levels(lv(0.56, 1000)))),
					book(levels(lv(0.45, 1000)), levels(lv(0.47, 1000)))),
			},
			strat: strategy(SideDown, 100, conds(cond(FieldPriceDown, OpLessOrEqual, 0.4)), conds(cond(FieldPriceDown, OpGreater, 0.45))),
			trades: []TradeEvent{
				entryEv(0, 0.4, 0.404, 100, 0),
				exitEv(ReasonSignal, 10, 0.46, 0.45, 100, 4.6, 4.6),
			},
		},
		{
			// Snapshots recorded past end_time (100 s): the settlement follows
			// the last one, at 110 s, and the curve ends there too.
			name:   "settlement after snapshots recorded past end_time",
			market: market(store.OutcomeDown),
			snaps:  []store.Snapshot{snap(90, 0.30, 0.70), snap(110, 0.20, 0.80)},
			strat:  strategy(SideDown, 10, conds(cond(FieldTimeRemainingPct, OpLess, 0)), never()),
			trades: []TradeEvent{
				entryEv(110, 0.8, 0.8, 10, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(110), Price: 1, FillPrice: 1, Shares: 10, PositionPnL: 2, CumulativePnL: 2, CoinPrice: 50110},
			},
			curve: []EquityPoint{
				point(90, 0, 0, 0.7, false),
				point(110, 0, 0, 0.8, true),
				{Time: ts(110), PnL: 2, Price: 1, CoinPrice: 50110},
			},
		},
		{
			name:   "a strategy that never enters",
			market: market(store.OutcomeDown),
			snaps:  []store.Snapshot{snap(0, 0.50, 0.50), snap(10, 0.60, 0.40)},
			strat:  strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreater, 0.9)), never()),
			trades: []TradeEvent{},
			perf:   &Performance{FinalMarketOutcome: "Down"},
			curve:  []EquityPoint{point(0, 0, 0, 0.5, false), point(10, 0, 0, 0.6, false)},
		},
		{
			// The asks hold 30 + 20 = 50 of 100: the position is 50 shares,
			// 15 + 10.4 = 25.4, fill 0.508. The exit sells 10 at 0.60 and 10 at
			// 0.55, and the 30 the bids cannot take at the worst level, 0.55:
			// (6 + 5.5 + 16.5)/50 = 0.56, slippage 0.58-0.56 = 0.02, pnl
			// 50×(0.56-0.508) = 2.6, pnl% 2.6/25.4 = 10.23622%. Marked at 0.49
			// after entry: 50×(0.49-0.508) = -0.9, drawdown 0.9%.
			name:   "thin-book MARKET entry and an exit past the recorded bids",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 10)), levels(lv(0.50, 30), lv(0.52, 20)))),
				withUp(snap(10, 0.58, 0.42), book(levels(lv(0.60, 10), lv(0.55, 10)), nil)),
			},
			strat: strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.58))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.508, 50, 0),
				exitEv(ReasonSignal, 10, 0.58, 0.56, 50, 2.6, 2.6),
			},
			perf: &Performance{TotalPnL: 2.6, TotalPnLPercent: 10.23622, MaxDrawdown: 0.9, MaxDrawdownPercent: 0.9,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 2.6, BestTrade: 2.6, WorstTrade: 2.6,
				TimeInPositionPct: 100, FinalMarketOutcome: "Up"},
		},
		{
			// Asks of size 0 and -1 are not levels, so the entry fills at the
			// snapshot price; the exit's book has no bids, so it fills at the
			// snapshot price too. Both with zero slippage.
			name:   "no-book fills at the snapshot price",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.45, 0), lv(0.46, -1)))),
				withUp(snap(10, 0.60, 0.40), book(nil, levels(lv(0.61, 10)))),
			},
			strat: strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 100, 0),
				exitEv(ReasonSignal, 10, 0.6, 0.6, 100, 10, 10),
			},
		},
		{
			// Entry and exit conditions are the same, so every snapshot wants
			// an action; one per snapshot gives enter, exit, enter, exit, enter.
			// Trades +0.5, +0.5 and, settled at 0 since Down won, 10×(0-0.2) =
			// -2: total -1 over costs 4+3+2 = 9, -11.111111%. Equity 10 → 10.5 →
			// 11 (peak) → 9: drawdown 2, 18.181818%. In position 10+10+0 s of 40.
			name:   "re-entry after an exit, one action per snapshot",
			market: market(store.OutcomeDown),
			snaps: []store.Snapshot{
				snap(0, 0.40, 0.60), snap(10, 0.45, 0.55), snap(20, 0.30, 0.70), snap(30, 0.35, 0.65), snap(40, 0.20, 0.80),
			},
			strat: strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLess, 0.5)), conds(cond(FieldPriceUp, OpLess, 0.5))),
			trades: []TradeEvent{
				entryEv(0, 0.4, 0.4, 10, 0),
				exitEv(ReasonSignal, 10, 0.45, 0.45, 10, 0.5, 0.5),
				entryEv(20, 0.3, 0.3, 10, 0.5),
				exitEv(ReasonSignal, 30, 0.35, 0.35, 10, 0.5, 1),
				entryEv(40, 0.2, 0.2, 10, 1),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Shares: 10, PositionPnL: -2, CumulativePnL: -1, CoinPrice: 50040},
			},
			perf: &Performance{TotalPnL: -1, TotalPnLPercent: -11.111111, MaxDrawdown: 2, MaxDrawdownPercent: 18.181818,
				TotalTrades: 3, WinningTrades: 2, LosingTrades: 1, WinRate: 66.666667, AvgTradePnL: -0.333333,
				BestTrade: 0.5, WorstTrade: -2, TimeInPositionPct: 50, FinalMarketOutcome: "Down"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Run(tt.market, tt.snaps, tt.strat)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Trades, tt.trades) {
				t.Errorf("trades:\n got %+v\nwant %+v", r.Trades, tt.trades)
			}
			if tt.perf != nil && r.Performance != *tt.perf {
				t.Errorf("performance:\n got %+v\nwant %+v", r.Performance, *tt.perf)
			}
			if tt.curve != nil && !reflect.DeepEqual(r.PnLCurve, tt.curve) {
				t.Errorf("pnl_curve:\n got %+v\nwant %+v", r.PnLCurve, tt.curve)
			}
			if r.TotalSnapshots != len(tt.snaps) {
				t.Errorf("total_snapshots = %d, want %d", r.TotalSnapshots, len(tt.snaps))
			}
		})
	}
}

// firstEntry replays an entry condition that exits never and says at which
// second it first entered, or -1.
func firstEntry(t *testing.T, snaps []store.Snapshot, c Condition) int {
	t.Helper()
	r, err := Run(market(store.OutcomeUp), snaps, strategy(SideUp, 1, conds(c), never()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) == 0 {
		return -1
	}
	for sec := 0; sec <= 100; sec++ {
		if r.Trades[0].Time == ts(sec) {
			return sec
		}
	}
	t.Fatalf("entry at %s is not a whole second", r.Trades[0].Time)
	return 0
}

func TestOperators(t *testing.T) {
	t.Parallel()
	// price_up 0.40, 0.50, 0.60, 0.45 at 0, 10, 20, 30 s.
	snaps := []store.Snapshot{snap(0, 0.40, 0.6), snap(10, 0.50, 0.5), snap(20, 0.60, 0.4), snap(30, 0.45, 0.55)}
	tests := []struct {
		op    string
		value float64
		want  int // second of the first entry, -1 for none
	}{
		{OpLess, 0.5, 0},
		{OpGreater, 0.5, 20},
		{OpLessOrEqual, 0.5, 0},
		{OpGreaterOrEqual, 0.5, 10},
		{OpEqual, 0.5, 10},
		{OpEqual, 0.5 + 5e-10, 10}, // within 1e-9
		{OpEqual, 0.5 + 2e-9, -1},
		{OpCrossesAbove, 0.5, 20}, // 0.50 → 0.60: previous at the value counts
		{OpCrossesAbove, 0.35, -1},
		{OpCrossesBelow, 0.5, 30}, // 0.60 → 0.45
		{OpCrossesBelow, 0.6, 30}, // 0.60 → 0.45: previous at the value counts
		{OpCrossesBelow, 0.45, -1},
	}
	for _, tt := range tests {
		if got := firstEntry(t, snaps, cond(FieldPriceUp, tt.op, tt.value)); got != tt.want {
			t.Errorf("price_up %s %v: entered at %d s, want %d", tt.op, tt.value, got, tt.want)
		}
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	// At 0 s: up 0.60, down 0.35, spread 0.25, 100% left, coin 50000.
	// At 25 s: up 0.62, down 0.35, spread 0.27, 75% left, coin 50025.
	// At 50 s: up 0.50, down 0.45, spread 0.05, 50% left, coin 50050.
	snaps := []store.Snapshot{snap(0, 0.60, 0.35), snap(25, 0.62, 0.35), snap(50, 0.50, 0.45)}
	tests := []struct {
		field string
		value float64
		want  int
	}{
		{FieldPriceUp, 0.62, 25},
		{FieldPriceDown, 0.45, 50},
		{FieldCoinPrice, 50025, 25},
		{FieldSpread, 0.27, 25},
		{FieldSpread, 0.05, 50},
		{FieldTimeRemainingPct, 100, 0},
		{FieldTimeRemainingPct, 75, 25},
		{FieldTimeRemainingPct, 50, 50},
	}
	for _, tt := range tests {
		if got := firstEntry(t, snaps, cond(tt.field, OpEqual, tt.value)); got != tt.want {
			t.Errorf("%s == %v: entered at %d s, want %d", tt.field, tt.value, got, tt.want)
		}
	}
	// Spread is |up - down|, whichever is larger.
	if got := firstEntry(t, []store.Snapshot{snap(0, 0.3, 0.6)}, cond(FieldSpread, OpEqual, 0.3)); got != 0 {
		t.Errorf("spread of 0.3 and 0.6: entered at %d, want 0", got)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	ok := strategy(SideUp, 1, conds(cond(FieldPriceUp, OpLess, 0.5)), never())
	snaps := []store.Snapshot{snap(0, 0.4, 0.6)}
	code := func(err error) string {
		var e *Error
		if errors.As(err, &e) {
			return e.Code
		}
		return ""
	}

	unresolved := market(store.OutcomeUp)
	unresolved.Winner = nil
	if _, err := Run(unresolved, snaps, ok); code(err) != CodeMarketNotResolved {
		t.Errorf("unresolved market: %v, want %s", err, CodeMarketNotResolved)
	}
	if _, err := Run(market(store.OutcomeUp), nil, ok); code(err) != CodeNoData {
		t.Errorf("no snapshots: %v, want %s", err, CodeNoData)
	}
	bad := ok
	bad.Side = "up"
	if _, err := Run(market(store.OutcomeUp), snaps, bad); code(err) != CodeInvalidSide {
		t.Errorf("bad strategy: %v, want %s", err, CodeInvalidSide)
	}
	unsorted := []store.Snapshot{snap(10, 0.4, 0.6), snap(0, 0.4, 0.6)}
	if _, err := Run(market(store.OutcomeUp), unsorted, ok); err == nil || code(err) != "" {
		t.Errorf("unsorted snapshots: %v, want a plain error", err)
	}
	nan := []store.Snapshot{snap(0, math.NaN(), 0.6)}
	if _, err := Run(market(store.OutcomeUp), nan, ok); err == nil || code(err) != "" {
		t.Errorf("NaN price: %v, want a plain error", err)
	}
}

// TestRunDefaults checks that Run applies the defaults itself: a strategy
// without maxLossPercent stops out at 50%, and without orderType is MARKET.
func TestRunDefaults(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		snap(0, 0.50, 0.5),
		withUp(snap(10, 0.30, 0.7), book(levels(lv(0.26, 100)), nil)), // loss 0.24/0.5 = 48%: held
		withUp(snap(20, 0.30, 0.7), book(levels(lv(0.25, 100)), nil)), // 50%: MAX_LOSS
	}
	r, err := Run(market(store.OutcomeUp), snaps, strategy(SideUp, 10, conds(cond(FieldPriceUp, OpEqual, 0.5)), never()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Strategy.OrderType != OrderMarket || len(r.Trades) != 2 || r.Trades[1].Reason != ReasonMaxLoss || r.Trades[1].Time != ts(20) {
		t.Errorf("got strategy %+v trades %+v, want MARKET and a MAX_LOSS exit at 20 s", r.Strategy, r.Trades)
	}
}

func TestRunLeavesInputsAlone(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{
		withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 5)), levels(lv(0.50, 40), lv(0.51, 30)))),
		withUp(snap(10, 0.60, 0.40), book(levels(lv(0.59, 10), lv(0.58, 10)), nil)),
	}
	s := strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6)))
	m := market(store.OutcomeUp)
	wantSnaps := deepCopy(snaps)
	wantS := s
	wantS.EntryConditions = append([]Condition(nil), s.EntryConditions...)
	wantS.ExitConditions = append([]Condition(nil), s.ExitConditions...)
	for range 2 {
		if _, err := Run(m, snaps, s); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(snaps, wantSnaps) {
		t.Error("Run changed the snapshots")
	}
	if !reflect.DeepEqual(s, wantS) {
		t.Errorf("Run changed the strategy: %+v", s)
	}
}

func deepCopy(snaps []store.Snapshot) []store.Snapshot {
	out := make([]store.Snapshot, len(snaps))
	for i, s := range snaps {
		for _, b := range []**store.Book{&s.BookUp, &s.BookDown} {
			if *b != nil {
				c := store.Book{Bids: append([]store.Level(nil), (*b).Bids...), Asks: append([]store.Level(nil), (*b).Asks...)}
				*b = &c
			}
		}
		out[i] = s
	}
	return out
}

func TestCurveIndices(t *testing.T) {
	t.Parallel()
	evs := func(idx ...int) []int32 {
		out := make([]int32, len(idx))
		for i, x := range idx {
			out[i] = int32(x)
		}
		return out
	}
	tests := []struct {
		name   string
		n      int
		events []int32 // the snapshots the events are visible from
		budget int
		want   []int // nil: check only the invariants
		maxGap int   // when set, the most snapshots between two points
	}{
		{name: "all fit", n: 5, events: evs(1, 3), budget: 5, want: []int{0, 1, 2, 3, 4}},
		{name: "evenly spaced plus trades and the last", n: 10, events: evs(3, 7), budget: 5, want: []int{0, 3, 5, 7, 9}},
		{name: "trades alone exceed the budget", n: 10, events: evs(1, 2, 3, 4, 5, 6, 10), budget: 3, want: []int{0, 3, 9}},
		{name: "trades alone exceed the budget, one on the first snapshot", n: 10, events: evs(0, 1, 2, 3, 4, 5, 6), budget: 4, want: []int{0, 3, 5, 9}},
		// Trading on every snapshot of the first hour, then holding to the
		// end: half the points still cover the hold.
		{name: "trades early, then a long hold", n: 288000, events: evs(seq(12000)...), budget: 1000, maxGap: 2 * 288000 / 1000},
		{name: "large", n: 288000, events: evs(5, 6, 100000, 287999, 288000), budget: 999},
		{name: "trade on every snapshot", n: 5000, events: evs(seq(5000)...), budget: 1000},
		// Every evenly spaced point (k·10/5: 0, 2, 4, 6, 8) falls on a
		// trade snapshot: the budget is filled from the others.
		{name: "evenly spaced points on trade snapshots", n: 10, events: evs(0, 2, 4), budget: 6, want: []int{0, 1, 2, 4, 5, 9}},
		{name: "trades on every other snapshot", n: 1332, events: evs(evens(666)...), budget: 1000, maxGap: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := curveIndices(tt.n, tt.events, tt.budget)
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if len(got) > tt.budget || len(got) > tt.n {
				t.Errorf("%d indices, budget %d", len(got), tt.budget)
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("not strictly ascending at %d: %v", i, got[i-1:i+1])
				}
			}
			if want := min(tt.n, tt.budget); len(got) != want {
				t.Errorf("%d indices, want %d: every point the curve may have is used", len(got), want)
			}
			if got[len(got)-1] != tt.n-1 {
				t.Errorf("last index %d, want %d", got[len(got)-1], tt.n-1)
			}
			if got[0] != 0 {
				t.Errorf("first index %d, want 0: the curve starts at the first snapshot", got[0])
			}
			for i := 1; tt.maxGap > 0 && i < len(got); i++ {
				if got[i]-got[i-1] > tt.maxGap {
					t.Errorf("no point between snapshots %d and %d: a gap of over %d", got[i-1], got[i], tt.maxGap)
					break
				}
			}
			if len(tt.events) < tt.budget {
				have := map[int]bool{}
				for _, i := range got {
					have[i] = true
				}
				for _, at := range tt.events {
					if int(at) < tt.n && !have[int(at)] {
						t.Errorf("trade snapshot %d missing", at)
					}
				}
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// evens is 0, 2, 4, … : n of them.
func evens(n int) []int {
	out := seq(n)
	for i := range out {
		out[i] *= 2
	}
	return out
}

func TestRound6(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want float64 }{
		{0.1234564, 0.123456},
		{0.1234565001, 0.123457},
		{-0.0000001, 0}, // not -0
		{math.NaN(), 0},
		{math.Inf(-1), 0},
		{1e300, 1e300},
		{97123.456789123, 97123.456789},
	}
	for _, tt := range tests {
		got := round6(tt.in)
		if got != tt.want || math.Signbit(got) != math.Signbit(tt.want) {
			t.Errorf("round6(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestTradeEventsBounded: an answer lists at most MaxTradeEvents trade
// events, the first and the last half, says so and counts them all; pages
// of tradesOffset and tradesLimit put the full list back together.
func TestTradeEventsBounded(t *testing.T) {
	t.Parallel()
	// Enter at 0.50 and exit at 0.60 on alternate snapshots: 1,200
	// snapshots make 1,200 events.
	var snaps []store.Snapshot
	for i := range 1200 {
		up := 0.50
		if i%2 == 1 {
			up = 0.60
		}
		s := snap(0, up, 1-up)
		s.Time = t0.Add(time.Duration(i) * 50 * time.Millisecond)
		snaps = append(snaps, s)
	}
	s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6)))
	full, err := runFull(t, market(store.OutcomeUp), snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Trades) != 1200 || full.TradesTruncated {
		t.Fatalf("full: %d events, truncated %v", len(full.Trades), full.TradesTruncated)
	}
	r, err := Run(market(store.OutcomeUp), snaps, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != MaxTradeEvents || !r.TradesTruncated || r.Performance.TradeEvents == nil || *r.Performance.TradeEvents != 1200 {
		t.Fatalf("default: %d events, truncated %v, count %v", len(r.Trades), r.TradesTruncated, r.Performance.TradeEvents)
	}
	if !reflect.DeepEqual(r.Trades[:500], full.Trades[:500]) || !reflect.DeepEqual(r.Trades[500:], full.Trades[700:]) {
		t.Error("the default answer is not the first and last 500 events")
	}
	if a, err := r.AppendJSON(nil); err != nil || string(a) != string(mustJSON(t, r)) {
		t.Errorf("AppendJSON of a truncated answer differs from json.Marshal: %v", err)
	}
	// Pages through a request, as the api passes them on.
	var all []TradeEvent
	for offset := 0; offset < 1300; offset += 400 {
		body := fmt.Sprintf(`{"marketSlug":"m","side":"UP","positionSize":10,"tradesOffset":%d,"tradesLimit":400,
			"entryConditions":[{"field":"price_up","operator":"<=","value":0.5}],"exitConditions":[{"field":"price_up","operator":">=","value":0.6}]}`, offset)
		var req Request
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		if err := req.Normalize(); err != nil {
			t.Fatal(err)
		}
		page, err := RunWindow(inputOf(t, market(store.OutcomeUp), snaps, nil, req.Strategy), req.Strategy, req.Window())
		if err != nil {
			t.Fatal(err)
		}
		if !page.TradesTruncated || *page.Performance.TradeEvents != 1200 {
			t.Errorf("page at %d: truncated %v", offset, page.TradesTruncated)
		}
		all = append(all, page.Trades...)
	}
	if !reflect.DeepEqual(all, full.Trades) {
		t.Errorf("the pages hold %d events, not the full list", len(all))
	}
	for _, bad := range []string{`"tradesOffset":-1`, `"tradesLimit":0`, `"tradesLimit":1001`, `"tradesOffset":1.5`} {
		var req Request
		err := json.Unmarshal([]byte(`{"marketSlug":"m","side":"UP","positionSize":10,`+bad+`,
			"entryConditions":[{"field":"price_up","operator":"<=","value":0.5}],"exitConditions":[{"field":"price_up","operator":">=","value":0.6}]}`), &req)
		if err == nil {
			err = req.Validate()
		}
		var re *Error
		if !errors.As(err, &re) || re.Code != CodeValidation || !strings.HasPrefix(bad, `"`+re.Field+`"`) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestMinOrderSizeWarning: Polymarket refuses an order under the market's
// minimum order size (5 shares on its crypto markets), so a replay that
// trades a smaller positionSize there says its trades could not have been
// placed as sized, and on a market with none recorded (an import without
// it) measures against Polymarket's usual 5 shares, saying so; at the
// minimum, or without a trade, it says nothing.
func TestMinOrderSizeWarning(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{snap(0, 0.50, 0.50), snap(10, 0.60, 0.40)}
	withMin := func(min float64) store.Market { m := market(store.OutcomeUp); m.MinOrderSize = &min; return m }
	enter := conds(cond(FieldPriceUp, OpLessOrEqual, 0.5))
	tests := []struct {
		name   string
		market store.Market
		strat  Strategy
		want   string // in the warning; "" none
	}{
		{"under the minimum", withMin(5), strategy(SideUp, 3, enter, never()), "positionSize 3 is under this market's minimum order size of 5 shares"},
		{"a fraction under", withMin(5), strategy(SideUp, 4.99, enter, never()), "positionSize 4.99 is under"},
		{"a resting order under the minimum", withMin(5), gtc(strategy(SideUp, 2, enter, never())), "positionSize 2 is under"},
		{"at the minimum", withMin(5), strategy(SideUp, 5, enter, never()), ""},
		{"no minimum recorded", market(store.OutcomeUp), strategy(SideUp, 3, enter, never()), "positionSize 3 is under Polymarket's usual minimum order size of 5 shares (this market has none recorded)"},
		{"no minimum recorded, at 5", market(store.OutcomeUp), strategy(SideUp, 5, enter, never()), ""},
		{"no trade", withMin(5), strategy(SideUp, 3, conds(cond(FieldPriceUp, OpLess, 0.1)), never()), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Run(tt.market, snaps, tt.strat)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, w := range r.Warnings {
				if strings.Contains(w, "minimum order size") {
					got = w
				}
			}
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("warnings %q, want one with %q", r.Warnings, tt.want)
			}
		})
	}
}
