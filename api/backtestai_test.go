package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/strategy/openaitest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/worker"
)

// testSecret signs the bearer tokens of these tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef-test")

// clock is a settable clock for the server, so tokens can expire.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

type aiOpts struct {
	generator strategy.Generator
	jobWait   time.Duration
	// workers is the number of worker servers (default 1; 0 with
	// noWorkers).
	workers   int
	noWorkers bool
	// read wraps the store the workers replay from (to slow it down).
	read     func(store.Store) store.Store
	ttl      time.Duration
	secret   []byte
	btTimout time.Duration
	// jobs wraps the api's job runner.
	jobs func(api.JobRunner) api.JobRunner
	// capJobs caps the customers' jobs in flight (their plans' caps) on
	// the queue's Redis.
	capJobs bool
	// retention, when set, is how long the api's queue client keeps
	// finished jobs (worker.ClientConfig.Retention).
	retention time.Duration
	// logger, when set, takes the api's logs (else they are discarded).
	logger *slog.Logger
}

// aiBundle is a server with the agent configured, generated markets, real
// workers on a throwaway Redis, and one customer (with key) per tier.
type aiBundle struct {
	*bundle
	q     *queue
	clock *clock
}

func aiSetup(t *testing.T, opts ...func(*aiOpts)) *aiBundle {
	t.Helper()
	o := aiOpts{jobWait: 30 * time.Second, workers: 1, secret: testSecret}
	for _, f := range opts {
		f(&o)
	}
	st := memory.New()
	seedBacktestData(t, st)
	q := newQueue(t, st)
	if !o.noWorkers {
		for range o.workers {
			startAIWorker(t, q, st, o)
		}
	}
	clk := newClock(now)
	var runner api.JobRunner = q.client
	if o.retention != 0 {
		c, err := worker.NewClient(t.Context(), worker.ClientConfig{Redis: q.rdb, Logger: quiet(), Retention: o.retention})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		runner = c
	}
	if o.jobs != nil {
		runner = o.jobs(runner)
	}
	logger := o.logger
	if logger == nil {
		logger = quiet()
	}
	cfg := api.Config{
		Store: st, Logger: logger, Now: clk.Now, Jobs: runner, JobWait: o.jobWait,
		AI: api.AIConfig{TokenSecret: o.secret, TokenTTL: o.ttl, BacktestTimeout: o.btTimout},
	}
	if o.capJobs {
		cfg.Redis = q.rdb
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, store: st, keys: map[store.Tier]string{}, ids: map[store.Tier]string{}}
	b.srv = httptestServer(t, srv)
	for _, tier := range store.Tiers {
		c, err := st.CreateCustomer(t.Context(), store.Customer{Email: strings.ToLower(string(tier)) + "@ai.example", Tier: tier})
		if err != nil {
			t.Fatal(err)
		}
		plain, k := api.NewKey(c.ID)
		if _, err := st.CreateAPIKey(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		b.keys[tier], b.ids[tier] = plain, c.ID
	}
	return &aiBundle{bundle: b, q: q, clock: clk}
}

func startAIWorker(t *testing.T, q *queue, st store.Store, o aiOpts) {
	t.Helper()
	read := st
	if o.read != nil {
		read = o.read(st)
	}
	q.runWorker(t, worker.Config{Store: read, Concurrency: 2,
		Backtest: worker.BacktestConfig{Generator: o.generator, PollInterval: 50 * time.Millisecond}})
}

// seedBacktestData writes generated BTC and ETH markets ending at now: 14
// of 15m and 3 of 5m per coin, 120 snapshots each with 4-level books. The
// generator's collector outage about two hours before now leaves the 15m
// markets in it resolved without snapshots (NO_DATA), among the newest ten
// (noDataSlug).
func seedBacktestData(t testing.TB, st store.Store) {
	t.Helper()
	cfg := gen.DefaultConfig(now)
	cfg.Coins = gen.DefaultCoins()[:2]
	cfg.Markets = map[store.MarketType]int{store.M5: 3, store.M15: 14}
	cfg.MaxSnapshotsPerMarket = 120
	cfg.BookLevels = 4
	cfg.DepthHistory = 0
	if _, err := gen.Seed(context.Background(), cfg, st); err != nil {
		t.Fatal(err)
	}
}

// noDataSlug is the BTC 15m market inside the outage.
func noDataSlug() string {
	g, err := gen.New(gen.DefaultConfig(now))
	if err != nil {
		panic(err) // the default config is valid (package gen's tests)
	}
	from, _, _ := g.Outage()
	return gen.Slug(store.BTC, store.M15, from)
}

func httptestServer(t testing.TB, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func send(t testing.TB, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// token trades the tier's key for a bearer token.
func (b *aiBundle) token(tier store.Tier) string {
	b.t.Helper()
	r := b.do(http.MethodPost, "/v1/auth/token", b.keys[tier], "", "")
	if r.status != http.StatusOK {
		b.t.Fatalf("token for %s: %d %s", tier, r.status, r.body)
	}
	var tb struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(r.body, &tb); err != nil || tb.AccessToken == "" {
		b.t.Fatalf("token body: %v %s", err, r.body)
	}
	return tb.AccessToken
}

// ai sends a request with Authorization: <auth> (empty: none).
func (b *aiBundle) ai(method, path, auth, body string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(b.t, req)
}

// post sends a JSON body with the tier's bearer token.
func (b *aiBundle) post(tier store.Tier, path, body string) response {
	b.t.Helper()
	return b.ai(http.MethodPost, path, "Bearer "+b.token(tier), body)
}

// data decodes the data of a successful answer into v.
func data(t *testing.T, r response, v any) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var env struct {
		Success   bool            `json:"success"`
		Data      json.RawMessage `json:"data"`
		Timestamp string          `json:"timestamp"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || !env.Success || env.Timestamp == "" {
		t.Fatalf("envelope: %v %s", err, r.body)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("data: %v %s", err, env.Data)
	}
}

type generateAnswer struct {
	GeneratedStrategy strategy.Spec  `json:"generated_strategy"`
	StrategyCode      string         `json:"strategy_code"`
	Quota             backtest.Quota `json:"quota"`
}

type backtestAnswer = backtest.Report

// directReport is the report of req computed without HTTP or a queue.
func directReport(t *testing.T, st store.Store, req backtest.Request) backtest.Report {
	t.Helper()
	rep, err := backtest.Direct(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// newestResolved lists the slugs of the newest n resolved markets.
func newestResolved(t *testing.T, st store.Store, c store.Coin, mt store.MarketType, n int) []string {
	t.Helper()
	resolved := true
	ms, _, err := st.ListMarkets(t.Context(), store.MarketFilter{Coin: c, MarketType: mt, Resolved: &resolved, Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Slug)
	}
	return out
}

func (b *aiBundle) used(tier store.Tier) int {
	b.t.Helper()
	n, err := b.store.AIGenerationsUsed(b.t.Context(), b.ids[tier], time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

func TestBacktestAIPlans(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	body := `{"prompt":"buy UP below 0.4, exit above 0.6"}`
	for _, tier := range []store.Tier{store.Starter, store.ProTrial, store.Suite} {
		tok := "Bearer " + b.token(tier)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPost, "/v1/backtest-ai/generate", body},
			{http.MethodPost, "/v1/backtest-ai/strategy", body},
			{http.MethodPost, "/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1"}`},
			{http.MethodGet, "/v1/backtest-ai/quota", ""},
		} {
			e := wantError(t, b.ai(c.method, c.path, tok, c.body), http.StatusForbidden, "BACKTEST_AI_REQUIRED")
			d, _ := e["details"].(map[string]any)
			if d["required_tier"] != "PRO" || d["current_tier"] != string(tier) || d["upgrade_url"] != "/v1/account/billing" {
				t.Errorf("%s %s: details %v", tier, c.path, d)
			}
		}
	}
	if b.used(store.Starter) != 0 {
		t.Error("a refused request used quota")
	}
}

