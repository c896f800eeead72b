package collect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
)

// Collector records markets, snapshots and exchange data (see the package
// documentation). Run it once; it is not restartable.
type Collector struct {
	cfg     Config
	log     *slog.Logger
	gamma   *gamma
	clob    *clob
	ws      *wsBooks // nil: books are polled only
	data    *dataAPI // nil: trades gaps are not backfilled
	filler  GapFiller
	spot    *binance
	futures *binance
	w       *writer

	snapFeed    *feed // the snapshot requests of all markets
	marketFeeds feeds // one market's data within a snapshot answer
	exFeeds     feeds // one exchange book or trade stream

	// marketMu takes the collector's read-modify-writes of a stored
	// market (start price, price to beat, tick change) one at a time, so
	// that they do not make each other try again; store.EditMarket keeps
	// them from undoing another process's write (the resolver's).
	marketMu sync.Mutex

	mu       sync.Mutex
	markets  map[string]store.Market // known and not long ended, by slug
	upstream map[string]string       // upstream slug → slug, of markets found on Gamma
	missing  map[string]time.Time    // slug → window end, of started windows not found upstream

	missed    atomic.Int64 // started windows not found upstream
	drops     *dropCounter // grid instants lost for every live market
	tradeFeed tradeWatch   // whether Polymarket's trades reach us (tradegaps.go)
	health    *upstreamHealth
	warn      *rateLog

	backfills  chan backfillJob // trades gaps to backfill (backfill.go)
	backfilled atomic.Int64     // trades recorded from the trades source
	gapsFilled atomic.Int64     // trades gaps backfilled and removed

	work        chan func(context.Context) // off the websocket's reader
	tickChecks  chan []string              // cap 1: tokens a new connection serves (runTickChecks)
	discoverNow chan struct{}              // a new_market of a window we look for

	gapMu      sync.Mutex
	lastSnap   map[string]time.Time   // last snapshot recorded, by live market
	heldGaps   map[string][]store.Gap // gaps a late snapshot may still cut (sawSnapshot)
	gapsClosed map[string]bool        // markets whose window's end was handled

	tickMu   sync.Mutex
	tickSeen map[string]tickSeen // by slug: the tick a REST book last showed (checkTick)

	depthMu  sync.Mutex
	depthIDs map[string]depthSeen // by exchange feed: the book last recorded (newerDepth)
}

// New validates cfg and returns a collector ready to Run.
func New(cfg Config) (*Collector, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "collector")
	health := newUpstreamHealth(cfg.Now, cfg.UnhealthyAfter)
	warn := newRateLog(log, cfg.WarnEvery, nil)
	mk := func(name, base string) (*upstream, error) {
		u, err := newUpstream(name, base, cfg.HTTPClient, log, cfg.Now)
		if err == nil {
			u.health, u.warn = health, warn
			health.track(name)
		}
		return u, err
	}
	g, err := mk("gamma", cfg.Upstreams.Gamma)
	if err != nil {
		return nil, err
	}
	cl, err := mk("clob", cfg.Upstreams.CLOB)
	if err != nil {
		return nil, err
	}
	sp, err := mk("binance-spot", cfg.Upstreams.BinanceSpot)
	if err != nil {
		return nil, err
	}
	fu, err := mk("binance-futures", cfg.Upstreams.BinanceFutures)
	if err != nil {
		return nil, err
	}
	var ws *wsBooks
	if cfg.Upstreams.PolymarketWS != "" {
		if ws, err = newWSBooks(cfg.Upstreams.PolymarketWS, &cfg, log); err != nil {
			return nil, err
		}
	}
	var data *dataAPI
	if cfg.Upstreams.PolymarketData != "" {
		// Not in the health: the trades source is asked only after an
		// outage, and recording goes on without it (a failure leaves the
		// gap, and says so), so it does not make the collector unready.
		u, err := newUpstream("data-api", cfg.Upstreams.PolymarketData, cfg.HTTPClient, log, cfg.Now)
		if err != nil {
			return nil, err
		}
		u.warn = warn
		data = &dataAPI{u: u, timeout: cfg.RequestTimeout, backoff: cfg.Backoff}
	}
	filler, _ := cfg.Activity.(GapFiller)
	c := &Collector{
		ws:          ws,
		data:        data,
		filler:      filler,
		backfills:   make(chan backfillJob, maxBackfills),
		cfg:         cfg,
		log:         log,
		gamma:       &gamma{u: g, timeout: cfg.RequestTimeout, backoff: cfg.Backoff},
		clob:        &clob{u: cl, timeout: cfg.MaxLag},
		spot:        &binance{u: sp, kind: store.Spot, timeout: cfg.RequestTimeout, backoff: cfg.Backoff},
		futures:     &binance{u: fu, kind: store.Future, timeout: cfg.RequestTimeout, backoff: cfg.Backoff},
		w:           newWriter(&cfg, log, warn),
		snapFeed:    &feed{name: "snapshots", log: log, backoff: cfg.Backoff},
		marketFeeds: feeds{log: log},
		exFeeds:     feeds{log: log, backoff: cfg.Backoff},
		markets:     make(map[string]store.Market),
		upstream:    make(map[string]string),
		missing:     make(map[string]time.Time),
		work:        make(chan func(context.Context), 256),
		tickChecks:  make(chan []string, 1),
		discoverNow: make(chan struct{}, 1),
		lastSnap:    make(map[string]time.Time),
		heldGaps:    make(map[string][]store.Gap),
		gapsClosed:  make(map[string]bool),
		tickSeen:    make(map[string]tickSeen),
		health:      health,
		warn:        warn,
		drops:       newDropCounter(log),
	}
	if ws != nil {
		ws.listener = c
		health.track("clob-ws")
		ws.health = health
	}
	return c, nil
}

