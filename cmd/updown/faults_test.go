package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// TestFaults runs `updown api` and `updown worker` as processes of the
// real binary on Postgres and Redis and breaks things under them: a worker
// killed mid-task, Redis restarted, Postgres gone, SIGTERM with work in
// flight. The subtests share one database (a 24hr market at the real
// 300 ms cadence, so a replay lasts long enough to interrupt) and each has
// a Redis and processes of its own.
func TestFaults(t *testing.T) {
	t.Parallel()
	updownBinary(t) // build before the clocks of the subtests start
	dbURL := pgtest.NewDatabase(t)
	start := time.Now()
	slugs := seedMarkets(t, dbURL, store.M15, store.H24)
	key := createKey(t, dbURL, "faults@example.com", store.Enterprise)
	proKey := createKey(t, dbURL, "faults-pro@example.com", store.Pro)
	t.Logf("seeded a 15m and a 24hr market in %s", time.Since(start).Round(time.Millisecond))
	fx := faultFixture{dbURL: dbURL, key: key, proKey: proKey, m15: slugs[store.M15], h24: slugs[store.H24]}

	t.Run("WorkerKilledMidReplay", func(t *testing.T) { t.Parallel(); fx.workerKilled(t) })
	t.Run("WorkerSIGTERMRequeues", func(t *testing.T) { t.Parallel(); fx.workerTerminated(t) })
	t.Run("APISIGTERMFinishesInFlight", func(t *testing.T) { t.Parallel(); fx.apiTerminated(t) })
	t.Run("APISIGTERMAnswersWaiting", func(t *testing.T) { t.Parallel(); fx.apiTerminatedWaiting(t) })
	t.Run("RedisRestarted", func(t *testing.T) { t.Parallel(); fx.redisRestarted(t) })
	t.Run("PostgresDown", func(t *testing.T) { t.Parallel(); fx.postgresDown(t) })
}

type faultFixture struct {
	dbURL, key string
	proKey     string // a PRO customer's key: rate-limited, with headers
	m15, h24   string // slugs
}

func (fx faultFixture) services(redisURL string) services {
	return services{dbURL: fx.dbURL, redisURL: redisURL, key: fx.key}
}