func TestBacktestAIQuota(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	var q map[string]any
	data(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", "Bearer "+b.token(store.Pro), ""), &q)
	want := map[string]any{"used": 0.0, "limit": 5.0, "remaining": 5.0, "resets_at": "2026-05-01T00:00:00.000Z"}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("PRO quota %v, want %v", q, want)
	}
	for range 3 {
		if _, err := b.store.ReserveAIGeneration(t.Context(), b.ids[store.Enterprise], time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), -1); err != nil {
			t.Fatal(err)
		}
	}
	data(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", "Bearer "+b.token(store.Enterprise), ""), &q)
	want = map[string]any{"used": 3.0, "limit": nil, "remaining": nil, "resets_at": "2026-05-01T00:00:00.000Z"}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("ENTERPRISE quota %v, want %v", q, want)
	}
}

// TestGenerateRejectsBeforeQueueing: bad bodies answer 400 with the code
// and field, before any quota is used or anything is queued.
func TestGenerateRejectsBeforeQueueing(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	tok := "Bearer " + b.token(store.Pro)
	cases := []struct{ body, code, field string }{
		{`{}`, "VALIDATION_ERROR", "prompt"},
		{`{"prompt":"   "}`, "VALIDATION_ERROR", "prompt"},
		{`{"prompt":` + strconvQuote(strings.Repeat("a", 2001)) + `}`, "VALIDATION_ERROR", "prompt"},
		{`{"prompt":1}`, "VALIDATION_ERROR", "prompt"},
		{`{"prompt":"x","preset":"moon"}`, "VALIDATION_ERROR", "preset"},
		{`{"prompt":"x","coin":"DOGE"}`, "VALIDATION_ERROR", "coin"},
		{`{"prompt":"x","marketType":"2h"}`, "VALIDATION_ERROR", "marketType"},
		{`{"prompt":"x","coin":"SOL","marketType":"24h"}`, "VALIDATION_ERROR", "marketType"},
		{`{"prompt":"x","marketCount":0}`, "VALIDATION_ERROR", "marketCount"},
		{`{"prompt":"x","marketCount":101}`, "VALIDATION_ERROR", "marketCount"},
		{`{"prompt":"x","marketCount":2.5}`, "VALIDATION_ERROR", "marketCount"},
		{`{"prompt":"x","positionSize":0}`, "VALIDATION_ERROR", "positionSize"},
		{`{"prompt":"x","positionSize":10001}`, "VALIDATION_ERROR", "positionSize"},
		{`{"prompt":"x","positionSize":"10"}`, "VALIDATION_ERROR", "positionSize"},
		{`{"prompt":"x","maxLossPercent":0}`, "VALIDATION_ERROR", "maxLossPercent"},
		{`{"prompt":"x","maxLossPercent":101}`, "VALIDATION_ERROR", "maxLossPercent"},
		{`{"prompt":"x","orderType":"STOP"}`, "INVALID_ORDER_TYPE", "orderType"},
		{`{"prompt":"x","orderType":7}`, "INVALID_ORDER_TYPE", "orderType"},
		{`{"prompt":"","orderType":"limit"}`, "INVALID_ORDER_TYPE", "orderType"},
	}
	for _, path := range []string{"/v1/backtest-ai/generate", "/v1/backtest-ai/strategy"} {
		for _, tc := range cases {
			e := wantError(t, b.ai(http.MethodPost, path, tok, tc.body), http.StatusBadRequest, tc.code)
			if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
				t.Errorf("%s %.60s: details %v, want field %s", path, tc.body, d, tc.field)
			}
		}
		wantError(t, b.ai(http.MethodPost, path, tok, `{"prompt":`), http.StatusBadRequest, "VALIDATION_ERROR")
		wantError(t, b.ai(http.MethodPost, path, tok, ""), http.StatusBadRequest, "VALIDATION_ERROR")
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set("Authorization", tok)
		req.Header.Set("Content-Type", "text/plain")
		wantError(t, send(t, req), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	}
	if n := b.used(store.Pro); n != 0 {
		t.Errorf("rejected requests used %d generations", n)
	}
	if qs, _ := asynq.NewInspectorFromRedisClient(b.q.rdb).Queues(); len(qs) != 0 {
		t.Errorf("rejected requests reached the queue: %v", qs)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestGenerateBuiltin: presets and phrases through HTTP with the built-in
// generator; each success uses one generation, and the strategy code
// reads back as the generated strategy.
func TestGenerateBuiltin(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Pro)
	cases := []struct{ body, code string }{
		{`{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6 or with 20% left"}`,
			"coin=BTC type=15m side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_pct <= 20 size=100 maxloss=50 order=MARKET cooldown=30000"},
		{`{"prompt":"dip buyer","preset":"dip_buying","coin":"eth","marketType":"1h","positionSize":250,"orderType":"LIMIT"}`,
			"coin=ETH type=1hr side=UP entry: price_up crosses_below 0.4 and time_remaining_pct > 30 exit: price_up >= 0.55 or price_up <= 0.25 size=250 maxloss=30 order=LIMIT cooldown=30000"},
		{`{"prompt":"buy DOWN when price_down is under 0.3, take profit at 0.5, stop loss of 40%","maxLossPercent":15}`,
			"coin=BTC type=15m side=DOWN entry: price_down < 0.3 exit: price_down >= 0.5 size=100 maxloss=15 order=MARKET cooldown=30000"},
	}
	for i, tc := range cases {
		var g generateAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, tc.body), &g)
		if g.StrategyCode != tc.code {
			t.Errorf("%s:\n code %s\n want %s", tc.body, g.StrategyCode, tc.code)
		}
		rules, err := strategy.ParseCode(g.StrategyCode)
		if nErr := g.GeneratedStrategy.Normalize(); nErr != nil {
			t.Fatal(nErr)
		}
		if err != nil || !reflect.DeepEqual(rules, g.GeneratedStrategy.Rules) {
			t.Errorf("strategy_code does not read back as generated_strategy: %v\n%+v\n%+v", err, rules, g.GeneratedStrategy.Rules)
		}
		if g.GeneratedStrategy.Explanation == "" {
			t.Error("no explanation")
		}
		if g.Quota.Used != i+1 || *g.Quota.Remaining != 5-(i+1) || *g.Quota.Limit != 5 {
			t.Errorf("quota after %d: %+v", i+1, g.Quota)
		}
	}
	// A prompt the built-in generator cannot read: 400 on the prompt, and
	// the generation is given back.
	e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, `{"prompt":"buy UP when the RSI is under 30, sell above 70"}`),
		http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "prompt" || !strings.Contains(e["message"].(string), "rsi") {
		t.Errorf("refused prompt: %v", e)
	}
	if n := b.used(store.Pro); n != len(cases) {
		t.Errorf("used %d, want %d", n, len(cases))
	}
}