// Stats counts what a collector has written so far.
type Stats struct {
	Snapshots int64 // market snapshots the store accepted
	Depth     int64 // depth history snapshots the store accepted
	Trades    int64 // Polymarket trades the store accepted
	Gaps      int64 // recording gaps the store accepted
	// BackfilledTrades are the trades recorded from the trades source
	// (counted in Trades too); GapsBackfilled the trades gaps it covered,
	// and which were removed.
	BackfilledTrades int64
	GapsBackfilled   int64
}

// Stats returns what the collector has written so far.
func (c *Collector) Stats() Stats {
	return Stats{Snapshots: c.w.written.Load(), Depth: c.w.depthWritten.Load(), Trades: c.w.tradesWritten.Load(), Gaps: c.w.gapsWritten.Load(),
		BackfilledTrades: c.backfilled.Load(), GapsBackfilled: c.gapsFilled.Load()}
}

// Run records until ctx is done, then writes what it holds and returns.
// Upstream and store failures are logged and retried, never returned: a
// collector keeps going through outages and records them as gaps.
func (c *Collector) Run(ctx context.Context) error {
	if c.cfg.Activity == nil {
		c.log.WarnContext(ctx, "the store keeps no Polymarket trades or recording gaps; trades are dropped and gaps only logged")
	}
	c.log.InfoContext(ctx, "collector starting", "series", len(c.cfg.Series), "interval", c.cfg.Interval.String(),
		"gamma", c.cfg.Upstreams.Gamma, "clob", c.cfg.Upstreams.CLOB, "clob_ws", c.cfg.Upstreams.PolymarketWS, "data_api", c.cfg.Upstreams.PolymarketData,
		"binance_spot", c.cfg.Upstreams.BinanceSpot, "binance_futures", c.cfg.Upstreams.BinanceFutures)
	switch {
	case c.data == nil:
		c.log.InfoContext(ctx, "no trades source (Upstreams.PolymarketData empty): trades gaps are not backfilled")
	case c.filler == nil && c.cfg.Activity != nil:
		c.log.WarnContext(ctx, "the store cannot list trades or remove gaps (collect.GapFiller): trades gaps are not backfilled")
	}
	c.load(ctx)

	stop := make(chan struct{})
	written := make(chan struct{})
	go func() { defer close(written); c.w.run(ctx, stop) }()

	var wg sync.WaitGroup
	wg.Go(func() { c.every(ctx, c.cfg.DiscoveryInterval, c.discoverNow, c.discover) })
	wg.Go(func() { c.runWork(ctx) })
	wg.Go(func() { c.every(ctx, c.cfg.SweepInterval, nil, c.sweep) })
	wg.Go(func() { c.snapshots(ctx) })
	if c.ws != nil {
		wg.Go(func() { c.ws.run(ctx) })
		wg.Go(func() { c.runTickChecks(ctx) })
	}
	if c.data != nil && c.filler != nil {
		wg.Go(func() { c.runBackfill(ctx) })
	}
	wg.Go(func() { c.onGrid(ctx, c.cfg.DepthInterval, c.depth) })
	wg.Go(func() { c.onGrid(ctx, c.cfg.TradesInterval, c.trades) })
	wg.Wait()
	c.releaseGaps("") // nothing records a snapshot any more
	c.closeTrades(c.cfg.Now())
	close(stop)
	<-written
	st := c.Stats()
	c.log.InfoContext(ctx, "collector stopped", "snapshots", st.Snapshots, "depth", st.Depth)
	return nil
}

// every calls fn now and then every d, or sooner when kick fires, until
// ctx is done.
func (c *Collector) every(ctx context.Context, d time.Duration, kick <-chan struct{}, fn func(context.Context)) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		fn(ctx)
		t.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// onGrid calls fn at every multiple of d (by the collector's clock) until
// ctx is done. Instants that pass while fn runs are skipped: a stalled
// process loses them, it does not catch up with a burst.
func (c *Collector) onGrid(ctx context.Context, d time.Duration, fn func(ctx context.Context, at time.Time)) {
	for {
		now := c.cfg.Now()
		next := book.Next(now, d)
		if sleep(ctx, next.Sub(now)) != nil {
			return
		}
		fn(ctx, next)
	}
}

// load picks up the markets a previous run (or another collector) stored,
// so that a restarted collector records live markets at once, and those
// that ended within WatchAfterEnd, resolved or not, as a collector running
// then would still hold them: the stretch from the last snapshot of one
// that ended while no collector ran to its end is then a gap (closeEnded),
// not left unsaid.
func (c *Collector) load(ctx context.Context) {
	now := c.cfg.Now()
	ended := now.Add(-c.cfg.WatchAfterEnd)
	// A daily window lasts up to 25 hours (a change of summer time).
	after := ended.Add(-store.H24.Duration() - time.Hour)
	err := c.eachMarket(ctx, nil, &after, nil, true, func(m store.Market) {
		if m.EndTime.After(ended) {
			c.remember(m)
		}
	})
	if err != nil {
		c.log.WarnContext(ctx, "could not load known markets; discovery will find them", "err", err)
	}
}

