package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/redis/redistest"
)

// testClock is a clock tests move by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.set(t)
	return c
}

func (c *testClock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// nextMidnight is the end of now's UTC day.
func nextMidnight(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// wantLimitHeaders checks the rate-limit headers of an answer.
func wantLimitHeaders(t *testing.T, r response, tier store.Tier, limit, remaining int, at time.Time) {
	t.Helper()
	h := r.header
	if h.Get("X-Tier") != string(tier) {
		t.Errorf("X-Tier = %q, want %s", h.Get("X-Tier"), tier)
	}
	if got, want := h.Get("X-RateLimit-Limit"), strconv.Itoa(limit); got != want {
		t.Errorf("X-RateLimit-Limit = %q, want %s", got, want)
	}
	if got, want := h.Get("X-RateLimit-Remaining"), strconv.Itoa(remaining); got != want {
		t.Errorf("X-RateLimit-Remaining = %q, want %s", got, want)
	}
	if got, want := h.Get("X-RateLimit-Reset"), strconv.FormatInt(nextMidnight(at).Unix(), 10); got != want {
		t.Errorf("X-RateLimit-Reset = %q, want %s (next 00:00 UTC)", got, want)
	}
}

// wantMinuteHeaders checks the headers of the per-minute limit.
func wantMinuteHeaders(t *testing.T, r response, limit, remaining int, at time.Time) {
	t.Helper()
	h := r.header
	if got, want := h.Get("X-RateLimit-Limit"), strconv.Itoa(limit); got != want {
		t.Errorf("X-RateLimit-Limit = %q, want %s (the minute's limit)", got, want)
	}
	if got, want := h.Get("X-RateLimit-Remaining"), strconv.Itoa(remaining); got != want {
		t.Errorf("X-RateLimit-Remaining = %q, want %s", got, want)
	}
	if got, want := h.Get("X-RateLimit-Reset"), strconv.FormatInt(at.Truncate(time.Minute).Add(time.Minute).Unix(), 10); got != want {
		t.Errorf("X-RateLimit-Reset = %q, want %s (the next minute)", got, want)
	}
}

// wantLimited checks a 429 and its Retry-After.
func wantLimited(t *testing.T, r response, retryAfter int, window string) {
	t.Helper()
	e := wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if got := r.header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
		t.Errorf("Retry-After = %q, want %d", got, retryAfter)
	}
	if d, _ := e["details"].(map[string]any); d == nil || d["window"] != window {
		t.Errorf("details = %v, want window %s", e["details"], window)
	}
	wantLimitDetails(t, e, "requests_per_"+window)
}

// wantLimitDetails checks a 429 RATE_LIMIT_EXCEEDED's details as every
// path that answers it gives them (the rate limits, the caps on jobs,
// heavy reads and sweeps in flight): limit the name of the limit that
// refused (a string, never its number), max its number, retry_after the
// seconds to wait and upgrade_url, so that a client reads them one way.
func wantLimitDetails(t *testing.T, e map[string]any, limit string) {
	t.Helper()
	d, _ := e["details"].(map[string]any)
	_, isMax := d["max"].(float64)
	_, isWait := d["retry_after"].(float64)
	if d["limit"] != limit || !isMax || !isWait || d["upgrade_url"] != "/v1/account/billing" {
		t.Errorf("details = %v, want limit %q (a string), max and retry_after numbers, upgrade_url /v1/account/billing", d, limit)
	}
}

func TestRateLimitMinuteThenDay(t *testing.T) {
	t.Parallel()
	clock := newTestClock(now) // 13:07:30 UTC
	b := setup(t, func(o *setupOpts) {
		o.redis = redistest.Client(t)
		o.clock = clock.now
		o.rateLimits = map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 3, PerDay: 5}}
	})
	const path = "/v1/markets?coin=BTC&limit=1"
	for i := range 3 {
		r := b.get(store.Starter, path)
		if r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
		}
		wantLimitHeaders(t, r, store.Starter, 5, 4-i, clock.now())
	}
	r := b.get(store.Starter, path)
	wantLimited(t, r, 30, "minute") // 30 s to 13:08:00
	// A 429 of the minute limit carries that limit's headers.
	wantMinuteHeaders(t, r, 3, 0, clock.now())
	wantLimited(t, b.get(store.Starter, path), 30, "minute") // refused requests are not counted

	clock.set(now.Add(40 * time.Second)) // 13:08:10
	for i := range 2 {
		r := b.get(store.Starter, path)
		if r.status != http.StatusOK {
			t.Fatalf("next minute, request %d: %d %s", i+1, r.status, r.body)
		}
		wantLimitHeaders(t, r, store.Starter, 5, 1-i, clock.now())
	}
	r = b.get(store.Starter, path)
	wantLimited(t, r, int(nextMidnight(clock.now()).Sub(clock.now())/time.Second), "day")
	wantLimitHeaders(t, r, store.Starter, 5, 0, clock.now())

	// Other customers have their own counters.
	if r := b.get(store.Pro, path); r.status != http.StatusOK {
		t.Errorf("another customer: %d", r.status)
	}

	clock.set(nextMidnight(now).Add(5 * time.Second)) // 00:00:05 the next day
	r = b.get(store.Starter, path)
	if r.status != http.StatusOK {
		t.Fatalf("after midnight: %d %s", r.status, r.body)
	}
	wantLimitHeaders(t, r, store.Starter, 5, 4, clock.now())
}

func TestRateLimitPlanDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.redis = redistest.Client(t) })
	const path = "/v1/markets?coin=BTC&limit=1"
	for i := range 60 {
		r := b.get(store.Starter, path)
		if r.status != http.StatusOK {
			t.Fatalf("STARTER request %d of 60: %d %s", i+1, r.status, r.body)
		}
		if i == 59 {
			wantLimitHeaders(t, r, store.Starter, 1000, 940, now)
		}
	}
	wantLimited(t, b.get(store.Starter, path), 30, "minute")

	// Every plan sends the headers; ENTERPRISE's defaults are 10,000 a
	// minute and 1,000,000 a day (DESIGN 4).
	for _, tc := range []struct {
		tier  store.Tier
		limit int
	}{{store.Pro, 50_000}, {store.ProTrial, 50_000}, {store.Suite, 50_000}, {store.Enterprise, 1_000_000}} {
		wantLimitHeaders(t, b.get(tc.tier, path), tc.tier, tc.limit, tc.limit-1, now)
	}
	for i := range 70 {
		r := b.get(store.Enterprise, path)
		if r.status != http.StatusOK {
			t.Fatalf("ENTERPRISE request %d: %d", i+2, r.status)
		}
		wantLimitHeaders(t, r, store.Enterprise, 1_000_000, 1_000_000-2-i, now)
	}
}

// TestRateLimitPerCustomer: ENTERPRISE limits are the customer's own
// (`updown customers set-limits`); a change holds for the next request in
// every api process, though both hold the customer in their caches; on
// other plans a customer's own limits do nothing.
func TestRateLimitPerCustomer(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	a := setup(t, func(o *setupOpts) { o.redis = rdb })
	b := &bundle{t: t, srv: secondProcess(t, a, func(c *api.Config) { c.Redis = rdb }), store: a.store, keys: a.keys, ids: a.ids}
	ctx := context.Background()
	const path = "/v1/markets?coin=BTC&limit=1"
	wantLimitHeaders(t, a.get(store.Enterprise, path), store.Enterprise, 1_000_000, 999_999, now)
	wantLimitHeaders(t, b.get(store.Enterprise, path), store.Enterprise, 1_000_000, 999_998, now)

	for _, tier := range []store.Tier{store.Enterprise, store.Pro} {
		if _, err := a.store.SetCustomerLimits(ctx, a.ids[tier], store.Limits{PerMinute: 4, PerDay: 2_000_000}); err != nil {
			t.Fatal(err)
		}
		if err := api.InvalidateCustomer(ctx, rdb, a.ids[tier]); err != nil {
			t.Fatal(err)
		}
	}
	wantLimitHeaders(t, b.get(store.Enterprise, path), store.Enterprise, 2_000_000, 2_000_000-3, now)
	wantLimitHeaders(t, a.get(store.Enterprise, path), store.Enterprise, 2_000_000, 2_000_000-4, now)
	r := b.get(store.Enterprise, path) // the 5th this minute, past the customer's 4
	wantLimited(t, r, 30, "minute")
	wantMinuteHeaders(t, r, 4, 0, now)
	wantLimitHeaders(t, a.get(store.Pro, path), store.Pro, 50_000, 49_999, now)
}

func TestRateLimitHeadersOnErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.redis = redistest.Client(t) })
	r := b.get(store.Starter, "/v1/markets/btc-updown-15m-1")
	wantError(t, r, http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantLimitHeaders(t, r, store.Starter, 1000, 999, now)
	r = b.get(store.Starter, "/v1/markets?coin=ETH")
	wantError(t, r, http.StatusForbidden, "TIER_ACCESS_DENIED")
	wantLimitHeaders(t, r, store.Starter, 1000, 998, now)
	r = b.get(store.Starter, "/v1/markets?coin=DOGE")
	wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	wantLimitHeaders(t, r, store.Starter, 1000, 997, now)

	// Unauthenticated answers name no tier.
	r = b.do(http.MethodGet, "/v1/markets?coin=BTC", "ud_live_nope", "", "")
	wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	if r.header.Get("X-Tier") != "" || r.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("401 carries rate-limit headers: %v", r.header)
	}
}

// TestRateLimitSharedAcrossProcesses sends requests of one customer
// through two api processes at once: together they allow exactly the limit.
func TestRateLimitSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	limits := map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 50, PerDay: 1000}}
	a := setup(t, func(o *setupOpts) { o.redis = rdb; o.rateLimits = limits })
	other := secondProcess(t, a, func(c *api.Config) { c.Redis = rdb; c.RateLimits = limits })

	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			base := a.srv.URL
			if g%2 == 1 {
				base = other.URL
			}
			for range 10 {
				switch status := getStatus(t, base+"/v1/markets?coin=BTC&limit=1", a.keys[store.Starter]); status {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					t.Errorf("status %d", status)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != 50 || limited.Load() != 30 {
		t.Errorf("%d allowed and %d refused of 80, want exactly 50 and 30", ok.Load(), limited.Load())
	}
}

func getStatus(t *testing.T, url, key string) int {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// secondProcess starts another api server on the bundle's store, as a
// second api process of the same deployment would be.
func secondProcess(t *testing.T, b *bundle, configure func(*api.Config)) *httptest.Server {
	t.Helper()
	// RedisTimeout as setup's: on a busy machine a check slower than the
	// default 250 ms falls back to counting in the process, and the two
	// processes would no longer share the limit the tests check.
	cfg := api.Config{Store: b.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now },
		RedisTimeout: 10 * time.Second}
	configure(&cfg)
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// TestTierChangeAcrossProcesses: a webhook received by one api process
// changes the plan and the rate-limit state the very next request through
// another process sees.
func TestTierChangeAcrossProcesses(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	limits := map[store.Tier]api.RateLimit{
		store.Starter: {PerMinute: 2, PerDay: 100},
		store.Pro:     {PerMinute: 2, PerDay: 200},
	}
	a := setup(t, func(o *setupOpts) { o.redis = rdb; o.rateLimits = limits; o.webhookSecret = hookSecret })
	bSrv := secondProcess(t, a, func(c *api.Config) { c.Redis = rdb; c.RateLimits = limits; c.WebhookSecret = hookSecret })
	b := &bundle{t: t, srv: bSrv, store: a.store, keys: a.keys, ids: a.ids}
	const path = "/v1/markets?coin=ETH&limit=1"
	const btc = "/v1/markets?coin=BTC&limit=1"

	// The STARTER customer spends its minute through process A.
	for range 2 {
		if r := a.get(store.Starter, btc); r.status != http.StatusOK {
			t.Fatalf("STARTER: %d", r.status)
		}
	}
	wantLimited(t, a.get(store.Starter, btc), 30, "minute")

	// The upgrade arrives at process B.
	wantHook(t, b.post(b.activate("msg_up", store.Starter, "PRO", now.Add(-time.Minute))), "applied", false)
	ctx := context.Background()
	if n, err := rdb.Exists(ctx, starterKeys(a.ids[store.Starter])...).Result(); err != nil || n != 0 {
		t.Errorf("STARTER counters left in Redis after the tier change: %d (%v)", n, err)
	}

	// The very next request through A has the PRO plan and fresh counters.
	r := a.get(store.Starter, path)
	if r.status != http.StatusOK {
		t.Fatalf("after the upgrade through the other process: %d %s", r.status, r.body)
	}
	wantLimitHeaders(t, r, store.Pro, 200, 199, now)

	// And back: a cancellation through A; B's next request is STARTER with
	// fresh counters, though the STARTER minute was spent before.
	cancel := a.activate("msg_down", store.Starter, "", now)
	cancel.typ = "subscription.cancelled"
	wantHook(t, a.post(cancel), "applied", false)
	r = b.get(store.Starter, btc)
	if r.status != http.StatusOK {
		t.Fatalf("after the downgrade through the other process: %d %s", r.status, r.body)
	}
	wantLimitHeaders(t, r, store.Starter, 100, 99, now)
	wantError(t, b.get(store.Starter, path), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

// TestTierChangeRedeliveryKeepsTheCounters: the provider's redelivery of
// a tier change already applied finishes what the first delivery may not
// have (every process told) but does not start the customer's counters
// afresh again: what the customer spent under the new plan since the
// change still counts.
func TestTierChangeRedeliveryKeepsTheCounters(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	limits := map[store.Tier]api.RateLimit{
		store.Starter: {PerMinute: 2, PerDay: 100},
		store.Pro:     {PerMinute: 2, PerDay: 200},
	}
	b := setup(t, func(o *setupOpts) { o.redis = rdb; o.rateLimits = limits; o.webhookSecret = hookSecret })
	const btc = "/v1/markets?coin=BTC&limit=1"
	up := b.activate("msg_up_again", store.Starter, "PRO", now.Add(-time.Minute))
	wantHook(t, b.post(up), "applied", false)

	// The customer spends PRO's minute.
	for range 2 {
		if r := b.get(store.Starter, btc); r.status != http.StatusOK || r.header.Get("X-Tier") != "PRO" {
			t.Fatalf("PRO after the upgrade: %d, X-Tier %q", r.status, r.header.Get("X-Tier"))
		}
	}
	wantLimited(t, b.get(store.Starter, btc), 30, "minute")

	// The provider redelivers the upgrade: the minute stays spent.
	wantHook(t, b.post(up), "applied", true)
	wantLimited(t, b.get(store.Starter, btc), 30, "minute")
}

// starterKeys are the customer's STARTER counters of the pinned now.
func starterKeys(customerID string) []string {
	base := "updown:rl:{" + customerID + "}:STARTER"
	return []string{base + ":m:" + strconv.FormatInt(now.Unix()/60, 10), base + ":d:" + strconv.FormatInt(now.Unix()/86400, 10)}
}

func TestRateLimitOffWithoutRedis(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 70 {
		r := b.get(store.Starter, "/v1/markets?coin=BTC&limit=1")
		if r.status != http.StatusOK {
			t.Fatalf("request %d without Redis: %d", i+1, r.status)
		}
		if r.header.Get("X-Tier") != "STARTER" || r.header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("headers without Redis: %v", r.header)
		}
	}
}

// TestRateLimitRedisDown: requests fail open, unmetered, with a warning.
func TestRateLimitRedisDown(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	logs := &logBuffer{}
	b := setup(t, func(o *setupOpts) { o.redis = dead; o.logger = logs.logger() })
	start := time.Now()
	r := b.get(store.Starter, "/v1/markets?coin=BTC&limit=1")
	if r.status != http.StatusOK || r.header.Get("X-Tier") != "STARTER" || r.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("with Redis down: %d, headers %v", r.status, r.header)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a request with Redis down took %v", took)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "rate limiter unavailable") {
		t.Errorf("no warning logged:\n%s", logs)
	}
	var acc struct {
		Data struct {
			Usage struct {
				Today *int64 `json:"today"`
			} `json:"usage"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b.get(store.Starter, "/v1/account").body, &acc); err != nil || acc.Data.Usage.Today != nil {
		t.Errorf("usage with Redis down = %v (%v), want null", acc.Data.Usage.Today, err)
	}
}

// deadAddr is the address of a Redis that is down: every connection is
// closed as soon as it is made. The port stays held until the test ends,
// so that no other test's server, started meanwhile, can take it (a port
// merely closed again was, under load, and answered as a live Redis).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestDailyLimitLeavesTheUpgradePath checks that a customer whose day's
// requests ran out can still read its account and the plan catalogue
// (the upgrade_url its errors name), while every other operation is 429
// until midnight; the per-minute limit holds for the catalogue.
func TestDailyLimitLeavesTheUpgradePath(t *testing.T) {
	t.Parallel()
	clock := newTestClock(now) // 13:07:30 UTC
	b := setup(t, func(o *setupOpts) {
		o.redis = redistest.Client(t)
		o.clock = clock.now
		o.rateLimits = map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 5, PerDay: 2}}
	})
	for range 2 {
		if r := b.get(store.Starter, "/v1/markets?coin=BTC&limit=1"); r.status != http.StatusOK {
			t.Fatalf("a request the day's limit allows: %d %s", r.status, r.body)
		}
	}
	wantLimited(t, b.get(store.Starter, "/v1/markets?coin=BTC&limit=1"), int(nextMidnight(clock.now()).Sub(clock.now())/time.Second), "day")
	for _, path := range []string{"/v1/account", "/v1/account/billing"} {
		r := b.get(store.Starter, path)
		if r.status != http.StatusOK {
			t.Errorf("%s past the day's limit: %d %s, want 200", path, r.status, r.body)
		}
		wantLimitHeaders(t, r, store.Starter, 2, 0, clock.now())
	}
	// Not counted past the day's limit: the account says 2 of 2 today.
	var acct struct {
		Data struct {
			Usage struct {
				Today int `json:"today"`
			} `json:"usage"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b.get(store.Starter, "/v1/account").body, &acct); err != nil || acct.Data.Usage.Today != 2 {
		t.Errorf("usage.today = %d (%v), want 2: requests past the day's limit are not counted", acct.Data.Usage.Today, err)
	}
	// Signing in to the dashboard is not exempt: each session is kept for
	// hours, and the day's limit bounds how many a key makes.
	wantLimited(t, b.do(http.MethodPost, "/v1/auth/session", b.keys[store.Starter], "", ""), int(nextMidnight(clock.now()).Sub(clock.now())/time.Second), "day")
	// The minute's limit still holds for the plan catalogue, and a request
	// it refuses leaves the day's count as it was. (The account is exempt
	// from it too: TestMinuteLimitLeavesKeyRevocation.)
	clock.set(now.Add(40 * time.Second)) // 13:08:10, a new minute
	for i := range 5 {
		if r := b.get(store.Starter, "/v1/account/billing"); r.status != http.StatusOK {
			t.Fatalf("request %d of the minute: %d %s", i+1, r.status, r.body)
		}
	}
	wantLimited(t, b.get(store.Starter, "/v1/account/billing"), 50, "minute")
}

// TestDailyLimitLeavesKeyRevocation: a leaked key that spends the
// customer's day must not lock its owner out of revoking it until
// midnight, when the thief gets the new day first. Listing the keys (to
// find its id) and revoking one are exempt from the day's limit, as the
// account is; creating one is not.
func TestDailyLimitLeavesKeyRevocation(t *testing.T) {
	t.Parallel()
	clock := newTestClock(now)
	b := setup(t, func(o *setupOpts) {
		o.redis = redistest.Client(t)
		o.clock = clock.now
		o.rateLimits = map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 10, PerDay: 2}}
	})
	leakedPlain, leaked := api.NewKey(b.ids[store.Starter])
	leaked, err := b.store.CreateAPIKey(context.Background(), leaked)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := b.do(http.MethodGet, "/v1/markets?coin=BTC&limit=1", leakedPlain, "", ""); r.status != http.StatusOK {
			t.Fatalf("a request the day's limit allows: %d %s", r.status, r.body)
		}
	}
	day := int(nextMidnight(clock.now()).Sub(clock.now()) / time.Second)
	wantLimited(t, b.get(store.Starter, "/v1/markets?coin=BTC&limit=1"), day, "day")
	wantLimited(t, b.do(http.MethodPost, "/v1/account/keys", b.keys[store.Starter], "", ""), day, "day")

	if r := b.get(store.Starter, "/v1/account/keys"); r.status != http.StatusOK || !strings.Contains(string(r.body), leaked.ID) {
		t.Fatalf("listing the keys past the day's limit: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodDelete, "/v1/account/keys/"+leaked.ID, b.keys[store.Starter], "", ""); r.status != http.StatusOK {
		t.Fatalf("revoking a key past the day's limit: %d %s, want 200", r.status, r.body)
	}
	wantError(t, b.do(http.MethodGet, "/v1/account", leakedPlain, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

// TestMinuteLimitLeavesKeyRevocation: the limits are the customer's, so a
// leaked key kept busy fills every minute; its owner must still be able to
// revoke it, with another key or in the dashboard, where the key list and
// the session (its CSRF token) come first. Those are exempt from the
// minute's limit too; everything else, the account among them, is 429 as
// before.
func TestMinuteLimitLeavesKeyRevocation(t *testing.T) {
	t.Parallel()
	clock := newTestClock(now)
	rdb := redistest.Client(t)
	b := setup(t, func(o *setupOpts) {
		o.redis = rdb
		o.clock = clock.now
		o.rateLimits = map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 4, PerDay: 100}}
	})
	leakedPlain, leaked := api.NewKey(b.ids[store.Starter])
	leaked, err := b.store.CreateAPIKey(context.Background(), leaked)
	if err != nil {
		t.Fatal(err)
	}
	otherPlain, other := api.NewKey(b.ids[store.Starter])
	other, err = b.store.CreateAPIKey(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	br := b.signIn(store.Starter) // 2 of the minute's 4
	for range 2 {
		if r := b.do(http.MethodGet, "/v1/markets?coin=BTC&limit=1", leakedPlain, "", ""); r.status != http.StatusOK {
			t.Fatalf("a request the minute's limit allows: %d %s", r.status, r.body)
		}
	}
	wantLimited(t, b.get(store.Starter, "/v1/markets?coin=BTC&limit=1"), 30, "minute")
	wantLimited(t, b.do(http.MethodPost, "/v1/account/keys", b.keys[store.Starter], "", ""), 30, "minute")
	wantLimited(t, b.get(store.Starter, "/v1/account/billing"), 30, "minute")
	wantLimited(t, b.do(http.MethodGet, "/v1/account", otherPlain, "", ""), 30, "minute")

	// With another key: the list, then the revocation.
	if r := b.do(http.MethodGet, "/v1/account/keys", otherPlain, "", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), leaked.ID) {
		t.Fatalf("listing the keys past the minute's limit: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodDelete, "/v1/account/keys/"+leaked.ID, otherPlain, "", ""); r.status != http.StatusOK {
		t.Fatalf("revoking a key past the minute's limit: %d %s, want 200", r.status, r.body)
	}
	wantError(t, b.do(http.MethodGet, "/v1/account", leakedPlain, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")

	// In the dashboard: the session and the account page's key list, then
	// the revocation.
	for _, path := range []string{"/v1/auth/session", "/v1/account/keys?limit=100"} {
		if r := br.get(path); r.status != http.StatusOK {
			t.Fatalf("dashboard GET %s past the minute's limit: %d %s, want 200", path, r.status, r.body)
		}
	}
	if r := br.change(http.MethodDelete, "/v1/account/keys/"+other.ID, ""); r.status != http.StatusOK {
		t.Fatalf("dashboard revocation past the minute's limit: %d %s, want 200", r.status, r.body)
	}
	wantError(t, b.do(http.MethodGet, "/v1/account", otherPlain, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")

	// Counted only while the minute had room: the next minute starts from
	// nothing, and data requests are still refused in this one.
	wantLimited(t, b.get(store.Starter, "/v1/markets?coin=BTC&limit=1"), 30, "minute")
	minute := "updown:rl:{" + b.ids[store.Starter] + "}:" + string(store.Starter) + ":m:" + strconv.FormatInt(clock.now().Unix()/60, 10)
	if n, err := rdb.Get(t.Context(), minute).Int(); err != nil || n != 4 {
		t.Errorf("the minute's count = %d (%v), want 4: requests past the minute's limit are not counted", n, err)
	}
}

// TestRateLimitHoldsWhenRedisFails: a request whose check in Redis fails
// (Redis down, or slow past Config.RedisTimeout, as a customer's own burst
// can make it) goes on, but the limits still hold, counted by the process:
// a burst during the failure cannot go past them.
func TestRateLimitHoldsWhenRedisFails(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	clock := newTestClock(now)
	b := setup(t, func(o *setupOpts) {
		o.redis, o.clock = dead, clock.now
		o.rateLimits = map[store.Tier]api.RateLimit{store.Starter: {PerMinute: 3, PerDay: 5}}
	})
	get := func() response { return b.get(store.Starter, "/v1/markets?coin=BTC&limit=1") }
	for i := range 3 {
		if r := get(); r.status != http.StatusOK {
			t.Fatalf("request %d with Redis down: %d %s", i+1, r.status, r.body)
		}
	}
	r := get()
	e := wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if d, _ := e["details"].(map[string]any); d["window"] != "minute" || r.header.Get("Retry-After") == "" {
		t.Errorf("the 4th request of the minute: details %v, Retry-After %q", e["details"], r.header.Get("Retry-After"))
	}
	// Another customer is not held by this one's count.
	if r := b.get(store.Pro, "/v1/markets?coin=BTC&limit=1"); r.status != http.StatusOK {
		t.Errorf("PRO with Redis down: %d", r.status)
	}
	// The next minute: two more, then the day's limit.
	clock.set(now.Add(time.Minute))
	for i := range 2 {
		if r := get(); r.status != http.StatusOK {
			t.Fatalf("request %d of the next minute: %d %s", i+1, r.status, r.body)
		}
	}
	if e := wantError(t, get(), http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED"); e["details"].(map[string]any)["window"] != "day" {
		t.Errorf("past the day's limit: %v", e["details"])
	}
	// Reading the account and its upgrade path stays open past the day's limit.
	if r := b.get(store.Starter, "/v1/account"); r.status != http.StatusOK {
		t.Errorf("GET /v1/account past the day's limit: %d %s", r.status, r.body)
	}
}

// TestOpenAPIDocumentsRateLimitHeaders: the headers every authenticated
// answer carries (X-RateLimit-Limit, -Remaining, -Reset and X-Tier:
// REFERENCE, DESIGN 4) and the Retry-After of a 429 (SPEC 7) are in the
// OpenAPI document, on every operation that takes a key, a token or a
// session, so that a client read from /docs or generated from the
// document knows where its limits and its wait are.
func TestOpenAPIDocumentsRateLimitHeaders(t *testing.T) {
	t.Parallel()
	type header struct {
		Schema struct {
			Type any `json:"type"`
		} `json:"schema"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]struct {
				Headers map[string]header `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	openAPIDocument(t, &doc)
	rate := map[string]string{"X-RateLimit-Limit": "integer", "X-RateLimit-Remaining": "integer", "X-RateLimit-Reset": "integer", "X-Tier": "string"}
	checked := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			if len(op.Security) == 0 {
				continue
			}
			for code, res := range op.Responses {
				var want map[string]string
				switch {
				case strings.HasPrefix(code, "2"):
					want = rate
				case code == "429":
					want = maps.Clone(rate)
					want["Retry-After"] = "integer"
				default:
					continue
				}
				checked++
				for name, typ := range want {
					h, ok := res.Headers[name]
					if !ok {
						t.Errorf("%s %s: response %s does not document header %s", method, path, code, name)
					} else if h.Schema.Type != typ {
						t.Errorf("%s %s: response %s: header %s is of type %q, want %q", method, path, code, name, h.Schema.Type, typ)
					}
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d responses of authenticated operations, want every one (at least 40)", checked)
	}
}
