package replay

import (
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestRestingQueueHand pins, on markets worked by hand, the fine points of
// a resting order's queue and evidence that TestRestingOrders leaves
// open (DESIGN 6, "Resting orders"): which book sets the queue, which
// trades an order may count, the mirror outcome's prints, the tick grid
// after a change, and the rebate of the first crypto curve. Every market
// runs from t0 for 100 s and Up wins; the entry holds at the first
// snapshot, where the side's best bid 0.48 shows 50 shares (restBook).
func TestRestingQueueHand(t *testing.T) {
	t.Parallel()
	entryUp := conds(cond(FieldPriceUp, OpLessOrEqual, 0.5))
	entryDown := conds(cond(FieldPriceDown, OpLessOrEqual, 0.5))
	first := withUp(snap(0, 0.50, 0.50), restBook())
	asks := levels(lv(0.50, 200), lv(0.51, 100))
	sell := func(ms int, price, size float64, hash string) store.MarketTrade {
		return mtrade(ms, "Up", "SELL", price, size, hash)
	}
	placed := ts(0) + " PLACED BUY 0.48×100 SIGNAL"
	expired := ts(100) + " EXPIRED BUY 0.48×100 MARKET_END"
	held := "EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52 coin=50010 "
	tests := []struct {
		name   string
		market func(store.Market) store.Market
		side   string
		snaps  []store.Snapshot
		trades []store.MarketTrade
		strat  func(Strategy) Strategy
		events []string
		orders []string
	}{
		{
			// The book at 5 s no longer shows 0.48 (within its levels):
			// the queue is 0 from then on. The sale of 120 at 5 s came
			// before that book (at equal times a trade first): it meets
			// the 50 ahead and counts 70. 30 more at 6 s count whole.
			name: "a trade at a snapshot's instant meets the queue before that snapshot's book",
			snaps: []store.Snapshot{first,
				withUp(snap(5, 0.50, 0.50), book(levels(lv(0.49, 10), lv(0.47, 100)), asks)),
				withUp(snap(10, 0.50, 0.50), book(levels(lv(0.49, 10), lv(0.47, 100)), asks))},
			trades: []store.MarketTrade{sell(5000, 0.48, 120, "0x1"), sell(6000, 0.48, 30, "0x2")},
			events: []string{"ENTRY SIGNAL " + tms(6000) + " fill=0.48 shares=100 pnl=0 coin=50005 MAKER rebate=0", held},
			orders: []string{placed, tms(6000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The same 120 at 5 s without the later print: 70 counted of
			// 100, no fill; the order expires, nothing partly filled.
			name: "a queue worked off short of the order's size fills nothing",
			snaps: []store.Snapshot{first,
				withUp(snap(5, 0.50, 0.50), book(levels(lv(0.49, 10), lv(0.47, 100)), asks))},
			trades: []store.MarketTrade{sell(5000, 0.48, 120, "0x1")},
			orders: []string{placed, expired},
		},
		{
			// One tick over the bid, 0.49, is inside the spread: nothing
			// is ahead, and a sale of 100 at 0.49 fills the order.
			name:   "a limit that improves on the best bid has no queue",
			snaps:  []store.Snapshot{first, withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(5000, 0.49, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.LimitOffsetTicks = 1; return s },
			events: []string{"ENTRY SIGNAL " + tms(5000) + " fill=0.49 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=51 coin=50010 "},
			orders: []string{ts(0) + " PLACED BUY 0.49×100 SIGNAL", tms(5000) + " FILLED BUY 0.49×100 TRADE"},
		},
		{
			// 2 s of latency: the order is live at the 3 s snapshot. Sales
			// through the limit at 1.5 s (before it was due), 2.5 s (due,
			// but before the snapshot that activates it) and 3 s (the
			// activation's own instant: a trade comes first) count
			// nothing; 100 at 4 s fill it.
			name: "no trade before activation fills the order",
			snaps: []store.Snapshot{first, withUp(snap(1, 0.50, 0.50), restBook()),
				withUp(snap(3, 0.50, 0.50), restBook()), withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(1500, 0.47, 1000, "0x1"), sell(2500, 0.47, 1000, "0x2"),
				sell(3000, 0.47, 1000, "0x3"), sell(4000, 0.47, 100, "0x4")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			events: []string{"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50003 MAKER rebate=0", held},
			orders: []string{placed, tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The same without the print at 4 s: the order expires.
			name: "trades before activation alone leave the order resting",
			snaps: []store.Snapshot{first, withUp(snap(1, 0.50, 0.50), restBook()),
				withUp(snap(3, 0.50, 0.50), restBook()), withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(1500, 0.47, 1000, "0x1"), sell(2500, 0.47, 1000, "0x2"),
				sell(3000, 0.47, 1000, "0x3")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			orders: []string{placed, expired},
		},
		{
			// The queue is the activation snapshot's (10 at 0.48 at 3 s),
			// not the decision's (50): 110 at 0.48 at 4 s count 100.
			name: "the queue is read at activation",
			snaps: []store.Snapshot{first,
				withUp(snap(3, 0.50, 0.50), book(levels(lv(0.48, 10), lv(0.47, 100)), asks)),
				withUp(snap(10, 0.50, 0.50), book(levels(lv(0.48, 500), lv(0.47, 100)), asks))},
			trades: []store.MarketTrade{sell(4000, 0.48, 110, "0x1")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			events: []string{"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50003 MAKER rebate=0", held},
			orders: []string{placed, tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The activation snapshot shows asks and no bid: nothing is
			// ahead of the order.
			name: "an activation book with no bid puts the order first",
			snaps: []store.Snapshot{first, withUp(snap(3, 0.50, 0.50), book(nil, asks)),
				withUp(snap(10, 0.50, 0.50), book(nil, asks))},
			trades: []store.MarketTrade{sell(4000, 0.48, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			events: []string{"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50003 MAKER rebate=0", held},
			orders: []string{placed, tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// Up's bids and Down's asks are one book in mirror: the 50 at
			// 0.48 shown on both are the same 50 ahead, not 100. 150 at
			// 0.48 count 100.
			name: "the mirror book's twin level is not counted twice",
			snaps: []store.Snapshot{withDown(first, book(levels(lv(0.50, 200), lv(0.49, 100)), levels(lv(0.52, 50), lv(0.53, 100)))),
				withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(5000, 0.48, 150, "0x1")},
			events: []string{"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0", held},
			orders: []string{placed, tms(5000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// A recorded book with no level on either side at activation
			// is a book with no level on the order's side (DESIGN 6, fine
			// points): nothing is ahead, so the 500 at 0.48 at 4 s fill
			// it (a missing book would leave the queue unknown).
			name: "an activation book without levels",
			snaps: []store.Snapshot{first, withUp(snap(3, 0.50, 0.50), book(nil, nil)),
				withUp(snap(5, 0.50, 0.50), book(levels(lv(0.48, 20)), asks)),
				withUp(snap(10, 0.50, 0.50), book(levels(lv(0.48, 20)), asks))},
			trades: []store.MarketTrade{sell(4000, 0.48, 500, "0x1"), sell(6000, 0.48, 120, "0x2")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			events: []string{"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50003 MAKER rebate=0", held},
			orders: []string{placed, tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// At 5 s the book's best ask is 0.48, the limit itself: a book
			// that touches the order does not cross it (asks under the
			// limit only), and it fills nothing. At 6 s the bids show
			// nothing at 0.48 or over: the queue is 0, and 100 at 7 s fill.
			name: "a best ask at the limit does not fill; the queue left behind is 0",
			snaps: []store.Snapshot{first,
				withUp(snap(5, 0.48, 0.52), book(levels(lv(0.47, 100)), levels(lv(0.48, 500)))),
				withUp(snap(6, 0.49, 0.51), book(levels(lv(0.47, 100)), levels(lv(0.49, 500)))),
				withUp(snap(10, 0.49, 0.51), book(levels(lv(0.47, 100)), levels(lv(0.49, 500))))},
			trades: []store.MarketTrade{sell(7000, 0.48, 100, "0x1")},
			events: []string{"ENTRY SIGNAL " + tms(7000) + " fill=0.48 shares=100 pnl=0 coin=50006 MAKER rebate=0", held},
			orders: []string{placed, tms(7000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// Asks under the limit count at their snapshot only: 60 at 5 s
			// and 60 at 6 s are not 120 (no trade in between), and the
			// order expires.
			name: "crossing books are not summed across snapshots",
			snaps: []store.Snapshot{first,
				withUp(snap(5, 0.47, 0.53), book(levels(lv(0.46, 100)), levels(lv(0.47, 60)))),
				withUp(snap(6, 0.47, 0.53), book(levels(lv(0.45, 100)), levels(lv(0.47, 60)))),
				withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(8000, 0.48, 40, "0x1")},
			orders: []string{placed, expired},
		},
		{
			// The mirror for a resting exit. Bought at 1 s (a sale through
			// 0.48); at 10 s the exit holds and a SELL rests at the best
			// ask 0.56 behind 50. The book at 12 s shows nothing at 0.56
			// (0.55, then 0.57): the queue is 0 from then on. A purchase
			// of 120 at 0.56 at 12 s came first, met the 50 and counts 70;
			// a Down sale of 30 at 0.44 at 13 s is an Up purchase at 0.56
			// and counts 30: filled at 13 s, 100 × (0.56 − 0.48) = 8.
			name: "a resting exit's queue, and a trade at a snapshot's instant",
			snaps: []store.Snapshot{first,
				withUp(snap(10, 0.56, 0.44), book(levels(lv(0.54, 100)), levels(lv(0.56, 50), lv(0.57, 100)))),
				withUp(snap(12, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.55, 10), lv(0.57, 100)))),
				withUp(snap(20, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.55, 10), lv(0.57, 100))))},
			trades: []store.MarketTrade{sell(1000, 0.47, 100, "0x1"), mtrade(12_000, "Up", "BUY", 0.56, 120, "0x2"),
				mtrade(13_000, "Down", "SELL", 0.44, 30, "0x3")},
			strat: func(s Strategy) Strategy {
				s.ExitConditions = conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.55))
				return s
			},
			events: []string{"ENTRY SIGNAL " + tms(1000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT SIGNAL " + tms(13_000) + " fill=0.56 shares=100 pnl=8 coin=50012 MAKER rebate=0"},
			orders: []string{placed, tms(1000) + " FILLED BUY 0.48×100 TRADE",
				ts(10) + " PLACED SELL 0.56×100 SIGNAL", tms(13_000) + " FILLED SELL 0.56×100 TRADE"},
		},
		{
			// The activation snapshot has no book: the queue is unknown,
			// and 500 at 0.48 at 4 s count nothing. The book at 5 s shows
			// 20 there: 120 at 6 s count 100.
			name: "an activation without a book leaves the queue unknown until one",
			snaps: []store.Snapshot{first, snap(3, 0.50, 0.50),
				withUp(snap(5, 0.50, 0.50), book(levels(lv(0.48, 20)), asks)),
				withUp(snap(10, 0.50, 0.50), book(levels(lv(0.48, 20)), asks))},
			trades: []store.MarketTrade{sell(4000, 0.48, 500, "0x1"), sell(6000, 0.48, 120, "0x2")},
			strat:  func(s Strategy) Strategy { s.LatencyMs = 2000; return s },
			events: []string{"ENTRY SIGNAL " + tms(6000) + " fill=0.48 shares=100 pnl=0 coin=50005 MAKER rebate=0", held},
			orders: []string{placed, tms(6000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// A Down sale at 0.52 is a purchase of Up at 0.48: a taker
			// buy, which never fills a resting BUY of Up.
			name:   "the other outcome's taker sale does not fill a resting buy",
			snaps:  []store.Snapshot{first, withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{mtrade(5000, "Down", "SELL", 0.52, 1000, "0x1"), mtrade(6000, "Down", "SELL", 0.40, 1000, "0x2")},
			orders: []string{placed, expired},
		},
		{
			// A BUY of Down rests at Down's best bid 0.48 behind 50. Up
			// purchases at 0.52 are Down sales at 0.48: 80 work off the 50
			// and count 30; an Up purchase at 0.53 (Down at 0.47, through)
			// counts 70: 100 at 7 s. An Up sale counts nothing.
			name: "a resting Down buy fills from Up purchases, in mirror",
			side: SideDown,
			snaps: []store.Snapshot{withDown(snap(0, 0.50, 0.50), restBook()),
				withDown(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{mtrade(4000, "Up", "SELL", 0.52, 1000, "0x0"),
				mtrade(5000, "Up", "BUY", 0.52, 80, "0x1"), mtrade(7000, "Up", "BUY", 0.53, 70, "0x2")},
			events: []string{"ENTRY SIGNAL " + tms(7000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0",
				"EXIT MARKET_END " + ts(100) + " fill=0 shares=100 pnl=-48 coin=50010 "},
			orders: []string{placed, tms(7000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The tick turns 0.001 at 2 s: the order keeps its 0.48. An
			// Up sale at 0.4805 is over the limit and counts nothing; one
			// at 0.4795 is through it and counts whole.
			name: "a tick size change leaves the limit and fills through finer prices",
			market: func(m store.Market) store.Market {
				m.TickSizeChanges = []store.TickSizeChange{{Time: at(2), TickSize: 0.001}}
				return m
			},
			snaps:  []store.Snapshot{first, withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(3000, 0.4805, 1000, "0x1"), sell(4000, 0.4795, 100, "0x2")},
			events: []string{"ENTRY SIGNAL " + tms(4000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0", held},
			orders: []string{placed, tms(4000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// The first crypto curve (rate 0.25, exponent 2, times p) and
			// a 20% rebate: 100 × 0.25 × (0.48 × 0.52)² × 0.48 × 0.2 =
			// 0.149520384, rounded down 0.14952. With includeRebates it is
			// in the trade's pnl: 52 + 0.14952.
			name: "the rebate of the first crypto curve, counted in pnl",
			market: func(m store.Market) store.Market {
				m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate = ptr(0.25), ptr(2), ptr(0.2)
				m.FeeType = store.FeeTypeCrypto
				return m
			},
			snaps:  []store.Snapshot{first, withUp(snap(10, 0.50, 0.50), restBook())},
			trades: []store.MarketTrade{sell(5000, 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.IncludeRebates = true; return s },
			events: []string{"ENTRY SIGNAL " + tms(5000) + " fill=0.48 shares=100 pnl=0 coin=50000 MAKER rebate=0.14952",
				"EXIT MARKET_END " + ts(100) + " fill=1 shares=100 pnl=52.14952 coin=50010 "},
			orders: []string{placed, tms(5000) + " FILLED BUY 0.48×100 TRADE"},
		},
		{
			// cancelAfterMs runs out at 110 s, after end_time (100 s), and
			// a snapshot comes at 120 s: the order ended with the market,
			// EXPIRED at end_time, not CANCELLED after it had closed.
			name:   "a cancel due after end_time, with a snapshot after both",
			snaps:  []store.Snapshot{first, withUp(snap(120, 0.55, 0.45), restBook())},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 110_000; return s },
			orders: []string{placed, expired},
		},
		{
			// The same with a sale through the limit at 112 s, walked
			// before that snapshot: no evidence, the market has ended.
			name:   "a cancel due after end_time, with a print after both",
			snaps:  []store.Snapshot{first, withUp(snap(120, 0.55, 0.45), restBook())},
			trades: []store.MarketTrade{sell(112_000, 0.47, 100, "0x1")},
			strat:  func(s Strategy) Strategy { s.CancelAfterMs = 110_000; return s },
			orders: []string{placed, expired},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := market(store.OutcomeUp)
			if tt.market != nil {
				m = tt.market(m)
			}
			s := gtc(strategy(SideUp, 100, entryUp, never()))
			if tt.side == SideDown {
				s = gtc(strategy(SideDown, 100, entryDown, never()))
			}
			if tt.strat != nil {
				s = tt.strat(s)
			}
			r, err := runFull(t, m, tt.snaps, tt.trades, s)
			if err != nil {
				t.Fatal(err)
			}
			checkEventsAndOrders(t, r, tt.events, tt.orders)
			// The reference transcription of DESIGN 6 agrees.
			ref := referenceResting(m, tt.snaps, tt.trades, s)
			var refOrders []string
			for _, o := range ref.orders {
				refOrders = append(refOrders, ord(o))
			}
			if got, want := strings.Join(refOrders, "\n"), strings.Join(tt.orders, "\n"); got != want {
				t.Errorf("the reference's orders\n got %s\nwant %s", got, want)
			}
		})
	}
}

// The tick in force at t is the latest tick_size_changes entry at or
// before t, in whatever order a market lists its changes (the stores keep
// them in time order, an Input built by hand need not): a finer tick from 0 s and a coarse one from
// 50 s put a decision at 10 s on the 0.001 grid, three ticks over the
// bid 0.95 at 0.953, resting; read in list order, the coarse change
// stopped the search and the 0.01 grid's 0.98 crossed the ask.
func TestRestingTickChangesOutOfOrder(t *testing.T) {
	t.Parallel()
	bk := book(levels(lv(0.95, 100)), levels(lv(0.97, 100)))
	snaps := []store.Snapshot{snap(0, 0.97, 0.03), withUp(snap(10, 0.97, 0.03), bk), withUp(snap(20, 0.97, 0.03), bk)}
	s := gtc(strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.97), cond(FieldTimeRemainingPct, OpLessOrEqual, 90)), never()))
	s.LimitOffsetTicks = 3
	for _, changes := range [][]store.TickSizeChange{
		{{Time: at(0), TickSize: 0.001}, {Time: at(50), TickSize: 0.01}},
		{{Time: at(50), TickSize: 0.01}, {Time: at(0), TickSize: 0.001}},
	} {
		m := market(store.OutcomeUp)
		m.TickSizeChanges = changes
		r, err := runFull(t, m, snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		var orders []string
		for _, o := range r.Orders {
			orders = append(orders, ord(o))
		}
		want := ts(10) + " PLACED BUY 0.953×10 SIGNAL\n" + ts(100) + " EXPIRED BUY 0.953×10 MARKET_END"
		if got := strings.Join(orders, "\n"); got != want {
			t.Errorf("changes %v: orders\n got %s\nwant %s", changes, got, want)
		}
		var ref []string
		for _, o := range referenceResting(m, snaps, nil, s).orders {
			ref = append(ref, ord(o))
		}
		if got := strings.Join(ref, "\n"); got != want {
			t.Errorf("changes %v: the reference's orders\n got %s\nwant %s", changes, got, want)
		}
	}
}
