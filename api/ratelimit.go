package api

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
)

// Rate limiting (DESIGN 4, REFERENCE "rate limits").
//
// Every authenticated request is counted per customer in two fixed
// windows, the UTC minute and the UTC day ("daily limits reset at 00:00
// UTC"), by one Lua script in Redis: the windows are shared by every api
// process and a request is checked and counted in one atomic step. A
// request that would pass a limit is refused (429 RATE_LIMIT_EXCEEDED with
// Retry-After) and not counted, so a client that keeps knocking while
// limited does not push its reset further away.
//
// Counter keys name the customer and the tier,
//
//	updown:rl:{<customer id>}:<TIER>:m:<unix minute>
//	updown:rl:{<customer id>}:<TIER>:d:<unix day>
//
// so a tier change (SPEC 3.2) starts fresh counters in every process at
// once, even a request already past authentication under the old tier
// cannot count against the new one, and the webhook's explicit reset
// (resetRateLimits) is a belt to those braces. The braces are a Redis
// Cluster hash tag: a customer's keys share a slot, so the script may touch
// them together.
//
// Each process sends its concurrent requests' checks to Redis together, in
// one pipeline per round trip (rateLimiter), rather than one round trip
// each: under load a round trip serves many requests, which is what keeps
// limiting cheap (BenchmarkRateLimitCost).
//
// With Config.Redis nil, limiting is off: nothing is counted, no
// X-RateLimit-* headers are sent and /v1/account reports usage as null.
//
// When Redis fails (down, slow, refusing), requests go on after at most
// Config.RedisTimeout, and the failure is logged as a warning (at most
// every 10 s, not per request): the limiter guards the service, and
// turning a Redis outage into an outage of every data endpoint would do
// more harm than a few requests over a limit. They are not unmetered,
// though: each process counts them itself (localLimits) against the same
// limits, in the same windows, and refuses past them. A customer's own
// burst can make the check slow (a loaded process answers its Redis round
// trips late): let through unmetered, the burst's requests would go past
// any limit, as many as it held; counted here, they go past it by at most
// one allowance per process. Such answers carry X-Tier but no X-RateLimit-*
// headers (the shared counts are unknown). /readyz reports Redis
// (Config.Checks) for the operator.

// RateLimit is a request allowance per customer. Zero (or negative) fields
// are unlimited.
type RateLimit struct {
	PerMinute int
	PerDay    int
}

// DefaultRedisTimeout is Config.RedisTimeout's default: how long a request
// waits for its check, so that a slow Redis delays requests by at most
// this much before they go on, counted by the process alone (localLimits).
// The pipeline itself is cut off at the same time only when the Redis
// client is made with ContextTimeoutEnabled (else at its ReadTimeout).
const DefaultRedisTimeout = 250 * time.Millisecond

// DefaultJobRedisTimeout is Config.JobRedisTimeout's default.
const DefaultJobRedisTimeout = 2 * time.Second

// rateKeyPrefix starts every rate-limit key.
const rateKeyPrefix = "updown:rl:{"

