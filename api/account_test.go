package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/redis/redistest"
)

// accountResp is GET /v1/account's answer.
type accountResp struct {
	Success bool `json:"success"`
	Data    struct {
		CustomerID string `json:"customer_id"`
		Email      string `json:"email"`
		Name       string `json:"name"`
		Tier       string `json:"tier"`
		RateLimits struct {
			PerMinute *int `json:"per_minute"`
			PerDay    *int `json:"per_day"`
		} `json:"rate_limits"`
		Usage struct {
			Today      *int64 `json:"today"`
			ThisMinute *int64 `json:"this_minute"`
			ResetsAt   string `json:"resets_at"`
		} `json:"usage"`
		AIQuota struct {
			Used      int    `json:"used"`
			Limit     *int   `json:"limit"`
			Remaining *int   `json:"remaining"`
			ResetsAt  string `json:"resets_at"`
		} `json:"ai_quota"`
	} `json:"data"`
	Timestamp string `json:"timestamp"`
}

func (b *bundle) account(tier store.Tier) accountResp {
	b.t.Helper()
	r := b.get(tier, "/v1/account")
	if r.status != http.StatusOK {
		b.t.Fatalf("GET /v1/account as %s: %d %s", tier, r.status, r.body)
	}
	var a accountResp
	if err := json.Unmarshal(r.body, &a); err != nil {
		b.t.Fatalf("account body: %v\n%s", err, r.body)
	}
	if !a.Success || a.Timestamp == "" {
		b.t.Errorf("account envelope: %s", r.body)
	}
	return a
}

func intIs(p *int, want int) bool       { return p != nil && *p == want }
func int64Is(p *int64, want int64) bool { return p != nil && *p == want }

func TestAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.redis = redistest.Client(t) })
	ctx := context.Background()

	a := b.account(store.Pro)
	d := a.Data
	if d.CustomerID != b.ids[store.Pro] || d.Email != "pro@test.example" || d.Tier != "PRO" {
		t.Errorf("account = %+v", d)
	}
	if !intIs(d.RateLimits.PerMinute, 300) || !intIs(d.RateLimits.PerDay, 50_000) {
		t.Errorf("rate_limits = %v/%v, want 300 and 50000", d.RateLimits.PerMinute, d.RateLimits.PerDay)
	}
	if !int64Is(d.Usage.Today, 1) || !int64Is(d.Usage.ThisMinute, 1) || d.Usage.ResetsAt != "2026-04-30T00:00:00.000Z" {
		t.Errorf("usage = %+v, want 1 today and this minute, resetting at midnight", d.Usage)
	}
	if d.AIQuota.Used != 0 || !intIs(d.AIQuota.Limit, 5) || !intIs(d.AIQuota.Remaining, 5) || d.AIQuota.ResetsAt != "2026-05-01T00:00:00.000Z" {
		t.Errorf("ai_quota = %+v", d.AIQuota)
	}

	// Usage counts every authenticated request; the quota what the store holds.
	b.get(store.Pro, "/v1/markets?coin=BTC&limit=1")
	for range 2 {
		if _, err := b.store.ReserveAIGeneration(ctx, b.ids[store.Pro], now, 5); err != nil {
			t.Fatal(err)
		}
	}
	d = b.account(store.Pro).Data
	if !int64Is(d.Usage.Today, 3) || !int64Is(d.Usage.ThisMinute, 3) {
		t.Errorf("usage after 3 requests = %v/%v", d.Usage.Today, d.Usage.ThisMinute)
	}
	if d.AIQuota.Used != 2 || !intIs(d.AIQuota.Remaining, 3) {
		t.Errorf("ai_quota after 2 generations = %+v", d.AIQuota)
	}

	// ENTERPRISE: the per-customer defaults (DESIGN 4); an unlimited
	// quota is null.
	d = b.account(store.Enterprise).Data
	if !intIs(d.RateLimits.PerMinute, 10_000) || !intIs(d.RateLimits.PerDay, 1_000_000) || d.AIQuota.Limit != nil || d.AIQuota.Remaining != nil {
		t.Errorf("ENTERPRISE rate_limits %+v, ai_quota %+v; want 10000/1000000 and null quota", d.RateLimits, d.AIQuota)
	}
	if !int64Is(d.Usage.Today, 1) {
		t.Errorf("ENTERPRISE usage = %v, want counted", d.Usage.Today)
	}
	d = b.account(store.Starter).Data
	if !intIs(d.RateLimits.PerMinute, 60) || !intIs(d.RateLimits.PerDay, 1000) || !intIs(d.AIQuota.Limit, 0) || !intIs(d.AIQuota.Remaining, 0) {
		t.Errorf("STARTER rate_limits %+v, ai_quota %+v", d.RateLimits, d.AIQuota)
	}
}

func TestAccountWithoutRedis(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.account(store.Pro).Data
	if d.Usage.Today != nil || d.Usage.ThisMinute != nil {
		t.Errorf("usage without rate limiting = %+v, want nulls", d.Usage)
	}
	if !intIs(d.RateLimits.PerDay, 50_000) {
		t.Errorf("rate_limits = %+v", d.RateLimits)
	}
}

// TestAccountRevokedKey: a revoked key is refused on the next request, in
// every api process, though each holds the key's look-up in its cache.
func TestAccountRevokedKey(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	b := setup(t, func(o *setupOpts) { o.redis = rdb })
	other := &bundle{t: t, srv: secondProcess(t, b, func(c *api.Config) { c.Redis = rdb }), store: b.store, keys: b.keys, ids: b.ids}
	b.account(store.Suite)
	other.account(store.Suite)
	keys, err := b.store.ListAPIKeys(context.Background(), b.ids[store.Suite])
	if err != nil || len(keys) != 1 {
		t.Fatal(keys, err)
	}
	if err := b.store.RevokeAPIKey(context.Background(), keys[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := api.InvalidateCustomer(context.Background(), rdb, b.ids[store.Suite]); err != nil {
		t.Fatal(err)
	}
	wantError(t, b.get(store.Suite, "/v1/account"), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, other.get(store.Suite, "/v1/account"), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, b.get("", "/v1/account"), http.StatusUnauthorized, "UNAUTHORIZED")
}

// TestAccountAfterTierChange: /v1/account reflects a webhook at once.
func TestAccountAfterTierChange(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	wantHook(t, b.post(b.activate("msg_1", store.ProTrial, "ENTERPRISE", now.Add(-time.Minute))), "applied", false)
	if d := b.account(store.ProTrial).Data; d.Tier != "ENTERPRISE" || !intIs(d.RateLimits.PerDay, 1_000_000) {
		t.Errorf("account after the upgrade: %+v", d)
	}
}
