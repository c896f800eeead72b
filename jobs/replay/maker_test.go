package replay

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func gtc(s Strategy) Strategy { s.OrderType = OrderGTC; return s }

// mtrade is a recorded Polymarket trade ms milliseconds after t0.
func mtrade(ms int, outcome, side string, price, size float64, hash string) store.MarketTrade {
	return store.MarketTrade{Time: t0.Add(time.Duration(ms) * time.Millisecond), Outcome: outcome, Side: side,
		Price: price, Size: size, TxHash: hash}
}

// restBook is the UP book the resting tests start from: the best bid 0.48
// shows 50 shares, the best ask 0.50.
func restBook() *store.Book {
	return book(levels(lv(0.48, 50), lv(0.47, 100)), levels(lv(0.50, 200), lv(0.51, 100)))
}

// ev renders what a test compares of a trade event.
func ev(tr TradeEvent) string {
	s := fmt.Sprintf("%s %s %s fill=%v shares=%v pnl=%v coin=%v %s", tr.Type, tr.Reason, tr.Time, tr.FillPrice, tr.Shares, tr.PositionPnL, tr.CoinPrice, tr.Liquidity)
	if tr.MakerRebate != nil {
		s += fmt.Sprintf(" rebate=%v", *tr.MakerRebate)
	}
	return s
}

func ord(o OrderEvent) string {
	return fmt.Sprintf("%s %s %s %v×%v %s", o.Time, o.Action, o.Side, o.Price, o.Shares, o.Reason)
}