func TestGenerateQuotaExceeded(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	for range 5 {
		if _, err := b.store.ReserveAIGeneration(t.Context(), b.ids[store.Pro], time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 5); err != nil {
			t.Fatal(err)
		}
	}
	tok := "Bearer " + b.token(store.Pro)
	for _, path := range []string{"/v1/backtest-ai/generate", "/v1/backtest-ai/strategy"} {
		r := b.ai(http.MethodPost, path, tok, `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
		e := wantError(t, r, http.StatusTooManyRequests, "BACKTEST_AI_QUOTA_EXCEEDED")
		d, _ := e["details"].(map[string]any)
		if d["used"] != 5.0 || d["limit"] != 5.0 || d["resets_at"] != "2026-05-01T00:00:00.000Z" {
			t.Errorf("details %v", d)
		}
		// now is 2026-04-29T13:07:30Z: 1 day, 10 h, 52 min, 30 s to May.
		if got := r.header.Get("Retry-After"); got != "125550" {
			t.Errorf("Retry-After %q", got)
		}
	}
	// /run does not use the quota.
	r := b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1","marketCount":2}`)
	if r.status != http.StatusOK {
		t.Errorf("/run with the quota spent: %d %s", r.status, r.body)
	}
	// ... and answers it, unchanged (issue 16, item 11).
	var rep backtestAnswer
	data(t, r, &rep)
	if q := rep.Quota; q == nil || q.Used != 5 || q.Limit == nil || *q.Limit != 5 || q.Remaining == nil || *q.Remaining != 0 {
		t.Errorf("/run quota %+v", q)
	}
}

// TestEnterpriseOwnAIQuota: ENTERPRISE's generations are unlimited unless
// the customer has a quota of its own (`customers set-limits
// --ai-generations`, DESIGN 4), which holds as PRO's does.
func TestEnterpriseOwnAIQuota(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	if _, err := b.store.SetCustomerLimits(t.Context(), b.ids[store.Enterprise], store.Limits{AIGenerationsPerMonth: 2}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := b.store.ReserveAIGeneration(t.Context(), b.ids[store.Enterprise], time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 2); err != nil {
			t.Fatal(err)
		}
	}
	tok := "Bearer " + b.token(store.Enterprise)
	var q map[string]any
	data(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", tok, ""), &q)
	if want := (map[string]any{"used": 2.0, "limit": 2.0, "remaining": 0.0, "resets_at": "2026-05-01T00:00:00.000Z"}); !reflect.DeepEqual(q, want) {
		t.Errorf("ENTERPRISE quota of its own %v, want %v", q, want)
	}
	r := b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
	if d, _ := wantError(t, r, http.StatusTooManyRequests, "BACKTEST_AI_QUOTA_EXCEEDED")["details"].(map[string]any); d["limit"] != 2.0 {
		t.Errorf("details %v", d)
	}
}

// TestGenerateQuotaConcurrent: 20 requests at once against one remaining
// generation spend exactly one.
func TestGenerateQuotaConcurrent(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	for range 4 {
		if _, err := b.store.ReserveAIGeneration(t.Context(), b.ids[store.Pro], time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 5); err != nil {
			t.Fatal(err)
		}
	}
	tok := "Bearer " + b.token(store.Pro)
	var wg sync.WaitGroup
	var ok, limited atomic.Int32
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Different prompts: no two requests share a generation task.
			body := fmt.Sprintf(`{"prompt":"buy UP below 0.%02d, exit above 0.6"}`, 10+i)
			r := b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, body)
			switch r.status {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			default:
				t.Errorf("%d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || limited.Load() != 19 || b.used(store.Pro) != 5 {
		t.Errorf("%d answered, %d limited, %d used; want 1, 19, 5", ok.Load(), limited.Load(), b.used(store.Pro))
	}
}

// TestGenerateOpenAI: the model path through HTTP, against the fake
// server: failures are 502 and give the generation back.
func TestGenerateOpenAI(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t)
	b := aiSetup(t, func(o *aiOpts) {
		// Long enough for two answers (a repair) on a busy machine: the
		// "timeout" case's model answers far later still.
		o.generator = strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: fake.URL, Model: "m", Timeout: 3 * time.Second})
	})
	tok := "Bearer " + b.token(store.Pro)
	answer := map[string]any{
		"side": "DOWN", "positionSize": 10, "maxLossPercent": 30, "orderType": "MARKET", "explanation": "Fades UP.",
		"entryConditions": []map[string]any{{"field": "price_down", "operator": "<", "value": 0.4}},
		"exitConditions":  []map[string]any{{"field": "price_down", "operator": ">", "value": 0.6}},
	}
	bad := map[string]any{}
	for k, v := range answer {
		bad[k] = v
	}
	bad["orderType"] = "FOK"
	cases := []struct {
		name    string
		answers []openaitest.Answer
		status  int
	}{
		{"good", []openaitest.Answer{openaitest.JSON(answer)}, http.StatusOK},
		{"repaired", []openaitest.Answer{openaitest.JSON(bad), openaitest.JSON(answer)}, http.StatusOK},
		{"invalid twice", []openaitest.Answer{openaitest.Content("not json"), openaitest.JSON(bad)}, http.StatusBadGateway},
		{"provider error", []openaitest.Answer{openaitest.Error(http.StatusServiceUnavailable, "overloaded")}, http.StatusBadGateway},
		{"timeout", []openaitest.Answer{openaitest.Slow(time.Minute, openaitest.JSON(answer))}, http.StatusBadGateway},
	}
	success := 0
	for i, tc := range cases {
		fake.Push(tc.answers...)
		body := fmt.Sprintf(`{"prompt":"fade the UP side, case %d","positionSize":12}`, i)
		r := b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, body)
		if tc.status != http.StatusOK {
			wantError(t, r, tc.status, "AI_STRATEGY_GENERATION_FAILED")
			continue
		}
		success++
		var g generateAnswer
		data(t, r, &g)
		// The answer has no cooldown: a generated strategy's default applies.
		want := "coin=BTC type=15m side=DOWN entry: price_down < 0.4 exit: price_down > 0.6 size=12 maxloss=30 order=MARKET cooldown=30000"
		if g.StrategyCode != want || g.GeneratedStrategy.Explanation != "Fades UP." || g.Quota.Used != success {
			t.Errorf("%s: %s %q %+v", tc.name, g.StrategyCode, g.GeneratedStrategy.Explanation, g.Quota)
		}
	}
	if n := b.used(store.Pro); n != success {
		t.Errorf("used %d generations for %d successes", n, success)
	}
}