// rateScript checks and counts one request. KEYS: the minute and day
// counters and the customer's generation (authGenKey). ARGV: the
// per-minute and per-day limits (0: none; a negative limit −L is one
// that refuses nothing, the request counted in its window only while it
// is under L), the two counters' time to live
// in seconds, and the generation the caller's principal was cached at (-1:
// not cached, nothing to check). Returns {minute count, day count,
// refused, generation} where refused is 0 (counted), 1 (minute limit), 2
// (day limit) or 3 (stale: the customer changed since the principal was
// cached; nothing counted, the caller looks it up afresh and asks again);
// the counts include the request when it was counted. It counts first and
// takes a refused request back out, all in one atomic step: the common
// path is a GET and two INCRs, the cheapest script that can be (Redis runs
// it in about 3 µs).
var rateScript = redis.NewScript(`
local g = tonumber(redis.call('GET', KEYS[3]) or '0')
local want = tonumber(ARGV[5])
if want >= 0 and want ~= g then return {0, 0, 3, g} end
local m = redis.call('INCR', KEYS[1])
local d = redis.call('INCR', KEYS[2])
if m == 1 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if d == 1 then redis.call('EXPIRE', KEYS[2], ARGV[4]) end
local lm, ld = tonumber(ARGV[1]), tonumber(ARGV[2])
local minuteCounted, dayCounted = true, true
if lm < 0 then
	if m > -lm then
		redis.call('DECR', KEYS[1])
		m, minuteCounted = m - 1, false
	end
	lm = 0
end
if ld < 0 then
	if d > -ld then
		redis.call('DECR', KEYS[2])
		d, dayCounted = d - 1, false
	end
	ld = 0
end
local refused = 0
if ld > 0 and d > ld then refused = 2 elseif lm > 0 and m > lm then refused = 1 end
if refused > 0 then
	if minuteCounted then
		redis.call('DECR', KEYS[1])
		m = m - 1
	end
	if dayCounted then
		redis.call('DECR', KEYS[2])
		d = d - 1
	end
	return {m, d, refused, g}
end
return {m, d, 0, g}
`)

// rateWindow names a limiter window.
type rateWindow string

const (
	windowMinute rateWindow = "minute"
	windowDay    rateWindow = "day"
)

// rateUsage is what counting one request found.
type rateUsage struct {
	// Limit is the customer's allowance.
	Limit RateLimit
	// Counted is false when limiting is off or Redis failed; the counts
	// are then unknown.
	Counted bool
	// Minute and Day are the requests counted in the current windows,
	// this one included when it was let through.
	Minute, Day int64
	// MinuteReset and DayReset are when the current windows end.
	MinuteReset, DayReset time.Time
	// Exceeded names the window whose limit refused the request ("": let
	// through).
	Exceeded rateWindow
	// stale: nothing was counted, because the principal was cached before
	// the customer last changed (authcache.go); gen is the customer's
	// generation then.
	stale bool
	gen   int64
}

// rateLimitFor returns the caller's allowance: on a plan with limits per
// customer (ENTERPRISE), the customer's own where set
// (`updown customers set-limits`); otherwise, or for a limit the customer
// has not set, Config.RateLimits' entry for the tier when there is one,
// else the plan table's.
func (s *Server) rateLimitFor(p Plan, c store.Customer) RateLimit {
	l, ok := s.cfg.RateLimits[p.Tier]
	if !ok {
		l = RateLimit{PerMinute: p.PerMinute, PerDay: p.PerDay}
	}
	if p.CustomLimits {
		if c.Limits.PerMinute > 0 {
			l.PerMinute = c.Limits.PerMinute
		}
		if c.Limits.PerDay > 0 {
			l.PerDay = c.Limits.PerDay
		}
	}
	return l
}

