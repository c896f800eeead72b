package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/store/redis/redistest"
)

// TestMonitoringHidesPayloads: the read-only UI shows queues and tasks but
// not their payloads; the admin token shows them.
func TestMonitoringHidesPayloads(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	client := asynq.NewClientFromRedisClient(rdb)
	if _, err := client.Enqueue(asynq.NewTask("updown:replay", []byte(`{"marketSlug":"secret-strategy-777"}`)), asynq.Queue("replay")); err != nil {
		t.Fatal(err)
	}
	opt := asynq.RedisClientOpt{Addr: rdb.Options().Addr}
	mux := http.NewServeMux()
	mux.Handle("/monitoring/", monitoringUI(opt, "admin-token-123"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(auth string) string {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/monitoring/api/queues/replay/pending_tasks", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		return string(b)
	}
	if body := get(""); strings.Contains(body, "secret-strategy-777") || !strings.Contains(body, "shown with the admin token") {
		t.Errorf("read-only UI shows the payload: %s", body)
	}
	if body := get("Bearer wrong"); strings.Contains(body, "secret-strategy-777") {
		t.Errorf("a wrong token shows the payload")
	}
	if body := get("Bearer admin-token-123"); !strings.Contains(body, "secret-strategy-777") {
		t.Errorf("the admin token does not show the payload: %s", body)
	}
}
