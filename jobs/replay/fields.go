package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/updown/updown/store"
)

// Input is what a replay reads of one market: its record, the tape of the
// outcome the strategy trades (Strategy.Outcome) and, when the strategy
// reads them (Strategy.Needs), the other outcome's tape and the market's
// recorded trades, oldest first (store.MarketTradeQuery{Ascending: true}).
type Input struct {
	Market store.Market
	Tape   *store.Tape
	Other  *store.Tape
	Trades []store.MarketTrade
	// Gaps are the market's recording gaps; a trades gap while orders
	// rest is a warning (tradeGapWarning).
	Gaps []store.Gap
	// Packed, when not nil, is Trades packed by PackTrades, which a replay
	// then reads instead of packing Trades itself: a caller replaying one
	// market many times packs its trades once. It must hold the same
	// trades as Trades.
	Packed *Trades
}

// bookOutcome is which outcome's book a field reads: none, UP's or DOWN's.
type bookOutcome uint8

const (
	bookNone bookOutcome = iota
	bookUp
	bookDown
)

func bookOf(f field) bookOutcome {
	switch f {
	case fBidUp, fMidUp, fDisplayUp, fImbalanceUp:
		return bookUp
	case fBidDown, fMidDown, fDisplayDown, fImbalanceDown:
		return bookDown
	}
	return bookNone
}

// extendedFields are the fields beyond SPEC's five: the loop computes them
// only for a strategy that reads one (engine.extend).
const extendedFields = 1<<fBidUp | 1<<fBidDown | 1<<fMidUp | 1<<fMidDown | 1<<fDisplayUp | 1<<fDisplayDown |
	1<<fCoinMove | 1<<fTimeRemainingS | 1<<fCoinReturn60s | 1<<fImbalanceUp | 1<<fImbalanceDown

// usedFields is the set of fields the conditions of s read, one bit a field.
func usedFields(s Strategy) uint32 {
	var u uint32
	for _, cs := range [][]Condition{s.EntryConditions, s.ExitConditions} {
		for _, c := range cs {
			f, _ := parseField(c.Field)
			u |= 1 << f
		}
	}
	return u
}

// displayedSpread is the widest spread at which Polymarket shows the mid;
// past it, it shows the last trade (DESIGN 6, display_*).
const displayedSpread = 0.10

// top is what a condition reads of one outcome's book at a tick.
type top struct {
	bid, ask       float64 // best levels; valid when hasBid, hasAsk
	hasBid, hasAsk bool
	bidSum, askSum float64 // sizes over the side's levels
}

func topOf(bids, asks []store.Level) top {
	var t top
	for _, l := range bids {
		if isLevel(l) {
			if !t.hasBid {
				t.bid, t.hasBid = l.Price, true
			}
			t.bidSum += l.Size
		}
	}
	for _, l := range asks {
		if isLevel(l) {
			if !t.hasAsk {
				t.ask, t.hasAsk = l.Price, true
			}
			t.askSum += l.Size
		}
	}
	return t
}

// tradeTape is the market's recorded trades as the engine walks them. A
// tape is read-only once packed: replays on many goroutines share one.
type tradeTape struct {
	ns  []int64 // what the walks scan
	rec []tradeRec
	src []store.MarketTrade // the trades as given: their hashes (hashOf)
	// views are the trades a resting order reads as evidence, by its
	// direction (viewOf), for GTC replays only (Input.withViews): a BUY only the outcome's taker sales and the
	// other outcome's taker purchases (their mirror), a SELL the others.
	// A resting order walks its view alone, half the trades.
	views [2]tradeView
}

// tradeView is the trades of one direction of evidence, in walk order.
type tradeView struct {
	ns []int64
	px []float64 // the price in the walked outcome's terms: 1 − p for the other outcome's
	k  []int32   // the trade's index in the tape (rec, hashOf)
}

// viewOf is the index in tradeTape.views of a resting order's evidence.
func viewOf(buy bool) int {
	if buy {
		return 0
	}
	return 1
}

