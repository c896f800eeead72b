package replay

import (
	"math"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// Actions and reasons of the orders list (DESIGN 6, "Resting orders").
const (
	OrderPlaced    = "PLACED"
	OrderFilled    = "FILLED"
	OrderRejected  = "REJECTED"
	OrderCancelled = "CANCELLED"
	OrderExpired   = "EXPIRED"

	OrderBuy  = "BUY"
	OrderSell = "SELL"

	// Why an order was placed, filled or ended.
	OrderReasonSignal      = "SIGNAL"       // PLACED: the entry or exit conditions held
	OrderReasonTrade       = "TRADE"        // FILLED: recorded trades reached it past its queue
	OrderReasonCross       = "CROSS"        // FILLED: the book crossed it
	OrderReasonTaker       = "TAKER"        // FILLED: it executed at once against the book, as a taker
	OrderReasonPostOnly    = "POST_ONLY"    // REJECTED: it would have crossed the book
	OrderReasonCancelAfter = "CANCEL_AFTER" // CANCELLED: cancelAfterMs ran out
	OrderReasonMaxLoss     = "MAX_LOSS"     // CANCELLED: the stop loss took the position out
	OrderReasonNoFill      = "NO_FILL"      // CANCELLED: a taker order found nothing to fill
	OrderReasonMarketEnd   = "MARKET_END"   // EXPIRED: still resting at end_time

	// Liquidity of a fill: a taker takes resting levels, a maker rests.
	LiquidityTaker = "TAKER"
	LiquidityMaker = "MAKER"

	// MaxOrders bounds the orders list; its counters count every action.
	MaxOrders = 1000
)

// orderAction is one entry of the orders list as the engine records it.
type orderAction struct {
	ns     int64
	action string
	buy    bool
	price  float64
	shares float64
	reason string
}

// restOrder is a GTC order from its placement to its end.
type restOrder struct {
	live     bool // placed, not yet ended
	active   bool // activated: resting on the book
	buy      bool
	limit    float64
	shares   float64
	placedNs int64
	cancelNs int64   // when cancelAfterMs takes effect; MaxInt64 never
	decided  float64 // the side's price at the decision
	queue    float64 // size ahead at the limit; +Inf unknown
	// shown is the first tick whose book has not yet shortened queue: the
	// books are read only when a trade at the limit needs the queue (see
	// showQueue), since most ticks see none.
	shown   int
	counted float64         // trade sizes that reached the order past its queue
	hashes  map[string]bool // hashes counted: true for the other outcome's mirror

	// checked is set once the order was checked against a book: the sides
	// it read there and what counted was then. A tick with the same sides
	// and no trade counted since cannot cross the order nor shorten its
	// queue, so it is not read again (real books repeat a side from one
	// snapshot to the next more often than not).
	checked          bool
	checkedBids      store.Span
	checkedAsks      store.Span
	checkedCountedAt float64
}

// resting holds what a replay of a GTC strategy needs and records beside
// the engine's position: the order, the trades that fill it, the orders
// list and its counters.
type resting struct {
	// leastSell is the fewest shares a SELL placed offered (0 before any).
	leastSell      float64
	on             bool
	postOnly       bool
	front          bool
	includeRebates bool
	offsetTicks    int
	cancelAfterNs  int64 // 0: rests until filled or the market ends
	rebate         feeSchedule
	rebateRate     float64
	tickNs         []int64 // tick size changes, oldest first
	tickSize       []float64

	trades tradeTape
	// cursors is each view's first trade not yet walked (tradeTape.views);
	// nextNs the time of the active order's view's, MaxInt64 when none is
	// left or no order is active.
	cursors [2]int
	nextNs  int64

	o           restOrder
	entryRebate float64 // the open position's entry rebate

	orders []orderAction
	counts [5]int // placed, filled, rejected, cancelled, expired
	// rested is every order's resting span, listed or not (orders stops at
	// MaxOrders): from its PLACED action to the action that ended it,
	// math.MaxInt64 while none has.
	rested   []restSpan
	noTrades bool

	// tickByTick turns the runs off (restingBuyRun, restingSellRun): every
	// tick goes through the loop. Tests hold the runs to it.
	tickByTick bool
}

func newResting(in Input, s Strategy, trades tradeTape) resting {
	r := resting{
		on:             true,
		postOnly:       s.PostOnly,
		front:          s.QueueModel == QueueFront,
		includeRebates: s.IncludeRebates,
		offsetTicks:    s.LimitOffsetTicks,
		cancelAfterNs:  int64(s.CancelAfterMs) * int64(time.Millisecond),
		trades:         trades,
		noTrades:       trades.len() == 0,
	}
	if rr := in.Market.MakerRebateRate; rr != nil && finite(*rr) && *rr > 0 {
		r.rebate, r.rebateRate = marketFees(in.Market), *rr
	}
	changes := in.Market.TickSizeChanges
	if byTime := func(a, b store.TickSizeChange) int { return a.Time.Compare(b.Time) }; !slices.IsSortedFunc(changes, byTime) {
		// The stores keep a market's changes oldest first
		// (store.Market.TickSizeChanges), so this runs only for an Input
		// built otherwise (a test's, by hand): the tick in force at t is
		// the latest change at or before t (tickAt), not the last one
		// listed. Once a replay, outside the loop.
		changes = slices.Clone(changes)
		slices.SortStableFunc(changes, byTime)
	}
	for _, c := range changes {
		if finite(c.TickSize) && c.TickSize > 0 {
			r.tickNs = append(r.tickNs, c.Time.UnixNano())
			r.tickSize = append(r.tickSize, c.TickSize)
		}
	}
	return r
}

// tickAt is the tick size in force at ns: the last change at or before it.
func (r *resting) tickAt(ns int64) float64 {
	tick := store.OpeningTickSize // before the first recorded change
	for k, t := range r.tickNs {
		if t > ns {
			break
		}
		tick = r.tickSize[k]
	}
	return tick
}

// onGrid puts x on the grid of tick, so that a limit is the decimal price
// a person would write, not a float sum's neighbour. A price off the grid
// (a best level left from a finer tick) goes to the grid price on the
// passive side, down for a BUY and up for a SELL: the order joins the
// level at no better a price than the strategy asked for, rather than
// reaching across the spread. A price within 1e-9 of a grid price is
// that price.
func onGrid(x, tick float64, buy bool) float64 {
	scale := 1.0
	for d := 0; d < 10 && math.Abs(tick*scale-math.Round(tick*scale)) > 1e-9; d++ {
		scale *= 10
	}
	units := x * scale
	if near := math.Round(units); math.Abs(units-near) <= tolerance*scale {
		return near / scale
	}
	if buy {
		return math.Floor(units) / scale
	}
	return math.Ceil(units) / scale
}

// rebateOn is a maker fill's estimated rebate, rounded down to 5 decimals.
func (r *resting) rebateOn(price, shares float64) float64 {
	return roundFee(r.rebate.on(price, shares) * r.rebateRate)
}

func (r *resting) record(a orderAction) {
	switch a.action {
	case OrderPlaced:
		r.counts[0]++
		if !a.buy && (r.leastSell == 0 || a.shares < r.leastSell) {
			r.leastSell = a.shares
		}
	case OrderFilled:
		r.counts[1]++
	case OrderRejected:
		r.counts[2]++
	case OrderCancelled:
		r.counts[3]++
	case OrderExpired:
		r.counts[4]++
	}
	if len(r.orders) < MaxOrders {
		r.orders = append(r.orders, a)
	}
	switch n := len(r.rested); {
	case a.action == OrderPlaced:
		r.rested = append(r.rested, restSpan{from: a.ns, to: math.MaxInt64})
	case n > 0 && r.rested[n-1].to == math.MaxInt64:
		r.rested[n-1].to = a.ns
	}
}

// restSpan is when an order rested, in Unix nanoseconds.
type restSpan struct{ from, to int64 }

// actions counts every action recorded, listed or not.
func (r *resting) actions() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

// end records the order's last action and forgets it.
func (r *resting) end(ns int64, action, reason string, price float64) {
	o := &r.o
	r.record(orderAction{ns: ns, action: action, buy: o.buy, price: price, shares: o.shares, reason: reason})
	o.live, o.active = false, false
}

// crossing is the size of the levels that cross the order at a tick (asks
// under a BUY's limit, bids over a SELL's): counted at that tick only. The
// books are best first, so the walk stops at the first level that does
// not cross.
func (o *restOrder) crossing(tk *store.Tick, t *store.Tape) float64 {
	var c float64
	if o.buy {
		// Most ticks: the best ask does not cross (or there is none), and
		// the levels are not read.
		if !(tk.BestAsk < o.limit-tolerance) {
			return 0
		}
		for _, l := range t.Side(tk.Asks) {
			if !isLevel(l) {
				continue
			}
			if l.Price >= o.limit-tolerance {
				break
			}
			c += l.Size
		}
		return c
	}
	if !(tk.BestBid > o.limit+tolerance) {
		return 0
	}
	for _, l := range t.Side(tk.Bids) {
		if !isLevel(l) {
			continue
		}
		if l.Price <= o.limit+tolerance {
			break
		}
		c += l.Size
	}
	return c
}

// queueAt is the queue ahead of the order that a book's side (bids for a
// BUY, asks for a SELL, best first) shows: 0 with no level or a limit that
// improves on the best, the size displayed at the limit when it lies
// within the levels (0 when none is there), and +Inf, unknown, when it
// lies beyond them. The walk stops once it has passed the limit; a limit
// that improves on the best level (Tick.BestBid, BestAsk) reads no level.
func (o *restOrder) queueAt(tk *store.Tick, t *store.Tape) float64 {
	levels, best := t.Side(tk.Bids), tk.BestBid
	if !o.buy {
		levels, best = t.Side(tk.Asks), tk.BestAsk
	}
	if best != best {
		return 0 // no level on the order's side
	}
	if d := best - o.limit; o.buy && d < -tolerance || !o.buy && -d < -tolerance {
		return 0 // the limit improves on the best level
	}
	return depthAt(levels, o.limit, o.buy)
}

// evidence counts one recorded trade for the order (DESIGN 6): a taker
// sale of the order's outcome at or under a BUY's limit (a purchase at or
// over a SELL's), or the other outcome's mirror of one. A trade at the
// limit first works off the queue ahead.
//
// k is the trade's index in the tape, price its price in the order's
// outcome's terms; it comes from the order's view (walkTrades), so it is
// of the direction that can fill the order: a taker buy never fills a
// resting BUY, nor a sale a SELL.
func (e *engine) evidence(k int, price float64, i int) {
	o, tt := &e.rest.o, &e.rest.trades
	through := price < o.limit-tolerance
	if !o.buy {
		through = price > o.limit+tolerance
	}
	at := math.Abs(price-o.limit) <= tolerance
	if !through && !at {
		return
	}
	rec := &tt.rec[k]
	same := rec.up == e.up
	if rec.hashed {
		// One match recorded on both outcomes counts once, whichever
		// outcome's event came first: the other outcome's mirror of a
		// match counted on this outcome, or this outcome's twin of a
		// mirror counted. Same-outcome trades sharing a hash all count
		// (one match may fill several makers), and so do mirrors.
		h := tt.hashOf(k)
		switch mirror, ok := o.hashes[h]; {
		case ok && mirror == same:
			return
		case !ok:
			if o.hashes == nil {
				o.hashes = map[string]bool{}
			}
			o.hashes[h] = !same // true: counted as the other outcome's mirror
		}
	}
	size := rec.size
	if through {
		o.counted += size
		return
	}
	e.showQueue(i)
	excess := size - o.queue
	o.queue = max(0, o.queue-size)
	if excess > 0 {
		o.counted += excess
	}
}

// replayResting is the replay of a GTC strategy: the loop of replay, with
// a resting order, the recorded trades walked between snapshots, and the
// orders list. It is a loop of its own so that the MARKET and LIMIT loop
// stays as lean as it is.
func (e *engine) replayResting() error {
	var vals [2]values
	for k := range numFields {
		vals[1][k] = math.NaN()
	}
	prev, cur := &vals[0], &vals[1]
	r, o := &e.rest, &e.rest.o
	var (
		lastNs int64 = math.MinInt64
		endNs        = e.endNs
	)
	for i := 0; i < len(e.ticks); i++ {
		sn := &e.ticks[i]
		cur, prev = prev, cur
		ns := sn.Nanos
		if ns < lastNs {
			return e.badSnapshot(i, "is older than the one before it: snapshots must be oldest first")
		}
		lastNs = ns
		pu, pd, cp := sn.PriceUp, sn.PriceDown, sn.CoinPrice
		if (pu-pu)+(pd-pd)+(cp-cp) != 0 {
			return e.badSnapshot(i, "has a non-finite price")
		}
		e.basicValues(cur, pu, pd, cp, float64(endNs-ns))
		if e.extended {
			e.extend(i, sn, cur)
		}
		price := e.price(sn)

		// An order placed or a decision pending: a call of its own, so
		// that the loop of a strategy waiting for its conditions stays as
		// lean as replay's. Most ticks of a resting order see no trade,
		// no clock ending it and a best level that does not cross it: they
		// are restingTick's without the call.
		if o.live || e.pending != noOrder {
			if o.active && e.pending == noOrder && ns < o.cancelNs && ns < endNs && r.nextNs > ns &&
				o.counted < o.shares-tolerance && (o.buy && !(sn.BestAsk < o.limit-tolerance) || !o.buy && !(sn.BestBid > o.limit+tolerance)) {
				if o.buy {
					// While an entry rests, entry conditions wait: the
					// ticks after this one that end nothing either (no
					// trade, no clock, no crossing ask) are passed over
					// with the checks every tick gets, their values
					// unneeded but the last one's, the next tick's prev.
					// Extended fields follow every tick (extend): not then.
					if !e.extended && !r.tickByTick {
						if j := e.restingBuyRun(i+1, lastNs, min(o.cancelNs, endNs, r.nextNs), o.limit-tolerance); j > i+1 {
							i = j - 1
							last := &e.ticks[i]
							lastNs = last.Nanos
							e.basicValues(cur, last.PriceUp, last.PriceDown, last.CoinPrice, float64(endNs-lastNs))
						}
					}
					continue
				}
				if m := mark(sn, price); e.shares*(e.entryFill-m) < e.stopLoss {
					e.dd.observe(e.size + e.realized + e.shares*(m-e.entryFill) - e.entryFee)
					// While an exit rests, exit conditions wait: the ticks
					// after this one that end nothing either are marked as
					// this one was, and passed over (restingBuyRun).
					if !e.extended && !r.tickByTick {
						if j := e.restingSellRun(i+1, lastNs, min(o.cancelNs, endNs, r.nextNs), o.limit+tolerance); j > i+1 {
							i = j - 1
							last := &e.ticks[i]
							lastNs = last.Nanos
							e.basicValues(cur, last.PriceUp, last.PriceDown, last.CoinPrice, float64(endNs-lastNs))
						}
					}
					continue
				}
			}
			if e.restingTick(i, sn, price) {
				continue
			}
		}
		if !e.open {
			if ns >= e.reentryAt && e.entry.all(cur, prev) {
				e.place(i, sn, price, true)
			}
			continue
		}
		mark := mark(sn, price)
		if e.shares*(e.entryFill-mark) >= e.stopLoss {
			e.stopOut(i, sn, price, mark)
			continue
		}
		if e.exit.any(cur, prev) && e.place(i, sn, price, false) {
			continue
		}
		if e.open {
			e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill) - e.entryFee)
		}
	}
	if o.active {
		// The order rests on after the last snapshot until it ends (DESIGN
		// 6): the trades recorded between that snapshot and its cancel or
		// end_time, whichever comes first, are evidence too, and a cancel
		// at or before end_time takes effect: the clock asks about the
		// cancel first, as at a snapshot (restingTick) or a trade
		// (walkTrades).
		e.walkTrades(len(e.ticks), min(o.cancelNs, e.endNs)-1)
	}
	if o.live && o.cancelNs <= e.endNs {
		// A cancel at or before end_time takes effect, whether the order
		// rested or never activated (no snapshot came at its due time):
		// as it would at a later snapshot (restingTick).
		r.end(o.cancelNs, OrderCancelled, OrderReasonCancelAfter, o.limit)
	}
	if o.live || e.pending == orderEntry || e.pending == orderExit {
		// A GTC acting as LIMIT whose latency outlasted the snapshots
		// never executed: it expires as an order that never activated.
		r.end(max(e.endNs, o.placedNs), OrderExpired, OrderReasonMarketEnd, o.limit)
	}
	if e.open {
		e.close(len(e.ticks), evMarketEnd, e.settle, e.settle, 0)
	}
	return nil
}

