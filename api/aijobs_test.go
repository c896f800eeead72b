package api_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestGenerateTimeoutKeepsGeneration: a /generate that outlasts the wait
// keeps its generation (the job goes on and its answer can be fetched), and
// GET /v1/jobs/{id} answers exactly what /generate would have. The
// generation takes 100 ms, so that it cannot finish within the wait on a
// busy machine either.
func TestGenerateTimeoutKeepsGeneration(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.generator = held
	})
	r := b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	release()
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if !strings.HasPrefix(id, "ai-") {
		t.Fatalf("job id %q", id)
	}
	if n := b.used(store.Pro); n != 1 {
		t.Errorf("used after a 504: %d, want 1 (the generation goes on)", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := b.get(store.Pro, "/v1/jobs/"+id)
		if got.status == http.StatusOK {
			var ans generateAnswer
			data(t, got, &ans)
			if ans.StrategyCode == "" || ans.GeneratedStrategy.Strategy.Side != "UP" || ans.Quota.Used != 1 {
				t.Fatalf("job answer is not /generate's: %s", got.body)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("generation job never answered")
}

// TestBearerRequestsAreRateLimited: the agent's endpoints count against
// the plan's limits like API-key requests, with the same headers and 429.
func TestBearerRequestsAreRateLimited(t *testing.T) {
	t.Parallel()
	st := memory.New()
	b := setup(t, func(o *setupOpts) { o.store = st }) // customers and keys
	// A server with a token secret and limits counted in a real Redis.
	srv, err := api.New(api.Config{Store: st, Logger: quiet(), Now: func() time.Time { return now },
		Redis: redistest.Client(t), RateLimits: map[store.Tier]api.RateLimit{store.Pro: {PerMinute: 2, PerDay: 100}},
		AI: api.AIConfig{TokenSecret: testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, srv)
	tokReq, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/auth/token", nil)
	tokReq.Header.Set("X-API-Key", b.keys[store.Pro])
	tok := send(t, tokReq) // the first counted request
	if tok.status != http.StatusOK {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	token := tok.json(t)["access_token"].(string)
	quota := func() response {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/backtest-ai/quota", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return send(t, req)
	}
	first := quota()
	if first.status != http.StatusOK || first.header.Get("X-Tier") != "PRO" || first.header.Get("X-RateLimit-Limit") != "100" {
		t.Fatalf("quota: %d, headers %v", first.status, first.header)
	}
	r := quota() // the third request this minute
	wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
}

// TestJobAnswersToItsBearerToken: after an agent request timed out, the
// bearer token that made it fetches the job (issue 16, item 15), as the
// customer's API key does; another customer's credentials do not, and a
// bad token is refused as the agent's endpoints refuse it.
func TestJobAnswersToItsBearerToken(t *testing.T) {
	t.Parallel()
	// A generation held until the 504: a quick one may finish between the
	// enqueue and the wait's first look, and be answered 200.
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) { o.jobWait, o.generator = time.Nanosecond, held })
	token := b.token(store.Pro)
	r := b.ai(http.MethodPost, "/v1/backtest-ai/generate", "Bearer "+token, `{"prompt":"buy UP when price_up drops below 0.3, exit above 0.7"}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	release()
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	var got response
	waitFor(t, "the generation answered by bearer token", func() bool {
		got = b.ai(http.MethodGet, "/v1/jobs/"+id, "Bearer "+token, "")
		return got.status != http.StatusAccepted
	})
	var ans generateAnswer
	data(t, got, &ans)
	if ans.StrategyCode == "" || got.header.Get("X-Tier") != "PRO" {
		t.Fatalf("job answer by bearer token: %s, headers %v", got.body, got.header)
	}
	if byKey := b.get(store.Pro, "/v1/jobs/"+id); byKey.status != http.StatusOK || string(byKey.body[:20]) != string(got.body[:20]) {
		t.Errorf("the owner's key: %d %s", byKey.status, byKey.body)
	}
	wantError(t, b.ai(http.MethodGet, "/v1/jobs/"+id, "Bearer "+b.token(store.Enterprise), ""), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantError(t, b.get(store.Enterprise, "/v1/jobs/"+id), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantError(t, b.ai(http.MethodGet, "/v1/jobs/"+id, "Bearer nope", ""), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, b.ai(http.MethodGet, "/v1/jobs/"+id, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

// heldGenerator is a generator whose generations wait until release is
// called (once or more).
func heldGenerator() (g slowGenerator, release func()) {
	gate := make(chan struct{})
	var once sync.Once
	return slowGenerator{gate: gate}, func() { once.Do(func() { close(gate) }) }
}

// slowGenerator answers after a delay: the builtin generator's strategy,
// or fails as a model that gave up would.
type slowGenerator struct {
	delay time.Duration
	fail  bool
	// gate, when set, holds every generation until it is closed, in place
	// of delay: a request's 504 is then certain on any machine.
	gate <-chan struct{}
	// started, when set, is told (without blocking) that a generation
	// began: a worker runs it.
	started chan<- struct{}
}

func (g slowGenerator) Generate(ctx context.Context, req strategy.Request) (strategy.Spec, error) {
	if g.started != nil {
		select {
		case g.started <- struct{}{}:
		default:
		}
	}
	var delay <-chan time.Time
	if g.gate == nil {
		delay = time.After(g.delay)
	}
	select {
	case <-g.gate:
	case <-delay:
	case <-ctx.Done():
		return strategy.Spec{}, ctx.Err()
	}
	if g.fail {
		return strategy.Spec{}, &strategy.Error{Code: strategy.CodeGenerationFailed, Message: "the model gave up"}
	}
	builtin, err := strategy.New(strategy.Config{Provider: strategy.ProviderBuiltin})
	if err != nil {
		return strategy.Spec{}, err
	}
	return builtin.Generate(ctx, req)
}

// hangUp sends /generate with the tier's token and goes away once a
// worker has begun the generation (started is told), which the caller
// holds until after: a fixed wait let a loaded machine hang up before
// the request had even been queued, so that nothing ran.
func (b *aiBundle) hangUp(tier store.Tier, body string, started <-chan struct{}) {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.t.Context())
	defer cancel()
	go func() {
		select {
		case <-started:
		case <-time.After(30 * time.Second): // the request then fails the test below
		}
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+"/v1/backtest-ai/generate", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.token(tier))
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		b.t.Fatalf("the request was answered (%d) before the client went away", res.StatusCode)
	}
}

// aiJobsDone waits until n generation tasks have finished.
func (b *aiBundle) aiJobsDone(n int) {
	b.t.Helper()
	insp := asynq.NewInspectorFromRedisClient(b.q.rdb)
	waitFor(b.t, fmt.Sprintf("%d generation(s) finished", n), func() bool {
		done, _ := insp.ListCompletedTasks(jobs.QueueAI)
		failed, _ := insp.ListArchivedTasks(jobs.QueueAI)
		return len(done)+len(failed) >= n
	})
}

// TestGenerationSpentWhenClientHangsUp (issue 16, item 3): a client that
// hangs up during /generate does not get its generation back while the job
// runs on; the generation is spent when it succeeds, and given back only
// when it fails.
func TestGenerationSpentWhenClientHangsUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail bool
		used int
	}{{"succeeds", false, 5}, {"fails", true, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gate, started := make(chan struct{}), make(chan struct{}, 1)
			b := aiSetup(t, func(o *aiOpts) { o.generator = slowGenerator{gate: gate, started: started, fail: tc.fail} })
			for range 4 { // one generation left of PRO's 5
				if _, err := b.store.ReserveAIGeneration(t.Context(), b.ids[store.Pro], now, 5); err != nil {
					t.Fatal(err)
				}
			}
			b.hangUp(store.Pro, `{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`, started)
			if n := b.used(store.Pro); n != 5 {
				t.Errorf("used while the generation runs on: %d, want 5 (its reservation held)", n)
			}
			close(gate)
			b.aiJobsDone(1)
			if tc.fail { // the request's watcher gives it back once it sees the outcome
				waitFor(t, "the failed generation given back", func() bool { return b.used(store.Pro) == tc.used })
			} else {
				time.Sleep(300 * time.Millisecond) // the watcher's poll sees the outcome
			}
			if n := b.used(store.Pro); n != tc.used {
				t.Fatalf("used after the generation %s: %d, want %d", tc.name, n, tc.used)
			}
			if tc.fail {
				return
			}
			r := b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy DOWN when price_down drops below 0.3, exit above 0.6"}`)
			wantError(t, r, http.StatusTooManyRequests, "BACKTEST_AI_QUOTA_EXCEEDED")
		})
	}
}

// TestStrategyGenerationTimeoutSaysBacktestDidNotRun: a /strategy whose
// generation outlasts the wait never starts its backtest, and its job
// answers the strategy alone (as /generate would): the 504 says so, and
// where to backtest it (/run, no quota), rather than let the customer
// wait on GET /v1/jobs/{id} for the backtest it asked for.
func TestStrategyGenerationTimeoutSaysBacktestDidNotRun(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.generator = held
	})
	r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	release()
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	msg, _ := e["message"].(string)
	if !strings.HasPrefix(id, "ai-") || !strings.Contains(msg, "the backtest did not start") || !strings.Contains(msg, "/v1/backtest-ai/run") {
		t.Errorf("job id %q, message %q", id, msg)
	}
}

