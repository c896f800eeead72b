package api_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestJobsInFlightCap (issue 16, item 1; DESIGN 4): a PRO customer runs at
// most 4 jobs at once, counted across two api processes; the next is 429
// RATE_LIMIT_EXCEEDED with details.limit "concurrent_jobs" and
// Retry-After: 1; an identical request joins its job without counting
// twice; another customer is not held back; the slots come back when the
// jobs end.
func TestJobsInFlightCap(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	// Replays on the worker take about 400 ms: long enough to be in
	// flight together. Without the cache, each reads the slow store.
	q.runWorker(t, worker.Config{Store: slowStore{st, 400 * time.Millisecond}, Concurrency: 8, CacheBytes: -1})

	a := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, 10*time.Second, q.rdb })
	b := &bundle{t: t, store: st, keys: a.keys, ids: a.ids,
		srv: secondProcess(t, a, func(c *api.Config) { c.Redis, c.Jobs, c.JobWait = q.rdb, q.client, 10*time.Second })}
	slug, _ := snapshotMarket()
	body := func(size int) string { return replayBody(slug, func(m map[string]any) { m["positionSize"] = size }) }

	var wg sync.WaitGroup
	answers := make([]response, 4)
	for i := range 4 {
		via := a
		if i%2 == 1 {
			via = b
		}
		wg.Go(func() { answers[i] = via.replay(store.Pro, body(i+1)) })
	}
	slots := "updown:rl:{" + a.ids[store.Pro] + "}:jobs"
	deadline := time.Now().Add(5 * time.Second)
	for q.rdb.ZCard(t.Context(), slots).Val() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("4 replays never in flight together: %d slots", q.rdb.ZCard(t.Context(), slots).Val())
		}
		time.Sleep(2 * time.Millisecond)
	}

	for _, via := range []*bundle{a, b} {
		r := via.replay(store.Pro, body(5))
		e := wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
		wantLimitDetails(t, e, "concurrent_jobs")
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q, want 1", r.header.Get("Retry-After"))
		}
	}
	// The same request as one in flight joins it: no slot of its own.
	if r := b.replay(store.Pro, body(1)); r.status != http.StatusOK {
		t.Errorf("identical request beside its job: %d %s", r.status, r.body)
	}
	if r := a.replay(store.Enterprise, body(1)); r.status != http.StatusOK {
		t.Errorf("another customer while PRO is at its cap: %d %s", r.status, r.body)
	}
	wg.Wait()
	for i, r := range answers {
		if r.status != http.StatusOK {
			t.Errorf("replay %d: %d %s", i+1, r.status, r.body)
		}
	}
	if n := q.rdb.ZCard(t.Context(), slots).Val(); n != 0 {
		t.Errorf("%d slots still taken after every job ended", n)
	}
	if r := b.replay(store.Pro, body(5)); r.status != http.StatusOK {
		t.Errorf("after the jobs ended: %d %s", r.status, r.body)
	}
}

// oneJobSlot is an api process whose PRO customer runs one job at a time
// and waits 200 ms on it, beside a worker whose replays take 1.5 s: a
// replay outlasts its request and keeps the slot. body is a replay of the
// fixture's market with its position size.
func oneJobSlot(t *testing.T) (one *bundle, q *queue, body func(size int) string) {
	t.Helper()
	st := memory.New()
	loadFixtures(t, st)
	q = newQueue(t, st)
	q.runWorker(t, worker.Config{Store: slowStore{st, 1500 * time.Millisecond}, Concurrency: 4, CacheBytes: -1})
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, 200*time.Millisecond, q.rdb })
	srv := secondProcess(t, b, func(c *api.Config) {
		c.Redis, c.Jobs, c.JobWait = q.rdb, q.client, 200*time.Millisecond
		c.JobsInFlight = map[store.Tier]int{store.Pro: 1}
	})
	slug, _ := snapshotMarket()
	return &bundle{t: t, srv: srv, store: st, keys: b.keys, ids: b.ids}, q,
		func(size int) string { return replayBody(slug, func(m map[string]any) { m["positionSize"] = size }) }
}