// eachUnresolved calls fn for every unresolved market that started in
// (after, before), a page at a time; with mine, only those of the
// collector's series: collectors split by series (COLLECT_SERIES) each
// record their own markets, while any of them schedules the resolution of
// any ended market (a task per market, whoever asks), so that none is left
// unresolved when no collector records its series any more.
func (c *Collector) eachUnresolved(ctx context.Context, after, before *time.Time, mine bool, fn func(store.Market)) error {
	no := false
	return c.eachMarket(ctx, &no, after, before, mine, fn)
}

// eachMarket is eachUnresolved of the markets resolved or not as resolved
// says (nil: both).
func (c *Collector) eachMarket(ctx context.Context, resolved *bool, after, before *time.Time, mine bool, fn func(store.Market)) error {
	const page = 500
	// Offsets shift if a market resolves while we page; a market missed
	// is met on the next sweep.
	for off := 0; ; off += page {
		ms, _, err := c.cfg.Store.ListMarkets(ctx, store.MarketFilter{Resolved: resolved, StartAfter: after, StartBefore: before, Limit: page, Offset: off})
		if err != nil {
			return fmt.Errorf("list unresolved markets: %w", err)
		}
		for _, m := range ms {
			if !mine || slices.Contains(c.cfg.Series, Series{Coin: m.Coin, MarketType: m.MarketType}) {
				fn(m)
			}
		}
		if len(ms) < page {
			return nil
		}
	}
}

func (c *Collector) remember(m store.Market) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markets[m.Slug] = m
}

func (c *Collector) known(slug string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.markets[slug]
	return ok
}

// liveAt returns the known markets whose window contains at, in slug order.
func (c *Collector) liveAt(at time.Time) []store.Market {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []store.Market
	for _, m := range c.markets {
		if !at.Before(m.StartTime) && at.Before(m.EndTime) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b store.Market) int { return cmp.Compare(a.Slug, b.Slug) })
	return out
}

// discover looks up the current and next market of every series, records
// start prices of markets that have begun, and forgets ended markets.
func (c *Collector) discover(ctx context.Context) {
	now := c.cfg.Now()
	var wg sync.WaitGroup
	for _, s := range c.cfg.Series {
		wg.Go(func() {
			start, end := c.cfg.Scheme.Window(s.Coin, s.MarketType, now)
			c.discoverWindow(ctx, s, start, end)
			nextStart, nextEnd := c.cfg.Scheme.Window(s.Coin, s.MarketType, end)
			c.discoverWindow(ctx, s, nextStart, nextEnd)
		})
	}
	wg.Wait()
	c.recordStartPrices(ctx, now)
	c.refreshPriceToBeat(ctx, now)

	ended := c.forgetEnded(now)
	c.mu.Lock()
	for up, slug := range c.upstream {
		if _, ok := c.markets[slug]; !ok {
			delete(c.upstream, up)
		}
	}
	for slug, end := range c.missing {
		if end.Before(now) {
			delete(c.missing, slug)
		}
	}
	live := maps.Clone(c.markets)
	c.mu.Unlock()
	c.marketFeeds.drop(func(slug string) bool { _, ok := live[slug]; return ok })
	c.gapMu.Lock()
	for _, m := range ended {
		delete(c.gapsClosed, m.Slug)
	}
	c.gapMu.Unlock()
	c.tickMu.Lock()
	for _, m := range ended {
		delete(c.tickSeen, m.Slug)
	}
	c.tickMu.Unlock()
}

