package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// unheld is a market that is not there, which a replay asks for.
const unheld = "btc-updown-15m-1"

// heldStore holds every read of a market but unheld until release.
type heldStore struct {
	store.Store
	once    sync.Once
	held    chan struct{} // closed when the first shard is held
	release chan struct{}
}

func (s *heldStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if slug == unheld {
		return s.Store.GetMarket(ctx, slug)
	}
	s.once.Do(func() { close(s.held) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return store.Market{}, ctx.Err()
	}
	return s.Store.GetMarket(ctx, slug)
}

// busyFixture is a running sweep of 2 trials over 3 generated 15m markets
// in a memory store, and its shards.
func busyFixture(t *testing.T) (*memory.Store, store.Sweep, []sweep.ShardTask) {
	t.Helper()
	ctx := t.Context()
	mem := memory.New()
	g, err := gen.New(gen.DefaultConfig(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	newest := time.Now().Truncate(15 * time.Minute).Add(-time.Hour)
	for k := range 3 {
		m, _, err := g.WriteMarket(ctx, mem, store.BTC, store.M15, newest.Add(-time.Duration(k)*15*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		slugs = append([]string{m.Slug}, slugs...)
	}
	c, err := mem.CreateCustomer(ctx, store.Customer{Email: "busy@example.com", Tier: store.Pro})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sweep.Decode([]byte(`{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","values":[0.4,0.5]}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Normalize(sweep.ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(p.Request)
	sw, err := mem.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: req, TrialCount: len(p.Trials), Markets: slugs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}

	shards := make([]sweep.ShardTask, len(slugs))
	for i, m := range slugs {
		shards[i] = sweep.ShardTask{Sweep: sw.ID, Market: m}
	}
	return mem, sw, shards
}

// TestBusyWorkerLeavesShardsQueued: a worker whose one sweep slot is busy
// takes no other shard (none is refused into the retry set, where it
// would wait for Asynq's forwarder) but still runs a replay at once; when
// the slot frees, the worker takes the remaining shards and the sweep
// finishes.
func TestBusyWorkerLeavesShardsQueued(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	slugs := sw.Markets
	rdb := redistest.Client(t)
	held := &heldStore{Store: mem, held: make(chan struct{}), release: make(chan struct{})}
	client := startWorker(t, worker.Config{Redis: rdb, Store: held, Logger: quietLog(), Concurrency: 2}) // one sweep slot
	// The first shard fills the slot; the others come once it is held
	// (two shards queued at once may both be taken, and one refused, in
	// the instant before the slot fills).
	if err := client.EnqueueSweep(ctx, shards[:1]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.held:
	case <-time.After(time.Minute):
		t.Fatal("no shard started within a minute")
	}
	if err := client.EnqueueSweep(ctx, shards[1:]); err != nil {
		t.Fatal(err)
	}

	// The other goroutine is free: a replay runs (and is refused for lack
	// of data: the answer is what matters, not the replay).
	payload, _ := json.Marshal(replay.Request{MarketSlug: unheld, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}}, PositionSize: 10}})
	if _, _, err := client.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "other", time.Minute); err != nil {
		t.Fatalf("a replay while the sweep slot is busy: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // rounds in which a worker would take (and refuse) shards
	insp := asynq.NewInspectorFromRedisClient(rdb)
	qi, err := insp.GetQueueInfo(jobs.QueueSweeps)
	if err != nil {
		t.Fatal(err)
	}
	if qi.Failed != 0 || qi.Retry != 0 || qi.Active != 1 || qi.Pending != len(slugs)-1 {
		t.Errorf("with the slot busy: %d active, %d pending; %d refused, %d in retry; want 1, %d, 0, 0",
			qi.Active, qi.Pending, qi.Failed, qi.Retry, len(slugs)-1)
	}

	close(held.release)
	waitSweepDone(t, mem, sw.ID, "once the slot freed")
}

// blockedStore blocks the reads of one market until release and counts
// the shards stored.
type blockedStore struct {
	store.Store
	slug    string
	reading chan struct{} // closed at the first read of slug
	once    sync.Once
	release chan struct{}
	mu      sync.Mutex
	puts    int
}

func (s *blockedStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if slug == s.slug {
		s.once.Do(func() { close(s.reading) })
		select {
		case <-s.release:
		case <-ctx.Done():
			return store.Market{}, ctx.Err()
		}
	}
	return s.Store.GetMarket(ctx, slug)
}

func (s *blockedStore) PutSweepShard(ctx context.Context, id, market string, trials int, results []byte) (store.Sweep, error) {
	s.mu.Lock()
	s.puts++
	s.mu.Unlock()
	return s.Store.PutSweepShard(ctx, id, market, trials, results)
}

// TestShardsGiveWayToReplays: while a replay runs on a worker, its sweep
// shards pause between trials; they finish once it has.
func TestShardsGiveWayToReplays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	st := &blockedStore{Store: mem, slug: unheld, reading: make(chan struct{}), release: make(chan struct{})}
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: st, Logger: quietLog(), Concurrency: 8})

	// A replay holds the worker (its market read blocks) ...
	replayed := make(chan error, 1)
	go func() {
		payload, _ := json.Marshal(replay.Request{MarketSlug: unheld, Strategy: replay.Strategy{Side: "UP",
			EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}}, PositionSize: 10}})
		_, _, err := client.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "other", 2*time.Minute)
		replayed <- err
	}()
	select {
	case <-st.reading:
	case <-time.After(time.Minute):
		t.Fatal("the replay did not start within a minute")
	}
	// ... while the sweep's shards are queued: they start, and wait.
	if err := client.EnqueueSweep(ctx, shards); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	slots := max(min(len(shards), 8/2, runtime.GOMAXPROCS(0)-1), 1) // the worker's sweep slots (sweep.go)
	deadline := time.Now().Add(time.Minute)
	for {
		qi, err := insp.GetQueueInfo(jobs.QueueSweeps)
		if err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		stored := st.puts
		st.mu.Unlock()
		if qi.Active == slots || stored > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards active: %d of %d after a minute", qi.Active, slots)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // long enough for shards of 3 small markets to finish, did they not wait
	st.mu.Lock()
	puts := st.puts
	st.mu.Unlock()
	if puts != 0 {
		t.Errorf("%d shards stored while a replay ran; want none", puts)
	}
	close(st.release)
	if err := <-replayed; err != nil {
		t.Fatalf("replay: %v", err)
	}
	waitSweepDone(t, mem, sw.ID, "after the replay")
}

// TestShardsGoOnBesideGenerations: a generation waiting on a slow model
// is no reason for sweep shards to pause (it does not use the CPU): the
// sweep finishes while the generation still waits.
func TestShardsGoOnBesideGenerations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	model := blockingGenerator{started: make(chan string, 1), release: make(chan struct{})}
	defer close(model.release)
	client := startWorker(t, worker.Config{Redis: rdb, Store: mem, Logger: quietLog(), Concurrency: 8,
		Backtest: worker.BacktestConfig{Generator: model}})
	go func() {
		payload, _ := json.Marshal(strategy.Request{Prompt: "buy UP when price_up drops below 0.35, exit above 0.6"})
		_, _, _ = client.Run(ctx, worker.Job{Type: strategy.TaskType, Queue: jobs.QueueAI, Payload: payload}, "other", patience(t))
	}()
	select {
	case <-model.started:
	case <-time.After(patience(t)):
		t.Fatal("the generation did not start")
	}
	if err := client.EnqueueSweep(ctx, shards); err != nil {
		t.Fatal(err)
	}
	waitSweepDone(t, mem, sw.ID, "beside a generation waiting on its model")
}

// resolvingStore holds a market resolution's first read, of unheld, until
// release, as an upstream that does not answer holds a resolution (the
// resolver's request timeouts are its own, seconds a request and a few
// retries a try, and Asynq tries it again and again).
type resolvingStore struct {
	store.Store
	once    sync.Once
	started chan struct{} // closed when the resolution is held
	release chan struct{}
}

func (s *resolvingStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if slug == unheld {
		s.once.Do(func() { close(s.started) })
		<-s.release
	}
	return s.Store.GetMarket(ctx, slug)
}

// TestShardsGoOnBesideResolutions: a sweep finishes while a market's
// resolution waits on its upstream, as beside a generation waiting on its
// model. Counted as foreground work, a resolution held every sweep shard
// of its worker for as long as it waited: with Polymarket or Binance slow
// or down, the collector's resolutions (one a market, each tried again
// and again) kept every sweep standing still.
func TestShardsGoOnBesideResolutions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	st := &resolvingStore{Store: mem, started: make(chan struct{}), release: make(chan struct{})}
	defer close(st.release)
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: st, Logger: quietLog(), Concurrency: 8})
	if err := worker.NewResolutionScheduler(rdb).ScheduleResolution(ctx, unheld, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.started:
	case <-time.After(patience(t)):
		t.Fatal("the resolution did not start")
	}
	if err := client.EnqueueSweep(ctx, shards); err != nil {
		t.Fatal(err)
	}
	waitSweepDone(t, mem, sw.ID, "beside a resolution waiting on its upstream")
}

// waitSweepDone waits for the sweep to be DONE, and fails the test, saying
// when (what), if it ends otherwise or is not by the test's patience.
func waitSweepDone(t *testing.T, st store.Store, id, what string) {
	t.Helper()
	deadline := time.Now().Add(patience(t))
	for {
		got, err := st.GetSweep(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.SweepDone {
			return
		}
		if got.Status.Final() || time.Now().After(deadline) {
			t.Fatalf("%s: sweep %s, %d of %d replays", what, got.Status, got.ReplaysDone, got.ReplaysTotal)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failingShardStore fails every store of a sweep's shard.
type failingShardStore struct{ store.Store }

func (failingShardStore) PutSweepShard(context.Context, string, string, int, []byte) (store.Sweep, error) {
	return store.Sweep{}, errors.New("the disk is full")
}

// TestShardFailingItsLastAttemptFailsTheSweep: a shard that fails its
// last attempt (here its only one) fails its sweep, with the market and
// the shard's error, where the sweep stayed RUNNING, holding one of its
// customer's sweeps in flight, once Asynq gave the shard up.
func TestShardFailingItsLastAttemptFailsTheSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: failingShardStore{mem}, Logger: quietLog(), Concurrency: 2})
	b, err := json.Marshal(shards[0])
	if err != nil {
		t.Fatal(err)
	}
	q := asynq.NewClientFromRedisClient(rdb)
	if _, err := q.EnqueueContext(ctx, asynq.NewTask(sweep.TaskType, b), asynq.Queue(jobs.QueueSweeps),
		asynq.TaskID(shards[0].Sweep+":"+shards[0].Market), asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	// The same task: it wakes the worker. The worker may have run it, and
	// Asynq archived it, already: the enqueue then says it was given up on.
	_ = client.EnqueueSweep(ctx, shards[:1])
	deadline := time.Now().Add(patience(t))
	for {
		got, err := mem.GetSweep(ctx, sw.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.SweepFailed {
			if !strings.Contains(got.Error, shards[0].Market) || !strings.Contains(got.Error, "the disk is full") {
				t.Errorf("sweep failed with %q; want the market and the shard's error", got.Error)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweep %s after its only shard failed its last attempt", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// panickingShardStore panics storing a sweep's shard: a bug, which a shard
// run again hits again.
type panickingShardStore struct{ store.Store }

func (panickingShardStore) PutSweepShard(context.Context, string, string, int, []byte) (store.Sweep, error) {
	panic("a bug storing the shard")
}

// TestShardPanickingFailsTheSweep: a shard that panics (a bug: it would
// panic on every try) fails its sweep at once, saying so without the
// panic's internals, and is not tried again. Asynq took the panic for an
// error worth a retry: the shard was tried 26 times over about two hours,
// the sweep RUNNING all the while, and after the last one (a panic skips
// the handler's look at its last attempt) it stayed RUNNING for good, its
// shard archived where the resumer could not queue it again.
func TestShardPanickingFailsTheSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: panickingShardStore{mem}, Logger: quietLog(), Concurrency: 2})
	if err := client.EnqueueSweep(ctx, shards[:1]); err != nil {
		t.Fatal(err)
	}
	// The shard's first try has ended once its task is no longer queued
	// nor running.
	insp := asynq.NewInspectorFromRedisClient(rdb)
	id := shards[0].Sweep + ":" + shards[0].Market
	deadline := time.Now().Add(patience(t))
	var state asynq.TaskState
	for {
		info, err := insp.GetTaskInfo(jobs.QueueSweeps, id)
		if err != nil {
			t.Fatal(err)
		}
		if state = info.State; state != asynq.TaskStatePending && state != asynq.TaskStateActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard's first try did not end: %s", state)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if state != asynq.TaskStateArchived {
		t.Errorf("the panicking shard is %s after its first try, want archived (not tried again)", state)
	}
	got, err := mem.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepFailed {
		t.Fatalf("sweep %s after its shard panicked, want FAILED", got.Status)
	}
	if !strings.Contains(got.Error, shards[0].Market) || !strings.Contains(got.Error, "internal error") || strings.Contains(got.Error, "a bug") {
		t.Errorf("sweep failed with %q; want its market and an internal error, not the panic's internals", got.Error)
	}
}

// corruptTapeStore answers every read of a market's books with an error
// a retry cannot mend: its stored data does not decode.
type corruptTapeStore struct{ store.Store }

func (corruptTapeStore) ReadTape(_ context.Context, slug, _ string) (*store.Tape, error) {
	return nil, fmt.Errorf("decode the books of %s: chunk 3 is corrupt", slug)
}

// downShardStore answers every store of a sweep's shard as a database out
// of reach does.
type downShardStore struct{ store.Store }

func (downShardStore) PutSweepShard(context.Context, string, string, int, []byte) (store.Sweep, error) {
	return store.Sweep{}, fmt.Errorf("put sweep shard: %w: connection refused", store.ErrUnavailable)
}

// firstTryOf waits for the first try of a sweep's shard to end (its task
// no longer queued nor running) and returns the state it left the task in.
func firstTryOf(t *testing.T, rdb redis.UniversalClient, sh sweep.ShardTask) asynq.TaskState {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(patience(t))
	for {
		info, err := insp.GetTaskInfo(jobs.QueueSweeps, sh.Sweep+":"+sh.Market)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != asynq.TaskStatePending && info.State != asynq.TaskStateActive {
			return info.State
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard's first try did not end: %s", info.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShardFailingForGoodFailsTheSweep: a shard whose error a retry
// cannot mend (its market's data does not decode) fails its sweep after
// its first try, naming the market and the error, and is not tried again.
// Only a store out of reach is worth the retries
// (TestShardOfADownStoreIsRetried). Every error was: the shard was tried
// 26 times over about two hours, the first retry 15 s or more after the
// failure, and the sweep sat RUNNING all the while, holding one of its
// customer's sweeps in flight, before it failed with the same error.
func TestShardFailingForGoodFailsTheSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: corruptTapeStore{mem}, Logger: quietLog(), Concurrency: 2, CacheBytes: -1})
	if err := client.EnqueueSweep(ctx, shards[:1]); err != nil {
		t.Fatal(err)
	}
	if state := firstTryOf(t, rdb, shards[0]); state != asynq.TaskStateArchived {
		t.Errorf("the shard is %s after its first try, want archived (not tried again)", state)
	}
	got, err := mem.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepFailed {
		t.Fatalf("sweep %s after its shard failed for good, want FAILED", got.Status)
	}
	if !strings.Contains(got.Error, shards[0].Market) || !strings.Contains(got.Error, "chunk 3 is corrupt") {
		t.Errorf("sweep failed with %q; want the market and the shard's error", got.Error)
	}
}

// TestShardOfADownStoreIsRetried: a shard whose database is out of reach
// is tried again later, its sweep RUNNING meanwhile: the outage may end.
func TestShardOfADownStoreIsRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	client := startWorker(t, worker.Config{Redis: rdb, Store: downShardStore{mem}, Logger: quietLog(), Concurrency: 2, CacheBytes: -1})
	if err := client.EnqueueSweep(ctx, shards[:1]); err != nil {
		t.Fatal(err)
	}
	if state := firstTryOf(t, rdb, shards[0]); state != asynq.TaskStateRetry {
		t.Errorf("the shard is %s after its first try, want retry", state)
	}
	if got, err := mem.GetSweep(ctx, sw.ID); err != nil || got.Status != store.SweepRunning {
		t.Errorf("sweep %s (%q), %v after its shard's store was out of reach once, want RUNNING", got.Status, got.Error, err)
	}
}
