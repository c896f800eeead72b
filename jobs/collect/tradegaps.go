package collect

import (
	"context"
	"sync"
	"time"

	"github.com/updown/updown/store"
)

// tradeWatch follows whether Polymarket's trades reach the collector.
// Trades come only from the websocket (last_trade_price); while it is down
// or mute, books come from REST and snapshots go on, but the trades of
// that stretch are missing. Such a stretch (after the feed flowed, of any
// length: a new connection does not send the trades it missed; before,
// at a start, longer than GapAfter) is recorded for every market live in
// it as a gap of kind trades
// (store.GapTrades), so that a replay relying on trades (resting orders,
// DESIGN 6) can say so; with a trades source (Upstreams.PolymarketData)
// the gap's trades are then backfilled and the gap removed (backfill.go).
// Without a websocket configured no trade is ever recorded, and no trades
// gap either: the replay already warns of a market without trades.
type tradeWatch struct {
	mu      sync.Mutex
	covered time.Time // last instant the trades were flowing
	down    time.Time // first instant seen not flowing; zero while flowing
}

// wsDeliveryLag is how much earlier than the socket's last message, as
// received, a trades gap begins: the message left Polymarket earlier, and
// a trade made after it was sent and before it arrived came on no message.
// A gap a little longer costs the backfill a few trades it already has.
const wsDeliveryLag = time.Second

// watchTrades checks the trade feed at the grid instant at, and records
// the stretch it was down once it flows again.
func (c *Collector) watchTrades(at time.Time) {
	if c.ws == nil || c.cfg.Activity == nil {
		return
	}
	flowing := c.ws.tradesFlowing()
	c.tradeFeed.mu.Lock()
	defer c.tradeFeed.mu.Unlock()
	tw := &c.tradeFeed
	if !flowing {
		if tw.down.IsZero() {
			tw.down = at
			// The feed is judged down a little after its last data (at
			// once for a dropped connection, after the staleness bound
			// for a mute one): the stretch begins at that data, less its
			// delivery (wsDeliveryLag), so that the trades in between are
			// the gap's too, those made while the last message was on its
			// way included.
			if d := c.ws.lastData(); !d.IsZero() && d.Add(-wsDeliveryLag).Before(tw.covered) {
				tw.covered = d.Add(-wsDeliveryLag)
			}
		}
		return
	}
	if !tw.down.IsZero() {
		// After a feed that flowed, any stretch away is a trades gap: a
		// new connection sends no trade made before its subscription, so
		// even a quick reconnection loses the trades of its stretch, which
		// only the backfill brings. Before the first flow (a start), only
		// a stretch longer than GapAfter is.
		from, least := tw.stretch(c.cfg.GapAfter)
		c.recordTradeGaps(from, at, least, true)
	}
	tw.covered, tw.down = at, time.Time{}
}

// stretch is where the trades gap of the feed's stretch away begins, and
// how long it must be to count: after a feed that flowed, from the last
// instant it flowed, however short (a new connection sends no trade made
// before its subscription); before the first flow (a start), from when it
// was first seen down, longer than gapAfter.
func (tw *tradeWatch) stretch(gapAfter time.Duration) (from time.Time, least time.Duration) {
	if !tw.covered.IsZero() {
		return tw.covered, 0
	}
	return tw.down, gapAfter
}

// tradesLost implements wsListener: a market whose token was dropped and
// subscribed again on a live connection, for a fresh book, may miss the
// trades made in between (the connection's feed flowed all along, so
// watchTrades sees nothing). Its stretch, however short, is recorded as
// a trades gap of the market and backfilled; the two tokens of a market
// asked for together make one gap (store.MergeGaps).
func (c *Collector) tradesLost(lost []lostTrades) {
	if c.cfg.Activity == nil {
		return
	}
	markets := map[string]store.Market{}
	gaps := map[string][]store.Gap{}
	var slugs []string
	for _, l := range lost {
		m, _, ok := c.marketOf(l.token)
		if !ok {
			// A market is kept while a stretch of its tokens is open
			// (forgetEnded): only a token subscribed for no market known
			// comes here, and nothing says where its stretch belongs.
			c.log.WarnContext(context.Background(), "trades gap not recorded: the token resubscribed is of no market the collector follows",
				"token", l.token, "from", l.from, "to", l.to)
			continue
		}
		g, ok := tradesGap(m, l.from, l.to, 0)
		if !ok {
			continue // outside the market's window
		}
		if _, seen := markets[m.Slug]; !seen {
			markets[m.Slug] = m
			slugs = append(slugs, m.Slug)
		}
		gaps[m.Slug] = append(gaps[m.Slug], g)
	}
	for _, slug := range slugs {
		for _, g := range store.MergeGaps(gaps[slug]) {
			c.recordTradesGap(markets[slug], g, true)
		}
	}
}

// closeTrades records a stretch still open when the collector stops.
func (c *Collector) closeTrades(now time.Time) {
	if c.ws == nil || c.cfg.Activity == nil {
		return
	}
	c.tradeFeed.mu.Lock()
	defer c.tradeFeed.mu.Unlock()
	tw := &c.tradeFeed
	if tw.down.IsZero() {
		return
	}
	// The next start's backfill reads it.
	from, least := tw.stretch(c.cfg.GapAfter)
	c.recordTradeGaps(from, now, least, false)
	tw.down = time.Time{}
}

// recordTradeGaps records [from, to) as a trades gap of every known market
// whose window overlaps it, cut to the window, when longer than least,
// and with backfill hands each to the backfill (backfill.go).
func (c *Collector) recordTradeGaps(from, to time.Time, least time.Duration, backfill bool) {
	if to.Sub(from) <= least {
		return
	}
	c.mu.Lock()
	var gaps []backfillJob
	for _, m := range c.markets {
		if g, ok := tradesGap(m, from, to, least); ok {
			gaps = append(gaps, backfillJob{market: m, gap: g})
		}
	}
	c.mu.Unlock()
	for _, x := range gaps {
		c.recordTradesGap(x.market, x.gap, backfill)
	}
	c.log.WarnContext(context.Background(), "trades gap: Polymarket's trades did not reach the collector (websocket down or mute)",
		"from", from, "to", to, "markets", len(gaps), "backfill", c.backfillPlan(backfill))
}

// tradesGap is [from, to) cut to the market's window as a trades gap, and
// whether it is one: longer than least.
func tradesGap(m store.Market, from, to time.Time, least time.Duration) (store.Gap, bool) {
	g := store.Gap{From: later(from, m.StartTime), To: earlier(to, m.EndTime), Kind: store.GapTrades}
	return g, g.To.Sub(g.From) > least
}

// recordTradesGap records the market's trades gap g and, with backfill,
// hands it to the backfill.
func (c *Collector) recordTradesGap(m store.Market, g store.Gap, backfill bool) {
	c.w.addGap(m.Slug, g)
	if backfill {
		c.queueBackfill(m, g)
	}
}

// backfillPlan says what becomes of a trades gap just recorded.
func (c *Collector) backfillPlan(backfill bool) string {
	switch {
	case c.data == nil:
		return "none: no trades source (Upstreams.PolymarketData, --data-url, is empty); the gap stays"
	case c.filler == nil:
		return "none: the store cannot list trades or remove gaps; the gap stays"
	case !backfill:
		return "at the collector's next start (it is stopping); the gap stays until then"
	}
	return "from the trades source " + c.cfg.BackfillDelay.String() + " after the gap's end"
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
