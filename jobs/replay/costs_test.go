package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// feeMarket is market(winner) with Polymarket's crypto fee schedule:
// rate 0.07, exponent 1, so a share taken at p pays 0.07·p·(1−p).
func feeMarket(winner string) store.Market {
	m := market(winner)
	m.TakerFeeRate, m.FeeExponent = ptr(0.07), ptr(1)
	return m
}

// cryptoV1Market is market(winner) with Polymarket's first crypto fee
// curve (early 2026): shares × 0.25 × p × (p(1−p))².
func cryptoV1Market(winner string) store.Market {
	m := market(winner)
	m.TakerFeeRate, m.FeeExponent, m.FeeType = ptr(store.FeeTypeCryptoRate), ptr(store.FeeTypeCryptoExponent), store.FeeTypeCrypto
	return m
}

// costs sets a strategy's fee model and latency.
func costs(s Strategy, model string, latencyMs int) Strategy {
	s.FeeModel, s.LatencyMs = model, latencyMs
	return s
}

// withFee gives a trade event the fee the answer shows.
func withFee(tr TradeEvent, fee float64) TradeEvent { tr.Fee = fee; return tr }

// atMs is a snapshot at a whole millisecond, for latency tests.
func atMs(ms int, up, down float64) store.Snapshot {
	s := snap(0, up, down)
	s.Time = t0.Add(time.Duration(ms) * time.Millisecond)
	s.CoinPrice = 50000 + float64(ms)/1000
	return s
}

