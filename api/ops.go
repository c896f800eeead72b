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

// readiness runs every check with a short deadline and reports each.
func readiness(ctx context.Context, checks map[string]func(context.Context) error, log *slog.Logger) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	results := map[string]string{}
	ok := true
	for name, check := range checks {
		if err := check(ctx); err != nil {
			ok = false
			results[name] = "unavailable"
			// A check that says which of its parts failed is named in
			// the body; its detail (addresses, errors) goes to the log
			// only.
			var r interface{ Reason() string }
			if errors.As(err, &r) {
				results[name] += ": " + r.Reason()
			}
			log.WarnContext(ctx, "readiness check failed", "check", name, "err", err)
			continue
		}
		results[name] = "ok"
	}
	if !ok {
		return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": results}
	}
	return http.StatusOK, map[string]any{"status": "ready", "checks": results}
}
