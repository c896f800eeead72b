package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/worker"
)

// brokenTape is a store whose tape of one market cannot be read, for good:
// the database answers every read of it as unreachable.
type brokenTape struct {
	store.Store
	slug  string
	reads atomic.Int32
}

func (s *brokenTape) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	if slug == s.slug {
		s.reads.Add(1)
		return nil, fmt.Errorf("read the tape of %s: %w", slug, store.ErrUnavailable)
	}
	return s.Store.ReadTape(ctx, slug, outcome)
}

// TestBacktestShardFailingEveryTry: a shard that the batch runs itself and
// that fails every try (its store unreachable for one of its markets) is
// tried as a worker tries a shard, its shard's retries and no more, after
// the waits between them, and then fails with the code its handler's
// last try answers (SERVICE_UNAVAILABLE), the other shards' markets keeping
// their results. It was put back on the queue as a new task each time,
// its tries never counted: the batch ran it again at every look at its
// shards, 25 markets' replays every 250 ms, until the backtest's deadline,
// and then reported its markets timed out (JOB_TIMEOUT).
func TestBacktestShardFailingEveryTry(t *testing.T) {
	t.Parallel()
	f := newBTFixture(t)
	broken := &brokenTape{Store: f.st, slug: f.markets[0]}
	// One slot: the batch runs every shard, and every try, itself.
	w, err := worker.NewServer(worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 1,
		Backtest: worker.BacktestConfig{PollInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	req := backtest.Request{Strategy: testSpec(t, 100), Markets: f.markets[:8]}
	payload, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// The tries and their waits (1, 4 and 16 s) take 21 s; the deadline
	// is far past them, so that a loaded machine's slowness is never read
	// as the batch running out of time.
	o, id, err := f.client.Run(t.Context(), worker.Job{Type: backtest.TaskType, Queue: jobs.QueueBacktest, Payload: payload, Timeout: 5 * time.Minute},
		"test", patience(t))
	if err != nil || o.Failure != nil {
		t.Fatalf("batch %s: %v, failure %+v", id, err, o.Failure)
	}
	data, err := o.Data()
	if err != nil {
		t.Fatal(err)
	}
	var rep backtest.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for _, r := range rep.Results {
		if r.Error != nil {
			codes[r.Error.Code]++
		}
	}
	// (The generated markets include one without data: NO_DATA.)
	if codes["SERVICE_UNAVAILABLE"] == 0 || codes[backtest.CodeTimeout] != 0 {
		t.Errorf("the failed markets' codes %v, want SERVICE_UNAVAILABLE for the broken shard's markets and none timed out", codes)
	}
	if rep.Aggregate.MarketsFailed == len(req.Markets) {
		t.Errorf("every market failed: %+v", rep.Aggregate)
	}
	// The shard's first try and its 3 retries (Job.MaxRetry's default).
	if n := broken.reads.Load(); n != 4 {
		t.Errorf("the broken market was read %d times, want 4: a try and 3 retries", n)
	}
}