// TestGenerateSamePromptAgain: a prompt sent again is generated again and
// spends one generation each time: the quota counts generations the
// model made, never a finished one answered again (the second answer here
// is the model's second, not the first one's result reused).
func TestGenerateSamePromptAgain(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t)
	b := aiSetup(t, func(o *aiOpts) {
		o.generator = strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: fake.URL, Model: "m", Timeout: 5 * time.Second})
	})
	tok := "Bearer " + b.token(store.Pro)
	answer := func(side string) map[string]any {
		return map[string]any{
			"side": side, "positionSize": 10, "maxLossPercent": 30, "orderType": "MARKET", "explanation": "Buys " + side + ".",
			"entryConditions": []map[string]any{{"field": "time_remaining_pct", "operator": "<", "value": 50}},
			"exitConditions":  []map[string]any{{"field": "time_remaining_pct", "operator": "<", "value": 10}},
		}
	}
	fake.Push(openaitest.JSON(answer("UP")), openaitest.JSON(answer("DOWN")))
	const body = `{"prompt":"buy a side halfway through, exit near the end"}`
	for i, side := range []string{"UP", "DOWN"} {
		var g generateAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, body), &g)
		if g.GeneratedStrategy.Strategy.Side != side || g.Quota.Used != i+1 {
			t.Errorf("request %d: side %s, quota %+v; want the model's answer %d (%s), used %d", i+1, g.GeneratedStrategy.Strategy.Side, g.Quota, i+1, side, i+1)
		}
	}
	if calls, used := len(fake.Calls()), b.used(store.Pro); calls != 2 || used != 2 {
		t.Errorf("the model answered %d times and %d generations are spent; want 2 and 2", calls, used)
	}
}

// TestStrategyBacktest: /strategy generates, then backtests on the newest
// resolved markets; the report is what replaying each market directly
// gives, and the market without data fails alone.
func TestStrategyBacktest(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.workers = 2 })
	tok := "Bearer " + b.token(store.Pro)
	var rep backtestAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/strategy", tok,
		`{"prompt":"buy UP when price_up drops below 0.45, exit above 0.55 or with 20% left","positionSize":50}`), &rep)
	markets := newestResolved(t, b.store, store.BTC, store.M15, 10)
	want := directReport(t, b.store, backtest.Request{Strategy: rep.GeneratedStrategy, Markets: markets, Quota: rep.Quota})
	g, _ := json.Marshal(rep)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("report:\n got %.800s\nwant %.800s", g, w)
	}
	if rep.Quota == nil || rep.Quota.Used != 1 || rep.GeneratedStrategy.Strategy.PositionSize != 50 {
		t.Errorf("quota %+v, strategy %+v", rep.Quota, rep.GeneratedStrategy)
	}
	failed := 0
	for _, r := range rep.Results {
		if r.Error != nil {
			failed++
			if r.Slug != noDataSlug() || r.Error.Code != "NO_DATA" {
				t.Errorf("unexpected failure %s %+v", r.Slug, r.Error)
			}
		}
	}
	if failed != 1 || rep.Aggregate.MarketsTested != 10 || rep.Aggregate.MarketsTraded == 0 {
		t.Errorf("%d failed; aggregate %+v", failed, rep.Aggregate)
	}

	// ETH, three markets.
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/strategy", tok, `{"prompt":"mean reversion","preset":"mean_reversion","coin":"ETH","marketCount":3}`), &rep)
	if len(rep.Results) != 3 || rep.GeneratedStrategy.Coin != store.ETH || !strings.HasPrefix(rep.Results[0].Slug, "eth-updown-15m-") || rep.Quota.Used != 2 {
		t.Errorf("ETH backtest: %+v", rep)
	}
}

