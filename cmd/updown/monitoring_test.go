package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/store/redis/redistest"
)

// TestMonitoringAccess: the monitoring UI is off in production without an
// admin token, asks for the token by HTTP Basic auth with one, is open in
// dev, and never shows a customer job's payload, result or error text.
func TestMonitoringAccess(t *testing.T) {
	t.Parallel()
	connOpt, err := asynq.ParseRedisURI(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "secret-strategy-777"
	client := asynq.NewClient(connOpt)
	defer client.Close()
	// One task waits; one failed, its error quoting the customer's prompt.
	if _, err := client.Enqueue(asynq.NewTask("updown:replay", []byte(`{"marketSlug":"`+secret+`"}`)), asynq.Queue("backtest")); err != nil {
		t.Fatal(err)
	}
	failTask(t, connOpt, client, "prompt rejected: "+secret)

	if h := monitoringUI(connOpt, monitoringOptions{}); h != nil {
		t.Fatal("production without MONITORING_ADMIN_TOKEN serves the monitoring UI")
	}
	const token = "admin-token-123"
	serve := func(h http.Handler) string {
		mux := http.NewServeMux()
		mux.Handle("/monitoring/", h)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	prod, dev := serve(monitoringUI(connOpt, monitoringOptions{AdminToken: token})), serve(monitoringUI(connOpt, monitoringOptions{Dev: true}))
	get := func(url string, auth func(*http.Request)) (int, http.Header, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != nil {
			auth(req)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	basic := func(user, password string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, password) }
	}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }

	for name, auth := range map[string]func(*http.Request){"none": nil, "wrong password": basic("admin", "wrong"),
		"token as user name": basic(token, ""), "bearer": bearer, "token and more": basic("admin", token+"x")} {
		status, h, _ := get(prod+"/monitoring/api/queues", auth)
		if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("production, auth %s: %d %v; want 401 asking for Basic auth", name, status, h.Get("WWW-Authenticate"))
		}
	}
	paths := []string{"/monitoring/api/queues/backtest/pending_tasks", "/monitoring/api/queues/replay/archived_tasks"}
	for _, c := range []struct {
		name string
		base string
		auth func(*http.Request)
	}{{"production with the token", prod, basic("anyone", token)}, {"dev", dev, nil}} {
		if status, _, body := get(c.base+"/monitoring/", c.auth); status != http.StatusOK || !strings.Contains(body, "<html") {
			t.Errorf("%s: the UI page: %d", c.name, status)
		}
		for _, p := range paths {
			status, _, body := get(c.base+p, c.auth)
			if status != http.StatusOK || !strings.Contains(body, `"tasks"`) {
				t.Fatalf("%s %s: %d %s", c.name, p, status, body)
			}
			if strings.Contains(body, secret) {
				t.Errorf("%s %s shows the customer's data: %s", c.name, p, body)
			}
		}
		if _, _, body := get(c.base+paths[1], c.auth); !strings.Contains(body, hiddenErrorText) {
			t.Errorf("%s: the failed task's error is not marked hidden: %s", c.name, body)
		}
	}
}

// failTask runs one task through a real Asynq server whose handler fails
// with msg, and waits until the task is archived with that error.
func failTask(t *testing.T, connOpt asynq.RedisConnOpt, client *asynq.Client, msg string) {
	t.Helper()
	srv := asynq.NewServer(connOpt, asynq.Config{Queues: map[string]int{"replay": 1}, Concurrency: 1, LogLevel: asynq.FatalLevel})
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return errors.New(msg) })); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if _, err := client.Enqueue(asynq.NewTask("updown:replay", []byte(`{}`)), asynq.Queue("replay"), asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(connOpt)
	defer insp.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if tasks, err := insp.ListArchivedTasks("replay"); err == nil && len(tasks) == 1 && strings.Contains(tasks[0].LastErr, msg) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the failing task was not archived within 20s")
}

