package api_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// hangupStore is a store whose client hangs up at a chosen moment: once
// a billing event is recorded, or a key revoked, it waits for the
// request to end (the client gone) before it answers, so that what the
// handler does after the change is stored runs for a client that is no
// longer there. afterChange is closed at the handler's next store call
// after the change (StopSweepsOffPlan's count, the revoked key read
// back): by then it has told the other api processes, or failed to.
type hangupStore struct {
	store.Store
	stored      chan struct{} // closed once the change is stored
	afterChange chan struct{} // closed at the next store call
	once        sync.Once
	first       sync.Once
	changed     bool
	mu          sync.Mutex
}

func newHangupStore(t *testing.T) *hangupStore {
	t.Helper()
	st := memory.New()
	loadFixtures(t, st)
	return &hangupStore{Store: st, stored: make(chan struct{}), afterChange: make(chan struct{})}
}

// waitForHangup marks the change stored and waits for the request to
// end, the first time; later changes (a retry) go on at once.
func (h *hangupStore) waitForHangup(ctx context.Context) {
	h.first.Do(func() {
		h.mu.Lock()
		h.changed = true
		h.mu.Unlock()
		close(h.stored)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	})
}

func (h *hangupStore) next() {
	h.mu.Lock()
	changed := h.changed
	h.mu.Unlock()
	if changed {
		h.once.Do(func() { close(h.afterChange) })
	}
}

func (h *hangupStore) RecordBillingEvent(ctx context.Context, e store.BillingEvent) (store.BillingEvent, bool, error) {
	rec, dup, err := h.Store.RecordBillingEvent(ctx, e)
	if err == nil {
		h.waitForHangup(ctx)
	}
	return rec, dup, err
}

func (h *hangupStore) CountActiveSweeps(ctx context.Context, customerID string) (int, error) {
	h.next()
	return h.Store.CountActiveSweeps(ctx, customerID)
}

func (h *hangupStore) RevokeAPIKey(ctx context.Context, id string) error {
	err := h.Store.RevokeAPIKey(ctx, id)
	if err == nil {
		h.waitForHangup(ctx)
	}
	return err
}

func (h *hangupStore) GetAPIKey(ctx context.Context, id string) (store.APIKey, error) {
	h.next()
	return h.Store.GetAPIKey(ctx, id)
}

// hangUp sends req, and cancels it once st has stored the change; it
// returns when the handler has gone past telling the other processes.
func hangUp(t *testing.T, st *hangupStore, req *http.Request) {
	t.Helper()
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err == nil {
			res.Body.Close()
			err = errors.New("the request was answered before the client hung up")
		}
		done <- err
	}()
	select {
	case <-st.stored:
	case err := <-done:
		t.Fatalf("the change was never stored: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the change was never stored")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want it cancelled", err)
	}
	select {
	case <-st.afterChange:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not go on after the change was stored")
	}
}

// TestWebhookTierChangeHoldsWhenTheProviderHangsUp: a tier change that is
// stored holds for the customer's next request through every api process
// at once (DESIGN 4), also when the billing provider hangs up just after
// it was stored: the other processes know it at once, not only once the
// provider retries (which may be hours later, or never).
func TestWebhookTierChangeHoldsWhenTheProviderHangsUp(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	st := newHangupStore(t)
	a := setup(t, func(o *setupOpts) { o.store = st; o.redis = rdb; o.webhookSecret = hookSecret })
	bSrv := secondProcess(t, a, func(c *api.Config) { c.Redis = rdb; c.WebhookSecret = hookSecret })
	b := &bundle{t: t, srv: bSrv, store: a.store, keys: a.keys, ids: a.ids}
	const eth = "/v1/markets?coin=ETH&limit=1"

	// Process B knows the STARTER key (its key cache holds it).
	wantError(t, b.get(store.Starter, eth), http.StatusForbidden, "TIER_ACCESS_DENIED")

	// The upgrade reaches process A; the provider hangs up once it is stored.
	d := signed(t, hookSecret, "msg_hangup", now, a.activate("msg_hangup", store.Starter, "PRO", now.Add(-time.Minute)).body())
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/webhook/dodo", bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"webhook-id": d.id, "webhook-timestamp": d.timestamp, "webhook-signature": d.signature, "Content-Type": d.contentType} {
		req.Header.Set(k, v)
	}
	hangUp(t, st, req)
	if c, err := st.GetCustomer(context.Background(), a.ids[store.Starter]); err != nil || c.Tier != store.Pro {
		t.Fatalf("tier stored = %v (%v), want PRO", c.Tier, err)
	}

	// B's next request has the PRO plan, before any retry of the
	// provider's (which tells every process again): the change told them
	// although its request was gone.
	r := b.get(store.Starter, eth)
	if r.status != http.StatusOK || r.header.Get("X-Tier") != "PRO" {
		t.Fatalf("process B after the upgrade: %d, X-Tier %q, want 200 PRO; %s", r.status, r.header.Get("X-Tier"), r.body)
	}

	// The provider's retry is a duplicate.
	wantHook(t, a.post(a.activate("msg_hangup", store.Starter, "PRO", now.Add(-time.Minute))), "applied", true)
}

