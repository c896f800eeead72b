package replay

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/updown/updown/jobs/stats"
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
// reports trades, performance and an equity curve, following DESIGN 6. It
// is RunTrades without recorded trades.
func Run(m store.Market, snaps []store.Snapshot, s Strategy) (Result, error) {
	return RunTrades(m, snaps, nil, s)
}

// RunTrades replays s against m over snaps and the market's recorded
// trades (oldest first), which display prices and resting orders read. It
// packs snaps into tapes and runs RunInput.
//
// A replay is a pure function: it keeps no state, changes none of its
// inputs, and the same inputs give the same Result, byte for byte once
// encoded. It validates s itself (an *Error as Strategy.Validate gives) and
// applies the defaults, so s need not be normalized. An unresolved market
// is an *Error with code MARKET_NOT_RESOLVED, no snapshots one with
// NO_DATA. Snapshots out of time order or with a non-finite price are a
// plain error: that is bad data, not a bad request.
func RunTrades(m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, s Strategy) (Result, error) {
	in := Input{Market: m, Trades: trades}
	var err error
	if in.Tape, err = store.TapeOf(snaps, s.Outcome()); err != nil {
		return Result{}, fmt.Errorf("replay: %w", err)
	}
	if s.Needs().OtherBook {
		other := store.OutcomeUp
		if s.Outcome() == store.OutcomeUp {
			other = store.OutcomeDown
		}
		if in.Other, err = store.TapeOf(snaps, other); err != nil {
			return Result{}, fmt.Errorf("replay: %w", err)
		}
	}
	return RunInput(in, s)
}

// RunTape is RunInput for a strategy that reads nothing but its side's
// tape (see Strategy.Needs), as store.Store.ReadTape returns it.
func RunTape(m store.Market, t *store.Tape, s Strategy) (Result, error) {
	return RunInput(Input{Market: m, Tape: t}, s)
}

// RunInput replays s over what in carries of one market. A replay reads
// nothing else of a market, and a tape holds no pointers, so a worker can
// keep many of them without slowing its garbage collections.
func RunInput(in Input, s Strategy) (Result, error) {
	return RunWindow(in, s, TradeWindow{})
}

// RunWindow is RunInput answering the trade events w selects.
func RunWindow(in Input, s Strategy, w TradeWindow) (Result, error) {
	e, s, err := replayInput(in, s, keepAll)
	if err != nil {
		return Result{}, err
	}
	defer e.release()
	r := e.result(in.Market, s, w)
	if warn := tradeGapWarning(in.Gaps, e.rest.rested); warn != "" {
		r.Warnings = append(r.Warnings, warn)
	}
	return r, nil
}

// RunPerformance is RunTape for a caller that wants the performance alone.
func RunPerformance(m store.Market, t *store.Tape, s Strategy) (Performance, error) {
	return PerformanceOf(Input{Market: m, Tape: t}, s)
}

// PerformanceOf is RunInput for a caller that wants the performance
// alone, as a backtest does: the same figures, without the trades and the
// equity curve, whose rendering costs twice what the replay itself does.
func PerformanceOf(in Input, s Strategy) (Performance, error) {
	e, _, err := replayInput(in, s, keepLast)
	if err != nil {
		return Performance{}, err
	}
	defer e.release()
	return e.performance(in.Market), nil
}

// RoundTrip is one ENTRY and its EXIT as a sweep's statistics read them:
// the entry's fill and the side's mid there, the trip's pnl and fees, and
// what the side settled at (1 won, 0 lost, 0.5 for a 50-50 market).
type RoundTrip struct {
	EntryFill float64 `json:"entry_fill"`
	EntryMid  float64 `json:"entry_mid"`
	PnL       float64 `json:"pnl"`
	Fees      float64 `json:"fees"`
	Won       float64 `json:"won"`
}

// SumTrips is the sums of round trips as the statistics read them (a
// shard keeps them in place of the trips), nil for none.
func SumTrips(trips []RoundTrip) *stats.TradeSums {
	if len(trips) == 0 {
		return nil
	}
	var s stats.TradeSums
	for _, t := range trips {
		s.AddTrade(stats.Trade{PnL: t.PnL, EntryPrice: t.EntryFill, EntryMid: t.EntryMid, Won: t.Won})
	}
	return &s
}

// TradeSums replays s over in and returns the performance and the sums of
// its round trips, their money rounded to 6 decimals as every figure of an
// answer (nil without trades), without rendering trades or a curve, and
// without keeping the trips: what a sweep or backtest shard keeps of each
// trial, in a few hundred bytes however many trades it made.
func TradeSums(in Input, s Strategy) (Performance, *stats.TradeSums, error) {
	e, _, err := replayInput(in, s, keepSums)
	if err != nil {
		return Performance{}, nil, err
	}
	defer e.release()
	if e.tradeSums.N == 0 {
		return e.performance(in.Market), nil, nil
	}
	sums := e.tradeSums
	return e.performance(in.Market), &sums, nil
}

// keeping says what a replay keeps of its trade events as they are
// recorded: all of them for an answer that lists them, or only the last
// (the performance is summed as they come), with or without the sums of
// the round trips. A replay that trades on every other snapshot of a 24hr
// market writes tens of megabytes of events that a performance never
// reads.
type keeping uint8

