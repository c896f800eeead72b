package replay

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// Trade event types and reasons as the wire spells them.
const (
	TradeEntry = "ENTRY"
	TradeExit  = "EXIT"

	// ReasonSignal: the entry conditions all held (ENTRY) or an exit
	// condition held (EXIT).
	ReasonSignal = "SIGNAL"
	// ReasonMaxLoss: the open position's loss, marked at the best bid,
	// reached maxLossPercent of its entry cost.
	ReasonMaxLoss = "MAX_LOSS"
	// ReasonMarketEnd: the position was still open after the last snapshot
	// and settled at the market's outcome.
	ReasonMarketEnd = "MARKET_END"
)

// tolerance absorbs float noise where DESIGN 6 compares for equality: the
// == operator, the MAX_LOSS threshold, a LIMIT order's price, and whether a
// LIMIT exit's levels hold the whole position.
const tolerance = 1e-9

// Run replays s against the resolved market m, tick by tick over snaps
// (oldest first, as store.SnapshotQuery{Ascending: true} returns them), and
// reports trades, performance and an equity curve, following DESIGN 6.
//
// Run is a pure function: it keeps no state, changes none of its inputs,
// and the same inputs give the same Result, byte for byte once encoded. It
// validates s itself (an *Error as Strategy.Validate gives) and applies the
// defaults, so s need not be normalized. An unresolved market is an *Error
// with code MARKET_NOT_RESOLVED, no snapshots one with NO_DATA. Snapshots
// out of time order or with a non-finite price are a plain error: that is
// bad data, not a bad request.
func Run(m store.Market, snaps []store.Snapshot, s Strategy) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	if !m.Resolved() {
		return Result{}, &Error{Code: CodeMarketNotResolved,
			Message: fmt.Sprintf("market %q is not resolved yet: only resolved markets can be replayed", m.Slug)}
	}
	if len(snaps) == 0 {
		return Result{}, &Error{Code: CodeNoData,
			Message: fmt.Sprintf("market %q has no recorded snapshots to replay", m.Slug)}
	}
	s.applyDefaults() // on Run's copy: the caller's strategy is left alone
	e := newEngine(m, snaps, s)
	if err := e.replay(); err != nil {
		return Result{}, err
	}
	return e.result(m, s), nil
}

// values holds one snapshot's condition values, indexed by field, and a
// slot, fNone, that is always 0 (see rule). Its length is a power of two so
// that indexing with field&fieldMask needs no bounds check.
type values [fieldMask + 1]float64

const fieldMask = 7

// Compile-time check that every field and fNone fit under fieldMask.
const _ = uint(fieldMask - fNone)

// fNone indexes the slot of values that is always 0.
const fNone = numFields

// rule is a Condition compiled for the inner loop. Every operator becomes
// the same test,
//
//	lo ≤ cur[field]−off ≤ hi  and  plo ≤ prev[pfield] ≤ phi,
//
// which is small enough to inline: a call per condition would make the
// compiler spill the loop's registers on every snapshot. The test is exact,
// not approximate: a strict bound becomes an inclusive one at the adjacent
// float (v < x exactly when v ≤ the float below x); == subtracts x and
// bounds the difference by ±1e-9, as |v−x| ≤ 1e-9 does; a rule that does
// not cross tests the always-0 slot against (−Inf, +Inf). Before the first
// snapshot the previous values are NaN, which fails every bound, so nothing
// crosses on the first snapshot.
type rule struct {
	off, lo, hi, plo, phi float64
	field, pfield         field
}

func compileRule(c Condition) rule {
	f, _ := parseField(c.Field)
	op, _ := parseOperator(c.Operator)
	x, inf := c.Value, math.Inf(1)
	below, above := math.Nextafter(x, -inf), math.Nextafter(x, inf)
	r := rule{field: f, pfield: fNone, lo: -inf, hi: inf, plo: -inf, phi: inf}
	switch op {
	case opLess:
		r.hi = below
	case opGreater:
		r.lo = above
	case opLessOrEqual:
		r.hi = x
	case opGreaterOrEqual:
		r.lo = x
	case opEqual:
		r.off, r.lo, r.hi = x, -tolerance, tolerance
	case opCrossesAbove: // previous ≤ x, current > x
		r.pfield, r.phi, r.lo = f, x, above
	case opCrossesBelow: // previous ≥ x, current < x
		r.pfield, r.plo, r.hi = f, x, below
	}
	return r
}

