package book

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// Book is one token's book: size by price, a side each, and the last
// trade price (which prices an outcome whose book has no asks).
type Book struct {
	Bids, Asks Ladder
	Last       Num
}

// Ladder is one side of a book: its levels in ascending order of price,
// each price once, none of size 0. A bid side's best level is its last,
// an ask side's its first. Kept in order rather than in a map, a side's
// best price and its best levels (every change checks the one, every
// snapshot takes the other) are read where they are, not searched for.
type Ladder []store.Level

// search is where the level of price is, or would be.
func (l Ladder) search(price float64) (int, bool) {
	return slices.BinarySearchFunc(l, price, func(x store.Level, p float64) int { return cmp.Compare(x.Price, p) })
}

// Set sets the size at price, 0 removing the level.
func (l *Ladder) Set(price, size float64) {
	i, found := l.search(price)
	switch {
	case found && size == 0:
		*l = slices.Delete(*l, i, i+1)
	case found:
		(*l)[i].Size = size
	case size != 0:
		*l = slices.Insert(*l, i, store.Level{Price: price, Size: size})
	}
}

// fill sets an empty ladder to levels, as Set on each in turn would (a
// price listed twice takes its last size, size 0 none), in one sort:
// upstream lists asks worst first, so that inserting them one by one in
// order of price would move the whole side at every level.
func (l *Ladder) fill(levels []Level) {
	for _, x := range levels {
		*l = append(*l, store.Level{Price: x.Price.V, Size: x.Size.V})
	}
	slices.SortStableFunc(*l, func(a, b store.Level) int { return cmp.Compare(a.Price, b.Price) })
	// Of each run of one price the last listed is the one Set would keep.
	out := (*l)[:0]
	for i, x := range *l {
		if i+1 < len(*l) && (*l)[i+1].Price == x.Price {
			continue
		}
		if x.Size != 0 {
			out = append(out, x)
		}
	}
	*l = out
}

// Best is the side's best price, 0 for an empty side (as upstream writes
// best_bid and best_ask of an empty side).
func (l Ladder) Best(bids bool) float64 {
	switch {
	case len(l) == 0:
		return 0
	case bids:
		return l[len(l)-1].Price
	}
	return l[0].Price
}

// Levels lists the side's levels, in no order the caller may rely on.
func (l Ladder) Levels() []Level {
	out := make([]Level, len(l))
	for i, x := range l {
		out[i] = Level{Price: Num{V: x.Price, Set: true}, Size: Num{V: x.Size, Set: true}}
	}
	return out
}

// appendTop is Side for a ladder, whose levels are valid and in order
// already: its n best levels with a positive size, best first, appended
// to dst.
func (l Ladder) appendTop(dst []store.Level, n int, bids bool) []store.Level {
	if n <= 0 {
		return dst
	}
	end := len(dst) + n
	add := func(x store.Level) bool {
		if x.Size > 0 {
			dst = append(dst, x)
		}
		return len(dst) < end
	}
	if bids {
		for i := len(l) - 1; i >= 0 && add(l[i]); i-- {
		}
	} else {
		for i := 0; i < len(l) && add(l[i]); i++ {
		}
	}
	return dst
}

// Books is the books of a set of tokens, rebuilt from events.
type Books struct {
	m map[string]*Book
}

// NewBooks returns an empty set of books.
func NewBooks() *Books { return &Books{m: map[string]*Book{}} }

// Get returns the token's book, nil while it has none.
func (bs *Books) Get(token string) *Book { return bs.m[token] }

// Drop forgets the token's book: it is unknown until its next `book`.
func (bs *Books) Drop(token string) { delete(bs.m, token) }

// Reset forgets every book.
func (bs *Books) Reset() { clear(bs.m) }

// Tokens lists the tokens that have a book, in no order.
func (bs *Books) Tokens() []string {
	out := make([]string, 0, len(bs.m))
	for t := range bs.m {
		out = append(out, t)
	}
	return out
}

// Len is the number of books held.
func (bs *Books) Len() int { return len(bs.m) }