const (
	keepAll  keeping = iota // every event, for a Result
	keepLast                // the last event alone
	keepSums                // the last event, and each round trip added to the sums as it closes
)

// replayInput checks its inputs, replays s over them, and returns the
// engine that holds what the replay recorded, with s as it ran (defaults
// applied).
func replayInput(in Input, s Strategy, keep keeping) (*engine, Strategy, error) {
	m, t := in.Market, in.Tape
	if err := s.Validate(); err != nil {
		return nil, s, err
	}
	if !m.Resolved() {
		return nil, s, &Error{Code: CodeMarketNotResolved,
			Message: fmt.Sprintf("market %q is not resolved yet: only resolved markets can be replayed", m.Slug)}
	}
	if t == nil || t.Len() == 0 {
		return nil, s, &Error{Code: CodeNoData,
			Message: fmt.Sprintf("market %q has no recorded snapshots to replay", m.Slug)}
	}
	if t.Outcome != s.Outcome() {
		return nil, s, fmt.Errorf("replay: the tape of %s carries the books of %q, the strategy trades %q",
			m.Slug, t.Outcome, s.Outcome())
	}
	if err := checkInput(in, s); err != nil {
		return nil, s, err
	}
	s.applyDefaults() // on this copy: the caller's strategy is left alone
	e := newEngine(in, s, keep)
	var err error
	if s.OrderType == OrderGTC {
		err = e.replayResting()
	} else {
		err = e.replay()
	}
	if err != nil {
		return nil, s, err
	}
	return e, s, nil
}

// values holds one snapshot's condition values, indexed by field, and a
// slot, fNone, that is always 0 (see rule). Its length is a power of two so
// that indexing with field&fieldMask needs no bounds check.
type values [fieldMask + 1]float64

const fieldMask = 31

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

// inTimeLeft makes the set's conditions on time_remaining_pct conditions
// on the time left before end_time, in ns, which the loops give that field
// (a conversion of the snapshot's instant, where the percentage costs a
// division a snapshot; multiplying by a rounded 100/span instead is a last
// bit off at a quarter of a 5m market's 300 ms grid, enough to flip a
// condition on a value a snapshot meets exactly). DESIGN 6's percentage,
// 100·left/span computed as written, never falls as left grows, so the
// snapshots whose percentage a rule's bounds admit are those whose time
// left lies between two bounds, found here by bisection on that very
// expression: the rule holds at exactly the snapshots it held at. A
// market without a positive span has 0 left in percent at every snapshot.
func (s *ruleSet) inTimeLeft(span int64) {
	pct := func(left int64) float64 {
		if span <= 0 {
			return 0
		}
		return float64(left) * 100 / float64(span)
	}
	// near is about the time left whose percentage is p: where the search
	// begins, a few evaluations from its answer.
	near := func(p float64) int64 {
		if span <= 0 {
			return 0
		}
		return int64(max(min(math.Round(p*float64(span)/100), maxLeft), -maxLeft)) // NaN: -maxLeft
	}
	for k := range s.n {
		r := &s.r[k]
		if r.field&fieldMask == fTimeRemaining {
			off := r.off
			r.lo, r.hi = leftBounds(func(left int64) float64 { return pct(left) - off }, func(x float64) int64 { return near(x + off) }, r.lo, r.hi)
			r.off = 0
		}
		if r.pfield&fieldMask == fTimeRemaining {
			r.plo, r.phi = leftBounds(pct, near, r.plo, r.phi)
		}
	}
}

// maxLeft bounds the time left inTimeLeft searches, in ns either side of
// end_time: every such time is exact as a float64 (104 days).
const maxLeft = 1 << 53

// leftBounds returns the times left, as float64, whose value v(left)
// (non-decreasing in left) lies within [lo, hi]: from the first to the last
// such time, -Inf and +Inf where the bound admits every time (an infinite
// bound, or the first or last time searched), and +Inf, -Inf when none.
// near(x) is about the time whose value is x, where each search begins.
func leftBounds(v func(int64) float64, near func(float64) int64, lo, hi float64) (float64, float64) {
	inf := math.Inf(1)
	from, to := -inf, inf
	if !math.IsInf(lo, -1) {
		switch l := firstFrom(func(t int64) bool { return v(t) >= lo }, near(lo)); {
		case l > maxLeft:
			return inf, -inf
		case l > -maxLeft:
			from = float64(l)
		}
	}
	if !math.IsInf(hi, 1) {
		switch l := firstFrom(func(t int64) bool { return v(t) > hi }, near(hi)); {
		case l <= -maxLeft:
			return inf, -inf
		case l <= maxLeft:
			to = float64(l - 1)
		}
	}
	return from, to
}

