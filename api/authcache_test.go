package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// changingStore tells the api processes that the customer changed (as a
// key revoked, a tier set or limits set through another process or the
// CLI do) during every key look-up, so that every principal the auth
// cache holds is stale by the time its request is counted.
// lookups counts its key look-ups.
type changingStore struct {
	store.Store
	rdb     redis.UniversalClient
	lookups *atomic.Int64
}

func (s changingStore) LookupAPIKey(ctx context.Context, hash []byte) (store.APIKey, store.Customer, error) {
	s.lookups.Add(1)
	k, c, err := s.Store.LookupAPIKey(ctx, hash)
	if err == nil {
		if ierr := api.InvalidateCustomer(ctx, s.rdb, c.ID); ierr != nil {
			return k, c, ierr
		}
	}
	return k, c, err
}

// TestRateLimitHoldsWhileTheCustomerChanges: a request whose cached
// principal is stale is looked up afresh and counted; when the customer
// changes again during that look-up too, the request is still counted
// (from the store, as without a cache), never let through uncounted. A
// customer could otherwise keep its requests off the books by changing
// itself (revoking keys: exempt from every limit) while they run. A
// request looks its key up three times at most: twice when it is not
// cached (the generation read between), once more when the customer
// changed since (the generation is the stale count's). It took five.
func TestRateLimitHoldsWhileTheCustomerChanges(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	st := memory.New()
	loadFixtures(t, st)
	limits := map[store.Tier]api.RateLimit{store.Pro: {PerMinute: 2, PerDay: 100}}
	var lookups atomic.Int64
	b := setup(t, func(o *setupOpts) { o.redis = rdb; o.store = changingStore{st, rdb, &lookups}; o.rateLimits = limits })
	const path = "/v1/markets?coin=BTC&limit=1"
	for i := range 2 {
		lookups.Store(0)
		r := b.get(store.Pro, path)
		if n := lookups.Load(); n > 3 {
			t.Errorf("request %d: %d key look-ups, want 3 at most", i+1, n)
		}
		if r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
		}
		if got := r.header.Get("X-RateLimit-Limit"); got != "100" {
			t.Errorf("request %d: X-RateLimit-Limit %q, want 100 (the request counted)", i+1, got)
		}
	}
	r := b.get(store.Pro, path)
	wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
}
