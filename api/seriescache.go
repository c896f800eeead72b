package api

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/updown/updown/store"
)

// DefaultSeriesCacheBytes bounds the chart series an api process keeps
// (Config.SeriesCacheBytes).
const DefaultSeriesCacheBytes = 64 << 20

// seriesCache keeps the downsampled series of resolved markets, so that
// a chart of a 24hr market (288,000 snapshots read and bucketed) is read
// once, not once per request, and coalesces identical reads in flight: a
// burst of the same /series call costs one store read, whoever sends it.
//
// It is per process (each api process keeps its own), least recently used
// first out, and bounded by the bytes of the answers it holds. An entry is
// keyed by what could change a resolved market's series: its record
// (updated_at, and the winner and resolution time a correction rewrites)
// and the number of snapshots the store counts. Stores only ever add
// snapshots, so an equal count means equal snapshots, and a late
// snapshot or an import shows on the next request; the count is one
// small read, the series is not.
type seriesCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // most recently used first
	items map[string]*list.Element
	group singleflight.Group
}

type cachedSeries struct {
	key   string
	data  seriesJSON
	bytes int
}

func newSeriesCache(maxBytes int) *seriesCache {
	return &seriesCache{max: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

// seriesKey is the cache key of a market's series of points buckets given
// the store's counts of its snapshots and of those a drop of old months
// took (a drop and as many imported again leave the first as it was).
func seriesKey(m store.Market, points int, sc store.SeriesCount) string {
	winner, resolved := "", int64(0)
	if m.Winner != nil {
		winner = *m.Winner
	}
	if m.ResolvedAt != nil {
		resolved = m.ResolvedAt.UnixMicro()
	}
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%d\x00%d\x00%d", m.Slug, points, m.UpdatedAt.UnixMicro(), winner, resolved, sc.N, sc.Dropped)
}

// seriesBytes estimates what a series holds in memory.
func seriesBytes(d *seriesJSON) int {
	// time and index, then first, min and max of three values per bucket.
	return 512 + len(d.Time)*(8+8+9*8)
}

func (c *seriesCache) get(key string) (seriesJSON, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return seriesJSON{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedSeries).data, true
}

func (c *seriesCache) put(key string, d seriesJSON) {
	n := seriesBytes(&d)
	if n > c.max/4 {
		return // one series must not flush the rest
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	c.items[key] = c.order.PushFront(&cachedSeries{key: key, data: d, bytes: n})
	c.size += n
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

func (c *seriesCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cachedSeries)
	delete(c.items, e.key)
	c.size -= e.bytes
}

// load answers the series under key: from the cache, else from read,
// which runs once for all the identical calls in flight; keep says
// whether read's answer may be kept. The shared read does not end with
// the caller that started it: the others still want it.
func (c *seriesCache) load(ctx context.Context, key string, read func(context.Context) (seriesJSON, bool, error)) (seriesJSON, error) {
	if d, ok := c.get(key); ok {
		return d, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		if d, ok := c.get(key); ok { // kept while this call waited its turn
			return d, nil
		}
		d, keep, err := read(context.WithoutCancel(ctx))
		if err == nil && keep {
			c.put(key, d)
		}
		return d, err
	})
	select {
	case <-ctx.Done():
		return seriesJSON{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return seriesJSON{}, r.Err
		}
		return r.Val.(seriesJSON), nil
	}
}
