package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrStarting is a readiness check's failure while its process starts (it
// opens its backends or waits for the schema): expected, so a probe that
// meets it is not logged as a warning.
var ErrStarting = errors.New("starting")

// OpsHandler serves the operational endpoints every updown process has:
// GET /healthz (alive), GET /readyz (every check answers; 503 otherwise)
// and GET /metrics (Prometheus). The worker and collector processes serve
// it on their own port; the api mounts the same endpoints beside its routes.
func OpsHandler(reg *prometheus.Registry, checks map[string]func(context.Context) error, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		status, body := readiness(r.Context(), checks, log)
		writeJSON(w, status, body)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// readiness runs every check with a short deadline and reports each. The
// checks run side by side: one after another, a check that stalls (a
// Redis stuck or cut off) used up the deadline of those after it, and a
// healthy dependency was named unavailable beside it.
func readiness(ctx context.Context, checks map[string]func(context.Context) error, log *slog.Logger) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	done := make(chan result, len(checks))
	for name, check := range checks {
		go func() { done <- result{name, check(ctx)} }()
	}
	results := map[string]string{}
	ok := true
	for range checks {
		r := <-done
		if r.err != nil {
			ok = false
			results[r.name] = "unavailable"
			// A check that says which of its parts failed is named in
			// the body; its detail (addresses, errors) goes to the log
			// only.
			var reason interface{ Reason() string }
			if errors.As(r.err, &reason) {
				results[r.name] += ": " + reason.Reason()
			}
			level := slog.LevelWarn
			if errors.Is(r.err, ErrStarting) {
				level = slog.LevelDebug
			}
			log.Log(ctx, level, "readiness check failed", "check", r.name, "err", r.err)
			continue
		}
		results[r.name] = "ok"
	}
	if !ok {
		return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": results}
	}
	return http.StatusOK, map[string]any{"status": "ready", "checks": results}
}