// TestGenerateJobAnswersItsOwnQuota: GET /v1/jobs/{id} of a generation
// that outlasted its wait answers the quota that generation left, as
// /generate would have (DESIGN 7: the very body), not the quota at the
// time of the fetch: another generation spent since, or a fetch in the
// next month, made it answer a count its own request never had (used 2,
// or 0 with the next month's resets_at, for the month's first).
func TestGenerateJobAnswersItsOwnQuota(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.generator = held
	})
	var ids []string
	for _, prompt := range []string{"buy UP when price_up drops below 0.35, exit above 0.6", "buy DOWN when price_down drops below 0.3, exit above 0.6"} {
		e := wantError(t, b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"`+prompt+`"}`), http.StatusGatewayTimeout, "JOB_TIMEOUT")
		id, _ := e["details"].(map[string]any)["job_id"].(string)
		ids = append(ids, id)
	}
	release()
	fetch := func(id string) backtest.Quota {
		t.Helper()
		var got response
		waitFor(t, "generation job "+id+" answered", func() bool {
			got = b.get(store.Pro, "/v1/jobs/"+id)
			return got.status == http.StatusOK
		})
		var ans generateAnswer
		data(t, got, &ans)
		return ans.Quota
	}
	const resets = "2026-05-01T00:00:00.000Z"
	q := fetch(ids[0])
	remaining := -1
	if q.Remaining != nil {
		remaining = *q.Remaining
	}
	if q.Used != 1 || remaining != 4 || q.ResetsAt != resets {
		t.Errorf("the first generation's job answers quota used %d, remaining %d, resets_at %s; its request would have answered used 1, remaining 4, resets_at %s",
			q.Used, remaining, q.ResetsAt, resets)
	}
	b.clock.Advance(40 * 24 * time.Hour) // fetched again in June
	if q := fetch(ids[1]); q.Used != 2 || q.ResetsAt != resets {
		t.Errorf("the second generation's job, fetched the month after, answers quota used %d, resets_at %s; want used 2, resets_at %s", q.Used, q.ResetsAt, resets)
	}
}

// TestRunAtTheCapAnswersItsKeptReport: a customer at its cap of jobs in
// flight asking again for a /run whose job has finished, its report kept,
// gets that report, as a replay does (TestFinishedJobAnsweredAtTheCap's
// rule): giving it runs nothing, and a 429 concurrent_jobs told it to
// wait for a slot it does not need.
func TestRunAtTheCapAnswersItsKeptReport(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.read = func(st store.Store) store.Store { return slowStore{st, 300 * time.Millisecond} }
		o.capJobs = true
	})
	const run = `{"strategy_code":"side=UP entry: price_up < 0.5 exit: price_up > 0.55 size=10","marketCount":3}`
	e := wantError(t, b.post(store.Pro, "/v1/backtest-ai/run", run), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	var kept response
	waitFor(t, "the /run job answered", func() bool {
		kept = b.get(store.Pro, "/v1/jobs/"+id)
		return kept.status == http.StatusOK
	})

	// Its slot comes back as it ends (its watcher sees it done).
	slots := "updown:rl:{" + b.ids[store.Pro] + "}:jobs"
	for deadline := time.Now().Add(10 * time.Second); b.q.rdb.ZCard(t.Context(), slots).Val() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the /run job's slot never came back")
		}
	}
	// PRO's 4 slots, each held by another backtest, queued or running (a
	// 504's job keeps its slot until it ends).
	other := func(size int) string {
		return fmt.Sprintf(`{"strategy_code":"side=UP entry: price_up < 0.5 exit: price_up > 0.55 size=%d","marketCount":3}`, size)
	}
	for size := 11; size <= 14; size++ {
		wantError(t, b.post(store.Pro, "/v1/backtest-ai/run", other(size)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	}
	wantError(t, b.post(store.Pro, "/v1/backtest-ai/run", other(15)), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	r := b.post(store.Pro, "/v1/backtest-ai/run", run)
	if r.status != http.StatusOK {
		t.Fatalf("the /run asked again at the cap, its report kept: %d %s", r.status, r.body)
	}
	var got, want backtestAnswer
	data(t, r, &got)
	data(t, kept, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the /run asked again answers\n%+v\nwhere its job answered\n%+v", got, want)
	}
}

// TestRefusedPromptJobAnswersAsGenerate: a prompt the generator refuses,
// fetched by job id after its 504, is answered as /generate answers it:
// 400 VALIDATION_ERROR with details.field "prompt", the very answer
// (DESIGN 7), where the field was left out.
func TestRefusedPromptJobAnswersAsGenerate(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.generator = held
	})
	e := wantError(t, b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy UP when the RSI is under 30, sell above 70"}`),
		http.StatusGatewayTimeout, "JOB_TIMEOUT")
	release()
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	var got response
	waitFor(t, "the refused generation's job ended", func() bool {
		got = b.get(store.Pro, "/v1/jobs/"+id)
		return got.status != http.StatusAccepted
	})
	e = wantError(t, got, http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "prompt" {
		t.Errorf("the refused prompt's job answers details %v; /generate answers field prompt", e["details"])
	}
}