// buildViews splits the packed trades, in walk order, by the direction of
// resting order each is evidence for (evidence, DESIGN 6).
func (tt *tradeTape) buildViews(outcome string) {
	up := outcome == store.OutcomeUp
	sales := 0
	for i := range tt.rec {
		if r := &tt.rec[i]; r.buy == (r.up != up) {
			sales++
		}
	}
	for v, n := range [2]int{sales, len(tt.rec) - sales} {
		tt.views[v] = tradeView{ns: make([]int64, 0, n), px: make([]float64, 0, n), k: make([]int32, 0, n)}
	}
	for i := range tt.rec {
		r := &tt.rec[i]
		px, takerSold := r.price, !r.buy
		if r.up != up {
			px, takerSold = 1-px, !takerSold
		}
		v := &tt.views[viewOf(takerSold)]
		v.ns = append(v.ns, tt.ns[i])
		v.px = append(v.px, px)
		v.k = append(v.k, int32(i))
	}
}

// tradeRec is what a walk reads of a trade once it reaches it.
type tradeRec struct {
	price, size float64
	src         int32 // its index in tradeTape.src
	up          bool  // the UP token traded
	buy         bool  // the taker bought
	hashed      bool  // it has a transaction hash
}

// Trades is a market's recorded trades packed for replays, once for any
// number of them: a worker keeps it beside the market's tapes, and a sweep
// shard packs it once for all its trials (Input.Packed). The walk order
// depends on the outcome a strategy trades, so each outcome's order is
// packed on first use. It is safe for concurrent use.
type Trades struct {
	src   []store.MarketTrade
	once  [2]sync.Once
	tapes [2]tradeTape // UP's walk order, DOWN's
	// views are each outcome's tape's views (tradeTape.views), packed on
	// the first GTC replay that needs them.
	vonce [2]sync.Once
	views [2][2]tradeView
}

// PackTrades readies a market's recorded trades, oldest first
// (store.MarketTradeQuery{Ascending: true}), for replays. trades must not
// change afterwards.
func PackTrades(trades []store.MarketTrade) *Trades {
	return &Trades{src: trades}
}

// Len returns the number of trades.
func (t *Trades) Len() int { return len(t.src) }

// Bytes is the memory the packed trades take once both outcomes' orders
// are packed, the trades themselves included.
func (t *Trades) Bytes() int64 {
	// Per outcome's order: its time, its record, and its entry in a view
	// (time, price, index).
	per := int64(unsafe.Sizeof(store.MarketTrade{})) + 2*(8+int64(unsafe.Sizeof(tradeRec{}))+20)
	var strs int64
	for i := range t.src {
		tr := &t.src[i]
		strs += int64(len(tr.TxHash) + len(tr.Outcome) + len(tr.Side))
	}
	return int64(len(t.src))*per + strs
}

// tape returns the trades in the order a strategy trading outcome walks
// them.
func (t *Trades) tape(outcome string) tradeTape {
	k := 0
	if outcome != store.OutcomeUp {
		k = 1
	}
	t.once[k].Do(func() { t.tapes[k] = tradeTapeOf(t.src, outcome) })
	return t.tapes[k]
}

// viewsOf returns the views of outcome's tape, packed once.
func (t *Trades) viewsOf(outcome string) [2]tradeView {
	k := 0
	if outcome != store.OutcomeUp {
		k = 1
	}
	t.vonce[k].Do(func() {
		tt := t.tape(outcome)
		tt.buildViews(outcome)
		t.views[k] = tt.views
	})
	return t.views[k]
}

