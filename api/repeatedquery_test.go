package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestRepeatedQueryParameterIsRefused: a scalar query parameter sent twice
// is 400 VALIDATION_ERROR naming it, where the first value was taken
// without a word (coin=BTC&coin=ETH listed BTC markets).
func TestRepeatedQueryParameterIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.get(store.Enterprise, "/v1/markets?coin=BTC&coin=ETH")
	e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "coin") {
		t.Errorf("message %q does not name coin", msg)
	}
	errs, _ := e["details"].(map[string]any)["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["location"] != "query.coin" {
		t.Errorf("details.errors = %v, want one at query.coin", errs)
	}

	// The same value twice is as ambiguous a request, and a parameter sent
	// once beside a repeated one is no excuse.
	for _, path := range []string{
		"/v1/markets?coin=BTC&coin=BTC",
		"/v1/markets?coin=BTC&limit=1&limit=2",
		"/v1/markets?coin=BTC&limit=&limit=2",
	} {
		wantError(t, b.get(store.Enterprise, path), http.StatusBadRequest, "VALIDATION_ERROR")
	}

	// Once each is answered as ever, and a parameter the operation does
	// not take is left alone (ignored, as when sent once).
	for _, path := range []string{
		"/v1/markets?coin=BTC&limit=2&offset=1",
		"/v1/markets?coin=BTC&utm=a&utm=b",
	} {
		if r := b.get(store.Enterprise, path); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}

// TestRepeatedQueryParameterIsRefusedEverywhere: every operation's every
// scalar query parameter, sent twice, is 400 VALIDATION_ERROR naming it,
// before the operation looks at its path or body.
func TestRepeatedQueryParameterIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name, In string
				Schema   struct {
					Type any `json:"type"`
				}
			}
		}
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	pathParam := regexp.MustCompile(`\{[^}]+\}`)
	checked := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			for _, p := range op.Parameters {
				if p.In != "query" || p.Schema.Type == "array" {
					continue
				}
				target := pathParam.ReplaceAllString(path, "x") + "?" +
					url.Values{p.Name: {"1", "2"}}.Encode()
				r := b.do(strings.ToUpper(method), target, b.keys[store.Enterprise], "application/json", "{}")
				if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"query.`+p.Name+`"`) {
					t.Errorf("%s %s: %d %s; want 400 VALIDATION_ERROR at query.%s", strings.ToUpper(method), target, r.status, r.body, p.Name)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d query parameters checked: the document has more", checked)
	}
}

// TestRepeatedQueryParameterAmongManyIsRefused: a repeated parameter is
// refused however many others the query holds. Go's query parser gives up
// past 10,000 parameters and answers none, which let coin=BTC&coin=ETH
// through when followed by enough padding, while Huma read the first.
func TestRepeatedQueryParameterAmongManyIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var q strings.Builder
	q.WriteString("/v1/markets?coin=BTC&coin=ETH")
	for i := range 10001 {
		q.WriteString("&p" + strconv.Itoa(i) + "=1")
	}
	wantError(t, b.get(store.Enterprise, q.String()), http.StatusBadRequest, "VALIDATION_ERROR")
}