// Apply folds one event into the books. isBook reports a `book` event;
// outOfStep lists the tokens whose book a price_change showed to have
// missed something (the best bid or ask upstream reports after the change
// is not the book's): they are dropped, to be asked for again or waited
// for. Events other than book and price_change leave the books as they
// are, except that a last_trade_price sets its token's last price.
func (bs *Books) Apply(e *Event) (isBook bool, outOfStep []string) {
	switch e.EventType {
	case "book":
		b := &Book{Bids: make(Ladder, 0, len(e.Bids)), Asks: make(Ladder, 0, len(e.Asks)), Last: e.LastTradePrice}
		if old := bs.m[e.AssetID]; old != nil && !b.Last.Set {
			b.Last = old.Last
		}
		b.Bids.fill(e.Bids)
		b.Asks.fill(e.Asks)
		bs.m[e.AssetID] = b
		return true, nil
	case "price_change":
		var touched []int // indexes into e.Changes, the last change of each token
		for i, c := range e.Changes {
			b := bs.m[c.AssetID]
			if b == nil {
				continue // no book yet: its `book` event is on its way
			}
			if c.Side == "BUY" {
				b.Bids.Set(c.Price.V, c.Size.V)
			} else {
				b.Asks.Set(c.Price.V, c.Size.V)
			}
			if j := slices.IndexFunc(touched, func(j int) bool { return e.Changes[j].AssetID == c.AssetID }); j >= 0 {
				touched[j] = i
			} else {
				touched = append(touched, i)
			}
		}
		// The best prices upstream reports after the change check the
		// book: a book that disagrees missed something.
		for _, i := range touched {
			c := e.Changes[i]
			b := bs.m[c.AssetID]
			if (c.BestBid.Set && !SamePrice(b.Bids.Best(true), c.BestBid.V)) ||
				(c.BestAsk.Set && !SamePrice(b.Asks.Best(false), c.BestAsk.V)) {
				delete(bs.m, c.AssetID)
				outOfStep = append(outOfStep, c.AssetID)
			}
		}
	case "last_trade_price":
		if b := bs.m[e.AssetID]; b != nil && e.Price.Set && e.Price.V > 0 && e.Price.V <= 1 {
			b.Last = e.Price
		}
	}
	return false, outOfStep
}

// SamePrice compares a book's best price with the one upstream reports.
func SamePrice(a, b float64) bool {
	// An empty ask side is reported as 0 or as 1 (nothing below 1).
	if (a == 0 && b == 1) || (a == 1 && b == 0) {
		return true
	}
	return math.Abs(a-b) < 1e-9
}

// Side converts levels in any order to the store's form: best first (the
// highest bid, the lowest ask), at most n, levels of size zero dropped (a
// book should not carry them, but it costs nothing to check).
func Side(in []Level, n int, bids bool) ([]store.Level, error) {
	out := make([]store.Level, 0, len(in))
	for _, l := range in {
		if err := CheckLevel(l.Price, l.Size); err != nil {
			return nil, err
		}
		if l.Size.V > 0 {
			out = append(out, store.Level{Price: l.Price.V, Size: l.Size.V})
		}
	}
	store.SortSide(out, bids)
	if len(out) > n {
		out = out[:n:n]
	}
	return out, nil
}

// Convert is a book's levels in the store's form, n a side.
func Convert(bids, asks []Level, n int) (store.Book, error) {
	b, err := Side(bids, n, true)
	if err != nil {
		return store.Book{}, fmt.Errorf("bids: %w", err)
	}
	a, err := Side(asks, n, false)
	if err != nil {
		return store.Book{}, fmt.Errorf("asks: %w", err)
	}
	return store.Book{Bids: b, Asks: a}, nil
}

// ErrNoPrice is a book with neither asks nor a last trade price: its
// outcome has no price, and the snapshot is not taken.
var ErrNoPrice = fmt.Errorf("the book has no asks and no last trade price")

// Price is the snapshot's price of an outcome: the best ask of its book
// (what buying costs now), else its last trade price. A book with neither
// is ErrNoPrice.
func Price(b store.Book, last Num) (float64, error) {
	switch {
	case len(b.Asks) > 0:
		return b.Asks[0].Price, nil
	case last.Set && last.V > 0 && last.V <= 1:
		return last.V, nil
	}
	return 0, ErrNoPrice
}

// Store is the token's book in the store's form (n levels a side) and its
// outcome's price.
func (b *Book) Store(n int) (store.Book, float64, error) {
	// Both sides in one array of their own (a snapshot keeps them), each
	// clipped to its levels.
	levels := make([]store.Level, 0, max(0, min(n, len(b.Bids)))+max(0, min(n, len(b.Asks))))
	bids := b.Bids.appendTop(levels, n, true)
	bids = bids[:len(bids):len(bids)]
	asks := b.Asks.appendTop(levels[len(bids):len(bids)], n, false)
	sb := store.Book{Bids: bids, Asks: asks[:len(asks):len(asks)]}
	p, err := Price(sb, b.Last)
	return sb, p, err
}

// Interval is the snapshot grid's step (store.SnapshotCadence).
const Interval = store.SnapshotCadence

// Next is the first instant of the grid of step d strictly after t: the
// multiples of d (for a d that divides a day, counted from the Unix
// epoch).
func Next(t time.Time, d time.Duration) time.Time {
	return t.Truncate(d).Add(d)
}

// OnGrid reports whether t is an instant of the grid of step d.
func OnGrid(t time.Time, d time.Duration) bool {
	return t.Truncate(d).Equal(t)
}

// Snapshot assembles a market's snapshot at the instant at from its two
// outcomes' books (n levels a side) and the coin price.
func Snapshot(at time.Time, coinPrice float64, up, down *Book, n int) (store.Snapshot, error) {
	bu, pu, err := up.Store(n)
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("the up outcome: %w", err)
	}
	bd, pd, err := down.Store(n)
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("the down outcome: %w", err)
	}
	return store.Snapshot{Time: at, CoinPrice: coinPrice, PriceUp: pu, PriceDown: pd, BookUp: &bu, BookDown: &bd}, nil
}
