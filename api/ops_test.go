package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/updown/updown/api"
)

// TestReadyzNamesOnlyTheStalledCheck: one dependency that stalls (Redis
// stuck or cut off: its ping waits out the deadline) is named unavailable
// in /readyz, and only it: the others are asked in their own time, not in
// what the stalled one left of a deadline they shared, which named a
// healthy store unavailable beside a stalled Redis.
func TestReadyzNamesOnlyTheStalledCheck(t *testing.T) {
	t.Parallel()
	checks := map[string]func(context.Context) error{
		"redis": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	}
	for i := range 8 { // healthy, and in any order beside the stalled one
		checks[fmt.Sprintf("store%d", i)] = func(ctx context.Context) error { return ctx.Err() }
	}
	h := api.OpsHandler(prometheus.NewRegistry(), checks, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body struct {
			Status string            `json:"status"`
			Checks map[string]string `json:"checks"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("readyz with a stalled check: %d %s", rec.Code, rec.Body)
		}
		for name, got := range body.Checks {
			want := "ok"
			if name == "redis" {
				want = "unavailable"
			}
			if got != want {
				t.Errorf("check %s is %q, want %q (all: %v)", name, got, want, body.Checks)
			}
		}
	}
}