// firstFrom returns the first time in [-maxLeft, maxLeft] from which ok
// (false, then true) holds, maxLeft+1 if it never does: it steps out from
// g in doubling strides until it has the answer between two times, then
// bisects, a few evaluations of ok when g is near the answer (a replay
// compiles its conditions once, a sweep's short markets by the thousand).
func firstFrom(ok func(int64) bool, g int64) int64 {
	a, b := int64(-maxLeft), int64(maxLeft+1) // the answer is in [a, b]
	if g > a && g < b {
		if ok(g) {
			b = g
			for step := int64(1); g-step > a; step *= 2 {
				if !ok(g - step) {
					a = g - step + 1
					break
				}
				b = g - step
			}
		} else {
			a = g + 1
			for step := int64(1); g+step < b; step *= 2 {
				if ok(g + step) {
					b = g + step
					break
				}
				a = g + step + 1
			}
		}
	}
	for a < b {
		if m := a + (b-a)/2; ok(m) {
			b = m
		} else {
			a = m + 1
		}
	}
	return a
}

// event is a trade event as the engine records it; the Result renders it.
type event struct {
	idx int // snapshot index; len(snaps) for a MARKET_END settlement
	// ns is the event's time: its snapshot's, end_time's for a
	// settlement, or a maker fill's own instant.
	ns     int64
	price  float64 // the snapshot's price of the side (or the settlement)
	fill   float64
	shares float64
	fee    float64 // paid on this fill, rounded down to 5 decimals
	pnl    float64 // realized by this event
	cum    float64 // realized through this event
	coin   float64
	// rebate is a maker fill's estimated maker rebate.
	rebate float64
	// mid is an ENTRY's side mid at its snapshot (or the last one before a
	// maker fill): the market's own forecast, for calibration.
	mid    float64
	reason evReason
	exit   bool
	// A maker fill (GTC): between is set when it happened after snapshot
	// idx and before the next.
	maker   bool
	between bool
}

// evReason is a trade event's reason; an event holds no pointer, so that
// the events of a replay trading tens of thousands of times cost the
// collector nothing to mark.
type evReason uint8

const (
	evSignal evReason = iota
	evMaxLoss
	evMarketEnd
)

func (r evReason) String() string {
	return [...]string{ReasonSignal, ReasonMaxLoss, ReasonMarketEnd}[r]
}

// eventBuffers recycles the engine's lists of events: a replay trading
// tens of thousands of times grows its list through a dozen copies, which
// cost more than the replay itself.
var eventBuffers eventPool

type eventPool struct{ p sync.Pool }

// eventLists are the lists a replay that keeps every event fills: the
// events, and beside each the snapshot it is visible from (visibleAt),
// four bytes where an event takes a hundred. The equity curve reads the
// second alone to place its points, so a replay trading on every other
// snapshot does not stream its tens of megabytes of events twice more.
type eventLists struct {
	events []event
	vis    []int32
}

// maxPooledEvents bounds the lists kept: those of a 24hr market of 300 ms
// snapshots trading on every one of them (288,001 events, 28 MB), no
// larger.
const maxPooledEvents = 290_000

func (ep *eventPool) get() eventLists {
	if b, ok := ep.p.Get().(*eventLists); ok {
		return eventLists{b.events[:0], b.vis[:0]}
	}
	return eventLists{make([]event, 0, 16), make([]int32, 0, 16)}
}

func (ep *eventPool) put(b eventLists) {
	// (A list grown to the bound is allocated a little above it.)
	if c := cap(b.events); c > 16 && c <= maxPooledEvents+maxPooledEvents/64 {
		ep.p.Put(&eventLists{b.events[:0], b.vis[:0]})
	}
}

// engines recycles engines: a sweep shard replays a market once per
// trial, tens of thousands of times a second, and an engine allocated for
// each (3 KB) kept the garbage collector running on every core beside the
// replays of other customers.
var engines = sync.Pool{New: func() any { return new(engine) }}

// release hands the engine's events and the engine itself back once the
// answer is built from them; the engine is not used after.
func (e *engine) release() {
	if e.keep == keepAll {
		eventBuffers.put(eventLists{e.events, e.vis})
	}
	*e = engine{} // the pool holds no market, trades or orders
	engines.Put(e)
}

// grow makes room in the full list of events for what the rest of the
// replay will need at the rate events came through snapshot i, a quarter
// more: append's growth, a quarter at a time past a few hundred events,
// would copy the list of a replay that trades on every other snapshot
// some thirty times, which costs more than its trades.
func (e *engine) grow(i int) {
	n, left := len(e.events), len(e.ticks)-i
	more := max(16, n/4)
	if left > 0 {
		est := n * left / (i + 1)
		more = max(more, est+est/4)
	}
	if n < maxPooledEvents {
		// A list the pool keeps grows past its bound only when it must.
		more = min(more, maxPooledEvents-n)
	}
	e.events = slices.Grow(e.events, more)
	e.vis = slices.Grow(e.vis, more)
}

// entryRoom makes room for an ENTRY event recorded at snapshot i. A list
// that keeps every event grows when full; one that keeps the last alone
// starts again: an entry opens a position, and no event before it is read
// again (closeAt reads the entry of the position it closes), so the last
// event is never copied to the front on every trade.
func (e *engine) entryRoom(i int) {
	if e.keep != keepAll {
		e.events = e.events[:0]
		return
	}
	if len(e.events) == cap(e.events) {
		e.grow(i)
	}
}