// basicValues sets a tick's values of the fields every replay reads.
func (e *engine) basicValues(v *values, pu, pd, cp, timeRemaining float64) {
	v[fPriceUp], v[fPriceDown], v[fCoinPrice] = pu, pd, cp
	if e.readsSpread {
		v[fSpread] = spreadOf(pu, pd)
	}
	v[fTimeRemaining] = timeRemaining
}

// restingBuyRun is the end of the run of ticks from tick j on that a
// resting entry passes over: each no older than the one before it (from
// lastNs), with finite prices, before stop (the order's cancel, the
// market's end, its next trade) and with no ask under lim. A tick that
// is any of these is the loop's own, which reports what is wrong with it.
func (e *engine) restingBuyRun(j int, lastNs, stop int64, lim float64) int {
	for ; j < len(e.ticks); j++ {
		t := &e.ticks[j]
		if t.Nanos < lastNs || t.Nanos >= stop || t.BestAsk < lim ||
			(t.PriceUp-t.PriceUp)+(t.PriceDown-t.PriceDown)+(t.CoinPrice-t.CoinPrice) != 0 {
			break
		}
		lastNs = t.Nanos
	}
	return j
}

// restingSellRun is restingBuyRun for a resting exit: its ticks have no
// bid over lim, and each is marked (the drawdown observed) as the loop
// would, up to one whose mark reaches the stop loss.
func (e *engine) restingSellRun(j int, lastNs, stop int64, lim float64) int {
	for ; j < len(e.ticks); j++ {
		t := &e.ticks[j]
		if t.Nanos < lastNs || t.Nanos >= stop || t.BestBid > lim ||
			(t.PriceUp-t.PriceUp)+(t.PriceDown-t.PriceDown)+(t.CoinPrice-t.CoinPrice) != 0 {
			break
		}
		m := mark(t, e.price(t))
		if !(e.shares*(e.entryFill-m) < e.stopLoss) {
			break
		}
		e.dd.observe(e.size + e.realized + e.shares*(m-e.entryFill) - e.entryFee)
		lastNs = t.Nanos
	}
	return j
}

