package store

import (
	"fmt"
	"math"
	"math/bits"
	"time"
	"unsafe"
)

// Tape is a market's snapshots as a replay reads them: oldest first, each
// with the order book of one outcome, packed in arrays of numbers: the
// ticks, and blocks of levels.
//
// Decoded as []Snapshot, a market holds a pointer per book and a slice per
// side, and every garbage collection marks them all: a worker that keeps
// markets decoded for the next replay (a 24hr market is 288,000 snapshots)
// would spend its collections walking them, and slow every other decode in
// the process. The collector never looks inside a tape's arrays; a 24hr
// market's tape holds one pointer per block, a few hundred.
//
// The levels are in blocks, so that a store can decode its units of storage
// side by side, each into a block of its own, and hand them over as they
// are. A side that did not change from one tick to the next is the same
// Span, as the stores share unchanged sides. A missing book and an empty
// one both have empty spans; HasBook tells them apart (a resting order's
// queue, DESIGN 6: a recorded book with no level on the order's side has
// no queue ahead, a missing one an unknown queue). A tape is read-only
// once built.
type Tape struct {
	// Outcome names the books the ticks carry: OutcomeUp or OutcomeDown.
	Outcome string
	Ticks   []Tick
	Blocks  [][]Level
	// NoBook is the ticks whose snapshot recorded no book of the outcome
	// (HasBook), tick for tick with Ticks: the rare case, kept apart from
	// the ticks, which a replay streams, and empty (nil) on a tape whose
	// every snapshot has the book. A store that builds a tape of parts
	// adds each part's at its first tick's place (TickSet.AddAt).
	NoBook TickSet
}

// TickSet is a set of a tape's ticks, a bit each: tick i is bit i%64 of
// word i/64. The zero value is the empty set, and a set grows as ticks
// are added, so that a set of none takes no memory.
type TickSet []uint64

// Add adds tick i (i ≥ 0).
func (s *TickSet) Add(i int) {
	w := uint(i) / 64
	if w >= uint(len(*s)) {
		*s = append(*s, make([]uint64, w+1-uint(len(*s)))...)
	}
	(*s)[w] |= 1 << (uint(i) % 64)
}

// Has reports whether tick i is in the set.
func (s TickSet) Has(i int) bool {
	w := uint(i) / 64
	return w < uint(len(s)) && s[w]&(1<<(uint(i)%64)) != 0
}

// AddAt adds the ticks of o, each moved on by at: o's tick 0 is at.
func (s *TickSet) AddAt(at int, o TickSet) {
	for w, word := range o {
		for ; word != 0; word &= word - 1 {
			s.Add(at + w*64 + bits.TrailingZeros64(word))
		}
	}
}

// HasBook reports whether tick i's snapshot recorded a book of the
// tape's outcome, empty or not.
func (t *Tape) HasBook(i int) bool { return !t.NoBook.Has(i) }

// Tick is one snapshot on a tape. A replay streams the ticks, so a tick
// holds what a replay reads at most of them (80 bytes, TestTickIs80Bytes);
// what it reads seldom is on the tape beside them (Tape.NoBook).
type Tick struct {
	// Nanos is the snapshot's time in nanoseconds since the Unix epoch.
	Nanos                         int64
	CoinPrice, PriceUp, PriceDown float64
	// Bids and Asks are the outcome's book, in Tape.Blocks.
	Bids, Asks Span
	// BestBid and BestAsk are the prices of the best level of Bids and of
	// Asks (BestOf), NaN for a side without one, and BestBidSize and
	// BestAskSize their sizes (0 without one): what a replay reads of the
	// book at most ticks, and all a fill within the best level takes,
	// kept beside the tick so that it need not reach into the levels.
	BestBid, BestAsk         float64
	BestBidSize, BestAskSize float64
}

// BestOf is the price and size of the first of levels (best first) with a
// positive size and a finite price; NaN and 0 when there is none.
func BestOf(levels []Level) (price, size float64) {
	for _, l := range levels {
		if l.Size > 0 && l.Price-l.Price == 0 {
			return l.Price, l.Size
		}
	}
	return math.NaN(), 0
}

// setBest sets the tick's best levels from its sides' (BestOf).
func (tk *Tick) setBest(bid, ask Level) {
	tk.BestBid, tk.BestBidSize, tk.BestAsk, tk.BestAskSize = bid.Price, bid.Size, ask.Price, ask.Size
}

// SetBest sets the tick's best bid and ask, and their sizes, from its
// sides' levels (BestOf): what a store that builds tapes does for each
// tick.
func (tk *Tick) SetBest(bids, asks []Level) {
	var b, a Level
	b.Price, b.Size = BestOf(bids)
	a.Price, a.Size = BestOf(asks)
	tk.setBest(b, a)
}

// noBest is a side without a level, as BestOf answers it.
var noBest = Level{Price: math.NaN()}

// Span is a run of levels in one of a tape's blocks.
type Span struct {
	Off   uint32
	Len   uint16
	Block uint16
}

// Limits of a tape's layout: the levels of one block, the levels of one
// side, and the blocks of one tape.
const (
	MaxBlockLevels = math.MaxUint32
	MaxSideLevels  = math.MaxUint16
	MaxTapeBlocks  = math.MaxUint16 + 1
)