// visible records, under keepAll, the snapshot the event just appended is
// visible from.
func (e *engine) visible(at int) {
	if e.keep == keepAll {
		e.vis = append(e.vis, int32(at))
	}
}

// visibleAt is the first snapshot whose state includes the event.
func (ev *event) visibleAt() int {
	if ev.between {
		return ev.idx + 1
	}
	return ev.idx
}

// engine holds one replay: its inputs, precomputed once, the open
// position, and what the replay produced.
type engine struct {
	tape     *store.Tape
	ticks    []store.Tick // tape.Ticks
	up       bool
	limit    bool // LIMIT orders (MAX_LOSS exits are MARKET regardless)
	size     float64
	maxLoss  float64 // fraction of the entry cost
	entry    ruleSet
	exit     ruleSet
	endNs    int64
	settle   float64   // a MARKET_END's price per share: 1 won, 0 lost, 0.5 for 50-50
	coinEnd  float64   // coin price for a MARKET_END event
	settleAt time.Time // time of a MARKET_END event
	fee      feeSchedule
	delayNs  int64 // latencyMs in nanoseconds; 0 executes on the deciding snapshot

	// The fields beyond SPEC's five, when the strategy reads one.
	extended bool
	// readsSpread says a condition reads spread: only then is its
	// decimal difference (spreadOf) worth its rounding on every tick.
	readsSpread bool
	fields      fieldState

	// Re-entry control: no entry is decided before reentryAt (the last
	// exit's time plus the cooldown, or never once the entries allowed
	// have happened).
	cooldownNs int64
	maxEntries int
	entries    int
	reentryAt  int64

	// The position and the realized pnl live here rather than in the loop's
	// locals: the loop then holds nothing across the calls of a trade, and
	// the compiler need not spill registers on every snapshot for them.
	open      bool
	shares    float64
	entryFill float64
	entryFee  float64
	stopLoss  float64 // shares×(entry fill − mark) that forces a MAX_LOSS exit; +Inf for none
	realized  float64

	// An order decided but not yet executed (latency): what it is, the
	// deciding snapshot's price of the side, and the earliest time it
	// executes at.
	pending order
	decided float64
	limitPx float64 // a LIMIT exit's limit: the held side's best bid at the decision
	dueNs   int64

	// Resting orders (GTC), and what the maker replay records beside
	// the trades.
	rest resting

	// The trade events recorded, all of them or the last alone (keep),
	// and the sums of the round trips closed, when keep asks for them.
	keep      keeping
	events    []event
	vis       []int32         // under keepAll: each event's visibleAt, for the curve
	short     [2]event        // events' array when it keeps the last event only
	tradeSums stats.TradeSums // of the round trips, under keepSums
	sums      sums            // of the events, as they are recorded
	dd        drawdown
	// leastSold is the fewest shares an exit sold in one order (0 before
	// any): under the market's minimum, Polymarket refuses the order.
	leastSold float64
}

// sums accumulates what the performance reads of the trade events as each
// is recorded, in their order: the very sums a pass over the events would
// make, without that pass over a list tens of megabytes long on a
// strategy that trades on every other snapshot.
type sums struct {
	total, entryCosts, best, worst, fees, rebates float64
	inPosNs, entryNs                              int64
	trades, wins, losses                          int
}

// entry adds an ENTRY event.
func (t *sums) entry(ev *event) {
	t.fees += ev.fee
	t.rebates += ev.rebate
	t.entryCosts += ev.shares*ev.fill + ev.fee
	t.entryNs = ev.ns
}

// exit adds an EXIT event that closed the position at exitNs (the end of
// the recorded span for a MARKET_END).
func (t *sums) exit(ev *event, exitNs int64) {
	t.fees += ev.fee
	t.rebates += ev.rebate
	if exitNs > t.entryNs { // a maker entry after the last snapshot holds none of the recorded span
		t.inPosNs += exitNs - t.entryNs
	}
	if t.trades == 0 || ev.pnl > t.best {
		t.best = ev.pnl
	}
	if t.trades == 0 || ev.pnl < t.worst {
		t.worst = ev.pnl
	}
	t.trades++
	t.total += ev.pnl
	// Judged by the pnl the client sees, so a trade shown as 0 is
	// neither a win nor a loss: round6(pnl) is positive exactly when
	// pnl·1e6 reaches 0.5 (math.Round rounds half away from zero), and a
	// non-finite pnl shows as 0 (winLoss).
	switch winLoss(ev.pnl) {
	case 1:
		t.wins++
	case -1:
		t.losses++
	}
}

// winLoss is the sign of round6(pnl), without its division: 1, -1, or 0
// for a pnl shown as 0.
func winLoss(pnl float64) int {
	switch u := pnl * 1e6; {
	case pnl-pnl != 0: // NaN or ±Inf: round6 shows 0
		return 0
	case u >= 0.5:
		return 1
	case u <= -0.5:
		return -1
	}
	return 0
}

