package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// instrument describes one Binance market as far as generated data needs:
// its symbol, tick and lot (as decimals, Binance's for the pair) and how
// busy it is.
type instrument struct {
	symbol       string
	kind         store.ExchangeKind
	priceDec     int     // tick = 10^-priceDec
	qtyDec       int     // lot = 10^-qtyDec
	tradesPerSec float64 // mean trade rate
}

func instrumentOf(c store.Coin, k store.ExchangeKind) instrument {
	in := instrument{symbol: string(c) + "USDT", kind: k, priceDec: 2}
	switch {
	case c == store.BTC && k == store.Spot:
		in.qtyDec, in.tradesPerSec = 5, 12
	case c == store.BTC: // BTCUSDT perpetual trades on a 0.1 tick
		in.priceDec, in.qtyDec, in.tradesPerSec = 1, 3, 25
	case c == store.ETH && k == store.Spot:
		in.qtyDec, in.tradesPerSec = 4, 8
	case c == store.ETH:
		in.qtyDec, in.tradesPerSec = 3, 15
	case k == store.Spot: // SOL
		in.qtyDec, in.tradesPerSec = 3, 6
	default: // SOLUSDT perpetual trades whole coins
		in.qtyDec, in.tradesPerSec = 0, 10
	}
	return in
}

// label names a family of in's random streams (see newRand).
func (in instrument) label(what string) string { return what + "/" + in.symbol + "/" + string(in.kind) }

func (in instrument) tick() float64 { return math.Pow10(-in.priceDec) }

// price converts a price in ticks to dollars, exactly as the decimal reads.
func (in instrument) price(ticks int64) float64 { return float64(ticks) / math.Pow10(in.priceDec) }

// qty converts a notional in dollars at price p to a quantity on the lot,
// at least one lot.
func (in instrument) qty(notional, p float64) float64 {
	return max(roundTo(notional/p, in.qtyDec), math.Pow10(-in.qtyDec))
}

// mid is the instrument's mid price at t: the coin's price for spot, and
// for the perpetual that price times one plus a basis of a few basis points
// that swings with the 8-hour funding cycle (BTC futures a few dollars off
// spot).
func (g *Generator) mid(in instrument, seg segment, t time.Time) float64 {
	s := seg.at(t)
	if in.kind == store.Future {
		phase := float64(mix64(fnv1a(in.symbol)^mix64(uint64(g.cfg.Seed)))>>11) / (1 << 53) * 2 * math.Pi
		hours := float64(t.UnixMilli()) / 3.6e6
		s *= 1 + 5e-5 + 4e-5*math.Sin(2*math.Pi*hours/8+phase)
	}
	return s
}

// Depth returns the order book of coin c on the exchange market k at t
// (truncated to the millisecond): DepthLevels a side around the mid price,
// one tick wide at the top, levels spreading out with depth, quantities on
// the pair's lot. It is a pure function of (Seed, c, k, t).
func (g *Generator) Depth(c store.Coin, k store.ExchangeKind, t time.Time) (store.DepthSnapshot, error) {
	if err := g.checkExchange(c, k); err != nil {
		return store.DepthSnapshot{}, err
	}
	t = t.UTC().Truncate(time.Millisecond)
	if t.Before(pathEpoch()) {
		return store.DepthSnapshot{}, fmt.Errorf("gen: depth at %v is before %v", t, pathEpoch())
	}
	in := instrumentOf(c, k)
	levels := make([]store.DepthLevel, 2*g.cfg.DepthLevels)
	r := newRand(g.cfg.Seed, in.label("depth"), t.UnixMilli())
	return g.depth(in, g.paths[c].segment(t, t), t, r, levels), nil
}

// LatestDepth returns Depth at Config.Now: what the collector keeps as the
// latest book.
func (g *Generator) LatestDepth(c store.Coin, k store.ExchangeKind) (store.DepthSnapshot, error) {
	return g.Depth(c, k, g.cfg.Now)
}

// maxDepthLag bounds how long after its tick a history snapshot is taken.
const maxDepthLag = 250 * time.Millisecond