// TestStrategyNoMarkets: 404 before any generation is used.
func TestStrategyNoMarkets(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Pro)
	for _, body := range []string{
		`{"prompt":"buy UP below 0.4, exit above 0.6","coin":"SOL"}`,
		`{"prompt":"buy UP below 0.4, exit above 0.6","marketType":"1h"}`,
	} {
		e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/strategy", tok, body), http.StatusNotFound, "NO_BACKTEST_MARKETS")
		if !strings.Contains(e["message"].(string), "31 days") {
			t.Errorf("message %q", e["message"])
		}
	}
	wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"coin=SOL side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1"}`),
		http.StatusNotFound, "NO_BACKTEST_MARKETS")
	if n := b.used(store.Pro); n != 0 {
		t.Errorf("used %d", n)
	}
}

// TestRun: /run backtests a generated strategy object or its code, the
// same way, without touching the quota, which it answers (issue 16, item 11).
func TestRun(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	var g generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, `{"prompt":"buy UP below 0.48 with more than 30% left, exit above 0.52"}`), &g)
	obj, _ := json.Marshal(map[string]any{"generatedStrategy": g.GeneratedStrategy, "marketCount": 5})
	var byObject, byCode backtestAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(obj)), &byObject)
	code, _ := json.Marshal(map[string]any{"strategy_code": g.StrategyCode, "marketCount": 5})
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(code)), &byCode)
	if !reflect.DeepEqual(byObject.Aggregate, byCode.Aggregate) || !reflect.DeepEqual(byObject.Results, byCode.Results) || len(byCode.Results) != 5 {
		t.Errorf("object and code disagree:\n%+v\n%+v", byObject.Aggregate, byCode.Aggregate)
	}
	want := directReport(t, b.store, backtest.Request{Strategy: byObject.GeneratedStrategy, Markets: newestResolved(t, b.store, store.BTC, store.M15, 5)})
	if !reflect.DeepEqual(byObject.Aggregate, want.Aggregate) || byObject.Quota == nil || byObject.Quota.Used != 1 || byObject.Quota.Limit != nil ||
		byObject.StrategyCode != g.StrategyCode {
		t.Errorf("run: %+v\nwant %+v", byObject, want)
	}
	if byCode.GeneratedStrategy.Explanation == "" {
		t.Error("a strategy from a code has no explanation")
	}
	// DESIGN 8's example code, without coin and type: the body's, or BTC 15m.
	const example = "side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET"
	var rep backtestAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"`+example+`","coin":"eth","marketType":"5m"}`), &rep)
	if rep.GeneratedStrategy.Coin != store.ETH || rep.GeneratedStrategy.MarketType != store.M5 || len(rep.Results) != 2 {
		t.Errorf("example on ETH 5m: %+v", rep)
	}
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"`+example+`"}`), &rep)
	if rep.StrategyCode != "coin=BTC type=15m "+example || len(rep.Results) != 10 {
		t.Errorf("example by default: %s, %d results", rep.StrategyCode, len(rep.Results))
	}
	// A 15m strategy's "in the last 10 minutes" run on 5m markets holds
	// all the market long, and runs as "any time"; its exit "with more
	// than 10 minutes left" never holds there, and is none.
	const anyTime = "coin=BTC type=15m side=UP entry: price_up < 0.48 and time_remaining_s <= 600 exit: price_up > 0.52 or time_remaining_s > 600 size=100"
	rep = backtestAnswer{}
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"`+anyTime+`","marketType":"5m"}`), &rep)
	if rep.GeneratedStrategy.MarketType != store.M5 || len(rep.Results) != 2 {
		t.Errorf("always-true entry condition on 5m: %s, %d results", rep.StrategyCode, len(rep.Results))
	}
	if n := b.used(store.Enterprise); n != 1 {
		t.Errorf("used %d, want 1 (the /generate)", n)
	}
}

// TestRunRetellsAChangedStrategy: /run's settings that change a
// generatedStrategy's rules (orderType, reentryCooldownMs) tell them
// again in the explanation answered, which said "with LIMIT orders" and
// "waits 30 s" of a strategy run with MARKET orders and no cooldown. An
// explanation of other words (a model's) is kept with a note of what
// changed; one whose rules are unchanged is kept as it is, also when the
// object leaves out fields that have defaults.
func TestRunRetellsAChangedStrategy(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	var g generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, `{"prompt":"buy down at 25c, sell at 50c, 500 shares, limit orders"}`), &g)
	if e := g.GeneratedStrategy.Explanation; !strings.Contains(e, "with LIMIT orders") || !strings.Contains(e, "waits 30 s") {
		t.Fatalf("generated explanation %q", e)
	}
	run := func(explanation string, settings string) string {
		t.Helper()
		gs := g.GeneratedStrategy
		gs.Explanation = explanation
		obj, _ := json.Marshal(gs)
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"generatedStrategy":`+string(obj)+`,"marketCount":1`+settings+`}`), &rep)
		return rep.GeneratedStrategy.Explanation
	}
	const changed = `,"orderType":"MARKET","reentryCooldownMs":0`
	if got := run(g.GeneratedStrategy.Explanation, changed); !strings.Contains(got, "with MARKET orders") || strings.Contains(got, "LIMIT") || strings.Contains(got, "waits 30 s") {
		t.Errorf("run with MARKET orders and no cooldown of %q explains %q", g.GeneratedStrategy.Explanation, got)
	}
	// A model's words are kept, and what the settings changed told after.
	const prose = "Buys DOWN cheap, sells it back at 0.5."
	got := run(prose, changed)
	if note := strings.Index(got, "Changed by this run's settings:"); !strings.HasPrefix(got, prose+" ") || note < 0 ||
		!strings.Contains(got[note:], "with MARKET orders") || !strings.Contains(got[note:], "No longer:") || !strings.Contains(got[note:], "waits 30 s") {
		t.Errorf("run with MARKET orders and no cooldown of %q explains %q, want it with a note of the change", prose, got)
	}
	if got := run(prose, `,"coin":"ETH"`); got != prose {
		t.Errorf("run on other markets with the same rules explains %q, want the object's", got)
	}
	// An object that leaves out the fields with defaults (orderType,
	// maxLossPercent, a GTC's queueModel) changes nothing by that.
	for _, orderType := range []string{"", "GTC"} {
		var m map[string]any
		raw, _ := json.Marshal(g.GeneratedStrategy)
		_ = json.Unmarshal(raw, &m)
		delete(m, "orderType")
		delete(m, "maxLossPercent")
		delete(m, "queueModel")
		delete(m, "limitOffsetTicks")
		if orderType != "" {
			m["orderType"] = orderType
		}
		m["explanation"] = prose
		obj, _ := json.Marshal(m)
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"generatedStrategy":`+string(obj)+`,"marketCount":1}`), &rep)
		if got := rep.GeneratedStrategy.Explanation; got != prose {
			t.Errorf("run of an object without defaulted fields (orderType %q) explains %q, want the object's", orderType, got)
		}
	}
}