func newEngine(in Input, s Strategy, keep keeping) *engine {
	m, t := in.Market, in.Tape
	ticks := t.Ticks
	e := engines.Get().(*engine)
	*e = engine{
		tape:    t,
		ticks:   ticks,
		up:      s.Side == SideUp,
		limit:   s.OrderType == OrderLimit,
		size:    s.PositionSize,
		maxLoss: s.MaxLossPercent / 100,
		entry:   compile(s.EntryConditions),
		exit:    compile(s.ExitConditions),
		endNs:   m.EndTime.UnixNano(),
		coinEnd: ticks[len(ticks)-1].CoinPrice,
		fee:     feeScheduleOf(m, s),
		delayNs: int64(s.LatencyMs) * int64(time.Millisecond),

		cooldownNs: int64(s.ReentryCooldownMs) * int64(time.Millisecond),
		maxEntries: s.MaxEntriesPerMarket,
		reentryAt:  math.MinInt64,
		keep:       keep,
		// Equity starts at positionSize: the most one position can cost.
		dd: drawdown{peak: s.PositionSize},
	}
	if keep == keepAll {
		l := eventBuffers.get()
		e.events, e.vis = l.events, l.vis
	} else {
		e.events = e.short[:0]
	}
	// Compared without case: the side is UP/DOWN, the winner Up/Down. A
	// tie settles both sides at half (DESIGN 6).
	switch {
	case *m.Winner == store.OutcomeFiftyFifty:
		e.settle = 0.5
	case strings.EqualFold(*m.Winner, s.Side):
		e.settle = 1
	}
	// time_remaining_pct is read as the time left (see inTimeLeft); a
	// market without a positive span has none at any snapshot.
	span := e.endNs - m.StartTime.UnixNano()
	e.entry.inTimeLeft(span)
	e.exit.inTimeLeft(span)
	// A settlement follows the last snapshot, also when snapshots were
	// recorded past end_time, so that trades and the curve stay in order.
	e.settleAt = m.EndTime
	if last := t.Time(len(ticks) - 1); last.After(e.settleAt) {
		e.settleAt = last
	}
	if m.CoinPriceEnd != nil && finite(*m.CoinPriceEnd) {
		e.coinEnd = *m.CoinPriceEnd
	}
	// The trades are packed once, for display prices and resting orders
	// alike.
	var trades tradeTape
	if s.Needs().Trades {
		trades = in.trades(s.Outcome())
	}
	used := usedFields(s)
	if used&extendedFields != 0 {
		e.extended = true
		e.fields = newFieldState(in, used, trades)
	}
	e.readsSpread = used&(1<<fSpread) != 0
	if s.OrderType == OrderGTC {
		e.rest = newResting(in, s, in.withViews(trades, s.Outcome()))
	}
	return e
}

// spreadOf is SPEC's spread, |price_up − price_down|, as the decimal
// difference of the recorded prices: the float subtraction of two cent
// prices is off it in the last bit more often than not (0.53 − 0.48 is
// 0.050000000000000044, 0.12 − 0.07 is 0.04999999999999999), so that
// spread <= 0.05 missed a 5-cent spread, and spread > 0.05 took it, at
// about half of all pairs of cent prices (spread >= 0.05 the others).
// Rounded to 10 decimals, the difference is the float nearest the decimal
// one (recorded prices have far fewer decimals), the very float a
// condition's 0.05 is read as.
func spreadOf(pu, pd float64) float64 { return decimal10(math.Abs(pu - pd)) }

// decimal10 is x, a sum or difference of recorded prices, rounded to 10
// decimals: the float nearest the decimal the prices make (spreadOf,
// the mid of fields.go). Past 1e5 (a corrupt price) x stays as it is,
// and finite.
func decimal10(x float64) float64 {
	if math.Abs(x) < 1e5 {
		return math.Round(x*1e10) / 1e10
	}
	return x
}

// price returns the price of the strategy's side at a tick.
func (e *engine) price(tk *store.Tick) float64 {
	if e.up {
		return tk.PriceUp
	}
	return tk.PriceDown
}

// replay is the inner loop: one pass over the snapshots that allocates
// only for a trade event and reads each snapshot's instant once, as
// nanoseconds, with time_remaining_pct read as the time left (inTimeLeft). The rare
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
		lastNs int64 = math.MinInt64
		endNs        = e.endNs
	)
	for i := range e.ticks {
		sn := &e.ticks[i]
		cur, prev = prev, cur
		ns := sn.Nanos
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
		if e.readsSpread {
			cur[fSpread] = spreadOf(pu, pd)
		}
		cur[fTimeRemaining] = float64(endNs - ns) // time left, as inTimeLeft reads it
		if e.extended {
			e.extend(i, sn, cur)
		}
		price := e.price(sn)

		if e.pending != noOrder {
			// An order waits for the first snapshot at or after its time;
			// until then nothing else is decided.
			if ns >= e.dueNs {
				e.execute(i, sn, price)
			} else if e.open {
				e.dd.observe(e.size + e.realized + e.shares*(mark(sn, price)-e.entryFill) - e.entryFee)
			}
			continue
		}
		if !e.open {
			if ns >= e.reentryAt && e.entry.all(cur, prev) {
				if e.delayNs != 0 {
					e.delay(orderEntry, ns, price)
					continue
				}
				e.enter(i, sn, price, price, price)
			}
			continue
		}
		// In position, and not on the entry's own snapshot: that one
		// continued above.
		mark := mark(sn, price)
		if e.shares*(e.entryFill-mark) >= e.stopLoss {
			if e.delayNs != 0 {
				e.delay(orderMaxLoss, ns, price)
				e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill) - e.entryFee)
				continue
			}
			fill, fee := e.sellMarket(sn, price, e.shares)
			e.close(i, evMaxLoss, price, fill, fee)
			continue
		}
		if e.exit.any(cur, prev) {
			if e.delayNs != 0 {
				e.delay(orderExit, ns, price)
				e.limitPx = mark
			} else if e.exitSignal(i, sn, mark, price, price) {
				continue
			}
		}
		e.dd.observe(e.size + e.realized + e.shares*(mark-e.entryFill) - e.entryFee)
	}
	if e.open {
		// An order still pending never executes: no snapshot came after it.
		e.close(len(e.ticks), evMarketEnd, e.settle, e.settle, 0)
	}
	return nil
}

