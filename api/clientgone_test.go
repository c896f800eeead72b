package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// hangingStore is a store whose market listing answers only when its caller's
// context ends, as a slow Postgres cut short by it does: entered is
// closed once a listing has begun.
type hangingStore struct {
	store.Store
	entered chan struct{}
}

func (s hangingStore) ListMarkets(ctx context.Context, _ store.MarketFilter) ([]store.Market, int, error) {
	close(s.entered)
	<-ctx.Done()
	return nil, 0, fmt.Errorf("slow: list markets: %w", ctx.Err())
}

// noFailureLogged fails t on every WARN or ERROR line of out.
func noFailureLogged(t *testing.T, out string) {
	t.Helper()
	for l := range strings.Lines(out) {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("a client's going away was logged as a failure: %s", l)
		}
	}
}

// TestClientGoneDuringStoreCallIsNoOutage: a client that gives up while
// its request waits on the store is no store failure. Its store call, cut
// short by the request's context, was logged as an ERROR ("list markets
// failed"), which operators read as an outage; it is logged at INFO now,
// and the request log marks the request as its client's going away.
func TestClientGoneDuringStoreCallIsNoOutage(t *testing.T) {
	t.Parallel()
	slow := hangingStore{Store: memory.New(), entered: make(chan struct{})}
	logs := &logBuffer{}
	b := setup(t, func(o *setupOpts) { o.store, o.logger = slow, logs.logger() })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/v1/markets?coin=BTC", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", b.keys[store.Pro])
	answered := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		answered <- err
	}()
	select {
	case <-slow.entered: // the request waits on the store
	case err := <-answered:
		t.Fatalf("answered (%v) before it asked the store", err)
	}
	cancel() // the client gives up
	if err := <-answered; err == nil {
		t.Fatal("the client got an answer, not its own cancellation")
	}
	waitFor(t, "the request logged", func() bool { return strings.Contains(logs.String(), `route="GET /v1/markets"`) })
	out := logs.String()
	noFailureLogged(t, out)
	if !strings.Contains(out, "client went away") || !strings.Contains(out, "client_gone=true") {
		t.Errorf("the logs do not say the client went away:\n%s", out)
	}
}

// TestClientGoneBeforeRateCheckIsNoOutage: a request whose client has gone
// by its rate limit check (in Redis) and its store call, through the
// router: the check, failed by the request's context, was logged as
// Redis down (WARN "rate limiter unavailable ... jobs are refused with
// 503") and the store call as an ERROR.
func TestClientGoneBeforeRateCheckIsNoOutage(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	b := setup(t, func(o *setupOpts) { o.redis, o.logger = redistest.Client(t), logs.logger() })
	// A first request caches the caller (authcache.go), so the one cut
	// short needs no store call to be authenticated.
	if r := b.get(store.Pro, "/v1/markets?coin=BTC&limit=1"); r.status != http.StatusOK {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the client has gone
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/markets?coin=BTC&limit=1", nil)
	req.Header.Set("X-API-Key", b.keys[store.Pro])
	b.srv.Config.Handler.ServeHTTP(httptest.NewRecorder(), req)
	out := logs.String()
	noFailureLogged(t, out)
	if strings.Count(out, `route="GET /v1/markets"`) != 2 || !strings.Contains(out, "client_gone=true") {
		t.Errorf("the request log does not say the client went away:\n%s", out)
	}
	// Said as every call cut short by its client is (one level, one
	// wording), where the rate limit check's was a DEBUG of its own.
	if !strings.Contains(out, `level=INFO msg="rate limit check (counted locally): the client went away before it was done`) {
		t.Errorf("the rate limit check cut short is not logged as a call its client went away from:\n%s", out)
	}
}
