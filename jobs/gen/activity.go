package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// MarketTrades returns the trades recorded on market m (Polymarket's
// last_trade_price events), oldest first, up to Config.Now, none in the
// collector outage. Only m's Coin, MarketType and StartTime are read.
//
// They are what a replay of resting maker orders (DESIGN 6) reads, so they
// agree with the market's snapshots: taker orders of both outcomes, buys
// and sells, arrive at random (a few to tens a minute, more towards the
// end of the window) and each matches the book of the last snapshot before
// it. A taker buy prints at the best ask, a sell at the best bid; an order
// larger than the touch walks on, one print per level at that level's
// price, each level it passes taken whole, up to three levels past the
// touch. Sizes are heavy-tailed: mostly 5 to 50 shares, some hundreds,
// rarely thousands. Now and then a match at the touch is reported on both
// tokens: an Up taker sell at p and a Down taker buy at 1 − p (or the
// reverse) of one size, with one transaction hash. The prints of one order
// share its time and hash; every hash is 0x and 64 hex digits.
// fee_rate_bps is 0, as the upstream's trade events report it.
func (g *Generator) MarketTrades(m store.Market) ([]store.MarketTrade, error) {
	start := m.StartTime.UTC()
	if err := g.check(m.Coin, m.MarketType, start); err != nil {
		return nil, err
	}
	return g.marketTrades(m.Coin, m.MarketType, series.Start(m.MarketType, start)), nil
}

// The taker flow of a market.
const (
	takerBuyShare = 0.55 // of taker orders, buys (the rest sell)
	sweepShare    = 0.04 // of taker orders, sized to walk 1 to 3 levels past the touch
	twinShare     = 0.15 // of matches at the touch, reported on both tokens
	sizeTailIndex = 0.75 // Pareto index of order sizes from minOrderSize: P(size > s) = (5/s)^0.75
	maxOrderSize  = 10_000.0
	maxWalk       = 3 // levels past the touch an order's limit price lets it reach
	// walkDepth is the depth of the (unrecorded) books trades walk when
	// the config records none.
	walkDepth = maxWalk + 1
)

// takerRate is the number of taker orders a minute on a market of coin c
// and type mt, before rampUp: short markets trade fastest, and BTC most.
func takerRate(c store.Coin, mt store.MarketType) float64 {
	v := 14.0
	switch mt {
	case store.M15:
		v = 9
	case store.H1:
		v = 5
	case store.H4:
		v = 3
	case store.H24:
		v = 1.5
	}
	switch c {
	case store.ETH:
		v *= 0.6
	case store.SOL:
		v *= 0.45
	}
	return v
}

// rampUp scales the taker rate at the fraction u of a window gone: 0.6 at
// the start, 3 at the end, 1.2 on average, as trading picks up while the
// outcome settles.
func rampUp(u float64) float64 { return 0.6 + 2.4*u*u*u }

// takerOrder is one taker order as drawn, before it meets the book.
type takerOrder struct {
	outcome int  // 0 Up, 1 Down
	buy     bool // else a sell
	size    float64
	// sweep, when positive, sizes the order to take the sweep levels
	// nearest the touch whole and frac of the next.
	sweep int
	frac  float64
	twin  bool // reported on both tokens if it matches at the touch alone
}

func drawOrder(r *rand.Rand) takerOrder {
	o := takerOrder{outcome: r.IntN(2), buy: r.Float64() < takerBuyShare}
	if r.Float64() < sweepShare {
		switch u := r.IntN(10); {
		case u < 6:
			o.sweep = 1
		case u < 9:
			o.sweep = 2
		default:
			o.sweep = 3
		}
		o.frac = 0.1 + 0.9*r.Float64()
	} else {
		u := 1 - r.Float64() // (0, 1]
		o.size = roundTo(min(minOrderSize*math.Pow(u, -1/sizeTailIndex), maxOrderSize), 2)
	}
	o.twin = r.Float64() < twinShare
	return o
}

// tradeWalk is what one market's trade generation shares across its
// snapshot intervals.
type tradeWalk struct {
	g          *Generator
	slug       string
	start      time.Time
	end, stop  time.Time
	perSecond  float64 // taker orders a second before rampUp
	src        *bookSource
	lv         []store.Level
	levels     int
	orders     *streams
	out        []store.MarketTrade
	booksBuilt bool
	books      [2]store.Book // [outcome]
}

func (g *Generator) marketTrades(c store.Coin, mt store.MarketType, start time.Time) []store.MarketTrade {
	end := series.End(mt, start)
	stop := minTime(end, g.cfg.Now)
	if !stop.After(start) {
		return nil
	}
	slug := Slug(c, mt, start)
	levels, churn := g.cfg.BookLevels, g.cfg.BookChurn
	if levels == 0 {
		levels, churn = walkDepth, 0
	}
	tw := &tradeWalk{
		g: g, slug: slug, start: start, end: end, stop: stop,
		perSecond: takerRate(c, mt) / 60,
		src:       g.newBookSource(slug, churn),
		lv:        make([]store.Level, 4*levels),
		levels:    levels,
		orders:    newStreams(g.cfg.Seed, "trades/"+slug),
	}
	// Room for the prints expected (rampUp averages 1.2; walks and twins
	// add about a quarter), so that the slice rarely grows.
	tw.out = make([]store.MarketTrade, 0, int(1.5*tw.perSecond*stop.Sub(start).Seconds())+8)
	// The trades between two snapshots meet the first one's book: each
	// interval is generated once the next snapshot's time is known, before
	// the books move on to it. An interval whose snapshot the outage lost
	// has no trades (the collector was down).
	w := g.newQuoteWalk(c, mt, start, stop)
	var (
		open           bool
		openK          int
		openT          time.Time
		openAsk, openB int
	)
	for {
		k, t, ok := w.next()
		if open {
			tw.interval(openK, openT, t, openAsk, openB)
		}
		if !ok || t.After(stop) {
			break
		}
		_, ask, bid := w.quote(t)
		tw.src.churn(k)
		open = !g.inOutage(t)
		openK, openT, openAsk, openB = k, t, ask, bid
	}
	return tw.out
}

