package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/worker"
)

// refusingRunner is a job queue that must never be reached: it counts the
// jobs it is handed and fails them.
type refusingRunner struct{ runs atomic.Int64 }

func (r *refusingRunner) Run(context.Context, worker.Job, string, time.Duration) (jobs.Outcome, string, error) {
	r.runs.Add(1)
	return jobs.Outcome{}, "", errors.New("a bad request reached the queue")
}

func (r *refusingRunner) Status(context.Context, string, string) (worker.JobState, error) {
	return worker.JobState{}, worker.ErrJobNotFound
}

// placeholder marks where a mutation's raw JSON goes in a re-encoded body.
const placeholder = "\x00MUTATION\x00"

// mutate returns base (a JSON object) with the value at path (keys, or
// indexes into arrays) replaced by raw JSON text, which may be invalid.
func mutate(t *testing.T, base string, path []any, raw string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	var set func(v any, p []any) any
	set = func(v any, p []any) any {
		if len(p) == 0 {
			return placeholder
		}
		switch k := p[0].(type) {
		case string:
			m := v.(map[string]any)
			m[k] = set(m[k], p[1:])
			return m
		case int:
			a := v.([]any)
			a[k] = set(a[k], p[1:])
			return a
		}
		panic("bad path")
	}
	b, err := json.Marshal(set(doc, path))
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(placeholder)
	return strings.Replace(string(b), string(quoted), raw, 1)
}

// leaves lists the paths of every value in a JSON document.
func leaves(v any, prefix []any) [][]any {
	var out [][]any
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			out = append(out, leaves(c, append(append([]any{}, prefix...), k))...)
		}
	case []any:
		for i, c := range x {
			out = append(out, leaves(c, append(append([]any{}, prefix...), i))...)
		}
	}
	return append(out, prefix)
}

func deepArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// wrongValues are values of the wrong type (or out of every range) for a
// field whose valid value is v.
func wrongValues(v any) []string {
	common := []string{`1e400`, `-1e400`, `true`, deepArrays(100_000), `[1,"a",null]`}
	switch v.(type) {
	case string:
		return append(common, `{}`, `123`, `-0`, `9223372036854775808`)
	case float64:
		return append(common, `{}`, `"NaN"`, `"Infinity"`, `"1e400"`, `"\u0000"`, `"`+"\xff\xfe"+`"`)
	case []any:
		return append(common, `{}`, `"x"`, `123`)
	case map[string]any: // an empty object is a legal one
		return append(common, `"x"`, `123`)
	case bool:
		return append(common, `"true"`, `1`)
	}
	return common
}

