package collect

import (
	"context"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// ActivityWriter is the part of a store.MarketActivityStore the collector
// writes: Polymarket's trades and the collector's own recording gaps.
type ActivityWriter interface {
	AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error)
	RecordGaps(ctx context.Context, slug string, gaps []store.Gap) (int, error)
}

var _ ActivityWriter = store.MarketActivityStore(nil)

// marketOf returns the known market trading the token, and the outcome the
// token stands for.
func (c *Collector) marketOf(token string) (store.Market, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.markets {
		switch token {
		case m.ClobTokenUp:
			return m, store.OutcomeUp, true
		case m.ClobTokenDown:
			return m, store.OutcomeDown, true
		}
	}
	return store.Market{}, "", false
}

// traded implements wsListener: a Polymarket trade is kept for the
// market's trade history.
//
// How a trade is told from another. A last_trade_price event carries the
// token traded (asset_id), price, size, taker side, fee rate, its time in
// milliseconds and the settlement's transaction_hash, and no id of its own
// (realdata ws/: the tardis and nautilus captures, Polymarket's ts-sdk).
// It is recorded under the outcome of its asset_id, with every one of
// those fields, and the stores keep a trade once per value of all of them
// (store.CompareMarketTrades): the same event heard again (a repeat after
// a resubscription or a reconnection, or on each token's subscription) is
// one trade. Two events equal in every field, the hash included, cannot be
// told apart on the wire and are one trade too; two fills of one match
// that differ in any field (size, price, outcome) stay two. The same match
// told on the other token (the mirror: other outcome, other side, 1 − p,
// the same hash) is kept as sent, as an import of the same stream keeps
// it (DESIGN 9): the replay counts a hash once across outcomes (DESIGN 6)
// and the backfill matches by hash (backfill.go). An event without a
// timestamp is dated when it arrives, and a repeat of it could not be told
// from a new trade: no capture shows one.
func (c *Collector) traded(token string, tr wsTrade) {
	m, outcome, ok := c.marketOf(token)
	if !ok {
		return // a token we no longer follow
	}
	at := tr.Time
	if at.IsZero() {
		at = c.cfg.Now()
	}
	t := store.MarketTrade{Time: at.UTC().Truncate(time.Millisecond), Outcome: outcome, Price: tr.Price,
		Size: tr.Size, Side: tr.Side, FeeRateBps: tr.FeeRateBps, TxHash: tr.TxHash}
	if err := t.Check(); err != nil {
		// One the store refuses would take the market's whole batch of
		// trades with it at the next flush.
		c.warn.warn(context.Background(), "trade "+m.Slug, "a trade the websocket sent cannot be stored; left out", "market", m.Slug, "err", err)
		return
	}
	c.w.addTrade(m.Slug, t)
}

// tickChanged implements wsListener: the market's tick and the time it
// changed are recorded. Books keep the levels they hold, in the tick they
// came in.
func (c *Collector) tickChanged(token string, tick float64, at time.Time) {
	m, _, ok := c.marketOf(token)
	if !ok {
		return
	}
	if at.IsZero() {
		at = c.cfg.Now()
	}
	c.later(func(ctx context.Context) { c.recordTick(ctx, m.Slug, tick, at.UTC()) })
}

func (c *Collector) recordTick(ctx context.Context, slug string, tick float64, at time.Time) {
	var old *float64
	_, changed, ok := c.updateMarket(ctx, slug, "tick", "tick size change", func(m *store.Market) bool {
		// Not a change: the tick in force already (the other outcome's
		// event, or heard before), or older news than the last change
		// recorded (a REST book taken before a change the websocket told
		// of, answered after it). The changes stay in time order, the last
		// one the tick in force.
		changes, added := store.AppendTickChange(m.TickSizeChanges, m.TickSize, tick, at)
		if !added {
			return false
		}
		old = m.TickSize
		m.TickSize = &tick
		m.TickSizeChanges = changes
		return true
	})
	if !changed || !ok {
		return
	}
	c.log.InfoContext(ctx, "tick size changed", "market", slug, "from", fmtPtr(old), "to", tick, "at", at)
}

// newMarket implements wsListener: the listing of a market of one of the
// next windows we record is looked up at once, instead of at a discovery
// round.
func (c *Collector) newMarket(slug string, _ []string) {
	if slug == "" {
		return
	}
	s, start, end, ok := c.windowOf(slug)
	if !ok {
		return
	}
	c.later(func(ctx context.Context) {
		c.log.InfoContext(ctx, "new_market: a market of ours was listed; looking it up", "upstream_slug", slug)
		c.discoverWindow(ctx, s, start, end)
	})
}

// lookAhead is how many windows past the current one new_market is
// listened to for.
const lookAhead = 4