func (r *rule) holds(cur, prev *values) bool {
	d, p := cur[r.field&fieldMask]-r.off, prev[r.pfield&fieldMask]
	return d >= r.lo && d <= r.hi && p >= r.plo && p <= r.phi
}

// ruleSet is a list of compiled conditions held by value, so that compiling
// a strategy allocates nothing.
type ruleSet struct {
	n int
	r [MaxConditions]rule
}

func compile(cs []Condition) ruleSet {
	var set ruleSet
	for _, c := range cs {
		set.r[set.n] = compileRule(c)
		set.n++
	}
	return set
}

func (s *ruleSet) all(cur, prev *values) bool {
	for i := range s.r[:s.n] {
		if !s.r[i].holds(cur, prev) {
			return false
		}
	}
	return true
}

func (s *ruleSet) any(cur, prev *values) bool {
	for i := range s.r[:s.n] {
		if s.r[i].holds(cur, prev) {
			return true
		}
	}
	return false
}

// event is a trade event as the engine records it; the Result renders it.
type event struct {
	idx    int // snapshot index; len(snaps) for a MARKET_END settlement
	exit   bool
	reason string
	price  float64 // the snapshot's price of the side (or the settlement)
	fill   float64
	shares float64
	pnl    float64 // realized by this event
	cum    float64 // realized through this event
	coin   float64
}

// engine holds one replay: its inputs, precomputed once, the open
// position, and what the replay produced.
type engine struct {
	snaps    []store.Snapshot
	up       bool
	limit    bool // LIMIT orders (MAX_LOSS exits are MARKET regardless)
	size     float64
	maxLoss  float64 // fraction of the entry cost
	entry    ruleSet
	exit     ruleSet
	endNs    int64
	trpScale float64   // time_remaining_pct per nanosecond before end_time
	won      bool      // the side won: a MARKET_END settles at 1, else 0
	coinEnd  float64   // coin price for a MARKET_END event
	settleAt time.Time // time of a MARKET_END event

	// The position and the realized pnl live here rather than in the loop's
	// locals: the loop then holds nothing across the calls of a trade, and
	// the compiler need not spill registers on every snapshot for them.
	open      bool
	shares    float64
	entryFill float64
	stopLoss  float64 // the loss that forces a MAX_LOSS exit; +Inf for none
	realized  float64

	events []event
	dd     drawdown
}

func newEngine(m store.Market, snaps []store.Snapshot, s Strategy) *engine {
	e := &engine{
		snaps:   snaps,
		up:      s.Side == SideUp,
		limit:   s.OrderType == OrderLimit,
		size:    s.PositionSize,
		maxLoss: s.MaxLossPercent / 100,
		entry:   compile(s.EntryConditions),
		exit:    compile(s.ExitConditions),
		endNs:   m.EndTime.UnixNano(),
		// Compared without case: the side is UP/DOWN, the winner Up/Down.
		won:     strings.EqualFold(*m.Winner, s.Side),
		coinEnd: snaps[len(snaps)-1].CoinPrice,
		events:  make([]event, 0, 16),
		// Equity starts at positionSize: the most one position can cost.
		dd: drawdown{peak: s.PositionSize},
	}
	// A market without a positive span has no time left at any snapshot.
	if span := e.endNs - m.StartTime.UnixNano(); span > 0 {
		e.trpScale = 100 / float64(span)
	}
	// A settlement follows the last snapshot, also when snapshots were
	// recorded past end_time, so that trades and the curve stay in order.
	e.settleAt = m.EndTime
	if last := snaps[len(snaps)-1].Time; last.After(e.settleAt) {
		e.settleAt = last
	}
	if m.CoinPriceEnd != nil && finite(*m.CoinPriceEnd) {
		e.coinEnd = *m.CoinPriceEnd
	}
	return e
}

// side returns the book and price of the strategy's side at a snapshot.
func (e *engine) side(sn *store.Snapshot) (*store.Book, float64) {
	if e.up {
		return sn.BookUp, sn.PriceUp
	}
	return sn.BookDown, sn.PriceDown
}

