package worker

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// DefaultCacheBytes bounds the market tapes a worker keeps (Config.CacheBytes).
const DefaultCacheBytes = 512 << 20

// Cache keeps the tapes of resolved markets, whose history no longer
// changes, so that a second replay of a market (another strategy, a sweep,
// the agent's next /run on the same markets) skips the store and the
// decode: the engine then runs on a tape already in memory. It is per
// process, least recently used first out, and bounded in bytes. A tape
// holds no pointers, so a full cache costs the garbage collector nothing
// to mark, and slows no decode beside it.
//
// An entry is used only while the market's record is unchanged and the
// store still counts the same snapshots and the same snapshots dropped
// (store.SeriesCount): stores only add snapshots (a write at a time
// already stored keeps the stored one) except for a drop of old months,
// which raises the count of those dropped by as many as it takes, so equal
// counts mean equal snapshots: a late write, an import, or a drop followed
// by as many snapshots imported again is seen on the next replay. That
// check costs one small read instead of the whole market (none when the
// counts came with the task).
type Cache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // most recently used first
	items map[string]*list.Element

	hits, misses prometheus.Counter
	bytes        prometheus.Gauge
}

// cachedMarket is one entry: a tape, or a market's trades packed for
// replays (key: the slug and "\x00trades"), with the version of the
// market's record and the counts it was read at (for trades, which no
// drop takes, Dropped is 0).
type cachedMarket struct {
	key     string
	updated time.Time
	total   store.SeriesCount
	tape    *store.Tape
	trades  *replay.Trades
	bytes   int64
}

