package api_test

import (
	"net/http"
	"testing"

	"github.com/updown/updown/store"
)

// TestNamesReadInAnyCase: coin is read in any case (coin=btc,
// /v1/BTC/spot/latest), and so are the other names from a fixed set:
// order=DESC, market_type=5M and /v1/BTC/spot/snapshots were refused (400,
// 404). Each answers as its lower-case spelling does, byte for byte.
func TestNamesReadInAnyCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loadHistory(t, b.store)
	slug, _ := snapshotMarket()
	for _, tc := range []struct{ got, want string }{
		{"/v1/markets?coin=BTC&market_type=5M", "/v1/markets?coin=BTC&market_type=5m"},
		{"/v1/markets?coin=BTC&market_type=1HR&limit=3", "/v1/markets?coin=BTC&market_type=1hr&limit=3"},
		{"/v1/markets/" + slug + "/snapshots?order=DESC&limit=3", "/v1/markets/" + slug + "/snapshots?order=desc&limit=3"},
		{"/v1/markets/" + slug + "/snapshots?order=Asc&limit=3", "/v1/markets/" + slug + "/snapshots?order=asc&limit=3"},
		{"/v1/BTC/spot/snapshots?limit=2&order=ASC", "/v1/btc/spot/snapshots?limit=2&order=asc"},
		{"/v1/Btc/future/snapshots?limit=2", "/v1/btc/future/snapshots?limit=2"},
	} {
		got, want := b.get(store.Enterprise, tc.got), b.get(store.Enterprise, tc.want)
		if want.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.want, want.status, want.body)
		}
		if got.status != http.StatusOK || string(got.body) != string(want.body) {
			t.Errorf("%s: %d %s\nwant as %s: %s", tc.got, got.status, got.body, tc.want, want.body)
		}
	}
	// Not a name of the set in any case: refused as before.
	wantError(t, b.get(store.Enterprise, "/v1/markets?coin=BTC&market_type=5X"), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, b.get(store.Enterprise, "/v1/markets/"+slug+"/snapshots?order=DOWN"), http.StatusBadRequest, "VALIDATION_ERROR")
}
