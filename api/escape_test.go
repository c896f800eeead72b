package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestJSONIsNotHTMLEscaped: every JSON the api writes carries <, > and &
// as they are, never as \u003c, \u003e, \u0026: errors from Huma's
// validation, from the router (404, 405), from the auth middleware, and
// the OpenAPI document and its schemas.
func TestJSONIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slug, _ := snapshotMarket()
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
		code, message           string
	}{
		{"validation", http.MethodGet, "/v1/markets?coin=BTC&limit=101", b.keys[store.Pro], 400, "VALIDATION_ERROR",
			"invalid request: limit: expected number <= 100 (got 101)"},
		{"validation value", http.MethodGet, "/v1/markets/" + slug + "/snapshots?start_time=%3Cx%26y%3E", b.keys[store.Pro], 400, "VALIDATION_ERROR", ""},
		{"not found", http.MethodGet, "/v1/nothing%3Cx%3E", b.keys[store.Pro], 404, "RESOURCE_NOT_FOUND",
			"no such endpoint: GET /v1/nothing<x> (see /docs)"},
		{"method", http.MethodDelete, "/v1/markets/a%3Cb%3E", b.keys[store.Pro], 405, "METHOD_NOT_ALLOWED",
			"DELETE is not allowed on /v1/markets/a<b>; use GET"},
		{"market", http.MethodGet, "/v1/markets/a%3Cb%3E%26", b.keys[store.Pro], 404, "RESOURCE_NOT_FOUND", `market "a<b>&" not found`},
	} {
		r := b.do(tc.method, tc.path, tc.key, "", "")
		e := wantError(t, r, tc.status, tc.code)
		if tc.message != "" && e["message"] != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, e["message"], tc.message)
		}
		if !bytes.ContainsAny(r.body, "<>") {
			t.Errorf("%s: no < or > in %s", tc.name, r.body)
		}
		noHTMLEscapes(t, tc.name, r.body)
	}
	for _, path := range []string{"/openapi.json", "/openapi-3.0.json", "/schemas/ErrorEnvelopeErrorStruct.json"} {
		r := b.get("", path)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		noHTMLEscapes(t, path, r.body)
	}
	if r := b.get("", "/openapi.json"); !bytes.Contains(r.body, []byte("price_up < 0.35")) {
		t.Errorf("/openapi.json does not quote conditions with a plain <")
	}
}

func noHTMLEscapes(t *testing.T, name string, body []byte) {
	t.Helper()
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if i := bytes.Index(body, []byte(esc)); i >= 0 {
			t.Errorf("%s: %s at byte %d: %.120s", name, esc, i, body[max(0, i-60):])
		}
	}
}

// TestIntegerSignReadAsSpace: limit=+5 arrives as " 5" (a query string's
// + is a space). The refusal says so, as a time's zone offset does, where
// it said only "invalid integer (got \" 5\")"; %2B5 is read as 5, and a
// space that is no sign's gets no hint.
func TestIntegerSignReadAsSpace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const want = `invalid request: limit: invalid integer: a + in a query string is read as a space: send 5, without the + (or the + as %2B) (got " 5")`
	r := b.get(store.Pro, "/v1/markets?coin=BTC&limit=+5")
	if e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"); e["message"] != want {
		t.Errorf("limit=+5: %q, want %q", e["message"], want)
	}
	if r := b.get(store.Pro, "/v1/markets?coin=BTC&limit=%2B5"); r.status != http.StatusOK {
		t.Errorf("limit=%%2B5: %d %s", r.status, r.body)
	}
	// The time parameters say it in the same words.
	slug, _ := snapshotMarket()
	const wantTime = "invalid request: start_time: a + in a query string is read as a space: send the zone offset's + as %2B"
	if e := wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?start_time=2026-04-29T15:00:00+02:00"), http.StatusBadRequest, "VALIDATION_ERROR"); !strings.HasPrefix(fmt.Sprint(e["message"]), wantTime) {
		t.Errorf("start_time with +02:00: %q, want it to start %q", e["message"], wantTime)
	}
	const plain = `invalid request: limit: invalid integer (got "5 x")`
	if e := wantError(t, b.get(store.Pro, "/v1/markets?coin=BTC&limit=5+x"), http.StatusBadRequest, "VALIDATION_ERROR"); e["message"] != plain {
		t.Errorf("limit=5+x: %q, want %q", e["message"], plain)
	}
}