// TestRunRejects: a malformed strategy is 400 with a message that points
// at the bad part.
func TestRunRejects(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	tok := "Bearer " + b.token(store.Pro)
	obj := func(mut func(m map[string]any)) string {
		m := map[string]any{"side": "UP", "positionSize": 10, "coin": "BTC", "marketType": "15m",
			"entryConditions": []map[string]any{{"field": "price_up", "operator": "<", "value": 0.4}},
			"exitConditions":  []map[string]any{{"field": "price_up", "operator": ">", "value": 0.6}}}
		mut(m)
		body, _ := json.Marshal(map[string]any{"generatedStrategy": m})
		return string(body)
	}
	cases := []struct{ body, code, field, msg string }{
		{`{}`, "VALIDATION_ERROR", "", "needs generatedStrategy"},
		{`{"generatedStrategy":null}`, "VALIDATION_ERROR", "", "needs generatedStrategy"},
		{`{"generatedStrategy":{},"strategy_code":"x"}`, "VALIDATION_ERROR", "", "not both"},
		{`{"generatedStrategy":"side=UP"}`, "VALIDATION_ERROR", "generatedStrategy", "generatedStrategy"},
		{obj(func(m map[string]any) { m["side"] = "up" }), "INVALID_SIDE", "generatedStrategy.side", `case-sensitive: use "UP"`},
		{obj(func(m map[string]any) { m["side"] = 1 }), "INVALID_SIDE", "generatedStrategy.side", "must be a string"},
		{obj(func(m map[string]any) {
			m["exitConditions"] = []map[string]any{{"field": "price_up", "operator": ">", "value": 0.6}, {"field": "rsi", "operator": "<", "value": 1}}
		}), "INVALID_FIELD", "generatedStrategy.exitConditions[1].field", `"rsi" is not one of`},
		{obj(func(m map[string]any) { m["orderType"] = "FOK" }), "INVALID_ORDER_TYPE", "generatedStrategy.orderType", "FOK"},
		{obj(func(m map[string]any) { m["maxLossPercent"] = 0 }), "VALIDATION_ERROR", "generatedStrategy.maxLossPercent", "out of range"},
		{obj(func(m map[string]any) { m["coin"] = "XRP" }), "VALIDATION_ERROR", "generatedStrategy.coin", "XRP"},
		{obj(func(m map[string]any) { m["coin"] = "SOL"; m["marketType"] = "4hr" }), "VALIDATION_ERROR", "generatedStrategy.marketType", "BTC only"},
		{obj(func(m map[string]any) { m["entryConditions"] = []any{} }), "VALIDATION_ERROR", "generatedStrategy.entryConditions", "empty"},
		{`{"strategy_code":""}`, "VALIDATION_ERROR", "strategy_code", "empty"},
		{`{"strategy_code":"side=UP entry: price_up =< 0.4 exit: price_up > 0.6 size=1"}`, "INVALID_OPERATOR", "strategy_code", `word 4 ("=<")`},
		{`{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=20000"}`, "VALIDATION_ERROR", "strategy_code", "size 20000 is out of range"},
		{`{"strategy_code":7}`, "VALIDATION_ERROR", "strategy_code", "must be a string"},
		// A condition that always or never holds is a slip (40 for 0.4),
		// refused as /generate refuses it, not backtested.
		{obj(func(m map[string]any) {
			m["entryConditions"] = []map[string]any{{"field": "price_up", "operator": "<", "value": 40}}
		}),
			"VALIDATION_ERROR", "generatedStrategy.entryConditions[0].value", "generatedStrategy.entryConditions[0].value 40 is outside price_up's range, 0 to 1"},
		{`{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up >= 1.6 size=1"}`, "VALIDATION_ERROR", "strategy_code", "exitConditions[0].value 1.6 is outside price_up's range"},
		{`{"strategy_code":"side=UP entry: price_up < 0.4 exit: time_remaining_s <= 600 size=1","marketType":"5m"}`, "VALIDATION_ERROR", "strategy_code",
			"exitConditions[0].value 600 is outside time_remaining_s's range, 0 to 300 (a 5m market): the condition time_remaining_s <= 600 always holds"},
		{`{"strategy_code":"side=UP entry: time_remaining_s >= 600 exit: price_up > 0.6 size=1","marketType":"5m"}`, "VALIDATION_ERROR", "strategy_code",
			"entryConditions[0].value 600 is outside time_remaining_s's range, 0 to 300 (a 5m market): the condition time_remaining_s >= 600 never holds"},
		{`[]`, "VALIDATION_ERROR", "", "the body must be a JSON object, not a JSON array"},
		{`{"generatedStrategy":{"entryConditions":{}}}`, "VALIDATION_ERROR", "generatedStrategy.entryConditions", "must be an array, not a JSON object"},
		{`{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1","marketCount":0}`, "VALIDATION_ERROR", "marketCount", "out of range"},
		{`{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1","coin":"ADA"}`, "VALIDATION_ERROR", "coin", "ADA"},
	}
	for _, tc := range cases {
		e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, tc.body), http.StatusBadRequest, tc.code)
		d, _ := e["details"].(map[string]any)
		field, _ := d["field"].(string)
		if field != tc.field || !strings.Contains(e["message"].(string), tc.msg) {
			t.Errorf("%.70s:\n got field %q message %q\nwant field %q message ...%q...", tc.body, field, e["message"], tc.field, tc.msg)
		}
	}
}

// slowStore makes every replay's read of its market take delay.
type slowStore struct {
	store.Store
	delay time.Duration
}

func (s slowStore) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.ReadTape(ctx, slug, outcome)
}

// CountSnapshots is as slow as a read: a slow store is slow to count too.
func (s slowStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.Store.CountSnapshots(ctx, slug, q)
}

// TestRunTimeout: a backtest that outlasts the wait answers 504 with its
// job id; GET /v1/jobs/{id} (with the API key) then answers the report.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobWait = 300 * time.Millisecond
		o.read = func(st store.Store) store.Store { return slowStore{st, 100 * time.Millisecond} }
	})
	tok := "Bearer " + b.token(store.Pro)
	body := `{"strategy_code":"side=UP entry: price_up < 0.5 exit: price_up > 0.55 size=3","marketCount":10}`
	e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, body), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if !strings.HasPrefix(id, "backtest-") {
		t.Fatalf("job id %q", id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := b.get(store.Pro, "/v1/jobs/"+id)
		if r.status == http.StatusAccepted {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var rep backtestAnswer
		data(t, r, &rep)
		if len(rep.Results) != 10 || rep.Aggregate.MarketsTested != 10 {
			t.Errorf("job answer %+v", rep.Aggregate)
		}
		// The same /run again joins the finished job: its data is the job
		// answer's, byte for byte, and reads "<" as it is.
		again := b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, body)
		var runData, jobData struct{ Data json.RawMessage }
		if again.status != http.StatusOK || json.Unmarshal(again.body, &runData) != nil || json.Unmarshal(r.body, &jobData) != nil {
			t.Fatalf("/run again: %d %s", again.status, again.body)
		}
		if !bytes.Equal(runData.Data, jobData.Data) {
			t.Errorf("/run answered\n%s\nGET /v1/jobs/%s answered\n%s", runData.Data, id, jobData.Data)
		}
		if !bytes.Contains(runData.Data, []byte(`price_up < 0.5`)) {
			t.Errorf("the report escapes its conditions: %s", runData.Data)
		}
		wantError(t, b.get(store.Enterprise, "/v1/jobs/"+id), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		return
	}
	t.Fatal("the backtest never finished")
}

func TestBacktestAIOpenAPI(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	var doc struct {
		Components struct {
			SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]any        `json:"responses"`
		} `json:"paths"`
	}
	r := b.get("", "/openapi.json")
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Components.SecuritySchemes["bearer"]; s["type"] != "http" || s["scheme"] != "bearer" || s["bearerFormat"] != "JWT" {
		t.Errorf("bearer scheme %v", s)
	}
	for _, p := range []struct{ method, path, code string }{
		{"post", "/v1/backtest-ai/generate", "502"}, {"post", "/v1/backtest-ai/strategy", "404"},
		{"post", "/v1/backtest-ai/run", "504"}, {"get", "/v1/backtest-ai/quota", "403"},
	} {
		op := doc.Paths[p.path][p.method]
		if !reflect.DeepEqual(op.Security, []map[string][]string{{"bearer": {}}, {"session": {}}}) || op.Responses[p.code] == nil || op.Responses["422"] != nil {
			t.Errorf("%s %s: security %v, responses %v", p.method, p.path, op.Security, op.Responses)
		}
	}
	if op := doc.Paths["/v1/auth/token"]["post"]; !reflect.DeepEqual(op.Security, []map[string][]string{{"apiKey": {}}, {"session": {}}}) {
		t.Errorf("token security %v", op.Security)
	}
}

