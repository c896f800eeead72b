package collect

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
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
	log   *slog.Logger
	every time.Duration
	now   func() time.Time // time.Now when nil

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newRateLog(log *slog.Logger, every time.Duration) *rateLog {
	return &rateLog{log: log, every: every, last: map[string]time.Time{}, held: map[string]int{}}
}

// warn logs msg at warn level unless the same key and message were
// logged within the interval. Keys not seen for an interval are
// forgotten, their held-back count logged: some name a market ("write
// "+slug), and markets come and go for the process's life.
func (r *rateLog) warn(ctx context.Context, key, msg string, args ...any) {
	full := key + "|" + msg
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	r.mu.Lock()
	if last, ok := r.last[full]; ok && now.Sub(last) < r.every {
		r.held[full]++
		r.mu.Unlock()
		return
	}
	type heldBack struct {
		key string
		n   int
	}
	var gone []heldBack
	for k, t := range r.last {
		if k != full && now.Sub(t) >= r.every {
			if n := r.held[k]; n > 0 {
				gone = append(gone, heldBack{k, n})
			}
			delete(r.last, k)
			delete(r.held, k)
		}
	}
	held := r.held[full]
	r.last[full], r.held[full] = now, 0
	r.mu.Unlock()
	for _, g := range gone {
		k, m, _ := strings.Cut(g.key, "|")
		r.log.WarnContext(ctx, m, "key", k, "suppressed", g.n, "suppressed_over", r.every.String())
	}
	if held > 0 {
		args = append(args, "suppressed", held, "suppressed_over", r.every.String())
	}
	r.log.WarnContext(ctx, msg, args...)
}