// restingTick is tick i of replayResting while an order is placed or a
// decision pending, the side's price there price. It reports whether the
// tick is done; if not, the order ended and nothing is pending, and the
// loop goes on to the conditions.
func (e *engine) restingTick(i int, sn *store.Tick, price float64) bool {
	r, o := &e.rest, &e.rest.o
	ns := sn.Nanos
	// Trades up to this instant come first (at equal times a trade before
	// a snapshot), then what ends the order by the clock. Only an active
	// order reads them: activate skips the trades that came before it.
	if o.active && r.nextNs <= ns {
		e.walkTrades(i, ns)
	}
	if o.live {
		e.endByClock(ns)
	}

	if e.pending != noOrder {
		if ns >= e.dueNs {
			e.executeResting(i, sn, price)
		} else if e.open {
			e.observeOpen(sn, price)
		}
		return true
	}
	if !o.active {
		return false
	}
	// The tick's book shortens the queue once a trade at the limit needs
	// it (showQueue); here it is read only when it crosses the order.
	if !o.checked || sn.Bids != o.checkedBids || sn.Asks != o.checkedAsks || o.counted != o.checkedCountedAt {
		// Most ticks the best level does not cross the order, and the
		// levels are not read.
		var c float64
		if o.buy && sn.BestAsk < o.limit-tolerance || !o.buy && sn.BestBid > o.limit+tolerance {
			c = o.crossing(sn, e.tape)
		}
		if o.counted+c >= o.shares-tolerance {
			// The book crossed the order: it fills at this snapshot,
			// which is then the fill's own.
			e.makerFill(i, ns)
			return true
		}
		o.checked, o.checkedBids, o.checkedAsks, o.checkedCountedAt = true, sn.Bids, sn.Asks, o.counted
	}
	if o.buy {
		return true // while an entry rests, entry conditions wait
	}
	mark := mark(sn, price)
	if e.shares*(e.entryFill-mark) >= e.stopLoss {
		r.end(ns, OrderCancelled, OrderReasonMaxLoss, o.limit)
		e.stopOut(i, sn, price, mark)
		return true
	}
	e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill) - e.entryFee)
	return true
}

