package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// TestRedisSentinelFailover (issue 28, item 12): `updown api` and
// `updown worker` run on a Redis Sentinel group (REDIS_URL in the
// redis+sentinel:// form) under a replay load, and the primary is killed
// (SIGKILL). The sentinels promote the replica; the processes follow
// without a restart. Meanwhile:
//
//   - every request answers 200, or 503 SERVICE_UNAVAILABLE, or 504
//     JOB_TIMEOUT whose job GET /v1/jobs/{id} answers later: nothing else
//     (no 500, no 429 from a job slot or count gone astray, no hang);
//   - a session and a rate-limit count written before the kill (and
//     replicated: Redis replicates asynchronously, so what the primary had
//     not passed on when it died is Redis's documented failover window)
//     are there after it, the count neither lost nor doubled;
//   - the customer's job slots all come back once its jobs are done;
//   - service recovers within the failover time plus 5 s.
func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	updownBinary(t) // build before the clocks start
	began := time.Now()
	defer func() { t.Logf("the test took %s after the build", time.Since(began).Round(time.Millisecond)) }()
	dbURL := pgtest.NewDatabase(t)
	slug := seedMarkets(t, dbURL, store.M15)[store.M15]
	key := createKey(t, dbURL, "sentinel@example.com", store.Enterprise)
	proKey := createKey(t, dbURL, "sentinel-pro@example.com", store.Pro)
	g := redistest.StartSentinel(t, redistest.SentinelOptions{DownAfter: 500 * time.Millisecond, FailoverTimeout: 3 * time.Second})
	t.Logf("database seeded and Sentinel group up in %s", time.Since(began).Round(time.Millisecond))
	s := services{dbURL: dbURL, redisURL: g.URL, key: key}
	// The load runs as many replays at once as the customer's cap: a slot
	// that was not given back would show as a 429.
	const loaders, jobCap = 4, 4
	const monitoringToken = "sentinel-monitoring-token"
	apiProc, base := startAPI(t, s, "JOB_WAIT=5s", fmt.Sprintf("JOBS_IN_FLIGHT=ENTERPRISE=%d", jobCap),
		"MONITORING_ADMIN_TOKEN="+monitoringToken)
	workerProc := startWorker(t, s, "worker")
	t.Logf("api and worker up at %s", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A dashboard session of the PRO customer, and its daily count.
	cookie := signIn(t, base, proKey)
	probe := func() (session, list answer) {
		return getAs(base+"/v1/auth/session", "", cookie), getAs(base+"/v1/markets?coin=BTC&limit=1", proKey, "")
	}

	var rec recorder
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				a := do(nil, http.MethodPost, base+"/v1/replay", key, replayBody(slug, 1+i*2000+n%2000))
				rec.add(loadCall{what: "replay", start: start, end: time.Now(), a: a})
				switch {
				case a.status == http.StatusGatewayTimeout && a.code() == "JOB_TIMEOUT":
					// The job goes on, holding its slot: a client asks for
					// it before sending more, as it must at its cap.
					rec.job(jobID(a), awaitJob(ctx, base, key, jobID(a)))
				case a.status != http.StatusOK:
					time.Sleep(100 * time.Millisecond) // backing off, as a client would
				}
			}
		}()
	}
	// The probe: the session and the PRO customer's count, every 500 ms
	// (240 requests a minute, inside PRO's 300).
	probes := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			sess, list := probe()
			rec.add(loadCall{what: "session", start: start, end: time.Now(), a: sess})
			rec.add(loadCall{what: "list", start: start, end: time.Now(), a: list})
			rec.mu.Lock()
			probes++
			rec.mu.Unlock()
		}
	}()

	// Before the kill: the load runs, and what it wrote so far is on the replica.
	if !waitUntil(ctx, func() bool { return rec.count("replay", http.StatusOK) >= 8 }) {
		t.Fatalf("the load did not get going: %s", rec.summary())
	}
	rec.mu.Lock()
	probesBefore := probes
	rec.mu.Unlock()
	before := remaining(t, getAs(base+"/v1/markets?coin=BTC&limit=1", proKey, ""))
	if err := g.Sync(ctx); err != nil {
		t.Fatalf("sync the replica: %v", err)
	}

	killed := time.Now()
	old := g.KillPrimary(ctx)
	now, err := g.WaitFailover(ctx, old)
	if err != nil {
		t.Fatalf("the sentinels did not fail over: %v", err)
	}
	failover := time.Since(killed)
	t.Logf("primary %s killed; the sentinels promoted %s after %s", old, now, failover.Round(time.Millisecond))

	// The load goes on until it has run clean for 3 s, at most 30 s.
	bound := failover + 5*time.Second
	clean := 3 * time.Second
	waitUntil(ctx, func() bool {
		r, ok := rec.recoveredAt(killed)
		return ok && time.Since(r) > clean || time.Since(killed) > 30*time.Second
	})
	close(stop)
	wg.Wait()
	t.Logf("load stopped %s after the kill", time.Since(killed).Round(time.Millisecond))
	rec.mu.Lock()
	probesAfter := probes
	rec.mu.Unlock()

	recovered, ok := rec.recoveredAt(killed)
	if !ok {
		t.Fatalf("no recovery within 30 s of the kill: %s", rec.summary())
	}
	recovery := recovered.Sub(killed)
	t.Logf("%s; recovered %s after the kill (failover %s, bound %s); api on %s, worker on %s",
		rec.summary(), recovery.Round(time.Millisecond), failover.Round(time.Millisecond), bound.Round(time.Millisecond),
		g.URL, now)
	if recovery > bound {
		t.Errorf("service recovered %s after the kill; want within the failover (%s) plus 5 s", recovery.Round(time.Millisecond), failover.Round(time.Millisecond))
	}

	// Every answer was one a client can act on.
	for _, c := range rec.all() {
		if c.a.status != http.StatusOK {
			t.Logf("%s started %+.3fs, answered %+.3fs from the kill: %d %s", c.what, c.start.Sub(killed).Seconds(), c.end.Sub(killed).Seconds(), c.a.status, c.a.code())
		}
		switch {
		case c.a.status == http.StatusOK:
		case c.a.status == http.StatusServiceUnavailable && c.a.code() == "SERVICE_UNAVAILABLE":
		case c.what == "replay" && c.a.status == http.StatusGatewayTimeout && c.a.code() == "JOB_TIMEOUT":
		default:
			t.Errorf("%s at %+.3fs from the kill answered %v", c.what, c.start.Sub(killed).Seconds(), c.a)
		}
	}
	for id, a := range rec.jobs() {
		if a.status != http.StatusOK {
			t.Errorf("job %s of a 504 answered %v later; want 200 with its result", id, a)
		}
	}

	// The session and the count written before the kill survived it, the
	// count neither lost nor counted twice.
	sess, list := probe()
	if sess.status != http.StatusOK {
		t.Errorf("the session after the failover: %v", sess)
	}
	after := remaining(t, list)
	// The probes in between (a session read and a list each: both count),
	// and this one.
	sent := 2*int64(probesAfter-probesBefore) + 2
	t.Logf("PRO's X-RateLimit-Remaining: %d before the failover, %d after, %d requests sent in between", before, after, sent)
	if after >= before {
		t.Errorf("X-RateLimit-Remaining went from %d before the failover to %d after: counts were lost", before, after)
	}
	if before-after > sent {
		t.Errorf("X-RateLimit-Remaining went from %d to %d over %d requests: counted twice", before, after, sent)
	}

	// Every job slot came back: nothing is in flight any more.
	slots := g.Client(now)
	if !waitUntil(ctx, func() bool {
		keys, err := slots.Keys(ctx, "*:jobs").Result()
		if err != nil {
			return false
		}
		for _, k := range keys {
			if n, err := slots.ZCard(ctx, k).Result(); err != nil || n > 0 {
				return false
			}
		}
		return true
	}) {
		t.Errorf("job slots still held after the load: %v", slots.Keys(ctx, "*:jobs").Val())
	}

	// /monitoring (asynqmon, with clients of its own from Asynq's
	// RedisFailoverClientOpt) reads the queues on the new primary.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/monitoring/api/queues", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("ops", monitoringToken)
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("/monitoring after the failover: %v", err)
	} else {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"replay"`) {
			t.Errorf("/monitoring/api/queues after the failover: %s %.300s", res.Status, body)
		}
	}

	t.Logf("checks done %s after the kill", time.Since(killed).Round(time.Millisecond))
	for _, p := range []*proc{apiProc, workerProc} {
		if strings.Contains(p.out.String(), "panic") {
			t.Errorf("%s panicked:\n%s", p.name, lastN(p.out.String(), 3000))
		}
	}
}

// loadCall is one request of the load and its answer.
type loadCall struct {
	what       string
	start, end time.Time
	a          answer
}

// recorder keeps the load's calls and the later answers of its jobs.
type recorder struct {
	mu    sync.Mutex
	calls []loadCall
	later map[string]answer // job id → GET /v1/jobs/{id}'s final answer
}

func (r *recorder) add(c loadCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) job(id string, a answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.later == nil {
		r.later = map[string]answer{}
	}
	r.later[id] = a
}

func (r *recorder) all() []loadCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]loadCall(nil), r.calls...)
}

func (r *recorder) jobs() map[string]answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]answer{}
	for k, v := range r.later {
		m[k] = v
	}
	return m
}

func (r *recorder) count(what string, status int) int {
	n := 0
	for _, c := range r.all() {
		if c.what == what && c.a.status == status {
			n++
		}
	}
	return n
}

// recoveredAt is when service came back after t0: the end of the last
// failed answer, from which on every answer was 200; t0 when nothing
// failed after it. A 504 is judged by its job's later answer, not here,
// but until that answer is in ok is false, as it is until a replay has
// answered 200 since.
func (r *recorder) recoveredAt(t0 time.Time) (time.Time, bool) {
	calls := r.all()
	r.mu.Lock()
	later := r.later
	r.mu.Unlock()
	at := t0
	for _, c := range calls {
		end := c.end
		if c.a.status == http.StatusGatewayTimeout {
			if _, ok := later[jobID(c.a)]; !ok {
				return time.Time{}, false // still waiting for its job
			}
			continue // its job's answer is judged on its own
		}
		if c.a.status != http.StatusOK && end.After(at) {
			at = end
		}
	}
	for _, c := range calls {
		if c.what == "replay" && c.a.status == http.StatusOK && c.end.After(at) {
			return at, true
		}
	}
	return time.Time{}, false
}

// summary counts the calls by kind and answer.
func (r *recorder) summary() string {
	counts := map[string]int{}
	total := 0
	for _, c := range r.all() {
		k := c.what + " " + strconv.Itoa(c.a.status)
		if c.a.err != nil {
			k = c.what + " error"
		}
		if code := c.a.code(); code != "" {
			k += " " + code
		}
		counts[k]++
		total++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	return fmt.Sprintf("%d requests (%s), %d jobs of 504s fetched later", total, strings.Join(parts, ", "), len(r.jobs()))
}

// awaitJob asks GET /v1/jobs/{id} until it answers other than 202 (or 503,
// Redis failing over), at most 100 s: a task whose dequeue the failover
// cut (taken on the old primary, its answer lost) stays active until its
// lease (30 s) lapses and Asynq's recoverer, once a minute, runs it again.
func awaitJob(ctx context.Context, base, key, id string) answer {
	deadline := time.Now().Add(100 * time.Second)
	for {
		a := getAs(base+"/v1/jobs/"+id, key, "")
		if a.status != http.StatusAccepted && a.status != http.StatusServiceUnavailable || time.Now().After(deadline) || ctx.Err() != nil {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func jobID(a answer) string {
	details, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
	id, _ := details["job_id"].(string)
	return id
}

// signIn trades key for a dashboard session and returns its cookie.
func signIn(t *testing.T, base, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/auth/session", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "updown_session" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("sign in: %s, no session cookie", res.Status)
	return ""
}

// getAs is a GET with an API key or a session cookie.
func getAs(url, key, cookie string) answer {
	if cookie == "" {
		return do(nil, http.MethodGet, url, key, "")
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Cookie", cookie)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	a.raw, a.err = io.ReadAll(res.Body)
	if len(a.raw) > 0 && a.raw[0] == '{' {
		_ = json.Unmarshal(a.raw, &a.body)
	}
	return a
}

// remaining is an answer's X-RateLimit-Remaining.
func remaining(t *testing.T, a answer) int64 {
	t.Helper()
	n, err := strconv.ParseInt(a.header.Get("X-RateLimit-Remaining"), 10, 64)
	if a.status != http.StatusOK || err != nil {
		t.Fatalf("a PRO request's X-RateLimit-Remaining: %v (%v)", a, err)
	}
	return n
}

// waitUntil polls ok every 50 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, ok func() bool) bool {
	for !ok() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}
