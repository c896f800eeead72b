package api

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// testCall is a check of the keys {t}:m and {t}:d against lm per minute
// and ld per day, of a principal not from the cache.
func testCall(lm, ld int) *rateCall {
	return &rateCall{keys: []string{"{t}:m", "{t}:d", "{t}:gen"}, args: []any{lm, ld, 120, 90000, -1}}
}

// TestRateLimiterBatches sends many checks at once through one limiter:
// every one is answered, in some order, exactly as if they had been run
// one by one.
func TestRateLimiterBatches(t *testing.T) {
	rdb := redistest.Client(t)
	l := newRateLimiter(rdb, DefaultRedisTimeout)
	const n, limit = 200, 150
	var wg sync.WaitGroup
	got := make([][]int64, n)
	for i := range n {
		wg.Go(func() {
			res, err := l.count(t.Context(), testCall(limit, 0))
			if err != nil {
				t.Error(err)
			}
			got[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var minutes []int64
	refused := 0
	for _, r := range got {
		switch r[2] {
		case 0:
			minutes = append(minutes, r[0])
		case 1:
			refused++
			if r[0] != limit {
				t.Errorf("a refused check reports %d counted, want %d", r[0], limit)
			}
		default:
			t.Errorf("answer %v", r)
		}
	}
	slices.Sort(minutes)
	for i, m := range minutes {
		if m != int64(i+1) {
			t.Fatalf("counted checks saw %v, want 1..%d each once", minutes, limit)
		}
	}
	if len(minutes) != limit || refused != n-limit {
		t.Errorf("%d counted and %d refused, want %d and %d", len(minutes), refused, limit, n-limit)
	}
	if v, _ := rdb.Get(context.Background(), "{t}:d").Int(); v != limit {
		t.Errorf("day counter = %d, want %d: refused checks must not count", v, limit)
	}
	if ttl := rdb.TTL(context.Background(), "{t}:m").Val(); ttl <= 0 {
		t.Errorf("minute counter TTL = %v, want one set", ttl)
	}
	// The flusher answers a round's checks before it looks for more and
	// stops: it goes idle at once, though not necessarily before the last
	// check it answered has returned.
	idle := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return !l.flushing && len(l.pending) == 0
	}
	for deadline := time.Now().Add(2 * time.Second); !idle(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("limiter still flushing 2 s after every check was answered")
		}
	}
}

// TestRateLimiterScriptFlushed: checks still work after Redis forgot the
// script (a restart or SCRIPT FLUSH).
func TestRateLimiterScriptFlushed(t *testing.T) {
	rdb := redistest.Client(t)
	l := newRateLimiter(rdb, DefaultRedisTimeout)
	for want := int64(1); want <= 3; want++ {
		if err := rdb.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := l.count(t.Context(), testCall(0, 0))
		if err != nil || res[0] != want {
			t.Fatalf("check %d after SCRIPT FLUSH: %v, %v", want, res, err)
		}
	}
}

// TestRateLimiterGivenUp: a check whose request is gone before it is sent
// is not counted.
func TestRateLimiterGivenUp(t *testing.T) {
	rdb := redistest.Client(t)
	l := newRateLimiter(rdb, DefaultRedisTimeout)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.count(ctx, testCall(0, 0)); !errors.Is(err, context.Canceled) {
		t.Errorf("check with a cancelled context: %v, want context.Canceled", err)
	}
	res, err := l.count(t.Context(), testCall(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != 1 {
		t.Errorf("count after a check given up before it was sent = %d, want 1", res[0])
	}
}

// stackHook records the call stacks pipelines are sent from.
type stackHook struct {
	mu     sync.Mutex
	stacks []string
}

func (h *stackHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *stackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *stackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		buf := make([]byte, 64<<10)
		buf = buf[:runtime.Stack(buf, false)]
		h.mu.Lock()
		h.stacks = append(h.stacks, string(buf))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestRateLimiterLoneCheckInline (issue 27): a check that finds nobody
// flushing is sent from its request's own goroutine, not from a goroutine
// started for it, whose start and hand-back were on every lone request's
// path besides the round trip.
func TestRateLimiterLoneCheckInline(t *testing.T) {
	rdb := redistest.Client(t)
	var h stackHook
	rdb.AddHook(&h)
	l := newRateLimiter(rdb, DefaultRedisTimeout)
	if _, err := l.count(t.Context(), testCall(0, 0)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.stacks) == 0 || strings.Contains(h.stacks[len(h.stacks)-1], "(*rateLimiter).flush") {
		t.Errorf("a lone check was not sent from its request's goroutine: %q", h.stacks)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flushing || len(l.pending) != 0 {
		t.Error("the limiter is still flushing after a lone check returned")
	}
}

// TestLocalLimitsWindowsOnlyMoveOn: a request whose check in Redis failed
// late (it took up to RedisTimeout) can still name the window it began
// in after a later request has moved the process's count to the next
// one. Such a late request must not start the old window afresh and drop
// the new one's count: at every minute (and day) boundary of an outage,
// a request of the old window would otherwise let a new allowance
// through, for every customer of the process.
func TestLocalLimitsWindowsOnlyMoveOn(t *testing.T) {
	// A late request of minute 11 does not wipe minute 12's count.
	var m localLimits
	lim := RateLimit{PerMinute: 1}
	m.count("c", 12, 0, lim, notExempt)
	m.count("c", 11, 0, lim, notExempt)
	if w := m.count("c", 12, 0, lim, notExempt); w != windowMinute {
		t.Errorf("the second request of minute 12 (limit 1) after a late one of minute 11: refused by %q, want the minute", w)
	}
	// Days likewise.
	var d localLimits
	lim = RateLimit{PerDay: 1}
	d.count("c", 100, 5, lim, notExempt)
	d.count("c", 99, 4, lim, notExempt)
	if w := d.count("c", 101, 5, lim, notExempt); w != windowDay {
		t.Errorf("the second request of day 5 (limit 1) after a late one of day 4: refused by %q, want the day", w)
	}
}

// TestLocalLimitsExemptions: with Redis failing, the process's own count
// exempts operations as rateScript does (exemptionOf): key revocation
// goes through a full minute and a full day, the account past a full day
// only, and neither counts past a full window.
func TestLocalLimitsExemptions(t *testing.T) {
	var l localLimits
	lim := RateLimit{PerMinute: 2, PerDay: 3}
	for range 2 {
		if w := l.count("c", 1, 0, lim, notExempt); w != "" {
			t.Fatalf("a request within the limits: refused by %q", w)
		}
	}
	if w := l.count("c", 1, 0, lim, notExempt); w != windowMinute {
		t.Errorf("a data request past the minute's limit: refused by %q, want the minute", w)
	}
	if w := l.count("c", 1, 0, lim, exemptDay); w != windowMinute {
		t.Errorf("the account past the minute's limit: refused by %q, want the minute", w)
	}
	if w := l.count("c", 1, 0, lim, exemptAll); w != "" {
		t.Errorf("a key revocation past the minute's limit: refused by %q, want let through", w)
	}
	if got := l.perMinute["c"]; got != 2 {
		t.Errorf("minute count %d after a request let through past it, want 2", got)
	}
	l.count("c", 2, 0, lim, notExempt) // the day's third
	if w := l.count("c", 3, 0, lim, notExempt); w != windowDay {
		t.Errorf("past the day's limit: refused by %q, want the day", w)
	}
	for _, e := range []rateExemption{exemptDay, exemptAll} {
		if w := l.count("c", 3, 0, lim, e); w != "" {
			t.Errorf("exemption %d past the day's limit: refused by %q, want let through", e, w)
		}
	}
	if got := l.perDay["c"]; got != 3 {
		t.Errorf("day count %d after requests let through past it, want 3", got)
	}
}
