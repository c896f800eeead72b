package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// bigStore counts every market as a 24hr one (288,000 snapshots), so that
// its replay is large for the memory budget, and says when a market's
// snapshots are read.
type bigStore struct {
	store.Store
	read chan string
}

func (s *bigStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	if q.From == nil && q.To == nil {
		return 288_000, nil
	}
	return s.Store.CountSnapshots(ctx, slug, q)
}

func (s *bigStore) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	select {
	case s.read <- slug:
	default:
	}
	return s.Store.ReadTape(ctx, slug, outcome)
}

// TestBacktestShardKeepsTheMemoryBudget: a backtest shard's replay of a
// large market (a 24hr market's ~170 MB once decoded) waits for room in
// the worker's memory budget (WORKER_MEMORY_MB), as the same replay sent
// to POST /v1/replay does: shards read their markets outside it, so a
// 24hr backtest's 16 shards on one worker held 16 such markets at once,
// beside the replays the budget admitted.
func TestBacktestShardKeepsTheMemoryBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem := memory.New()
	group := shardOf(t, mem, 1)
	st := &bigStore{Store: mem, read: make(chan string, 1)}
	for _, cacheBytes := range []int64{DefaultCacheBytes, -1} {
		c, err := NewCache(cacheBytes, nil)
		if err != nil {
			t.Fatal(err)
		}
		waiting := make(chan string, 1)
		budget := newMemoryBudget(0)
		budget.waiting = func(slug string) { waiting <- slug }
		s := &Server{store: st, cache: c, budget: budget, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		b := &backtester{s: s}
		// Another large replay holds the whole budget.
		hold, err := s.budget.admit(ctx, "another-24hr-market", 10*288_000)
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		ran := make(chan error, 1)
		var outcomes atomic.Int64
		go func() {
			_, finished, err := b.runMarkets(sctx, group, false)
			outcomes.Store(int64(finished))
			ran <- err
		}()
		select {
		case slug := <-st.read:
			t.Errorf("cache %d: the shard read %s's snapshots while the memory budget was held by another replay", cacheBytes, slug)
		case err := <-ran:
			t.Errorf("cache %d: the shard ran while the memory budget was held by another replay (%d outcomes, %v)", cacheBytes, outcomes.Load(), err)
		case slug := <-waiting: // it waits for the budget
			if slug != group[0].MarketSlug {
				t.Errorf("cache %d: the shard waited for room to replay %s, want %s", cacheBytes, slug, group[0].MarketSlug)
			}
		}
		cancel()
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cache %d: the waiting shard, cancelled: %v", cacheBytes, err)
		}
		hold()

		// Once the budget has room, the shard runs.
		o, _, err := b.runMarkets(ctx, group, false)
		if err != nil || len(o) != 1 || o[0].Failure != nil || len(o[0].Result) == 0 {
			t.Fatalf("cache %d: the shard with room in the budget: %+v, %v", cacheBytes, o, err)
		}
		select {
		case <-st.read:
		default:
		}
	}
}

// shardOf writes n generated 15m BTC markets, an hour apart, to st, and
// returns a backtest shard of them: a replay of each with one strategy.
func shardOf(t *testing.T, st store.Store, n int) []replay.Request {
	t.Helper()
	now := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 100
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	group := make([]replay.Request, n)
	for i := range group {
		m, _, err := g.WriteMarket(t.Context(), st, store.BTC, store.M15, now.Add(-time.Duration(i+1)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		group[i] = replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
			EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}},
			ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}}, PositionSize: 10}}
	}
	return group
}