// forgetEnded forgets the markets that ended over WatchAfterEnd before
// now, and returns them. A market whose token the websocket dropped and
// subscribed again, and whose fresh book has not come, is kept until its
// stretch closes (the token leaves the subscription once the market is
// past WatchAfterEnd, or the connection ends): the stretch is a trades
// gap of the market where it lies in its window (tradesLost), which a
// market no longer known could not have.
func (c *Collector) forgetEnded(now time.Time) []store.Market {
	c.mu.Lock()
	var old []store.Market
	for _, m := range c.markets {
		if m.EndTime.Before(now.Add(-c.cfg.WatchAfterEnd)) {
			old = append(old, m)
		}
	}
	c.mu.Unlock()
	old = slices.DeleteFunc(old, func(m store.Market) bool { return c.ws.losing(m.ClobTokenUp, m.ClobTokenDown) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range old {
		delete(c.markets, m.Slug)
	}
	return old
}

// closeEnded closes the recording of the markets whose window ended by
// at, once no snapshot of theirs can come any more (an instant's answer is
// recorded up to MaxLag after it): a stretch without snapshots up to the
// end is a gap.
func (c *Collector) closeEnded(at time.Time) {
	c.mu.Lock()
	var ended []store.Market
	for _, m := range c.markets {
		if !at.Before(m.EndTime.Add(c.cfg.MaxLag)) {
			ended = append(ended, m)
		}
	}
	c.mu.Unlock()
	c.gapMu.Lock()
	var todo []store.Market
	for _, m := range ended {
		if !c.gapsClosed[m.Slug] {
			c.gapsClosed[m.Slug] = true
			todo = append(todo, m)
		}
	}
	c.gapMu.Unlock()
	for _, m := range todo {
		c.later(func(ctx context.Context) { c.closeGaps(ctx, m) })
	}
}

// discoverWindow makes sure the market of the window is stored and
// scheduled for resolution. The store is asked before Gamma, and a market
// stored already is never written again here: discovery must not undo
// what recording the start price or resolution wrote.
func (c *Collector) discoverWindow(ctx context.Context, s Series, start, end time.Time) {
	slug := Slug(s.Coin, s.MarketType, start)
	ups := c.cfg.Scheme.Slugs(s.Coin, s.MarketType, start)
	if c.known(slug) || c.foundUpstream(ups, start) {
		return
	}
	if ok := c.fromStore(ctx, slug); ok {
		return
	}
	for _, up := range ups {
		f, found, err := c.gamma.bySlug(ctx, up)
		if err != nil {
			if ctx.Err() == nil {
				c.warn.warn(ctx, "discovery", "discovery: Gamma lookup failed; retrying next round", "market", slug, "upstream_slug", up, "err", err)
			}
			return
		}
		if !found {
			continue
		}
		m, note, err := toMarket(f, s.Coin, s.MarketType, start, end)
		if err != nil {
			c.warn.warn(ctx, "unusable", "discovery: upstream market unusable", "market", slug, "upstream_slug", up, "err", err)
			return
		}
		if !m.EndTime.After(start) {
			// The market of an earlier window named as this one: the hour
			// US Eastern repeats when summer time ends has the first one's
			// hourly slug. This window has no market under it.
			c.log.DebugContext(ctx, "discovery: the slug names an earlier window's market", "market", slug, "upstream_slug", up, "found", m.Slug)
			continue
		}
		if note != "" {
			c.log.WarnContext(ctx, "discovery: Gamma's eventStartTime/endDate differ from the series' window; keeping Gamma's",
				"market", m.Slug, "upstream_slug", up, "detail", note)
		}
		if m.Slug != slug && c.fromStore(ctx, m.Slug) {
			c.noteUpstream(up, m.Slug)
			return
		}
		if now := c.cfg.Now(); m.TickSize != nil && *m.TickSize != store.OpeningTickSize && now.Before(m.EndTime) {
			// Found at another tick than markets open at (a collector that
			// started late in the market): the tick changed before now, when
			// no collector heard it, and is in force from now at least. A
			// replay takes the tick before the first change as the opening
			// one.
			m.TickSizeChanges = []store.TickSizeChange{{Time: now.UTC(), TickSize: *m.TickSize}}
		}
		if err := c.cfg.Store.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			c.warn.warn(ctx, "store", "discovery: storing market failed", "market", m.Slug, "err", err)
			return
		}
		c.remember(m)
		c.noteUpstream(up, m.Slug)
		c.schedule(ctx, m)
		c.log.InfoContext(ctx, "market discovered", "market", m.Slug, "upstream_slug", up, "market_id", m.MarketID,
			"start", m.StartTime, "end", m.EndTime, "tick_size", fmtPtr(m.TickSize), "taker_fee_rate", fmtPtr(m.TakerFeeRate))
		return
	}
	if now := c.cfg.Now(); !now.Before(start) {
		c.notFound(ctx, slug, ups, end)
		return
	}
	c.log.DebugContext(ctx, "discovery: not listed upstream yet", "market", slug)
}

// notFound notes a window that has started without its market being found
// upstream: a warning once per window, naming the slugs tried, and a count
// for /metrics. A series Polymarket renamed shows here, not in silence.
func (c *Collector) notFound(ctx context.Context, slug string, tried []string, end time.Time) {
	c.mu.Lock()
	_, warned := c.missing[slug]
	if !warned {
		c.missing[slug] = end
	}
	c.mu.Unlock()
	if warned {
		return
	}
	c.missed.Add(1)
	c.log.WarnContext(ctx, "discovery: a window has started and its market is not found upstream", "market", slug,
		"slugs_tried", tried, "window_end", end)
}

// fromStore remembers the market with the slug if the store has it.
func (c *Collector) fromStore(ctx context.Context, slug string) bool {
	m, err := c.cfg.Store.GetMarket(ctx, slug)
	switch {
	case err == nil:
		c.remember(m)
		c.schedule(ctx, m)
		return true
	case !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil:
		c.warn.warn(ctx, "store", "discovery: store lookup failed", "market", slug, "err", err)
	}
	return false
}

// noteUpstream records that the upstream slug is the known market slug,
// so that its window is not looked up again.
func (c *Collector) noteUpstream(up, slug string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upstream[up] = slug
}

// foundUpstream reports whether one of the upstream slugs is a market
// known and not yet forgotten, of the window starting at start (not of an
// earlier one named the same: see discoverWindow).
func (c *Collector) foundUpstream(ups []string, start time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, up := range ups {
		if slug, ok := c.upstream[up]; ok {
			if m, ok := c.markets[slug]; ok && m.EndTime.After(start) {
				return true
			}
		}
	}
	return false
}

// schedule queues the market's resolution for ResolveDelay after its end.
func (c *Collector) schedule(ctx context.Context, m store.Market) {
	if m.Resolved() {
		return
	}
	delay := m.EndTime.Add(c.cfg.ResolveDelay).Sub(c.cfg.Now())
	if err := c.cfg.Scheduler.ScheduleResolution(ctx, m.Slug, delay); err != nil && ctx.Err() == nil {
		c.warn.warn(ctx, "schedule", "scheduling resolution failed; the sweep will retry", "market", m.Slug, "err", err)
	}
}

// sweep schedules the resolution of every ended market still unresolved:
// markets whose task was lost, or that another collector discovered.
func (c *Collector) sweep(ctx context.Context) {
	now := c.cfg.Now()
	after := now.Add(-c.cfg.SweepHorizon)
	err := c.eachUnresolved(ctx, &after, &now, false, func(m store.Market) {
		if !m.EndTime.After(now) {
			c.schedule(ctx, m)
		}
	})
	if err != nil && ctx.Err() == nil {
		c.log.WarnContext(ctx, "resolution sweep failed", "err", err)
	}
}

// startPriceDelay is how long after a market's start its start price is
// looked up: the 1-second candle that opens at the start must exist.
const startPriceDelay = 2 * time.Second

// recordStartPrices sets coin_price_start of live markets that lack it,
// from the same source resolution uses (see binance.priceAt).
func (c *Collector) recordStartPrices(ctx context.Context, now time.Time) {
	c.mu.Lock()
	var todo []store.Market
	for _, m := range c.markets {
		if m.CoinPriceStart == nil && !now.Before(m.StartTime.Add(startPriceDelay)) && now.Before(m.EndTime) {
			todo = append(todo, m)
		}
	}
	c.mu.Unlock()
	for _, m := range todo {
		price, ok, err := c.spot.priceAt(ctx, m.Coin, m.StartTime)
		if err != nil || !ok {
			if err != nil && ctx.Err() == nil {
				c.warn.warn(ctx, "start price", "start price lookup failed; retrying next round", "market", m.Slug, "err", err)
			}
			continue
		}
		c.setStartPrice(ctx, m.Slug, price)
	}
}

// setStartPrice stores the market's coin_price_start unless it has one.
func (c *Collector) setStartPrice(ctx context.Context, slug string, price float64) {
	c.updateMarket(ctx, slug, "store", "start price", func(m *store.Market) bool {
		if m.CoinPriceStart != nil || m.Resolved() {
			return false
		}
		m.CoinPriceStart = &price
		return true
	})
}

// updateMarket reads the stored market and, when edit changes it (answers
// true), writes it back, under marketMu (see Collector.marketMu), and
// remembers the market as stored. It returns the market as stored, whether
// edit changed it, and false when it could not be read or written (warned
// under key, the update named what). The market is remembered under
// marketMu too: remembered after it, an update's older copy could replace
// a later update's (a start price's write undoing, in memory, a tick
// change written after it).
func (c *Collector) updateMarket(ctx context.Context, slug, key, what string, edit func(*store.Market) bool) (m store.Market, changed, ok bool) {
	c.marketMu.Lock()
	defer c.marketMu.Unlock()
	m, changed, err := store.EditMarket(ctx, c.cfg.Store, slug, edit)
	if err != nil {
		c.warn.warn(ctx, key, what+": updating market failed", "market", slug, "err", err)
		return m, changed, false
	}
	c.remember(m)
	return m, changed, true
}

// snapshots takes a snapshot of every live market at every Interval.
func (c *Collector) snapshots(ctx context.Context) {
	sem := make(chan struct{}, c.cfg.MaxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	var last time.Time // the previous instant of the grid handled
	c.onGrid(ctx, c.cfg.Interval, func(ctx context.Context, at time.Time) {
		c.closeEnded(at)
		if c.ws != nil {
			c.ws.watch(c.tokensFrom(at))
		}
		c.watchTrades(at)
		markets := c.liveAt(at)
		if len(markets) == 0 {
			last = time.Time{}
			return
		}
		c.drops.skipped(ctx, last, at, c.cfg.Interval)
		last = at
		if !c.snapFeed.ready(at) {
			c.drops.add(DropBackoff, 1)
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			c.drops.add(DropBusy, 1)
			c.snapFeed.fail(ctx, at, c.cfg.Now(), fmt.Errorf("%d snapshot requests still under way", c.cfg.MaxInFlight))
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			c.snapshot(ctx, at, markets)
		})
	})
}

// errLate is data that arrived too long after the instant it was asked for
// to be recorded as that instant.
var errLate = errors.New("answer arrived too late to be recorded at its instant")

// snapshot records the markets at the instant at: one book request for all
// their tokens and one price request for their coins, made together.
//
// When the websocket holds the books of some markets, those are recorded
// as soon as the prices come, without waiting for the REST poll of the
// others' books: a poll that fails, or answers too late, costs only the
// markets it was for, however long it took.
func (c *Collector) snapshot(ctx context.Context, at time.Time, markets []store.Market) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.MaxLag)
	coins := coinsOf(markets)
	books, missing := c.heldBooks(tokensOf(markets))
	held := len(books) > 0
	var polled map[string]clobBook
	var pollErr error
	done := make(chan struct{})
	defer func() {
		cancel()
		<-done // the poll ends with the instant, within its request slot
	}()
	go func() {
		defer close(done)
		if len(missing) > 0 {
			polled, pollErr = c.clob.books(rctx, missing)
		}
	}()
	prices, priceErr := c.spot.prices(rctx, coins)
	if !held || priceErr != nil {
		<-done // the instant stands or falls with the poll
	}
	now := c.cfg.Now()
	if ctx.Err() != nil {
		return // shutting down: not a gap worth a log line
	}
	// With books from the websocket, a failed poll costs only the markets
	// it was for (below).
	var bookErr error
	if !held {
		bookErr = pollErr
	}
	if err := errors.Join(bookErr, priceErr); err != nil {
		c.drops.add(dropReason(rctx, bookErr, priceErr), 1)
		c.snapFeed.fail(ctx, at, now, err)
		return
	}
	if lag := now.Sub(at); lag > c.cfg.MaxLag {
		c.drops.add(DropLate, 1)
		c.snapFeed.fail(ctx, at, now, fmt.Errorf("%w (%v)", errLate, lag.Round(time.Millisecond)))
		return
	}
	c.snapFeed.ok(ctx, at)
	var out instantOutcome
	rest := markets
	if held && len(missing) > 0 {
		// The markets the websocket holds both books of, now.
		rest = nil
		for _, m := range markets {
			if slices.Contains(missing, m.ClobTokenUp) || slices.Contains(missing, m.ClobTokenDown) {
				rest = append(rest, m)
				continue
			}
			c.recordMarket(ctx, m, at, now, books, prices, nil, &out)
		}
		<-done
		now = c.cfg.Now()
		if ctx.Err() != nil {
			return // shutting down: the poll's markets are no gap either
		}
	}
	// The markets of the REST poll: every market when the websocket held
	// no book (the poll was checked above), else those it lacked.
	var partial *restFailure
	switch {
	case len(missing) == 0:
	case held && pollErr != nil:
		partial = &restFailure{tokens: missing, err: pollErr}
	case held && now.Sub(at) > c.cfg.MaxLag:
		partial = &restFailure{tokens: missing, err: fmt.Errorf("%w (%v)", errLate, now.Sub(at).Round(time.Millisecond))}
	default:
		if c.ws != nil {
			c.ws.lastTrades(polled)
		}
		if books == nil {
			books = polled
		} else {
			maps.Copy(books, polled)
		}
	}
	for _, m := range rest {
		c.recordMarket(ctx, m, at, now, books, prices, partial, &out)
	}
	switch {
	case out.lost && out.recorded:
		c.drops.add(DropPartial, 1)
	case out.lost && errors.Is(partial, errLate):
		// No market was recorded: the poll lost the whole instant, as when
		// the websocket holds no book at all, by answering past MaxLag
		// (before its own deadline, which began after the instant).
		c.drops.add(DropLate, 1)
	case out.lost:
		// As above, by failing.
		c.drops.add(dropReason(rctx, partial), 1)
	}
}

