package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestAnswersAreWhatTheDocumentSays sends requests of every family
// through the real router (a replay through a real worker) and checks
// each 200 answer against the schema the OpenAPI document gives that
// operation's answer (conforms): no field the document does not name, no
// required one missing, no null or type it does not allow. A client
// generated from the document reads what the server sends.
func TestAnswersAreWhatTheDocumentSays(t *testing.T) {
	t.Parallel()
	b, _ := replaySetup(t, 30*time.Second, true)
	var doc map[string]any
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	slug, marketID := snapshotMarket()
	gtc := strings.Replace(replayBody(slug, nil), `"positionSize"`, `"orderType":"GTC","positionSize"`, 1)
	for _, c := range []struct {
		method, route, path, body string
		tier                      store.Tier
	}{
		{http.MethodGet, "/v1/markets", "/v1/markets?coin=BTC&limit=3", "", store.Pro},
		{http.MethodGet, "/v1/markets/{slug}", "/v1/markets/" + slug, "", store.Pro},
		{http.MethodGet, "/v1/markets/{slug}/snapshots", "/v1/markets/" + slug + "/snapshots?include_orderbook=true&limit=5", "", store.Pro},
		{http.MethodGet, "/v1/markets/by-market-id/{marketId}/snapshots", "/v1/markets/by-market-id/" + marketID + "/snapshots?limit=5", "", store.Pro},
		{http.MethodGet, "/v1/account", "/v1/account", "", store.Pro},
		{http.MethodPost, "/v1/replay", "/v1/replay", replayBody(slug, nil), store.Pro},
		{http.MethodPost, "/v1/replay", "/v1/replay", gtc, store.Enterprise},
	} {
		ct := ""
		if c.body != "" {
			ct = "application/json"
		}
		r := b.do(c.method, c.path, b.keys[c.tier], ct, c.body)
		if r.status != http.StatusOK {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			continue
		}
		op, _ := doc["paths"].(map[string]any)[c.route].(map[string]any)[strings.ToLower(c.method)].(map[string]any)
		schema, _ := op["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		if schema == nil {
			t.Errorf("%s %s: the document gives its answer no schema", c.method, c.route)
			continue
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		if errs := conforms(doc, schema, v, "answer"); len(errs) > 0 {
			t.Errorf("%s %s is not what the document says:\n%s", c.method, c.path, strings.Join(errs[:min(len(errs), 20)], "\n"))
		}
		// The check sees into the answer: a field the document does not
		// name, deep in data, is found.
		var deepest any = v
		for {
			m, ok := deepest.(map[string]any)
			if !ok {
				break
			}
			var next any
			for _, e := range m {
				if _, ok := e.(map[string]any); ok {
					next = e
					break
				}
			}
			if next == nil {
				m["not_documented"] = 1
				break
			}
			deepest = next
		}
		if errs := conforms(doc, schema, v, "answer"); !strings.Contains(strings.Join(errs, "\n"), "not_documented: not in the document") {
			t.Errorf("%s %s: a field the document does not name went unseen (%q)", c.method, c.path, errs)
		}
	}
}
