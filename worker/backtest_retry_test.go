package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

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
	// stall, when set, has the database not answer in time, where it
	// refuses at once.
	stall bool
	// others counts the reads of the other markets' tapes.
	others atomic.Int32
}

func (s *brokenTape) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	if slug == s.slug {
		s.reads.Add(1)
		if s.stall {
			return nil, fmt.Errorf("read the tape of %s: %w: %w", slug, store.ErrUnavailable, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("read the tape of %s: %w", slug, store.ErrUnavailable)
	}
	s.others.Add(1)
	return s.Store.ReadTape(ctx, slug, outcome)
}

// TestBacktestShardFailingEveryTry: a shard that the batch runs itself and
// that fails every try (its store unreachable for one of its markets) is
// tried as a worker tries a shard, its shard's retries and no more, after
// the waits between them, and then that market fails with the code its
// handler's last try answers (SERVICE_UNAVAILABLE), every other market,
// its shard's too, keeping the result a direct replay gives it. It was put
// back on the queue as a new task each time, its tries never counted: the
// batch ran it again at every look at its shards, 25 markets' replays
// every 250 ms, until the backtest's deadline, and then reported its
// markets timed out (JOB_TIMEOUT); and once counted, the last try failed
// the market's shard-mates with it.
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
	// The tries and their waits (1, 4 and 16 s) take 21 s; the deadline
	// is far past them, so that a loaded machine's slowness is never read
	// as the batch running out of time.
	rep := f.run(t, req, 5*time.Minute)
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	if g := req.Groups()[0].Markets; len(g) < 2 || g[0] != broken.slug {
		t.Fatalf("the broken market's shard %v: the test wants it first in a shard of several", g)
	}
	want := f.want(t, req)
	if len(rep.Results) != len(want.Results) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(want.Results))
	}
	for i, r := range rep.Results {
		if r.Slug == broken.slug {
			if r.Error == nil || r.Error.Code != "SERVICE_UNAVAILABLE" {
				t.Errorf("the broken market's result %+v, want SERVICE_UNAVAILABLE", r)
			}
			continue
		}
		g, _ := json.Marshal(r)
		w, _ := json.Marshal(want.Results[i])
		if string(g) != string(w) {
			t.Errorf("market %d's result %s, want %s (a direct replay's)", i, g, w)
		}
	}
	// The shard's first try and its 3 retries (Job.MaxRetry's default).
	if n := broken.reads.Load(); n != 4 {
		t.Errorf("the broken market was read %d times, want 4: a try and 3 retries", n)
	}
}

