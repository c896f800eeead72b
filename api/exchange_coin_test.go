package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestExchangeCoinNotUnicodeFolded: the coin path segment is btc, eth or
// sol in any ASCII case (SPEC 4.3), and nothing else. "ſol" (U+017F, the
// long s, which strings.ToUpper maps onto S) was answered with SOL's data
// (200) where any other coin is 404 RESOURCE_NOT_FOUND, and its history
// path said "ſol" had latest depth and trades.
func TestExchangeCoinNotUnicodeFolded(t *testing.T) {
	t.Parallel()
	l := memory.NewLive()
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		d := fixtureDepth(k)
		d.Symbol = "SOLUSDT"
		if err := l.SetLatestDepth(t.Context(), store.SOL, k, d); err != nil {
			t.Fatal(err)
		}
		if err := l.AddTrades(t.Context(), store.SOL, k, fixtureTrades()); err != nil {
			t.Fatal(err)
		}
	}
	b := setup(t, func(o *setupOpts) { o.live = l })
	for _, tail := range []string{"spot/latest", "future/latest", "spot/trades", "future/trades?limit=5", "spot/trade/latest", "future/trade/latest"} {
		for _, coin := range []string{"sol", "SOL", "Sol"} {
			if r := b.get(store.Pro, "/v1/"+coin+"/"+tail); r.status != http.StatusOK {
				t.Errorf("/v1/%s/%s: %d %s; want 200", coin, tail, r.status, r.body)
			}
		}
		for _, coin := range []string{"%C5%BFol", "%C5%BFOL"} { // ſol, ſOL
			e := wantError(t, b.get(store.Pro, "/v1/"+coin+"/"+tail), http.StatusNotFound, "RESOURCE_NOT_FOUND")
			if msg, _ := e["message"].(string); !strings.Contains(msg, "unknown coin") {
				t.Errorf("/v1/%s/%s: message %q does not say the coin is unknown", coin, tail, msg)
			}
		}
	}
	for _, kind := range []string{"spot", "future"} {
		e := wantError(t, b.get(store.Pro, "/v1/%C5%BFol/"+kind+"/snapshots"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
		if msg, _ := e["message"].(string); !strings.Contains(msg, "unknown coin") {
			t.Errorf("/v1/ſol/%s/snapshots: message %q does not say the coin is unknown", kind, msg)
		}
	}
}

// TestMarketsCoinNotUnicodeFolded: ?coin=ſol is no coin (400 naming the
// coins), where strings.ToUpper made it SOL's markets.
func TestMarketsCoinNotUnicodeFolded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.get(store.Pro, "/v1/markets?coin=sol"); r.status != http.StatusOK {
		t.Fatalf("coin=sol: %d %s; want 200", r.status, r.body)
	}
	e := wantError(t, b.get(store.Pro, "/v1/markets?coin=%C5%BFol"), http.StatusBadRequest, "VALIDATION_ERROR")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "BTC, ETH, SOL") {
		t.Errorf("coin=ſol: message %q does not name the coins", msg)
	}
}