// instantOutcome is what became of an instant's markets: whether one was
// recorded, and whether one was lost for want of its REST books.
type instantOutcome struct{ recorded, lost bool }

// recordMarket builds m's snapshot at the instant at from the books and
// prices got by got and hands it to the writer; partial, when set, is the
// failed REST poll of the books the websocket lacked.
func (c *Collector) recordMarket(ctx context.Context, m store.Market, at, got time.Time, books map[string]clobBook, prices map[store.Coin]float64, partial *restFailure, out *instantOutcome) {
	c.checkTick(m, books, at, got)
	f := c.marketFeeds.get(m.Slug)
	s, err := c.buildSnapshot(m, at, books, prices)
	if err != nil {
		if partial != nil && partial.lacks(m) {
			err, out.lost = partial, true
		}
		f.fail(ctx, at, got, err)
		return
	}
	if c.w.addSnapshot(m.Slug, s) {
		out.recorded = true
		f.ok(ctx, at)
		c.sawSnapshot(ctx, m, at)
	}
}

// coinsOf lists the coins of the markets, each once.
func coinsOf(markets []store.Market) []store.Coin {
	var coins []store.Coin
	for _, m := range markets {
		if !slices.Contains(coins, m.Coin) {
			coins = append(coins, m.Coin)
		}
	}
	return coins
}