// Len returns the number of ticks.
func (t *Tape) Len() int { return len(t.Ticks) }

// Time returns the time of tick i, in UTC.
func (t *Tape) Time(i int) time.Time { return time.Unix(0, t.Ticks[i].Nanos).UTC() }

// Side returns the levels sp spans.
func (t *Tape) Side(sp Span) []Level {
	end := sp.Off + uint32(sp.Len)
	return t.Blocks[sp.Block][sp.Off:end:end]
}

// Bytes returns the memory the tape's arrays take.
func (t *Tape) Bytes() int64 {
	n := int64(cap(t.Ticks))*int64(unsafe.Sizeof(Tick{})) + int64(cap(t.Blocks))*int64(unsafe.Sizeof([]Level{})) +
		int64(cap(t.NoBook))*int64(unsafe.Sizeof(uint64(0)))
	for _, b := range t.Blocks {
		n += int64(cap(b)) * int64(unsafe.Sizeof(Level{}))
	}
	return n
}

// SideSpan returns the span of a side of n levels at off in block, or an
// error if the layout cannot hold it.
func SideSpan(block, off, n int) (Span, error) {
	switch {
	case n > MaxSideLevels:
		return Span{}, fmt.Errorf("store: a side of %d levels: a tape holds at most %d a side", n, MaxSideLevels)
	case uint64(off)+uint64(n) > MaxBlockLevels:
		return Span{}, fmt.Errorf("store: a tape holds at most %d levels a block", uint64(MaxBlockLevels))
	case block >= MaxTapeBlocks:
		return Span{}, fmt.Errorf("store: a tape holds at most %d blocks", MaxTapeBlocks)
	}
	return Span{Off: uint32(off), Len: uint16(n), Block: uint16(block)}, nil
}

// addSide appends levels to the tape's one block and returns their span,
// and sets *best to their best price. A side with the same backing array
// and length as prev's (the side a store shared with the snapshot before)
// is not copied again: prev is returned, and *best left as it is.
func (t *Tape) addSide(levels []Level, prev Span, prevLevels []Level, best *Level) (Span, error) {
	if len(levels) == 0 {
		*best = noBest
		return Span{}, nil
	}
	if len(prevLevels) == len(levels) && unsafe.SliceData(prevLevels) == unsafe.SliceData(levels) {
		return prev, nil
	}
	best.Price, best.Size = BestOf(levels)
	sp, err := SideSpan(0, len(t.Blocks[0]), len(levels))
	if err != nil {
		return Span{}, err
	}
	t.Blocks[0] = append(t.Blocks[0], levels...)
	return sp, nil
}

// TapeOf packs snaps, oldest first, with the books of outcome (OutcomeUp or
// OutcomeDown), into a tape of one block. Times must fit Unix nanoseconds
// (the years 1678 to 2262).
func TapeOf(snaps []Snapshot, outcome string) (*Tape, error) {
	t := &Tape{Outcome: outcome, Ticks: make([]Tick, len(snaps))}
	n := 0
	for i := range snaps {
		if b := snaps[i].book(outcome); b != nil {
			n += len(b.Bids) + len(b.Asks)
		}
	}
	if uint64(n) > MaxBlockLevels {
		return nil, fmt.Errorf("store: %d levels: a tape holds at most %d a block", n, uint64(MaxBlockLevels))
	}
	t.Blocks = [][]Level{make([]Level, 0, n)}
	var prevBids, prevAsks []Level
	var bids, asks Span
	bestBid, bestAsk := noBest, noBest
	var err error
	for i := range snaps {
		sn := &snaps[i]
		tk := &t.Ticks[i]
		tk.Nanos, tk.CoinPrice, tk.PriceUp, tk.PriceDown = sn.Time.UnixNano(), sn.CoinPrice, sn.PriceUp, sn.PriceDown
		b := sn.book(outcome)
		if b == nil {
			prevBids, prevAsks, bids, asks = nil, nil, Span{}, Span{}
			tk.setBest(noBest, noBest)
			t.NoBook.Add(i)
			continue
		}
		if bids, err = t.addSide(b.Bids, bids, prevBids, &bestBid); err != nil {
			return nil, err
		}
		if asks, err = t.addSide(b.Asks, asks, prevAsks, &bestAsk); err != nil {
			return nil, err
		}
		tk.Bids, tk.Asks = bids, asks
		tk.setBest(bestBid, bestAsk)
		prevBids, prevAsks = b.Bids, b.Asks
	}
	return t, nil
}

// book returns the snapshot's book of outcome, nil when there is none.
func (s *Snapshot) book(outcome string) *Book {
	switch outcome {
	case OutcomeUp:
		return s.BookUp
	case OutcomeDown:
		return s.BookDown
	}
	return nil
}

// CheckOutcome reports an outcome a tape cannot carry the books of.
func CheckOutcome(outcome string) error {
	if outcome != OutcomeUp && outcome != OutcomeDown {
		return fmt.Errorf("store: a tape carries the books of %q or %q, not %q", OutcomeUp, OutcomeDown, outcome)
	}
	return nil
}