// windowOf returns the series and window, among the current and the next
// lookAhead windows of every series recorded, that upstream slug names.
func (c *Collector) windowOf(slug string) (Series, time.Time, time.Time, bool) {
	now := c.cfg.Now()
	for _, s := range c.cfg.Series {
		start, end := c.cfg.Scheme.Window(s.Coin, s.MarketType, now)
		for range lookAhead + 1 {
			for _, up := range c.cfg.Scheme.Slugs(s.Coin, s.MarketType, start) {
				if up == slug {
					return s, start, end, true
				}
			}
			start, end = c.cfg.Scheme.Window(s.Coin, s.MarketType, end)
		}
	}
	return Series{}, time.Time{}, time.Time{}, false
}

// resolved implements wsListener: Polymarket settled a market we follow,
// so its resolution runs now rather than on its schedule.
func (c *Collector) resolved(tokens []string) {
	for _, t := range tokens {
		if m, _, ok := c.marketOf(t); ok {
			c.later(func(ctx context.Context) {
				if err := c.resolveNow(ctx, m.Slug); err != nil && ctx.Err() == nil {
					c.warn.warn(ctx, "resolve-now", "market_resolved: scheduling resolution failed; its schedule stands", "market", m.Slug, "err", err)
					return
				}
				c.log.InfoContext(ctx, "market resolved upstream; resolution runs now", "market", m.Slug)
			})
			return
		}
	}
}

// subscribed implements wsListener: the tokens' REST books, which carry
// the tick their market trades in, are read once (runTickChecks), so that
// a tick change made while no connection was up is recorded, dated by the
// book that shows it. The snapshot loop reads REST books only while the
// websocket is down, and a connection back before its next poll would
// otherwise leave the change unrecorded.
func (c *Collector) subscribed(tokens []string) {
	tokens = slices.Clone(tokens)
	for {
		select {
		case c.tickChecks <- tokens:
			return
		default:
		}
		select { // a check not yet begun is replaced by this one
		case <-c.tickChecks:
		default:
		}
	}
}

// runTickChecks reads the REST books of the tokens each new connection
// serves (subscribed) and records the tick changes they show (checkTick),
// until ctx is done. A failed read is tried again with backoff until it
// succeeds or a newer connection's check replaces it.
func (c *Collector) runTickChecks(ctx context.Context) {
	for {
		var tokens []string
		select {
		case <-ctx.Done():
			return
		case tokens = <-c.tickChecks:
		}
		for attempt := 1; ; attempt++ {
			if tokens = c.openTokens(tokens); len(tokens) == 0 {
				break
			}
			asked := c.cfg.Now()
			books, err := c.clob.books(ctx, tokens)
			if err == nil {
				c.checkTicks(tokens, books, asked, c.cfg.Now())
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 1 {
				c.log.WarnContext(ctx, "reading REST books for tick changes missed while the websocket was down failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case tokens = <-c.tickChecks: // a newer connection's tokens
				attempt = 0
			case <-time.After(c.cfg.Backoff.Delay(attempt)):
			}
		}
	}
}

// openTokens is those of the tokens whose market has not ended: an ended
// market's tick no longer matters, and the CLOB no longer serves the book
// of a resolved one (404), which would fail every read of the rest.
func (c *Collector) openTokens(tokens []string) []string {
	now := c.cfg.Now()
	return slices.DeleteFunc(tokens, func(t string) bool {
		m, _, ok := c.marketOf(t)
		return !ok || !now.Before(m.EndTime)
	})
}

// checkTicks records the tick changes the books show of the markets of
// the tokens, once a market.
func (c *Collector) checkTicks(tokens []string, books map[string]clobBook, asked, got time.Time) {
	seen := make(map[string]bool)
	for _, t := range tokens {
		m, _, ok := c.marketOf(t)
		if !ok || seen[m.Slug] {
			continue
		}
		seen[m.Slug] = true
		c.checkTick(m, books, asked, got)
	}
}

// NowScheduler is a Scheduler that can also run a market's resolution at
// once, ahead of a schedule already made.
type NowScheduler interface {
	Scheduler
	ResolveNow(ctx context.Context, slug string) error
}

func (c *Collector) resolveNow(ctx context.Context, slug string) error {
	if ns, ok := c.cfg.Scheduler.(NowScheduler); ok {
		return ns.ResolveNow(ctx, slug)
	}
	return c.cfg.Scheduler.ScheduleResolution(ctx, slug, 0)
}

// later queues work off the websocket's reader.
func (c *Collector) later(fn func(context.Context)) {
	select {
	case c.work <- fn:
	default:
		c.warn.warn(context.Background(), "work-full", "collector work queue full; a tick change or resolution signal was dropped")
	}
}

// runWork does what later queued until ctx is done.
func (c *Collector) runWork(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fn := <-c.work:
			fn(ctx)
		}
	}
}