func (e *engine) observeOpen(tk *store.Tick, price float64) {
	e.dd.observe(e.size + e.realized + e.shares*(mark(tk, price)-e.entryFill) - e.entryFee)
}

// stopOut starts a MAX_LOSS exit at tick i, always MARKET, after the
// latency.
func (e *engine) stopOut(i int, tk *store.Tick, price, mark float64) {
	if e.delayNs != 0 {
		e.delay(orderMaxLoss, tk.Nanos, price)
		e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill) - e.entryFee)
		return
	}
	fill, fee := e.sellMarket(tk, price, e.shares)
	e.close(i, evMaxLoss, price, fill, fee)
}

// orderRest is a GTC placement waiting for its activation snapshot; the
// taker orders a GTC turns into wait as orderEntry and orderExit.
const orderRest order = orderMaxLoss + 1

// place decides an order at tick i: a BUY to enter or a SELL to exit. It
// reports whether the position changed at this tick (an exit that filled
// at once).
func (e *engine) place(i int, tk *store.Tick, price float64, buy bool) bool {
	r, o := &e.rest, &e.rest.o
	ns := tk.Nanos
	bb, ba := tk.BestBid, tk.BestAsk
	hasBid, hasAsk := bb == bb, ba == ba
	shares := e.size
	if !buy {
		shares = e.shares
	}
	*o = restOrder{live: true, buy: buy, shares: shares, placedNs: ns, decided: price, cancelNs: math.MaxInt64, queue: math.Inf(1)}
	if buy && !hasBid || !buy && !hasAsk {
		// No price to rest at: the order acts as LIMIT, at the side's ask
		// for an entry (its recorded price) and its bid for an exit.
		o.live = false
		o.limit = price
		if !buy {
			o.limit = mark(tk, price)
		}
		r.record(orderAction{ns: ns, action: OrderPlaced, buy: buy, price: o.limit, shares: shares, reason: OrderReasonSignal})
		if e.delayNs != 0 {
			kind := orderEntry
			if !buy {
				kind = orderExit
			}
			e.delay(kind, ns, price)
			e.limitPx = o.limit
			return false
		}
		return e.takerAt(i, tk, o.limit, price, price, buy)
	}
	tick := r.tickAt(ns)
	if buy {
		o.limit = onGrid(min(bb+float64(r.offsetTicks)*tick, 1-tick), tick, true)
	} else {
		o.limit = onGrid(max(ba-float64(r.offsetTicks)*tick, tick), tick, false)
	}
	if r.cancelAfterNs > 0 {
		o.cancelNs = ns + r.cancelAfterNs + e.delayNs
	}
	r.record(orderAction{ns: ns, action: OrderPlaced, buy: buy, price: o.limit, shares: shares, reason: OrderReasonSignal})
	if e.delayNs != 0 {
		e.delay(orderRest, ns, price)
		return false
	}
	return e.activate(i, tk, price)
}

