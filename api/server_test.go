package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct{ name, key string }{
		{"missing", ""},
		{"unknown", "ud_live_nope"},
		{"dev key outside dev mode", "ud_dev_pro"},
	}
	for _, tc := range cases {
		r := b.do(http.MethodGet, "/v1/markets?coin=BTC", tc.key, "", "")
		wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	}
	// Revoking a key locks it out on the next request.
	ctx := context.Background()
	keys, err := b.store.ListAPIKeys(ctx, b.ids[store.Pro])
	if err != nil || len(keys) != 1 {
		t.Fatal(keys, err)
	}
	if r := b.get(store.Pro, "/v1/markets?coin=BTC"); r.status != http.StatusOK {
		t.Fatalf("before revoke: %d", r.status)
	}
	if err := b.store.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	wantError(t, b.get(store.Pro, "/v1/markets?coin=BTC"), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestDevKeysOnlyInDevMode(t *testing.T) {
	t.Parallel()
	st := memory.New()
	b := setup(t, func(o *setupOpts) { o.devKeys = true; o.store = st })
	c, err := st.CreateCustomer(context.Background(), store.Customer{Email: "dev@example.com", Tier: store.Pro})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAPIKey(context.Background(), apiKeyRecord(c.ID, "ud_dev_pro")); err != nil {
		t.Fatal(err)
	}
	if r := b.do(http.MethodGet, "/v1/markets?coin=BTC", "ud_dev_pro", "", ""); r.status != http.StatusOK {
		t.Fatalf("dev key in dev mode: %d %s", r.status, r.body)
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wantError(t, b.get(store.Pro, "/v1/nope"), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	// Paths Go's mux would redirect to their cleaned form, another
	// resource (the market "snapshots", the list of markets).
	for _, p := range []string{"/v1/markets//snapshots", "/v1//markets?coin=BTC", "/v1/markets/./x", "/v1/markets/x/..", "//v1/markets?coin=BTC"} {
		wantError(t, b.get(store.Pro, p), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	}
	r := b.do(http.MethodPost, "/v1/markets", b.keys[store.Pro], "application/json", "{}")
	wantError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	if r.header.Get("Allow") != "GET" {
		t.Errorf("Allow = %q", r.header.Get("Allow"))
	}
}

func TestRequestIDAndHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.get(store.Pro, "/v1/markets?coin=BTC&limit=1")
	if len(r.header.Get("X-Request-Id")) < 16 || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers: %v", r.header)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "client-id-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("X-Request-Id") != "client-id-1" {
		t.Errorf("a plain client request id is echoed, got %q", res.Header.Get("X-Request-Id"))
	}
}

// TestHSTSBehindHTTPS: a server whose public address is https tells
// browsers to come back over https only (Strict-Transport-Security), on
// the dashboard and the API alike, so that a later visit typed as
// http://... is not sent, API key and all, over plain http first. A
// server reached over http says nothing of the kind.
func TestHSTSBehindHTTPS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		publicURL string
		want      bool
	}{
		{"", false},
		{"http://updown.example", false},
		{"https://updown.example", true},
		{"HTTPS://updown.example", true},
		// A developer's own machine: pinned, every local service on
		// localhost, whatever its port, would be https only for a year.
		{"https://localhost:8443", false},
		{"https://app.localhost", false},
	} {
		b := setup(t, func(o *setupOpts) { o.publicURL = tc.publicURL })
		for _, path := range []string{"/v1/markets?coin=BTC&limit=1", "/app/", "/healthz"} {
			r := b.get(store.Pro, path)
			got := r.header.Get("Strict-Transport-Security")
			if tc.want && !strings.HasPrefix(got, "max-age=") || !tc.want && got != "" {
				t.Errorf("PUBLIC_URL %q, GET %s (%d): Strict-Transport-Security %q, want it set: %v", tc.publicURL, path, r.status, got, tc.want)
			}
		}
	}
}

// failingStore fails every market read as an unreachable backend would.
type failingStore struct {
	store.Store
	err error
}

func (f failingStore) ListMarkets(context.Context, store.MarketFilter) ([]store.Market, int, error) {
	return nil, 0, f.err
}
func (f failingStore) Ping(context.Context) error { return f.err }

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{errors.New("disk on fire: secret detail"), http.StatusInternalServerError, "INTERNAL_ERROR"},
		{store.ErrUnavailable, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE"},
	} {
		b2 := setup(t, func(o *setupOpts) { o.store = failingStore{Store: memory.New(), err: tc.err} })
		r := b2.get(store.Pro, "/v1/markets?coin=BTC")
		e := wantError(t, r, tc.status, tc.code)
		if strings.Contains(e["message"].(string), "secret") {
			t.Errorf("internals leaked: %v", e["message"])
		}
		if !strings.Contains(e["message"].(string), r.header.Get("X-Request-Id")) {
			t.Errorf("message does not carry the request id: %v", e["message"])
		}
		if rr := b2.get("", "/readyz"); rr.status != http.StatusServiceUnavailable {
			t.Errorf("readyz with a failing store: %d", rr.status)
		}
	}
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.get("", "/healthz"); r.status != http.StatusOK {
		t.Errorf("healthz %d", r.status)
	}
	r := b.get("", "/readyz")
	if r.status != http.StatusOK || r.json(t)["status"] != "ready" {
		t.Errorf("readyz %d %s", r.status, r.body)
	}
	b.get(store.Pro, "/v1/markets?coin=BTC&limit=1")
	m := b.get("", "/metrics")
	if m.status != http.StatusOK || !strings.Contains(string(m.body), `updown_http_request_duration_seconds_count{method="GET",route="GET /v1/markets",status="200"} 1`) {
		t.Errorf("metrics do not count the request by route:\n%.2000s", m.body)
	}
}

