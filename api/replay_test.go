package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// queue is a real Redis with the api's job client, and a worker that the
// test starts when it wants work done.
type queue struct {
	rdb    *redis.Client
	url    string // rdb's database: another client of it is made from it (redistest.ClientOf)
	client *worker.Client
	store  store.Store
}

func newQueue(t *testing.T, st store.Store) *queue {
	t.Helper()
	url := redistest.New(t)
	rdb := redistest.ClientOf(t, url)
	c, err := worker.NewClient(context.Background(), worker.ClientConfig{Redis: rdb, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &queue{rdb: rdb, url: url, client: c, store: st}
}

// startWorker runs an in-process worker on the queue's store until the
// test ends.
func (q *queue) startWorker(t *testing.T) {
	t.Helper()
	q.runWorker(t, worker.Config{Store: q.store, Concurrency: 4})
}

// runWorker runs an in-process worker of cfg on the queue's Redis until
// the test ends.
func (q *queue) runWorker(t *testing.T, cfg worker.Config) {
	t.Helper()
	cfg.Redis, cfg.Logger = q.rdb, quiet()
	w, err := worker.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// replaySetup is a server whose replays run on a real worker.
func replaySetup(t *testing.T, wait time.Duration, startWorker bool) (*bundle, *queue) {
	t.Helper()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	if startWorker {
		q.startWorker(t)
	}
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = st, q.client, wait })
	return b, q
}

func replayBody(slug string, mutate func(map[string]any)) string {
	body := map[string]any{
		"marketSlug":      slug,
		"side":            "UP",
		"entryConditions": []map[string]any{{"field": "price_up", "operator": "<", "value": 0.6}},
		"exitConditions":  []map[string]any{{"field": "price_up", "operator": ">=", "value": 0.7}},
		"positionSize":    100,
	}
	if mutate != nil {
		mutate(body)
	}
	b, _ := json.Marshal(body)
	return string(b)
}

func (b *bundle) replay(tier store.Tier, body string) response {
	b.t.Helper()
	return b.do(http.MethodPost, "/v1/replay", b.keys[tier], "application/json", body)
}

func TestReplayRejectsBeforeQueueing(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 5*time.Second, false) // no worker: nothing may reach the queue
	slug, _ := snapshotMarket()
	live := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute))
	noData := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute).Add(-30*time.Minute))
	old := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-54*5*time.Minute))
	cond := func(f, op string, v any) []map[string]any {
		return []map[string]any{{"field": f, "operator": op, "value": v}}
	}
	cases := []struct {
		name   string
		tier   store.Tier
		ctype  string
		body   string
		status int
		code   string
	}{
		{"starter has no replay", store.Starter, "application/json", replayBody(slug, nil), 403, "TIER_REQUIRED"},
		{"suite has no replay", store.Suite, "application/json", replayBody(slug, nil), 403, "TIER_REQUIRED"},
		{"no content type", store.Pro, "", replayBody(slug, nil), 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"text content type", store.Pro, "text/plain", replayBody(slug, nil), 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"body over 1 MiB", store.Pro, "application/json", `{"marketSlug":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"malformed JSON", store.Pro, "application/json", `{"marketSlug":`, 400, "VALIDATION_ERROR"},
		{"empty body", store.Pro, "application/json", ``, 400, "VALIDATION_ERROR"},
		{"an array for the body", store.Pro, "application/json", `[]`, 400, "VALIDATION_ERROR"},
		{"side", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["side"] = "SIDEWAYS" }), 400, "INVALID_SIDE"},
		{"side a number", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["side"] = 1 }), 400, "INVALID_SIDE"},
		{"side before size", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["side"] = "up"; m["positionSize"] = 0 }), 400, "INVALID_SIDE"},
		{"field", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["entryConditions"] = cond("volume", ">", 1) }), 400, "INVALID_FIELD"},
		{"operator", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["exitConditions"] = cond("price_up", "=>", 1) }), 400, "INVALID_OPERATOR"},
		{"field a number", store.Pro, "application/json", replayBody(slug, func(m map[string]any) {
			m["entryConditions"] = cond("", ">", 1)
			m["entryConditions"].([]map[string]any)[0]["field"] = 1
		}), 400, "INVALID_FIELD"},
		{"operator a number", store.Pro, "application/json", replayBody(slug, func(m map[string]any) {
			m["exitConditions"] = cond("price_up", "", 1)
			m["exitConditions"].([]map[string]any)[0]["operator"] = 1
		}), 400, "INVALID_OPERATOR"},
		{"order type", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["orderType"] = "STOP" }), 400, "INVALID_ORDER_TYPE"},
		{"size 0", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["positionSize"] = 0 }), 400, "VALIDATION_ERROR"},
		{"size 10001", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["positionSize"] = 10001 }), 400, "VALIDATION_ERROR"},
		{"max loss 101", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["maxLossPercent"] = 101 }), 400, "VALIDATION_ERROR"},
		{"max loss 0.5", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["maxLossPercent"] = 0.5 }), 400, "VALIDATION_ERROR"},
		{"no entry conditions", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["entryConditions"] = []any{} }), 400, "VALIDATION_ERROR"},
		{"missing exit conditions", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { delete(m, "exitConditions") }), 400, "VALIDATION_ERROR"},
		{"value a string", store.Pro, "application/json", replayBody(slug, func(m map[string]any) { m["entryConditions"] = cond("price_up", "<", "NaN") }), 400, "VALIDATION_ERROR"},
		{"missing slug", store.Pro, "application/json", replayBody("", nil), 400, "VALIDATION_ERROR"},
		{"unknown market", store.Pro, "application/json", replayBody("btc-updown-5m-1", nil), 404, "MARKET_NOT_FOUND"},
		{"unresolved", store.Pro, "application/json", replayBody(live, nil), 400, "MARKET_NOT_RESOLVED"},
		{"no data", store.Pro, "application/json", replayBody(noData, nil), 404, "NO_DATA"},
		{"outside window", store.ProTrial, "application/json", replayBody("btc-updown-24hr-1", nil), 403, "TIER_ACCESS_DENIED"},
		{"pro trial outside nothing", store.ProTrial, "application/json", replayBody(old, func(m map[string]any) { m["side"] = "LEFT" }), 400, "INVALID_SIDE"},
	}
	if err := b.store.UpsertMarkets(t.Context(), []store.Market{{Slug: "btc-updown-24hr-1", MarketID: "old", Coin: store.BTC,
		MarketType: store.H24, StartTime: now.Add(-60 * 24 * time.Hour), EndTime: now.Add(-59 * 24 * time.Hour), Winner: ptr("Up")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(http.MethodPost, "/v1/replay", b.keys[tc.tier], tc.ctype, tc.body)
			e := wantError(t, r, tc.status, tc.code)
			// Every message names what is wrong: no empty field name
			// leads it (" must be a object", once, for a body of []).
			if msg, _ := e["message"].(string); msg == "" || strings.HasPrefix(msg, " ") {
				t.Errorf("message %q", msg)
			}
			if d, ok := e["details"].(map[string]any); ok {
				if f, has := d["field"]; has && f == "" {
					t.Errorf("details.field is empty: %v", d)
				}
			}
			// A refusal for the market names the field that chose it, as
			// every validation error does, so that a client (the
			// dashboard) can point at it.
			switch tc.code {
			case "MARKET_NOT_FOUND", "MARKET_NOT_RESOLVED", "NO_DATA":
				if d, _ := e["details"].(map[string]any); d["field"] != "marketSlug" {
					t.Errorf("details %v: want field marketSlug", e["details"])
				}
			}
		})
	}
	insp := asynq.NewInspectorFromRedisClient(q.rdb)
	if qs, _ := insp.Queues(); len(qs) != 0 {
		t.Errorf("rejected requests reached the queue: %v", qs)
	}
}

// TestReplayNumberBeyondFloat: a number too large for a float64 (1e400)
// where a number goes is out of range, said so; it was "positionSize must
// be a number, not a JSON number 1e400", which tells a client that sent a
// number to send a number.
func TestReplayNumberBeyondFloat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	for _, tc := range []struct{ field, body string }{
		{"positionSize", strings.Replace(replayBody(slug, nil), `"positionSize":100`, `"positionSize":1e400`, 1)},
		{"maxLossPercent", strings.Replace(replayBody(slug, nil), `"positionSize":100`, `"positionSize":100,"maxLossPercent":-1e400`, 1)},
		{"entryConditions[0].value", strings.Replace(replayBody(slug, nil), `"value":0.6`, `"value":1e999`, 1)},
	} {
		e := wantError(t, b.replay(store.Pro, tc.body), http.StatusBadRequest, "VALIDATION_ERROR")
		d, _ := e["details"].(map[string]any)
		msg, _ := e["message"].(string)
		if d["field"] != tc.field || !strings.Contains(msg, "is out of range") || strings.Contains(msg, "must be a number") {
			t.Errorf("%s: field %v, message %q; want the field named and its number out of range", tc.field, d["field"], msg)
		}
	}
	// A string where a number goes is still a value of the wrong kind.
	e := wantError(t, b.replay(store.Pro, strings.Replace(replayBody(slug, nil), `"positionSize":100`, `"positionSize":"1e400"`, 1)),
		http.StatusBadRequest, "VALIDATION_ERROR")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "positionSize must be a number, not a JSON string") {
		t.Errorf("a string for positionSize: %q", msg)
	}
}

// TestReplayFarOutOfRangeMessage: a replay number far out of range is
// said as a sweep says it, with an exponent (1e+308), where the message
// wrote its 309 digits; an ordinary one reads as written.
func TestReplayFarOutOfRangeMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	for _, tc := range []struct {
		name  string
		set   map[string]any
		field string
		want  string
	}{
		{"positionSize", map[string]any{"positionSize": 1e308}, "positionSize", "positionSize 1e+308 is out of range"},
		{"maxLossPercent", map[string]any{"maxLossPercent": -1e308}, "maxLossPercent", "maxLossPercent -1e+308 is out of range"},
		{"feeRate", map[string]any{"feeModel": "CUSTOM", "feeRate": 1e308}, "feeRate", "feeRate 1e+308 is out of range"},
		{"latencyMs", map[string]any{"latencyMs": 1e308}, "latencyMs", "latencyMs 1e+308 is not allowed"},
		{"latencyMs 0.001", map[string]any{"latencyMs": 0.001}, "latencyMs", "latencyMs 0.001 is not allowed"},
		{"maxLossPercent 0.55", map[string]any{"maxLossPercent": 0.55}, "maxLossPercent", "maxLossPercent 0.55 is out of range"},
	} {
		body := replayBody(slug, func(m map[string]any) {
			for k, v := range tc.set {
				m[k] = v
			}
		})
		e := wantError(t, b.replay(store.Pro, body), http.StatusBadRequest, "VALIDATION_ERROR")
		d, _ := e["details"].(map[string]any)
		if msg, _ := e["message"].(string); d["field"] != tc.field || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%s: field %v, message %.120q; want field %s and a message starting %q", tc.name, d["field"], msg, tc.field, tc.want)
		}
	}
}

func TestReplayThroughWorker(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	body := replayBody(slug, nil)
	r := b.replay(store.Pro, body)
	if r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	var got struct {
		Success   bool            `json:"success"`
		Data      json.RawMessage `json:"data"`
		Timestamp string          `json:"timestamp"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || !got.Success || got.Timestamp == "" {
		t.Fatalf("envelope: %v %s", err, r.body)
	}
	// The answer is the engine's, byte for byte.
	var req replay.Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want, err := jobs.Replay(t.Context(), q.store, req)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if string(got.Data) != string(wantJSON) {
		t.Errorf("data differs from a direct engine run:\n got %.300s\nwant %.300s", got.Data, wantJSON)
	}
	var res replay.Result
	if err := json.Unmarshal(got.Data, &res); err != nil {
		t.Fatal(err)
	}
	if res.TotalSnapshots != 30 || res.Market.Slug != slug || len(res.Trades) == 0 || res.Strategy.EntryConditionCount != 1 {
		t.Errorf("result: snapshots %d, %d trades, %+v", res.TotalSnapshots, len(res.Trades), res.Strategy)
	}
	// Pro Trial and Enterprise may replay too.
	for _, tier := range []store.Tier{store.ProTrial, store.Enterprise} {
		if r := b.replay(tier, body); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", tier, r.status, r.body)
		}
	}
}

// TestLargeAnswersGoGzippedAsTheWorkerDeflated: a replay whose result the
// worker deflated (a 15m market that trades often: hundreds of KB) is
// answered to a client that takes gzip as one gzip member made from the
// worker's bytes, and to any other client as plain JSON; both carry the
// engine's result byte for byte, from POST /v1/replay and from
// GET /v1/jobs/{id} alike.
func TestLargeAnswersGoGzippedAsTheWorkerDeflated(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 100*time.Millisecond, false)
	m := benchMarket(t, q.store, store.M15)
	body := replayBody(m.Slug, func(r map[string]any) {
		r["entryConditions"] = []map[string]any{{"field": "price_up", "operator": "<", "value": 0.45}}
		r["exitConditions"] = []map[string]any{{"field": "price_up", "operator": ">", "value": 0.6}}
	})
	var req replay.Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	res, err := jobs.Replay(t.Context(), q.store, req)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(res)
	if len(want) < 100<<10 { // outcomes over 64 KiB are deflated
		t.Fatalf("the result is %d bytes: too small to be deflated", len(want))
	}

	// No worker yet: the wait ends with the job's id.
	e := wantError(t, b.replay(store.Pro, body), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	q.startWorker(t)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}} // sees the bytes as sent
	send := func(method, path, payload, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		r, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(payload))
		r.Header.Set("X-API-Key", b.keys[store.Pro])
		r.Header.Set("Content-Type", "application/json")
		if acceptEncoding != "" {
			r.Header.Set("Accept-Encoding", acceptEncoding)
		}
		res, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, raw
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, raw := send(http.MethodGet, "/v1/jobs/"+id, "", "")
		if res.StatusCode == http.StatusOK {
			break
		}
		if res.StatusCode != http.StatusAccepted || time.Now().After(deadline) {
			t.Fatalf("job %s: %d %.200s", id, res.StatusCode, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, tc := range []struct {
		acceptEncoding string
		gzipped        bool
	}{
		{"gzip", true},
		{"GZIP", true},
		{"deflate, gzip;q=0.5, br", true},
		{"x-gzip", true},
		{"*", true},
		{"", false},
		{"identity", false},
		{"gzip;q=0", false},
		{"br, deflate", false},
		{"gzip;q=0, *", false}, // "*" stands for the codings not named
		{"*;q=0.5, x-gzip;q=0", false},
		{"*;q=0, gzip;q=0.1", true},
	} {
		for _, call := range []struct{ method, path, payload string }{
			{http.MethodPost, "/v1/replay", body},
			{http.MethodGet, "/v1/jobs/" + id, ""},
		} {
			res, raw := send(call.method, call.path, call.payload, tc.acceptEncoding)
			name := fmt.Sprintf("%s %s, Accept-Encoding %q", call.method, call.path, tc.acceptEncoding)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %.200s", name, res.StatusCode, raw)
			}
			if got := res.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Errorf("%s: Content-Encoding %q", name, res.Header.Get("Content-Encoding"))
				continue
			}
			if tc.gzipped {
				// The envelope's head went in as a stored block, ahead of
				// the worker's blocks: the result was not compressed again.
				if !bytes.Contains(raw[:min(len(raw), 64)], []byte(`{"success":true,"data":`)) {
					t.Errorf("%s: the gzip member was not made from the worker's deflated result: % x", name, raw[:min(len(raw), 64)])
				}
				br := bytes.NewReader(raw)
				zr, err := gzip.NewReader(br)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				zr.Multistream(false) // one member, nothing after it
				if raw, err = io.ReadAll(zr); err != nil || br.Len() != 0 {
					t.Fatalf("%s: gzip member: %v, %d bytes after it", name, err, br.Len())
				}
			}
			var env struct {
				Success   bool            `json:"success"`
				Data      json.RawMessage `json:"data"`
				Timestamp string          `json:"timestamp"`
			}
			if err := json.Unmarshal(raw, &env); err != nil || !env.Success || env.Timestamp == "" {
				t.Fatalf("%s: envelope: %v %.200s", name, err, raw)
			}
			if !bytes.Equal(env.Data, want) {
				t.Errorf("%s: data of %d bytes differs from the engine's %d", name, len(env.Data), len(want))
			}
		}
	}
}