// tokensOf lists the outcome tokens of the markets.
func tokensOf(markets []store.Market) []string {
	tokens := make([]string, 0, 2*len(markets))
	for _, m := range markets {
		tokens = append(tokens, m.ClobTokenUp, m.ClobTokenDown)
	}
	return tokens
}

// tokensFrom lists the outcome tokens of the known markets: the live
// ones, the next, so that the socket holds a market's books when its
// window opens, and those ended within WatchAfterEnd, so that it hears
// their market_resolved.
func (c *Collector) tokensFrom(at time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tokens := make([]string, 0, 2*len(c.markets))
	for _, m := range c.markets {
		if at.Before(m.EndTime.Add(c.cfg.WatchAfterEnd)) {
			tokens = append(tokens, m.ClobTokenUp, m.ClobTokenDown)
		}
	}
	return tokens
}

// heldBooks returns the books of the tokens the websocket holds and the
// tokens it cannot vouch for (all of them while it is down or stale, or
// not used), which are polled from REST. A token neither source has is
// absent, and its market's instant a gap.
func (c *Collector) heldBooks(tokens []string) (map[string]clobBook, []string) {
	if c.ws == nil {
		return nil, tokens
	}
	return c.ws.get(tokens)
}

// restFailure is a REST poll of the books that failed, for the tokens
// the websocket could not vouch for.
type restFailure struct {
	tokens []string
	err    error
}