// rateWindows returns the windows containing now: their numbers (unix
// minutes and unix days, the keys' suffixes) and their ends.
func rateWindows(now time.Time) (minute, day int64, minuteEnd, dayEnd time.Time) {
	sec := now.Unix()
	minute, day = floorDiv(sec, 60), floorDiv(sec, 86400)
	return minute, day, time.Unix((minute+1)*60, 0).UTC(), time.Unix((day+1)*86400, 0).UTC()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// rateKeys returns the counter keys of the customer under the tier.
func rateKeys(customerID string, tier store.Tier, minute, day int64) (string, string) {
	base := rateKeyPrefix + customerID + "}:" + string(tier)
	return base + ":m:" + strconv.FormatInt(minute, 10), base + ":d:" + strconv.FormatInt(day, 10)
}

// authGenKey is the customer's generation: a counter bumped by every
// change that touches how the customer's requests are authenticated or
// limited (tier, limits, a revoked key; InvalidateCustomer). It shares the
// counters' hash tag, so the rate script reads it in the same step.
func authGenKey(customerID string) string {
	return rateKeyPrefix + customerID + "}:gen"
}

// countRequest checks the caller's request against its plan's limits and
// counts it. It never fails: without Redis the request is let through
// uncounted; when Redis fails (logged), it is counted by this process
// alone (localLimits). A principal from the auth cache
// whose customer has changed since is not counted: the usage is stale, and
// the caller looks the principal up afresh and counts again.
//
// exempt leaves limits out of the check (exemptionOf): exemptDay the
// day's, so the request is refused by the minute's limit only; exemptAll
// both. A limit left out is counted in only while its window has room.
func (s *Server) countRequest(ctx context.Context, p principal, exempt rateExemption) rateUsage {
	now := s.now()
	minute, day, minuteEnd, dayEnd := rateWindows(now)
	u := rateUsage{Limit: s.rateLimitFor(p.Plan, p.Customer), MinuteReset: minuteEnd, DayReset: dayEnd}
	if s.limiter == nil {
		return u
	}
	mk, dk := rateKeys(p.Customer.ID, p.Plan.Tier, minute, day)
	// Keys outlive their window by a minute, so that processes whose
	// clocks differ a little still find them.
	perMinute, perDay := max(u.Limit.PerMinute, 0), max(u.Limit.PerDay, 0)
	if exempt >= exemptDay {
		perDay = -perDay // see rateScript
	}
	if exempt == exemptAll {
		perMinute = -perMinute
	}
	c := &rateCall{
		keys: []string{mk, dk, authGenKey(p.Customer.ID)},
		args: []any{perMinute, perDay,
			int64(minuteEnd.Sub(now)/time.Second) + 61, int64(dayEnd.Sub(now)/time.Second) + 61, p.cachedGen},
	}
	res, err := s.limiter.count(ctx, c)
	if err != nil {
		// A client gone is no sign of Redis down: the request ended first.
		if !s.clientWentAway(ctx, "rate limit check (counted locally)", err) {
			s.limiter.warn(ctx, s.log, p.Customer.ID, err)
		}
		u.Exceeded = s.limiter.local.count(p.Customer.ID+"|"+string(p.Plan.Tier), minute, day, u.Limit, exempt)
		return u
	}
	switch res[2] {
	case 3:
		u.stale, u.gen = true, res[3]
		return u
	case 1:
		u.Exceeded = windowMinute
	case 2:
		u.Exceeded = windowDay
	}
	u.Counted, u.Minute, u.Day = true, res[0], res[1]
	return u
}

// rateLimiter runs rateScript for concurrent requests in batches: a
// request queues its call, and whoever is flushing sends everything queued
// in one pipeline, so a round trip to Redis serves all the requests that
// arrived while the previous one was out. A request that finds nobody
// flushing sends the first batch itself, then leaves what queued meanwhile
// to a flushing goroutine, which exists only while there is work, so an
// idle server holds none.
type rateLimiter struct {
	rdb     redis.UniversalClient
	timeout time.Duration // each check's bound (Config.RedisTimeout)
	// local counts the requests whose check failed.
	local localLimits

	mu       sync.Mutex
	pending  []*rateCall
	flushing bool

	lastWarn atomic.Int64 // unix nanoseconds of the last failure logged
}

// rateCall is one request's check: its keys and arguments, and once done
// is closed, the script's answer or the error.
type rateCall struct {
	ctx  context.Context
	keys []string
	args []any
	res  []int64
	err  error
	done chan struct{}
}

// maxRateBatch bounds one pipeline.
const maxRateBatch = 256

func newRateLimiter(rdb redis.UniversalClient, timeout time.Duration) *rateLimiter {
	return &rateLimiter{rdb: rdb, timeout: timeout}
}

// count runs c's check and returns {minute, day, refused, generation}. It gives up
// after Config.RedisTimeout or when ctx ends; a call given up on is skipped
// if it has not been sent yet.
func (l *rateLimiter) count(ctx context.Context, c *rateCall) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	c.ctx, c.done = ctx, make(chan struct{})
	l.mu.Lock()
	l.pending = append(l.pending, c)
	lead := !l.flushing
	l.flushing = true
	l.mu.Unlock()
	if lead {
		// The first batch goes from the caller's goroutine, its own check
		// in it: a lone request's check then costs the round trip alone,
		// not also a goroutine started and its answer handed back. What
		// queued meanwhile goes on from a goroutine of its own.
		l.send(l.next())
		l.mu.Lock()
		more := len(l.pending) > 0
		if !more {
			l.pending, l.flushing = nil, false
		}
		l.mu.Unlock()
		if more {
			go l.flush()
		}
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, fmt.Errorf("rate limit check: %w", ctx.Err())
	}
}

