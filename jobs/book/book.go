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
	Bids, Asks map[float64]float64
	Last       Num
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
		b := &Book{Bids: make(map[float64]float64, len(e.Bids)), Asks: make(map[float64]float64, len(e.Asks)), Last: e.LastTradePrice}
		if old := bs.m[e.AssetID]; old != nil && !b.Last.Set {
			b.Last = old.Last
		}
		for _, l := range e.Bids {
			SetLevel(b.Bids, l.Price.V, l.Size.V)
		}
		for _, l := range e.Asks {
			SetLevel(b.Asks, l.Price.V, l.Size.V)
		}
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
				SetLevel(b.Bids, c.Price.V, c.Size.V)
			} else {
				SetLevel(b.Asks, c.Price.V, c.Size.V)
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
			if (c.BestBid.Set && !SamePrice(Best(b.Bids, true), c.BestBid.V)) ||
				(c.BestAsk.Set && !SamePrice(Best(b.Asks, false), c.BestAsk.V)) {
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

// SetLevel sets the size at price, 0 removing the level.
func SetLevel(m map[float64]float64, price, size float64) {
	if size == 0 {
		delete(m, price)
		return
	}
	m[price] = size
}

// Best is a side's best price, 0 for an empty side (as upstream writes
// best_bid and best_ask of an empty side).
func Best(m map[float64]float64, bids bool) float64 {
	var p float64
	first := true
	for q := range m {
		if first || (bids && q > p) || (!bids && q < p) {
			p, first = q, false
		}
	}
	return p
}

// SamePrice compares a book's best price with the one upstream reports.
func SamePrice(a, b float64) bool {
	// An empty ask side is reported as 0 or as 1 (nothing below 1).
	if (a == 0 && b == 1) || (a == 1 && b == 0) {
		return true
	}
	return math.Abs(a-b) < 1e-9
}

// Levels lists a side's levels, in no order.
func Levels(m map[float64]float64) []Level {
	out := make([]Level, 0, len(m))
	for p, s := range m {
		out = append(out, Level{Price: Num{V: p, Set: true}, Size: Num{V: s, Set: true}})
	}
	return out
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
	if bids {
		slices.SortStableFunc(out, func(x, y store.Level) int { return cmp.Compare(y.Price, x.Price) })
	} else {
		slices.SortStableFunc(out, func(x, y store.Level) int { return cmp.Compare(x.Price, y.Price) })
	}
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
	sb := store.Book{Bids: top(b.Bids, n, true), Asks: top(b.Asks, n, false)}
	p, err := Price(sb, b.Last)
	return sb, p, err
}

// top is Side for a book held as a map, whose levels are valid already:
// its n best levels with a positive size, best first. A book keeps many
// more levels than a snapshot does, so the n best are picked in one pass,
// each level placed among those kept so far, rather than all sorted.
func top(m map[float64]float64, n int, bids bool) []store.Level {
	// order puts the higher bid first, the lower ask (cmp.Compare's
	// order, NaN lowest).
	order := func(x, y float64) int { return cmp.Compare(y, x) }
	if !bids {
		order = cmp.Compare[float64]
	}
	before := func(x, y float64) bool { return order(x, y) < 0 }
	if n > maxPicked {
		out := make([]store.Level, 0, len(m))
		for p, s := range m {
			if s > 0 {
				out = append(out, store.Level{Price: p, Size: s})
			}
		}
		slices.SortFunc(out, func(x, y store.Level) int { return order(x.Price, y.Price) })
		k := min(len(out), n)
		return out[:k:k]
	}
	out := make([]store.Level, 0, min(n, len(m)))
	for p, s := range m {
		if !(s > 0) || n == 0 || len(out) == n && !before(p, out[n-1].Price) {
			continue
		}
		at := len(out)
		for at > 0 && before(p, out[at-1].Price) {
			at--
		}
		if len(out) < n {
			out = append(out, store.Level{})
		}
		copy(out[at+1:], out[at:len(out)-1])
		out[at] = store.Level{Price: p, Size: s}
	}
	return out
}

// maxPicked is the most levels a side top picks in one pass; more are
// sorted.
const maxPicked = 64

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