func (e *restFailure) Error() string {
	return fmt.Sprintf("the REST books of %d tokens the websocket could not vouch for: %v", len(e.tokens), e.err)
}

func (e *restFailure) Unwrap() error { return e.err }

// lacks reports whether the failed poll was for a book of m.
func (e *restFailure) lacks(m store.Market) bool {
	return slices.Contains(e.tokens, m.ClobTokenUp) || slices.Contains(e.tokens, m.ClobTokenDown)
}

// checkTick records a tick change that m's REST books show: a book quoted
// in another tick than the one m is known by means the tick changed while
// the websocket, which tells of changes, was down or not used (its books
// carry no tick). The books were asked for at asked and answered by got.
//
// The change is dated by the book, within what is known: the CLOB's
// timestamp of a book moves only when the book changes (realdata
// clob/book_errors_2026-08-10.json), so a quiet book's lies before a
// change it shows, even before answers that still showed the old tick.
// The date is raised to the last instant the old tick was known in force
// (tickFloor, and just after its change recorded last, when the books
// were asked for after it) and kept at most got, when the change was seen; a book
// without a timestamp dates it got. A book asked for before a change the
// websocket told of still dates before it, and is older news (recordTick).
func (c *Collector) checkTick(m store.Market, books map[string]clobBook, asked, got time.Time) {
	if m.TickSize == nil {
		return // no tick to change from: not a change
	}
	for _, token := range []string{m.ClobTokenUp, m.ClobTokenDown} {
		b, ok := books[token]
		if tick := b.TickSize; !ok || !tick.Set || !(tick.V > 0 && tick.V < 1) {
			continue
		}
		if b.TickSize.V == *m.TickSize {
			c.sawTick(m.Slug, b.TickSize.V, asked)
			continue
		}
		at := got
		if ms, err := strconv.ParseInt(string(b.Timestamp), 10, 64); err == nil && ms > 0 {
			floor := c.tickFloor(m.Slug, *m.TickSize)
			if n := len(m.TickSizeChanges); n > 0 {
				// The last change recorded put the old tick in force: a
				// book asked for after it shows a change after it (one
				// asked for before it is older news). A change the
				// websocket told is dated by Polymarket's clock: only a
				// book asked for clearly after it, by ours, counts.
				if last := m.TickSizeChanges[n-1]; last.TickSize == *m.TickSize && last.Time.Add(clockSkew).Before(asked) {
					floor = later(floor, last.Time.Add(time.Millisecond))
				}
			}
			at = earlier(later(time.UnixMilli(ms), floor), got)
		}
		at = at.UTC()
		c.later(func(ctx context.Context) { c.recordTick(ctx, m.Slug, b.TickSize.V, at) })
		return // both outcomes' books tell the same change
	}
}

// clockSkew is how far Polymarket's clock, which dates the tick changes
// the websocket tells, may be from the collector's.
const clockSkew = time.Second

// tickSeen is the last instant a market's tick was seen in force.
type tickSeen struct {
	tick float64
	at   time.Time
}

// sawTick notes that the market traded in tick at the instant at (a REST
// book asked for then showed it).
func (c *Collector) sawTick(slug string, tick float64, at time.Time) {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if s, ok := c.tickSeen[slug]; !ok || s.tick != tick || at.After(s.at) {
		c.tickSeen[slug] = tickSeen{tick: tick, at: at}
	}
}

// tickFloor is the last instant the market is known to have traded in
// tick: the last REST book that showed it, and the last market data of a
// websocket connection that ended (it would have told a change before
// then). Zero when nothing is known.
func (c *Collector) tickFloor(slug string, tick float64) time.Time {
	var floor time.Time
	if c.ws != nil {
		floor = c.ws.endedData()
	}
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if s, ok := c.tickSeen[slug]; ok && s.tick == tick {
		floor = later(floor, s.at)
	}
	return floor
}

// buildSnapshot assembles one market's snapshot from a tick's answers.
func (c *Collector) buildSnapshot(m store.Market, at time.Time, books map[string]clobBook, prices map[store.Coin]float64) (store.Snapshot, error) {
	price, ok := prices[m.Coin]
	if !ok {
		return store.Snapshot{}, fmt.Errorf("binance sent no price for %s", Symbol(m.Coin))
	}
	up, err := c.outcomeBook(books, m.ClobTokenUp, "Up")
	if err != nil {
		return store.Snapshot{}, err
	}
	down, err := c.outcomeBook(books, m.ClobTokenDown, "Down")
	if err != nil {
		return store.Snapshot{}, err
	}
	s := store.Snapshot{
		Time:      at,
		CoinPrice: price,
		PriceUp:   up.price,
		PriceDown: down.price,
		BookUp:    &up.book,
		BookDown:  &down.book,
	}
	// One the store refuses (a number not finite) would take the market's
	// whole batch with it at the next flush: it is not recorded, alone.
	if err := s.Check(); err != nil {
		return store.Snapshot{}, err
	}
	return s, nil
}

type outcomeBook struct {
	book  store.Book
	price float64
}