// flush sends queued calls until none are left.
func (l *rateLimiter) flush() {
	for batch := l.next(); len(batch) > 0; batch = l.next() {
		l.send(batch)
	}
}

// next takes the next batch of queued calls; none when the queue is
// empty, which then has no flusher any more.
func (l *rateLimiter) next() []*rateCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(len(l.pending), maxRateBatch)
	batch := l.pending[:n:n]
	l.pending = l.pending[n:]
	if n == 0 {
		l.pending, l.flushing = nil, false
	}
	return batch
}

// send runs a batch in one pipeline, and calls whose script Redis has
// forgotten (a restart or SCRIPT FLUSH) again with the script's source.
func (l *rateLimiter) send(batch []*rateCall) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil { // its request went on, counted locally
			c.err = fmt.Errorf("rate limit check: %w", err)
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	run := func(calls []*rateCall, eval func(redis.Pipeliner, *rateCall) *redis.Cmd) []*rateCall {
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			cmds[i] = eval(pipe, c)
		}
		_, _ = pipe.Exec(ctx) // errors are per command
		var again []*rateCall
		for i, c := range calls {
			c.res, c.err = cmds[i].Int64Slice()
			if c.err == nil && len(c.res) != 4 {
				c.err = fmt.Errorf("rate limit script answered %v", c.res)
			}
			if redis.HasErrorPrefix(c.err, "NOSCRIPT") {
				again = append(again, c)
				continue
			}
			close(c.done)
		}
		return again
	}
	again := run(live, func(p redis.Pipeliner, c *rateCall) *redis.Cmd { return rateScript.EvalSha(ctx, p, c.keys, c.args...) })
	if len(again) > 0 {
		for _, c := range run(again, func(p redis.Pipeliner, c *rateCall) *redis.Cmd { return rateScript.Eval(ctx, p, c.keys, c.args...) }) {
			close(c.done) // cannot happen: EVAL carries the script
		}
	}
}

// localLimits is this process's count of the requests whose check in
// Redis failed, per customer and tier, in the current minute and day: the
// limits still hold for them, per process. Its maps hold the customers
// who fell back in the current windows and are dropped with them.
type localLimits struct {
	mu          sync.Mutex
	minute, day int64
	perMinute   map[string]int64
	perDay      map[string]int64
}

// count counts a request of key (customer and tier) in the windows minute
// and day as rateScript counts one in Redis, and returns the window whose
// limit refuses it ("": let through, and counted in the windows that have
// room). exempt leaves limits out of the check (exemptionOf).
func (l *localLimits) count(key string, minute, day int64, lim RateLimit, exempt rateExemption) rateWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The windows only move on. A request that found its window before
	// its check failed (up to RedisTimeout later) may name the one before
	// the current: it is counted in the current one, rather than start its
	// own afresh and drop the current one's counts of every customer.
	if l.perMinute == nil || minute > l.minute {
		l.minute, l.perMinute = minute, map[string]int64{}
	}
	if l.perDay == nil || day > l.day {
		l.day, l.perDay = day, map[string]int64{}
	}
	m, d := l.perMinute[key]+1, l.perDay[key]+1
	dayFull := lim.PerDay > 0 && d > int64(lim.PerDay)
	minuteFull := lim.PerMinute > 0 && m > int64(lim.PerMinute)
	switch {
	case dayFull && exempt < exemptDay:
		return windowDay
	case minuteFull && exempt < exemptAll:
		return windowMinute
	}
	if !minuteFull {
		l.perMinute[key] = m
	}
	if !dayFull {
		l.perDay[key] = d
	}
	return ""
}