// NewCache returns a cache of at most maxBytes (off when maxBytes ≤ 0),
// its metrics registered on reg when reg is not nil.
func NewCache(maxBytes int64, reg prometheus.Registerer) (*Cache, error) {
	c := &Cache{
		max:   maxBytes,
		order: list.New(),
		items: map[string]*list.Element{},
		hits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "updown", Name: "replay_cache_hits_total",
			Help: "Replays and backtest shards that found their market's snapshots decoded in the worker's cache."}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "updown", Name: "replay_cache_misses_total",
			Help: "Replays and backtest shards that read their market's snapshots from the store."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "updown", Name: "replay_cache_bytes",
			Help: "Bytes of market tapes the worker's replay cache holds."}),
	}
	if reg != nil {
		for _, m := range []prometheus.Collector{c.hits, c.misses, c.bytes} {
			if err := reg.Register(m); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// get returns a market's entry (key: its slug and the outcome whose books
// its tape carries, or "\x00trades") if it is cached for this version of
// its record and counts.
func (c *Cache) get(key string, updated time.Time, total store.SeriesCount) (*cachedMarket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cachedMarket)
	if !e.updated.Equal(updated) || e.total != total {
		c.remove(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e, true
}

// put keeps a market's entry, unless it alone would take more than half
// the cache.
func (c *Cache) put(e *cachedMarket) {
	switch {
	case e.tape != nil:
		e.bytes = e.tape.Bytes()
	case e.trades != nil:
		e.bytes = e.trades.Bytes()
	}
	if e.bytes > c.max/2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.key]; ok {
		c.remove(el)
	}
	c.items[e.key] = c.order.PushFront(e)
	c.size += e.bytes
	for c.size > c.max {
		c.remove(c.order.Back())
	}
	c.bytes.Set(float64(c.size))
}

func (c *Cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cachedMarket)
	delete(c.items, e.key)
	c.size -= e.bytes
	c.bytes.Set(float64(c.size))
}

// cachedStore is the store as one replay task sees it: a resolved market's
// full history comes from the cache when it is there, and goes into it
// when it is not. It remembers the market the task looked up, so it is
// made afresh for every task (view, viewOf).
type cachedStore struct {
	store.Store
	c      *Cache
	market *store.Market
	// counted is the last market counted whole, and its counts: the
	// memory budget counts a replay's market before the cache checks it.
	counted      string
	countedTotal store.SeriesCount
}

// view returns st as a task sees it: through the cache, or st itself when
// there is no cache.
func (c *Cache) view(st store.Store) store.Store {
	if c == nil || c.max <= 0 {
		return st
	}
	return &cachedStore{Store: st, c: c}
}

// viewOf is view for a task that has read its market m with its snapshot
// counts sc (jobs.MarketSeries): the cache asks the store neither again.
func (c *Cache) viewOf(st store.Store, m store.Market, sc store.SeriesCount) store.Store {
	if c == nil || c.max <= 0 {
		return st
	}
	return &cachedStore{Store: st, c: c, market: &m, counted: m.Slug, countedTotal: sc}
}

func (s *cachedStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	m, err := s.Store.GetMarket(ctx, slug)
	if err == nil {
		s.market = &m
	}
	return m, err
}

// CountSnapshots asks the store, but a market counted whole a moment ago
// by this task is not counted again.
func (s *cachedStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	if q.From == nil && q.To == nil {
		sc, err := s.countSeries(ctx, slug)
		return sc.N, err
	}
	return s.Store.CountSnapshots(ctx, slug, q)
}

// countSeries is the market's snapshot counts (store.CountSeries: in the
// same one read as a count of the whole market), remembered for the task.
func (s *cachedStore) countSeries(ctx context.Context, slug string) (store.SeriesCount, error) {
	if slug == s.counted {
		return s.countedTotal, nil
	}
	sc, err := store.CountSeries(ctx, s.Store, slug)
	if err == nil {
		s.counted, s.countedTotal = slug, sc
	}
	return sc, err
}

// ReadTape answers from the cache for the resolved market the task looked
// up, and keeps what the store answers.
func (s *cachedStore) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	m := s.market
	if m == nil || m.Slug != slug || !m.Resolved() {
		return s.Store.ReadTape(ctx, slug, outcome)
	}
	// A market is kept once per outcome whose books were read.
	key := slug + "\x00" + outcome
	// The counts alone: the store keeps them, nothing is decoded.
	total, err := s.countSeries(ctx, slug)
	if err != nil {
		return nil, err
	}
	if e, ok := s.c.get(key, m.UpdatedAt, total); ok {
		s.c.hits.Inc()
		return e.tape, nil
	}
	s.c.misses.Inc()
	tape, err := s.Store.ReadTape(ctx, slug, outcome)
	if err != nil {
		return nil, err
	}
	if tape.Len() == total.N { // else written to meanwhile: use, but do not keep
		s.c.put(&cachedMarket{key: key, updated: m.UpdatedAt, total: total, tape: tape})
	}
	return tape, nil
}

// PackedTrades returns the market's recorded trades packed for replays
// (jobs.TradePacker): from the cache for the resolved market the task
// looked up, packed once and kept when they are not there. Like a tape, an
// entry is used only while the market's record and its count of trades
// are unchanged: a late trade or an import is seen on the next replay.
func (s *cachedStore) PackedTrades(ctx context.Context, slug string) (*replay.Trades, error) {
	m := s.market
	if m == nil || m.Slug != slug || !m.Resolved() {
		trades, _, err := s.Store.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			return nil, err
		}
		return replay.PackTrades(trades), nil
	}
	key := slug + "\x00trades"
	n, err := s.Store.CountMarketTrades(ctx, slug, store.MarketTradeQuery{})
	if err != nil {
		return nil, err
	}
	total := store.SeriesCount{N: n} // no drop takes trades: the count alone versions them
	if e, ok := s.c.get(key, m.UpdatedAt, total); ok {
		s.c.hits.Inc()
		return e.trades, nil
	}
	s.c.misses.Inc()
	trades, n, err := s.Store.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true})
	if err != nil {
		return nil, err
	}
	packed := replay.PackTrades(trades)
	if len(trades) == total.N && n == total.N { // else written to meanwhile: use, but do not keep
		s.c.put(&cachedMarket{key: key, updated: m.UpdatedAt, total: total, trades: packed})
	}
	return packed, nil
}