// outcomeBook converts the book of one outcome token and prices the
// outcome: its best ask (what buying costs now), else the last trade price
// the CLOB reports with the book. A book with neither is not recorded.
func (c *Collector) outcomeBook(books map[string]clobBook, token, outcome string) (outcomeBook, error) {
	raw, ok := books[token]
	if !ok {
		return outcomeBook{}, fmt.Errorf("clob sent no book for the %s token", outcome)
	}
	b, err := raw.book(c.cfg.BookLevels)
	if err != nil {
		return outcomeBook{}, fmt.Errorf("%s book: %w", outcome, err)
	}
	price, err := book.Price(b, raw.LastTradePrice)
	if err != nil {
		return outcomeBook{}, fmt.Errorf("the %s book has no asks and no last trade price", outcome)
	}
	return outcomeBook{book: b, price: price}, nil
}

// exchangeKinds are the Binance markets kept live.
var exchangeKinds = [...]store.ExchangeKind{store.Spot, store.Future}

func (c *Collector) market(k store.ExchangeKind) *binance {
	if k == store.Future {
		return c.futures
	}
	return c.spot
}

// depth records the book of every exchange coin on spot and futures at the
// instant at: as the latest depth, and for BTCUSDT in the history.
func (c *Collector) depth(ctx context.Context, at time.Time) {
	c.eachExchange(ctx, at, "depth", c.cfg.MaxLag, func(ctx context.Context, coin store.Coin, k store.ExchangeKind) error {
		raw, err := c.market(k).depth(ctx, coin, c.cfg.DepthLevels)
		if err != nil {
			return err
		}
		if lag := c.cfg.Now().Sub(at); lag > c.cfg.MaxLag {
			return fmt.Errorf("%w (%v)", errLate, lag.Round(time.Millisecond))
		}
		d, err := raw.snapshot(coin, k, at, c.cfg.DepthLevels)
		if err != nil {
			return fmt.Errorf("binance %s depth of %s: %w", k, coin, err)
		}
		if err := c.newerDepth(coin, k, d.LastUpdateID, at); err != nil {
			return err
		}
		if coin == store.BTC {
			c.w.addDepth(d)
		}
		// Binance answered: a Redis that cannot keep the latest depth is
		// logged, and neither loses the history nor backs off Binance.
		if err := c.cfg.Live.SetLatestDepth(ctx, coin, k, d); err != nil && ctx.Err() == nil {
			c.warn.warn(ctx, "latest depth", "keep latest depth failed; the depth history is still recorded",
				"symbol", Symbol(coin), "kind", k, "err", err)
		}
		return nil
	})
}

// errOlderDepth is a depth answer older than the book already recorded.
var errOlderDepth = errors.New("depth answer is older than the book already recorded")

// depthRewind is how long a recorded depth's lastUpdateId bars older
// answers: ids that stay below it longer are a sequence Binance began
// again, not a server behind, and are recorded from then on.
const depthRewind = time.Minute

// depthSeen is the lastUpdateId of a feed's book last recorded, and the
// instant it was recorded at.
type depthSeen struct {
	id int64
	at time.Time
}

// newerDepth notes id as the update of coin's book on market k that is
// being recorded at the instant at, unless it is below one recorded less
// than depthRewind before: Binance numbers every change of a book, and its
// REST depth comes from whichever server answers, which may be behind the
// one asked a moment earlier. Such a book is not the book at the later
// instant, and is not recorded (history nor latest). A missing id (0)
// cannot be compared and passes. The depth instants of one feed run one
// after another (onGrid), so the last id recorded is the previous
// instant's.
func (c *Collector) newerDepth(coin store.Coin, k store.ExchangeKind, id int64, at time.Time) error {
	if id <= 0 {
		return nil
	}
	key := Symbol(coin) + " " + string(k)
	c.depthMu.Lock()
	defer c.depthMu.Unlock()
	if last, ok := c.depthIDs[key]; ok && id < last.id && at.Sub(last.at) < depthRewind {
		return fmt.Errorf("binance %s depth of %s: %w (lastUpdateId %d after %d)", k, coin, errOlderDepth, id, last.id)
	}
	if c.depthIDs == nil {
		c.depthIDs = make(map[string]depthSeen)
	}
	c.depthIDs[key] = depthSeen{id: id, at: at}
	return nil
}

// trades records the recent trades of every exchange coin on spot and
// futures.
func (c *Collector) trades(ctx context.Context, at time.Time) {
	c.eachExchange(ctx, at, "trades", c.cfg.RequestTimeout, func(ctx context.Context, coin store.Coin, k store.ExchangeKind) error {
		ts, err := c.market(k).trades(ctx, coin, c.cfg.TradesLimit)
		if err != nil {
			return err
		}
		if err := c.cfg.Live.AddTrades(ctx, coin, k, ts); err != nil {
			return fmt.Errorf("keep recent trades: %w", err)
		}
		return nil
	})
}

// eachExchange runs fn for every exchange coin and kind at once, each
// through its own feed, all of them bounded by timeout.
func (c *Collector) eachExchange(ctx context.Context, at time.Time, what string, timeout time.Duration, fn func(ctx context.Context, coin store.Coin, k store.ExchangeKind) error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, coin := range c.cfg.ExchangeCoins {
		for _, k := range exchangeKinds {
			f := c.exFeeds.get(what + " " + Symbol(coin) + " " + string(k))
			if !f.ready(at) {
				continue
			}
			wg.Go(func() {
				err := fn(rctx, coin, k)
				switch {
				case ctx.Err() != nil:
				case err != nil:
					f.fail(ctx, at, c.cfg.Now(), err)
				default:
					f.ok(ctx, at)
				}
			})
		}
	}
	wg.Wait()
}