// rateWarnEvery is how often a failing limiter is logged.
const rateWarnEvery = 10 * time.Second

// warn logs a failed check, at most once per rateWarnEvery, so that a
// Redis outage is loud in the logs without a line per request.
func (l *rateLimiter) warn(ctx context.Context, log *slog.Logger, customerID string, err error) {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last < int64(rateWarnEvery) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	log.WarnContext(ctx, "rate limiter unavailable: each api process counts rate limits on its own, and jobs are refused with 503 (logged at most every 10 s)",
		"request_id", RequestID(ctx), "customer_id", customerID, "err", err)
}

// resetRateLimits is ResetRateLimits on the server's Redis; it does
// nothing without Redis.
func (s *Server) resetRateLimits(ctx context.Context, customerID string) error {
	if s.limiter == nil {
		return nil
	}
	return ResetRateLimits(ctx, s.limiter.rdb, customerID, s.now())
}

// ResetRateLimits clears the customer's counters of the current windows
// (at now) under every tier, so that a tier change starts from nothing
// (SPEC 3.2), and bumps the customer's generation, so that every
// process's auth cache drops what it holds of the customer at its next
// request (InvalidateCustomer). A billing webhook's tier change calls it,
// and so does the CLI's set-tier.
func ResetRateLimits(ctx context.Context, rdb redis.UniversalClient, customerID string, now time.Time) error {
	minute, day, _, _ := rateWindows(now)
	keys := make([]string, 0, 3*len(store.Tiers))
	for _, t := range store.Tiers {
		mk, dk := rateKeys(customerID, t, minute, day)
		keys = append(keys, mk, dk)
	}
	// The previous minute's keys too: a process whose clock is a little
	// behind still counts there.
	for _, t := range store.Tiers {
		mk, _ := rateKeys(customerID, t, minute-1, day)
		keys = append(keys, mk)
	}
	pipe := rdb.TxPipeline()
	pipe.Del(ctx, keys...)
	pipe.Incr(ctx, authGenKey(customerID))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("reset rate limits of customer %s: %w", customerID, err)
	}
	return nil
}

// InvalidateCustomer tells every api process sharing rdb that the
// customer changed (tier, limits, a key revoked): the next request of the
// customer through any of them is authenticated and limited afresh. Every
// change made to a customer or its keys outside the api (the CLI, a
// dashboard) calls it after the change is stored.
func InvalidateCustomer(ctx context.Context, rdb redis.UniversalClient, customerID string) error {
	if err := rdb.Incr(ctx, authGenKey(customerID)).Err(); err != nil {
		return fmt.Errorf("invalidate customer %s: %w", customerID, err)
	}
	return nil
}