// order is a decision awaiting execution (latency).
type order uint8

const (
	noOrder order = iota
	orderEntry
	orderExit    // a SIGNAL exit
	orderMaxLoss // a MAX_LOSS exit, always MARKET
)

// delay records a decision taken at time ns, at the side's price there,
// to execute on the first snapshot at or after ns + latencyMs.
func (e *engine) delay(o order, ns int64, price float64) {
	e.pending, e.decided, e.dueNs = o, price, ns+e.delayNs
}

// execute carries out the pending order at tick j, whose side has price:
// it walks j's book, with the decision's price as a LIMIT's
// limit and as the event's price (so slippage includes what the delay
// cost). An order that cannot fill does nothing.
func (e *engine) execute(j int, tk *store.Tick, price float64) {
	o, decided := e.pending, e.decided
	e.pending = noOrder
	switch o {
	case orderEntry:
		e.enter(j, tk, decided, price, decided)
		return
	case orderMaxLoss:
		fill, fee := e.sellMarket(tk, price, e.shares)
		e.close(j, evMaxLoss, decided, fill, fee)
		return
	}
	if !e.exitSignal(j, tk, e.limitPx, price, decided) {
		e.dd.observe(e.size + e.realized + e.shares*(mark(tk, price)-e.entryFill) - e.entryFee)
	}
}

// badSnapshot reports bad data at snapshot i. It is a function of its own
// so that the loop keeps nothing alive for the message.
func (e *engine) badSnapshot(i int, problem string) error {
	return fmt.Errorf("replay: snapshot %d (%s) %s: %w", i, e.tape.Time(i).Format(timeLayout), problem, ErrBadData)
}

// enter buys at tick i, whose side has price, if the order
// fills. limit is a LIMIT order's limit price and shown the price the
// event shows; without latency all three prices are the snapshot's.
func (e *engine) enter(i int, tk *store.Tick, limit, price, shown float64) {
	fill, shares, fee, ok := e.buy(tk, limit, price)
	if !ok {
		return
	}
	e.open, e.shares, e.entryFill, e.entryFee = true, shares, fill, fee
	// DESIGN 6: the loss, entry cost − shares × mark, reaches
	// maxLossPercent of the entry cost (fee included), within 1e-9. A
	// position that cost nothing cannot lose.
	e.stopLoss = math.Inf(1)
	if cost := shares*fill + fee; cost > 0 {
		e.stopLoss = e.maxLoss*cost - tolerance - fee
	}
	e.entryRoom(i)
	e.events = append(e.events, event{idx: i, ns: tk.Nanos, reason: evSignal, price: shown,
		fill: fill, shares: shares, fee: fee, cum: e.realized, coin: tk.CoinPrice, mid: e.midAt(tk, price)})
	e.visible(i)
	e.sums.entry(&e.events[len(e.events)-1])
	e.countEntry()
	e.dd.observe(e.size + e.realized + shares*(mark(tk, price)-fill) - fee)
}

// midAt is the side's mid at a tick: (best bid + best ask) / 2, or its
// price where either is missing.
func (e *engine) midAt(tk *store.Tick, price float64) float64 {
	if bb, ba := tk.BestBid, tk.BestAsk; bb == bb && ba == ba {
		return (bb + ba) / 2
	}
	return price
}

// countEntry counts an ENTRY event against maxEntriesPerMarket.
func (e *engine) countEntry() {
	e.entries++
	if e.maxEntries > 0 && e.entries >= e.maxEntries {
		e.reentryAt = math.MaxInt64
	}
}

// exitSignal sells on an exit signal at tick i, whose side has price, and reports whether the order filled. limit and shown are as for
// enter.
func (e *engine) exitSignal(i int, tk *store.Tick, limit, price, shown float64) bool {
	if !e.limit && !e.rest.on {
		fill, fee := e.sellMarket(tk, price, e.shares)
		e.close(i, evSignal, shown, fill, fee)
		return true
	}
	fill, fee, ok := e.sellLimit(tk, limit, price, e.shares)
	if ok {
		e.close(i, evSignal, shown, fill, fee)
	}
	return ok
}

