package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// meetingStore tells whether a task's first count of a market's snapshots
// and its first read of the market's record were asked together: the
// first of them asked waits up to a second for the other before it
// answers.
type meetingStore struct {
	store.Store
	counting, reading sync.Once
	counted, read     chan struct{}
	arrived           atomic.Int32
	together          atomic.Bool
}

func newMeetingStore(st store.Store) *meetingStore {
	return &meetingStore{Store: st, counted: make(chan struct{}), read: make(chan struct{})}
}

func (s *meetingStore) meet(mine *sync.Once, arrived, other chan struct{}) {
	mine.Do(func() {
		close(arrived)
		if s.arrived.Add(1) > 1 {
			return // the other is waiting, or gave up
		}
		select {
		case <-other:
			s.together.Store(true)
		case <-time.After(time.Second):
		}
	})
}

func (s *meetingStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	s.meet(&s.counting, s.counted, s.read)
	return s.Store.CountSnapshots(ctx, slug, q)
}

func (s *meetingStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	s.meet(&s.reading, s.read, s.counted)
	return s.Store.GetMarket(ctx, slug)
}

// TestReplayReadsItsMarketBesideItsCount (issue 27): a replay's worker
// reads the market's record while it counts the market's snapshots for its
// memory budget, with its replay cache and without one (--cache-mib 0),
// rather than one round trip to the store after the other.
func TestReplayReadsItsMarketBesideItsCount(t *testing.T) {
	t.Parallel()
	for name, cacheBytes := range map[string]int64{"cache": 0, "no cache": -1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mem := memory.New()
			m := writeM15(t, mem)
			st := newMeetingStore(mem)
			replayOn(t, st, m, cacheBytes)
			if !st.together.Load() {
				t.Error("the market's record was read after its snapshots were counted, not beside the count")
			}
		})
	}
}

// askedStore is a store.MarketSeriesCounter that counts the questions a task
// asks of a market's record and of its count of snapshots.
type askedStore struct {
	store.Store
	together, market, count atomic.Int32
}

func (s *askedStore) GetMarketSeries(ctx context.Context, slug string) (store.Market, store.SeriesCount, error) {
	s.together.Add(1)
	return store.GetMarketSeries(ctx, s.Store, slug)
}

func (s *askedStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	s.market.Add(1)
	return s.Store.GetMarket(ctx, slug)
}

func (s *askedStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	s.count.Add(1)
	return s.Store.CountSnapshots(ctx, slug, q)
}

// TestReplayReadsItsMarketAndCountInOneQuestion (issue 27): on a store
// that reads a market with its count of snapshots in one query
// (store.MarketSeriesCounter: Postgres), a replay's worker asks that once for
// its market's record and its memory budget's count, with its replay
// cache and without one, instead of two questions.
func TestReplayReadsItsMarketAndCountInOneQuestion(t *testing.T) {
	t.Parallel()
	for name, cacheBytes := range map[string]int64{"cache": 0, "no cache": -1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mem := memory.New()
			m := writeM15(t, mem)
			st := &askedStore{Store: mem}
			replayOn(t, st, m, cacheBytes)
			if st.together.Load() != 1 || st.market.Load() != 0 || st.count.Load() != 0 {
				t.Errorf("a replay asked for its market with its count %d times, its market %d times, its count %d times; want once together",
					st.together.Load(), st.market.Load(), st.count.Load())
			}
		})
	}
}

// writeM15 writes a generated 15m market of 50 snapshots into mem.
func writeM15(t *testing.T, mem store.Store) store.Market {
	t.Helper()
	cfg := gen.DefaultConfig(btNow)
	cfg.MaxSnapshotsPerMarket = 50
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := g.WriteMarket(t.Context(), mem, store.BTC, store.M15, btNow.Add(-2*store.M15.Duration()).Truncate(store.M15.Duration()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// replayOn runs a replay of market m through a worker on st whose replay
// cache holds cacheBytes (-1: none).
func replayOn(t *testing.T, st store.Store, m store.Market, cacheBytes int64) {
	t.Helper()
	c := startWorker(t, worker.Config{Redis: redistest.Client(t), Store: st, Logger: quietLog(), CacheBytes: cacheBytes})
	payload, _ := json.Marshal(replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 90}},
		ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 40}}, PositionSize: 10}})
	o, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", 30*time.Second)
	if err != nil || o.Failure != nil {
		t.Fatalf("replay: %v %+v", err, o.Failure)
	}
}
