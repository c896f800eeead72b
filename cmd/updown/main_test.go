package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// call sends a request with one auth header (name: value, or "" for
// none) and decodes the JSON answer.
func call(t *testing.T, method, url, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if name, value, ok := strings.Cut(auth, ": "); ok {
		req.Header.Set(name, value)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return res.StatusCode, out
}

// get performs a GET with an API key ("" for none).
func get(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	return call(t, http.MethodGet, url, apiKey(key), "")
}

// post sends a JSON POST with an API key.
func post(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	return call(t, http.MethodPost, url, apiKey(key), body)
}

// postBearer sends a JSON POST with a bearer token.
func postBearer(t *testing.T, url, token, body string) (int, map[string]any) {
	t.Helper()
	return call(t, http.MethodPost, url, "Authorization: Bearer "+token, body)
}

func apiKey(key string) string {
	if key == "" {
		return ""
	}
	return "X-API-Key: " + key
}

// TestDevEndToEnd runs `updown dev` as `make run` does and uses it as a
// newcomer would: the printed keys against the printed URL.
func TestDevEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--addr", "127.0.0.1:0", "--snapshots-per-market", "200"}, pw, io.Discard)
		pw.Close()
	}()
	base := waitForBanner(t, pr)
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	status, list := get(t, base+"/v1/markets?coin=BTC&limit=5", "ud_dev_pro")
	if status != http.StatusOK || len(list["markets"].([]any)) != 5 || list["total"].(float64) < 150 {
		t.Fatalf("list: %d %v", status, list)
	}
	// Every plan's demo key works; the starter one sees a cut window.
	for _, key := range []string{"ud_dev_starter", "ud_dev_pro_trial", "ud_dev_suite", "ud_dev_enterprise"} {
		if status, body := get(t, base+"/v1/markets?coin=BTC&market_type=24hr", key); status != http.StatusOK {
			t.Errorf("%s: %d %v", key, status, body)
		} else if key == "ud_dev_starter" && body["warning"] == nil {
			t.Errorf("starter sees no window warning: %v", body)
		}
	}
	// A resolved market has snapshots with books.
	_, resolved := get(t, base+"/v1/markets?coin=ETH&market_type=5m&resolved=true&limit=1", "ud_dev_pro")
	slug := resolved["markets"].([]any)[0].(map[string]any)["slug"].(string)
	status, page := get(t, base+"/v1/markets/"+slug+"/snapshots?limit=3&include_orderbook=true", "ud_dev_pro")
	snaps, _ := page["snapshots"].([]any)
	if status != http.StatusOK || len(snaps) != 3 || snaps[0].(map[string]any)["orderbook_up"] == nil {
		t.Fatalf("snapshots of %s: %d %v", slug, status, page)
	}
	// Exchange data: history for BTC, latest depth and trades for every coin.
	for _, path := range []string{"/v1/btc/spot/snapshots?limit=2", "/v1/btc/future/snapshots?limit=2", "/v1/eth/spot/latest",
		"/v1/sol/future/latest", "/v1/eth/future/trades?limit=5", "/v1/sol/spot/trade/latest"} {
		if status, body := get(t, base+path, "ud_dev_pro"); status != http.StatusOK || body["data"] == nil {
			t.Errorf("%s: %d %v", path, status, body)
		}
	}
	// A replay runs on the in-process worker over the embedded Redis.
	status, rep := post(t, base+"/v1/replay", "ud_dev_pro", `{"marketSlug":"`+slug+`","side":"DOWN",`+
		`"entryConditions":[{"field":"time_remaining_pct","operator":"<","value":90}],`+
		`"exitConditions":[{"field":"price_down","operator":">","value":0.9}],"positionSize":10,"orderType":"LIMIT"}`)
	if status != http.StatusOK || rep["data"].(map[string]any)["total_snapshots"].(float64) < 3 {
		t.Fatalf("replay in dev: %d %v", status, rep)
	}
	// The Backtest AI agent: a bearer token, a generation, a backtest.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/auth/token", nil)
	req.Header.Set("X-API-Key", "ud_dev_pro")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	status, gen := postBearer(t, base+"/v1/backtest-ai/strategy", tok.AccessToken,
		`{"prompt":"buy UP when price_up drops below 0.35, exit above 0.6","coin":"BTC","marketType":"5m","marketCount":20}`)
	data, _ := gen["data"].(map[string]any)
	if status != http.StatusOK || data["generated_strategy"] == nil || data["aggregate"] == nil || len(data["results"].([]any)) != 20 {
		t.Fatalf("backtest-ai/strategy: %d %v", status, gen)
	}
	if q := data["quota"].(map[string]any); q["used"] != 1.0 || q["remaining"] != 4.0 {
		t.Errorf("quota after one generation: %v", q)
	}
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if status, _ := get(t, base+path, ""); status != http.StatusOK {
			t.Errorf("%s: %d", path, status)
		}
	}
	res, err = http.Get(base + "/monitoring/")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("monitoring UI: %v %v", res.Status, err)
	}
	res.Body.Close()

	cancel()
	if err := ended(t, "dev's shutdown", done); err != nil {
		t.Fatalf("dev exited with %v", err)
	}
}

