package api

import (
	"container/list"
	"sync"
	"time"
)

// pageCache keeps encoded snapshot pages of resolved markets, whose
// history no longer changes, so a popular page is served as bytes rather
// than read and encoded again. It is per process and bounded in bytes;
// its keys hold the market's record and snapshot count (pageKey), so that
// snapshots added to an old market show at once, and a TTL bounds what
// else could go stale.
type pageCache struct {
	mu       sync.Mutex
	maxBytes int
	ttl      time.Duration
	now      func() time.Time
	size     int
	order    *list.List // most recently used first
	items    map[string]*list.Element
	// seen holds keys asked once and not kept (see admit).
	seen map[string]struct{}
}

// maxSeen bounds the keys admit remembers; past it they are forgotten at
// once, as a doorkeeper's filter is reset.
const maxSeen = 16 << 10

type cachedPage struct {
	key     string
	body    []byte
	expires time.Time
}

func newPageCache(maxBytes int, ttl time.Duration, now func() time.Time) *pageCache {
	return &pageCache{maxBytes: maxBytes, ttl: ttl, now: now, order: list.New(), items: map[string]*list.Element{}, seen: map[string]struct{}{}}
}

// admit reports whether a page missing from the cache should be kept: on
// its second request, not its first. A page walked once (an export, a
// researcher's sweep) is then written from a reused buffer instead of
// a megabyte of fresh memory the cache would churn through, while a page
// asked again is kept from then on.
func (c *pageCache) admit(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[key]; ok {
		delete(c.seen, key)
		return true
	}
	if len(c.seen) >= maxSeen {
		clear(c.seen)
	}
	c.seen[key] = struct{}{}
	return false
}

func (c *pageCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	p := el.Value.(*cachedPage)
	if c.now().After(p.expires) {
		c.remove(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return p.body, true
}

func (c *pageCache) put(key string, body []byte) {
	if len(body) > c.maxBytes/4 {
		return // one page must not flush the rest
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	c.items[key] = c.order.PushFront(&cachedPage{key: key, body: body, expires: c.now().Add(c.ttl)})
	c.size += len(body)
	for c.size > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *pageCache) remove(el *list.Element) {
	p := c.order.Remove(el).(*cachedPage)
	delete(c.items, p.key)
	c.size -= len(p.body)
}
