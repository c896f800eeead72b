package worker

import (
	"context"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// tallyStore counts the store's whole-market counts.
type tallyStore struct {
	store.Store
	counts int
}

func (c *tallyStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	c.counts++
	return c.Store.CountSnapshots(ctx, slug, q)
}

// TestReplayCountsItsMarketOnce: a replay task counts its market for the
// memory budget and the cache's currency check with one store read.
func TestReplayCountsItsMarketOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 100
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &tallyStore{Store: memory.New()}
	m, _, err := g.WriteMarket(ctx, st, store.BTC, store.M15, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(DefaultCacheBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // a miss, then a hit
		st.counts = 0
		view := c.view(st)
		release, err := newMemoryBudget(0).admit(ctx, view, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := view.GetMarket(ctx, m.Slug); err != nil {
			t.Fatal(err)
		}
		if _, _, err := view.ListSnapshots(ctx, m.Slug, jobs.ReplayQuery(store.OutcomeUp)); err != nil {
			t.Fatal(err)
		}
		release()
		if st.counts != 1 {
			t.Errorf("round %d: the market was counted %d times", round, st.counts)
		}
	}
}
