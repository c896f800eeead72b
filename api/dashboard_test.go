package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

func TestAccountKeys(t *testing.T) {
	t.Parallel()
	// With Redis the api caches key look-ups: a revocation must reach it.
	t.Run("no redis", func(t *testing.T) { t.Parallel(); testAccountKeys(t, setup(t)) })
	t.Run("redis", func(t *testing.T) { t.Parallel(); testAccountKeys(t, sessionSetup(t)) })
}

func testAccountKeys(t *testing.T, b *bundle) {
	ctx := context.Background()
	key := b.keys[store.Pro]
	r := b.do(http.MethodPost, "/v1/account/keys", key, "", "")
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var created struct {
		Success bool
		Data    struct {
			ID, Prefix, Key string
			CreatedAt       string  `json:"created_at"`
			RevokedAt       *string `json:"revoked_at"`
		}
	}
	if err := json.Unmarshal(r.body, &created); err != nil || !created.Success || created.Data.ID == "" ||
		!strings.HasPrefix(created.Data.Key, created.Data.Prefix) || created.Data.RevokedAt != nil {
		t.Fatalf("created %v %s", err, r.body)
	}
	// The new key works over HTTP, then is refused once revoked.
	if r := b.do(http.MethodGet, "/v1/account", created.Data.Key, "", ""); r.status != http.StatusOK ||
		r.json(t)["data"].(map[string]any)["customer_id"] != b.ids[store.Pro] {
		t.Fatalf("new key: %d %s", r.status, r.body)
	}
	rv := b.do(http.MethodDelete, "/v1/account/keys/"+created.Data.ID, key, "", "")
	if rv.status != http.StatusOK || rv.json(t)["data"].(map[string]any)["revoked_at"] == nil {
		t.Fatalf("revoke: %d %s", rv.status, rv.body)
	}
	wantError(t, b.do(http.MethodGet, "/v1/account", created.Data.Key, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
	// Revoking again answers the same record; unknown ids are 404.
	if again := b.do(http.MethodDelete, "/v1/account/keys/"+created.Data.ID, key, "", ""); again.status != http.StatusOK {
		t.Errorf("revoke twice: %d %s", again.status, again.body)
	}
	wantError(t, b.do(http.MethodDelete, "/v1/account/keys/no-such-key", key, "", ""), http.StatusNotFound, "RESOURCE_NOT_FOUND")

	// At most 10 live keys: the customer holds 1; 9 more fit, the 11th is 409.
	for i := range 9 {
		if r := b.do(http.MethodPost, "/v1/account/keys", key, "", ""); r.status != http.StatusCreated {
			t.Fatalf("key %d: %d %s", i+2, r.status, r.body)
		}
	}
	wantError(t, b.do(http.MethodPost, "/v1/account/keys", key, "", ""), http.StatusConflict, "KEY_LIMIT_REACHED")
	var list struct {
		Data struct {
			Keys []struct {
				ID        string  `json:"id"`
				RevokedAt *string `json:"revoked_at"`
				Current   bool    `json:"current"`
			} `json:"keys"`
			Live    int `json:"live"`
			MaxLive int `json:"max_live"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b.get(store.Pro, "/v1/account/keys").body, &list); err != nil {
		t.Fatal(err)
	}
	stored, _ := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	current := 0
	for _, k := range list.Data.Keys {
		if k.Current {
			current++
		}
	}
	if len(list.Data.Keys) != 11 || len(stored) != 11 || list.Data.Live != 10 || list.Data.MaxLive != 10 || current != 1 {
		t.Errorf("list: %d keys (stored %d), live %d/%d, %d current", len(list.Data.Keys), len(stored), list.Data.Live, list.Data.MaxLive, current)
	}
	// Others' lists are untouched.
	if theirs, _ := b.store.ListAPIKeys(ctx, b.ids[store.Suite]); len(theirs) != 1 {
		t.Errorf("SUITE holds %d keys", len(theirs))
	}
	wantError(t, b.get("", "/v1/account/keys"), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestBilling(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "https://pay.example/checkout"} {
		b := setup(t, func(o *setupOpts) { o.billingURL = url })
		var got struct {
			Success bool
			Data    struct {
				CurrentTier string  `json:"current_tier"`
				CheckoutURL *string `json:"checkout_url"`
				Plans       []struct {
					Tier          string         `json:"tier"`
					WindowDays    *int           `json:"window_days"`
					LastN         map[string]int `json:"last_n"`
					AltCoins      bool           `json:"eth_sol_markets"`
					Exchange      bool           `json:"exchange_data"`
					Replay        bool           `json:"replay"`
					BacktestAI    bool           `json:"backtest_ai"`
					AIGenerations *int           `json:"ai_generations_per_month"`
					Sweeps        *struct {
						MaxTrials  int `json:"max_trials"`
						MaxMarkets int `json:"max_markets"`
						MaxReplays int `json:"max_replays"`
						Concurrent int `json:"concurrent"`
					} `json:"sweeps"`
					RateLimits struct {
						PerMinute *int `json:"per_minute"`
					} `json:"rate_limits"`
				} `json:"plans"`
			}
		}
		r := b.get(store.Starter, "/v1/account/billing")
		if r.status != http.StatusOK {
			t.Fatalf("billing: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		d := got.Data
		if !got.Success || d.CurrentTier != "STARTER" || len(d.Plans) != 5 {
			t.Fatalf("billing %s", r.body)
		}
		if (url == "") != (d.CheckoutURL == nil) || url != "" && *d.CheckoutURL != url {
			t.Errorf("checkout_url %v with BILLING_URL %q", d.CheckoutURL, url)
		}
		want := map[string]string{ // tier: window, alt, exchange, replay, ai, generations, sweeps (trials markets replays at once)
			"STARTER":    "last_n false false false false 0 none",
			"PRO":        "31 true true true true 5 200/200/20000/1",
			"PRO_TRIAL":  "31 true false true false 0 none",
			"SUITE":      "31 true true false false 0 none",
			"ENTERPRISE": "unlimited true true true true null 10000/5000/2000000/4",
		}
		for _, p := range d.Plans {
			win := "unlimited"
			if p.LastN != nil {
				win = "last_n"
				if p.LastN["5m"] != 50 || p.LastN["24hr"] != 5 {
					t.Errorf("STARTER last_n %v", p.LastN)
				}
			} else if p.WindowDays != nil {
				win = fmt.Sprint(*p.WindowDays)
			}
			gen := "null"
			if p.AIGenerations != nil {
				gen = fmt.Sprint(*p.AIGenerations)
			}
			sweeps := "none"
			if w := p.Sweeps; w != nil {
				sweeps = fmt.Sprintf("%d/%d/%d/%d", w.MaxTrials, w.MaxMarkets, w.MaxReplays, w.Concurrent)
			}
			if s := fmt.Sprintf("%s %t %t %t %t %s %s", win, p.AltCoins, p.Exchange, p.Replay, p.BacktestAI, gen, sweeps); s != want[p.Tier] {
				t.Errorf("%s: %s, want %s", p.Tier, s, want[p.Tier])
			}
		}
		// The tier errors' upgrade_url is this endpoint.
		e := wantError(t, b.get(store.Starter, "/v1/markets?coin=ETH"), http.StatusForbidden, "TIER_ACCESS_DENIED")
		if u := e["details"].(map[string]any)["upgrade_url"]; u != "/v1/account/billing" {
			t.Errorf("upgrade_url %v", u)
		}
	}
}

type seriesResp struct {
	Success bool
	Data    struct {
		Market    struct{ Slug string }
		Points    int   `json:"points"`
		BucketMs  int64 `json:"bucket_ms"`
		Snapshots int   `json:"snapshots"`
		Time      []int64
		Index     []int
		PriceUp   struct{ First, Min, Max []float64 } `json:"price_up"`
		PriceDown struct{ First, Min, Max []float64 } `json:"price_down"`
		CoinPrice struct{ First, Min, Max []float64 } `json:"coin_price"`
	}
}

func TestSeries(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	// A 24hr market with one snapshot a second and one spike.
	start := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	slug := slugOf(store.BTC, store.H24, start)
	snaps := make([]store.Snapshot, 86_400)
	for i := range snaps {
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * time.Second), PriceUp: 0.5, PriceDown: 0.5, CoinPrice: 95_000 + float64(i%100)}
	}
	snaps[50_001].PriceUp = 0.97 // one second long
	if _, err := st.AppendSnapshots(context.Background(), slug, snaps); err != nil {
		t.Fatal(err)
	}
	b := setup(t, func(o *setupOpts) { o.store = st })

	get := func(query string) seriesResp {
		t.Helper()
		r := b.get(store.Pro, "/v1/markets/"+slug+"/series"+query)
		if r.status != http.StatusOK {
			t.Fatalf("series%s: %d %s", query, r.status, r.body)
		}
		var s seriesResp
		if err := json.Unmarshal(r.body, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := get("")
	d := s.Data
	if !s.Success || d.Market.Slug != slug || d.Points != 2000 || d.Snapshots != 86_400 || len(d.Time) != 2000 || d.BucketMs != 43_200 {
		t.Fatalf("default series: points %d, snapshots %d, %d buckets of %d ms", d.Points, d.Snapshots, len(d.Time), d.BucketMs)
	}
	for _, band := range [][]float64{d.PriceUp.First, d.PriceUp.Min, d.PriceUp.Max, d.PriceDown.First, d.CoinPrice.Min, d.CoinPrice.Max} {
		if len(band) != len(d.Time) {
			t.Fatalf("band of %d values for %d times", len(band), len(d.Time))
		}
	}
	// The spike survives in its bucket's max; firsts and mins stay flat.
	k := 50_001_000 / 43_200 // the bucket of second 50,001
	if d.PriceUp.Max[k] != 0.97 || d.PriceUp.Min[k] != 0.5 || d.PriceUp.First[k] != 0.5 {
		t.Errorf("bucket %d: first %v min %v max %v", k, d.PriceUp.First[k], d.PriceUp.Min[k], d.PriceUp.Max[k])
	}
	if d.Time[0] != start.UnixMilli() || d.Time[1] != start.Add(44*time.Second).UnixMilli() || d.CoinPrice.Min[1] != 95_044 || d.CoinPrice.Max[1] != 95_086 {
		t.Errorf("bucket 1: time %d, coin %v..%v", d.Time[1], d.CoinPrice.Min[1], d.CoinPrice.Max[1])
	}
	if d.Index[1] != 44 || d.Index[1999] != 86_357 {
		t.Errorf("index %d, %d: want 44 and 86,357", d.Index[1], d.Index[1999])
	}
	// The index finds the bucket's first snapshot through the snapshots API.
	var page struct{ Snapshots []struct{ Time string } }
	r0 := b.get(store.Pro, fmt.Sprintf("/v1/markets/%s/snapshots?limit=1&offset=%d", slug, d.Snapshots-1-d.Index[1234]))
	if err := json.Unmarshal(r0.body, &page); err != nil || len(page.Snapshots) != 1 {
		t.Fatalf("snapshot page: %v %s", err, r0.body)
	}
	if at, _ := time.Parse(time.RFC3339Nano, page.Snapshots[0].Time); at.UnixMilli() != d.Time[1234] {
		t.Errorf("snapshot at offset: %s, bucket time %d", page.Snapshots[0].Time, d.Time[1234])
	}
	if s := get("?points=100").Data; len(s.Time) != 100 || s.BucketMs != 864_000 {
		t.Errorf("points=100: %d buckets of %d ms", len(s.Time), s.BucketMs)
	}

	// A market with fewer snapshots than points answers each snapshot.
	small, _ := snapshotMarket()
	r := b.get(store.Pro, "/v1/markets/"+small+"/series?points=5000")
	var few seriesResp
	if err := json.Unmarshal(r.body, &few); err != nil || len(few.Data.Time) != 30 || few.Data.PriceUp.First[29] != 0.79 {
		t.Errorf("small market: %v %d points %s", err, len(few.Data.Time), r.body[:min(len(r.body), 300)])
	}

	// Bad points, unknown market, the plan's window.
	for _, q := range []string{"?points=99", "?points=5001", "?points=x"} {
		wantError(t, b.get(store.Pro, "/v1/markets/"+slug+"/series"+q), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	wantError(t, b.get(store.Pro, "/v1/markets/btc-updown-5m-1/series"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	wantError(t, b.get("", "/v1/markets/"+slug+"/series"), http.StatusUnauthorized, "UNAUTHORIZED")
	old := slugOf(store.BTC, store.M5, now.Truncate(5*time.Minute).Add(-54*5*time.Minute))
	wantError(t, b.get(store.Starter, "/v1/markets/"+old+"/series"), http.StatusForbidden, "TIER_ACCESS_DENIED")
	eth := slugOf(store.ETH, store.M5, now.Truncate(5*time.Minute).Add(-5*time.Minute))
	wantError(t, b.get(store.Starter, "/v1/markets/"+eth+"/series"), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

// TestSeriesAnswersEverySnapshotOfASmallMarket: a market with no more
// snapshots than points answers each snapshot as its own bucket, as
// points' documentation says, however unevenly its snapshots are spread
// over its window: a market recorded for only 30 s of its 15 minutes (a
// collector that joined late, a short imported dump) was drawn from 4
// buckets of its 100 snapshots at points=100.
func TestSeriesAnswersEverySnapshotOfASmallMarket(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	start := now.Truncate(15 * time.Minute).Add(-30 * time.Minute) // a fixture 15m market without snapshots
	slug := slugOf(store.BTC, store.M15, start)
	snaps := make([]store.Snapshot, 100)
	for i := range snaps {
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * 300 * time.Millisecond), PriceUp: 0.5 + float64(i)/1000,
			PriceDown: 0.5, CoinPrice: 95_000 + float64(i)}
	}
	if _, err := st.AppendSnapshots(t.Context(), slug, snaps); err != nil {
		t.Fatal(err)
	}
	b := setup(t, func(o *setupOpts) { o.store = st })
	for _, points := range []int{100, 2000, 5000} {
		r := b.get(store.Pro, fmt.Sprintf("/v1/markets/%s/series?points=%d", slug, points))
		var s seriesResp
		if err := json.Unmarshal(r.body, &s); err != nil || r.status != http.StatusOK {
			t.Fatalf("points=%d: %d %v %s", points, r.status, err, r.body)
		}
		d := s.Data
		if d.Snapshots != 100 || len(d.Time) != 100 || len(d.Index) != 100 || len(d.PriceUp.First) != 100 {
			t.Fatalf("points=%d: %d buckets (%d ms wide) of %d snapshots, want one per snapshot", points, len(d.Time), d.BucketMs, d.Snapshots)
		}
		seen := map[int64]bool{}
		for i := range 100 {
			at := snaps[i].Time.UnixMilli()
			if d.Time[i] != at || d.Index[i] != i || d.PriceUp.First[i] != snaps[i].PriceUp ||
				d.PriceUp.Min[i] != snaps[i].PriceUp || d.PriceUp.Max[i] != snaps[i].PriceUp || d.CoinPrice.First[i] != snaps[i].CoinPrice {
				t.Fatalf("points=%d: bucket %d is time %d index %d price_up %v..%v, want snapshot %d", points, i, d.Time[i], d.Index[i],
					d.PriceUp.Min[i], d.PriceUp.Max[i], i)
			}
			// The buckets still tile the window from start_time: each
			// snapshot lies in a bucket of its own.
			k := (at - start.UnixMilli()) / d.BucketMs
			if seen[k] {
				t.Fatalf("points=%d: two snapshots in bucket %d of %d ms", points, k, d.BucketMs)
			}
			seen[k] = true
		}
	}
}

// TestDashboardOpenAPI: the new endpoints are documented with their
// schemes and real status codes.
func TestDashboardOpenAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Components struct {
			SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]any        `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Components.SecuritySchemes["session"]; s["in"] != "cookie" || s["name"] != "updown_session" {
		t.Errorf("session scheme %v", s)
	}
	for _, c := range []struct{ method, path, status string }{
		{"post", "/v1/auth/session", "204"}, {"get", "/v1/auth/session", "200"}, {"delete", "/v1/auth/session", "204"},
		{"get", "/v1/markets/{slug}/series", "200"}, {"get", "/v1/account/billing", "200"},
		{"get", "/v1/account/keys", "200"}, {"post", "/v1/account/keys", "201"}, {"delete", "/v1/account/keys/{id}", "200"},
	} {
		op, ok := doc.Paths[c.path][c.method]
		if !ok || op.Responses[c.status] == nil || op.Responses["401"] == nil || op.Responses["422"] != nil {
			t.Errorf("%s %s: %v", c.method, c.path, op.Responses)
		}
	}
	if s := doc.Paths["/v1/auth/session"]["post"].Security; len(s) != 1 || s[0]["apiKey"] == nil {
		t.Errorf("sign-in security %v: an API key only", s)
	}
	if s := doc.Paths["/v1/markets"]["get"].Security; len(s) != 2 || s[1]["session"] == nil {
		t.Errorf("markets security %v: key or session", s)
	}
}

// TestDashboardAssets: / leads to /app/; the app and /docs come from the
// binary under a strict CSP and load nothing from elsewhere.
func TestDashboardAssets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get(b.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/app/" {
		t.Errorf("/ answers %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The pages' other spelling leads to them: /app to /app/, /docs/ to
	// /docs (a 404 "no such endpoint (see /docs)" on /docs/ sent a reader
	// who added the slash nowhere).
	for _, c := range []struct{ path, to string }{{"/app", "/app/"}, {"/docs/", "/docs"}} {
		res, err := noRedirect.Get(b.srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != c.to {
			t.Errorf("%s answers %d to %q; want 301 to %s", c.path, res.StatusCode, res.Header.Get("Location"), c.to)
		}
	}
	for _, page := range []string{"/app/", "/app/market/btc-updown-5m-1", "/docs"} {
		r := b.get("", page)
		csp := r.header.Get("Content-Security-Policy")
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s", page, r.status, r.header.Get("Content-Type"))
		}
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s CSP %q", page, csp)
		}
		html := string(r.body)
		if strings.Contains(html, "http://") || strings.Contains(html, "https://") || strings.Contains(html, "<script>") {
			t.Errorf("%s refers outside the binary or inlines a script:\n%s", page, html)
		}
		// Every script and stylesheet it names is served from the binary.
		for _, ref := range regexp.MustCompile(`(?:src|href)="(/app/assets/[^"]+)"`).FindAllStringSubmatch(html, -1) {
			a := b.get("", ref[1])
			if a.status != http.StatusOK || !strings.Contains(a.header.Get("Cache-Control"), "immutable") || len(a.body) == 0 {
				t.Errorf("%s: %d %v", ref[1], a.status, a.header)
			}
			if bytes.Contains(a.body, []byte("cdn.")) || bytes.Contains(a.body, []byte("unpkg.com")) || bytes.Contains(a.body, []byte("eval(")) {
				t.Errorf("%s loads from a CDN or evals", ref[1])
			}
		}
	}
	if r := b.get("", "/app/assets/nope.js"); r.status != http.StatusNotFound {
		t.Errorf("a missing asset answers %d", r.status)
	}
	// No directory listing of the build's files.
	if r := b.get("", "/app/assets/"); r.status != http.StatusNotFound {
		t.Errorf("/app/assets/ answers %d (a listing?):\n%.300s", r.status, r.body)
	}
	// The icon: linked by both pages, and at /favicon.ico for browsers that ask there.
	for _, page := range []string{"/app/", "/docs"} {
		if !regexp.MustCompile(`<link rel="icon" [^>]*href="/app/assets/favicon-[^"]+\.svg"`).Match(b.get("", page).body) {
			t.Errorf("%s links no icon", page)
		}
	}
	if r := b.get("", "/favicon.ico"); r.status != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(r.body, []byte("<svg")) {
		t.Errorf("/favicon.ico answers %d %q", r.status, r.header.Get("Content-Type"))
	}
}