// setRateHeaders writes X-Tier and, when the request was counted, the
// X-RateLimit-* headers of one limit: the limit that refused it on a 429,
// else the daily limit (the per-minute one on a plan with no daily limit).
// X-RateLimit-Limit is the limit, X-RateLimit-Remaining what is left of it
// and X-RateLimit-Reset the unix second its window ends (the next 00:00
// UTC for the daily limit).
func setRateHeaders(ctx huma.Context, tier store.Tier, u rateUsage) {
	// Names in Go's canonical form (the form written on the wire), so
	// setting them does not allocate.
	ctx.SetHeader("X-Tier", string(tier))
	if !u.Counted {
		return
	}
	limit, used, reset := u.Limit.PerDay, u.Day, u.DayReset
	if u.Exceeded == windowMinute || (limit <= 0 && u.Exceeded == "") {
		limit, used, reset = u.Limit.PerMinute, u.Minute, u.MinuteReset
	}
	if limit <= 0 {
		return
	}
	ctx.SetHeader("X-Ratelimit-Limit", strconv.Itoa(limit))
	ctx.SetHeader("X-Ratelimit-Remaining", strconv.FormatInt(max(int64(limit)-used, 0), 10))
	ctx.SetHeader("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
}

// rateLimited is the 429 of a refused request: Retry-After is the whole
// seconds until the window that refused it ends (at least 1).
func rateLimited(tier store.Tier, u rateUsage, now time.Time) *Error {
	reset, limit, window := u.MinuteReset, u.Limit.PerMinute, windowMinute
	if u.Exceeded == windowDay {
		reset, limit, window = u.DayReset, u.Limit.PerDay, windowDay
	}
	wait := int64((reset.Sub(now) + time.Second - 1) / time.Second)
	wait = max(wait, 1)
	var msg string
	if u.Exceeded == windowDay {
		msg = fmt.Sprintf("daily rate limit exceeded: the %s plan allows %d requests per day; it resets at 00:00 UTC (in %d s)", tier, limit, wait)
	} else {
		msg = fmt.Sprintf("rate limit exceeded: the %s plan allows %d requests per minute; retry in %d s", tier, limit, wait)
	}
	e := &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: msg,
		// details.limit names the limit, as the caps on jobs, heavy reads
		// and sweeps in flight name theirs; max is its number.
		Details: map[string]any{"window": string(window), "limit": "requests_per_" + string(window), "max": limit, "retry_after": wait, "upgrade_url": upgradeURL}}
	e.GetHeaders().Set("Retry-After", strconv.FormatInt(wait, 10))
	return e
}

// documentRateLimits documents, on every operation that takes a key, a
// token or a session, the headers setRateHeaders writes on its answers
// (X-RateLimit-Limit, -Remaining, -Reset and X-Tier), and on its 429 the
// Retry-After of rateLimited and of the caps (SPEC 7): the answers carry
// them, and a client read from /docs or generated from the document must
// know where its limits and its wait are.
func documentRateLimits(doc *huma.OpenAPI) {
	integer := func(desc string) *huma.Param {
		return &huma.Param{Description: desc, Schema: &huma.Schema{Type: huma.TypeInteger}}
	}
	rate := map[string]*huma.Param{
		"X-RateLimit-Limit": integer("The daily request limit of the caller's plan (on a 429 of the per-minute limit, that limit). " +
			"Sent when the request was counted: absent when rate limiting is off or Redis did not answer in time."),
		"X-RateLimit-Remaining": integer("Requests left of X-RateLimit-Limit in its window."),
		"X-RateLimit-Reset":     integer("Unix seconds when X-RateLimit-Limit's window ends (the next 00:00 UTC for the daily limit)."),
		"X-Tier":                {Description: "The caller's plan: STARTER, PRO, PRO_TRIAL, SUITE or ENTERPRISE.", Schema: &huma.Schema{Type: huma.TypeString}},
	}
	retryAfter := integer("Seconds to wait before retrying: until the rate-limit window that refused the request ends, " +
		"1 for a cap on jobs or reads in flight, until a sweep slot is expected to free, or, on BACKTEST_AI_QUOTA_EXCEEDED, until the monthly quota resets.")
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil || len(op.Security) == 0 {
				continue
			}
			for code, res := range op.Responses {
				if res == nil || !(strings.HasPrefix(code, "2") || code == "429") {
					continue
				}
				r := *res // responses may be shared between operations
				r.Headers = maps.Clone(r.Headers)
				if r.Headers == nil {
					r.Headers = map[string]*huma.Param{}
				}
				maps.Copy(r.Headers, rate)
				if code == "429" {
					r.Headers["Retry-After"] = retryAfter
				}
				op.Responses[code] = &r
			}
		}
	}
}