// takerAt executes a GTC that acts as a taker at tick j: an entry buys
// what levels at or under limit hold, an exit sells the whole position at
// or over it or nothing. It records FILLED or CANCELLED and reports
// whether the position changed.
func (e *engine) takerAt(j int, tk *store.Tick, limit, price, shown float64, buy bool) bool {
	r := &e.rest
	if r.postOnly && takes(tk, limit, buy) {
		// Only a GTC with no price to rest at gets here with postOnly (a
		// crossing one was rejected at activation): it would take
		// liquidity as a taker, which postOnly forbids.
		shares := e.size
		if !buy {
			shares = e.shares
		}
		r.record(orderAction{ns: tk.Nanos, action: OrderRejected, buy: buy, price: limit, shares: shares, reason: OrderReasonPostOnly})
		return false
	}
	var filled bool
	if buy {
		n := e.entries
		e.enter(j, tk, limit, price, shown)
		filled = e.entries > n
	} else {
		filled = e.exitSignal(j, tk, limit, price, shown)
	}
	if filled {
		ev := &e.events[len(e.events)-1]
		r.record(orderAction{ns: tk.Nanos, action: OrderFilled, buy: buy, price: ev.fill, shares: ev.shares, reason: OrderReasonTaker})
		return true
	}
	shares := e.size
	if !buy {
		shares = e.shares
	}
	r.record(orderAction{ns: tk.Nanos, action: OrderCancelled, buy: buy, price: limit, shares: shares, reason: OrderReasonNoFill})
	return false
}

