package worker_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// nanTapeStore reads every tape with a non-finite price at its tenth
// tick: data the engine cannot replay, the same on every try.
type nanTapeStore struct{ store.Store }

func (s nanTapeStore) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	t, err := s.Store.ReadTape(ctx, slug, outcome)
	if err == nil && t.Len() > 10 {
		c := *t
		c.Ticks = append([]store.Tick(nil), t.Ticks...)
		c.Ticks[10].PriceUp = math.NaN()
		t = &c
	}
	return t, err
}

// TestReplayOfBadDataAnswersAtOnce: a replay whose market's recorded data
// the engine cannot replay answers INTERNAL_ERROR naming the market and the
// snapshot on its first try, and its task is archived, not retried: a
// retry reads the same data (Asynq's retries waited 15 s and more each, so
// the request answered 504 JOB_TIMEOUT instead).
func TestReplayOfBadDataAnswersAtOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem := memory.New()
	m := writeM15(t, mem)
	rdb := redistest.Client(t)
	c := startWorker(t, worker.Config{Redis: rdb, Store: nanTapeStore{mem}, Logger: quietLog(), CacheBytes: -1})
	req := replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP", PositionSize: 10,
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}},
		ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}}}}
	payload, _ := json.Marshal(req)
	o, id, err := c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", patience(t))
	if err != nil {
		t.Fatalf("run: %v (a retried task outlasts the wait)", err)
	}
	if o.Failure == nil || o.Failure.Code != "INTERNAL_ERROR" || !strings.Contains(o.Failure.Message, m.Slug) ||
		!strings.Contains(o.Failure.Message, "snapshot 10") {
		t.Fatalf("outcome %+v, want INTERNAL_ERROR naming the market and snapshot 10", o.Failure)
	}
	// The outcome is announced before Asynq files the task away.
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(patience(t))
	for {
		info, err := insp.GetTaskInfo(jobs.QueueReplay, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != asynq.TaskStateActive {
			if info.State != asynq.TaskStateArchived || info.Retried != 0 {
				t.Errorf("task %s after %d retries, want archived after its one try", info.State, info.Retried)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the task is still active")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