// openAPIDocument fetches the server's /openapi.json into doc.
func openAPIDocument(t *testing.T, doc any) {
	t.Helper()
	r := setup(t).get("", "/openapi.json")
	if r.status != http.StatusOK {
		t.Fatalf("openapi: %d", r.status)
	}
	if err := json.Unmarshal(r.body, doc); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	openAPIDocument(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	for _, p := range []string{"/v1/markets", "/v1/markets/{slug}", "/v1/markets/{slug}/snapshots", "/v1/markets/by-market-id/{marketId}/snapshots"} {
		op, ok := doc.Paths[p]["get"]
		if !ok {
			t.Errorf("path %s missing", p)
			continue
		}
		if _, ok := op.Responses["422"]; ok {
			t.Errorf("%s documents 422; validation errors are 400", p)
		}
		bad, ok := op.Responses["400"]
		if !ok {
			t.Errorf("%s does not document 400", p)
			continue
		}
		if ref, _ := bad.Content["application/json"].Schema["$ref"].(string); !strings.HasSuffix(ref, "/ErrorEnvelope") {
			t.Errorf("%s 400 schema = %v, want the envelope", p, bad.Content["application/json"].Schema)
		}
	}
	for _, p := range []string{"/v1/markets/{slug}/snapshots", "/v1/btc/spot/snapshots"} {
		if _, ok := doc.Paths[p]["get"].Responses["200"].Content["text/csv"]; !ok {
			t.Errorf("%s does not document its text/csv form", p)
		}
	}
	if _, ok := doc.Components.Schemas["SnapshotPage"]; !ok {
		t.Errorf("SnapshotPage schema missing")
	}
}

// TestOpenAPIMatchesTheServer checks rules the server keeps on every
// operation against the document: an authenticated operation can answer
// 401 (no credentials), 429 (rate limits, at auth) and 503 (the store or
// Redis away: the key is read at auth); a body is JSON only (anything
// else is 415); an enum of a nullable property lists null, which the
// server answers (an unresolved market's winner).
func TestOpenAPIMatchesTheServer(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Security    []map[string]any `json:"security"`
			RequestBody *struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	openAPIDocument(t, &doc)
	for path, item := range doc.Paths {
		for method, op := range item {
			name := strings.ToUpper(method) + " " + path
			if len(op.Security) > 0 {
				for _, code := range []string{"401", "429", "500", "503"} {
					if _, ok := op.Responses[code]; !ok {
						t.Errorf("%s does not document %s", name, code)
					}
				}
			}
			if op.RequestBody == nil {
				continue
			}
			if _, ok := op.RequestBody.Content["application/json"]; !ok {
				t.Errorf("%s documents no JSON body", name)
			}
			for ct, mt := range op.RequestBody.Content {
				if ct != "application/json" {
					t.Errorf("%s documents a %s body; the server takes JSON only", name, ct)
				}
				if len(mt.Schema) == 0 {
					t.Errorf("%s documents its body with no schema", name)
				}
			}
		}
	}
	// A sweep's strategy takes neither the market nor the paging of
	// trades (sweep.Decode refuses them).
	sweepProps, _ := doc.Components.Schemas["SweepStrategy"]["properties"].(map[string]any)
	for _, p := range []string{"marketSlug", "tradesOffset", "tradesLimit"} {
		if _, ok := sweepProps[p]; ok || len(sweepProps) == 0 {
			t.Errorf("SweepStrategy documents %s (or nothing: %d properties)", p, len(sweepProps))
		}
	}
	for name, s := range doc.Components.Schemas {
		props, _ := s["properties"].(map[string]any)
		for p, v := range props {
			ps, _ := v.(map[string]any)
			enum, hasEnum := ps["enum"].([]any)
			types, _ := ps["type"].([]any)
			if hasEnum && slices.Contains(types, any("null")) && !slices.Contains(enum, nil) {
				t.Errorf("%s.%s is nullable but its enum %v does not list null", name, p, enum)
			}
		}
	}
}

// TestOpenAPINullableObjects: a property the server answers as an object
// or null is documented so (anyOf the object and null in 3.1; allOf it,
// nullable, in 3.0, which has no null type), and the sweep's results
// have their schema, not an empty one.
func TestOpenAPINullableObjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc map[string]any
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	prop := func(doc map[string]any, schema, name string) string {
		s, _ := json.Marshal(doc["components"].(map[string]any)["schemas"].(map[string]any)[schema].(map[string]any)["properties"].(map[string]any)[name])
		return string(s)
	}
	for _, c := range []struct{ schema, prop, ref string }{
		{"SweepResults", "best", "SweepBest"},
		{"Summary", "pnl_per_market", "Distribution"},
		{"Aggregate", "best_market", "MarketPnL"},
		{"SweepJSON", "results", ""},
	} {
		got := prop(doc, c.schema, c.prop)
		want := `"anyOf":[{"$ref":"#/components/schemas/` + c.ref + `"},{"type":"null"}]`
		if c.ref == "" {
			want = `"$ref":"#/components/schemas/SweepResults"`
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s.%s = %s, want %s", c.schema, c.prop, got, want)
		}
	}
	r := b.get("", "/openapi-3.0.json")
	var doc30 map[string]any
	if err := json.Unmarshal(r.body, &doc30); err != nil {
		t.Fatal(err)
	}
	if got := prop(doc30, "SweepResults", "best"); got != `{"allOf":[{"$ref":"#/components/schemas/SweepBest"}],"nullable":true}` {
		t.Errorf("3.0 SweepResults.best = %s", got)
	}
	if strings.Contains(string(r.body), `"null"`) {
		t.Errorf("the 3.0 document names the null type, which 3.0 has not")
	}
	if y := b.get("", "/openapi-3.0.yaml"); y.status != http.StatusOK || !strings.Contains(string(y.body), "nullable: true") {
		t.Errorf("3.0 YAML: %d", y.status)
	}
}

// TestMetricsMethodLabelBounded: the method label of the request metrics
// is one of HTTP's methods or OTHER, whatever a client sends, so that
// made-up methods (any token, up to the header limit) cannot add a time
// series each to the process's memory and to every scrape.
func TestMetricsMethodLabelBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, m := range []string{"XMETHODA", "XMETHODB", strings.Repeat("Z", 4096)} {
		if r := b.do(m, "/v1/markets", "", "", ""); r.status != http.StatusMethodNotAllowed {
			t.Fatalf("%.20s /v1/markets: %d %s", m, r.status, r.body)
		}
	}
	m := b.get("", "/metrics")
	if strings.Contains(string(m.body), "XMETHOD") || strings.Contains(string(m.body), "ZZZZ") {
		t.Errorf("a client's made-up method became a metric label:\n%.2000s", m.body)
	}
	if !strings.Contains(string(m.body), `updown_http_request_duration_seconds_count{method="OTHER",route="unmatched",status="405"} 3`) {
		t.Errorf("made-up methods are not counted under OTHER:\n%.3000s", m.body)
	}
}