// TestRunCosts pins fees, latency and 50-50 settlement (DESIGN 6) on small
// markets worked out by hand. Fees are 0.07·p·(1−p) a share unless said
// otherwise, summed per fill and rounded down to 5 decimals.
func TestRunCosts(t *testing.T) {
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
			// TestRunArithmetic's first case with MARKET fees. Entry walks three
			// asks: 40×0.0175 + 30×0.07×0.51×0.49 + 30×0.07×0.53×0.47 = 0.7 +
			// 0.52479 + 0.52311 = 1.7479; entry cost 51.2 + 1.7479 = 52.9479.
			// Marked at 0.49: unrealized 100×(0.49−0.512) − 1.7479 = −3.9479.
			// Exit at 0.59: fee 100×0.07×0.59×0.41 = 1.6933; pnl 7.8 − 1.7479 −
			// 1.6933 = 4.3588; pnl% 4.3588/52.9479 = 8.232243%.
			name:   "MARKET entry walks three ask levels, paying each level's fee",
			market: feeMarket(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 500)), levels(lv(0.50, 40), lv(0.51, 30), lv(0.53, 50)))),
				withUp(snap(10, 0.60, 0.40), book(levels(lv(0.59, 100), lv(0.58, 100)), levels(lv(0.61, 100)))),
				snap(20, 0.40, 0.60),
			},
			strat: costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.512, 100, 0), 1.7479),
				withFee(exitEv(ReasonSignal, 10, 0.6, 0.59, 100, 4.3588, 4.3588), 1.6933),
			},
			perf: &Performance{TotalPnL: 4.3588, TotalPnLPercent: 8.232243, TotalFees: 3.4412, MaxDrawdown: 3.9479, MaxDrawdownPercent: 3.9479,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 4.3588, BestTrade: 4.3588, WorstTrade: 4.3588,
				TimeInPositionPct: 50, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, -3.9479, -3.9479, 0.5, true),
				point(10, 4.3588, 0, 0.6, false),
				point(20, 4.3588, 0, 0.4, false),
			},
		},
		{
			// No book: 3 shares at 0.51 pay 3×0.07×0.51×0.49 = 0.052479, rounded
			// down to 0.05247; the exit at 0.60 pays 3×0.07×0.24 = 0.0504. pnl
			// 3×0.09 − 0.05247 − 0.0504 = 0.16713.
			name:   "no-book fills pay the fee at the snapshot price, rounded down",
			market: feeMarket(store.OutcomeUp),
			snaps:  []store.Snapshot{snap(0, 0.51, 0.49), snap(10, 0.60, 0.40)},
			strat:  costs(strategy(SideUp, 3, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.51, 0.51, 3, 0), 0.05247),
				withFee(exitEv(ReasonSignal, 10, 0.6, 0.6, 3, 0.16713, 0.16713), 0.0504),
			},
		},
		{
			// 10,000 shares at 0.93 pay 10000×0.07×0.93×0.07 = 45.57 exactly;
			// the float product falls a hair under it (45.569999999999979),
			// further than 1e-9 of a unit at this size, and must not round
			// down to 45.56999. Held to the end: 10000×0.07 − 45.57 = 654.43.
			name:   "a large fee on the 5-decimal grid is not rounded a unit down",
			market: feeMarket(store.OutcomeUp),
			snaps:  []store.Snapshot{snap(0, 0.93, 0.07)},
			strat:  costs(strategy(SideUp, 10000, conds(cond(FieldPriceUp, OpGreater, 0.9)), never()), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.93, 0.93, 10000, 0), 45.57),
				withFee(TradeEvent{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 10000,
					PositionPnL: 654.43, CumulativePnL: 654.43, CoinPrice: 50000}, 0),
			},
		},
		{
			// Polymarket's first crypto curve (fee type crypto_fees): rate 0.25,
			// exponent 2 and a factor p. Entry walks 40 at 0.50 and 60 at 0.52:
			// 40×0.25×0.5×0.25² = 0.3125 + 60×0.25×0.52×0.2496² = 0.485941248,
			// 0.798441248 rounded down to 0.79844; fill 0.512. The exit at 0.60
			// (no book) pays 100×0.25×0.6×0.24² = 0.864. pnl 8.8 − 0.79844 −
			// 0.864 = 7.13756.
			name:   "MARKET fees of the crypto_fees curve carry the extra factor p",
			market: cryptoV1Market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 500)), levels(lv(0.50, 40), lv(0.52, 60)))),
				snap(10, 0.60, 0.40),
			},
			strat: costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.512, 100, 0), 0.79844),
				withFee(exitEv(ReasonSignal, 10, 0.6, 0.6, 100, 7.13756, 7.13756), 0.864),
			},
		},
		{
			// CUSTOM rate 0.1, exponent 2: 100×0.1×0.25² = 0.625 at 0.50 and
			// 100×0.1×0.24² = 0.576 at 0.60; pnl 10 − 1.201 = 8.799. The
			// market's own schedule is not used.
			name:   "CUSTOM rate and exponent",
			market: feeMarket(store.OutcomeUp),
			snaps:  []store.Snapshot{snap(0, 0.50, 0.50), snap(10, 0.60, 0.40)},
			strat: func() Strategy {
				s := costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), FeeCustom, 0)
				s.FeeRate, s.FeeExponent = ptr(0.1), 2
				return s
			}(),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.5, 100, 0), 0.625),
				withFee(exitEv(ReasonSignal, 10, 0.6, 0.6, 100, 8.799, 8.799), 0.576),
			},
		},
		{
			// Entry (thin) 30 at 0.50 and 20 at 0.52: fee 0.525 + 0.34944 =
			// 0.87444. The exit sells 10 at 0.60, 10 at 0.55 and the 30 the bids
			// cannot take at the worst level, 0.55, paying 0.55's fee on them:
			// 0.168 + 0.17325 + 0.51975 = 0.861. pnl 2.6 − 0.87444 − 0.861 =
			// 0.86456; pnl% 0.86456/26.27444 = 3.290498%.
			name:   "thin MARKET exit: the remainder pays the worst level's fee",
			market: feeMarket(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(levels(lv(0.49, 10)), levels(lv(0.50, 30), lv(0.52, 20)))),
				withUp(snap(10, 0.58, 0.42), book(levels(lv(0.60, 10), lv(0.55, 10)), nil)),
			},
			strat: costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.58))), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.508, 50, 0), 0.87444),
				withFee(exitEv(ReasonSignal, 10, 0.58, 0.56, 50, 0.86456, 0.86456), 0.861),
			},
			perf: &Performance{TotalPnL: 0.86456, TotalPnLPercent: 3.290498, TotalFees: 1.73544, MaxDrawdown: 1.77444, MaxDrawdownPercent: 1.77444,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 0.86456, BestTrade: 0.86456, WorstTrade: 0.86456,
				TimeInPositionPct: 100, FinalMarketOutcome: "Up"},
		},
		{
			// 100 at 0.50 with no book: fee 1.75, entry cost 51.75, a 10% stop
			// at a loss of 5.175. At 10 s the bid is 0.46: loss 51.75 − 46 =
			// 5.75, a MAX_LOSS (without the fee the loss is 4 of a 5 stop: see
			// the next case). Sold at 0.46: fee 100×0.07×0.46×0.54 = 1.7388,
			// pnl −4 − 1.75 − 1.7388 = −7.4888.
			name:   "MAX_LOSS reached only because the entry fee counts",
			market: feeMarket(store.OutcomeUp),
			snaps: []store.Snapshot{
				snap(0, 0.50, 0.50),
				withUp(snap(10, 0.47, 0.53), book(levels(lv(0.46, 200)), levels(lv(0.48, 200)))),
				snap(20, 0.47, 0.53),
			},
			strat: func() Strategy {
				s := costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpEqual, 0.5)), never()), FeeMarket, 0)
				s.MaxLossPercent = 10
				return s
			}(),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.5, 100, 0), 1.75),
				withFee(exitEv(ReasonMaxLoss, 10, 0.47, 0.46, 100, -7.4888, -7.4888), 1.7388),
			},
		},
		{
			// The same without fees: a loss of 4 under the stop of 5 holds the
			// position to the end (Up won: 100×(1 − 0.5) = 50).
			name:   "the same position without fees stays open",
			market: feeMarket(store.OutcomeUp),
			snaps: []store.Snapshot{
				snap(0, 0.50, 0.50),
				withUp(snap(10, 0.47, 0.53), book(levels(lv(0.46, 200)), levels(lv(0.48, 200)))),
				snap(20, 0.47, 0.53),
			},
			strat: func() Strategy {
				s := costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpEqual, 0.5)), never()), FeeNone, 0)
				s.MaxLossPercent = 10
				return s
			}(),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.5, 0.5, 100, 0), 0),
				withFee(TradeEvent{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 100,
					PositionPnL: 50, CumulativePnL: 50, CoinPrice: 50020}, 0),
			},
		},
		{
			// Latency 5 s. The entry decided at 0 s (price 0.50, asks at 0.50)
			// executes at 5 s, the first snapshot at or after 0 + 5 s, against
			// its book: 60×0.61 + 40×0.63 = 61.8, fill 0.618, slippage against
			// the deciding price 0.618 − 0.50 = 0.118. The exit condition holds
			// at 5 s but nothing is checked on the execution snapshot; it holds
			// at 10 s (0.62), and the sell executes at 15 s into its 0.64 bid:
			// slippage 0.62 − 0.64 = −0.02, pnl 100×(0.64 − 0.618) = 2.2. At
			// 12 s the position is marked at 0.30, a loss of 31.8 past the
			// default 50% stop (30.9), yet nothing is decided while the exit
			// waits. Equity peaks at 100.2 (10 s: 100×(0.62 − 0.618)) and falls
			// to 68.2 (12 s): drawdown 32, 31.936128%.
			name:   "latency moves the fill to a later, worse book",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 500)))),
				withUp(snap(3, 0.55, 0.45), book(nil, levels(lv(0.55, 500)))),
				withUp(snap(5, 0.60, 0.40), book(nil, levels(lv(0.61, 60), lv(0.63, 40)))),
				snap(10, 0.62, 0.38),
				snap(12, 0.30, 0.70),
				withUp(snap(15, 0.65, 0.35), book(levels(lv(0.64, 100)), nil)),
			},
			strat: costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), "", 5000),
			trades: []TradeEvent{
				withFee(TradeEvent{Type: TradeEntry, Reason: ReasonSignal, Time: ts(5), Price: 0.5, FillPrice: 0.618, Shares: 100,
					Slippage: 0.118, CoinPrice: 50005}, 0),
				withFee(TradeEvent{Type: TradeExit, Reason: ReasonSignal, Time: ts(15), Price: 0.62, FillPrice: 0.64, Shares: 100,
					Slippage: -0.02, PositionPnL: 2.2, CumulativePnL: 2.2, CoinPrice: 50015}, 0),
			},
			perf: &Performance{TotalPnL: 2.2, TotalPnLPercent: 3.559871, TotalFees: 0, MaxDrawdown: 32, MaxDrawdownPercent: 31.936128,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 2.2, BestTrade: 2.2, WorstTrade: 2.2,
				TimeInPositionPct: 66.666667, FinalMarketOutcome: "Up"},
			curve: []EquityPoint{
				point(0, 0, 0, 0.5, false),
				point(3, 0, 0, 0.55, false),
				point(5, -1.8, -1.8, 0.6, true),
				point(10, 0.2, 0.2, 0.62, true),
				point(12, -31.8, -31.8, 0.3, true),
				point(15, 2.2, 0, 0.65, false),
			},
		},
		{
			// Latency 250 ms on snapshots 300 ms apart: the entry decided at 0
			// executes at 300 ms (0.52, no book); the exit decided at 600 ms
			// finds no snapshot at or after 850 ms, so it never executes and
			// the position settles at MARKET_END (Down won: 0).
			name:   "an exit past the last snapshot never executes",
			market: market(store.OutcomeDown),
			snaps:  []store.Snapshot{atMs(0, 0.50, 0.50), atMs(300, 0.52, 0.48), atMs(600, 0.70, 0.30)},
			strat:  costs(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.6))), FeeMarket, 250),
			trades: []TradeEvent{
				withFee(TradeEvent{Type: TradeEntry, Reason: ReasonSignal, Time: formatTime(t0.Add(300 * time.Millisecond)), Price: 0.5,
					FillPrice: 0.52, Shares: 10, Slippage: 0.02, CoinPrice: 50000.3}, 0),
				withFee(TradeEvent{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 0, FillPrice: 0, Shares: 10,
					PositionPnL: -5.2, CumulativePnL: -5.2, CoinPrice: 50000.6}, 0),
			},
		},
		{
			// An entry decided on the last snapshot finds none after it.
			name:   "an entry past the last snapshot never executes",
			market: market(store.OutcomeDown),
			snaps:  []store.Snapshot{atMs(0, 0.60, 0.40), atMs(300, 0.50, 0.50)},
			strat:  costs(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never()), "", 1),
			trades: []TradeEvent{},
			perf:   &Performance{TotalFees: 0, FinalMarketOutcome: "Down"},
		},
		{
			// A LIMIT entry at 0.50 would fill at the signal's own book. After
			// 1 s the asks start at 0.52: nothing at or under 0.50, so nothing
			// fills; evaluation resumes at 2 s, where the entry no longer holds.
			name:   "a LIMIT entry that fills at the signal does not after the delay",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 100)))),
				withUp(snap(1, 0.52, 0.48), book(nil, levels(lv(0.52, 100)))),
				withUp(snap(2, 0.51, 0.49), book(nil, levels(lv(0.51, 100)))),
			},
			strat:  limit(costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never()), "", 1000)),
			trades: []TradeEvent{},
		},
		{
			// The same without latency fills 100 at 0.50 on the signal.
			name:   "the same LIMIT entry without latency fills",
			market: market(store.OutcomeUp),
			snaps: []store.Snapshot{
				withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 100)))),
				withUp(snap(1, 0.52, 0.48), book(nil, levels(lv(0.52, 100)))),
				withUp(snap(2, 0.51, 0.49), book(nil, levels(lv(0.51, 100)))),
			},
			strat: limit(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never())),
			trades: []TradeEvent{
				entryEv(0, 0.5, 0.5, 100, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 1, FillPrice: 1, Shares: 100, PositionPnL: 50, CumulativePnL: 50, CoinPrice: 50002},
			},
		},
		{
			// A tie settles at 0.5 a share, with no fee: UP bought 100 at 0.40
			// paying 100×0.07×0.24 = 1.68; pnl 100×(0.5 − 0.4) − 1.68 = 8.32,
			// pnl% 8.32/41.68 = 19.961612%. Marked at 0.40 after the entry
			// (no book): −1.68, the drawdown.
			name:   "a 50-50 market settles at 0.5",
			market: feeMarket(store.OutcomeFiftyFifty),
			snaps:  []store.Snapshot{snap(0, 0.40, 0.60), snap(50, 0.50, 0.50)},
			strat:  costs(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLess, 0.5)), never()), FeeMarket, 0),
			trades: []TradeEvent{
				withFee(entryEv(0, 0.4, 0.4, 100, 0), 1.68),
				withFee(TradeEvent{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 0.5, FillPrice: 0.5, Shares: 100,
					PositionPnL: 8.32, CumulativePnL: 8.32, CoinPrice: 50050}, 0),
			},
			perf: &Performance{TotalPnL: 8.32, TotalPnLPercent: 19.961612, TotalFees: 1.68, MaxDrawdown: 1.68, MaxDrawdownPercent: 1.68,
				TotalTrades: 1, WinningTrades: 1, WinRate: 100, AvgTradePnL: 8.32, BestTrade: 8.32, WorstTrade: 8.32,
				TimeInPositionPct: 100, FinalMarketOutcome: "50-50"},
		},
		{
			// DOWN settles at 0.5 too, and without a fee model the answer
			// carries no fee fields: 10×(0.5 − 0.6) = −1.
			name:   "a 50-50 market settles DOWN at 0.5",
			market: market(store.OutcomeFiftyFifty),
			snaps:  []store.Snapshot{snap(0, 0.40, 0.60)},
			strat:  strategy(SideDown, 10, conds(cond(FieldPriceDown, OpGreater, 0.5)), never()),
			trades: []TradeEvent{
				entryEv(0, 0.6, 0.6, 10, 0),
				{Type: TradeExit, Reason: ReasonMarketEnd, Time: ts(100), Price: 0.5, FillPrice: 0.5, Shares: 10,
					PositionPnL: -1, CumulativePnL: -1, CoinPrice: 50000},
			},
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
				t.Errorf("trades:\n got %s\nwant %s", mustJSON(t, r.Trades), mustJSON(t, tt.trades))
			}
			if tt.perf != nil && !reflect.DeepEqual(r.Performance, *tt.perf) {
				t.Errorf("performance:\n got %s\nwant %s", mustJSON(t, r.Performance), mustJSON(t, *tt.perf))
			}
			if tt.curve != nil && !reflect.DeepEqual(r.PnLCurve, tt.curve) {
				t.Errorf("pnl_curve:\n got %+v\nwant %+v", r.PnLCurve, tt.curve)
			}
			checkInvariants(t, tt.name, tt.market, tt.snaps, r)
			checkAgainstReference(t, tt.name, tt.market, tt.snaps, tt.strat, r)
		})
	}
}

