package api

import (
	"strconv"
	"testing"
	"time"
)

func TestPageCache(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	c := newPageCache(100, time.Minute, func() time.Time { return clock })
	for i := 0; i < 5; i++ {
		c.put("k"+strconv.Itoa(i), make([]byte, 25))
	}
	// 5 × 25 bytes exceed 100: the least recently used (k0) went.
	if _, ok := c.get("k0"); ok {
		t.Errorf("k0 should have been evicted")
	}
	if _, ok := c.get("k1"); !ok {
		t.Errorf("k1 should be cached")
	}
	c.put("k5", make([]byte, 25)) // evicts k2, not the just-used k1
	if _, ok := c.get("k2"); ok {
		t.Errorf("k2 should have been evicted before the recently used k1")
	}
	if _, ok := c.get("k1"); !ok {
		t.Errorf("k1 was used recently and must stay")
	}
	if c.size > 100 {
		t.Errorf("size %d over the bound", c.size)
	}
	c.put("big", make([]byte, 26)) // over a quarter of the cache: not kept
	if _, ok := c.get("big"); ok {
		t.Errorf("a page over a quarter of the cache was kept")
	}
	clock = clock.Add(2 * time.Minute)
	if _, ok := c.get("k1"); ok {
		t.Errorf("expired page served")
	}
}

// TestPageCacheAdmitsOnSecondRequest: a page is kept from its second
// request on, and the keys remembered stay bounded.
func TestPageCacheAdmitsOnSecondRequest(t *testing.T) {
	t.Parallel()
	c := newPageCache(100, time.Minute, time.Now)
	if c.admit("a") {
		t.Error("a page was admitted on its first request")
	}
	if !c.admit("a") {
		t.Error("a page was not admitted on its second request")
	}
	if c.admit("a") {
		t.Error("an admitted key stayed remembered")
	}
	for i := range 3 * maxSeen {
		c.admit(strconv.Itoa(i))
	}
	if len(c.seen) > maxSeen {
		t.Errorf("%d keys remembered, bound %d", len(c.seen), maxSeen)
	}
}
