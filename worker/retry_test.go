package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// unavailableOnce is a store whose first market read fails as a database
// restarting fails (store.ErrUnavailable).
type unavailableOnce struct {
	store.Store
	failed atomic.Bool
}

func (u *unavailableOnce) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if u.failed.CompareAndSwap(false, true) {
		return store.Market{}, fmt.Errorf("get market %q: %w: unexpected EOF", slug, store.ErrUnavailable)
	}
	return u.Store.GetMarket(ctx, slug)
}

// TestReplayRetriesAStoreOutageSoon: a replay whose store read fails for a
// moment (Postgres restarting, failing over) is tried again and answers
// the request still waiting on it. How soon is retryDelay's
// (TestRetryDelayOfAStoreOutage: 1 s, not Asynq's 15-45 s), asserted
// there rather than timed here, where a loaded machine may take longer.
func TestReplayRetriesAStoreOutageSoon(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	m := writeM15(t, mem)
	st := &unavailableOnce{Store: mem}
	c := startWorker(t, worker.Config{Redis: redistest.Client(t), Store: st, Logger: quietLog(), CacheBytes: -1})
	payload, _ := json.Marshal(replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 90}},
		ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 40}}, PositionSize: 10}})
	o, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", time.Minute)
	if err != nil || o.Failure != nil {
		t.Fatalf("replay: %v %+v", err, o.Failure)
	}
	if !st.failed.Load() {
		t.Fatal("the store never failed: the test tests nothing")
	}
}

// unavailable is a store whose market reads all fail as a database that
// is down fails.
type unavailable struct{ store.Store }

func (unavailable) GetMarket(_ context.Context, slug string) (store.Market, error) {
	return store.Market{}, fmt.Errorf("get market %q: %w: connection refused", slug, store.ErrUnavailable)
}

// TestReplayOfADownStoreIsUnavailable: a replay whose every attempt found
// the database down answers SERVICE_UNAVAILABLE (503: retry with backoff),
// not INTERNAL_ERROR, which SPEC keeps for bugs.
func TestReplayOfADownStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	m := writeM15(t, mem)
	c := startWorker(t, worker.Config{Redis: redistest.Client(t), Store: unavailable{mem}, Logger: quietLog(), CacheBytes: -1})
	payload, _ := json.Marshal(replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 90}},
		ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 40}}, PositionSize: 10}})
	o, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, MaxRetry: 1}, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failure == nil || o.Failure.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("a replay whose store was down throughout answered %+v (result %.100s), want the failure SERVICE_UNAVAILABLE", o.Failure, o.Result)
	}
}