// DepthHistory returns BTCUSDT spot depth snapshots, then futures, each
// oldest first, one every DepthInterval (a little after each tick, as a
// collector takes them) over the DepthHistory before Now: the snapshots
// taken by Now, each at the same time whatever the Now, so that a later
// Now only adds to the history. It is empty when the config has no BTC or
// no history.
func (g *Generator) DepthHistory() []store.DepthSnapshot {
	path, ok := g.paths[store.BTC]
	every := g.cfg.DepthInterval
	if !ok || g.cfg.DepthHistory <= 0 {
		return nil
	}
	now := g.cfg.Now
	from := now.Add(-g.cfg.DepthHistory)
	first := from.Truncate(every)
	if first.Before(from) {
		first = first.Add(every)
	}
	var ticks []time.Time
	lags := newStreams(g.cfg.Seed, "depth/lag")
	for tick := first; !tick.After(now); tick = tick.Add(every) {
		lag := time.Duration(lags.at(tick.UnixMilli()).Int64N(int64(maxDepthLag/time.Millisecond))) * time.Millisecond
		if lag >= every {
			lag = 0
		}
		// A tick whose snapshot is not taken by Now is not in the history
		// yet; taking it at the tick instead put it at one time for this Now
		// and another for a later one, so that the dev collector, which adds
		// what a later Now brings, stored that tick twice.
		if t := tick.Add(lag); !t.After(now) {
			ticks = append(ticks, t)
		}
	}
	seg := path.segment(first, now)
	kinds := []store.ExchangeKind{store.Spot, store.Future}
	out := make([]store.DepthSnapshot, 0, len(kinds)*len(ticks))
	levels := make([]store.DepthLevel, len(kinds)*len(ticks)*2*g.cfg.DepthLevels)
	for _, k := range kinds {
		in := instrumentOf(store.BTC, k)
		books := newStreams(g.cfg.Seed, in.label("depth"))
		for _, t := range ticks {
			n := 2 * g.cfg.DepthLevels
			out = append(out, g.depth(in, seg, t, books.at(t.UnixMilli()), levels[:n:n]))
			levels = levels[n:]
		}
	}
	return out
}

// depth builds the book of in at t into levels (2·DepthLevels long),
// drawing from r, the stream of in's depth at t.
func (g *Generator) depth(in instrument, seg segment, t time.Time, r *rand.Rand, levels []store.DepthLevel) store.DepthSnapshot {
	mid := g.mid(in, seg, t)
	tick := in.tick()
	bestBid := int64(math.Floor(mid / tick))
	// Levels further from the top are sparser: the mean gap between them is
	// a few millionths of the price (about 30 cents on BTC), never under a
	// tick.
	extra := max(mid*3e-6/tick-1, 0)
	n := len(levels) / 2
	bids, asks := levels[:0:n], levels[n:n:2*n]
	for p := bestBid; len(bids) < n && p > 0; p -= 1 + int64(r.ExpFloat64()*extra) {
		bids = append(bids, store.DepthLevel{Price: in.price(p), Quantity: in.qty(logNormal(r, 8_000, 1.3), mid)})
	}
	for p := bestBid + 1; len(asks) < n; p += 1 + int64(r.ExpFloat64()*extra) {
		asks = append(asks, store.DepthLevel{Price: in.price(p), Quantity: in.qty(logNormal(r, 8_000, 1.3), mid)})
	}
	return store.DepthSnapshot{
		Symbol:       in.symbol,
		Kind:         in.kind,
		Time:         t,
		CoinPrice:    roundTo(mid, 2),
		Bids:         bids,
		Asks:         asks,
		LastUpdateID: lastUpdateID(in.kind, t),
	}
}

// lastUpdateID numbers book updates increasing with time at about the rate
// and magnitude Binance's do (spot BTCUSDT near 7·10¹⁰, futures near 7·10¹²).
func lastUpdateID(k store.ExchangeKind, t time.Time) int64 {
	if k == store.Future {
		return t.UnixMilli() * 4
	}
	return t.UnixMilli() / 25
}

// tradeIDsPerSecond is the room each second has in the trade id sequence.
// Ids are (seconds since the path epoch) × this + the trade's index within
// its second: increasing, unique, and a pure function of time, so trades
// generated at different Nows never disagree. Trade rates stay far below it.
const tradeIDsPerSecond = 100

