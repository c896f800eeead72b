package gen

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// quoteWalk replays a market's snapshots one by one: their times, coin
// prices and Up quotes. Snapshots and trades both walk it, so that a
// trade prints against the book of the snapshot recorded before it.
//
// Each step is next, then (for a snapshot at or before Now) quote: the
// order in which the snapshot stream has always been drawn.
type quoteWalk struct {
	start, end   time.Time
	step, jitter time.Duration
	n            int // snapshots of the whole window
	seg          segment
	s0, sigma    float64
	rho, innov   float64
	noise        float64
	r            *rand.Rand
	k            int // the snapshot next returns
}

// newQuoteWalk starts the walk of the market of coin c and type mt that
// starts at start, priced up to stop (its end or Now, whichever is first).
func (g *Generator) newQuoteWalk(c store.Coin, mt store.MarketType, start, stop time.Time) *quoteWalk {
	end := series.End(mt, start)
	step := g.cadenceOf(end.Sub(start))
	w := &quoteWalk{
		start: start, end: end, step: step,
		jitter: step / 4, // collectors never tick exactly on the grid
		n:      int((end.Sub(start) + step - 1) / step),
		seg:    g.paths[c].segment(start, stop),
		sigma:  g.paths[c].model.Vol / math.Sqrt(secondsPerYear),
		rho:    math.Exp(-step.Seconds() / noiseTau.Seconds()),
		r:      newRand(g.cfg.Seed, "snapshots/"+Slug(c, mt, start), 0),
	}
	w.s0 = roundTo(w.seg.at(start), 2) // as recorded in coin_price_start
	w.innov = noiseSD * math.Sqrt(1-w.rho*w.rho)
	w.noise = noiseSD * w.r.NormFloat64()
	return w
}

// next returns the number and time of the next snapshot, drawing its
// jitter and its quote's noise; ok is false after the window's last.
func (w *quoteWalk) next() (k int, t time.Time, ok bool) {
	if w.k >= w.n {
		return w.k, w.end, false
	}
	k = w.k
	w.k++
	// The first snapshot is taken at the start itself, so that it records
	// coin_price_start.
	t = w.start.Add(time.Duration(k) * w.step)
	if k > 0 {
		t = t.Add(uniformDuration(w.r, 0, w.jitter))
		w.noise = w.rho*w.noise + w.innov*w.r.NormFloat64()
	}
	return k, t, true
}

// quote returns the coin price and the Up book's best ask and bid, in
// cents, of the snapshot next returned at t, which must be at or before
// the walk's stop.
func (w *quoteWalk) quote(t time.Time) (price float64, ask, bid int) {
	price = roundTo(w.seg.at(t), 2)
	up := fairUp(price, w.s0, w.sigma, w.end.Sub(t).Seconds(), w.noise)
	ask, bid = quote(up, spreadTicks(w.r))
	return price, ask, bid
}

// bookSource draws the books of a market's snapshots: each side afresh
// from a stream of its own, or, with BookChurn, from resting sizes that
// change a few at a time.
type bookSource struct {
	sides   *streams
	resting *restingBooks
	churnN  int
}

// newBookSource returns the book source of the market with the slug;
// churn is BookChurn (0: every book drawn afresh).
func (g *Generator) newBookSource(slug string, churn int) *bookSource {
	b := &bookSource{sides: newStreams(g.cfg.Seed, "books/"+slug), churnN: churn}
	if churn > 0 {
		b.resting = newRestingBooks(b.sides.at(-1))
	}
	return b
}

// churn moves the resting books to snapshot k. It is called for every
// snapshot, recorded or not, in order, before books(k).
func (b *bookSource) churn(k int) {
	if b.resting != nil {
		b.resting.churn(b.sides.at(int64(k)), b.churnN)
	}
}

// books fills lv (4 × levels long) with snapshot k's levels and returns
// its Up and Down books around the Up quote (ask, bid in cents). The Down
// book mirrors the Up book at the top.
func (b *bookSource) books(k int, lv []store.Level, levels, ask, bid int) (up, down store.Book) {
	if b.resting != nil {
		up = store.Book{
			Bids: b.resting.side(0, lv[0:0:levels], bid, -1),
			Asks: b.resting.side(0, lv[levels:levels:2*levels], ask, +1),
		}
		down = store.Book{
			Bids: b.resting.side(1, lv[2*levels:2*levels:3*levels], 100-ask, -1),
			Asks: b.resting.side(1, lv[3*levels:3*levels:4*levels], 100-bid, +1),
		}
		return up, down
	}
	up = store.Book{
		Bids: bookSide(b.sides.at(int64(4*k+0)), lv[0:0:levels], bid, -1),
		Asks: bookSide(b.sides.at(int64(4*k+1)), lv[levels:levels:2*levels], ask, +1),
	}
	down = store.Book{
		Bids: bookSide(b.sides.at(int64(4*k+2)), lv[2*levels:2*levels:3*levels], 100-ask, -1),
		Asks: bookSide(b.sides.at(int64(4*k+3)), lv[3*levels:3*levels:4*levels], 100-bid, +1),
	}
	return up, down
}