// TestRevokedKeyHoldsWhenTheClientHangsUp: a key revoked through one api
// process stops working through every other at once (DESIGN 12), also
// when the client that revoked it hangs up just after it was stored.
func TestRevokedKeyHoldsWhenTheClientHangsUp(t *testing.T) {
	t.Parallel()
	st := newHangupStore(t)
	a, b, plain, k := keyKnownToB(t, st)

	// Revoked through process A; the client hangs up once it is stored.
	req, err := http.NewRequest(http.MethodDelete, a.srv.URL+"/v1/account/keys/"+k.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", a.keys[store.Pro])
	hangUp(t, st, req)

	wantError(t, b.do(http.MethodGet, btcOne, plain, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

// lostAnswerStore records a billing event and then answers an error, the
// first time, as a store whose commit went through but whose answer was
// lost (a connection cut as it committed, a process stopped right after):
// the delivery is answered 500 and the provider delivers it again.
type lostAnswerStore struct {
	store.Store
	once sync.Once
}

func (l *lostAnswerStore) RecordBillingEvent(ctx context.Context, e store.BillingEvent) (store.BillingEvent, bool, error) {
	rec, dup, err := l.Store.RecordBillingEvent(ctx, e)
	lost := false
	l.once.Do(func() { lost = err == nil })
	if lost {
		return store.BillingEvent{}, false, errors.New("connection reset as the transaction committed")
	}
	return rec, dup, err
}

// TestWebhookRetryFinishesAStoredDowngrade: a downgrade whose first
// delivery was stored but not answered (500) is finished by the
// provider's retry, a duplicate: the customer's running sweeps the new
// plan could not have started are cancelled, and every api process
// serves the new plan at the next request, as for a delivery answered
// the first time.
func TestWebhookRetryFinishesAStoredDowngrade(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	mem := memory.New()
	loadFixtures(t, mem)
	st := &lostAnswerStore{Store: mem}
	a := setup(t, func(o *setupOpts) { o.store = st; o.redis = rdb; o.webhookSecret = hookSecret })
	bSrv := secondProcess(t, a, func(c *api.Config) { c.Redis = rdb; c.WebhookSecret = hookSecret })
	b := &bundle{t: t, srv: bSrv, store: a.store, keys: a.keys, ids: a.ids}
	ctx := context.Background()
	const eth = "/v1/markets?coin=ETH&limit=1"

	// The PRO customer's sweep runs; process B knows its key.
	sw, err := mem.CreateSweep(ctx, store.Sweep{CustomerID: a.ids[store.Pro], Request: []byte(`{}`), TrialCount: 2,
		Markets: []string{"btc-updown-5m-1777467900"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	if r := b.get(store.Pro, eth); r.status != http.StatusOK {
		t.Fatalf("PRO through B: %d %s", r.status, r.body)
	}

	// The cancellation is stored, its answer lost; the provider retries.
	cancel := a.activate("msg_cancel", store.Pro, "", now.Add(-time.Minute))
	cancel.typ = "subscription.cancelled"
	if r := a.post(cancel); r.status != http.StatusInternalServerError {
		t.Fatalf("first delivery: %d %s, want the store's 500", r.status, r.body)
	}
	if c, err := mem.GetCustomer(ctx, a.ids[store.Pro]); err != nil || c.Tier != store.Starter {
		t.Fatalf("tier stored = %v (%v), want STARTER", c.Tier, err)
	}
	wantHook(t, a.post(cancel), "applied", true)

	got, err := mem.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepCancelled {
		t.Errorf("sweep %s after the downgrade's retry, want CANCELLED", got.Status)
	}
	wantError(t, b.get(store.Pro, eth), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

// revokeLosesAnswer is a store whose first key revocation is stored and
// then answered with an error, as a connection cut as it committed would
// be.
type revokeLosesAnswer struct {
	*memory.Store
	lost sync.Once
}

func (s *revokeLosesAnswer) RevokeAPIKey(ctx context.Context, id string) error {
	if err := s.Store.RevokeAPIKey(ctx, id); err != nil {
		return err
	}
	err := error(nil)
	s.lost.Do(func() { err = errors.New("connection reset as the revocation committed") })
	return err
}

// TestRevokedKeyHoldsWhenTheStoreLosesTheAnswer: a key revocation that is
// stored but answered 500 (the store's answer was lost) is retried by the
// client, and the retry, finding the key revoked, tells every api process
// all the same: the key stops working through the others at once, where
// no one told them and they served it from their key cache.
func TestRevokedKeyHoldsWhenTheStoreLosesTheAnswer(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	a, b, plain, k := keyKnownToB(t, &revokeLosesAnswer{Store: mem})

	// Revoked through process A, whose store loses the answer; the client
	// retries.
	if r := a.do(http.MethodDelete, "/v1/account/keys/"+k.ID, a.keys[store.Pro], "", ""); r.status < 500 {
		t.Fatalf("DELETE whose store answer was lost: %d %s, want a 5xx", r.status, r.body)
	}
	if r := a.do(http.MethodDelete, "/v1/account/keys/"+k.ID, a.keys[store.Pro], "", ""); r.status != http.StatusOK {
		t.Fatalf("the retried DELETE: %d %s", r.status, r.body)
	}

	wantError(t, b.do(http.MethodGet, btcOne, plain, "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

// btcOne is a read any PRO key may make.
const btcOne = "/v1/markets?coin=BTC&limit=1"

// keyKnownToB starts api process A on st and process B beside it on one
// Redis, and gives the PRO customer a second key that B has served (so
// that B's key cache holds it): the key revocation tests' two processes.
func keyKnownToB(t *testing.T, st store.Store) (a, b *bundle, plain string, k store.APIKey) {
	t.Helper()
	rdb := redistest.Client(t)
	a = setup(t, func(o *setupOpts) { o.store = st; o.redis = rdb })
	b = &bundle{t: t, srv: secondProcess(t, a, func(c *api.Config) { c.Redis = rdb }), store: a.store, keys: a.keys, ids: a.ids}
	plain, k = api.NewKey(a.ids[store.Pro])
	k, err := st.CreateAPIKey(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if r := b.do(http.MethodGet, btcOne, plain, "", ""); r.status != http.StatusOK {
		t.Fatalf("the second key through B: %d %s", r.status, r.body)
	}
	return a, b, plain, k
}