// TestFinishedJobAnsweredAtTheCap: at its cap of jobs in flight, a
// customer asking again for a replay whose job has finished, its answer
// kept, gets that answer: giving it runs nothing. Another replay is still
// refused.
func TestFinishedJobAnsweredAtTheCap(t *testing.T) {
	t.Parallel()
	one, q, body := oneJobSlot(t)

	// The first replay finishes after its request's wait; its answer is kept.
	e := wantError(t, one.replay(store.Pro, body(1)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id := e["details"].(map[string]any)["job_id"].(string)
	var kept response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if kept = one.get(store.Pro, "/v1/jobs/"+id); kept.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job never finished")
		}
	}
	// Its slot comes back as it ends; a second replay holds it for 1.5 s.
	slots := "updown:rl:{" + one.ids[store.Pro] + "}:jobs"
	for deadline := time.Now().Add(30 * time.Second); q.rdb.ZCard(t.Context(), slots).Val() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first job's slot never came back")
		}
	}
	wantError(t, one.replay(store.Pro, body(2)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	if r := one.replay(store.Pro, body(1)); r.status != http.StatusOK || !bytes.Equal(r.body, kept.body) {
		t.Errorf("the finished replay asked again at the cap: %d %.200s; want its kept answer", r.status, r.body)
	}
	wantError(t, one.replay(store.Pro, body(3)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
}

// TestJobsInFlightAfterTimeout: a job that outlasts its request's wait
// (504) keeps its slot until it ends; Config.JobsInFlight sets the cap.
func TestJobsInFlightAfterTimeout(t *testing.T) {
	t.Parallel()
	one, _, body := oneJobSlot(t)

	e := wantError(t, one.replay(store.Pro, body(1)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id := e["details"].(map[string]any)["job_id"].(string)
	wantError(t, one.replay(store.Pro, body(2)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	deadline := time.Now().Add(10 * time.Second)
	for one.get(store.Pro, "/v1/jobs/"+id).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the job never finished")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The watcher gives the slot back within its poll.
	for {
		r := one.replay(store.Pro, body(3))
		if r.status != http.StatusTooManyRequests {
			if r.status != http.StatusGatewayTimeout {
				t.Errorf("after the job ended: %d %s", r.status, r.body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot never came back: %s", r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobsInFlightCapOutlastsTheLease (issue 28, item 4): with no worker
// to run them, jobs that outlast their request's wait stay queued, and
// keep their slots however long they wait: the cap still holds after the
// wait and several leases have passed (the customer's set used to expire
// one lease after the last take, however long its jobs waited). The set
// still expires on its own within a lease once nobody keeps it.
func TestJobsInFlightCapOutlastsTheLease(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // and no worker: every job stays queued
	// A lease long enough that a loaded machine's watcher renews it in
	// time (a 1 s lease lapsed under load, and the third job got a slot).
	const wait, lease = 200 * time.Millisecond, 3 * time.Second
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, wait, q.rdb })
	srv := secondProcess(t, b, func(c *api.Config) {
		c.Redis, c.Jobs, c.JobWait, c.JobSlotLease = q.rdb, q.client, wait, lease
		c.JobsInFlight = map[store.Tier]int{store.Pro: 2}
	})
	one := &bundle{t: t, srv: srv, store: st, keys: b.keys, ids: b.ids}
	slug, _ := snapshotMarket()
	body := func(size int) string { return replayBody(slug, func(m map[string]any) { m["positionSize"] = size }) }

	for size := 1; size <= 2; size++ {
		wantError(t, one.replay(store.Pro, body(size)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	}
	wantError(t, one.replay(store.Pro, body(3)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	// Well past the wait and the lease of the last take.
	time.Sleep(2 * (wait + lease))
	e := wantError(t, one.replay(store.Pro, body(3)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if d, _ := e["details"].(map[string]any); d["limit"] != "concurrent_jobs" {
		t.Errorf("details = %v, want limit concurrent_jobs", d)
	}
	slots := "updown:rl:{" + one.ids[store.Pro] + "}:jobs"
	if n := q.rdb.ZCard(t.Context(), slots).Val(); n != 2 {
		t.Errorf("%d slots, want the 2 queued jobs'", n)
	}
	// Kept, not kept forever: the set lapses within a lease unless its
	// watchers go on keeping it.
	if ttl := q.rdb.PTTL(t.Context(), slots).Val(); ttl <= 0 || ttl > lease {
		t.Errorf("the slots' set expires in %s, want within the lease (%s)", ttl, lease)
	}
}

// slotScripts counts the job-slot scripts a Redis client runs: evaluations
// whose first key is a customer's set of jobs in flight.
type slotScripts struct{ n atomic.Int32 }

func (h *slotScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slotScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *slotScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *slotScripts) count(cmd redis.Cmder) {
	args := cmd.Args()
	if name := strings.ToLower(cmd.Name()); (name == "evalsha" || name == "eval") && len(args) > 3 {
		if key, _ := args[3].(string); strings.HasSuffix(key, "}:jobs") {
			h.n.Add(1)
		}
	}
}

// TestReplayTakesItsSlotInOneRoundTrip (issue 27): a replay's cap on jobs
// in flight costs the one script that takes its slot. The job's id waits
// on the market's read, and a look at the cap before the take answered
// the same 429 a Redis round trip later.
func TestReplayTakesItsSlotInOneRoundTrip(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	rdb := redistest.ClientOf(t, q.url)
	var scripts slotScripts
	rdb.AddHook(&scripts)
	a := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, 10*time.Second, rdb })
	slug, _ := snapshotMarket()
	// Another customer's replay first: Redis then knows the script, whose
	// first run sends it whole after an EvalSha answered NOSCRIPT.
	if r := a.replay(store.Enterprise, replayBody(slug, nil)); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	scripts.n.Store(0)
	if r := a.replay(store.Pro, replayBody(slug, func(m map[string]any) { m["positionSize"] = 7 })); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if n := scripts.n.Load(); n != 1 {
		t.Errorf("a replay ran %d job-slot scripts, want 1 (the take)", n)
	}
	if n := rdb.ZCard(t.Context(), "updown:rl:{"+a.ids[store.Pro]+"}:jobs").Val(); n != 0 {
		t.Errorf("%d slots still taken after the replay", n)
	}
}

// slotWatchingStore reads a market only once the caller's job slot is
// taken, or a second has passed, and says which.
type slotWatchingStore struct {
	store.Store
	rdb       *redis.Client
	slots     string
	sawATaken atomic.Bool
}

func (s *slotWatchingStore) GetMarketSeries(ctx context.Context, slug string) (store.Market, store.SeriesCount, error) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.rdb.ZCard(ctx, s.slots).Val() > 0 {
			s.sawATaken.Store(true)
			break
		}
	}
	return store.GetMarketSeries(ctx, s.Store, slug)
}

// TestReplayTakesItsSlotWhileItReadsItsMarket (issue 27): a replay takes
// its job slot beside the read of its market, the Redis round trip
// hidden behind the store's, not after it; a replay the checks refuse
// gives its slot back.
func TestReplayTakesItsSlotWhileItReadsItsMarket(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	ws := &slotWatchingStore{Store: st, rdb: q.rdb}
	a := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = ws, q.client, 10*time.Second, q.rdb })
	ws.slots = "updown:rl:{" + a.ids[store.Pro] + "}:jobs"
	slug, _ := snapshotMarket()
	if r := a.replay(store.Pro, replayBody(slug, nil)); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if !ws.sawATaken.Load() {
		t.Error("the market was read before the replay's slot was taken")
	}
	r := a.replay(store.Pro, replayBody("btc-updown-15m-1", nil))
	wantError(t, r, http.StatusNotFound, "MARKET_NOT_FOUND")
	if n := q.rdb.ZCard(t.Context(), ws.slots).Val(); n != 0 {
		t.Errorf("%d slots taken after a replay and a refused one", n)
	}
}

// failingReads fails the market reads while fail is set, as a store
// whose connection broke, or a request whose client hung up, does.
type failingReads struct {
	store.Store
	fail atomic.Bool
}

func (s *failingReads) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if s.fail.Load() {
		return store.Market{}, errors.New("connection reset")
	}
	return s.Store.GetMarket(ctx, slug)
}

// TestRefusedReplayKeepsASharedSlot: a replay that outlasts its wait
// (504) keeps its slot while its job runs; the identical replay sent again
// finds that slot its own and, refused (its market read fails), must not
// give it back: the job still runs, so the cap still counts it.
func TestRefusedReplayKeepsASharedSlot(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.runWorker(t, worker.Config{Store: slowStore{st, 3 * time.Second}, Concurrency: 4, CacheBytes: -1})
	reads := &failingReads{Store: st}
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, 200*time.Millisecond, q.rdb })
	srv := secondProcess(t, b, func(c *api.Config) {
		c.Store, c.Redis, c.Jobs, c.JobWait = reads, q.rdb, q.client, 200*time.Millisecond
		c.JobsInFlight = map[store.Tier]int{store.Pro: 1}
	})
	one := &bundle{t: t, srv: srv, store: st, keys: b.keys, ids: b.ids}
	slug, _ := snapshotMarket()
	body := func(size int) string { return replayBody(slug, func(m map[string]any) { m["positionSize"] = size }) }

	wantError(t, one.replay(store.Pro, body(1)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	reads.fail.Store(true)
	if r := one.replay(store.Pro, body(1)); r.status < 500 {
		t.Fatalf("the identical replay with its market read failing: %d %s, want a 5xx", r.status, r.body)
	}
	reads.fail.Store(false)
	// The first job still runs (3 s): another replay finds the cap full.
	wantError(t, one.replay(store.Pro, body(2)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
}

// TestJobsNotStartedWhenTheCapCannotBeChecked: when the check of a
// customer's jobs in flight fails (here the api's Redis is unreachable
// while the queue still takes jobs, as when a burst makes the checks slow
// past Config.JobRedisTimeout), the job is refused with 503, which clients
// retry, and never enqueued: let through uncapped, every request of the
// burst started a job past the cap.
func TestJobsNotStartedWhenTheCapCannotBeChecked(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: a job that starts stays queued
	dead := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, q.client, 200*time.Millisecond, dead })
	slug, _ := snapshotMarket()
	for size := 1; size <= 3; size++ {
		r := b.replay(store.Pro, replayBody(slug, func(m map[string]any) { m["positionSize"] = size }))
		wantError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	}
	insp := asynq.NewInspectorFromRedisClient(q.rdb)
	if info, err := insp.GetQueueInfo(jobs.QueueReplay); err == nil && info.Size > 0 {
		t.Errorf("%d replay jobs were queued past an unchecked cap", info.Size)
	}
}

// reservations counts the AI generations reserved.
type reservations struct {
	store.Store
	n *atomic.Int32
}

func (r reservations) ReserveAIGeneration(ctx context.Context, customerID string, period time.Time, limit int) (int, error) {
	r.n.Add(1)
	return r.Store.ReserveAIGeneration(ctx, customerID, period, limit)
}

// TestGenerationAtTheJobCapTakesNoQuota: a generation refused for the
// customer's jobs in flight (429 concurrent_jobs) never reserves one of
// the month's generations. Reserving first held it for the moment the
// slot was refused: a concurrent request for the last generation was
// answered 429 BACKTEST_AI_QUOTA_EXCEEDED, whose Retry-After (the next
// month) a client honouring it waits out, though nothing was spent.
func TestGenerationAtTheJobCapTakesNoQuota(t *testing.T) {
	t.Parallel()
	one, q, body := oneJobSlot(t)
	var n atomic.Int32
	srv := secondProcess(t, one, func(c *api.Config) {
		c.Store = reservations{one.store, &n}
		c.Redis, c.Jobs, c.JobWait = q.rdb, q.client, 200*time.Millisecond
		c.JobsInFlight = map[store.Tier]int{store.Pro: 1}
		c.AI = api.AIConfig{TokenSecret: testSecret}
	})
	ai := &aiBundle{bundle: &bundle{t: t, srv: srv, store: one.store, keys: one.keys, ids: one.ids}}
	// A replay outlasts its request and holds PRO's one slot.
	wantError(t, one.replay(store.Pro, body(1)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	e := wantError(t, ai.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`),
		http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if d, _ := e["details"].(map[string]any); d["limit"] != "concurrent_jobs" {
		t.Fatalf("details %v, want limit concurrent_jobs", d)
	}
	if got := n.Load(); got != 0 {
		t.Errorf("a generation refused for its slot reserved %d of the quota", got)
	}
}

// TestJobCapOfOneSaysOneJob: a cap of one job in flight (JOBS_IN_FLIGHT
// PRO=1) is told as one job in the 429, where it read "at most 1
// replays, backtests or generations".
func TestJobCapOfOneSaysOneJob(t *testing.T) {
	t.Parallel()
	one, _, body := oneJobSlot(t)
	wantError(t, one.replay(store.Pro, body(1)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	e := wantError(t, one.replay(store.Pro, body(2)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "runs at most 1 replay, backtest or generation at once per customer") {
		t.Errorf("429 at a cap of one: %q", msg)
	}
}