// interval appends the trades after snapshot k, taken at from with the Up
// quote ask/bid, and before to, the next snapshot's time (or the end).
// Everything is drawn from the interval's own stream, whether or not a
// trade is kept, so that trades never depend on Now or on the outage: a
// later Now only adds trades.
func (tw *tradeWalk) interval(k int, from, to time.Time, ask, bid int) {
	r := tw.orders.at(int64(k))
	lambda := tw.perSecond * rampUp(from.Sub(tw.start).Seconds()/tw.end.Sub(tw.start).Seconds())
	tw.booksBuilt = false
	// Strictly after the snapshot, on the millisecond: at equal times a
	// replay takes a trade before a snapshot.
	t := from.Truncate(time.Millisecond).Add(time.Millisecond)
	for j := 0; ; j++ {
		t = t.Add(time.Duration(r.ExpFloat64() / lambda * float64(time.Second))).Truncate(time.Millisecond)
		if !t.Before(to) || !t.Before(tw.end) || t.After(tw.stop) {
			return
		}
		o := drawOrder(r)
		if tw.g.inOutage(t) {
			continue
		}
		if !tw.booksBuilt {
			tw.books[0], tw.books[1] = tw.src.books(k, tw.lv, tw.levels, ask, bid)
			tw.booksBuilt = true
		}
		tw.match(o, t, txHash(tw.slug, k, j))
	}
}

// side returns the levels a taker order of the outcome meets: the asks
// for a buy, the bids for a sell, best first.
func (tw *tradeWalk) side(outcome int, buy bool) []store.Level {
	if buy {
		return tw.books[outcome].Asks
	}
	return tw.books[outcome].Bids
}

// match prints order o against the books at t.
func (tw *tradeWalk) match(o takerOrder, t time.Time, hash string) {
	levels := tw.side(o.outcome, o.buy)
	if len(levels) == 0 {
		return
	}
	levels = levels[:min(len(levels), maxWalk+1)]
	size := o.size
	if o.sweep > 0 {
		size = 0
		for i, l := range levels {
			switch {
			case i < o.sweep:
				size += l.Size
			case i == o.sweep:
				size += roundTo(o.frac*l.Size, 2)
			}
		}
		size = roundTo(size, 2)
	}
	outcome, side := store.OutcomeUp, store.SideBuy
	if o.outcome == 1 {
		outcome = store.OutcomeDown
	}
	if !o.buy {
		side = store.SideSell
	}
	left := size
	for i, l := range levels {
		if left < minOrderSize && i > 0 {
			break // the rest of the order was under the minimum: never sent
		}
		take := min(left, l.Size)
		tw.out = append(tw.out, store.MarketTrade{Time: t, Outcome: outcome, Price: l.Price, Size: take, Side: side, TxHash: hash})
		left = roundTo(left-take, 2)
		if left <= 0 {
			break
		}
	}
	if !o.twin || size > levels[0].Size {
		return
	}
	// The same match seen from the other token: the other outcome, the
	// other side, at the complement price, which the mirrored book shows
	// at its touch.
	mirror := tw.side(1-o.outcome, !o.buy)
	price := 100 - int(math.Round(levels[0].Price*100))
	if len(mirror) == 0 || int(math.Round(mirror[0].Price*100)) != price || size > mirror[0].Size {
		return
	}
	twin := store.MarketTrade{Time: t, Outcome: store.OutcomeDown, Price: cents(price), Size: size, Side: store.SideSell, TxHash: hash}
	if o.outcome == 1 {
		twin.Outcome = store.OutcomeUp
	}
	if !o.buy {
		twin.Side = store.SideBuy
	}
	tw.out = append(tw.out, twin)
}

// Gaps returns the recording gaps of market m as Config.Now sees them: the
// part of its window that the collector outage covers, if any (up to Now).
// Only m's Coin, MarketType and StartTime are read.
func (g *Generator) Gaps(m store.Market) ([]store.Gap, error) {
	start := m.StartTime.UTC()
	if err := g.check(m.Coin, m.MarketType, start); err != nil {
		return nil, err
	}
	return g.gaps(m.MarketType, series.Start(m.MarketType, start)), nil
}

func (g *Generator) gaps(mt store.MarketType, start time.Time) []store.Gap {
	if g.outageFrom.IsZero() {
		return nil
	}
	from := maxTime(start, g.outageFrom)
	to := minTime(minTime(series.End(mt, start), g.outageTo), g.cfg.Now)
	if !to.After(from) {
		return nil
	}
	return []store.Gap{{From: from, To: to}}
}

// txHash names the settlement transaction of the j-th taker order after
// snapshot k: 0x and 64 hex digits, like Polygon's, in one allocation.
func txHash(slug string, k, j int) string {
	var buf [128]byte
	label := append(append(buf[:0], "updown/gen trade "...), slug...)
	label = append(strconv.AppendInt(append(label, ' '), int64(k), 10), ' ')
	sum := sha256.Sum256(strconv.AppendInt(label, int64(j), 10))
	var b [66]byte
	b[0], b[1] = '0', 'x'
	hex.Encode(b[2:], sum[:])
	return string(b[:])
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