// takes reports whether a LIMIT at limit would take liquidity at tk: a
// BUY at or over the best ask (a SELL at or under the best bid), or any
// order where that side has no level, since it then fills at the
// snapshot's price (DESIGN 6).
func takes(tk *store.Tick, limit float64, buy bool) bool {
	if buy {
		ba := tk.BestAsk
		return ba != ba || limit >= ba-tolerance
	}
	bb := tk.BestBid
	return bb != bb || limit <= bb+tolerance
}

// activate puts the placed order on the book at tick j: rejected or taken
// at once when it would cross, else resting behind its queue. It reports
// whether the position changed at this tick.
func (e *engine) activate(j int, tk *store.Tick, price float64) bool {
	r, o := &e.rest, &e.rest.o
	bb, ba := tk.BestBid, tk.BestAsk
	// A recorded book, whether or not any of its levels is a level, or
	// it lists none at all (a book with no level on the order's side
	// shows no queue: Q = 0, as showQueue reads the same book at a later
	// tick). Only a snapshot without one leaves the queue unknown.
	hasBook := e.tape.HasBook(j)
	if hasBook {
		cross := false
		if o.buy {
			cross = ba == ba && o.limit >= ba-tolerance
		} else {
			cross = bb == bb && o.limit <= bb+tolerance
		}
		if cross {
			if r.postOnly {
				r.end(tk.Nanos, OrderRejected, OrderReasonPostOnly, o.limit)
				return false
			}
			o.live = false
			return e.takerAt(j, tk, o.limit, price, o.decided, o.buy)
		}
	}
	o.active = true
	// The trades up to this tick came before the order rested: the walk
	// starts after them.
	v, c := &r.trades.views[viewOf(o.buy)], &r.cursors[viewOf(o.buy)]
	*c = v.after(*c, tk.Nanos)
	r.nextNs = v.nextNs(*c)
	switch {
	case r.front:
		o.queue = 0
	case hasBook:
		o.queue = o.queueAt(tk, e.tape)
	}
	o.shown = j + 1
	return false
}