// maxTrades bounds Trades: far more than any API page (1,000), and few
// enough that a mistaken count cannot walk the generator back for years.
const maxTrades = 100_000

// Trades returns the n most recent trades of coin c on the exchange market
// k up to Config.Now, oldest first (as Binance lists them). Ids increase by
// trade; times are whole milliseconds; buyer-maker trades print at the bid,
// the others at the ask; spot trades have IsBestMatch set (Binance always
// sets it true) and futures trades leave it nil.
func (g *Generator) Trades(c store.Coin, k store.ExchangeKind, n int) ([]store.Trade, error) {
	if err := g.checkExchange(c, k); err != nil {
		return nil, err
	}
	if n > maxTrades {
		return nil, fmt.Errorf("gen: %d trades asked for, at most %d are generated", n, maxTrades)
	}
	in := instrumentOf(c, k)
	now := g.cfg.Now
	out := make([]store.Trade, 0, max(n, 0))
	seconds := newStreams(g.cfg.Seed, in.label("trades"))
	for sec := now.Unix(); len(out) < n && sec >= pathEpochDay*secondsPerDay; sec-- {
		ts := g.tradesInSecond(in, c, sec, seconds.at(sec))
		for i := len(ts) - 1; i >= 0 && len(out) < n; i-- {
			if !ts[i].Time.After(now) {
				out = append(out, ts[i])
			}
		}
	}
	slices.Reverse(out)
	return out, nil
}

// tradesInSecond returns the trades of in during the Unix second sec,
// oldest first: a Poisson number of them at uniform milliseconds, drawn
// from r, the stream of that second.
func (g *Generator) tradesInSecond(in instrument, c store.Coin, sec int64, r *rand.Rand) []store.Trade {
	count := min(poisson(r, in.tradesPerSec), tradeIDsPerSecond)
	ms := make([]int64, count)
	for i := range ms {
		ms[i] = r.Int64N(1000)
	}
	slices.Sort(ms)
	at := time.Unix(sec, 0).UTC()
	seg := g.paths[c].segment(at, at)
	trades := make([]store.Trade, count)
	var bestMatch []bool
	if in.kind == store.Spot {
		bestMatch = make([]bool, count)
	}
	for i, off := range ms {
		t := at.Add(time.Duration(off) * time.Millisecond)
		mid := g.mid(in, seg, t)
		ticks := int64(math.Floor(mid / in.tick()))
		buyerMaker := r.IntN(2) == 0 // a seller took the bid
		if !buyerMaker {
			ticks++ // a buyer took the ask
		}
		price := in.price(ticks)
		qty := in.qty(logNormal(r, 300, 1.6), price)
		trades[i] = store.Trade{
			ID:           (sec-pathEpochDay*secondsPerDay)*tradeIDsPerSecond + int64(i),
			Price:        price,
			Qty:          qty,
			QuoteQty:     roundTo(price*qty, 8),
			Time:         t,
			IsBuyerMaker: buyerMaker,
		}
		if bestMatch != nil {
			bestMatch[i] = true
			trades[i].IsBestMatch = &bestMatch[i]
		}
	}
	return trades
}

// poisson draws a Poisson count of mean lambda (Knuth's method; lambda here
// is at most a few dozen).
func poisson(r *rand.Rand, lambda float64) int {
	limit, k := math.Exp(-lambda), 0
	for p := r.Float64(); p > limit; p *= r.Float64() {
		k++
	}
	return k
}

// checkExchange reports whether the generator has exchange data for coin c
// on market k.
func (g *Generator) checkExchange(c store.Coin, k store.ExchangeKind) error {
	if !k.Valid() {
		return fmt.Errorf("gen: unknown exchange market %q", k)
	}
	if g.paths[c] == nil {
		return fmt.Errorf("gen: coin %q is not in the config", c)
	}
	return nil
}

// Symbol is the exchange pair of coin c against USDT, e.g. BTCUSDT.
func Symbol(c store.Coin) string { return instrumentOf(c, store.Spot).symbol }