// TestMonitoringWrites (issue 28, item 6): the UI is read-only unless
// MONITORING_WRITE; a request that changes the queues is refused with 403
// when the browser says it comes from another origin, credentials or not;
// with MONITORING_WRITE a same-origin one goes through.
func TestMonitoringWrites(t *testing.T) {
	t.Parallel()
	connOpt, err := asynq.ParseRedisURI(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(connOpt)
	defer client.Close()
	if _, err := client.Enqueue(asynq.NewTask("updown:replay", []byte(`{}`)), asynq.Queue("replay")); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(connOpt)
	defer insp.Close()
	paused := func() bool {
		t.Helper()
		q, err := insp.GetQueueInfo("replay")
		if err != nil {
			t.Fatal(err)
		}
		return q.Paused
	}
	const token = "admin-token-123"
	serve := func(o monitoringOptions) string {
		mux := http.NewServeMux()
		mux.Handle("/monitoring/", monitoringUI(connOpt, o))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	send := func(method, url string, headers map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		req.SetBasicAuth("ops", token)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	crossSite := map[string]map[string]string{
		"cross-site form":                {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		"same-site, other origin":        {"Origin": "https://other.example.com", "Sec-Fetch-Site": "same-site"},
		"old browser, other origin":      {"Origin": "https://evil.example"},
		"opaque origin":                  {"Origin": "null"},
		"fetch metadata only":            {"Sec-Fetch-Site": "cross-site"},
		"user-typed, no origin (a link)": {"Sec-Fetch-Site": "none"},
	}
	sameOrigin := func(base string) map[string]string {
		return map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	}

	for _, o := range []monitoringOptions{{AdminToken: token}, {Dev: true}, {AdminToken: token, Write: true}, {Dev: true, Write: true}} {
		base := serve(o)
		pause, resume := base+"/monitoring/api/queues/replay:pause", base+"/monitoring/api/queues/replay:resume"
		for name, h := range crossSite {
			for _, method := range []string{http.MethodPost, http.MethodDelete} {
				if status, body := send(method, pause, h); status != http.StatusForbidden {
					t.Errorf("%+v: %s %s: %d %s, want 403", o, name, method, status, body)
				}
			}
		}
		if paused() {
			t.Fatalf("%+v: a cross-origin request paused the queue", o)
		}
		// The UI reads as before, whoever asks.
		if status, _ := send(http.MethodGet, base+"/monitoring/api/queues", crossSite["cross-site form"]); status != http.StatusOK {
			t.Errorf("%+v: GET the queues: %d", o, status)
		}
		status, body := send(http.MethodPost, pause, sameOrigin(base))
		if !o.Write {
			if status != http.StatusMethodNotAllowed || paused() {
				t.Errorf("%+v: read-only UI, same-origin pause: %d %s (paused %v), want 405 and the queue running", o, status, body, paused())
			}
			continue
		}
		if status >= 300 || !paused() {
			t.Errorf("%+v: same-origin pause with MONITORING_WRITE: %d %s (paused %v)", o, status, body, paused())
		}
		if status, body := send(http.MethodPost, resume, sameOrigin(base)); status >= 300 || paused() {
			t.Errorf("%+v: same-origin resume: %d %s", o, status, body)
		}
	}

	for v, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		if got, err := monitoringWrite(func(string) string { return v }); err != nil || got != want {
			t.Errorf("MONITORING_WRITE=%q: %v %v, want %v", v, got, err, want)
		}
	}
	if _, err := monitoringWrite(func(string) string { return "yes please" }); err == nil {
		t.Error("MONITORING_WRITE=\"yes please\" accepted")
	}
}

// TestMonitoringPageSelfContained (issue 28, item 6): the UI's page loads
// nothing from another host (operators run it air-gapped), under a policy
// that admits only its own files and inline scripts, and that no site may
// frame; it says it is read-only unless MONITORING_WRITE.
func TestMonitoringPageSelfContained(t *testing.T) {
	t.Parallel()
	connOpt, err := asynq.ParseRedisURI(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		mux := http.NewServeMux()
		mux.Handle("/monitoring/", monitoringUI(connOpt, monitoringOptions{Dev: true, Write: write}))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		// The page, and the page again for an address of the app's own.
		for _, p := range []string{"/monitoring/", "/monitoring/queues/replay"} {
			res, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			page := string(b)
			if res.StatusCode != http.StatusOK || !strings.Contains(page, `<div id="root">`) {
				t.Fatalf("%s: %d %s", p, res.StatusCode, page)
			}
			for _, m := range regexp.MustCompile(`(?i)(?:src|href)=["']?([^"' >]*)`).FindAllStringSubmatch(page, -1) {
				if u := m[1]; strings.Contains(u, "//") || strings.Contains(strings.ToLower(u), "http") {
					t.Errorf("%s loads %s from outside", p, u)
				}
			}
			if strings.Contains(page, "googleapis") || strings.Contains(page, "https://") {
				t.Errorf("%s still names an external URL", p)
			}
			csp := res.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("%s: Content-Security-Policy %q lacks %q", p, csp, want)
				}
			}
			if strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
				t.Errorf("%s: Content-Security-Policy %q admits other hosts or any inline script", p, csp)
			}
			for _, m := range inlineScript.FindAllStringSubmatch(page, -1) {
				h := sha256.Sum256([]byte(m[1]))
				if !strings.Contains(csp, base64.StdEncoding.EncodeToString(h[:])) {
					t.Errorf("%s: an inline script is not admitted by its hash", p)
				}
			}
			if flag := fmt.Sprintf(`FLAG_READ_ONLY="%v"`, !write); !strings.Contains(page, flag) {
				t.Errorf("%s with write %v: the page does not say %s", p, write, flag)
			}
		}
	}
}

