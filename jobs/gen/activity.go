package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// Polymarket trades: about one every tradeEvery of a market's window, at
// most maxTradesPerMarket, each for at least the minimum order.
const (
	tradeEvery         = 10 * time.Second
	maxTradesPerMarket = 150
)

// MarketTrades returns the trades recorded on market m (Polymarket's
// last_trade_price events), oldest first: spread over the window up to
// Config.Now, none in the collector outage. A trade buys or sells Up or
// Down near the fair price of the outcome at its time, on the 0.01 tick,
// for 5 to a few hundred shares; fee_rate_bps is 0, as the upstream's
// trade events report it. Only m's Coin, MarketType and StartTime are
// read.
func (g *Generator) MarketTrades(m store.Market) ([]store.MarketTrade, error) {
	start := m.StartTime.UTC()
	if err := g.check(m.Coin, m.MarketType, start); err != nil {
		return nil, err
	}
	return g.marketTrades(m.Coin, m.MarketType, series.Start(m.MarketType, start)), nil
}

func (g *Generator) marketTrades(c store.Coin, mt store.MarketType, start time.Time) []store.MarketTrade {
	now := g.cfg.Now
	end := series.End(mt, start)
	length := end.Sub(start)
	n := int(min(max(length/tradeEvery, 1), maxTradesPerMarket))
	every := length / time.Duration(n)
	stop := minTime(end, now)
	if !stop.After(start) {
		return nil
	}

	model := g.paths[c].model
	seg := g.paths[c].segment(start, stop)
	s0 := roundTo(seg.at(start), 2)
	sigma := model.Vol / math.Sqrt(secondsPerYear)
	slug := Slug(c, mt, start)
	r := newRand(g.cfg.Seed, "trades/"+slug, 0)
	var out []store.MarketTrade
	for k := range n {
		// Every draw is made whether or not the trade is kept, so that a
		// trade does not depend on Now or on the outage.
		t := start.Add(time.Duration(k)*every + uniformDuration(r, 0, every)).Truncate(time.Millisecond)
		down, sell := r.IntN(2) == 1, r.IntN(2) == 1
		size := roundTo(minOrderSize+logNormal(r, 40, 1.2), 2)
		if t.After(stop) || t.Equal(end) || g.inOutage(t) {
			continue
		}
		up := fairUp(roundTo(seg.at(t), 2), s0, sigma, end.Sub(t).Seconds(), 0)
		price := min(max(int(math.Round(up*100)), 1), 99)
		outcome := store.OutcomeUp
		if down {
			outcome, price = store.OutcomeDown, 100-price
		}
		side := store.SideBuy
		if sell {
			side = store.SideSell
		}
		out = append(out, store.MarketTrade{
			Time: t, Outcome: outcome, Price: cents(price), Size: size, Side: side,
			TxHash: txHash(slug, k),
		})
	}
	return out
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

// txHash names the k-th trade's settlement transaction: 0x and 64 hex
// digits, like Polygon's, in one allocation.
func txHash(slug string, k int) string {
	var label [128]byte
	sum := sha256.Sum256(strconv.AppendInt(append(append(label[:0], "updown/gen trade "+slug...), ' '), int64(k), 10))
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