// TestGenerateMarketCountDocumented: /generate takes marketCount, which
// its generated_strategy and strategy_code do not carry; the OpenAPI
// document says so where a client reads it, and that /run takes its own
// (default 10), rather than leave a client expecting /run to test the
// count it gave /generate.
func TestGenerateMarketCountDocumented(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	var doc map[string]any
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	at := func(v any, keys ...string) any {
		for _, k := range keys {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	marketCount := func(path string) string {
		ref, _ := at(doc, "paths", path, "post", "requestBody", "content", "application/json", "schema", "$ref").(string)
		desc, _ := at(doc, "components", "schemas", strings.TrimPrefix(ref, "#/components/schemas/"), "properties", "marketCount", "description").(string)
		return desc
	}
	if d := marketCount("/v1/backtest-ai/generate"); !strings.Contains(d, "generated_strategy and strategy_code do not carry it") || !strings.Contains(d, "/run backtests its own marketCount (default 10)") {
		t.Errorf("/generate's marketCount: %q, want it to say the strategy does not carry it and /run takes its own", d)
	}
	if d, _ := at(doc, "paths", "/v1/backtest-ai/generate", "post", "description").(string); !strings.Contains(d, "/run takes its own (default 10)") {
		t.Errorf("/generate's description: %q, want what marketCount does there", d)
	}
	if d := marketCount("/v1/backtest-ai/run"); !strings.Contains(d, "default 10") || !strings.Contains(d, "does not carry the marketCount given to /generate") {
		t.Errorf("/run's marketCount: %q, want its default and that /generate's is not carried", d)
	}
}

// failingBacktests passes every job through but backtests, which fail
// with err.
type failingBacktests struct {
	api.JobRunner
	err error
}

func (f failingBacktests) Run(ctx context.Context, j worker.Job, owner string, wait time.Duration) (jobs.Outcome, string, error) {
	if j.Type == backtest.TaskType {
		return jobs.Outcome{}, j.ID(), f.err
	}
	return f.JobRunner.Run(ctx, j, owner, wait)
}

// TestStrategyBacktestFails: a generation whose backtest then fails is
// given back, unless the failure is a 504, whose job id leads to the
// whole answer, strategy included.
func TestStrategyBacktestFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
		used   int
	}{
		// The generation succeeded either way, and its job answers GET
		// /v1/jobs/{id}: it is spent (DESIGN 8).
		{errors.New("queue down"), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", 1},
		{&worker.TimeoutError{JobID: "backtest-x"}, http.StatusGatewayTimeout, "JOB_TIMEOUT", 1},
	} {
		b := aiSetup(t, func(o *aiOpts) {
			o.jobs = func(r api.JobRunner) api.JobRunner { return failingBacktests{r, tc.err} }
		})
		r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
		wantError(t, r, tc.status, tc.code)
		if n := b.used(store.Pro); n != tc.used {
			t.Errorf("%s: used %d, want %d", tc.code, n, tc.used)
		}
	}
}

// TestMarketCountIsAnyWholeJSONNumber: JSON has no integer type, and a
// client that computes marketCount (Python's 30 / 10, a JavaScript
// float) may write 3.0 or 3e0: /strategy and /run take it as 3, as the
// replay and sweeps take their whole numbers. It was 400 "marketCount
// must be a whole number, not a JSON number 3.0". A fraction is still
// refused by name.
func TestMarketCountIsAnyWholeJSONNumber(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	const code = `"strategy_code":"side=UP entry: price_up < 0.45 exit: price_up > 0.55 size=10"`
	for _, tc := range []struct{ path, body string }{
		{"/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.45, exit above 0.55","marketCount":3.0}`},
		{"/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.44, exit above 0.55","marketCount":3e0}`},
		{"/v1/backtest-ai/run", `{` + code + `,"marketCount":3.0}`},
		{"/v1/backtest-ai/run", `{` + code + `,"marketCount":30e-1}`},
	} {
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, tc.path, tok, tc.body), &rep)
		if len(rep.Results) != 3 {
			t.Errorf("%s %s: %d results, want 3", tc.path, tc.body, len(rep.Results))
		}
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/backtest-ai/generate", `{"prompt":"x","marketCount":2.5}`},
		{"/v1/backtest-ai/strategy", `{"prompt":"x","marketCount":2.5}`},
		{"/v1/backtest-ai/run", `{` + code + `,"marketCount":2.5}`},
	} {
		e := wantError(t, b.ai(http.MethodPost, tc.path, tok, tc.body), http.StatusBadRequest, "VALIDATION_ERROR")
		if d, _ := e["details"].(map[string]any); d["field"] != "marketCount" || !strings.Contains(e["message"].(string), "whole number, not a JSON number 2.5") {
			t.Errorf("%s %s: %v", tc.path, tc.body, e)
		}
	}
	for _, path := range []string{"/v1/backtest-ai/strategy", "/v1/backtest-ai/run"} {
		body := `{"prompt":"x","marketCount":101.0}`
		if path == "/v1/backtest-ai/run" {
			body = `{` + code + `,"marketCount":1e20}`
		}
		e := wantError(t, b.ai(http.MethodPost, path, tok, body), http.StatusBadRequest, "VALIDATION_ERROR")
		if d, _ := e["details"].(map[string]any); d["field"] != "marketCount" || !strings.Contains(e["message"].(string), "out of range") {
			t.Errorf("%s %s: %v", path, body, e)
		}
	}
}

