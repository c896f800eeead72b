package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestErrorsEchoIdentifiersCut: an error about a client's identifier or
// parameter value (a slug, a market id, a sweep or job id, a path, a query
// value) echoes at most a cut of it, marked with an ellipsis, in the SPEC
// 7 envelope and with its code: a 300 KB id is not a 300 KB answer.
func TestErrorsEchoIdentifiersCut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("a", 300_000)
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/markets/" + long, "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets/" + long + "/snapshots", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets/" + long + "/series", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets/" + long + "/trades", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets/by-market-id/" + long + "/snapshots", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets/" + long + "/gaps", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/sweeps/" + long, "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/sweeps/" + long + "/trials", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"POST", "/v1/replay", fmt.Sprintf(`{%q:1}`, long), http.StatusBadRequest, "VALIDATION_ERROR"},
		{"DELETE", "/v1/account/keys/" + long, "", http.StatusBadRequest, "VALIDATION_ERROR"},
		{"GET", "/v1/" + long + "/trades", "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/no-such/" + long, "", http.StatusNotFound, "RESOURCE_NOT_FOUND"},
		{"GET", "/v1/markets?coin=" + long, "", http.StatusBadRequest, "VALIDATION_ERROR"},
		{"GET", "/v1/markets?coin=BTC&start_time=" + long, "", http.StatusBadRequest, "VALIDATION_ERROR"},
		{"POST", "/v1/replay", fmt.Sprintf(`{"marketSlug":%q,"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":10}`, long),
			http.StatusNotFound, "MARKET_NOT_FOUND"},
	} {
		name := tc.method + " " + strings.ReplaceAll(tc.path, long, "<300000×a>")
		var r response
		if tc.body != "" {
			r = b.do(tc.method, tc.path, b.keys[store.Enterprise], "application/json", tc.body)
		} else {
			r = b.do(tc.method, tc.path, b.keys[store.Enterprise], "", "")
		}
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d: %.300s", name, r.status, tc.status, r.body)
			continue
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if e == nil || e["code"] != tc.code {
			t.Errorf("%s: error %.300v, want code %s", name, e, tc.code)
			continue
		}
		if len(r.body) > 4<<10 {
			t.Errorf("%s: a %d-byte answer: %.400s", name, len(r.body), r.body)
		} else if msg, _ := e["message"].(string); !strings.Contains(string(r.body), "aaaa…") {
			t.Errorf("%s: the echoed id is not marked as cut: %s (message %q)", name, r.body, msg)
		}
	}
}

// TestJobNotFoundEchoesItsIDCut: GET /v1/jobs/{id} of an unknown 300 KB id
// answers 404 RESOURCE_NOT_FOUND with the id cut.
func TestJobNotFoundEchoesItsIDCut(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	r := b.get(store.Pro, "/v1/jobs/"+strings.Repeat("a", 300_000))
	wantError(t, r, http.StatusNotFound, "RESOURCE_NOT_FOUND")
	if len(r.body) > 4<<10 || !strings.Contains(string(r.body), "aaaa…") {
		t.Errorf("a %d-byte answer: %.400s", len(r.body), r.body)
	}
}