// activeReplay waits until a replay task runs on a worker and returns its id.
func activeReplay(t *testing.T, redisURL string) string {
	t.Helper()
	opt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if tasks, err := insp.ListActiveTasks(jobs.QueueReplay); err == nil && len(tasks) > 0 {
			return tasks[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no replay task became active within 20s")
	return ""
}

func redisClient(t *testing.T, redisURL string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// workerKilled: a worker SIGKILLed in the middle of a replay. The waiting
// request ends in a clean 504 JOB_TIMEOUT with the job id; Asynq recovers
// the orphaned task once its lease has lapsed, another worker runs it, and
// GET /v1/jobs/{id} answers the replay.
//
// Asynq's lease is 30 s and its recoverer takes tasks whose lease lapsed
// 30 s ago, checking when a server starts and then every minute. The test
// does not wait that minute: it moves the dead worker's lease into the
// past, as a minute of wall-clock time would, and starts a worker, whose
// recoverer runs at once.
func (fx faultFixture) workerKilled(t *testing.T) {
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	_, base := startAPI(t, s, "JOB_WAIT=3s")
	victim := startWorker(t, s, "worker-victim")

	res := make(chan answer, 1)
	go func() { res <- do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.h24, 11)) }()
	id := activeReplay(t, rd.URL)
	victim.signal(t, syscall.SIGKILL)
	_ = victim.wait(t, 5*time.Second)

	a := <-res
	if a.status != http.StatusGatewayTimeout || a.code() != "JOB_TIMEOUT" {
		t.Fatalf("replay whose worker died: %v", a)
	}
	details, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
	if details["job_id"] != id {
		t.Fatalf("504 names job %v; the task is %s", details["job_id"], id)
	}
	if a := do(nil, http.MethodGet, base+"/v1/jobs/"+id, fx.key, ""); a.status != http.StatusAccepted {
		t.Fatalf("job of a dead worker: %v", a)
	}

	// A minute passes for the lease: the dead worker's lease lapsed 61 s ago.
	rdb := redisClient(t, rd.URL)
	leaseKey := "asynq:{" + jobs.QueueReplay + "}:lease"
	if n, err := rdb.ZAddXX(context.Background(), leaseKey, redis.Z{Score: float64(time.Now().Add(-61 * time.Second).Unix()), Member: id}).Result(); err != nil {
		t.Fatalf("age the lease: %d %v", n, err)
	}
	recovered := time.Now()
	startWorker(t, s, "worker-rescuer")
	deadline := time.Now().Add(25 * time.Second)
	for {
		a := do(nil, http.MethodGet, base+"/v1/jobs/"+id, fx.key, "")
		if a.status == http.StatusOK {
			data, _ := a.body["data"].(map[string]any)
			if n, _ := data["total_snapshots"].(float64); n < 200_000 {
				t.Fatalf("recovered job's answer: %v", a)
			}
			t.Logf("job %s answered %s after its recovery started", id, time.Since(recovered).Round(time.Millisecond))
			return
		}
		if a.status != http.StatusAccepted || time.Now().After(deadline) {
			t.Fatalf("job after recovery: %v", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// workerTerminated: SIGTERM to a worker running a replay longer than its
// shutdown timeout returns the task to the queue; the worker exits cleanly
// and the next worker runs it, while the client, still waiting, gets 200.
// The timeout is 1 ms: a 24hr replay read from Postgres takes well under a
// second, even under the race detector.
func (fx faultFixture) workerTerminated(t *testing.T) {
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	_, base := startAPI(t, s, "JOB_WAIT=28s")
	leaving := startWorker(t, s, "worker-leaving", "--shutdown-timeout", "1ms")

	res := make(chan answer, 1)
	go func() { res <- do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.h24, 12)) }()
	activeReplay(t, rd.URL)
	leaving.signal(t, syscall.SIGTERM)
	if err := leaving.wait(t, 10*time.Second); err != nil {
		t.Fatalf("worker exit on SIGTERM: %v", err)
	}
	opt, _ := asynq.ParseRedisURI(rd.URL)
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	if q, err := insp.GetQueueInfo(jobs.QueueReplay); err != nil || q.Pending != 1 || q.Active != 0 {
		t.Fatalf("after the worker left, the replay queue is %+v (%v); want the task pending again", q, err)
	}
	startWorker(t, s, "worker-next")
	if a := <-res; a.status != http.StatusOK {
		t.Fatalf("replay across a worker's shutdown: %v", a)
	}
}

// apiTerminated: SIGTERM to the api while a slow replay is in flight: the
// request completes, then the process exits 0 and stops listening.
func (fx faultFixture) apiTerminated(t *testing.T) {
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	apiProc, base := startAPI(t, s, "JOB_WAIT=28s")
	startWorker(t, s, "worker")

	res := make(chan answer, 1)
	go func() { res <- do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.h24, 13)) }()
	activeReplay(t, rd.URL)
	apiProc.signal(t, syscall.SIGTERM)
	a := <-res
	if a.status != http.StatusOK {
		t.Fatalf("in-flight replay across the api's SIGTERM: %v", a)
	}
	if err := apiProc.wait(t, 10*time.Second); err != nil {
		t.Fatalf("api exit on SIGTERM: %v", err)
	}
	if a := do(nil, http.MethodGet, base+"/healthz", "", ""); a.err == nil {
		t.Fatalf("api still answers after it exited: %v", a)
	}
}

// within runs f and fails the test if it took longer than d: a dependency
// that is down must fail a request fast, not hang it.
func within(t *testing.T, d time.Duration, what string, f func() answer) answer {
	t.Helper()
	start := time.Now()
	a := f()
	if took := time.Since(start); took > d {
		t.Errorf("%s took %s with a dependency down; want under %s", what, took.Round(time.Millisecond), d)
	}
	return a
}

// eventually retries f until ok. It gives up after patience, a hang
// guard, not a budget: recovery must come at all, and a loaded machine (a
// CI running every package at once) may take far longer than a quiet one.
func eventually(t *testing.T, what string, f func() answer, ok func(answer) bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		a := f()
		if ok(a) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not recover (gave up after %s): last %v", what, patience, a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// redisRestarted: Redis goes away under an api and a worker and comes back
// empty on the same port. Meanwhile what needs Redis fails fast with 503;
// data reads keep working (the rate limiter counts them in each process
// alone); afterwards everything recovers without a restart.
func (fx faultFixture) redisRestarted(t *testing.T) {
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	apiProc, base := startAPI(t, s, "JOB_WAIT=20s")
	workerProc := startWorker(t, s, "worker")
	replay := func(size int) func() answer {
		return func() answer { return do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.m15, size)) }
	}
	list := func() answer { return do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&limit=2", fx.key, "") }
	ready := func() answer { return do(nil, http.MethodGet, base+"/readyz", "", "") }
	latest := func() answer { return do(nil, http.MethodGet, base+"/v1/btc/spot/latest", fx.key, "") }
	if a := replay(20)(); a.status != http.StatusOK {
		t.Fatalf("replay before the fault: %v", a)
	}

	rd.Stop()
	if a := within(t, 3*time.Second, "readyz", ready); a.status != http.StatusServiceUnavailable {
		t.Errorf("readyz with Redis down: %v", a)
	}
	for i, f := range []func() answer{replay(21), latest} {
		if a := within(t, 5*time.Second, "a request needing Redis", f); a.status != http.StatusServiceUnavailable || a.code() != "SERVICE_UNAVAILABLE" {
			t.Errorf("request %d with Redis down: %v; want 503 SERVICE_UNAVAILABLE", i, a)
		}
	}
	if a := within(t, 5*time.Second, "market list", list); a.status != http.StatusOK {
		t.Errorf("market list with Redis down: %v", a)
	}

	rd.Restart()
	okStatus := func(a answer) bool { return a.status == http.StatusOK }
	eventually(t, "readyz", ready, okStatus)
	eventually(t, "replay", replay(22), okStatus)
	// The limiter counts again: a PRO key's answers carry its headers.
	proList := func() answer { return do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&limit=2", fx.proKey, "") }
	eventually(t, "rate limiting", proList, func(a answer) bool {
		return a.status == http.StatusOK && a.header.Get("X-RateLimit-Remaining") != ""
	})
	for _, p := range []*proc{apiProc, workerProc} {
		if strings.Contains(p.out.String(), "panic") {
			t.Errorf("%s panicked:\n%s", p.name, lastN(p.out.String(), 3000))
		}
	}
}

// postgresDown: the api's database becomes unreachable (connections cut,
// new ones refused) and comes back. Meanwhile /readyz is 503 and requests
// answer 503 SERVICE_UNAVAILABLE in the envelope, fast; afterwards the api
// recovers without a restart.
func (fx faultFixture) postgresDown(t *testing.T) {
	u, err := url.Parse(fx.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.Addr
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	startWorker(t, s, "worker")
	s.dbURL = u.String()
	apiProc, base := startAPI(t, s, "JOB_WAIT=20s")

	list := func() answer { return do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&limit=2", fx.key, "") }
	snaps := func() answer {
		return do(nil, http.MethodGet, base+"/v1/markets/"+fx.m15+"/snapshots?limit=5", fx.key, "")
	}
	replay := func() answer { return do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.m15, 30)) }
	ready := func() answer { return do(nil, http.MethodGet, base+"/readyz", "", "") }
	if a := list(); a.status != http.StatusOK {
		t.Fatalf("list before the fault: %v", a)
	}

	proxy.Down()
	if a := within(t, 3*time.Second, "readyz", ready); a.status != http.StatusServiceUnavailable {
		t.Errorf("readyz with Postgres down: %v", a)
	}
	for i, f := range []func() answer{list, snaps, replay} {
		a := within(t, 6*time.Second, "a request needing Postgres", f)
		if a.status != http.StatusServiceUnavailable || a.code() != "SERVICE_UNAVAILABLE" || a.body["success"] != false {
			t.Errorf("request %d with Postgres down: %v; want 503 SERVICE_UNAVAILABLE in the envelope", i, a)
		}
		if strings.Contains(string(a.raw), "127.0.0.1") || strings.Contains(string(a.raw), "dial") {
			t.Errorf("request %d leaks internals: %s", i, a.raw)
		}
	}

	proxy.Up(t)
	okStatus := func(a answer) bool { return a.status == http.StatusOK }
	eventually(t, "list", list, okStatus)
	eventually(t, "readyz", ready, okStatus)
	if a := replay(); a.status != http.StatusOK {
		t.Errorf("replay after recovery: %v", a)
	}
	if strings.Contains(apiProc.out.String(), "panic") {
		t.Errorf("api panicked:\n%s", lastN(apiProc.out.String(), 3000))
	}
}

// apiTerminatedWaiting: SIGTERM to the api while a request waits on a job
// no worker runs. The request waits on for most of the api's grace
// period, then answers 504 JOB_TIMEOUT with the job's id (the job stays
// queued, fetchable by id), and the api exits 0: the request is not cut
// off with no answer when the grace period ends.
func (fx faultFixture) apiTerminatedWaiting(t *testing.T) {
	rd := redistest.Start(t)
	s := fx.services(rd.URL)
	apiProc, base := startAPI(t, s, "JOB_WAIT=5m")

	res := make(chan answer, 1)
	go func() { res <- do(nil, http.MethodPost, base+"/v1/replay", fx.key, replayBody(fx.m15, 17)) }()
	opt, err := asynq.ParseRedisURI(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	var id string
	for deadline := time.Now().Add(20 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if tasks, err := insp.ListPendingTasks(jobs.QueueReplay); err == nil && len(tasks) > 0 {
			id = tasks[0].ID
		}
	}
	if id == "" {
		t.Fatal("the replay was never queued")
	}
	apiProc.signal(t, syscall.SIGTERM)
	a := <-res
	if a.status != http.StatusGatewayTimeout || a.code() != "JOB_TIMEOUT" {
		t.Fatalf("a request waiting across the api's SIGTERM: %v", a)
	}
	if details, _ := a.body["error"].(map[string]any)["details"].(map[string]any); details["job_id"] != id {
		t.Fatalf("504 names job %v; the task is %s", details["job_id"], id)
	}
	if err := apiProc.wait(t, 10*time.Second); err != nil {
		t.Fatalf("api exit on SIGTERM: %v", err)
	}
}