// replay is the inner loop: one pass over the snapshots that allocates
// only for a trade event and reads each snapshot's instant once, as
// nanoseconds, with time_remaining_pct a linear function of it. The rare
// actions (enter, exit) are calls; the common path is inline.
func (e *engine) replay() error {
	// The current and previous snapshot's values alternate between two
	// arrays instead of being copied: copying right after the field-by-field
	// stores stalls on store forwarding. Before the first snapshot the
	// "previous" values are NaN, so nothing crosses on it (see rule).
	var vals [2]values
	for k := range numFields {
		vals[1][k] = math.NaN()
	}
	prev, cur := &vals[0], &vals[1] // swapped at the top of each turn
	var (
		lastNs   int64 = math.MinInt64
		endNs          = e.endNs
		trpScale       = e.trpScale
	)
	for i := range e.snaps {
		sn := &e.snaps[i]
		cur, prev = prev, cur
		ns := sn.Time.UnixNano()
		if ns < lastNs {
			return e.badSnapshot(i, "is older than the one before it: snapshots must be oldest first")
		}
		lastNs = ns
		pu, pd, cp := sn.PriceUp, sn.PriceDown, sn.CoinPrice
		// x-x is 0 for a finite x and NaN otherwise; one test for three.
		if (pu-pu)+(pd-pd)+(cp-cp) != 0 {
			return e.badSnapshot(i, "has a non-finite price")
		}
		cur[fPriceUp], cur[fPriceDown], cur[fCoinPrice] = pu, pd, cp
		cur[fSpread] = math.Abs(pu - pd)
		cur[fTimeRemaining] = float64(endNs-ns) * trpScale
		book, price := e.side(sn)

		if !e.open {
			if e.entry.all(cur, prev) {
				e.enter(i, book, price)
			}
			continue
		}
		// In position, and not on the entry's own snapshot: that one
		// continued above.
		mark := bestBid(book, price)
		if e.shares*(e.entryFill-mark) >= e.stopLoss {
			e.close(i, ReasonMaxLoss, price, sellMarket(book, price, e.shares))
			continue
		}
		if e.exit.any(cur, prev) && e.exitSignal(i, book, price) {
			continue
		}
		e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill))
	}
	if e.open {
		settle := 0.0
		if e.won {
			settle = 1
		}
		e.close(len(e.snaps), ReasonMarketEnd, settle, settle)
	}
	return nil
}

// badSnapshot reports bad data at snapshot i. It is a function of its own
// so that the loop keeps nothing alive for the message.
func (e *engine) badSnapshot(i int, problem string) error {
	return fmt.Errorf("replay: snapshot %d (%s) %s", i, e.snaps[i].Time.UTC().Format(timeLayout), problem)
}

// enter buys at snapshot i, if the order fills.
func (e *engine) enter(i int, book *store.Book, price float64) {
	fill, shares, ok := e.buy(book, price)
	if !ok {
		return
	}
	e.open, e.shares, e.entryFill = true, shares, fill
	// DESIGN 6: the loss reaches maxLossPercent of the entry cost, within
	// 1e-9. A position that cost nothing cannot lose.
	e.stopLoss = math.Inf(1)
	if cost := shares * fill; cost > 0 {
		e.stopLoss = e.maxLoss*cost - tolerance
	}
	e.events = append(e.events, event{idx: i, reason: ReasonSignal, price: price,
		fill: fill, shares: shares, cum: e.realized, coin: e.snaps[i].CoinPrice})
	e.dd.observe(e.size + e.realized + shares*(bestBid(book, price)-fill))
}

// exitSignal sells on an exit signal at snapshot i and reports whether the
// order filled.
func (e *engine) exitSignal(i int, book *store.Book, price float64) bool {
	fill, ok := sellMarket(book, price, e.shares), true
	if e.limit {
		fill, ok = sellLimit(book, price, e.shares)
	}
	if ok {
		e.close(i, ReasonSignal, price, fill)
	}
	return ok
}

