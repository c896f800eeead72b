package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestRequestLog: every request is logged once with its method, route
// pattern, status, duration and request id, and nothing secret: not the
// API key, not the path or query a client wrote.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	b := setup(t, func(o *setupOpts) { o.logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	key := b.keys[store.Pro]
	for _, c := range []struct {
		path, key, id string
		status        int
		route         string
	}{
		{"/v1/markets?coin=BTC&limit=1&secret_in_query=sq123", key, "req-ok-1", 200, "GET /v1/markets"},
		{"/v1/markets?coin=BTC", key[:len(key)-3] + "zzz", "req-badkey-2", 401, "GET /v1/markets"},
		{"/v1/no-such-path-pq456", key, "req-404-3", 404, "unmatched"},
	} {
		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+c.path, nil)
		req.Header.Set("X-API-Key", c.key)
		req.Header.Set("X-Request-Id", c.id)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var found map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == c.id {
				if found != nil {
					t.Errorf("%s logged twice", c.id)
				}
				found = rec
			}
		}
		if found == nil {
			t.Fatalf("no request log for %s:\n%s", c.id, logs.String())
		}
		d, _ := found["duration"].(float64)
		if found["method"] != "GET" || found["route"] != c.route || found["status"] != float64(c.status) || d <= 0 || found["level"] != "INFO" {
			t.Errorf("request log of %s: %v", c.path, found)
		}
	}
	all := logs.String()
	for _, secret := range []string{key, key[len(key)-12:], "sq123", "pq456"} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
}