// TestReplayCoalesces sends identical requests at once: one task runs and
// every request gets its answer.
func TestReplayCoalesces(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	body := replayBody(slug, func(m map[string]any) { m["positionSize"] = 77 })
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.replay(store.Pro, body)
			if r.status != http.StatusOK {
				t.Errorf("request %d: %d %s", i, r.status, r.body)
			}
			var env struct{ Data json.RawMessage }
			_ = json.Unmarshal(r.body, &env)
			bodies[i] = string(env.Data)
		}()
	}
	wg.Wait()
	for i := range bodies {
		if bodies[i] != bodies[0] {
			t.Fatalf("answers differ")
		}
	}
	// The answer is announced from inside the handler, a moment before
	// Asynq files the task as completed: wait for the queue to settle.
	insp := asynq.NewInspectorFromRedisClient(q.rdb)
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := insp.GetQueueInfo(jobs.QueueReplay)
		if err != nil {
			t.Fatal(err)
		}
		if info.Active+info.Pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	done, err := insp.ListCompletedTasks(jobs.QueueReplay)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 {
		t.Errorf("%d tasks ran for 8 identical requests, want 1", len(done))
	}
}

// TestReplayTimeoutThenJob: with no worker the wait ends in 504 with a job
// id; once a worker runs, GET /v1/jobs/{id} answers the replay to its owner
// only.
func TestReplayTimeoutThenJob(t *testing.T) {
	t.Parallel()
	// With no worker the first wait ends whatever its length; the repeat
	// after completion must be answered within it from the retained
	// result, which on a loaded machine under the race detector took
	// over 200 ms once.
	b, q := replaySetup(t, 2*time.Second, false)
	slug, _ := snapshotMarket()
	r := b.replay(store.Pro, replayBody(slug, nil))
	e := wantError(t, r, http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if id == "" || !strings.Contains(e["message"].(string), "/v1/jobs/"+id) {
		t.Fatalf("timeout answer: %v", e)
	}
	pending := b.get(store.Pro, "/v1/jobs/"+id)
	if pending.status != http.StatusAccepted {
		t.Fatalf("pending job: %d %s", pending.status, pending.body)
	}
	data := pending.json(t)["data"].(map[string]any)
	if data["id"] != id || data["state"] != "pending" {
		t.Errorf("pending data = %v", data)
	}
	wantError(t, b.get(store.Enterprise, "/v1/jobs/"+id), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantError(t, b.get(store.Pro, "/v1/jobs/replay-0000"), http.StatusNotFound, "RESOURCE_NOT_FOUND")

	q.startWorker(t)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := b.get(store.Pro, "/v1/jobs/"+id); got.status == http.StatusOK {
			var env struct {
				Success bool
				Data    replay.Result
			}
			if err := json.Unmarshal(got.body, &env); err != nil || !env.Success || env.Data.Market.Slug != slug {
				t.Fatalf("job answer: %v %s", err, got.body)
			}
			// The original request now answers from the retained result.
			if again := b.replay(store.Pro, replayBody(slug, nil)); again.status != http.StatusOK {
				t.Errorf("repeat after completion: %d", again.status)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s never completed", id)
}

// countedStore is a store.MarketSeriesCounter that counts how the api reads a
// replay's market: in one question, or in two; and how many times it
// reads the market's snapshot counts, with the record or alone.
type countedStore struct {
	store.Store
	together, apart, counts atomic.Int32
}

func (s *countedStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	s.counts.Add(1)
	return s.Store.CountSnapshots(ctx, slug, q)
}

func (s *countedStore) GetMarketSeries(ctx context.Context, slug string) (store.Market, store.SeriesCount, error) {
	s.together.Add(1)
	return store.GetMarketSeries(ctx, s.Store, slug)
}

func (s *countedStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	s.apart.Add(1)
	return s.Store.GetMarket(ctx, slug)
}

// TestReplayReadsItsMarketInOneQuestion (issue 27): the api reads a
// replay's market and the count of its snapshots in one question to a
// store that can answer both (Postgres: one query), not two.
func TestReplayReadsItsMarketInOneQuestion(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	cs := &countedStore{Store: st}
	a := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = cs, q.client, 10*time.Second })
	slug, _ := snapshotMarket()
	if r := a.replay(store.Pro, replayBody(slug, nil)); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if cs.together.Load() != 1 || cs.apart.Load() != 0 {
		t.Errorf("the api read the market %d times with its count and %d times alone, want once with it", cs.together.Load(), cs.apart.Load())
	}
	// An unknown market is still 404 MARKET_NOT_FOUND.
	r := a.replay(store.Pro, replayBody("btc-updown-15m-1", nil))
	wantError(t, r, http.StatusNotFound, "MARKET_NOT_FOUND")
}

// TestTradeReplayCountsItsMarketOnce: a replay of a strategy that reads
// trades reads its market's snapshot counts once, with its data version,
// where it read them with the record and again for the data version.
func TestTradeReplayCountsItsMarketOnce(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	cs := &countedStore{Store: st}
	a := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = cs, q.client, 10*time.Second })
	slug, _ := snapshotMarket()
	body := replayBody(slug, func(m map[string]any) {
		m["entryConditions"] = []map[string]any{{"field": "display_up", "operator": "<", "value": 0.2}}
	})
	if r := a.replay(store.Pro, body); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if reads := cs.together.Load() + cs.counts.Load(); reads != 1 {
		t.Errorf("a trade-reading replay read its market's counts %d times (%d with the record, %d alone), want once",
			reads, cs.together.Load(), cs.counts.Load())
	}
	r := a.replay(store.Pro, replayBody("btc-updown-15m-1", func(m map[string]any) {
		m["entryConditions"] = []map[string]any{{"field": "display_up", "operator": "<", "value": 0.2}}
	}))
	wantError(t, r, http.StatusNotFound, "MARKET_NOT_FOUND")
}

// jobSpy hands jobs to a real queue and keeps the last one.
type jobSpy struct {
	*worker.Client
	mu   sync.Mutex
	last worker.Job
}

func (s *jobSpy) Run(ctx context.Context, j worker.Job, owner string, wait time.Duration) (jobs.Outcome, string, error) {
	s.mu.Lock()
	s.last = j
	s.mu.Unlock()
	return s.Client.Run(ctx, j, owner, wait)
}

// TestReplaySendsTheMarketItRead: the replay job carries the market's
// record and snapshot count as the api read them (worker.MarketHeaders),
// so that the worker does not read them again.
func TestReplaySendsTheMarketItRead(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	spy := &jobSpy{Client: q.client}
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = st, spy, 30*time.Second })
	slug, _ := snapshotMarket()
	if r := b.replay(store.Pro, replayBody(slug, nil)); r.status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	m, err := st.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.CountSnapshots(t.Context(), slug, store.SnapshotQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := worker.MarketHeaders(m, store.SeriesCount{N: n})
	if err != nil {
		t.Fatal(err)
	}
	spy.mu.Lock()
	got := spy.last.Headers
	spy.mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s = %q, want %q", k, got[k], v)
		}
	}
}