// executeResting carries out the pending decision at tick j.
func (e *engine) executeResting(j int, tk *store.Tick, price float64) {
	kind, decided := e.pending, e.decided
	e.pending = noOrder
	switch kind {
	case orderRest:
		// An order the clock ended before it activated does nothing.
		if (!e.rest.o.live || !e.activate(j, tk, price)) && e.open {
			e.observeOpen(tk, price)
		}
	case orderMaxLoss:
		fill, fee := e.sellMarket(tk, price, e.shares)
		e.close(j, evMaxLoss, decided, fill, fee)
	case orderEntry:
		e.takerAt(j, tk, e.limitPx, price, decided, true)
	case orderExit:
		if !e.takerAt(j, tk, e.limitPx, price, decided, false) {
			e.observeOpen(tk, price)
		}
	}
}

// endByClock ends the live order if, at ns, its cancelAfterMs has run out
// or the market has ended, whichever came first: a cancel due after
// end_time never takes effect (the order expired with the market), one
// due at end_time itself does, as finish has it. It says whether the
// order ended.
func (e *engine) endByClock(ns int64) bool {
	r, o := &e.rest, &e.rest.o
	switch {
	case ns >= o.cancelNs && o.cancelNs <= e.endNs:
		r.end(o.cancelNs, OrderCancelled, OrderReasonCancelAfter, o.limit)
	case ns >= e.endNs:
		r.end(max(e.endNs, o.placedNs), OrderExpired, OrderReasonMarketEnd, o.limit)
	default:
		return false
	}
	return true
}

// walkTrades walks the recorded trades up to ns (at or before it), as
// evidence for the active order, until the order ends; a fill between
// snapshots happens at the trade's instant.
//
// It walks the order's view of the trades (tradeTape.views) alone: the
// others are never evidence for it.
func (e *engine) walkTrades(i int, ns int64) {
	r, o := &e.rest, &e.rest.o
	v, c := &r.trades.views[viewOf(o.buy)], &r.cursors[viewOf(o.buy)]
	for ; o.active && *c < len(v.ns) && v.ns[*c] <= ns; *c++ {
		tns := v.ns[*c]
		if e.endByClock(tns) {
			continue
		}
		e.evidence(int(v.k[*c]), v.px[*c], i)
		if o.counted >= o.shares-tolerance {
			e.makerFillAt(i, tns)
		}
	}
	r.nextNs = v.nextNs(*c)
}

// after is the first trade from c on that is later than ns: a binary
// search, since an order may activate long after the view's last walk,
// past thousands of trades.
func (v *tradeView) after(c int, ns int64) int {
	hi := len(v.ns)
	for c < hi {
		h := int(uint(c+hi) >> 1)
		if v.ns[h] <= ns {
			c = h + 1
		} else {
			hi = h
		}
	}
	return c
}

// nextNs is the time of trade c of the view, MaxInt64 past its end.
func (v *tradeView) nextNs(c int) int64 {
	if c < len(v.ns) {
		return v.ns[c]
	}
	return math.MaxInt64
}

// showQueue shortens the active order's queue to what the books of the
// ticks before tick i show at its limit (queueAt), each in turn: the
// queue a trade between ticks i−1 and i meets. RISK_AVERSE only; a
// queue already 0 stays so.
//
// It is queueAt's rule, read as cheaply as a tick allows: a side the
// previous tick shared (the same Span) shows the same queue; the best
// level (Tick.BestBid, BestAsk) settles most ticks; and since a tick that
// reaches the levels has a best level no worse than the limit, their walk
// (depthAt) needs none of queueAt's checks before it.
func (e *engine) showQueue(i int) {
	o := &e.rest.o
	if e.rest.front {
		return
	}
	var last store.Span
	read := false
	queue, limit, buy := o.queue, o.limit, o.buy
	for j := o.shown; j < i && queue > 0; j++ {
		tk := &e.ticks[j]
		if !e.tape.HasBook(j) {
			continue // no book recorded: it shows nothing of the queue
		}
		side, best, size := tk.Bids, tk.BestBid, tk.BestBidSize
		if !buy {
			side, best, size = tk.Asks, tk.BestAsk, tk.BestAskSize
		}
		if read && side == last {
			continue // the side of the tick before: the same queue
		}
		read, last = true, side
		d := best - limit
		if !buy {
			d = -d
		}
		switch {
		case best != best || d < -tolerance:
			queue = 0 // no level on the order's side, or a limit better than the best (queueAt)
		case d <= tolerance && queue <= size:
			// The best level is at the limit: the book shows at least its
			// size there, no less than the queue already is.
		default:
			queue = min(queue, depthAt(e.tape.Side(side), limit, buy))
		}
	}
	o.queue = queue
	o.shown = max(o.shown, i)
}

