package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// TestAPIRefusesDevSecrets: the secrets built into `updown dev` are public,
// so `updown api` refuses to start with either of them.
func TestAPIRefusesDevSecrets(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	for _, c := range []struct{ token, hook, want string }{
		{devTokenSecret, testWebhookSecret, "TOKEN_SECRET is the built-in dev secret"},
		{testTokenSecret, api.DevWebhookSecret, "WEBHOOK_SECRET is the built-in dev secret"},
		// The same key spelt otherwise verifies the same signatures.
		{testTokenSecret, strings.TrimRight(api.DevWebhookSecret, "="), "WEBHOOK_SECRET is the built-in dev secret"},
		{testTokenSecret, "whsec_dXBkb3duLWRldi13ZWJob29rLXNl\nY3JldC0wMDAwMDA=", "WEBHOOK_SECRET is the built-in dev secret"},
	} {
		t.Setenv("TOKEN_SECRET", c.token)
		t.Setenv("WEBHOOK_SECRET", c.hook)
		if err := run(context.Background(), []string{"api"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("api with a dev secret: %v; want %q", err, c.want)
		}
	}
}

// TestRefuseDevSecretsAsKeys: the dev token secret is refused as the HMAC
// key it is; HMAC pads a short key with zero bytes, so a key with some
// added signs the same tokens. (A NUL cannot reach TOKEN_SECRET through
// the environment; the guard does not rely on that.)
func TestRefuseDevSecretsAsKeys(t *testing.T) {
	t.Parallel()
	if err := refuseDevSecrets([]byte(devTokenSecret+"\x00"), testWebhookSecret); err == nil {
		t.Error("the dev token secret with a zero byte was accepted")
	}
	if err := refuseDevSecrets([]byte(testTokenSecret), testWebhookSecret); err != nil {
		t.Errorf("production secrets refused: %v", err)
	}
}

// TestSecretsStayHidden runs the CLI and the real api and worker
// processes with keys, bearer tokens and signed webhooks in use, then
// checks that no plain key is stored, no secret reaches a log, dev keys
// are refused, the responses carry the security headers, and the
// monitoring UI opens only to the admin token.
func TestSecretsStayHidden(t *testing.T) {
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	t.Setenv("DATABASE_URL", dbURL)
	slugs := seedMarkets(t, dbURL, store.M15)

	var created struct {
		CustomerID string `json:"customer_id"`
		APIKey     string `json:"api_key"`
	}
	if err := json.Unmarshal(runCmd(t, "customers", "create", "--email", "sec@example.com", "--tier", "ENTERPRISE"), &created); err != nil {
		t.Fatal(err)
	}
	var second struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(runCmd(t, "keys", "create", "--email", "sec@example.com"), &second); err != nil {
		t.Fatal(err)
	}

	const adminToken = "monitoring-admin-token-7f3a9c"
	apiProc, base := startAPI(t, s, "MONITORING_ADMIN_TOKEN="+adminToken, "LOG_LEVEL=debug")
	workerProc := startProc(t, "worker", s.environ("LOG_LEVEL=debug", "AI_PROVIDER=builtin"), "worker", "--ops-addr", "off")

	// Use every secret.
	for _, key := range []string{created.APIKey, second.APIKey} {
		if a := do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&limit=1", key, ""); a.status != http.StatusOK {
			t.Fatalf("list: %v", a)
		}
	}
	if a := do(nil, http.MethodPost, base+"/v1/replay", created.APIKey, replayBody(slugs[store.M15], 7)); a.status != http.StatusOK {
		t.Fatalf("replay: %v", a)
	}
	wrongKey := created.APIKey[:len(created.APIKey)-4] + "zzzz"
	if a := do(nil, http.MethodGet, base+"/v1/markets?coin=BTC", wrongKey, ""); a.status != http.StatusUnauthorized {
		t.Errorf("a wrong key: %v", a)
	}
	if a := do(nil, http.MethodGet, base+"/v1/markets?coin=BTC", "ud_dev_enterprise", ""); a.status != http.StatusUnauthorized {
		t.Errorf("a dev key in production: %v", a)
	}
	tokRes := do(nil, http.MethodPost, base+"/v1/auth/token", created.APIKey, "")
	token, _ := tokRes.body["access_token"].(string)
	if token == "" {
		t.Fatalf("token: %v", tokRes)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/backtest-ai/generate", strings.NewReader(`{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("generate: %d", res.StatusCode)
		}
	}
	hookBody := []byte(`{"business_id":"b","type":"payment.succeeded","timestamp":"2026-01-01T00:00:00Z","data":{"customer":{"email":"sec@example.com"}}}`)
	sig, err := api.SignWebhook(testWebhookSecret, "msg_sec_1", time.Now(), hookBody)
	if err != nil {
		t.Fatal(err)
	}
	hreq, _ := http.NewRequest(http.MethodPost, base+"/v1/webhook/dodo", bytes.NewReader(hookBody))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("webhook-id", "msg_sec_1")
	hreq.Header.Set("webhook-timestamp", strings.TrimSpace(jsonNumber(time.Now().Unix())))
	hreq.Header.Set("webhook-signature", sig)
	if res, err := http.DefaultClient.Do(hreq); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("webhook: %d", res.StatusCode)
		}
	}

	// Security headers: on the API's JSON, and the HTML pages left able to
	// run their scripts.
	a := do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&limit=1", created.APIKey, "")
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
		"X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'"} {
		if got := a.header.Get(h); got != want {
			t.Errorf("/v1 header %s = %q, want %q", h, got, want)
		}
	}
	if h := do(nil, http.MethodGet, base+"/v1/nope", "", "").header; h.Get("Content-Security-Policy") == "" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("a 404's headers: %v", h)
	}
	for _, p := range []string{"/docs", "/monitoring/"} {
		req, _ := http.NewRequest(http.MethodGet, base+p, nil)
		req.SetBasicAuth("ops", adminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		a := answer{status: res.StatusCode, header: res.Header}
		// /docs carries Huma's own policy, which admits its scripts.
		if a.status != http.StatusOK || strings.HasPrefix(a.header.Get("Content-Security-Policy"), "default-src 'none'; frame-ancestors") ||
			a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d, headers %v", p, a.status, a.header)
		}
	}

	// Monitoring: only with the admin token, as the HTTP Basic password.
	pause := func(auth func(*http.Request)) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/monitoring/api/queues/replay:pause", nil)
		if auth != nil {
			auth(req)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	header := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	basic := func(user, password string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, password) }
	}
	for name, auth := range map[string]func(*http.Request){"none": nil, "bearer wrong": header("Bearer wrong"),
		"bearer token": header("Bearer " + adminToken), "bare token": header(adminToken), "basic wrong": basic("admin", adminToken+"x"),
		"basic token as user": basic(adminToken, "")} {
		if got := pause(auth); got != http.StatusUnauthorized {
			t.Errorf("pause a queue with auth %s: %d, want 401", name, got)
		}
	}
	// Read-only without MONITORING_WRITE, even to the admin (issue 28, item 6).
	if got := pause(basic("ops", adminToken)); got != http.StatusMethodNotAllowed {
		t.Errorf("pause a queue with the admin token, without MONITORING_WRITE: %d, want 405", got)
	}
	if a := do(nil, http.MethodGet, base+"/monitoring/api/queues", "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("read the queues without a token: %v", a)
	}

	// Keys are stored hashed: no column of any key row holds a plain key.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows string
	if err := conn.QueryRow(ctx, `select coalesce(string_agg(row_to_json(k)::text, E'\n'), '') from api_keys k`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if strings.Count(rows, "\n") != 1 {
		t.Fatalf("want 2 key rows, got:\n%s", rows)
	}
	secrets := map[string]string{"api key": created.APIKey, "second api key": second.APIKey, "wrong key": wrongKey,
		"key secret part": created.APIKey[len(created.APIKey)-20:], "bearer token": token, "token signature": token[strings.LastIndexByte(token, '.')+1:],
		"token secret": testTokenSecret, "webhook secret": testWebhookSecret, "webhook key": strings.TrimPrefix(testWebhookSecret, "whsec_"),
		"webhook signature": strings.TrimPrefix(sig, "v1,"), "admin token": adminToken}
	for what, secret := range secrets {
		if strings.Contains(rows, secret) {
			t.Errorf("api_keys holds the %s", what)
		}
	}
	// No secret in any log.
	apiProc.signal(t, 15)
	_ = apiProc.wait(t, 30*time.Second)
	logs := apiProc.out.String() + workerProc.out.String()
	if !strings.Contains(logs, "api listening") {
		t.Fatalf("no logs captured:\n%s", logs)
	}
	for what, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold the %s", what)
		}
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestAPIRefusesShortMonitoringToken: MONITORING_ADMIN_TOKEN is a password
// anyone who reaches the api can guess at, without limit: `updown api`
// refuses one shorter than 16 characters, without quoting it.
func TestAPIRefusesShortMonitoringToken(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("TOKEN_SECRET", testTokenSecret)
	t.Setenv("WEBHOOK_SECRET", testWebhookSecret)
	t.Setenv("MONITORING_ADMIN_TOKEN", "admin")
	err := run(context.Background(), []string{"api"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "MONITORING_ADMIN_TOKEN") || strings.Contains(err.Error(), "admin\"") {
		t.Fatalf("api with a 5-character monitoring token: %v", err)
	}
	// A long enough one goes on to the backends (which this test has none of).
	t.Setenv("MONITORING_ADMIN_TOKEN", "a-long-enough-monitoring-token")
	if err := run(context.Background(), []string{"api"}, io.Discard, io.Discard); err == nil || strings.Contains(err.Error(), "MONITORING_ADMIN_TOKEN") {
		t.Fatalf("api with a long monitoring token: %v", err)
	}
}

// TestAPIRefusesMalformedWebhookSecret: a WEBHOOK_SECRET that is not a
// Standard Webhooks secret (whsec_ and the base64 of at least 16 key
// bytes) stops `updown api` at start, naming the variable, before it
// connects to anything (this test has no backends: the error must be the
// secret's, not the database's).
func TestAPIRefusesMalformedWebhookSecret(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("TOKEN_SECRET", testTokenSecret)
	t.Setenv("MONITORING_ADMIN_TOKEN", "")
	for _, c := range []struct{ secret, want string }{
		{"whsec_test123", "5 bytes"},
		{"sk_live_0123456789abcdef0123456789", `start with "whsec_"`},
		{"whsec_not base64!", "not base64"},
	} {
		t.Run(c.secret, func(t *testing.T) {
			t.Setenv("WEBHOOK_SECRET", c.secret)
			err := run(context.Background(), []string{"api"}, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("api with WEBHOOK_SECRET=%q: %v; want an error naming WEBHOOK_SECRET and %q", c.secret, err, c.want)
			}
		})
	}
}
