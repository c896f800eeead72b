package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/redis/redistest"
)

// TestProTrialExpires: a PRO_TRIAL customer on its trial subscription has
// the trial's plan (ETH markets, replay, no exchange data, PRO_TRIAL's
// rate limits); when the trial ends (its subscription.cancelled), the very
// next request has STARTER's plan: ETH markets and replay are refused with
// their SPEC codes and the headers say STARTER's daily limit, counted
// afresh. A redelivery of the trial's activation, and the activation
// arriving late, change nothing.
func TestProTrialExpires(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t, func(o *setupOpts) { o.redis = redistest.Client(t) })
	id := b.ids[store.Starter]
	trial := b.activate("evt_trial", store.Starter, "PRO_TRIAL", now.Add(-14*24*time.Hour))
	trial.sub = "sub_trial"
	wantHook(t, b.post(trial), "applied", false)

	const eth = "/v1/markets?coin=ETH&limit=1"
	r := b.get(store.Starter, eth)
	if r.status != http.StatusOK {
		t.Fatalf("PRO_TRIAL ETH markets: %d %s", r.status, r.body)
	}
	wantLimitHeaders(t, r, store.ProTrial, 50_000, 49_999, now)
	wantError(t, b.get(store.Starter, "/v1/btc/spot/latest"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	replay := func() response {
		return b.do(http.MethodPost, "/v1/replay", b.keys[store.Starter], "application/json", replayBody("btc-updown-5m-nothing", nil))
	}
	wantError(t, replay(), http.StatusNotFound, "MARKET_NOT_FOUND") // past the plan check

	ends := b.activate("evt_trial_end", store.Starter, "", now.Add(-time.Minute))
	ends.typ, ends.sub = "subscription.cancelled", "sub_trial"
	if res := wantHook(t, b.post(ends), "applied", false); res.PreviousTier == nil || *res.PreviousTier != "PRO_TRIAL" {
		t.Errorf("the trial's end: previous_tier %v, want PRO_TRIAL", res.PreviousTier)
	}
	r = b.get(store.Starter, "/v1/markets?coin=BTC&limit=1")
	if r.status != http.StatusOK {
		t.Fatalf("STARTER BTC markets: %d %s", r.status, r.body)
	}
	wantLimitHeaders(t, r, store.Starter, 1000, 999, now)
	e := wantError(t, b.get(store.Starter, eth), http.StatusForbidden, "TIER_ACCESS_DENIED")
	if d, _ := e["details"].(map[string]any); d["current_tier"] != "STARTER" || d["required_tier"] != "PRO" {
		t.Errorf("details %v", e["details"])
	}
	e = wantError(t, replay(), http.StatusForbidden, "TIER_REQUIRED")
	if d, _ := e["details"].(map[string]any); d["current_tier"] != "STARTER" {
		t.Errorf("replay details %v", e["details"])
	}

	// The trial's activation again: a redelivery, then a late copy under
	// another id.
	wantHook(t, b.post(trial), "applied", true)
	late := trial
	late.id = "evt_trial_late"
	wantHook(t, b.post(late), "stale", false)
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("tier = %s after the trial's activation came again, want STARTER", tier)
	}
}