// TestJobTimeoutCutShortSaysWhy: a wait that ends before JOB_WAIT (an api
// process stopping answers its waiting requests with their job ids) is a
// 504 whose message says so, not that the job ran the whole JOB_WAIT:
// chaos testing saw "the job did not finish within 1m0s" 22 s into a
// request cut short by a SIGTERM.
func TestJobTimeoutCutShortSaysWhy(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobs = func(r api.JobRunner) api.JobRunner {
			return failingBacktests{r, &worker.TimeoutError{JobID: "backtest-x"}}
		}
	})
	tok := "Bearer " + b.token(store.Enterprise)
	e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok,
		`{"strategy_code":"side=UP entry: price_up < 0.45 exit: price_up > 0.55 size=10","marketCount":3}`),
		http.StatusGatewayTimeout, "JOB_TIMEOUT")
	msg, _ := e["message"].(string)
	if strings.Contains(msg, "within 30s") || !strings.Contains(msg, "shutting down") || !strings.Contains(msg, "it goes on: fetch its result with GET /v1/jobs/backtest-") {
		t.Errorf("message %q: want the wait cut short by a shutdown, and the job's address", msg)
	}
}

// TestGeneratedStrategyReplaysVerbatim: generated_strategy is
// "replay-ready" (SPEC 2.7): the object /generate answers, with a
// marketSlug added, is a body POST /v1/replay takes as it is (its coin,
// marketType and explanation included), and replays as /run does.
func TestGeneratedStrategyReplaysVerbatim(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	var slug string
	for _, s := range newestResolved(t, b.store, store.BTC, store.M15, 10) {
		if s != noDataSlug() {
			slug = s
			break
		}
	}
	for _, body := range []string{
		`{"prompt":"buy UP when price_up drops below 0.45, exit above 0.55 or with 20% left"}`,
		`{"prompt":"buy DOWN when price_down is below 0.5, exit above 0.6, with fees and 250 ms latency","maxLossPercent":30}`,
		`{"preset":"dip_buying","orderType":"GTC","postOnly":true,"limitOffsetTicks":1,"maxEntriesPerMarket":3}`,
	} {
		var gen struct {
			GeneratedStrategy map[string]json.RawMessage `json:"generated_strategy"`
		}
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok, body), &gen)
		obj := gen.GeneratedStrategy
		obj["marketSlug"], _ = json.Marshal(slug)
		replayBody, _ := json.Marshal(obj)
		r := b.do(http.MethodPost, "/v1/replay", b.keys[store.Enterprise], "application/json", string(replayBody))
		var res struct {
			Performance struct {
				TotalPnL    float64 `json:"total_pnl"`
				TotalTrades int     `json:"total_trades"`
			} `json:"performance"`
		}
		if r.status != http.StatusOK {
			t.Errorf("%s: replaying generated_strategy verbatim: %d %s", body, r.status, r.body)
			continue
		}
		data(t, r, &res)
		delete(obj, "marketSlug")
		runBody, _ := json.Marshal(map[string]any{"generatedStrategy": gen.GeneratedStrategy, "marketCount": 10})
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(runBody)), &rep)
		found := false
		for _, m := range rep.Results {
			if m.Slug != slug {
				continue
			}
			found = true
			if m.Performance == nil || m.Performance.TotalPnL != res.Performance.TotalPnL || m.Performance.TotalTrades != res.Performance.TotalTrades {
				t.Errorf("%s: /run's %s %+v, the replay's %+v", body, slug, m.Performance, res.Performance)
			}
		}
		if !found {
			t.Errorf("%s: /run did not test %s", body, slug)
		}
	}
	// Taken, not anything: a key of another type is refused by name.
	e := wantError(t, b.do(http.MethodPost, "/v1/replay", b.keys[store.Enterprise], "application/json",
		`{"marketSlug":"`+slug+`","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.4}],`+
			`"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":10,"coin":5}`), http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "coin" {
		t.Errorf("a numeric coin: %v", e)
	}
}

// panicStore panics on reading one market, as a replay with a bug on
// that market's data would.
type panicStore struct {
	store.Store
	slug string
}

func (s panicStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if slug == s.slug {
		panic("a bug on " + slug)
	}
	return s.Store.GetMarket(ctx, slug)
}

// TestBacktestOneMarketPanics: a market whose replay panics fails alone
// (INTERNAL_ERROR), while the markets that share its shard keep their
// results, as a market without data does.
func TestBacktestOneMarketPanics(t *testing.T) {
	t.Parallel()
	var markets []string
	b := aiSetup(t, func(o *aiOpts) {
		o.read = func(st store.Store) store.Store {
			markets = newestResolved(t, st, store.BTC, store.M15, 10)
			return panicStore{st, markets[0]}
		}
	})
	var rep backtestAnswer
	data(t, b.post(store.Pro, "/v1/backtest-ai/run",
		`{"strategy_code":"side=UP entry: price_up < 0.5 exit: price_up > 0.55 size=3","marketCount":10}`), &rep)
	if len(rep.Results) != 10 {
		t.Fatalf("%d results", len(rep.Results))
	}
	for _, r := range rep.Results {
		switch {
		case r.Slug == markets[0]:
			if r.Error == nil || r.Error.Code != "INTERNAL_ERROR" {
				t.Errorf("%s: %+v, want INTERNAL_ERROR", r.Slug, r)
			}
		case r.Slug == noDataSlug():
			if r.Error == nil || r.Error.Code != "NO_DATA" {
				t.Errorf("%s: %+v, want NO_DATA", r.Slug, r)
			}
		case r.Error != nil || r.Performance == nil:
			t.Errorf("%s shares a shard with the market that panicked and lost its result: %+v", r.Slug, r.Error)
		}
	}
	if rep.Aggregate.MarketsFailed != 2 || rep.Aggregate.NMarkets != 8 {
		t.Errorf("aggregate: %d failed, %d replayed", rep.Aggregate.MarketsFailed, rep.Aggregate.NMarkets)
	}
}

// TestStrategyBacktestFailsKeepsStrategy: a /strategy whose generation
// succeeded (and is spent) but whose backtest could not run answers the
// generated strategy in the error's details, so that the customer can
// backtest it with /run (no quota) rather than spend another generation
// on the same idea. A 504 needs none: its job id leads to the whole answer.
func TestStrategyBacktestFailsKeepsStrategy(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) {
		o.jobs = func(r api.JobRunner) api.JobRunner { return failingBacktests{r, errors.New("queue down")} }
	})
	r := b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6"}`)
	e := wantError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	d, _ := e["details"].(map[string]any)
	code, _ := d["strategy_code"].(string)
	const want = "coin=BTC type=15m side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET cooldown=30000"
	if code != want {
		t.Errorf("details.strategy_code %q, want %q; details %v", code, want, d)
	}
	gs, _ := d["generated_strategy"].(map[string]any)
	if gs["side"] != "UP" || gs["coin"] != "BTC" {
		t.Errorf("details.generated_strategy %v", gs)
	}
	if n := b.used(store.Pro); n != 1 {
		t.Errorf("used %d, want 1", n)
	}
}
