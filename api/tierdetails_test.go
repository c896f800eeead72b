package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestTierDeniedNamesAPlanThatSeesTheMarket: a 403 TIER_ACCESS_DENIED on
// one market names in details.required_tier a plan that can read that
// market. A Starter key asking for a market older than PRO's 31-day
// window was told to upgrade to PRO, whose key then got a 403 of its own.
func TestTierDeniedNamesAPlanThatSeesTheMarket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	market := func(c store.Coin, age time.Duration, id string) store.Market {
		start := now.Add(-age).Truncate(5 * time.Minute)
		p := 95000.0
		w := store.OutcomeUp
		end := start.Add(5 * time.Minute)
		return store.Market{Slug: slugOf(c, store.M5, start), MarketID: id, EventID: "ev-" + id, Coin: c, MarketType: store.M5,
			StartTime: start, EndTime: end, ConditionID: "0xabc", ClobTokenUp: "111", ClobTokenDown: "222",
			CoinPriceStart: &p, CoinPriceEnd: &p, Winner: &w, ResolvedAt: &end}
	}
	markets := []store.Market{
		market(store.BTC, 40*24*time.Hour, "old-btc"),
		market(store.ETH, 40*24*time.Hour, "old-eth"),
		market(store.BTC, 10*24*time.Hour, "recent-btc"),
		market(store.ETH, 10*24*time.Hour, "recent-eth"),
	}
	if err := b.store.UpsertMarkets(t.Context(), markets); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		m    store.Market
		want store.Tier
	}{
		{markets[0], store.Enterprise},
		{markets[1], store.Enterprise},
		{markets[2], store.Pro},
		{markets[3], store.Pro},
	}
	for _, tc := range cases {
		for _, path := range []string{
			"/v1/markets/" + tc.m.Slug,
			"/v1/markets/" + tc.m.Slug + "/snapshots",
			"/v1/markets/" + tc.m.Slug + "/trades",
			"/v1/markets/" + tc.m.Slug + "/gaps",
			"/v1/markets/by-market-id/" + tc.m.MarketID + "/snapshots",
		} {
			t.Run(fmt.Sprintf("%s %s", tc.m.MarketID, path), func(t *testing.T) {
				t.Parallel()
				e := wantError(t, b.get(store.Starter, path), http.StatusForbidden, "TIER_ACCESS_DENIED")
				d, _ := e["details"].(map[string]any)
				if d["required_tier"] != string(tc.want) || d["current_tier"] != "STARTER" {
					t.Fatalf("details = %v, want required_tier %s; message %q", d, tc.want, e["message"])
				}
				// The plan named reads it.
				if r := b.get(store.Tier(d["required_tier"].(string)), path); r.status != http.StatusOK {
					t.Errorf("with the %s plan the 403 named: %d %s", d["required_tier"], r.status, r.body)
				}
			})
		}
	}
}