// depthAt is the walk of a side whose best level is no worse than limit
// (queueAt, showQueue): the size displayed at limit when it lies within the levels (0
// when none is there), +Inf when every level is better. A loop a side, so
// that the walk does not ask which side it walks at every level.
//
// A side without a valid level shows 0, as queueAt says; the tape's best
// level (Tick.BestBid, BestAsk: store.BestOf of the side) rules that out
// before the walk, unless a tick was built with a best its levels lack.
func depthAt(levels []store.Level, limit float64, buy bool) float64 {
	var q float64
	seen, at := false, false
	// Most levels of a walk are valid and better than the limit: they are
	// asked about first, in one test (d at most MaxFloat64 rules out an
	// infinite price, d over tolerance a NaN), and the others as before.
	if buy {
		for _, l := range levels {
			if d := l.Price - limit; d > tolerance && d <= math.MaxFloat64 && l.Size > 0 {
				seen = true
				continue
			}
			if !(l.Size > 0 && l.Price-l.Price == 0) {
				continue
			}
			seen = true
			switch d := l.Price - limit; {
			case d < -tolerance:
				return q // past the limit
			case d <= tolerance:
				q, at = q+l.Size, true
			}
		}
	} else {
		for _, l := range levels {
			if d := -(l.Price - limit); d > tolerance && d <= math.MaxFloat64 && l.Size > 0 {
				seen = true
				continue
			}
			if !(l.Size > 0 && l.Price-l.Price == 0) {
				continue
			}
			seen = true
			switch d := -(l.Price - limit); {
			case d < -tolerance:
				return q
			case d <= tolerance:
				q, at = q+l.Size, true
			}
		}
	}
	switch {
	case !seen:
		return 0
	case at:
		return q
	}
	return math.Inf(1)
}

// makerFillAt fills the active order at a trade's instant tns, after
// snapshot i−1 and no later than snapshot i (i = len(e.ticks): after the
// last snapshot, before end_time).
func (e *engine) makerFillAt(i int, tns int64) {
	at := i - 1
	if i < len(e.ticks) && e.ticks[i].Nanos == tns {
		at = i
	}
	tk := &e.ticks[at]
	e.makerFillEvent(event{idx: i - 1, ns: tns, between: true, coin: tk.CoinPrice, mid: e.midAt(tk, e.price(tk))}, OrderReasonTrade)
}

// makerFill fills the active order at snapshot i, whose book crossed it.
func (e *engine) makerFill(i int, ns int64) {
	tk := &e.ticks[i]
	e.makerFillEvent(event{idx: i, ns: ns, coin: tk.CoinPrice, mid: e.midAt(tk, e.price(tk))}, OrderReasonCross)
	if e.open {
		e.observeOpen(&e.ticks[i], e.price(&e.ticks[i]))
	}
}

// makerFillEvent fills the active order whole at its limit, as a maker: no
// fee, no slippage, and an estimated rebate.
func (e *engine) makerFillEvent(ev event, reason string) {
	r, o := &e.rest, &e.rest.o
	ev.price, ev.fill, ev.maker = o.limit, o.limit, true
	ev.rebate = r.rebateOn(o.limit, o.shares)
	r.end(ev.ns, OrderFilled, reason, o.limit)
	if o.buy {
		ev.reason, ev.shares, ev.cum = evSignal, o.shares, e.realized
		e.open, e.shares, e.entryFill, e.entryFee = true, o.shares, o.limit, 0
		r.entryRebate = ev.rebate
		e.stopLoss = math.Inf(1)
		if cost := o.shares * o.limit; cost > 0 {
			e.stopLoss = e.maxLoss*cost - tolerance
		}
		e.entryRoom(ev.idx)
		e.events = append(e.events, ev)
		e.visible(ev.visibleAt())
		e.sums.entry(&ev)
		e.countEntry()
		return
	}
	ev.reason, ev.exit = evSignal, true
	e.closeAt(ev)
}
