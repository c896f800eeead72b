package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

// The auth cache (issue 14: one round trip per request).
//
// With rate limiting on, every request already makes one round trip to
// Redis, the floor for limits shared exactly by every api process. Looking
// the API key up in the store on top of it made two. So a process keeps
// what a key lookup found, for at most authCacheTTL, and a request served
// from the cache makes the Redis round trip only.
//
// Changes still hold at once, in every process: each customer has a
// generation in Redis (authGenKey) that every change touching how its
// requests are authenticated or limited bumps (the billing webhook's tier
// change, and InvalidateCustomer for the CLI's set-tier, set-limits and
// keys revoke). A cached entry remembers the generation it was read at,
// and the rate script compares it in the same atomic step in which it
// counts: on a mismatch it counts nothing and answers "stale", and the
// request looks its key up afresh. The TTL only bounds changes made behind
// the service's back (SQL by hand).
//
// Without Redis there is no limiter and no generation, and so no cache:
// every request looks its key up, as before.

// authCacheTTL bounds how long a cached key lookup is used.
const authCacheTTL = 5 * time.Second

// authCacheMax bounds the entries of a process's cache.
const authCacheMax = 10_000

// authEntry is a cached key lookup and the customer generation it is valid
// for.
type authEntry struct {
	p   principal
	gen int64
	at  time.Time
}

// authCache maps API key hashes to their principals.
type authCache struct {
	mu sync.RWMutex
	m  map[string]authEntry
	// flight joins concurrent look-ups of one key.
	flight singleflight.Group
}

func newAuthCache() *authCache { return &authCache{m: map[string]authEntry{}} }

// get returns the principal cached for the key hash, with cachedGen set,
// while it is fresh.
func (c *authCache) get(hash string, now time.Time) (principal, bool) {
	c.mu.RLock()
	e, ok := c.m[hash]
	c.mu.RUnlock()
	if !ok || now.Sub(e.at) > authCacheTTL {
		return principal{}, false
	}
	p := e.p
	p.cachedGen = e.gen
	return p, true
}

func (c *authCache) put(hash string, p principal, gen int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= authCacheMax {
		for k, e := range c.m { // drop what has expired, else anything
			if now.Sub(e.at) > authCacheTTL || len(c.m) >= authCacheMax {
				delete(c.m, k)
			}
		}
	}
	c.m[hash] = authEntry{p: p, gen: gen, at: now}
}

func (c *authCache) drop(hash string) {
	c.mu.Lock()
	delete(c.m, hash)
	c.mu.Unlock()
}

// customerGen reads the customer's generation.
func (l *rateLimiter) customerGen(ctx context.Context, customerID string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	g, err := l.rdb.Get(ctx, authGenKey(customerID)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return g, err
}