// TestRunEchoesCosts pins what the answer says of the cost model: nothing
// when none was asked for, the model and latency when one was, and the
// schedule that applied.
func TestRunEchoesCosts(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{snap(0, 0.5, 0.5), snap(10, 0.6, 0.4)}
	base := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never())
	custom := costs(base, FeeCustom, 0)
	custom.FeeRate = ptr(0.02)
	tests := []struct {
		name string
		m    store.Market
		s    Strategy
		want string
	}{
		{"nothing asked", feeMarket(store.OutcomeUp), base, `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"NONE","latencyMs":0}`},
		{"NONE", feeMarket(store.OutcomeUp), costs(base, FeeNone, 0), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"NONE","latencyMs":0}`},
		{"latency alone", feeMarket(store.OutcomeUp), costs(base, "", 300), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"NONE","latencyMs":300}`},
		{"MARKET", feeMarket(store.OutcomeUp), costs(base, FeeMarket, 250), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"MARKET","feeRate":0.07,"feeExponent":1,"latencyMs":250}`},
		{"MARKET of the crypto_fees curve", cryptoV1Market(store.OutcomeUp), costs(base, FeeMarket, 0), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"MARKET","feeRate":0.25,"feeExponent":2,"feeType":"crypto_fees","latencyMs":0}`},
		{"CUSTOM on a crypto_fees market", cryptoV1Market(store.OutcomeUp), func() Strategy { s := costs(base, FeeCustom, 0); s.FeeRate, s.FeeExponent = ptr(0.1), 1; return s }(), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"CUSTOM","feeRate":0.1,"feeExponent":1,"latencyMs":0}`},
		{"MARKET without a schedule", market(store.OutcomeUp), costs(base, FeeMarket, 0), `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"MARKET","feeRate":0,"feeExponent":1,"latencyMs":0}`},
		{"CUSTOM", feeMarket(store.OutcomeUp), custom, `{"side":"UP","positionSize":10,"orderType":"MARKET","entryConditionCount":1,"exitConditionCount":1,"feeModel":"CUSTOM","feeRate":0.02,"feeExponent":1,"latencyMs":0}`},
	}
	for _, tt := range tests {
		r, err := Run(tt.m, snaps, tt.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(mustJSON(t, r.Strategy)); got != tt.want {
			t.Errorf("%s: strategy\n got %s\nwant %s", tt.name, got, tt.want)
		}
		b := mustJSON(t, r)
		// DESIGN 6: every trade carries fee and performance total_fees,
		// whether or not the request names a fee model.
		if !bytes.Contains(b, []byte(`"fee"`)) || !bytes.Contains(b, []byte(`"total_fees"`)) {
			t.Errorf("%s: fee fields missing: %s", tt.name, b)
		}
		// MARKET fees on a market without a recorded schedule charge
		// nothing, and say so, and how the operator fills the schedule.
		warned := slices.ContainsFunc(r.Warnings, func(w string) bool {
			return strings.Contains(w, "no recorded taker fee schedule") && strings.Contains(w, "updown markets fill-fees")
		})
		if want := tt.s.FeeModel == FeeMarket && tt.m.TakerFeeRate == nil; warned != want {
			t.Errorf("%s: warnings %q; want the no-schedule warning: %v", tt.name, r.Warnings, want)
		}
	}
}

// TestRunNoneEqualsNoCosts replays random strategies on random markets
// three ways: as today (no fee model, no latency), with feeModel NONE and
// latency 0 named explicitly, and with MARKET fees on a market whose
// schedule is rate 0. The three answers are the same bytes once the cost
// fields the request named are taken out, and those fields are all 0.
// TestRunGolden pins the first way to the engine before costs existed.
func TestRunNoneEqualsNoCosts(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(12, 16))
	cases := propertyCases(300, 50)
	for c := range cases {
		n := 1 + rng.IntN(80)
		if c%6 == 0 {
			n = 900 + rng.IntN(1500)
		}
		m, snaps := randomMarket(rng, n)
		s := randomStrategy(rng, snaps[0].CoinPrice)
		want, err := runFull(t, m, snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		zero := m
		zero.TakerFeeRate, zero.FeeExponent = ptr(0.0), ptr(2)
		for _, variant := range []struct {
			model string
			m     store.Market
		}{{FeeNone, m}, {FeeMarket, zero}, {FeeMarket, m}} {
			got, err := runFull(t, variant.m, snaps, nil, costs(s, variant.model, 0))
			if err != nil {
				t.Fatal(err)
			}
			for k := range got.Trades {
				if f := got.Trades[k].Fee; f != 0 {
					t.Fatalf("case %d %s: trade %d fee %v", c, variant.model, k, f)
				}
			}
			if f := got.Performance.TotalFees; f != 0 {
				t.Fatalf("case %d %s: total_fees %v", c, variant.model, f)
			}
			got.Strategy.FeeModel, got.Strategy.FeeRate, got.Strategy.FeeExponent = want.Strategy.FeeModel, nil, nil
			if variant.model == FeeMarket && variant.m.TakerFeeRate == nil {
				got.Warnings = slices.DeleteFunc(got.Warnings, func(w string) bool { return strings.Contains(w, "no recorded taker fee schedule") })
			}
			if a, b := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(a, b) {
				t.Fatalf("case %d (n=%d) %s differs from the answer without costs:\n%s\n%s", c, n, variant.model, a, b)
			}
		}
	}
}

// TestRunCostsProperties replays random strategies with random fee models
// and latencies over random markets (some with fee schedules, some 50-50)
// against the reference transcription of DESIGN 6, with the invariants
// every replay keeps.
func TestRunCostsProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 12))
	cases := propertyCases(400, 60)
	var fees, firstCurve, delayed, traded int
	for c := range cases {
		n := 1 + rng.IntN(60)
		if c%5 == 0 {
			n = 900 + rng.IntN(1500)
		}
		m, snaps := randomMarket(rng, n)
		switch rng.IntN(4) {
		case 0: // no schedule
		case 1:
			m.TakerFeeRate, m.FeeExponent = ptr(0.07), ptr(1)
		case 2:
			m.TakerFeeRate = ptr(float64(rng.IntN(30)) / 100)
		default:
			m.TakerFeeRate, m.FeeExponent = ptr(float64(rng.IntN(100))/100), ptr(1+rng.IntN(4))
		}
		if m.TakerFeeRate != nil && rng.IntN(3) == 0 {
			// Polymarket's first crypto curve: the schedule's fee times p.
			m.FeeType = store.FeeTypeCrypto
		}
		if rng.IntN(6) == 0 {
			tie := store.OutcomeFiftyFifty
			m.Winner = &tie
		}
		s := randomStrategy(rng, snaps[0].CoinPrice)
		s.FeeModel = []string{"", FeeNone, FeeMarket, FeeMarket, FeeCustom}[rng.IntN(5)]
		if s.FeeModel == FeeCustom {
			s.FeeRate = ptr(float64(rng.IntN(101)) / 100)
			s.FeeExponent = rng.IntN(5) // 0: the default
		}
		if rng.IntN(3) > 0 {
			s.LatencyMs = []int{1, 250, 300, 600, 1000, 5000, rng.IntN(MaxLatencyMs + 1)}[rng.IntN(7)]
		}
		name := fmt.Sprintf("case %d (n=%d, %s, %d ms)", c, n, s.FeeModel, s.LatencyMs)
		r, err := runFull(t, m, snaps, nil, s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkInvariants(t, name, m, snaps, r)
		ns := s
		if err := ns.Normalize(); err != nil {
			t.Fatal(err)
		}
		checkAgainstReference(t, name, m, snaps, ns, r)
		if r.Performance.TotalFees > 0 {
			fees++
			if m.FeeType == store.FeeTypeCrypto && s.FeeModel == FeeMarket {
				firstCurve++
			}
		}
		if s.LatencyMs > 0 && len(r.Trades) > 0 {
			delayed++
		}
		if len(r.Trades) > 0 {
			traded++
		}
		// Determinism through JSON.
		var s2 Strategy
		if err := json.Unmarshal(mustJSON(t, s), &s2); err != nil {
			t.Fatal(err)
		}
		r2, err := runFull(t, m, deepCopy(snaps), nil, s2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mustJSON(t, r2), mustJSON(t, r)) {
			t.Fatalf("%s: not deterministic", name)
		}
		// The worker writes answers with AppendJSON: the same bytes, fees
		// and costs echo included.
		if a, err := r.AppendJSON(nil); err != nil || !bytes.Equal(a, mustJSON(t, r)) {
			t.Fatalf("%s: AppendJSON writes\n%s (%v)\njson.Marshal\n%s", name, a, err, mustJSON(t, r))
		}
	}
	t.Logf("%d cases paid fees (%d on the first crypto curve), %d traded with latency, %d traded, of %d", fees, firstCurve, delayed, traded, cases)
	// Fees are paid by about half the replays that trade. The short run's
	// few cases are too few to judge the generator by.
	if !testing.Short() && (fees < traded/4 || firstCurve == 0 || delayed < cases/10 || traded < cases/5) {
		t.Errorf("weak generator: %d cases paid fees (%d on the first crypto curve), %d traded with latency, %d traded, of %d", fees, firstCurve, delayed, traded, cases)
	}
}
