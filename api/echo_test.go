package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
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

// TestErrorsSayWhatFollowsALongEcho: a long client value inside a
// strategy (a condition's key, field or operator, a sweep's path) is cut
// where the message quotes it, so that what the message says after it,
// the values allowed, reaches the client whole; a cut of the whole
// message took that off. A word of a strategy_code within its 4 KB limit
// is not cut at all, and its message lists the fields.
func TestErrorsSayWhatFollowsALongEcho(t *testing.T) {
	t.Parallel()
	st := memory.New()
	q := newQueue(t, st)
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = st, q.client, q.client })
	long := strings.Repeat("a", 300_000)
	strategy := func(entry string) string {
		return `{"side":"UP","entryConditions":[` + entry + `],"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":10}`
	}
	replayBody := func(entry string) string {
		s := strategy(entry)
		return `{"marketSlug":"btc-updown-15m-1777466700",` + s[1:]
	}
	for _, tc := range []struct {
		name, path, body, code, want string
	}{
		{"nested key", "/v1/replay", replayBody(fmt.Sprintf(`{"field":"price_up","operator":"<","value":0.5,%q:1}`, long)), "VALIDATION_ERROR", "fields are field, operator, value"},
		{"field", "/v1/replay", replayBody(fmt.Sprintf(`{"field":%q,"operator":"<","value":0.5}`, long)), "INVALID_FIELD", "is not one of price_up"},
		{"operator", "/v1/replay", replayBody(fmt.Sprintf(`{"field":"price_up","operator":%q,"value":0.5}`, long)), "INVALID_OPERATOR", "is not one of <"},
		{"sweep path", "/v1/sweeps", `{"strategy":` + strategy(`{"field":"price_up","operator":"<","value":0.5}`) +
			fmt.Sprintf(`,"parameters":[{"path":%q,"values":[0.4,0.5]}],"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":2}}`, "/entryConditions/0/"+long),
			"VALIDATION_ERROR", "is not a sweepable value of the strategy: sweep one of"},
	} {
		r := b.do(http.MethodPost, tc.path, b.keys[store.Enterprise], "application/json", tc.body)
		e, _ := r.json(t)["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if r.status != http.StatusBadRequest || e["code"] != tc.code {
			t.Errorf("%s: %d %.300s, want 400 %s", tc.name, r.status, r.body, tc.code)
			continue
		}
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "aaaa…") || len(msg) > 2<<10 {
			t.Errorf("%s: message %.600q (%d bytes), want the echo cut and %q", tc.name, msg, len(msg), tc.want)
		}
	}

	ai := aiSetup(t)
	word := strings.Repeat("a", 1000)
	r := ai.post(store.Pro, "/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: `+word+` < 0.5 exit: price_up > 0.55 size=10","marketCount":3}`)
	e := wantError(t, r, http.StatusBadRequest, "INVALID_FIELD")
	if msg, _ := e["message"].(string); !strings.Contains(msg, word) || !strings.Contains(msg, "time_remaining_pct") {
		t.Errorf("strategy_code with a 1000-byte word: message %.300q… (%d bytes), want the word and the fields allowed", msg, len(msg))
	}
}
