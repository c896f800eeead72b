package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// keyReadCounter is a store that counts the API keys it hands out.
type keyReadCounter struct {
	store.Store
	n atomic.Int64
}

func (s *keyReadCounter) ListAPIKeys(ctx context.Context, customerID string) ([]store.APIKey, error) {
	keys, err := s.Store.ListAPIKeys(ctx, customerID)
	s.n.Add(int64(len(keys)))
	return keys, err
}

func (s *keyReadCounter) PageAPIKeys(ctx context.Context, customerID string, limit, offset int) (store.APIKeyPage, error) {
	p, err := s.Store.PageAPIKeys(ctx, customerID, limit, offset)
	s.n.Add(int64(len(p.Keys)))
	return p, err
}

func (s *keyReadCounter) GetAPIKey(ctx context.Context, id string) (store.APIKey, error) {
	s.n.Add(1)
	return s.Store.GetAPIKey(ctx, id)
}

func (s *keyReadCounter) LookupAPIKey(ctx context.Context, hash []byte) (store.APIKey, store.Customer, error) {
	s.n.Add(1)
	return s.Store.LookupAPIKey(ctx, hash)
}

// revokedKeys gives the customer n revoked keys.
func revokedKeys(t *testing.T, st store.Store, customerID string, n int) {
	t.Helper()
	for range n {
		_, rec := api.NewKey(customerID)
		k, err := st.CreateAPIKey(t.Context(), rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.RevokeAPIKey(t.Context(), k.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRevokedKeysCostNothing (issue 28, item 5): a request authenticated
// by a session or a bearer token reads its one key, not every key its
// customer ever revoked; the key list is paged, live keys first.
func TestRevokedKeysCostNothing(t *testing.T) {
	t.Parallel()
	st := &keyReadCounter{Store: memory.New()}
	rdb := redistest.Client(t)
	b := setup(t, func(o *setupOpts) { o.store, o.redis = st, rdb })
	srv := secondProcess(t, b, func(c *api.Config) {
		c.Store, c.Redis, c.AI.TokenSecret = st, rdb, testSecret
	})
	b.srv = srv
	const revoked = 300
	revokedKeys(t, st, b.ids[store.Pro], revoked)

	br := b.signIn(store.Pro)
	st.n.Store(0)
	for range 3 {
		if r := br.get("/v1/account"); r.status != http.StatusOK {
			t.Fatalf("account by session: %d %s", r.status, r.body)
		}
	}
	if n := st.n.Load(); n > 3 {
		t.Errorf("3 session requests read %d API keys, want at most one each", n)
	}

	tok := b.do(http.MethodPost, "/v1/auth/token", b.keys[store.Pro], "", "")
	if tok.status != http.StatusOK {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	bearer := tok.json(t)["access_token"].(string)
	st.n.Store(0)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/backtest-ai/quota", nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("quota by bearer: %d", res.StatusCode)
		}
	}
	if n := st.n.Load(); n > 3 {
		t.Errorf("3 bearer requests read %d API keys, want at most one each", n)
	}

	// The list: a page, the live key first.
	type keyList struct {
		Data struct {
			Keys []struct {
				ID        string  `json:"id"`
				RevokedAt *string `json:"revoked_at"`
				Current   bool    `json:"current"`
			} `json:"keys"`
			Total, Limit, Offset, Live int
			MaxLive                    int `json:"max_live"`
		} `json:"data"`
	}
	list := func(path string) keyList {
		t.Helper()
		r := b.get(store.Pro, path)
		var l keyList
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	st.n.Store(0)
	first := list("/v1/account/keys")
	d := first.Data
	if len(d.Keys) != 20 || d.Total != revoked+1 || d.Live != 1 || d.Limit != 20 || d.Offset != 0 || d.MaxLive != 10 {
		t.Errorf("first page: %d keys, total %d, live %d, limit %d, offset %d, max_live %d; want 20 of %d, 1 live",
			len(d.Keys), d.Total, d.Live, d.Limit, d.Offset, d.MaxLive, revoked+1)
	}
	if len(d.Keys) > 1 && (d.Keys[0].RevokedAt != nil || !d.Keys[0].Current || d.Keys[1].RevokedAt == nil) {
		t.Errorf("first page does not start with the live key: %+v", d.Keys[:2])
	}
	if n := st.n.Load(); n > 21 {
		t.Errorf("a page of 20 keys read %d API keys", n)
	}
	seen, twice := map[string]bool{}, 0
	for off := 0; off < revoked+1; off += 100 {
		for _, k := range list("/v1/account/keys?limit=100&offset=" + itoa(int64(off))).Data.Keys {
			if seen[k.ID] {
				twice++
			}
			seen[k.ID] = true
		}
	}
	if len(seen) != revoked+1 || twice > 0 {
		t.Errorf("pages of 100 hold %d distinct keys (%d seen twice), want %d", len(seen), twice, revoked+1)
	}
	if l := list("/v1/account/keys?offset=1000"); len(l.Data.Keys) != 0 || l.Data.Total != revoked+1 {
		t.Errorf("past the end: %d keys, total %d; want none of %d", len(l.Data.Keys), l.Data.Total, revoked+1)
	}
	for _, q := range []string{"limit=0", "limit=101", "offset=-1", "limit=x"} {
		e := wantError(t, b.get(store.Pro, "/v1/account/keys?"+q), http.StatusBadRequest, "VALIDATION_ERROR")
		if d, _ := json.Marshal(e["details"]); !json.Valid(d) || string(d) == "null" {
			t.Errorf("%s: no details naming the parameter: %v", q, e)
		}
	}

	// The OpenAPI document says how to page.
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				In     string `json:"in"`
				Schema struct {
					Default, Maximum any
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	r := b.get("", "/openapi.json")
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{}
	for _, p := range doc.Paths["/v1/account/keys"]["get"].Parameters {
		params[p.Name] = p.Schema.Default
	}
	if params["limit"] != 20.0 || params["offset"] != 0.0 {
		t.Errorf("GET /v1/account/keys parameters in OpenAPI: %v, want limit (default 20) and offset (default 0)", params)
	}
}

// TestCreateKeyTakesNoSettings: a new key has nothing to set, so a body
// with a field (a name, say) is 400 naming it rather than dropped without
// a word; no body, null and {} create a key.
func TestCreateKeyTakesNoSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.keys[store.Pro]
	for _, body := range []string{"", "{}", " null ", "{ }"} {
		if r := b.do(http.MethodPost, "/v1/account/keys", key, "application/json", body); r.status != http.StatusCreated {
			t.Errorf("body %q: status %d, want 201: %s", body, r.status, r.body)
		}
	}
	wantError(t, b.do(http.MethodPost, "/v1/account/keys", key, "application/json", strings.Repeat(" ", 2<<20)+"{}"), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	// No body needs no Content-Type; a body must be JSON, as the document
	// says (DESIGN 5: a non-JSON body is 415), not read as JSON whatever
	// it is declared to be.
	if r := b.do(http.MethodPost, "/v1/account/keys", key, "", ""); r.status != http.StatusCreated {
		t.Errorf("no body, no Content-Type: status %d, want 201: %s", r.status, r.body)
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded"} {
		wantError(t, b.do(http.MethodPost, "/v1/account/keys", key, ct, "{}"), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	}
	for body, field := range map[string]string{`{"name":"qa"}`: "name", `{"tier":"ENTERPRISE","label":1}`: "label", `[1]`: "", `"x"`: ""} {
		e := wantError(t, b.do(http.MethodPost, "/v1/account/keys", key, "application/json", body), http.StatusBadRequest, "VALIDATION_ERROR")
		if field != "" && e["details"].(map[string]any)["field"] != field {
			t.Errorf("body %s: %v, want details.field %q", body, e, field)
		}
		// The message speaks JSON, not the server's Go types.
		if msg := fmt.Sprint(e["message"]); strings.Contains(msg, "Go value") || strings.Contains(msg, "map[") {
			t.Errorf("body %s: message %q names the server's Go types", body, msg)
		}
	}
}

// keyCreationBarrier is a store whose CreateAPIKey, once armed, stores a
// key only when n creations have asked to, and answers only when all n
// are stored; a count of keys after that answers only when n counts have
// been made. Concurrent creations then all pass the key count before any
// key is stored, and all count again after every key is stored and before
// any is taken back: the worst interleaving, made certain.
type keyCreationBarrier struct {
	store.Store
	armed                    atomic.Bool // creations before it is armed pass straight through
	arrived, stored, counted barrier
}

func (s *keyCreationBarrier) PageAPIKeys(ctx context.Context, customerID string, limit, offset int) (store.APIKeyPage, error) {
	p, err := s.Store.PageAPIKeys(ctx, customerID, limit, offset)
	if s.armed.Load() && s.stored.at.Load() >= s.stored.n {
		s.counted.wait()
	}
	return p, err
}

// barrier opens when n goroutines have reached it (or, as a hang guard
// only, after two minutes).
type barrier struct {
	n    int64
	at   atomic.Int64
	open chan struct{}
}

func newBarrier(n int64) barrier { return barrier{n: n, open: make(chan struct{})} }

func (b *barrier) wait() {
	if b.at.Add(1) == b.n {
		close(b.open)
	}
	select {
	case <-b.open:
	case <-time.After(2 * time.Minute):
	}
}

func (s *keyCreationBarrier) CreateAPIKey(ctx context.Context, k store.APIKey) (store.APIKey, error) {
	if !s.armed.Load() {
		return s.Store.CreateAPIKey(ctx, k)
	}
	s.arrived.wait()
	k, err := s.Store.CreateAPIKey(ctx, k)
	s.stored.wait()
	return k, err
}

// TestConcurrentKeyCreationsFillTheLastPlace: two creations racing for
// the last of the 10 places both passed the count, both saw 11 live keys
// and both took their key back, so neither got one. The first key
// created keeps the place; only the surplus is refused.
func TestConcurrentKeyCreationsFillTheLastPlace(t *testing.T) {
	t.Parallel()
	st := &keyCreationBarrier{Store: memory.New(), arrived: newBarrier(2), stored: newBarrier(2), counted: newBarrier(2)}
	b := setup(t, func(o *setupOpts) { o.store = st })
	for range 8 { // the setup's key and 8 more: one place left
		_, rec := api.NewKey(b.ids[store.Pro])
		if _, err := st.Store.CreateAPIKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	st.armed.Store(true)
	statuses := make(chan response, 2)
	for range 2 {
		go func() { statuses <- b.do(http.MethodPost, "/v1/account/keys", b.keys[store.Pro], "", "") }()
	}
	got := map[int]int{}
	for range 2 {
		r := <-statuses
		got[r.status]++
		if r.status != http.StatusCreated {
			wantError(t, r, http.StatusConflict, api.CodeKeyLimit)
		}
	}
	if got[http.StatusCreated] != 1 || got[http.StatusConflict] != 1 {
		t.Errorf("two creations for the last place answered %v, want one 201 and one 409", got)
	}
	page, err := st.PageAPIKeys(t.Context(), b.ids[store.Pro], 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Live != 10 {
		t.Errorf("live keys = %d after the race, want 10", page.Live)
	}
}
