package worker

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// tallyStore counts the store's reads of a market's record and count.
type tallyStore struct {
	store.Store
	counts, gets atomic.Int64
}

func (c *tallyStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	c.counts.Add(1)
	return c.Store.CountSnapshots(ctx, slug, q)
}

func (c *tallyStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	c.gets.Add(1)
	return c.Store.GetMarket(ctx, slug)
}

// TestReplayCountsItsMarketOnce: a replay task counts its market for the
// memory budget and the cache's currency check with one store read, and
// reads its record once (beside the count).
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
	s := &Server{store: st, cache: c, budget: newMemoryBudget(0)}
	payload, _ := json.Marshal(replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}},
		ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}}, PositionSize: 10}})
	for round := range 2 { // a miss, then a hit
		st.counts.Store(0)
		st.gets.Store(0)
		if _, err := s.replayWork(ctx, payload); err != nil {
			t.Fatal(err)
		}
		if n := st.counts.Load(); n != 1 {
			t.Errorf("round %d: the market was counted %d times", round, n)
		}
		if n := st.gets.Load(); n != 1 {
			t.Errorf("round %d: the market's record was read %d times", round, n)
		}
	}
}