// checkEventsAndOrders compares a result's trade events and orders, each
// written by ev and ord, with the lines wanted.
func checkEventsAndOrders(t *testing.T, r Result, events, orders []string) {
	t.Helper()
	var gotEvents, gotOrders []string
	for _, tr := range r.Trades {
		gotEvents = append(gotEvents, ev(tr))
	}
	for _, o := range r.Orders {
		gotOrders = append(gotOrders, ord(o))
	}
	if got, want := strings.Join(gotEvents, "\n"), strings.Join(events, "\n"); got != want {
		t.Errorf("trades\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(gotOrders, "\n"), strings.Join(orders, "\n"); got != want {
		t.Errorf("orders\n got %s\nwant %s", got, want)
	}
}

func tms(ms int) string { return formatTime(t0.Add(time.Duration(ms) * time.Millisecond)) }

// TestRestingOrders pins resting (GTC) orders on markets worked by hand
// (DESIGN 6, "Resting orders"). Every market runs from t0 for 100 s and Up
// wins; the entry holds at the first snapshot (price_up 0.50), and the
// BUY rests at the best bid 0.48 behind the 50 shares shown there.
func TestRestingOrders(t *testing.T) {
	t.Parallel()
	entry := conds(cond(FieldPriceUp, OpLessOrEqual, 0.5))
	base := gtc(strategy(SideUp, 100, entry, never()))
	first := withUp(snap(0, 0.50, 0.50), restBook())
	later := withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100))))
	crossed := book(levels(lv(0.45, 10)), levels(lv(0.47, 40), lv(0.49, 100)))
	fees := func(m store.Market) store.Market {
		m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate = ptr(0.07), ptr(1), ptr(0.2)
		return m
	}
	tests := []struct {
		name     string
		market   store.Market
		snaps    []store.Snapshot
		trades   []store.MarketTrade
		strat    func(Strategy) Strategy
		events   []string
		orders   []string
		warnings bool
	}{
		{
			// 80 at the limit works off the 50 ahead and counts 30; 70 more
			// at the limit counts 70: 100, the order's size, at 7 s. Held
			// to the end: 100 × (1 − 0.48) = 52.
			name:   "a queue consumed by two prints",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.48, 80, "0x1"), mtrade(7000, "Up", "SELL", 0.48, 70, "0x2")},
			events: []string{
				"ENTRY SIGNAL " + tms(7000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(7000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The books at 1 s and 2 s keep their prices and change their
			// sizes (sides as long as the one before, not the same): the
			// queue ahead at 0.48 shows 30, then 5. The sale of 100 at 3 s
			// counts 95 past it, and 5 more at 4 s fill the order.
			name: "a queue the book's sizes shorten tick by tick",
			snaps: []store.Snapshot{first,
				withUp(snap(1, 0.50, 0.50), book(levels(lv(0.49, 10), lv(0.48, 30)), levels(lv(0.50, 200), lv(0.51, 100)))),
				withUp(snap(2, 0.50, 0.50), book(levels(lv(0.49, 10), lv(0.48, 5)), levels(lv(0.50, 200), lv(0.51, 100)))),
				later},
			trades: []store.MarketTrade{mtrade(3000, "Up", "SELL", 0.48, 100, "0x1"), mtrade(4000, "Up", "SELL", 0.48, 5, "0x2")},
			events: []string{
				"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50002 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// A sale through the limit counts whole, whatever the queue.
			name:   "a trade-through",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// No trades: at 10 s asks under the limit, 60 + 50 = 110,
			// cross it and fill it there; the answer warns that only
			// crossing books could fill.
			name: "a crossing book",
			snaps: []store.Snapshot{first,
				withUp(snap(10, 0.47, 0.53), book(levels(lv(0.45, 10)), levels(lv(0.46, 50), lv(0.47, 60))))},
			events: []string{
				"ENTRY SIGNAL " + ts(10) + " fill=0.48 shares=100 pnl=0 coin=50010 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders:   []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(10) + " FILLED BUY 0.48×100 CROSS"},
			warnings: true,
		},
		{
			// A taker buy at the limit never fills a resting BUY: the
			// order rests until end_time and expires.
			name:   "a taker buy does not fill a resting buy",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(5000, "Up", "BUY", 0.48, 1000, "0x1")},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(100) + " EXPIRED BUY 0.48×100 MARKET_END"},
		},
		{
			// The Up sale of 60 at 0.48 counts 10 past the queue; its Down
			// twin (a taker buy at 0.52, the same hash) is the same match
			// and counts nothing. A Down buy of 90 at 0.52 with a hash of
			// its own is a sale of Up at 0.48: 10 + 90 = 100 at 6 s.
			name:  "a mirrored Down print is counted once when its hash repeats",
			snaps: []store.Snapshot{first, later},
			// In the stores' order: Down before Up at the same instant.
			trades: []store.MarketTrade{mtrade(5000, "Down", "BUY", 0.52, 60, "0xaa"), mtrade(5000, "Up", "SELL", 0.48, 60, "0xaa"),
				mtrade(6000, "Down", "BUY", 0.52, 90, "0xbb")},
			events: []string{
				"ENTRY SIGNAL " + tms(6000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(6000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// At 10 s 40 asks at 0.47 cross the order: 40 of 100, no fill.
			// A sale of 70 through the limit at 12 s counts 70. At 15 s
			// the book is the one of 10 s, the same recorded side: its 40
			// and the 70 counted fill the order there.
			name: "a print and a repeated crossing book fill together",
			snaps: []store.Snapshot{first, withUp(snap(10, 0.47, 0.53), crossed), withUp(snap(15, 0.47, 0.53), crossed),
				withUp(snap(20, 0.47, 0.53), crossed)},
			trades: []store.MarketTrade{mtrade(12000, "Up", "SELL", 0.46, 70, "0x1")},
			events: []string{
				"ENTRY SIGNAL " + ts(15) + " fill=0.48 shares=100 pnl=0 coin=50015 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50020 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(15) + " FILLED BUY 0.48×100 CROSS"},
		},
		{
			// Two ticks over the bid is 0.50, the best ask: post only, it is
			// rejected, and nothing trades.
			name:     "a post-only rejection",
			snaps:    []store.Snapshot{first, later},
			strat:    func(s Strategy) Strategy { s.PostOnly, s.LimitOffsetTicks = true, 2; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.5×100 SIGNAL", ts(0) + " REJECTED BUY 0.5×100 POST_ONLY"},
			warnings: true,
		},
		{
			// No bid to rest at: the GTC acts as LIMIT at the ask, 0.50,
			// which crosses the book. Post only, it is rejected rather than
			// taking the ask as a taker (it would pay the taker fee).
			name:     "a post-only entry with no bid to rest at is rejected, not taken",
			snaps:    []store.Snapshot{withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 200)))), later},
			strat:    func(s Strategy) Strategy { s.PostOnly = true; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.5×100 SIGNAL", ts(0) + " REJECTED BUY 0.5×100 POST_ONLY"},
			warnings: true,
		},
		{
			// The same after 2 s of latency: rejected where it goes live.
			name: "a post-only entry with no bid is rejected after the latency",
			snaps: []store.Snapshot{withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 200)))),
				withUp(snap(2, 0.50, 0.50), book(nil, levels(lv(0.50, 200)))), later},
			strat:    func(s Strategy) Strategy { s.PostOnly, s.LatencyMs = true, 2000; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.5×100 SIGNAL", ts(2) + " REJECTED BUY 0.5×100 POST_ONLY"},
			warnings: true,
		},
		{
			// Filled at 5 s; at 10 s the exit holds on a book with no ask:
			// the SELL acts as LIMIT at the bid 0.54, which crosses. Post
			// only, it is rejected, and the position settles at the end:
			// 100 × (1 − 0.48) = 52.
			name:   "a post-only exit with no ask to rest at is rejected, not taken",
			snaps:  []store.Snapshot{first, withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), nil))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			strat: func(s Strategy) Strategy {
				s.PostOnly, s.ExitConditions = true, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.55))
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.54×100 SIGNAL", ts(10) + " REJECTED SELL 0.54×100 POST_ONLY"},
		},
		{
			// The same order without postOnly takes the 200 at 0.50 as a
			// LIMIT order would: a taker fill.
			name:  "a crossing GTC without postOnly takes the book",
			snaps: []store.Snapshot{first, later},
			strat: func(s Strategy) Strategy { s.LimitOffsetTicks = 2; return s },
			events: []string{
				"ENTRY SIGNAL " + ts(0) + " fill=0.5 shares=100 pnl=0 coin=50000 TAKER",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=50 coin=50010 ",
			},
			orders:   []string{ts(0) + " PLACED BUY 0.5×100 SIGNAL", ts(0) + " FILLED BUY 0.5×100 TAKER"},
			warnings: true,
		},
		{
			// 3 s of latency: the order goes live at the 4 s snapshot, so the
			// sale through its limit at 3 s does not reach it; the one at
			// 5 s does.
			name:   "activation after latency",
			snaps:  []store.Snapshot{first, withUp(snap(2, 0.5, 0.5), restBook()), withUp(snap(4, 0.5, 0.5), restBook()), later},
			trades: []store.MarketTrade{mtrade(3000, "Up", "SELL", 0.47, 100, "0x1"), mtrade(5000, "Up", "SELL", 0.47, 100, "0x2")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 3000; return s },
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50004 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// No bid at the decision: the GTC acts as LIMIT at the ask 0.50,
			// and its 5 s of latency outlast the snapshots, so it never
			// executes: PLACED, then EXPIRED at end_time like any order that
			// never activated.
			name:     "a GTC acting as LIMIT that never executes expires",
			snaps:    []store.Snapshot{withUp(snap(0, 0.50, 0.50), book(nil, levels(lv(0.50, 200)))), snap(1, 0.50, 0.50)},
			strat:    func(s Strategy) Strategy { s.LatencyMs = 5000; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.5×100 SIGNAL", ts(100) + " EXPIRED BUY 0.5×100 MARKET_END"},
			warnings: true,
		},
		{
			// The entry rests from 4 s and fills at 5 s. At 10 s the exit
			// holds on a book with no ask: the SELL acts as LIMIT at the bid
			// 0.54, 3 s later, and no snapshot comes: it expires at end_time
			// and the position settles there: 100 × (1 − 0.48) = 52.
			name: "a GTC exit acting as LIMIT that never executes expires",
			snaps: []store.Snapshot{first, withUp(snap(4, 0.5, 0.5), restBook()),
				withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), nil))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			strat: func(s Strategy) Strategy {
				s.LatencyMs, s.ExitConditions = 3000, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.55))
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50004 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.54×100 SIGNAL", ts(100) + " EXPIRED SELL 0.54×100 MARKET_END"},
		},
		{
			// cancelAfterMs 5000: a fill 1 ms before the cancel wins.
			name:   "a fill just before the cancel",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(4999, "Up", "SELL", 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 5000; return s },
			events: []string{
				"ENTRY SIGNAL " + tms(4999) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(4999) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The same trade at the cancel's instant comes too late.
			name:   "a cancel racing a fill",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 5000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(5) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
		},
		{
			// Filled at 5 s; at 10 s the exit holds and a SELL rests at the
			// best ask 0.56. At 20 s the bid is 0.30: the loss, 18, passes
			// 20% of the 48 paid, so the resting exit is cancelled and a
			// MARKET exit sells at 0.30: pnl −18.
			name: "MAX_LOSS cancels a resting exit",
			snaps: []store.Snapshot{first, later,
				withUp(snap(20, 0.31, 0.69), book(levels(lv(0.30, 500)), levels(lv(0.32, 100))))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			strat: func(s Strategy) Strategy {
				s.ExitConditions, s.MaxLossPercent = conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.55)), 20
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MAX_LOSS " + ts(20) + " fill=0.3 shares=100 pnl=-18 coin=50020 TAKER",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.56×100 SIGNAL", ts(20) + " CANCELLED SELL 0.56×100 MAX_LOSS"},
		},
		{
			// 33 shares at 0.48 on a market with rate 0.07 and rebate rate
			// 0.2: 33 × 0.07 × 0.48 × 0.52 × 0.2 = 0.1153152, rounded down
			// to 0.11531, counted in the pnl with includeRebates:
			// 33 × 0.52 + 0.11531 = 17.27531.
			name:   "a rebate rounded down",
			market: fees(market(store.OutcomeUp)),
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.PositionSize, s.IncludeRebates = 33, true; return s },
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=33 pnl=0 coin=50000 MAKER rebate=0.11531",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=33 pnl=17.27531 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×33 SIGNAL", tms(5000) + " FILLED BUY 0.48×33 TRADE"},
		},
		{
			// The last snapshot is at 10 s, end_time at 100 s: the order
			// still rests after it, and a print through the limit at 50 s
			// is evidence like any other (a recorder's last snapshot
			// comes a little before end_time, its last trades after it).
			// The fill takes the coin price of the last snapshot before it.
			name:   "a print after the last snapshot fills the order",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(50_000, "Up", "SELL", 0.47, 100, "0x1")},
			events: []string{
				"ENTRY SIGNAL " + tms(50_000) + " fill=0.48 shares=100 pnl=0 coin=50010 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(50_000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// A resting exit filled by a print after the last snapshot.
			name: "a print after the last snapshot fills a resting exit",
			snaps: []store.Snapshot{withUp(snap(0, 0.50, 0.50), restBook()),
				withUp(snap(10, 0.50, 0.50), book(levels(lv(0.49, 50)), levels(lv(0.50, 200), lv(0.51, 100))))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1"), mtrade(60_000, "Up", "BUY", 0.52, 300, "0x2")},
			strat: func(s Strategy) Strategy {
				s.ExitConditions = conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.5))
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT SIGNAL " + tms(60_000) + " fill=0.5 shares=100 pnl=2 coin=50010 MAKER rebate=0",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.5×100 SIGNAL", tms(60_000) + " FILLED SELL 0.5×100 TRADE"},
		},
		{
			// cancelAfterMs runs out at 20 s, after the last snapshot and
			// before end_time: the order is cancelled then, not expired.
			name:     "a cancel after the last snapshot",
			snaps:    []store.Snapshot{first, later},
			strat:    func(s Strategy) Strategy { s.CancelAfterMs = 20_000; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(20) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
			warnings: true,
		},
		{
			// The cancel at 20 s comes before the print at 50 s.
			name:   "a cancel after the last snapshot before a print",
			snaps:  []store.Snapshot{first, later},
			trades: []store.MarketTrade{mtrade(50_000, "Up", "SELL", 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 20_000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(20) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
		},
		{
			// cancelAfterMs runs out at end_time itself: cancelled, as a
			// snapshot or a trade at that instant would have it (the
			// cancel is asked about before the market's end).
			name:     "a cancel at end_time",
			snaps:    []store.Snapshot{first, later},
			strat:    func(s Strategy) Strategy { s.CancelAfterMs = 100_000; return s },
			orders:   []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", ts(100) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
			warnings: true,
		},
		{
			// cancelAfterMs runs out at 110 s, after end_time (100 s), and a
			// snapshot comes at 120 s (a recorder's last ones may): the
			// order ended with the market, EXPIRED at end_time, not
			// CANCELLED 10 s after the market it rested in closed.
			name:  "a cancel after end_time, with a snapshot after both",
			snaps: []store.Snapshot{first, later, withUp(snap(120, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100))))},
			strat: func(s Strategy) Strategy { s.CancelAfterMs = 110_000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL",
				ts(100) + " EXPIRED BUY 0.48×100 MARKET_END"},
			warnings: true,
		},
		{
			// The same order with a print at 112 s, walked before the
			// snapshot at 120 s: it is no evidence, and the order expired at
			// end_time.
			name:   "a cancel after end_time, with a print after both",
			snaps:  []store.Snapshot{first, later, withUp(snap(120, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100))))},
			trades: []store.MarketTrade{mtrade(112_000, "Up", "SELL", 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 110_000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL",
				ts(100) + " EXPIRED BUY 0.48×100 MARKET_END"},
		},
		{
			// Placed at 0 s with a 5 s latency and cancelAfterMs 1,000: the
			// cancel takes effect at 6 s, before end_time, and no snapshot
			// came at or after 5 s to activate it. It never rested, and it
			// is cancelled at 6 s, as it would be had a snapshot come
			// after 6 s, not left to expire at end_time.
			name:  "a cancel before the order went live, after the last snapshot",
			snaps: []store.Snapshot{first, withUp(snap(3, 0.50, 0.50), restBook())},
			strat: func(s Strategy) Strategy { s.LatencyMs, s.CancelAfterMs = 5000, 1000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL",
				tms(6000) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
			warnings: true,
		},
		{
			// The same order with a snapshot at 10 s: cancelled at 6 s.
			name:  "a cancel before the order went live, before a snapshot",
			snaps: []store.Snapshot{first, withUp(snap(3, 0.50, 0.50), restBook()), later},
			strat: func(s Strategy) Strategy { s.LatencyMs, s.CancelAfterMs = 5000, 1000; return s },
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL",
				tms(6000) + " CANCELLED BUY 0.48×100 CANCEL_AFTER"},
			warnings: true,
		},
		{
			// A best bid off the 0.01 grid (left from a 0.001 tick): the
			// BUY joins it at 0.45, the grid price at or under it, and
			// rests; rounded to the nearest, 0.46, it would reach the ask
			// and buy as a taker at a price the strategy never bid.
			name: "a BUY limit rounds down onto the tick grid",
			snaps: []store.Snapshot{
				withUp(snap(0, 0.46, 0.54), book(levels(lv(0.455, 50)), levels(lv(0.46, 30)))),
				withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100))))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.44, 100, "0x1")},
			strat: func(s Strategy) Strategy {
				s.EntryConditions = conds(cond(FieldPriceUp, OpLessOrEqual, 0.46))
				s.PostOnly = true
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.45 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=55 coin=50010 ",
			},
			orders: []string{ts(0) + " PLACED BUY 0.45×100 SIGNAL", tms(5000) + " FILLED BUY 0.45×100 TRADE"},
		},
		{
			// The mirror: a best ask of 0.565 puts the SELL at 0.57, the
			// grid price at or over it, not at 0.56 on the best bid.
			name: "a SELL limit rounds up onto the tick grid",
			snaps: []store.Snapshot{first,
				withUp(snap(10, 0.565, 0.435), book(levels(lv(0.56, 100)), levels(lv(0.565, 100))))},
			trades: []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.47, 100, "0x1"), mtrade(20_000, "Up", "BUY", 0.58, 100, "0x2")},
			strat: func(s Strategy) Strategy {
				s.ExitConditions = conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.56))
				s.PostOnly = true
				return s
			},
			events: []string{
				"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT SIGNAL " + tms(20_000) + " fill=0.57 shares=100 pnl=9 coin=50010 MAKER rebate=0",
			},
			orders: []string{ts(0) + " PLACED BUY 0.48×100 SIGNAL", tms(5000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.57×100 SIGNAL", tms(20_000) + " FILLED SELL 0.57×100 TRADE"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := tt.market
			if m.Slug == "" {
				m = market(store.OutcomeUp)
			}
			s := base
			if tt.strat != nil {
				s = tt.strat(s)
			}
			r, err := RunTrades(m, tt.snaps, tt.trades, s)
			if err != nil {
				t.Fatal(err)
			}
			checkEventsAndOrders(t, r, tt.events, tt.orders)
			if (len(r.Warnings) > 0) != tt.warnings {
				t.Errorf("warnings %q", r.Warnings)
			}
			p := r.Performance
			if p.TimeInPositionPct < 0 || p.TimeInPositionPct > 100 {
				t.Errorf("time_in_position_pct %v", p.TimeInPositionPct)
			}
			if c := r.PnLCurve; len(c) == 0 {
				t.Errorf("no pnl curve")
			} else if c[len(c)-1].PnL != p.TotalPnL {
				t.Errorf("the curve ends at %+v, total_pnl %v", c[len(c)-1], p.TotalPnL)
			}
			orders := strings.Join(tt.orders, "\n") // the result's, checked above
			if p.OrdersPlaced == nil || *p.OrdersPlaced+0 != strings.Count(orders, " PLACED ") ||
				*p.OrdersFilled != strings.Count(orders, " FILLED ") {
				t.Errorf("counters %+v for orders %q", p, orders)
			}
			// Every order placed has ended by the end of the replay.
			if ended := *p.OrdersFilled + *p.OrdersRejected + *p.OrdersCancelled + *p.OrdersExpired; ended != *p.OrdersPlaced {
				t.Errorf("%d orders placed, %d ended: %q", *p.OrdersPlaced, ended, orders)
			}
		})
	}
}