// tradeTapeOf packs a market's trades in the order the replay walks them:
// by time, and at equal times outcome's own trades before the other's
// (DESIGN 6: a match's twin on the other outcome comes after the trade it
// mirrors; the stores list Down before Up). Trades already in that order,
// as a store lists them for an UP strategy, are packed as they are.
func tradeTapeOf(trades []store.MarketTrade, outcome string) tradeTape {
	n := len(trades)
	tt := tradeTape{ns: make([]int64, n), rec: make([]tradeRec, n), src: trades}
	timeSorted, ownFirst := true, true
	prevOwn := false
	for i := range trades {
		tr := &trades[i]
		ns, own := tr.Time.UnixNano(), tr.Outcome == outcome
		tt.ns[i] = ns
		tt.rec[i] = tradeRec{price: tr.Price, size: tr.Size, src: int32(i), up: tr.Outcome == store.OutcomeUp,
			buy: tr.Side == store.SideBuy, hashed: tr.TxHash != ""}
		if i > 0 {
			switch prev := tt.ns[i-1]; {
			case ns < prev:
				timeSorted = false
			case ns == prev && own && !prevOwn:
				ownFirst = false
			}
		}
		prevOwn = own
	}
	switch {
	case !timeSorted:
		tt.sortBy(outcome)
	case !ownFirst:
		// In time order, as a store lists them, with another outcome's
		// trade before one of outcome's at an instant: each such instant's
		// trades are put in order where they are.
		for lo := 0; lo < n; {
			hi := lo + 1
			for hi < n && tt.ns[hi] == tt.ns[lo] {
				hi++
			}
			if hi-lo > 1 {
				run := tt.rec[lo:hi]
				slices.SortStableFunc(run, func(a, b tradeRec) int {
					ao, bo := trades[a.src].Outcome == outcome, trades[b.src].Outcome == outcome
					switch {
					case ao == bo:
						return 0
					case ao:
						return -1
					}
					return 1
				})
			}
			lo = hi
		}
	}
	return tt
}

// sortBy puts the packed trades in walk order for outcome: by time, and at
// an instant outcome's own before the other's, each as given otherwise.
func (tt *tradeTape) sortBy(outcome string) {
	type keyed struct {
		ns  int64
		own bool
		rec tradeRec
	}
	ks := make([]keyed, len(tt.ns))
	for i := range ks {
		ks[i] = keyed{ns: tt.ns[i], own: tt.src[tt.rec[i].src].Outcome == outcome, rec: tt.rec[i]}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case a.ns != b.ns:
			return cmp.Compare(a.ns, b.ns)
		case a.own == b.own:
			return 0
		case a.own:
			return -1
		}
		return 1
	})
	for i := range ks {
		tt.ns[i], tt.rec[i] = ks[i].ns, ks[i].rec
	}
}

// hashOf is the transaction hash of the packed trade k ("" none).
func (tt *tradeTape) hashOf(k int) string { return tt.src[tt.rec[k].src].TxHash }

func (tt *tradeTape) len() int { return len(tt.ns) }

// fieldState is what the extended fields carry from one tick to the next.
type fieldState struct {
	used      uint32
	other     *store.Tape // the outcome the strategy does not trade
	coinBase  float64     // coin_move_pct's p₀; NaN: none
	back      int         // coin_return_60s: the last tick at or before t − 60 s, −1 none yet
	trades    tradeTape
	next      int        // the first trade after the last tick extended
	lastTrade [2]float64 // the last trade's price of UP and of DOWN; NaN: none yet
}

func newFieldState(in Input, used uint32, trades tradeTape) fieldState {
	fs := fieldState{used: used, other: in.Other, back: -1, coinBase: math.NaN(), lastTrade: [2]float64{math.NaN(), math.NaN()}}
	m := in.Market
	switch {
	case m.PriceToBeat != nil && positive(*m.PriceToBeat):
		fs.coinBase = *m.PriceToBeat
	case m.CoinPriceStart != nil && positive(*m.CoinPriceStart):
		fs.coinBase = *m.CoinPriceStart
	case in.Tape.Len() > 0 && positive(in.Tape.Ticks[0].CoinPrice):
		fs.coinBase = in.Tape.Ticks[0].CoinPrice
	}
	if used&(1<<fDisplayUp|1<<fDisplayDown) != 0 {
		fs.trades = trades
	}
	return fs
}

func positive(x float64) bool { return x > 0 && finite(x) }

// checkInput checks that in carries what s reads: the other outcome's
// tape, tick for tick beside the side's, when a condition reads its book.
func checkInput(in Input, s Strategy) error {
	if !s.Needs().OtherBook {
		return nil
	}
	o := in.Other
	if o == nil {
		return fmt.Errorf("replay: the strategy reads the book of the outcome it does not trade, and the input carries no tape of it")
	}
	if o.Len() != in.Tape.Len() {
		return fmt.Errorf("replay: the other outcome's tape has %d ticks, the side's %d: %w", o.Len(), in.Tape.Len(), ErrBadData)
	}
	for i := range o.Ticks {
		if o.Ticks[i].Nanos != in.Tape.Ticks[i].Nanos {
			return fmt.Errorf("replay: the other outcome's tick %d is at another time than the side's: %w", i, ErrBadData)
		}
	}
	return nil
}

