package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// heldStore counts the store's heavy reads (a whole market's snapshots,
// snapshot pages with books, depth history) and holds each until
// released, so that a test can keep a burst in flight for as long as it
// looks; light reads pass straight through.
type heldStore struct {
	store.Store
	release chan struct{} // closed: heavy reads go on
	heavy   atomic.Int64  // heavy reads started
	counts  atomic.Int64  // CountSnapshots calls
}

func newHeldStore(st store.Store) *heldStore { return &heldStore{Store: st, release: make(chan struct{})} }

func (h *heldStore) hold(ctx context.Context) error {
	h.heavy.Add(1)
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *heldStore) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	if q.Limit == 0 || q.WithBooks {
		if err := h.hold(ctx); err != nil {
			return nil, 0, err
		}
	}
	return h.Store.ListSnapshots(ctx, slug, q)
}

func (h *heldStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	h.counts.Add(1)
	return h.Store.CountSnapshots(ctx, slug, q)
}

func (h *heldStore) ListDepth(ctx context.Context, f store.DepthFilter) ([]store.DepthSnapshot, int, error) {
	if err := h.hold(ctx); err != nil {
		return nil, 0, err
	}
	return h.Store.ListDepth(ctx, f)
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// seriesMarket appends n snapshots, one a second, to the resolved 24hr
// fixture market and returns its slug.
func seriesMarket(t *testing.T, st store.Store, n int) string {
	t.Helper()
	start := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	slug := slugOf(store.BTC, store.H24, start)
	snaps := make([]store.Snapshot, n)
	for i := range snaps {
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * time.Second), PriceUp: 0.5, PriceDown: 0.5, CoinPrice: 95_000 + float64(i%100)}
	}
	if err := st.AppendSnapshots(context.Background(), slug, snaps); err != nil {
		t.Fatal(err)
	}
	return slug
}

// TestSeriesCoalescedAndCached (issue 28, item 3): a burst of the same
// /series call costs one store read, a resolved market's series is then
// served from the cache, and a late snapshot or a corrected winner shows
// on the next call.
func TestSeriesCoalescedAndCached(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	slug := seriesMarket(t, mem, 3_000)
	st := newHeldStore(mem)
	b := setup(t, func(o *setupOpts) { o.store = st })
	path := "/v1/markets/" + slug + "/series"

	const burst = 100
	answers := make([]response, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() { answers[i] = b.get(store.Pro, path) })
	}
	// Every call has counted the snapshots (the step before the read)
	// while the one read is held.
	waitFor(t, "the burst to reach the read", func() bool { return st.counts.Load() >= burst && st.heavy.Load() >= 1 })
	close(st.release)
	wg.Wait()
	if n := st.heavy.Load(); n != 1 {
		t.Errorf("%d concurrent identical calls made %d store reads, want 1", burst, n)
	}
	for i, r := range answers {
		if r.status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	decode := func(r response) seriesResp {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("series: %d %s", r.status, r.body)
		}
		var s seriesResp
		if err := json.Unmarshal(r.body, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if d := decode(answers[0]).Data; d.Snapshots != 3_000 {
		t.Errorf("snapshots = %d, want 3,000", d.Snapshots)
	}

	// Resolved and unchanged: from the cache.
	decode(b.get(store.Pro, path))
	if n := st.heavy.Load(); n != 1 {
		t.Errorf("a cached series read the store again: %d reads", n)
	}

	// A late snapshot changes the count: read again, and kept again.
	ctx := context.Background()
	m, err := mem.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: m.EndTime.Add(-time.Second), PriceUp: 0.9, PriceDown: 0.1, CoinPrice: 95_500}}); err != nil {
		t.Fatal(err)
	}
	if d := decode(b.get(store.Pro, path)).Data; d.Snapshots != 3_001 || st.heavy.Load() != 2 {
		t.Errorf("after a late snapshot: %d snapshots, %d reads; want 3,001 and 2", d.Snapshots, st.heavy.Load())
	}
	decode(b.get(store.Pro, path))
	if n := st.heavy.Load(); n != 2 {
		t.Errorf("the re-read series was not kept: %d reads", n)
	}

	// A corrected winner changes the record.
	m.Winner, m.UpdatedAt = ptr(store.OutcomeDown), m.UpdatedAt.Add(time.Second)
	if err := mem.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	r := b.get(store.Pro, path)
	decode(r)
	market, _ := r.json(t)["data"].(map[string]any)["market"].(map[string]any)
	if market["winner"] != store.OutcomeDown || st.heavy.Load() != 3 {
		t.Errorf("after a correction: winner %v, %d reads; want %s and 3", market["winner"], st.heavy.Load(), store.OutcomeDown)
	}
}