// TestFrontFillsNoLaterThanRiskAverse: at the front of the queue the same
// prints fill what behind it they do not (80 + 30 at the limit: FRONT
// counts 110; RISK_AVERSE works off the 50 ahead and counts 60).
func TestFrontFillsNoLaterThanRiskAverse(t *testing.T) {
	t.Parallel()
	snaps := []store.Snapshot{withUp(snap(0, 0.50, 0.50), restBook()), snap(10, 0.55, 0.45)}
	trades := []store.MarketTrade{mtrade(5000, "Up", "SELL", 0.48, 80, "0x1"), mtrade(6000, "Up", "SELL", 0.48, 30, "0x2")}
	s := gtc(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never()))
	ra, err := RunTrades(market(store.OutcomeUp), snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	s.QueueModel = QueueFront
	front, err := RunTrades(market(store.OutcomeUp), snaps, trades, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.Trades) != 0 || len(front.Trades) != 2 || front.Trades[0].Time != tms(6000) {
		t.Errorf("RISK_AVERSE %v, FRONT %v", ra.Trades, front.Trades)
	}
}

// TestOrdersListTruncated: a GTC strategy that places and cancels an order
// on each of 700 snapshots takes 1,400 order actions; the list holds the
// first MaxOrders, says so (orders_truncated and a warning), and the
// counters count them all.
func TestOrdersListTruncated(t *testing.T) {
	t.Parallel()
	const n = 700
	m := market(store.OutcomeUp)
	m.EndTime = at(n + 1)
	snaps := make([]store.Snapshot, n)
	for i := range snaps {
		snaps[i] = withUp(snap(i, 0.50, 0.50), restBook())
	}
	s := gtc(strategy(SideUp, 100, conds(cond(FieldPriceUp, OpLessOrEqual, 0.5)), never()))
	s.CancelAfterMs = 500
	r, err := RunTrades(m, snaps, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Performance
	if *p.OrdersPlaced != n || *p.OrdersCancelled != n {
		t.Fatalf("placed %d, cancelled %d; want %d each", *p.OrdersPlaced, *p.OrdersCancelled, n)
	}
	if len(r.Orders) != MaxOrders || !r.OrdersTruncated {
		t.Fatalf("%d orders listed, truncated %v; want %d, true", len(r.Orders), r.OrdersTruncated, MaxOrders)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "first 1000 of 1400 order actions") {
		t.Errorf("warnings %q", r.Warnings)
	}
	b, err := r.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"orders_truncated":true`) {
		t.Errorf("the answer does not say the orders list is truncated")
	}

	// A list that holds every action says nothing.
	r, err = RunTrades(m, snaps[:100], nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.OrdersTruncated || len(r.Orders) != 200 || strings.Contains(strings.Join(r.Warnings, "\n"), "order actions") {
		t.Errorf("100 orders: %d listed, truncated %v, warnings %q", len(r.Orders), r.OrdersTruncated, r.Warnings)
	}
}