// TestBadInputNeverFails throws malformed bodies at every POST endpoint
// that reads one: every answer is a 4xx in the SPEC 7 envelope (never a
// 500), and nothing is done: no job is enqueued, no generation spent, no
// tier changed.
func TestBadInputNeverFails(t *testing.T) {
	st := memory.New()
	loadFixtures(t, st)
	runner := &refusingRunner{}
	srv, err := api.New(api.Config{Store: st, Logger: quiet(), Now: func() time.Time { return now }, Jobs: runner,
		JobWait: time.Second, AI: api.AIConfig{TokenSecret: testSecret}, WebhookSecret: hookSecret})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, store: st, keys: map[store.Tier]string{}, ids: map[store.Tier]string{}, srv: httptestServer(t, srv)}
	for _, tier := range store.Tiers {
		c, err := st.CreateCustomer(t.Context(), store.Customer{Email: strings.ToLower(string(tier)) + "@bad.example", Tier: tier})
		if err != nil {
			t.Fatal(err)
		}
		plain, k := api.NewKey(c.ID)
		if _, err := st.CreateAPIKey(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		b.keys[tier], b.ids[tier] = plain, c.ID
	}
	tok := b.do(http.MethodPost, "/v1/auth/token", b.keys[store.Pro], "", "").json(t)["access_token"].(string)
	slug, _ := snapshotMarket()

	type endpoint struct {
		path string
		base string
		send func(body string) response
	}
	withKey := func(path string) func(string) response {
		return func(body string) response {
			return b.do(http.MethodPost, path, b.keys[store.Enterprise], "application/json", body)
		}
	}
	withToken := func(path string) func(string) response {
		return func(body string) response {
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			return sendReq(t, req)
		}
	}
	var hookN int
	hook := func(body string) response {
		hookN++
		return b.deliver(signed(t, hookSecret, fmt.Sprintf("msg_bad_%d", hookN), now, []byte(body)))
	}
	hookBase := string(hookEvent{id: "x", typ: "subscription.active", at: now, customerID: b.ids[store.Starter],
		email: "starter@bad.example", tier: "ENTERPRISE"}.body())
	endpoints := []endpoint{
		{"/v1/replay", `{"marketSlug":"` + slug + `","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],` +
			`"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":100,"maxLossPercent":20,"orderType":"MARKET"}`,
			withKey("/v1/replay")},
		{"/v1/backtest-ai/generate", `{"prompt":"buy UP when price_up drops below 0.35","preset":"dip_buying","coin":"BTC","marketType":"15m",` +
			`"marketCount":5,"positionSize":100,"maxLossPercent":20,"orderType":"MARKET"}`, withToken("/v1/backtest-ai/generate")},
		{"/v1/backtest-ai/strategy", `{"prompt":"buy UP when price_up drops below 0.35","coin":"BTC","marketType":"15m","marketCount":5}`,
			withToken("/v1/backtest-ai/strategy")},
		{"/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET",` +
			`"coin":"BTC","marketType":"15m","marketCount":5}`, withToken("/v1/backtest-ai/run")},
		{"/v1/webhook/dodo", hookBase, hook},
	}
	// Whole bodies that no endpoint accepts.
	wholeBodies := map[string]string{
		"empty": "", "null": "null", "array": "[]", "number": "1e400", "string": `"NaN"`, "true": "true",
		"deep arrays": deepArrays(100_000), "deep objects": strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000),
		"invalid UTF-8": "{\"prompt\":\"\xff\xfe\xfd\"", "truncated": `{"side":"UP",`, "oversized": `{"prompt":"` + strings.Repeat("a", 2<<20) + `"}`,
		"NUL": "{\x00}", "two objects": `{} {}`,
	}

	check := func(name string, r response) {
		t.Helper()
		if r.status < 400 || r.status >= 500 {
			t.Errorf("%s: status %d, want a 4xx: %.300s", name, r.status, r.body)
			return
		}
		var env struct {
			Success *bool `json:"success"`
			Error   struct{ Code, Message string }
		}
		if err := json.Unmarshal(r.body, &env); err != nil || env.Success == nil || *env.Success || env.Error.Code == "" || env.Error.Message == "" {
			t.Errorf("%s: %d answer is not the error envelope: %.300s", name, r.status, r.body)
		}
	}
	cases := 0
	for _, ep := range endpoints {
		for name, body := range wholeBodies {
			check(ep.path+" "+name, ep.send(body))
			cases++
		}
		var doc any
		if err := json.Unmarshal([]byte(ep.base), &doc); err != nil {
			t.Fatal(err)
		}
		for _, path := range leaves(doc, nil) {
			if len(path) == 0 {
				continue
			}
			if ep.path == "/v1/webhook/dodo" && !hookFieldRead(path) {
				continue // fields the server ignores may hold anything
			}
			var v any = doc
			for _, k := range path {
				switch k := k.(type) {
				case string:
					v = v.(map[string]any)[k]
				case int:
					v = v.([]any)[k]
				}
			}
			for _, raw := range wrongValues(v) {
				body := mutate(t, ep.base, path, raw)
				check(fmt.Sprintf("%s %v=%.40s", ep.path, path, raw), ep.send(body))
				cases++
			}
		}
	}
	t.Logf("%d bad requests, all 4xx in the envelope", cases)

	if n := runner.runs.Load(); n != 0 {
		t.Errorf("%d bad requests reached the job queue", n)
	}
	for tier, id := range b.ids {
		c, err := st.GetCustomer(t.Context(), id)
		if err != nil || c.Tier != tier {
			t.Errorf("customer %s: tier %s (%v), want %s unchanged", id, c.Tier, err, tier)
		}
	}
	if q := b.do(http.MethodGet, "/v1/backtest-ai/quota", "", "", ""); q.status != http.StatusUnauthorized {
		t.Errorf("quota without a token: %d", q.status)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/backtest-ai/quota", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if q := sendReq(t, req); !bytes.Contains(q.body, []byte(`"used":0`)) {
		t.Errorf("bad requests spent a generation: %s", q.body)
	}
}

// hookFieldRead reports whether the webhook handler reads the field at
// path (the rest of a billing event is recorded, not interpreted).
func hookFieldRead(path []any) bool {
	p := fmt.Sprint(path...)
	for _, f := range []string{"type", "timestamp", "data", "datametadata", "datametadataupdown_customer_id", "datametadatatier",
		"datacustomer", "datacustomeremail"} {
		if p == f {
			return true
		}
	}
	return false
}

func sendReq(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: buf.Bytes()}
}