// extend sets the extended fields the strategy reads at tick i (DESIGN 6).
// A field without a value is NaN, which fails every condition on it.
func (e *engine) extend(i int, tk *store.Tick, cur *values) {
	fs := &e.fields
	used := fs.used
	ns := tk.Nanos
	if used&(1<<fDisplayUp|1<<fDisplayDown) != 0 {
		tt := &fs.trades
		for ; fs.next < tt.len() && tt.ns[fs.next] <= ns; fs.next++ {
			k := 1
			if tt.rec[fs.next].up {
				k = 0
			}
			fs.lastTrade[k] = tt.rec[fs.next].price
		}
	}
	for _, o := range [2]bookOutcome{bookUp, bookDown} {
		bid, mid, display, imb := fBidUp, fMidUp, fDisplayUp, fImbalanceUp
		price, last := tk.PriceUp, fs.lastTrade[0]
		if o == bookDown {
			bid, mid, display, imb = fBidDown, fMidDown, fDisplayDown, fImbalanceDown
			price, last = tk.PriceDown, fs.lastTrade[1]
		}
		if used&(1<<bid|1<<mid|1<<display|1<<imb) == 0 {
			continue
		}
		src := e.tape
		if (o == bookUp) != e.up {
			src = fs.other
		}
		otk := &src.Ticks[i]
		// The best levels are the tick's; the sizes (imbalance) are read
		// from the levels only when a condition reads them.
		t := top{bid: otk.BestBid, ask: otk.BestAsk, hasBid: otk.BestBid == otk.BestBid, hasAsk: otk.BestAsk == otk.BestAsk}
		if used&(1<<imb) != 0 {
			t = topOf(src.Side(otk.Bids), src.Side(otk.Asks))
		}
		cur[bid] = price
		if t.hasBid {
			cur[bid] = t.bid
		}
		m := price
		if t.hasBid && t.hasAsk {
			// As decimals: (0.01 + 0.05) / 2 is 0.030000000000000002 in
			// floats, and mid_up <= 0.03 would miss it (decimal10).
			m = decimal10((t.bid + t.ask) / 2)
		}
		cur[mid] = m
		switch {
		case t.hasBid && t.hasAsk && t.ask-t.bid <= displayedSpread+tolerance:
			cur[display] = m
		case !math.IsNaN(last):
			cur[display] = last
		default:
			cur[display] = m
		}
		cur[imb] = math.NaN()
		if sum := t.bidSum + t.askSum; sum > 0 {
			cur[imb] = (t.bidSum - t.askSum) / sum
		}
	}
	if used&(1<<fCoinMove) != 0 {
		cur[fCoinMove] = 100 * (tk.CoinPrice - fs.coinBase) / fs.coinBase
	}
	if used&(1<<fTimeRemainingS) != 0 {
		cur[fTimeRemainingS] = float64(e.endNs-ns) / 1e9
	}
	if used&(1<<fCoinReturn60s) != 0 {
		for fs.back+1 <= i && e.ticks[fs.back+1].Nanos <= ns-60e9 {
			fs.back++
		}
		cur[fCoinReturn60s] = math.NaN()
		if fs.back >= 0 {
			if c := e.ticks[fs.back].CoinPrice; c != 0 {
				cur[fCoinReturn60s] = 100 * (tk.CoinPrice - c) / c
			}
		}
	}
}

// trades returns the market's trades in the order a strategy trading
// outcome walks them: in.Packed's when there is one.
func (in *Input) trades(outcome string) tradeTape {
	if in.Packed != nil {
		return in.Packed.tape(outcome)
	}
	return tradeTapeOf(in.Trades, outcome)
}

// withViews is trades, outcome's tape, with the views a resting order
// walks: packed once with in.Packed, else built for this replay. Only GTC
// replays need them.
func (in *Input) withViews(trades tradeTape, outcome string) tradeTape {
	if in.Packed != nil {
		trades.views = in.Packed.viewsOf(outcome)
		return trades
	}
	trades.buildViews(outcome)
	return trades
}
