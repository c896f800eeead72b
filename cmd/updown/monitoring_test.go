package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

	if h := monitoringUI(connOpt, false, ""); h != nil {
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
	prod, dev := serve(monitoringUI(connOpt, false, token)), serve(monitoringUI(connOpt, true, ""))
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