// close ends the position at snapshot i (len(snaps) for a settlement),
// paying fee on the exit's fill.
func (e *engine) close(i int, reason evReason, price, fill, fee float64) {
	var coin float64
	var ns int64
	if i < len(e.ticks) {
		coin, ns = e.ticks[i].CoinPrice, e.ticks[i].Nanos
	} else {
		coin, ns = e.coinEnd, e.settleAt.UnixNano()
	}
	e.closeAt(event{idx: i, ns: ns, exit: true, reason: reason, price: price, fill: fill, fee: fee, coin: coin})
}

// closeAt records ev, an EXIT of the whole position, and ends the position.
func (e *engine) closeAt(ev event) {
	ev.shares = e.shares
	ev.pnl = e.shares*(ev.fill-e.entryFill) - e.entryFee - ev.fee
	if e.rest.includeRebates {
		ev.pnl += e.rest.entryRebate + ev.rebate
	}
	e.realized += ev.pnl
	ev.cum = e.realized
	if ev.reason != evMarketEnd && (e.leastSold == 0 || ev.shares < e.leastSold) {
		e.leastSold = ev.shares // a sell order; the settlement takes none
	}
	if e.keep == keepSums && len(e.events) > 0 {
		// The last event recorded is this position's ENTRY.
		entry := &e.events[len(e.events)-1]
		e.tradeSums.AddTrade(stats.Trade{PnL: round6(ev.pnl), EntryPrice: round6(entry.fill), EntryMid: round6(entry.mid), Won: e.settle})
	}
	if len(e.events) == cap(e.events) {
		e.grow(ev.idx) // keepAll alone: a short list holds just the position's entry here (entryRoom)
	}
	e.events = append(e.events, ev)
	e.visible(ev.visibleAt())
	// A MARKET_END position is held to the end of the recorded span, and
	// so is one a maker exit closed after the last snapshot.
	exitNs := e.ticks[len(e.ticks)-1].Nanos
	if ev.idx < len(e.ticks) && ev.ns < exitNs {
		exitNs = ev.ns
	}
	e.sums.exit(&ev, exitNs)
	e.open, e.entryFee = false, 0
	e.rest.entryRebate = 0
	if e.reentryAt != math.MaxInt64 {
		e.reentryAt = ev.ns + e.cooldownNs
	}
	e.dd.observe(e.size + e.realized)
}

// drawdown tracks the largest peak-to-trough fall of equity.
type drawdown struct {
	peak   float64 // highest equity so far
	max    float64 // largest fall in dollars
	atPeak float64 // the peak the largest fall fell from
}

// sameFall is how much larger than the largest fall so far a fall must be
// to replace it: falls within it are one size in float noise, and the
// first of them keeps its peak for max_drawdown_percent. (Equal falls are
// common on a cent grid with round share counts, and the noise of
// 10 + 10×(0.53 − 0.4) − (10 + 10×(0.43 − 0.4)) made a later one larger.)
const sameFall = 1e-9

func (d *drawdown) observe(equity float64) {
	if equity > d.peak {
		d.peak = equity
	} else if fall := d.peak - equity; fall > d.max+sameFall {
		d.max, d.atPeak = fall, d.peak
	}
}

// isLevel reports whether l is a level DESIGN 6 counts: positive size (NaN
// is not) and a finite price.
func isLevel(l store.Level) bool { return l.Size > 0 && l.Price-l.Price == 0 }

// mark is the price the open position could sell at at tk: the side's
// best bid (Tick.BestBid, the first level DESIGN 6 counts), or its
// snapshot price where no bid is recorded.
func mark(tk *store.Tick, price float64) float64 {
	if b := tk.BestBid; b == b {
		return b
	}
	return price
}

// feeSchedule is the taker fee of DESIGN 6: shares × rate × (p(1−p))^exp
// per (price, shares) pair a fill takes, times p once more on a market of
// Polymarket's first crypto curve (store.FeeTypeCrypto). A zero rate
// charges nothing.
type feeSchedule struct {
	rate   float64
	exp    float64
	timesP bool
}

// feeScheduleOf is the schedule s's fee model applies to market m. A
// market without a recorded schedule (or with one that is not a rate)
// charges nothing; a missing or negative exponent counts as 1.
func feeScheduleOf(m store.Market, s Strategy) feeSchedule {
	switch s.FeeModel {
	case FeeCustom:
		return feeSchedule{rate: *s.FeeRate, exp: float64(s.FeeExponent)}
	case FeeMarket:
		return marketFees(m)
	}
	return feeSchedule{}
}

func marketFees(m store.Market) feeSchedule {
	f := feeSchedule{exp: DefaultFeeExponent}
	if r := m.TakerFeeRate; r != nil && finite(*r) && *r > 0 {
		f.rate = *r
	}
	if x := m.FeeExponent; x != nil && *x >= 0 {
		f.exp = float64(*x)
	}
	f.timesP = m.FeeTimesPrice()
	return f
}

// on is the unrounded fee of q shares taken at price p. p(1−p) is floored
// at 0, so a corrupt price beyond [0, 1] charges nothing rather than a
// negative fee.
func (f feeSchedule) on(p, q float64) float64 {
	if f.rate == 0 {
		return 0 // no fee model: the test inlined where a fill is taken
	}
	return f.charged(p, q)
}

