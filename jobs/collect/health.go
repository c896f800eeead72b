package collect

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/updown/updown/jobs/throttle"
)

// UpstreamStatus is what a collector knows of one upstream's health.
type UpstreamStatus struct {
	Name        string
	Requests    int64     // requests answered or failed, retries included
	Errors      int64     // failed requests, retries included
	LastSuccess time.Time // zero: never
	LastError   time.Time // zero: never
	LastErr     string    // the last failure's message
	// Healthy is false when the upstream has failed and not answered well
	// for UnhealthyAfter (or since the collector started).
	Healthy bool
}

// upstreamHealth follows the upstreams' successes and failures, for
// readiness and /metrics (Collector.Health).
type upstreamHealth struct {
	now     func() time.Time
	started time.Time
	after   time.Duration

	mu sync.Mutex
	m  map[string]*UpstreamStatus
}

func newUpstreamHealth(now func() time.Time, after time.Duration) *upstreamHealth {
	return &upstreamHealth{now: now, started: now(), after: after, m: map[string]*UpstreamStatus{}}
}

func (h *upstreamHealth) get(name string) *UpstreamStatus {
	s := h.m[name]
	if s == nil {
		s = &UpstreamStatus{Name: name}
		h.m[name] = s
	}
	return s
}

// track makes the upstream known, so that it is reported before its first
// request.
func (h *upstreamHealth) track(name string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.get(name)
}

func (h *upstreamHealth) ok(name string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.get(name)
	s.Requests++
	s.LastSuccess = h.now()
}

func (h *upstreamHealth) fail(name string, err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.get(name)
	s.Requests++
	s.Errors++
	s.LastError = h.now()
	s.LastErr = err.Error()
}

// status returns every upstream's status, by name.
func (h *upstreamHealth) status() []UpstreamStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	out := make([]UpstreamStatus, 0, len(h.m))
	for _, s := range h.m {
		st := *s
		since := st.LastSuccess
		if since.IsZero() {
			since = h.started
		}
		// Failing, with no good answer for a while: not healthy. An
		// upstream that has not been asked yet is given the benefit.
		st.Healthy = !(st.LastError.After(st.LastSuccess) && now.Sub(since) >= h.after)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b UpstreamStatus) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Health returns the health of every upstream the collector speaks to.
func (c *Collector) Health() []UpstreamStatus { return c.health.status() }

// Ready reports an error naming the upstreams that are failing, for a
// readiness check: a collector that cannot reach Polymarket or Binance
// records nothing and must not say it is ready.
func (c *Collector) Ready(context.Context) error {
	var e UpstreamsFailing
	for _, s := range c.health.status() {
		if !s.Healthy {
			e.Names = append(e.Names, s.Name)
			e.details = append(e.details, fmt.Sprintf("%s (no answer since %s: %s)", s.Name, sinceText(s.LastSuccess), s.LastErr))
		}
	}
	if len(e.Names) > 0 {
		return &e
	}
	return nil
}

// UpstreamsFailing is Ready's error: the upstreams failing, by name, and
// what each last answered.
type UpstreamsFailing struct {
	Names   []string
	details []string
}

func (e *UpstreamsFailing) Error() string { return fmt.Sprintf("upstreams failing: %v", e.details) }

// Reason names the upstreams failing, without their errors, for a
// readiness answer.
func (e *UpstreamsFailing) Reason() string { return strings.Join(e.Names, ", ") }

func sinceText(t time.Time) string {
	if t.IsZero() {
		return "start"
	}
	return t.UTC().Format(time.RFC3339)
}

// MissingWindows counts the windows that started without their market
// being found upstream.
func (c *Collector) MissingWindows() int64 { return c.missed.Load() }

// rateLog writes warnings at most once per key every interval, and says
// how many it held back: an upstream that is down fails every request,
// and a log line per failure would bury everything else.
type rateLog struct {
	log      *slog.Logger
	throttle *throttle.Log
}

// newRateLog is a rateLog writing to log; now is its clock (time.Now when
// nil).
func newRateLog(log *slog.Logger, every time.Duration, now func() time.Time) *rateLog {
	return &rateLog{log: log, throttle: throttle.New(every, now)}
}

// warn logs msg at warn level unless the same key and message were
// logged within the interval. Keys not seen for an interval are
// forgotten, their held-back count logged: some name a market ("write
// "+slug), and markets come and go for the process's life.
func (r *rateLog) warn(ctx context.Context, key, msg string, args ...any) {
	ok, held, gone := r.throttle.Allow(key + "|" + msg)
	every := r.throttle.Every().String()
	for _, g := range gone {
		k, m, _ := strings.Cut(g.Key, "|")
		r.log.WarnContext(ctx, m, "key", k, "suppressed", g.N, "suppressed_over", every)
	}
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "suppressed", held, "suppressed_over", every)
	}
	r.log.WarnContext(ctx, msg, args...)
}
