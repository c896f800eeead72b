package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// browser is a signed-in dashboard: a cookie jar and the session's CSRF
// token, as the web page holds them.
type browser struct {
	b      *bundle
	client *http.Client
	csrf   string
	cookie *http.Cookie // the Set-Cookie of the sign-in
}

// signIn opens a session with the tier's key.
func (b *bundle) signIn(tier store.Tier) *browser {
	b.t.Helper()
	jar, _ := cookiejar.New(nil)
	br := &browser{b: b, client: &http.Client{Jar: jar}}
	r := br.send(http.MethodPost, "/v1/auth/session", map[string]string{"X-API-Key": b.keys[tier]}, "")
	if r.status != http.StatusNoContent {
		b.t.Fatalf("sign in as %s: %d %s", tier, r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "updown_session" {
			br.cookie = c
		}
	}
	if br.cookie == nil {
		b.t.Fatalf("sign in set no updown_session cookie: %v", r.header)
	}
	info := br.get("/v1/auth/session")
	if info.status != http.StatusOK {
		b.t.Fatalf("GET /v1/auth/session: %d %s", info.status, info.body)
	}
	br.csrf, _ = info.json(b.t)["data"].(map[string]any)["csrf_token"].(string)
	if br.csrf == "" {
		b.t.Fatalf("no csrf_token: %s", info.body)
	}
	return br
}

func (br *browser) send(method, path string, headers map[string]string, body string) response {
	br.b.t.Helper()
	req, err := http.NewRequest(method, br.b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		br.b.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := br.client.Do(req)
	if err != nil {
		br.b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		br.b.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

func (br *browser) get(path string) response { return br.send(http.MethodGet, path, nil, "") }

// change sends a state-changing request with the CSRF token, as the page does.
func (br *browser) change(method, path, body string) response {
	return br.send(method, path, map[string]string{"X-CSRF-Token": br.csrf}, body)
}

func sessionSetup(t *testing.T, opts ...func(*setupOpts)) *bundle {
	return setup(t, append([]func(*setupOpts){func(o *setupOpts) { o.redis = redistest.Client(t) }}, opts...)...)
}

func TestSessionSignInAndUse(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	wantError(t, b.do(http.MethodPost, "/v1/auth/session", "", "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, b.do(http.MethodPost, "/v1/auth/session", "ud_live_nope", "", ""), http.StatusUnauthorized, "UNAUTHORIZED")

	br := b.signIn(store.Pro)
	c := br.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge != 12*3600 || len(c.Value) < 40 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over http, 12 h, a long random value", c)
	}
	info := br.get("/v1/auth/session").json(t)
	d := info["data"].(map[string]any)
	if d["customer_id"] != b.ids[store.Pro] || d["tier"] != "PRO" || d["plan"].(map[string]any)["replay"] != true || info["success"] != true {
		t.Errorf("session info %v", info)
	}

	// The session works on key endpoints and on bearer endpoints, metered.
	r := br.get("/v1/markets?coin=BTC&limit=2")
	if r.status != http.StatusOK {
		t.Errorf("markets by session: %d %s", r.status, r.body)
	}
	if r.header.Get("X-Tier") != "PRO" || r.header.Get("X-RateLimit-Limit") != "50000" {
		t.Errorf("X-Tier = %q, X-RateLimit-Limit = %q on a session request: want PRO's and its limits",
			r.header.Get("X-Tier"), r.header.Get("X-RateLimit-Limit"))
	}
	if r := br.get("/v1/backtest-ai/quota"); r.status != http.StatusOK {
		t.Errorf("quota by session: %d %s", r.status, r.body)
	}
	if r := br.get("/v1/account"); r.status != http.StatusOK || r.json(t)["data"].(map[string]any)["customer_id"] != b.ids[store.Pro] {
		t.Errorf("account by session: %d %s", r.status, r.body)
	}
	// Without any credential: 401 on both kinds.
	wantError(t, b.get("", "/v1/markets?coin=BTC"), http.StatusUnauthorized, "UNAUTHORIZED")

	// Sign out needs the CSRF token; then the cookie is dead.
	wantError(t, br.send(http.MethodDelete, "/v1/auth/session", nil, ""), http.StatusForbidden, "CSRF_TOKEN_INVALID")
	out := br.change(http.MethodDelete, "/v1/auth/session", "")
	if out.status != http.StatusNoContent || !strings.Contains(out.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %v", out.status, out.header)
	}
	// The jar dropped the cookie; a client that kept it is refused too.
	wantError(t, br.get("/v1/markets?coin=BTC"), http.StatusUnauthorized, "UNAUTHORIZED")
	kept := &browser{b: b, client: &http.Client{}}
	wantError(t, kept.send(http.MethodGet, "/v1/markets?coin=BTC", map[string]string{"Cookie": "updown_session=" + c.Value}, ""),
		http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestSessionCookieSecureOverHTTPS(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t, func(o *setupOpts) { o.publicURL = "https://updown.example" })
	r := b.do(http.MethodPost, "/v1/auth/session", b.keys[store.Suite], "", "")
	set := r.header.Get("Set-Cookie")
	for _, want := range []string{"updown_session=", "Path=/", "Max-Age=43200", "HttpOnly", "Secure", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
}

// TestSessionInsecureCookieBehindHTTPS: a sign-in that a proxy says came
// over https (X-Forwarded-Proto), on a server whose PUBLIC_URL is not
// https, gets its cookie without Secure and the operator is told, once; a
// sign-in over http says nothing, nor does one with PUBLIC_URL https. The
// header is the proxy's, not the client's: the document names it for no
// operation.
func TestSessionInsecureCookieBehindHTTPS(t *testing.T) {
	t.Parallel()
	const warning = "got a session cookie without Secure"
	signIn := func(b *bundle, proto string) {
		t.Helper()
		br := &browser{b: b, client: &http.Client{}}
		h := map[string]string{"X-API-Key": b.keys[store.Pro]}
		if proto != "" {
			h["X-Forwarded-Proto"] = proto
		}
		if r := br.send(http.MethodPost, "/v1/auth/session", h, ""); r.status != http.StatusNoContent {
			t.Fatalf("sign in over %q: %d %s", proto, r.status, r.body)
		}
	}
	var logs logBuffer
	b := sessionSetup(t, func(o *setupOpts) { o.logger = logs.logger() })
	if doc := b.get("", "/openapi.json"); doc.status != http.StatusOK || strings.Contains(strings.ToLower(string(doc.body)), "x-forwarded-proto") {
		t.Errorf("the document (%d) names X-Forwarded-Proto", doc.status)
	}
	signIn(b, "")
	signIn(b, "http")
	if strings.Contains(logs.String(), warning) {
		t.Errorf("a sign-in over http warned of the cookie:\n%s", logs.String())
	}
	signIn(b, "https")
	signIn(b, "HTTPS, http")
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("two sign-ins over https with PUBLIC_URL unset warned %d times, want once:\n%s", n, logs.String())
	}

	var secureLogs logBuffer
	secure := sessionSetup(t, func(o *setupOpts) { o.publicURL = "https://updown.example"; o.logger = secureLogs.logger() })
	signIn(secure, "https")
	if strings.Contains(secureLogs.String(), warning) {
		t.Errorf("a sign-in over https with PUBLIC_URL https warned:\n%s", secureLogs.String())
	}
}

// TestSessionCSRF: a cookie without the CSRF header changes nothing.
func TestSessionCSRF(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	br := b.signIn(store.Pro)
	ctx := context.Background()
	before, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	for _, h := range []map[string]string{nil, {"X-CSRF-Token": "wrong"}, {"X-CSRF-Token": br.csrf + "x"}} {
		wantError(t, br.send(http.MethodPost, "/v1/account/keys", h, ""), http.StatusForbidden, "CSRF_TOKEN_INVALID")
		wantError(t, br.send(http.MethodDelete, "/v1/account/keys/"+before[0].ID, h, ""), http.StatusForbidden, "CSRF_TOKEN_INVALID")
		wantError(t, br.send(http.MethodPost, "/v1/backtest-ai/generate", h, `{"prompt":"buy"}`), http.StatusForbidden, "CSRF_TOKEN_INVALID")
	}
	after, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	if len(after) != len(before) || after[0].RevokedAt != nil {
		t.Errorf("keys changed without CSRF: %+v", after)
	}
	// Another session's token is not this one's.
	other := b.signIn(store.Pro)
	wantError(t, br.send(http.MethodPost, "/v1/account/keys", map[string]string{"X-CSRF-Token": other.csrf}, ""), http.StatusForbidden, "CSRF_TOKEN_INVALID")
	// With the token it works; GETs need none.
	if r := br.change(http.MethodPost, "/v1/account/keys", ""); r.status != http.StatusCreated {
		t.Errorf("create key with CSRF: %d %s", r.status, r.body)
	}
	// An X-API-Key request needs no CSRF token (no cookie involved).
	if r := b.do(http.MethodPost, "/v1/account/keys", b.keys[store.Pro], "", ""); r.status != http.StatusCreated {
		t.Errorf("create key with X-API-Key: %d %s", r.status, r.body)
	}
}

// TestSessionFollowsKeyAndTier: revoking the key ends its sessions at the
// next request; a tier change holds at once.
func TestSessionFollowsKeyAndTier(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	ctx := context.Background()
	br := b.signIn(store.Pro)
	if r := br.get("/v1/markets?coin=ETH&limit=1"); r.status != http.StatusOK {
		t.Fatalf("PRO sees ETH: %d %s", r.status, r.body)
	}
	if _, err := b.store.SetCustomerTier(ctx, b.ids[store.Pro], store.Starter); err != nil {
		t.Fatal(err)
	}
	e := wantError(t, br.get("/v1/markets?coin=ETH&limit=1"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	if e["details"].(map[string]any)["current_tier"] != "STARTER" {
		t.Errorf("tier error %v", e)
	}
	if tier := br.get("/v1/auth/session").json(t)["data"].(map[string]any)["tier"]; tier != "STARTER" {
		t.Errorf("session tier after the change = %v", tier)
	}

	keys, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	if err := b.store.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	r := br.get("/v1/markets?coin=BTC&limit=1")
	wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	if !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("a dead session's answer should expire the cookie: %v", r.header)
	}
	wantError(t, br.get("/v1/auth/session"), http.StatusUnauthorized, "UNAUTHORIZED")
}

// TestSessionDeadKeyBeforeCSRF: a state-changing request on a session
// whose key was revoked is told the session is over (401, the cookie
// cleared), whatever its CSRF token, not that the token is off (403).
func TestSessionDeadKeyBeforeCSRF(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	ctx := context.Background()
	br := b.signIn(store.Pro)
	keys, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	if err := b.store.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	r := br.send(http.MethodPost, "/v1/account/keys", nil, "")
	wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	if !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("a dead session's answer should expire the cookie: %v", r.header)
	}
	if after, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro]); len(after) != len(keys) {
		t.Errorf("a key was made on a dead session: %d keys, %d before", len(after), len(keys))
	}
}

// TestSessionIsolation: one customer's session never sees or revokes
// another's keys, and never reads another's jobs.
func TestSessionIsolation(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	b := sessionSetup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = st, q.client, 200*time.Millisecond })
	ctx := context.Background()
	pro, ent := b.signIn(store.Pro), b.signIn(store.Enterprise)

	var list struct {
		Data struct {
			Keys []struct {
				ID      string `json:"id"`
				Prefix  string `json:"prefix"`
				Current bool   `json:"current"`
			} `json:"keys"`
		} `json:"data"`
	}
	if err := json.Unmarshal(pro.get("/v1/account/keys").body, &list); err != nil {
		t.Fatal(err)
	}
	own, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	if len(list.Data.Keys) != len(own) || list.Data.Keys[0].ID != own[0].ID || !list.Data.Keys[0].Current {
		t.Errorf("PRO's keys = %+v, want its own %+v", list.Data.Keys, own)
	}
	theirs, _ := b.store.ListAPIKeys(ctx, b.ids[store.Enterprise])
	wantError(t, pro.change(http.MethodDelete, "/v1/account/keys/"+theirs[0].ID, ""), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	if r := ent.get("/v1/account"); r.status != http.StatusOK {
		t.Errorf("ENTERPRISE's key was revoked by another customer: %d %s", r.status, r.body)
	}

	// A replay through PRO's session times out (no worker) with a job id
	// that only PRO can read.
	slug, _ := snapshotMarket()
	e := wantError(t, pro.change(http.MethodPost, "/v1/replay", replayBody(slug, nil)), http.StatusGatewayTimeout, "JOB_TIMEOUT")
	id, _ := e["details"].(map[string]any)["job_id"].(string)
	if r := pro.get("/v1/jobs/" + id); r.status != http.StatusAccepted {
		t.Errorf("owner's session reads its job: %d %s", r.status, r.body)
	}
	wantError(t, ent.get("/v1/jobs/"+id), http.StatusNotFound, "RESOURCE_NOT_FOUND")
}

func TestSessionNeedsRedis(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wantError(t, b.do(http.MethodPost, "/v1/auth/session", b.keys[store.Pro], "", ""), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
}

// TestSessionBesideOtherAuthorization: a browser behind a proxy that asks
// for HTTP Basic auth (a staging site, an intranet) sends its
// Authorization: Basic header with every request of the page. That header
// is the proxy's, not a bearer token of this API: the session cookie still
// authenticates the dashboard's calls, CSRF rules included, on key and on
// bearer endpoints alike.
func TestSessionBesideOtherAuthorization(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	br := b.signIn(store.Pro)
	for _, auth := range []string{"Basic b3BzOnNlY3JldA==", "Digest username=\"ops\", realm=\"staging\""} {
		h := map[string]string{"Authorization": auth}
		for _, path := range []string{"/v1/account", "/v1/markets?coin=BTC&limit=1", "/v1/backtest-ai/quota", "/v1/account/keys"} {
			if r := br.send(http.MethodGet, path, h, ""); r.status != http.StatusOK {
				t.Errorf("GET %s by session with Authorization %q: %d %s", path, auth, r.status, r.body)
			}
		}
		wantError(t, br.send(http.MethodPost, "/v1/account/keys", h, ""), http.StatusForbidden, "CSRF_TOKEN_INVALID")
		h["X-CSRF-Token"] = br.csrf
		if r := br.send(http.MethodPost, "/v1/account/keys", h, ""); r.status != http.StatusCreated {
			t.Errorf("POST /v1/account/keys by session with Authorization %q and the CSRF token: %d %s", auth, r.status, r.body)
		}
	}
	// Without the cookie, such a header is still no credential.
	req := map[string]string{"Authorization": "Basic b3BzOnNlY3JldA=="}
	anon := &browser{b: b, client: &http.Client{}}
	wantError(t, anon.send(http.MethodGet, "/v1/account", req, ""), http.StatusUnauthorized, "UNAUTHORIZED")
	// A bearer token beside the cookie is still the credential used (this
	// server has no TOKEN_SECRET, so it cannot be a valid one).
	if r := br.send(http.MethodGet, "/v1/backtest-ai/quota", map[string]string{"Authorization": "Bearer nope"}, ""); r.status == http.StatusOK {
		t.Errorf("a bearer token beside the cookie was not the credential used: %d %s", r.status, r.body)
	}
}

// TestSessionEndpointsTakeTheCookieOnly: GET and DELETE /v1/auth/session
// asked with an API key (or a bearer token) and no cookie are 401 saying
// that they take the session cookie only, not advising the caller to send
// the X-API-Key it sent.
func TestSessionEndpointsTakeTheCookieOnly(t *testing.T) {
	t.Parallel()
	b := sessionSetup(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for name, headers := range map[string]map[string]string{
			"key":    {"X-API-Key": b.keys[store.Pro]},
			"bearer": {"Authorization": "Bearer some.token.here"},
		} {
			req, err := http.NewRequest(method, b.srv.URL+"/v1/auth/session", nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			e := wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, http.StatusUnauthorized, "UNAUTHORIZED")
			if msg, _ := e["message"].(string); !strings.Contains(msg, "session cookie only") || strings.Contains(msg, "or send an X-API-Key") {
				t.Errorf("%s /v1/auth/session with a %s: %q, want it to say the endpoint takes the session cookie only", method, name, msg)
			}
		}
	}
	// Elsewhere a request without credentials is still told every way in.
	if e := wantError(t, b.do(http.MethodGet, "/v1/account", "", "", ""), http.StatusUnauthorized, "UNAUTHORIZED"); !strings.Contains(e["message"].(string), "X-API-Key") {
		t.Errorf("no credential: %v", e)
	}
}