// TestBacktestShardCountsAWorkersTries: a shard that a worker has tried
// and failed twice, and that the batch then takes off the retry set to run
// itself, is tried as often as a worker tries a shard in all (a try and 3
// retries), not 3 more times on top of the worker's: the batch counted
// the worker's two failed tries as one.
func TestBacktestShardCountsAWorkersTries(t *testing.T) {
	t.Parallel()
	f := newBTFixture(t)
	broken := &brokenTape{Store: f.st, slug: f.markets[0]}
	req := backtest.Request{Strategy: testSpec(t, 100), Markets: f.markets[:1]}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	groups := req.Groups()
	if len(groups) != 1 {
		t.Fatalf("%d shards, want 1", len(groups))
	}
	group, err := json.Marshal(groups[0])
	if err != nil {
		t.Fatal(err)
	}
	shard := worker.Job{Type: backtest.GroupType, Queue: jobs.QueueBacktest, Payload: group, Version: req.GroupVersion(groups[0])}

	// A first worker tries the batch's shard, queued before the batch
	// (by another batch of the same markets), until it has failed twice.
	first, err := worker.NewServer(worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 2, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopFirst := context.WithCancel(context.Background())
	firstDone := make(chan struct{})
	go func() { _ = first.Run(ctx); close(firstDone) }()
	t.Cleanup(func() { stopFirst(); <-firstDone })
	if _, err := asynq.NewClientFromRedisClient(f.rdb).EnqueueContext(t.Context(), asynq.NewTask(shard.Type, shard.Payload),
		asynq.TaskID(shard.ID()), asynq.Queue(shard.Queue), asynq.MaxRetry(3), asynq.Timeout(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(f.rdb)
	deadline := time.Now().Add(patience(t))
	for {
		info, err := insp.GetTaskInfo(shard.Queue, shard.ID())
		if err != nil {
			t.Fatal(err)
		}
		if info.State == asynq.TaskStateRetry && info.Retried >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard did not fail twice on the first worker: %s, %d retried", info.State, info.Retried)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopFirst()
	<-firstDone
	tried := broken.reads.Load()

	// One slot: the batch runs the shard's other tries itself.
	second, err := worker.NewServer(worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 1, CacheBytes: -1,
		Backtest: worker.BacktestConfig{PollInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, stopSecond := context.WithCancel(context.Background())
	secondDone := make(chan struct{})
	go func() { _ = second.Run(ctx2); close(secondDone) }()
	t.Cleanup(func() { stopSecond(); <-secondDone })
	rep := f.run(t, req, 5*time.Minute)
	if len(rep.Results) != 1 || rep.Results[0].Error == nil || rep.Results[0].Error.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("the broken market's result %+v, want SERVICE_UNAVAILABLE", rep.Results)
	}
	if n := broken.reads.Load(); n != 4 {
		t.Errorf("the broken market was read %d times (%d on the first worker), want 4 in all: a try and 3 retries", n, tried)
	}
}

// TestBacktestShardPutBackKeepsItsCount: a shard the batch ran, that
// failed and that it put back on the queue, is tried by the worker that
// takes it only as often as is left of a try and 3 retries, not 4 more
// times: the task put back is new, and its own count started again.
func TestBacktestShardPutBackKeepsItsCount(t *testing.T) {
	t.Parallel()
	f := newBTFixture(t)
	broken := &brokenTape{Store: f.st, slug: f.markets[0]}
	// One slot, and no look at the shards after the first: the batch runs
	// the shard's first try itself, and leaves the rest to the worker
	// started after it.
	batcher, err := worker.NewServer(worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 1, CacheBytes: -1,
		Backtest: worker.BacktestConfig{PollInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = batcher.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	req := backtest.Request{Strategy: testSpec(t, 100), Markets: f.markets[:1]}
	payload, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		o   jobs.Outcome
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		o, _, err := f.client.Run(t.Context(), worker.Job{Type: backtest.TaskType, Queue: jobs.QueueBacktest, Payload: payload, Timeout: 5 * time.Minute},
			"test", patience(t))
		answered <- answer{o, err}
	}()
	for deadline := time.Now().Add(patience(t)); broken.reads.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the batch did not run its shard")
		}
	}
	runServer(t, worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 2, CacheBytes: -1})

	a := <-answered
	if a.err != nil || a.o.Failure != nil {
		t.Fatalf("batch: %v, failure %+v", a.err, a.o.Failure)
	}
	data, err := a.o.Data()
	if err != nil {
		t.Fatal(err)
	}
	var rep backtest.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Error == nil || rep.Results[0].Error.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("the broken market's result %+v, want SERVICE_UNAVAILABLE", rep.Results)
	}
	if n := broken.reads.Load(); n != 4 {
		t.Errorf("the broken market was read %d times, want 4 in all: a try and 3 retries", n)
	}
}

// TestBacktestShardLastTryOnAWorker: a shard task whose last attempt a
// worker runs, one of its markets unreadable (its store unavailable),
// answers that market's failure (SERVICE_UNAVAILABLE) and the other
// markets' results, each the one a direct replay gives, where the handler
// failed the whole shard; when the database did not answer in time, the
// markets after it fail with it, untried, as each would wait on it. The
// task is archived, its outcome kept for the batch waiting on it, so that
// a later batch runs it again rather than reuse a failure that may have
// passed.
func TestBacktestShardLastTryOnAWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		broken int // its index in the shard
		stall  bool
		failed int // the markets failed, from the broken one on
	}{
		{"refused, broken last", 1, false, 1},
		{"refused, broken first", 0, false, 1},
		{"stalled, broken first", 0, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newBTFixture(t)
			req := backtest.Request{Strategy: testSpec(t, 100), Markets: f.markets[:8]}
			if err := req.Normalize(); err != nil {
				t.Fatal(err)
			}
			group := req.Groups()[0]
			if len(group.Markets) != 2 {
				t.Fatalf("the first shard %v: the test wants two markets in it", group.Markets)
			}
			broken := &brokenTape{Store: f.st, slug: group.Markets[tc.broken], stall: tc.stall}
			payload, err := json.Marshal(group)
			if err != nil {
				t.Fatal(err)
			}
			shard := worker.Job{Type: backtest.GroupType, Queue: jobs.QueueBacktest, Payload: payload, Version: req.GroupVersion(group)}
			runServer(t, worker.Config{Redis: f.rdb, Store: broken, Logger: quietLog(), Concurrency: 1, CacheBytes: -1})
			// No retries: the first attempt is the last.
			if _, err := asynq.NewClientFromRedisClient(f.rdb).EnqueueContext(t.Context(), asynq.NewTask(shard.Type, shard.Payload),
				asynq.TaskID(shard.ID()), asynq.Queue(shard.Queue), asynq.MaxRetry(0), asynq.Timeout(2*time.Minute), asynq.Retention(time.Hour)); err != nil {
				t.Fatal(err)
			}
			insp := asynq.NewInspectorFromRedisClient(f.rdb)
			var info *asynq.TaskInfo
			for deadline := time.Now().Add(patience(t)); ; time.Sleep(10 * time.Millisecond) {
				if info, err = insp.GetTaskInfo(shard.Queue, shard.ID()); err != nil {
					t.Fatal(err)
				}
				if info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the shard did not finish: %s", info.State)
				}
			}
			if info.State != asynq.TaskStateArchived {
				t.Errorf("the shard with a market that failed every try ended %s, want archived (run again, not reused)", info.State)
			}
			o, err := jobs.DecodeOutcome(info.Result)
			if err != nil {
				t.Fatalf("the shard's outcome (%s): %v", info.State, err)
			}
			got, err := backtest.Ungroup([]backtest.ShardGroup{group}, []*jobs.Outcome{&o})
			if err != nil {
				t.Fatal(err)
			}
			want := f.want(t, backtest.Request{Strategy: req.Strategy, Markets: group.Markets})
			for i, r := range got {
				if i >= tc.broken && i < tc.broken+tc.failed {
					if r.Error == nil || r.Error.Code != "SERVICE_UNAVAILABLE" {
						t.Errorf("market %d's result %+v, want SERVICE_UNAVAILABLE (the broken market is %d)", i, r, tc.broken)
					}
					continue
				}
				r.Sums = nil // the report leaves them out (Collect)
				g, _ := json.Marshal(r)
				w, _ := json.Marshal(want.Results[i])
				if string(g) != string(w) {
					t.Errorf("market %d's result %s, want %s (a direct replay's)", i, g, w)
				}
			}
			if read := int32(len(group.Markets) - tc.failed); broken.others.Load() != read {
				t.Errorf("the other markets' tapes were read %d times, want %d (none after a stalled store)", broken.others.Load(), read)
			}
		})
	}
}