// close ends the position at snapshot i (len(snaps) for a settlement).
func (e *engine) close(i int, reason string, price, fill float64) {
	pnl := e.shares * (fill - e.entryFill)
	e.realized += pnl
	coin := e.coinEnd
	if i < len(e.snaps) {
		coin = e.snaps[i].CoinPrice
	}
	e.events = append(e.events, event{idx: i, exit: true, reason: reason, price: price,
		fill: fill, shares: e.shares, pnl: pnl, cum: e.realized, coin: coin})
	e.open = false
	e.dd.observe(e.size + e.realized)
}

// drawdown tracks the largest peak-to-trough fall of equity.
type drawdown struct {
	peak   float64 // highest equity so far
	max    float64 // largest fall in dollars
	atPeak float64 // the peak the largest fall fell from
}

func (d *drawdown) observe(equity float64) {
	if equity > d.peak {
		d.peak = equity
	} else if fall := d.peak - equity; fall > d.max {
		d.max, d.atPeak = fall, d.peak
	}
}

// isLevel reports whether l is a level DESIGN 6 counts: positive size (NaN
// is not) and a finite price.
func isLevel(l store.Level) bool { return l.Size > 0 && l.Price-l.Price == 0 }

// bestBid is the price the open position could sell at now: the best bid
// of the side, or its snapshot price where no bid is recorded.
func bestBid(b *store.Book, price float64) float64 {
	if b != nil {
		for _, l := range b.Bids {
			if isLevel(l) {
				return l.Price
			}
		}
	}
	return price
}

// walk is the outcome of taking liquidity from one side of a book.
type walk struct {
	seen  bool    // the side has at least one level
	taken float64 // shares taken
	cost  float64 // their total price
	left  float64 // shares still wanted
	last  float64 // price of the last level taken from
}

// take walks levels best first, taking up to want shares from those at or
// better than limit (asks: price ≤ limit; bids: price ≥ limit) and stopping
// at the first level beyond it. The book is read, never changed: a replay
// takes one action per snapshot, so no level is consumed twice in a tick.
func take(levels []store.Level, want, limit float64, asks bool) walk {
	w := walk{left: want}
	for _, l := range levels {
		if !isLevel(l) {
			continue
		}
		w.seen = true
		if asks && l.Price > limit || !asks && l.Price < limit {
			break
		}
		q := min(w.left, l.Size)
		w.taken += q
		w.cost += q * l.Price
		w.left -= q
		w.last = l.Price
		if w.left <= 0 {
			break
		}
	}
	return w
}

// buy fills an entry of e.size shares at a snapshot whose side has book b
// and price p. It returns the volume-weighted fill price and the shares
// bought; ok is false when a LIMIT order finds nothing at or under p.
func (e *engine) buy(b *store.Book, p float64) (fill, shares float64, ok bool) {
	var asks []store.Level
	if b != nil {
		asks = b.Asks
	}
	limit := math.Inf(1)
	if e.limit {
		limit = p + tolerance
	}
	w := take(asks, e.size, limit, true)
	switch {
	case !w.seen:
		return p, e.size, true
	case w.taken == 0:
		return 0, 0, false
	case w.left <= 0:
		// Filled in full: the position is exactly the size asked for, not a
		// float sum of the pieces.
		return w.cost / e.size, e.size, true
	}
	// A thin book (MARKET) or a limit (LIMIT): buy what there is.
	return w.cost / w.taken, w.taken, true
}

// sellMarket sells the whole position. What the recorded levels cannot
// absorb goes at the worst recorded level's price: recorded books are
// truncated to their top levels and deeper liquidity is assumed there.
func sellMarket(b *store.Book, p, shares float64) float64 {
	var bids []store.Level
	if b != nil {
		bids = b.Bids
	}
	w := take(bids, shares, math.Inf(-1), false)
	if !w.seen {
		return p
	}
	return (w.cost + max(w.left, 0)*w.last) / shares
}

// sellLimit sells the whole position at p or better, or nothing (ok false).
func sellLimit(b *store.Book, p, shares float64) (fill float64, ok bool) {
	var bids []store.Level
	if b != nil {
		bids = b.Bids
	}
	w := take(bids, shares, p-tolerance, false)
	switch {
	case !w.seen:
		return p, true
	case w.left > tolerance:
		return 0, false
	}
	// A sliver within tolerance goes at the last price taken.
	return (w.cost + max(w.left, 0)*w.last) / shares, true
}
