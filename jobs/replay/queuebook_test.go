package replay

import (
	"testing"

	"github.com/updown/updown/store"
)

// A resting BUY activates on a recorded book whose levels all have size 0
// (no level is a level, DESIGN 6), or that lists no level at all: that is
// a book with no level on the order's side, so the queue ahead is 0
// (DESIGN 6, fine points), not unknown, as it is when the same book comes
// at a later snapshot. A taker sale at the limit then fills the order.
// Only a snapshot without a book leaves the queue as it was
// (TestRestingQueueWithoutBook).
func TestRestingQueueOnBookWithoutLevels(t *testing.T) {
	t.Parallel()
	b := func(s store.Snapshot, bids, asks []store.Level) store.Snapshot { return withUp(s, book(bids, asks)) }
	sale := store.MarketTrade{Time: qaAt(700), Outcome: store.OutcomeUp, Price: 0.40, Size: 10, Side: store.SideSell}
	for _, c := range []struct {
		name  string
		snaps []store.Snapshot
	}{{
		name: "at activation",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))), // BUY at 0.40 decided
			b(snapMs(500, 0.42, 0.58), levels(lv(0.40, 0)), levels(lv(0.42, 0))),   // activates: Q 0
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}, {
		name: "at a later snapshot",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
			b(snapMs(500, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))), // activates: Q 100
			b(snapMs(600, 0.42, 0.58), levels(lv(0.40, 0)), levels(lv(0.42, 0))),     // Q 0
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}, {
		name: "empty at activation",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
			b(snapMs(500, 0.42, 0.58), nil, []store.Level{}), // activates on a book listing no level: Q 0
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}, {
		name: "empty at a later snapshot",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
			b(snapMs(500, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))), // activates: Q 100
			b(snapMs(600, 0.42, 0.58), nil, nil),                                     // Q 0
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}} {
		s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.42)), never())
		s.OrderType, s.LatencyMs = OrderGTC, 500
		r, err := runFull(t, market("Up"), c.snaps, []store.MarketTrade{sale}, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Trades) == 0 || r.Trades[0].Time != formatTime(qaAt(700)) || r.Trades[0].Liquidity != LiquidityMaker {
			t.Errorf("%s: trades %+v; want a maker ENTRY at 0.7 s, filled by the sale at the limit with no queue ahead", c.name, r.Trades)
			continue
		}
		qaNear(t, c.name+": fill", r.Trades[0].FillPrice, 0.40)
		qaNear(t, c.name+": shares", r.Trades[0].Shares, 10)
		if ref := referenceResting(market("Up"), c.snaps, []store.MarketTrade{sale}, s); len(ref.trades) == 0 || ref.trades[0].Time != r.Trades[0].Time {
			t.Errorf("%s: the reference's trades %+v, the engine's %+v", c.name, ref.trades, r.Trades)
		}
	}
}

// A snapshot without a book (orderbook_up absent) shows nothing of the
// queue: at activation the queue is unknown, and later the queue read
// before stays. The same sale at the limit then does not fill the order,
// where an empty recorded book (TestRestingQueueOnBookWithoutLevels) lets
// it.
func TestRestingQueueWithoutBook(t *testing.T) {
	t.Parallel()
	b := func(s store.Snapshot, bids, asks []store.Level) store.Snapshot { return withUp(s, book(bids, asks)) }
	sale := store.MarketTrade{Time: qaAt(700), Outcome: store.OutcomeUp, Price: 0.40, Size: 10, Side: store.SideSell}
	for _, c := range []struct {
		name  string
		snaps []store.Snapshot
	}{{
		name: "at activation",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
			snapMs(500, 0.42, 0.58), // activates without a book: Q unknown
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}, {
		name: "at a later snapshot",
		snaps: []store.Snapshot{
			b(snapMs(0, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
			b(snapMs(500, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))), // activates: Q 100
			snapMs(600, 0.42, 0.58), // no book: Q stays 100
			b(snapMs(1000, 0.42, 0.58), levels(lv(0.40, 100)), levels(lv(0.42, 100))),
		},
	}} {
		s := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpGreaterOrEqual, 0.42)), never())
		s.OrderType, s.LatencyMs = OrderGTC, 500
		r, err := runFull(t, market("Up"), c.snaps, []store.MarketTrade{sale}, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range r.Trades {
			if tr.Liquidity == LiquidityMaker {
				t.Errorf("%s: trades %+v; want no maker fill: the queue ahead is unknown or 100, and the sale is 10", c.name, r.Trades)
			}
		}
		if ref := referenceResting(market("Up"), c.snaps, []store.MarketTrade{sale}, s); len(ref.trades) != len(r.Trades) {
			t.Errorf("%s: the reference's trades %+v, the engine's %+v", c.name, ref.trades, r.Trades)
		}
	}
}