var bannerURL = regexp.MustCompile(`API\s+(http://\S+)/v1/markets`)

func waitForBanner(t *testing.T, r io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := bannerURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				return
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(patience):
		t.Fatalf("updown dev hung before its banner (gave up after %v)", patience)
		return ""
	}
}

// runCmd runs one CLI command and returns what it printed.
func runCmd(t testing.TB, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("updown %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.Bytes()
}

// freeAddr returns a loopback address nothing listens on, for a process
// under test to listen on itself. Its port lies below the kernel's
// ephemeral range: a port the kernel handed out (":0") and then freed is
// handed out again as the local end of any outgoing connection, and the
// parallel tests make many, so one could take it before the process under
// test binds it. A port below that range is only ever taken by a listener
// asking for it by number, and this binary hands out each at most once.
func freeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", ports.take(t, 1))
}

// portPicker hands out loopback ports below the ephemeral range, each base
// at most once per test binary.
type portPicker struct {
	mu    sync.Mutex
	given map[int]bool
}

var ports = &portPicker{given: map[int]bool{}}

// take returns a base port with base .. base+span-1 free on loopback.
func (p *portPicker) take(t testing.TB, span int) int {
	t.Helper()
	const low = 10000
	high := ephemeralLow() - span
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 200 {
		base := low + rand.IntN(high-low)
		if p.given[base] {
			continue
		}
		free := true
		for off := range span {
			if p.given[base+off] {
				free = false
				break
			}
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			for off := range span {
				p.given[base+off] = true
			}
			return base
		}
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 10000+200 {
		return 32768
	}
	return n
}

// TestProductionProcesses runs migrate, seed, the customer and key
// commands, and `updown api` + `updown worker` against real Postgres and
// Redis, as the Procfile does.
func TestProductionProcesses(t *testing.T) {
	dbURL := pgtest.NewEmptyDatabase(t)
	redisURL := redistest.New(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("REDIS_URL", redisURL)
	t.Setenv("TOKEN_SECRET", strings.Repeat("s", 32))
	t.Setenv("WEBHOOK_SECRET", testWebhookSecret)
	t.Setenv("MONITORING_ADMIN_TOKEN", "")

	runCmd(t, "migrate")
	runCmd(t, "migrate") // idempotent
	var seeded map[string]float64
	if err := json.Unmarshal(runCmd(t, "seed", "--snapshots-per-market", "120"), &seeded); err != nil || seeded["snapshots"] < 40_000 {
		t.Fatalf("seed: %v %v", seeded, err)
	}
	t.Logf("seed wrote %.0f snapshots at %.0f/s", seeded["snapshots"], seeded["snapshots_per_second"])

	var created struct{ CustomerID, APIKey string }
	out := runCmd(t, "customers", "create", "--email", "ada@example.com", "--name", "Ada", "--tier", "starter")
	if err := json.Unmarshal(bytes.ReplaceAll(bytes.ReplaceAll(out, []byte("customer_id"), []byte("CustomerID")), []byte("api_key"), []byte("APIKey")), &created); err != nil || !strings.HasPrefix(created.APIKey, "ud_live_") {
		t.Fatalf("customers create: %s %v", out, err)
	}
	var cerr bytes.Buffer
	if err := run(context.Background(), []string{"customers", "create", "--email", "ada@example.com", "--tier", "PRO"}, io.Discard, &cerr); err == nil {
		t.Errorf("a second customer with the same email was accepted")
	}
	if err := run(context.Background(), []string{"customers", "create", "--email", "b@example.com", "--tier", "GOLD"}, io.Discard, &cerr); err == nil {
		t.Errorf("an unknown tier was accepted")
	}
	if !strings.Contains(string(runCmd(t, "customers", "list")), "ada@example.com") {
		t.Errorf("customers list misses ada")
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	apiDone, workerDone := make(chan error, 1), make(chan error, 1)
	go func() { apiDone <- run(ctx, []string{"api", "--addr", addr}, io.Discard, io.Discard) }()
	go func() { workerDone <- run(ctx, []string{"worker"}, io.Discard, io.Discard) }()
	base := "http://" + addr
	waitHealthy(t, base)

	status, list := get(t, base+"/v1/markets?coin=BTC&market_type=5m", created.APIKey)
	if status != http.StatusOK || list["total"].(float64) != 50 || list["warning"] == nil {
		t.Fatalf("starter list on postgres: %d total=%v warning=%v", status, list["total"], list["warning"])
	}
	if status, _ := get(t, base+"/v1/markets?coin=ETH", created.APIKey); status != http.StatusForbidden {
		t.Errorf("starter ETH: %d", status)
	}
	if status, _ := get(t, base+"/v1/markets?coin=BTC", "ud_dev_pro"); status != http.StatusUnauthorized {
		t.Errorf("a dev key was accepted in production: %d", status)
	}
	// Without MONITORING_ADMIN_TOKEN, production has no monitoring UI.
	for _, p := range []string{"/monitoring/", "/monitoring/api/queues", "/monitoring/api/redis_info"} {
		res, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s without MONITORING_ADMIN_TOKEN: %s, want 404", p, res.Status)
		}
	}
	runCmd(t, "customers", "set-tier", "--email", "ada@example.com", "--tier", "PRO")
	if status, eth := get(t, base+"/v1/markets?coin=ETH&limit=1&resolved=true", created.APIKey); status != http.StatusOK {
		t.Errorf("after set-tier PRO, ETH: %d %v", status, eth)
	} else {
		slug := eth["markets"].([]any)[0].(map[string]any)["slug"].(string)
		status, page := get(t, base+"/v1/markets/"+slug+"/snapshots?include_orderbook=true&limit=1000", created.APIKey)
		if status != http.StatusOK || len(page["snapshots"].([]any)) == 0 {
			t.Errorf("snapshots on postgres: %d %v", status, page["total"])
		}
	}

	// A replay through the worker process, on Postgres data.
	replayed, noData := 0, 0
	_, resolved := get(t, base+"/v1/markets?coin=BTC&market_type=5m&resolved=true&limit=100", created.APIKey)
	for _, m := range resolved["markets"].([]any) {
		slug := m.(map[string]any)["slug"].(string)
		status, body := post(t, base+"/v1/replay", created.APIKey, `{"marketSlug":"`+slug+`","side":"UP",`+
			`"entryConditions":[{"field":"price_up","operator":"<","value":0.5}],`+
			`"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":100}`)
		switch status {
		case http.StatusOK:
			data := body["data"].(map[string]any)
			if data["total_snapshots"].(float64) < 50 || data["market"].(map[string]any)["slug"] != slug {
				t.Fatalf("replay of %s: %v", slug, data["market"])
			}
			replayed++
		case http.StatusNotFound:
			if body["error"].(map[string]any)["code"] != "NO_DATA" {
				t.Fatalf("replay of %s: %v", slug, body)
			}
			noData++
		default:
			t.Fatalf("replay of %s: %d %v", slug, status, body)
		}
		if replayed >= 3 && noData >= 1 {
			break
		}
	}
	if replayed < 3 || noData < 1 {
		t.Errorf("replayed %d markets and met %d collector gaps; want both", replayed, noData)
	}

	var key struct {
		KeyID  string `json:"key_id"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(runCmd(t, "keys", "create", "--email", "ada@example.com"), &key); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(t, base+"/v1/markets?coin=BTC&limit=1", key.APIKey); status != http.StatusOK {
		t.Errorf("second key: %d", status)
	}
	runCmd(t, "keys", "revoke", "--id", key.KeyID)
	if status, _ := get(t, base+"/v1/markets?coin=BTC&limit=1", key.APIKey); status != http.StatusUnauthorized {
		t.Errorf("revoked key: %d", status)
	}

	// A tier change starts the customer's rate limits from nothing, as a
	// billing webhook's does: back on STARTER, the requests it made as
	// STARTER earlier today count no more.
	runCmd(t, "customers", "set-tier", "--email", "ada@example.com", "--tier", "STARTER")
	if h := getHeaders(t, base+"/v1/markets?coin=BTC&limit=1", created.APIKey); h.Get("X-RateLimit-Remaining") != "999" {
		t.Errorf("back on STARTER after set-tier, X-RateLimit-Remaining = %q after one request, want 999 of 1000", h.Get("X-RateLimit-Remaining"))
	}

	// Limits per customer are ENTERPRISE's, and hold at the next request.
	if err := run(context.Background(), []string{"customers", "set-limits", "--email", "ADA@example.com", "--per-day", "777"}, io.Discard, &cerr); err == nil ||
		!strings.Contains(err.Error(), "ENTERPRISE") {
		t.Errorf("set-limits on a PRO customer: %v, want a refusal naming ENTERPRISE", err)
	}
	runCmd(t, "customers", "set-tier", "--email", "ada@example.com", "--tier", "ENTERPRISE")
	if h := getHeaders(t, base+"/v1/markets?coin=BTC&limit=1", created.APIKey); h.Get("X-RateLimit-Limit") != "1000000" {
		t.Errorf("ENTERPRISE X-RateLimit-Limit = %q, want the default 1000000", h.Get("X-RateLimit-Limit"))
	}
	runCmd(t, "customers", "set-limits", "--email", "ada@example.com", "--per-minute", "50", "--per-day", "777")
	if h := getHeaders(t, base+"/v1/markets?coin=BTC&limit=1", created.APIKey); h.Get("X-RateLimit-Limit") != "777" {
		t.Errorf("after set-limits, X-RateLimit-Limit = %q, want 777", h.Get("X-RateLimit-Limit"))
	}
	// A limit not given keeps its value; neither given is refused.
	var limits struct {
		RateLimits map[string]int `json:"rate_limits"`
	}
	if err := json.Unmarshal(runCmd(t, "customers", "set-limits", "--email", "ada@example.com", "--per-day", "888"), &limits); err != nil ||
		limits.RateLimits["per_minute"] != 50 || limits.RateLimits["per_day"] != 888 {
		t.Errorf("set-limits --per-day 888 after 50/777: %v %v, want per_minute kept at 50", limits.RateLimits, err)
	}
	if err := run(context.Background(), []string{"customers", "set-limits", "--email", "ada@example.com"}, io.Discard, io.Discard); err == nil {
		t.Error("set-limits with no limit: no error")
	}
	// The rest of ENTERPRISE's custom limits (DESIGN 4, 14): its monthly
	// AI generations and its sweep sizes, held at the next request too.
	var more struct {
		RateLimits    map[string]int `json:"rate_limits"`
		AIGenerations int            `json:"ai_generations_per_month"`
		Sweeps        map[string]int `json:"sweeps"`
	}
	if err := json.Unmarshal(runCmd(t, "customers", "set-limits", "--email", "ada@example.com", "--ai-generations", "2", "--sweep-trials", "3"), &more); err != nil ||
		more.AIGenerations != 2 || more.Sweeps["max_trials"] != 3 || more.Sweeps["max_markets"] != 0 || more.RateLimits["per_day"] != 888 {
		t.Errorf("set-limits --ai-generations 2 --sweep-trials 3: %+v %v, want those and per_day kept at 888", more, err)
	}
	if status, acct := get(t, base+"/v1/account", created.APIKey); status != http.StatusOK ||
		fmt.Sprint(acct["data"].(map[string]any)["ai_quota"].(map[string]any)["limit"]) != "2" {
		t.Errorf("account after --ai-generations 2: %d %v", status, acct)
	}
	fourTrials := `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.6}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","values":[0.3,0.4,0.5,0.6]}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":5}}`
	if a := do(nil, http.MethodPost, base+"/v1/sweeps", created.APIKey, fourTrials); a.status != http.StatusBadRequest || !strings.Contains(string(a.raw), "allows 3") {
		t.Errorf("a sweep of 4 trials after --sweep-trials 3: %d %s", a.status, a.raw)
	}
	if err := run(context.Background(), []string{"customers", "set-limits", "--email", "ada@example.com", "--sweep-markets", "-1"}, io.Discard, io.Discard); err == nil {
		t.Error("set-limits --sweep-markets -1: no error")
	}

	cancel()
	for name, c := range map[string]chan error{"api": apiDone, "worker": workerDone} {
		if err := ended(t, name+"'s stop", c); err != nil {
			t.Errorf("%s exited with %v", name, err)
		}
	}
}

// getHeaders sends a GET with the key and returns the answer's headers.
func getHeaders(t *testing.T, url, key string) http.Header {
	t.Helper()
	a := do(nil, http.MethodGet, url, key, "")
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("GET %s: %v", url, a)
	}
	return a.header
}

func waitHealthy(t testing.TB, base string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s/readyz not ready within %v", base, patience)
}

// TestServiceCommandsNeedTheirConfig checks production processes refuse to
// start without DATABASE_URL and REDIS_URL, and say so.
func TestServiceCommandsNeedTheirConfig(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("REDIS_URL", "")
	for _, cmd := range []string{"api", "worker"} {
		err := run(context.Background(), []string{cmd}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || !strings.Contains(err.Error(), "REDIS_URL") {
			t.Errorf("%s without config: %v", cmd, err)
		}
	}
	// With its services configured, the api still refuses to start without
	// the secret that signs bearer tokens.
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("TOKEN_SECRET", "short")
	if err := run(context.Background(), []string{"api"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "TOKEN_SECRET") {
		t.Errorf("api without a usable TOKEN_SECRET: %v", err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard); err == nil {
		t.Errorf("unknown command accepted")
	}
}

// TestAPIRefusesBadSettings: an api setting in a form it does not take
// stops the api at start, naming it, before it connects anywhere (this
// test has no backends): JOBS_IN_FLIGHT, READS_IN_FLIGHT and
// MONITORING_WRITE were read only once Postgres was migrated and Redis
// reached, so with either unreachable the error named the database
// instead.
func TestAPIRefusesBadSettings(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("TOKEN_SECRET", strings.Repeat("s", 32))
	t.Setenv("WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	// An address another process holds is told at once, naming the
	// setting, not after the backends (here unreachable) are open.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := run(context.Background(), []string{"api", "--addr", held.Addr().String()}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--addr (PORT)") || !strings.Contains(err.Error(), held.Addr().String()) {
		t.Errorf("api on a held address: %v; want an error naming --addr (PORT) and the address", err)
	}
	for _, c := range []struct{ name, value string }{
		{"JOBS_IN_FLIGHT", "PRO=-1"},
		{"READS_IN_FLIGHT", "PRO=2,PRO=3"},
		{"MONITORING_WRITE", "yes please"},
		{"BILLING_PRODUCT_TIERS", "pdt_abc=GOLD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			err := run(context.Background(), []string{"api", "--addr", "127.0.0.1:0"}, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("api with %s=%q: %v; want an error naming %s", c.name, c.value, err, c.name)
			}
		})
	}
}

// TestWorkerServesOps: a worker process answers /healthz, /readyz and
// /metrics with queue and task metrics.
func TestWorkerServesOps(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewDatabase(t))
	t.Setenv("REDIS_URL", redistest.New(t))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"worker", "--ops-addr", addr}, io.Discard, io.Discard) }()
	base := "http://" + addr
	waitHealthy(t, base)
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"updown_queue_scrape_ok 1", "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("worker /metrics lacks %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("worker exited with %v", err)
	}
}

// ended waits for a run's end on done and returns its error. A run that
// never ends is a hang: the test fails after patience, naming what hung.
func ended[T any](t testing.TB, what string, done <-chan T) T {
	t.Helper()
	select {
	case v := <-done:
		return v
	case <-time.After(patience):
		t.Fatalf("%s hung (gave up after %v)", what, patience)
		var zero T
		return zero
	}
}

// patience bounds a test's wait for something that must happen (a banner, a
// ready endpoint, a process's exit). It is generous on purpose: these tests
// assert what happens, not how fast, and must pass on a loaded machine; a
// hang still fails, after this long.
const patience = 5 * time.Minute

// TestWorkerRefusesBadSettings: a worker setting in a form it does not
// take stops the worker at start, naming it, before it connects anywhere
// (this test has no backends), rather than being read as something else:
// a shutdown timeout of 0 or below gave running tasks the default or no
// time at all, a negative concurrency the default, a cache size beyond
// an int64 of bytes wrapped round.
func TestWorkerRefusesBadSettings(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	for _, c := range []struct {
		name string
		env  string // NAME=value, or empty
		args []string
		want string
	}{
		{"env cache too large", "REPLAY_CACHE_MIB=9223372036854775807", nil, "REPLAY_CACHE_MIB"},
		{"flag cache too large", "", []string{"--cache-mib", "8796093022208"}, "--cache-mib"},
		{"flag shutdown zero", "", []string{"--shutdown-timeout", "0s"}, "--shutdown-timeout"},
		{"flag shutdown negative", "", []string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout"},
		{"flag concurrency negative", "", []string{"--concurrency", "-1"}, "--concurrency"},
		// An ops address that cannot be had named neither.
		{"env ops address", "WORKER_ADDR=bogus", nil, "WORKER_ADDR"},
		{"flag ops address", "", []string{"--ops-addr", "127.0.0.1:99999"}, "--ops-addr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("REPLAY_CACHE_MIB", "")
			if name, value, ok := strings.Cut(c.env, "="); ok {
				t.Setenv(name, value)
			}
			args := []string{"worker", "--ops-addr", "off"}
			if strings.HasPrefix(c.env, "WORKER_ADDR=") || slices.Contains(c.args, "--ops-addr") {
				args = []string{"worker"} // a flag is given once
			}
			err := run(context.Background(), append(args, c.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("worker %s %v: %v; want an error naming %s", c.env, c.args, err, c.want)
			}
		})
	}
}

// TestAPIServesHealthWhileWaitingForSchema: an api that does not migrate
// (MIGRATE_ON_START=false), started before the schema is, waits for it
// and meanwhile is alive on its address: /healthz 200, /readyz 503, and
// 503 SERVICE_UNAVAILABLE to the API's requests, rather than nothing
// listening (a liveness probe restarted it in a loop); once migrated, it
// serves the API there.
func TestAPIServesHealthWhileWaitingForSchema(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewEmptyDatabase(t))
	t.Setenv("REDIS_URL", redistest.New(t))
	t.Setenv("TOKEN_SECRET", strings.Repeat("s", 32))
	t.Setenv("WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	t.Setenv("MIGRATE_ON_START", "false")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"api", "--addr", addr}, io.Discard, io.Discard) }()
	base := "http://" + addr
	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			return 0, ""
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	deadline := time.Now().Add(patience)
	for code, _ := get("/healthz"); code != http.StatusOK; code, _ = get("/healthz") {
		select {
		case err := <-done:
			t.Fatalf("api exited while waiting for the schema: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("api waiting for the schema never answered /healthz (gave up after %v)", patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of an api waiting for the schema: %d, want 503", code)
	}
	if code, body := get("/v1/markets?coin=BTC"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"SERVICE_UNAVAILABLE"`) {
		t.Errorf("/v1/markets of an api waiting for the schema: %d %s, want 503 SERVICE_UNAVAILABLE", code, body)
	}
	runCmd(t, "migrate")
	waitHealthy(t, base)
	if code, body := get("/v1/markets?coin=BTC"); code != http.StatusUnauthorized {
		t.Errorf("/v1/markets without a key once the api runs: %d %s, want 401", code, body)
	}
	cancel()
	if err := ended(t, "api", done); err != nil {
		t.Errorf("api exited with %v", err)
	}
}

// TestWorkerServesOpsWhileWaitingForSchema: a worker started before the
// schema is migrated waits for it (README: saying so), and meanwhile is
// alive: its ops address answers /healthz 200 and /readyz 503, rather
// than refusing connections as a dead process would (a liveness probe
// restarted it in a loop); once migrated, /readyz answers 200.
func TestWorkerServesOpsWhileWaitingForSchema(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewEmptyDatabase(t))
	t.Setenv("REDIS_URL", redistest.New(t))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"worker", "--ops-addr", addr}, io.Discard, io.Discard) }()
	base := "http://" + addr
	status := func(path string) int {
		res, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	deadline := time.Now().Add(patience)
	for status("/healthz") != http.StatusOK {
		select {
		case err := <-done:
			t.Fatalf("worker exited while waiting for the schema: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker waiting for the schema never answered /healthz (gave up after %v)", patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a worker waiting for the schema: %d, want 503", got)
	}
	runCmd(t, "migrate")
	waitHealthy(t, base)
	cancel()
	if err := ended(t, "worker", done); err != nil {
		t.Errorf("worker exited with %v", err)
	}
}