// charged is on for a schedule that charges. It is kept out of line so
// that on, called for every fill, inlines.
//
//go:noinline
func (f feeSchedule) charged(p, q float64) float64 {
	fee := q * f.rate * math.Pow(max(0, p*(1-p)), f.exp)
	if f.timesP {
		fee *= max(0, p)
	}
	return fee
}

// roundFee rounds a fill's fee down to 5 decimals, as Polymarket does; the
// 1e-9 keeps a fee that is a whole number of units in float noise whole.
// Past a few dollars a float sum's noise outgrows 1e-9 of a unit (45.57 is
// computed as 45.569999999999979), so the allowance grows with the fee, at
// 1e-13 of it: hundreds of times the noise of a walk's sum, and far under
// the 1e-5 of a unit that separates the fees of recorded prices and sizes.
func roundFee(x float64) float64 {
	if x == 0 {
		return 0
	}
	units := x * 1e5
	return math.Floor(units+max(1e-9, math.Abs(units)*1e-13)) / 1e5
}

// walk is the outcome of taking liquidity from one side of a book.
type walk struct {
	seen  bool    // the side has at least one level
	taken float64 // shares taken
	cost  float64 // their total price
	fee   float64 // their fee, unrounded
	left  float64 // shares still wanted
	last  float64 // price of the last level taken from
}

// take walks the levels of side best first, taking up to want shares from those at or
// better than limit (asks: price ≤ limit; bids: price ≥ limit) and stopping
// at the first level beyond it. The book is read, never changed: a replay
// takes one action per snapshot, so no level is consumed twice in a tick.
//
// best and bestSize are the side's first level (Tick.BestBid and
// BestBidSize, or the ask's): an order it fills alone, as most are, is
// taken from it without reading the levels, in the very arithmetic of the
// walk.
func take(t *store.Tape, side store.Span, best, bestSize, want, limit float64, asks bool, fee feeSchedule) walk {
	if best == best && bestSize >= want && !(asks && best > limit || !asks && best < limit) {
		// The walk's first step, which fills the order: small enough to
		// inline where a fill is taken.
		return walk{seen: true, taken: want, cost: want * best, fee: fee.on(best, want), last: best}
	}
	return walkLevels(t, side, want, limit, asks, fee)
}

// walkLevels is take reading the levels.
func walkLevels(t *store.Tape, side store.Span, want, limit float64, asks bool, fee feeSchedule) walk {
	w := walk{left: want}
	for _, l := range t.Side(side) {
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
		w.fee += fee.on(l.Price, q)
		w.left -= q
		w.last = l.Price
		if w.left <= 0 {
			break
		}
	}
	return w
}

// buy fills an entry of e.size shares at a snapshot whose side has asks
// and price p; a LIMIT order takes only asks at or under limit. It returns
// the volume-weighted fill price, the shares bought and their fee; ok is
// false when a LIMIT order finds nothing at or under its limit.
func (e *engine) buy(tk *store.Tick, limit, p float64) (fill, shares, fee float64, ok bool) {
	ceiling := math.Inf(1)
	if e.limit || e.rest.on {
		ceiling = limit + tolerance
	}
	w := take(e.tape, tk.Asks, tk.BestAsk, tk.BestAskSize, e.size, ceiling, true, e.fee)
	switch {
	case !w.seen:
		return p, e.size, roundFee(e.fee.on(p, e.size)), true
	case w.taken == 0:
		return 0, 0, 0, false
	case w.left <= 0:
		// Filled in full: the position is exactly the size asked for, not a
		// float sum of the pieces.
		return w.cost / e.size, e.size, roundFee(w.fee), true
	}
	// A thin book (MARKET) or a limit (LIMIT): buy what there is.
	return w.cost / w.taken, w.taken, roundFee(w.fee), true
}

// sellMarket sells the whole position and returns the fill price and its
// fee. What the recorded levels cannot absorb goes at the worst recorded
// level's price (and pays that level's fee): recorded books are truncated
// to their top levels and deeper liquidity is assumed there.
func (e *engine) sellMarket(tk *store.Tick, p, shares float64) (fill, fee float64) {
	w := take(e.tape, tk.Bids, tk.BestBid, tk.BestBidSize, shares, math.Inf(-1), false, e.fee)
	if !w.seen {
		return p, roundFee(e.fee.on(p, shares))
	}
	rest := max(w.left, 0)
	return (w.cost + rest*w.last) / shares, roundFee(w.fee + e.fee.on(w.last, rest))
}

// sellLimit sells the whole position at limit or better, or nothing (ok
// false). Without levels it fills at p.
func (e *engine) sellLimit(tk *store.Tick, limit, p, shares float64) (fill, fee float64, ok bool) {
	w := take(e.tape, tk.Bids, tk.BestBid, tk.BestBidSize, shares, limit-tolerance, false, e.fee)
	switch {
	case !w.seen:
		return p, roundFee(e.fee.on(p, shares)), true
	case w.left > tolerance:
		return 0, 0, false
	}
	// A sliver within tolerance goes at the last price taken.
	rest := max(w.left, 0)
	return (w.cost + rest*w.last) / shares, roundFee(w.fee + e.fee.on(w.last, rest)), true
}
