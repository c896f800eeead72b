package api

import (
	"context"
	"errors"
	"testing"
)

// TestSeriesCacheBounded: the cache holds at most its bytes, least
// recently used out first, keeps no series larger than a quarter of it,
// and does not keep what read says not to (or a failed read).
func TestSeriesCacheBounded(t *testing.T) {
	series := func(buckets int) seriesJSON { return seriesJSON{Time: make([]int64, buckets)} }
	one := seriesBytes(&seriesJSON{Time: make([]int64, 100)})
	c := newSeriesCache(4 * one)
	for _, k := range []string{"a", "b", "c", "d"} {
		c.put(k, series(100))
	}
	c.get("a") // a is now the most recently used: b goes first
	c.put("e", series(100))
	if _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, is still kept")
	}
	for _, k := range []string{"a", "c", "d", "e"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s was dropped", k)
		}
	}
	if c.size > c.max {
		t.Errorf("%d bytes kept, bound %d", c.size, c.max)
	}
	c.put("big", series(1_000))
	if _, ok := c.get("big"); ok {
		t.Error("a series over a quarter of the cache was kept")
	}

	ctx := context.Background()
	reads := 0
	read := func(keep bool, err error) func(context.Context) (seriesJSON, bool, error) {
		return func(context.Context) (seriesJSON, bool, error) { reads++; return series(10), keep, err }
	}
	for range 2 {
		if _, err := c.load(ctx, "live", read(false, nil)); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	if _, err := c.load(ctx, "failing", read(true, boom)); !errors.Is(err, boom) {
		t.Errorf("load = %v, want the read's error", err)
	}
	if _, err := c.load(ctx, "failing", read(true, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.load(ctx, "failing", read(true, nil)); err != nil {
		t.Fatal(err)
	}
	if reads != 4 {
		t.Errorf("%d reads, want 4: an unresolved market twice, a failed read, then one kept", reads)
	}
}