// TestMonitoringRedisDown: with Redis down, the UI's API answers 503 in
// SPEC 7's envelope, without Redis's address (asynqmon wrote its error,
// address included, as plain text with a 500).
func TestMonitoringRedisDown(t *testing.T) {
	t.Parallel()
	dead := freeAddr(t) // nothing listens there
	ui := monitoringUI(asynq.RedisClientOpt{Addr: dead, DialTimeout: time.Second}, monitoringOptions{Dev: true})
	srv := httptest.NewServer(ui)
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL + "/monitoring/api/queues")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var env struct {
		Success bool `json:"success"`
		Error   struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if res.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(b, &env) != nil || env.Success || env.Error.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("queues with Redis down: %d %s, want 503 SERVICE_UNAVAILABLE in the envelope", res.StatusCode, b)
	}
	if strings.Contains(string(b), dead) {
		t.Errorf("the answer names Redis's address: %s", b)
	}
	if !hasEnvelopeTimestamp(b) {
		t.Errorf("queues with Redis down: %s, want SPEC 7's timestamp in the envelope", b)
	}
}

// hasEnvelopeTimestamp reports whether an error body carries SPEC 7's
// timestamp, an ISO 8601 time.
func hasEnvelopeTimestamp(b []byte) bool {
	var env struct {
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(b, &env) != nil {
		return false
	}
	_, err := time.Parse(time.RFC3339, env.Timestamp)
	return err == nil
}

// TestMonitoringUnknownQueue: a queue nothing was ever queued on (the
// backtest, ai or collect queue of a new deployment, opened from a
// bookmark) is 404 NOT_FOUND in the UI's API, not 503 "Redis is
// unavailable or failing": asynqmon answers it with a 500, as it does a
// failure of Redis.
func TestMonitoringUnknownQueue(t *testing.T) {
	t.Parallel()
	connOpt, err := asynq.ParseRedisURI(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(monitoringUI(connOpt, monitoringOptions{Dev: true}))
	t.Cleanup(srv.Close)
	// The queue's page asks for the queue and for a list of its tasks.
	for _, path := range []string{"/monitoring/api/queues/backtest", "/monitoring/api/queues/backtest/active_tasks",
		"/monitoring/api/queues/backtest/pending_tasks", "/monitoring/api/queues/backtest/scheduled_tasks",
		"/monitoring/api/queues/backtest/retry_tasks", "/monitoring/api/queues/backtest/archived_tasks",
		"/monitoring/api/queues/backtest/completed_tasks"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal(b, &env) != nil || env.Error.Code != "RESOURCE_NOT_FOUND" {
			t.Errorf("%s of a queue never used: %d %s, want 404 RESOURCE_NOT_FOUND in the envelope", path, res.StatusCode, b)
		}
		if !hasEnvelopeTimestamp(b) {
			t.Errorf("%s of a queue never used: %s, want SPEC 7's timestamp in the envelope", path, b)
		}
	}
}

// TestMonitoringUnknownAPIPath: a path under the UI's API that asynqmon
// does not have is 404 in the envelope. asynqmon answers it with its page,
// which, served under /monitoring/api/ where selfContained does not
// rewrite, came with its Google Fonts links and no Content-Security-Policy,
// and a 200 to a caller that expected JSON.
func TestMonitoringUnknownAPIPath(t *testing.T) {
	t.Parallel()
	connOpt, err := asynq.ParseRedisURI(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(monitoringUI(connOpt, monitoringOptions{Dev: true}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/monitoring/api/queues/replay/failed_tasks", "/monitoring/api/nope", "/monitoring/api/"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Success *bool `json:"success"`
			Error   struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal(b, &env) != nil || env.Success == nil || *env.Success || env.Error.Code != "RESOURCE_NOT_FOUND" {
			t.Errorf("%s: %d %.300s, want 404 RESOURCE_NOT_FOUND in the envelope", path, res.StatusCode, b)
		}
		if !hasEnvelopeTimestamp(b) {
			t.Errorf("%s: %.300s, want SPEC 7's timestamp in the envelope", path, b)
		}
		if strings.Contains(string(b), "googleapis") {
			t.Errorf("%s: the answer links Google Fonts", path)
		}
	}
	// The API's own answers are unchanged.
	res, err := http.Get(srv.URL + "/monitoring/api/queues")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"queues"`) {
		t.Errorf("/monitoring/api/queues: %d %.300s", res.StatusCode, b)
	}
}
