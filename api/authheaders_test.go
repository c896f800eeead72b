package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestTwoDifferentCredentialsAreRefused: a request with two different
// X-API-Key headers (or two different Authorization headers) is 401
// UNAUTHORIZED saying so, where the first was used without a word: the
// answer then depended on the headers' order, and a proxy's key could
// stand in for the client's (or the reverse). The same key twice is one
// credential and is served.
func TestTwoDifferentCredentialsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	send := func(name string, values ...string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/account", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			req.Header.Add(name, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return response{status: res.StatusCode, header: res.Header, body: body}
	}
	for _, keys := range [][]string{
		{b.keys[store.Pro], b.keys[store.Starter]},
		{b.keys[store.Starter], b.keys[store.Pro]},
		{"ud_live_not_a_key", b.keys[store.Pro]},
	} {
		r := send("X-API-Key", keys...)
		e := wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		if msg, _ := e["message"].(string); !strings.Contains(msg, "X-API-Key") {
			t.Errorf("message %q does not name the header", msg)
		}
		if r.header.Get("X-Tier") != "" {
			t.Errorf("X-Tier %q answered for an ambiguous credential", r.header.Get("X-Tier"))
		}
	}
	if r := send("X-API-Key", b.keys[store.Pro], b.keys[store.Pro]); r.status != http.StatusOK {
		t.Errorf("the same key twice: %d %s", r.status, r.body)
	}
}

// TestTwoDifferentBearerTokensAreRefused: two different bearer tokens
// (here two customers') are 401 UNAUTHORIZED, where the first was used.
func TestTwoDifferentBearerTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	pro, ent := b.token(store.Pro), b.token(store.Enterprise)
	ask := func(tokens ...string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/backtest-ai/quota", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range tokens {
			req.Header.Add("Authorization", "Bearer "+tok)
		}
		return send(t, req)
	}
	for _, tokens := range [][]string{{pro, ent}, {ent, pro}, {"not-a-token", pro}} {
		e := wantError(t, ask(tokens...), http.StatusUnauthorized, "UNAUTHORIZED")
		if msg, _ := e["message"].(string); !strings.Contains(msg, "bearer token") {
			t.Errorf("message %q does not say what is wrong", msg)
		}
	}
	if r := ask(pro, pro); r.status != http.StatusOK {
		t.Errorf("the same token twice: %d %s", r.status, r.body)
	}
}
