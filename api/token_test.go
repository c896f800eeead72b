package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/redis/redistest"
)

type testClaims struct {
	KeyID string `json:"key_id"`
	jwt.RegisteredClaims
}

func TestAuthToken(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	wantError(t, b.do(http.MethodPost, "/v1/auth/token", "", "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, b.do(http.MethodPost, "/v1/auth/token", "ud_live_nope", "", ""), http.StatusUnauthorized, "UNAUTHORIZED")

	r := b.do(http.MethodPost, "/v1/auth/token", b.keys[store.Pro], "", "")
	m := r.json(t)
	if r.status != http.StatusOK || m["token_type"] != "Bearer" || m["expires_in"] != 900.0 || len(m) != 3 {
		t.Fatalf("token answer %d %s", r.status, r.body)
	}
	var c testClaims
	tok, err := jwt.ParseWithClaims(m["access_token"].(string), &c, func(*jwt.Token) (any, error) { return testSecret, nil },
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || tok.Method.Alg() != "HS256" {
		t.Fatalf("token: %v %v", err, tok)
	}
	keys, _ := b.store.ListAPIKeys(t.Context(), b.ids[store.Pro])
	if c.Subject != b.ids[store.Pro] || c.KeyID != keys[0].ID || c.Issuer != "updown" || c.ExpiresAt.Sub(c.IssuedAt.Time) != 15*time.Minute || c.ID == "" {
		t.Errorf("claims %+v", c)
	}
}

// TestBearerRejected: the Backtest AI endpoints take a live bearer token
// and nothing else.
func TestBearerRejected(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	good := b.token(store.Pro)
	sign := func(method jwt.SigningMethod, key any, c testClaims) string {
		s, err := jwt.NewWithClaims(method, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	keys, _ := b.store.ListAPIKeys(t.Context(), b.ids[store.Pro])
	entKeys, _ := b.store.ListAPIKeys(t.Context(), b.ids[store.Enterprise])
	claims := func(sub, key string) testClaims {
		return testClaims{KeyID: key, RegisteredClaims: jwt.RegisteredClaims{Issuer: "updown", Subject: sub,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}}
	}
	proClaims := claims(b.ids[store.Pro], keys[0].ID)
	tampered := good[:len(good)-3] + map[bool]string{true: "AAA", false: "BBB"}[!strings.HasSuffix(good, "AAA")]
	wrongIssuer := proClaims
	wrongIssuer.Issuer = "someone"
	noExpiry := proClaims
	noExpiry.ExpiresAt = nil

	cases := []struct{ name, auth, msg string }{
		{"none", "", "missing bearer token"},
		{"basic", "Basic dXNlcjpwYXNz", `must be "Bearer <token>"`},
		{"empty bearer", "Bearer ", `must be "Bearer <token>"`},
		{"garbage", "Bearer not.a.jwt", "invalid bearer token"},
		{"tampered signature", "Bearer " + tampered, "invalid bearer token"},
		{"other secret", "Bearer " + sign(jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), proClaims), "invalid bearer token"},
		{"alg none", "Bearer " + sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, proClaims), "invalid bearer token"},
		{"HS512", "Bearer " + sign(jwt.SigningMethodHS512, testSecret, proClaims), "invalid bearer token"},
		{"wrong issuer", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, wrongIssuer), "invalid bearer token"},
		{"no expiry", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, noExpiry), "invalid bearer token"},
		{"unknown customer", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, claims("00000000-0000-0000-0000-000000000000", keys[0].ID)), "no longer exists"},
		{"someone else's key", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, claims(b.ids[store.Pro], entKeys[0].ID)), "revoked"},
	}
	for _, tc := range cases {
		r := b.ai(http.MethodGet, "/v1/backtest-ai/quota", tc.auth, "")
		e := wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		if !strings.Contains(e["message"].(string), tc.msg) || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="updown"`) {
			t.Errorf("%s: %q (WWW-Authenticate %q), want it to say %q", tc.name, e["message"], r.header.Get("WWW-Authenticate"), tc.msg)
		}
	}
	// An API key alone does not open the AI endpoints.
	r := b.do(http.MethodGet, "/v1/backtest-ai/quota", b.keys[store.Pro], "", "")
	wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")

	if r := b.ai(http.MethodGet, "/v1/backtest-ai/quota", "bearer "+good, ""); r.status != http.StatusOK {
		t.Fatalf("a good token (scheme in any case): %d %s", r.status, r.body)
	}
	// Expiry, on the server's clock.
	b.clock.Advance(15*time.Minute + time.Second)
	e := wantError(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", "Bearer "+good, ""), http.StatusUnauthorized, "UNAUTHORIZED")
	if !strings.Contains(e["message"].(string), "expired") {
		t.Errorf("expired: %v", e)
	}
	// Revoking the key ends its tokens at once.
	fresh := b.token(store.Pro)
	if err := b.store.RevokeAPIKey(t.Context(), keys[0].ID); err != nil {
		t.Fatal(err)
	}
	e = wantError(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", "Bearer "+fresh, ""), http.StatusUnauthorized, "UNAUTHORIZED")
	if !strings.Contains(e["message"].(string), "revoked") {
		t.Errorf("revoked: %v", e)
	}
}

// TestBearerFollowsTier: the plan is read on every request, so a token
// issued on PRO stops at the agent once the customer is STARTER.
func TestBearerFollowsTier(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	tok := "Bearer " + b.token(store.Pro)
	if r := b.ai(http.MethodGet, "/v1/backtest-ai/quota", tok, ""); r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if _, err := b.store.SetCustomerTier(t.Context(), b.ids[store.Pro], store.Starter); err != nil {
		t.Fatal(err)
	}
	wantError(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", tok, ""), http.StatusForbidden, "BACKTEST_AI_REQUIRED")
}

func TestTokensNotConfigured(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers, o.secret = true, nil })
	wantError(t, b.do(http.MethodPost, "/v1/auth/token", b.keys[store.Pro], "", ""), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	wantError(t, b.ai(http.MethodGet, "/v1/backtest-ai/quota", "Bearer x.y.z", ""), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
}

// TestSignInAndTokenTakeNoSettings: POST /v1/auth/token and POST
// /v1/auth/session take the key in its header and no body: a setting sent
// in one (a token's lifetime, say) is 400 naming it rather than dropped
// without a word, a body that is not JSON is 415 and one over 1 MiB 413
// (DESIGN 5), as POST /v1/account/keys answers them; none, null or {} is
// still taken.
func TestSignInAndTokenTakeNoSettings(t *testing.T) {
	t.Parallel()
	tokens := aiSetup(t, func(o *aiOpts) { o.noWorkers = true }).bundle
	sessions := sessionSetup(t)
	for path, c := range map[string]struct {
		b    *bundle
		want int
	}{"/v1/auth/token": {tokens, http.StatusOK}, "/v1/auth/session": {sessions, http.StatusNoContent}} {
		key := c.b.keys[store.Pro]
		for _, body := range []string{"", "{}", " null ", "{ }"} {
			if r := c.b.do(http.MethodPost, path, key, "application/json", body); r.status != c.want {
				t.Errorf("%s with body %q: %d, want %d: %s", path, body, r.status, c.want, r.body)
			}
		}
		if r := c.b.do(http.MethodPost, path, key, "", ""); r.status != c.want {
			t.Errorf("%s with no body and no Content-Type: %d, want %d: %s", path, r.status, c.want, r.body)
		}
		for body, field := range map[string]string{`{"expires_in":86400}`: "expires_in", `{"ttl":"24h","scope":"all"}`: "scope", `[1]`: "", `"x"`: ""} {
			e := wantError(t, c.b.do(http.MethodPost, path, key, "application/json", body), http.StatusBadRequest, "VALIDATION_ERROR")
			if field != "" && e["details"].(map[string]any)["field"] != field {
				t.Errorf("%s with body %s: %v, want details.field %q", path, body, e, field)
			}
		}
		wantError(t, c.b.do(http.MethodPost, path, key, "text/plain", `{"expires_in":86400}`), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		wantError(t, c.b.do(http.MethodPost, path, key, "application/json", strings.Repeat(" ", 2<<20)+"{}"), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	}
}

// TestBearerTokenOnKeyEndpoint: a bearer token sent to an endpoint that
// takes the API key is refused (401) saying that the endpoint wants the
// key in X-API-Key and what tokens are for, not that nothing was sent.
func TestBearerTokenOnKeyEndpoint(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	tok := b.token(store.Pro)
	for _, path := range []string{"/v1/markets?coin=BTC&limit=1", "/v1/account", "/v1/account/keys"} {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		e := wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, http.StatusUnauthorized, "UNAUTHORIZED")
		if msg, _ := e["message"].(string); !strings.Contains(msg, "X-API-Key") || !strings.Contains(msg, "not a bearer token") {
			t.Errorf("GET %s with a bearer token: %q, want it to say the endpoint takes X-API-Key, not a bearer token", path, msg)
		}
	}
	// Without any credential the message stays the plain one.
	if e := wantError(t, b.do(http.MethodGet, "/v1/account", "", "", ""), http.StatusUnauthorized, "UNAUTHORIZED"); strings.Contains(e["message"].(string), "bearer") {
		t.Errorf("no credential: %v", e)
	}
}

// TestSessionTokenEndsWithSession: a bearer token obtained with the
// dashboard's session cookie stops working when the session ends (signed
// out, or expired in Redis), with the 401 an expired token gets; a token
// traded for a key of the same customer is not touched by it. The token
// names its session by a hash, never by the cookie's value.
func TestSessionTokenEndsWithSession(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	b := setup(t, func(o *setupOpts) { o.redis, o.tokenSecret = rdb, testSecret })
	bearer := func(tok string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/backtest-ai/quota", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return send(t, req)
	}
	accessToken := func(r response) string {
		t.Helper()
		tok, _ := r.json(t)["access_token"].(string)
		if r.status != http.StatusOK || tok == "" {
			t.Fatalf("POST /v1/auth/token: %d %s", r.status, r.body)
		}
		return tok
	}
	keyTok := accessToken(b.do(http.MethodPost, "/v1/auth/token", b.keys[store.Pro], "", ""))

	br := b.signIn(store.Pro)
	sessTok := accessToken(br.change(http.MethodPost, "/v1/auth/token", ""))
	if strings.Contains(sessTok, br.cookie.Value) {
		t.Fatalf("the token holds the session cookie's value")
	}
	var c testClaims
	if _, _, err := jwt.NewParser().ParseUnverified(sessTok, &c); err != nil || c.Subject != b.ids[store.Pro] {
		t.Fatalf("session token claims %+v: %v", c, err)
	}
	if payload, _ := jwt.NewParser().DecodeSegment(strings.Split(sessTok, ".")[1]); strings.Contains(string(payload), br.cookie.Value) {
		t.Fatalf("the token's claims hold the session cookie's value: %s", payload)
	}
	for name, tok := range map[string]string{"key": keyTok, "session": sessTok} {
		if r := bearer(tok); r.status != http.StatusOK {
			t.Fatalf("%s token before sign-out: %d %s", name, r.status, r.body)
		}
	}

	if r := br.change(http.MethodDelete, "/v1/auth/session", ""); r.status != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", r.status, r.body)
	}
	e := wantError(t, bearer(sessTok), http.StatusUnauthorized, "UNAUTHORIZED")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "session") {
		t.Errorf("session token after sign-out: %q, want it to say the session ended", msg)
	}
	if r := bearer(keyTok); r.status != http.StatusOK {
		t.Errorf("key token after a session of its customer signed out: %d %s", r.status, r.body)
	}

	// A session that expires (Redis drops it) takes its tokens with it too.
	br2 := b.signIn(store.Pro)
	sessTok2 := accessToken(br2.change(http.MethodPost, "/v1/auth/token", ""))
	if r := bearer(sessTok2); r.status != http.StatusOK {
		t.Fatalf("second session's token: %d %s", r.status, r.body)
	}
	keys, err := rdb.Keys(t.Context(), "updown:session:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("session keys in Redis: %v %v, want the one live session", keys, err)
	}
	if err := rdb.Del(t.Context(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	wantError(t, bearer(sessTok2), http.StatusUnauthorized, "UNAUTHORIZED")
	if r := bearer(keyTok); r.status != http.StatusOK {
		t.Errorf("key token after a session expired: %d %s", r.status, r.body)
	}
}