// TestJobDocumentsItsAnswers: GET /v1/jobs/{id} answers a finished job's
// failure as its request would have (a prompt the generator refused: 400;
// a generation that failed: 502), and its OpenAPI operation says so.
func TestJobDocumentsItsAnswers(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	openAPIDocument(t, &doc)
	responses := doc.Paths["/v1/jobs/{id}"]["get"].Responses
	for _, status := range []string{"200", "202", "400", "404", "500", "502", "503"} {
		if _, ok := responses[status]; !ok {
			t.Errorf("GET /v1/jobs/{id} does not document %s", status)
		}
	}
}

// parkedBacktests sends backtest jobs to a queue no worker serves and
// gives up waiting for them at once: a backtest the workers have not
// reached when its request answers 504.
type parkedBacktests struct{ api.JobRunner }

const parkedQueue = "parked"

func (p parkedBacktests) Run(ctx context.Context, j worker.Job, owner string, wait time.Duration) (jobs.Outcome, string, error) {
	if j.Type == backtest.TaskType {
		j.Queue, wait = parkedQueue, time.Nanosecond
	}
	return p.JobRunner.Run(ctx, j, owner, wait)
}

// TestStrategyBacktestFailingAfterTimeoutKeepsStrategy: a /strategy whose
// generation succeeded (and is spent) and whose backtest outlasted the
// wait (504 with the backtest's job id) and then failed (its tries
// exhausted, archived) still gives the customer the strategy they paid
// for: GET /v1/jobs/{id} answers the failure as /strategy answers a
// backtest that could not run, with details.generated_strategy,
// strategy_code and quota. It answered the bare failure, and the
// strategy was lost.
func TestStrategyBacktestFailingAfterTimeoutKeepsStrategy(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobs = func(r api.JobRunner) api.JobRunner { return parkedBacktests{r} }
	})
	r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if got := b.get(store.Pro, "/v1/jobs/"+id); got.status != http.StatusAccepted {
		t.Fatalf("the parked backtest's job: %d %s", got.status, got.body)
	}
	if err := asynq.NewInspectorFromRedisClient(b.q.rdb).ArchiveTask(parkedQueue, id); err != nil {
		t.Fatal(err)
	}
	e = wantError(t, b.get(store.Pro, "/v1/jobs/"+id), http.StatusInternalServerError, "INTERNAL_ERROR")
	d, _ := e["details"].(map[string]any)
	code, _ := d["strategy_code"].(string)
	const want = "coin=BTC type=15m side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET cooldown=30000"
	if code != want {
		t.Errorf("details.strategy_code %q, want %q; details %v", code, want, d)
	}
	gs, _ := d["generated_strategy"].(map[string]any)
	q, _ := d["quota"].(map[string]any)
	if gs["side"] != "UP" || gs["coin"] != "BTC" || q["used"] != float64(1) {
		t.Errorf("details.generated_strategy %v, quota %v", gs, q)
	}
	if n := b.used(store.Pro); n != 1 {
		t.Errorf("used %d, want 1", n)
	}
	// A /run's failed backtest answers as /run does: no strategy to keep.
	r = b.post(store.Pro, "/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.45 exit: price_up > 0.6 size=10"}`)
	id, _ = wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")["details"].(map[string]any)["job_id"].(string)
	if err := asynq.NewInspectorFromRedisClient(b.q.rdb).ArchiveTask(parkedQueue, id); err != nil {
		t.Fatal(err)
	}
	if d := wantError(t, b.get(store.Pro, "/v1/jobs/"+id), http.StatusInternalServerError, "INTERNAL_ERROR")["details"]; d != nil {
		t.Errorf("a /run's failed backtest answers details %v", d)
	}
}

// slowFirstTape makes the first read of each market's tape take delay:
// a backtest of one market then takes delay, however often it reads.
type slowFirstTape struct {
	store.Store
	delay time.Duration
	mu    *sync.Mutex
	read  map[string]bool
}

func (s slowFirstTape) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	s.mu.Lock()
	first := !s.read[slug]
	s.read[slug] = true
	s.mu.Unlock()
	if first {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.ReadTape(ctx, slug, outcome)
}

// TestStrategyWaitsJobWaitInAll: /strategy's generation and backtest wait
// JOB_WAIT together, as every other request waits for its job, and the
// backtest that outlasts what is left answers 504 with its job id, which
// leads to the whole answer. Each waited JOB_WAIT of its own: a /strategy
// whose generation and backtest each took most of it ran up to twice
// JOB_WAIT, past the timeouts clients and proxies keep just above it (the
// Python client's 90 s), which then lost the answer and the strategy the
// spent generation made, with no job id to fetch them by.
func TestStrategyWaitsJobWaitInAll(t *testing.T) {
	t.Parallel()
	// Either job alone is well within the wait, both are not.
	const wait, generation, backtest = 6 * time.Second, 3 * time.Second, 4 * time.Second
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = wait
		o.generator = slowGenerator{delay: generation}
		o.read = func(st store.Store) store.Store {
			return slowFirstTape{Store: st, delay: backtest, mu: &sync.Mutex{}, read: map[string]bool{}}
		}
	})
	r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6","marketCount":1}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if !strings.HasPrefix(id, "backtest-") {
		t.Fatalf("job id %q, want the backtest's; message %q", id, e["message"])
	}
	var got response
	waitFor(t, "the backtest's job answered", func() bool {
		got = b.get(store.Pro, "/v1/jobs/"+id)
		return got.status != http.StatusAccepted
	})
	var rep backtestAnswer
	data(t, got, &rep)
	if rep.StrategyCode == "" || len(rep.Results) != 1 || rep.Quota == nil || rep.Quota.Used != 1 {
		t.Errorf("the job answers %s", got.body)
	}
}

// TestStrategyBacktestTimeoutCarriesStrategy: a /strategy whose backtest
// outlasts the wait answers 504 with the backtest's job id and, in its
// details, the strategy the spent generation made (with its code and the
// quota), as a backtest that could not run does. The job id alone led to
// it only while the job was kept (minutes): a customer who came back
// later, or whose job was lost with Redis, had paid for a strategy no
// answer held any more.
func TestStrategyBacktestTimeoutCarriesStrategy(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobs = func(r api.JobRunner) api.JobRunner { return parkedBacktests{r} }
	})
	r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	d, _ := e["details"].(map[string]any)
	id, _ := d["job_id"].(string)
	code, _ := d["strategy_code"].(string)
	gs, _ := d["generated_strategy"].(map[string]any)
	q, _ := d["quota"].(map[string]any)
	const want = "coin=BTC type=15m side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET cooldown=30000"
	if !strings.HasPrefix(id, parkedQueue+"-") || code != want || gs["side"] != "UP" || q["used"] != float64(1) {
		t.Errorf("the 504's details: %v; want the backtest's job_id, strategy_code %q, the generated_strategy and quota", d, want)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, "GET /v1/jobs/"+id) || !strings.Contains(msg, "details.generated_strategy") {
		t.Errorf("message %q", msg)
	}
}

// TestGenerationKeptLongerThanOtherJobs: a generation that outlasted its
// request's wait (504) is paid for, and its answer is kept for the day,
// not only for the queue's retention of other jobs' answers (ten
// minutes): a customer who came back to GET /v1/jobs/{id} after those
// found 404, with the generation spent. Here the queue keeps answers
// for a second: a /run's, finished after the generation, is gone while
// the generation's still answers.
func TestGenerationKeptLongerThanOtherJobs(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = time.Nanosecond
		o.generator = held
		o.retention = time.Second
	})
	e := wantError(t, b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`),
		http.StatusGatewayTimeout, "JOB_TIMEOUT")
	release()
	gen, _ := e["details"].(map[string]any)["job_id"].(string)
	waitFor(t, "the generation answered", func() bool { return b.get(store.Pro, "/v1/jobs/"+gen).status == http.StatusOK })
	e = wantError(t, b.post(store.Pro, "/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.45 exit: price_up > 0.6 size=10","marketCount":2}`),
		http.StatusGatewayTimeout, "JOB_TIMEOUT")
	run, _ := e["details"].(map[string]any)["job_id"].(string)
	waitFor(t, "the /run answered", func() bool { return b.get(store.Pro, "/v1/jobs/"+run).status == http.StatusOK })
	waitFor(t, "the /run's answer expired", func() bool { return b.get(store.Pro, "/v1/jobs/"+run).status == http.StatusNotFound })
	got := b.get(store.Pro, "/v1/jobs/"+gen)
	var ans generateAnswer
	data(t, got, &ans)
	if ans.StrategyCode == "" || ans.Quota.Used != 1 {
		t.Errorf("the generation's job answers %s", got.body)
	}
}

// TestStrategyGoesOnWhenClientHangsUp: a client that hangs up while its
// /strategy generates does not stop the request, as it stops no job's wait
// (runJobThen): the generation it pays for is backtested as if the client
// had stayed. The backtest's job slot was taken on the ended request's
// context, which failed: the hang-up was logged as a Redis outage ("rate
// limiter unavailable") and answered 503, and the paid backtest never ran.
func TestStrategyGoesOnWhenClientHangsUp(t *testing.T) {
	t.Parallel()
	held, release := heldGenerator()
	logs := &logBuffer{}
	b := aiSetup(t, func(o *aiOpts) { o.generator, o.capJobs, o.logger = held, true, logs.logger() })
	token := b.token(store.Pro)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+"/v1/backtest-ai/strategy",
		strings.NewReader(`{"prompt":"buy UP when price_up drops below 0.45, exit above 0.55","marketCount":3}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			err = fmt.Errorf("answered %d before the client went away", res.StatusCode)
		} else {
			err = nil
		}
		answered <- err
	}()
	insp := asynq.NewInspectorFromRedisClient(b.q.rdb)
	waitFor(t, "the generation running", func() bool {
		active, _ := insp.ListActiveTasks(jobs.QueueAI)
		return len(active) == 1
	})
	cancel() // the client goes away while the model works
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	release()
	waitFor(t, "the request logged", func() bool { return strings.Contains(logs.String(), `route="POST /v1/backtest-ai/strategy"`) })
	out := logs.String()
	if strings.Contains(out, "rate limiter unavailable") {
		t.Errorf("a client's hang-up was logged as a Redis outage:\n%s", out)
	}
	if !strings.Contains(out, `route="POST /v1/backtest-ai/strategy" status=200`) {
		t.Errorf("the request was not carried through to its backtest:\n%s", out)
	}
	// Asynq marks a task completed a moment after its outcome is
	// announced, which the request answered on.
	waitFor(t, "the paid generation's backtest completed", func() bool {
		done, _ := insp.ListCompletedTasks(jobs.QueueBacktest)
		for _, d := range done {
			if d.Type == backtest.TaskType {
				return true
			}
		}
		return false
	})
	if n := b.used(store.Pro); n != 1 {
		t.Errorf("used %d, want 1", n)
	}
}