// sawSnapshot notes that the market was recorded at the instant at, and
// holds the stretch since its previous snapshot as a gap when it was
// longer than GapAfter (DESIGN 9). The first snapshot a process records
// of a market is measured from the market's last stored snapshot, else
// from the window's start.
//
// Instants are recorded by requests that run side by side, so they can
// arrive out of order: a gap is held back until no snapshot can still come
// for an instant inside it (MaxLag after its end), and a snapshot that
// does splits it, so that no recorded gap has a snapshot inside.
func (c *Collector) sawSnapshot(ctx context.Context, m store.Market, at time.Time) {
	c.gapMu.Lock()
	last, ok := c.lastSnap[m.Slug]
	c.gapMu.Unlock()
	if !ok {
		last = c.storedBefore(ctx, m, at)
	}
	c.gapMu.Lock()
	defer c.gapMu.Unlock()
	cur, seen := c.lastSnap[m.Slug]
	if seen && cur.After(last) {
		last = cur
	}
	if !ok && !seen {
		// This process's first snapshot of the market: no collector
		// recorded it since last, its trades neither.
		c.missedTrades(m, last, at)
	}
	held := splitGaps(c.heldGaps[m.Slug], at, c.cfg.GapAfter)
	if at.Sub(last) > c.cfg.GapAfter {
		held = append(held, store.Gap{From: last, To: at})
	}
	if at.After(last) {
		c.lastSnap[m.Slug] = at
	} else {
		c.lastSnap[m.Slug] = last
	}
	// Gaps that ended MaxLag before this instant can no longer be entered.
	kept := held[:0]
	for _, g := range held {
		if !g.To.Add(c.cfg.MaxLag).After(at) {
			c.w.addGap(m.Slug, g)
		} else {
			kept = append(kept, g)
		}
	}
	if len(kept) == 0 {
		delete(c.heldGaps, m.Slug)
	} else {
		c.heldGaps[m.Slug] = kept
	}
}

// splitGaps returns gaps with the one that holds the instant at strictly
// inside cut there, each part kept when longer than after.
func splitGaps(gaps []store.Gap, at time.Time, after time.Duration) []store.Gap {
	for i, g := range gaps {
		if !at.After(g.From) || !at.Before(g.To) {
			continue
		}
		out := append([]store.Gap{}, gaps[:i]...)
		if at.Sub(g.From) > after {
			out = append(out, store.Gap{From: g.From, To: at})
		}
		if g.To.Sub(at) > after {
			out = append(out, store.Gap{From: at, To: g.To})
		}
		return append(out, gaps[i+1:]...)
	}
	return gaps
}

// releaseGaps records the gaps held back for the market (all markets when
// slug is ""): its window ended, or the collector is stopping.
func (c *Collector) releaseGaps(slug string) {
	c.gapMu.Lock()
	defer c.gapMu.Unlock()
	for s, gs := range c.heldGaps {
		if slug != "" && s != slug {
			continue
		}
		for _, g := range gs {
			c.w.addGap(s, g)
		}
		delete(c.heldGaps, s)
	}
}

// storedBefore is the time of the market's latest stored snapshot before
// at, else the window's start. Snapshots stored at or after at (another
// collector's, or this one's own flushed already) do not hide those
// before it.
func (c *Collector) storedBefore(ctx context.Context, m store.Market, at time.Time) time.Time {
	snaps, _, err := c.cfg.Store.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Limit: 1, To: &at})
	if err == nil && len(snaps) > 0 && snaps[0].Time.Before(at) && !snaps[0].Time.Before(m.StartTime) {
		return snaps[0].Time
	}
	return m.StartTime
}

// closeGaps records, for a market whose window has ended, the stretch from
// its last snapshot to its end when longer than GapAfter.
func (c *Collector) closeGaps(ctx context.Context, m store.Market) {
	c.releaseGaps(m.Slug)
	c.gapMu.Lock()
	last, ok := c.lastSnap[m.Slug]
	delete(c.lastSnap, m.Slug)
	c.gapMu.Unlock()
	if !ok {
		last = c.storedBefore(ctx, m, m.EndTime)
		c.missedTrades(m, last, m.EndTime) // it ended while no collector ran
	}
	if m.EndTime.Sub(last) > c.cfg.GapAfter {
		c.w.addGap(m.Slug, store.Gap{From: last, To: m.EndTime})
	}
}

// missedTrades records [from, to) as a trades gap of the market, and
// hands it to the backfill, when no collector recorded the market then:
// this process learnt of it late (it started before a restart, or was
// found after its window opened), and the stretch since its last stored
// snapshot, or its window's start, had no collector subscribed to its
// trades. Without the websocket no trade is recorded at all, and no
// trades gap either (tradeWatch).
func (c *Collector) missedTrades(m store.Market, from, to time.Time) {
	if c.ws == nil || c.cfg.Activity == nil {
		return
	}
	if g, ok := tradesGap(m, from, to, c.cfg.GapAfter); ok {
		c.recordTradesGap(m, g, true)
	}
}
