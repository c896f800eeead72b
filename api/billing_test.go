package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// hookSecret is the webhook secret of these tests; otherSecret is one the
// server does not know.
const (
	hookSecret  = "whsec_dGVzdC13ZWJob29rLXNlY3JldC1vZi11cGRvd24tYXBp"
	otherSecret = "whsec_c29tZWJvZHktZWxzZXMtc2VjcmV0LWtleS0xMjM0NTY="
)

// hookEvent is a billing event as the provider would post it.
type hookEvent struct {
	id         string // webhook-id
	typ        string
	at         time.Time // the payload's timestamp
	customerID string    // data.metadata.updown_customer_id
	email      string
	tier       string // data.metadata.tier
	sub        string // data.subscription_id; "" for "sub_<customer id>"
	product    string // data.product_id; "" for "pdt_pro"
}

func (e hookEvent) body() []byte {
	sub := e.sub
	if sub == "" {
		sub = "sub_" + e.customerID
	}
	product := e.product
	if product == "" {
		product = "pdt_pro"
	}
	data := map[string]any{
		"subscription_id":   sub,
		"status":            "active",
		"product_id":        product,
		"customer":          map[string]any{"email": e.email, "name": "Ada"},
		"metadata":          map[string]any{"updown_customer_id": e.customerID, "tier": e.tier},
		"next_billing_date": e.at.AddDate(0, 1, 0).Format(time.RFC3339),
	}
	b, _ := json.Marshal(map[string]any{"business_id": "bus_1", "type": e.typ, "timestamp": e.at.Format(time.RFC3339Nano), "data": data})
	return b
}

// delivery is one POST to the webhook: headers as the provider signs them
// unless a test changes them.
type delivery struct {
	id, timestamp, signature, contentType string
	body                                  []byte
}

// signed returns a delivery of body signed with secret at time at.
func signed(t *testing.T, secret, id string, at time.Time, body []byte) delivery {
	t.Helper()
	sig, err := api.SignWebhook(secret, id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return delivery{id: id, timestamp: strconv.FormatInt(at.Unix(), 10), signature: sig, contentType: "application/json", body: body}
}

func (b *bundle) deliver(d delivery) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/webhook/dodo", bytes.NewReader(d.body))
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range map[string]string{"webhook-id": d.id, "webhook-timestamp": d.timestamp, "webhook-signature": d.signature, "Content-Type": d.contentType} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// post delivers e signed with the tests' secret at the pinned now.
func (b *bundle) post(e hookEvent) response {
	b.t.Helper()
	return b.deliver(signed(b.t, hookSecret, e.id, now, e.body()))
}

// hookResult is the data of a webhook answer.
type hookResult struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Outcome      string  `json:"outcome"`
	Duplicate    bool    `json:"duplicate"`
	CustomerID   *string `json:"customer_id"`
	Tier         *string `json:"tier"`
	PreviousTier *string `json:"previous_tier"`
	// RequestedTier is the tier the event asked for; Tier, of an applied
	// event, is the tier it set.
	RequestedTier *string `json:"requested_tier"`
}

func wantHook(t *testing.T, r response, outcome string, duplicate bool) hookResult {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("webhook status %d, want 200; body %s", r.status, r.body)
	}
	var body struct {
		Success   bool       `json:"success"`
		Data      hookResult `json:"data"`
		Timestamp string     `json:"timestamp"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("webhook body: %v\n%s", err, r.body)
	}
	if !body.Success || body.Timestamp == "" || body.Data.Outcome != outcome || body.Data.Duplicate != duplicate {
		t.Fatalf("webhook answered %s, want outcome %s, duplicate %v", r.body, outcome, duplicate)
	}
	return body.Data
}

// tierOf is the customer's tier in the store now.
func (b *bundle) tierOf(id string) store.Tier {
	b.t.Helper()
	c, err := b.store.GetCustomer(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return c.Tier
}

// notRecorded fails unless no event was recorded under the webhook id.
func (b *bundle) notRecorded(id string) {
	b.t.Helper()
	if e, err := b.store.GetBillingEvent(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		b.t.Errorf("event %q was recorded (%+v, %v); want nothing recorded", id, e, err)
	}
}

// logBuffer collects a server's logs for tests that check what is logged.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// hookSetup is a server with the tests' webhook secret; logs go to the
// returned buffer.
func hookSetup(t *testing.T, opts ...func(*setupOpts)) (*bundle, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	b := setup(t, append([]func(*setupOpts){func(o *setupOpts) {
		o.webhookSecret = hookSecret
		o.logger = logs.logger()
	}}, opts...)...)
	return b, logs
}

// activate is subscription.active of the tier's test customer to target.
func (b *bundle) activate(id string, of store.Tier, target string, at time.Time) hookEvent {
	return hookEvent{id: id, typ: "subscription.active", at: at, customerID: b.ids[of],
		email: strings.ToLower(string(of)) + "@test.example", tier: target}
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	body := b.activate("unused", store.Starter, "PRO", now.Add(-time.Hour)).body()
	good := func(id string) delivery { return signed(t, hookSecret, id, now, body) }
	validSig := func(id string) string { return strings.TrimPrefix(good(id).signature, "v1,") }

	cases := []struct {
		name string
		d    func(id string) delivery
		ok   bool
	}{
		{"valid", good, true},
		{"several signatures, one valid", func(id string) delivery {
			d := good(id)
			d.signature = "v1,bm90IGl0 v1,!!notbase64!! " + d.signature + " v1,AAAA"
			return d
		}, true},
		{"v1a entries are skipped", func(id string) delivery {
			d := good(id)
			d.signature = "v1a," + validSig(id)
			return d
		}, false},
		{"v1a before a valid v1", func(id string) delivery {
			d := good(id)
			d.signature = "v1a,xyz " + d.signature
			return d
		}, true},
		{"wrong secret", func(id string) delivery { return signed(t, otherSecret, id, now, body) }, false},
		{"tampered body", func(id string) delivery {
			d := good(id)
			d.body = bytes.Replace(d.body, []byte(`"PRO"`), []byte(`"ENTERPRISE"`), 1)
			return d
		}, false},
		{"re-encoded body", func(id string) delivery {
			d := good(id)
			d.body = append(d.body, '\n')
			return d
		}, false},
		{"signature of another id", func(id string) delivery {
			d := good(id)
			d.id = id + "x"
			return d
		}, false},
		{"missing webhook-id", func(id string) delivery { d := good(id); d.id = ""; return d }, false},
		{"missing webhook-timestamp", func(id string) delivery { d := good(id); d.timestamp = ""; return d }, false},
		{"missing webhook-signature", func(id string) delivery { d := good(id); d.signature = ""; return d }, false},
		{"timestamp not a number", func(id string) delivery {
			d := good(id)
			d.timestamp = now.Format(time.RFC3339)
			return d
		}, false},
		{"signature without a version", func(id string) delivery { d := good(id); d.signature = validSig(id); return d }, false},
		{"timestamp 6 minutes old", func(id string) delivery { return signed(t, hookSecret, id, now.Add(-6*time.Minute), body) }, false},
		{"timestamp 6 minutes ahead", func(id string) delivery { return signed(t, hookSecret, id, now.Add(6*time.Minute), body) }, false},
		{"timestamp 4 minutes old", func(id string) delivery { return signed(t, hookSecret, id, now.Add(-4*time.Minute), body) }, true},
		{"timestamp 4 minutes ahead", func(id string) delivery { return signed(t, hookSecret, id, now.Add(4*time.Minute), body) }, true},
	}
	for i, tc := range cases {
		id := "msg_sig_" + strconv.Itoa(i)
		r := b.deliver(tc.d(id))
		if tc.ok {
			if r.status != http.StatusOK {
				t.Errorf("%s: status %d, want 200; %s", tc.name, r.status, r.body)
			}
			continue
		}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401; %s", tc.name, r.status, r.body)
			continue
		}
		wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		b.notRecorded(id)
	}
	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Pro {
		t.Errorf("tier after the valid deliveries = %s, want PRO", tier)
	}
}

// TestWebhookReplayedSignature re-sends a delivery captured 6 minutes ago,
// under a new webhook id the store has never seen: the signature's age
// refuses it.
func TestWebhookReplayedSignature(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	old := signed(t, hookSecret, "msg_old", now.Add(-6*time.Minute), b.activate("msg_old", store.Starter, "ENTERPRISE", now.Add(-7*time.Minute)).body())
	wantError(t, b.deliver(old), http.StatusUnauthorized, "UNAUTHORIZED")
	b.notRecorded("msg_old")
	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Starter {
		t.Errorf("tier = %s after a replayed delivery, want STARTER", tier)
	}
}

func TestWebhookWithoutSecret(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	b := setup(t, func(o *setupOpts) { o.logger = logs.logger() })
	e := b.activate("msg_1", store.Starter, "PRO", now)
	wantError(t, b.post(e), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	b.notRecorded("msg_1")
	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Starter {
		t.Errorf("tier = %s, want STARTER: nothing may apply unverified", tier)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "WEBHOOK_SECRET") {
		t.Errorf("no loud log about the missing secret:\n%s", logs)
	}
}

func TestWebhookSecretMustBeWellFormed(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{
		"dGVzdC13ZWJob29rLXNlY3JldC1vZi11cGRvd24tYXBp", // no whsec_ prefix
		"whsec_not base64!",
		"whsec_c2hvcnQ=", // "short"
	} {
		if _, err := api.New(api.Config{Store: memory.New(), WebhookSecret: secret}); err == nil {
			t.Errorf("api.New accepted webhook secret %q", secret)
		}
	}
	if _, err := api.New(api.Config{Store: memory.New(), WebhookSecret: api.DevWebhookSecret}); err != nil {
		t.Errorf("api.New refused the dev secret: %v", err)
	}
}

func TestWebhookMalformedRequests(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	valid := b.activate("", store.Starter, "PRO", now).body()
	cases := []struct {
		name        string
		contentType string
		body        []byte
		status      int
		code        string
	}{
		{"no content type", "", valid, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"text content type", "text/plain", valid, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"empty body", "application/json", []byte{}, 400, "VALIDATION_ERROR"},
		{"not JSON", "application/json", []byte(`{"type":`), 400, "VALIDATION_ERROR"},
		{"an array", "application/json", []byte(`[{"type":"subscription.active"}]`), 400, "VALIDATION_ERROR"},
		{"null", "application/json", []byte(`null`), 400, "VALIDATION_ERROR"},
		{"no type", "application/json", []byte(`{"timestamp":"2026-04-29T13:00:00Z","data":{}}`), 400, "VALIDATION_ERROR"},
		{"no timestamp", "application/json", []byte(`{"type":"subscription.active","data":{}}`), 400, "VALIDATION_ERROR"},
		{"timestamp not ISO 8601", "application/json", []byte(`{"type":"subscription.active","timestamp":"yesterday"}`), 400, "VALIDATION_ERROR"},
		// The zero time parses as ISO 8601 but is no event time: the store
		// refuses it, which must not surface as a 500 the provider retries.
		{"timestamp the zero time", "application/json", []byte(`{"type":"subscription.active","timestamp":"0001-01-01T00:00:00Z","data":{"metadata":{"tier":"PRO"}}}`), 400, "VALIDATION_ERROR"},
		{"tier not a string", "application/json", []byte(`{"type":"subscription.active","timestamp":"2026-04-29T13:00:00Z","data":{"metadata":{"tier":7}}}`), 400, "VALIDATION_ERROR"},
		{"NUL in a field", "application/json", []byte(`{"type":"subscription.active","timestamp":"2026-04-29T13:00:00Z","data":{"customer":{"email":"a\u0000b"}}}`), 400, "VALIDATION_ERROR"},
	}
	for i, tc := range cases {
		id := "msg_bad_" + strconv.Itoa(i)
		d := signed(t, hookSecret, id, now, tc.body)
		d.contentType = tc.contentType
		r := b.deliver(d)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d; %s", tc.name, r.status, tc.status, r.body)
			continue
		}
		wantError(t, r, tc.status, tc.code)
		b.notRecorded(id)
	}

	// A field of the wrong kind is named with the kind it must be, in
	// English: "an object", not "a object".
	for i, tc := range []struct{ body, message string }{
		{`{"type":"subscription.active","timestamp":"2026-04-29T13:00:00Z","data":"x"}`,
			"webhook payload field data must be an object, not a JSON string"},
		{`{"type":"subscription.active","timestamp":"2026-04-29T13:00:00Z","data":{"metadata":{"tier":7}}}`,
			"webhook payload field data.metadata.tier must be a string, not a JSON number"},
	} {
		id := "msg_kind_" + strconv.Itoa(i)
		e := wantError(t, b.deliver(signed(t, hookSecret, id, now, []byte(tc.body))), http.StatusBadRequest, "VALIDATION_ERROR")
		if e["message"] != tc.message {
			t.Errorf("message %q, want %q", e["message"], tc.message)
		}
		b.notRecorded(id)
	}

	// Over 1 MiB: refused before anything reads it.
	big := append(append([]byte(`{"type":"payment.succeeded","timestamp":"2026-04-29T13:00:00Z","pad":"`), bytes.Repeat([]byte("x"), 1<<20)...), `"}`...)
	wantError(t, b.deliver(signed(t, hookSecret, "msg_big", now, big)), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	b.notRecorded("msg_big")

	// A webhook-id that cannot be an idempotency key.
	long := strings.Repeat("m", 300)
	wantError(t, b.deliver(signed(t, hookSecret, long, now, valid)), http.StatusBadRequest, "VALIDATION_ERROR")
	b.notRecorded(long)

	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Starter {
		t.Errorf("tier = %s after refused deliveries, want STARTER", tier)
	}
}

func TestWebhookAppliesTier(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	id := b.ids[store.Starter]
	wantError(t, b.get(store.Starter, "/v1/markets?coin=ETH"), http.StatusForbidden, "TIER_ACCESS_DENIED")

	res := wantHook(t, b.post(b.activate("msg_1", store.Starter, "PRO", now.Add(-time.Minute))), "applied", false)
	if res.CustomerID == nil || *res.CustomerID != id || *res.Tier != "PRO" || *res.PreviousTier != "STARTER" || res.Type != "subscription.active" || res.ID != "msg_1" {
		t.Errorf("result %+v", res)
	}
	if tier := b.tierOf(id); tier != store.Pro {
		t.Fatalf("tier = %s, want PRO", tier)
	}
	// The very next request sees the new plan.
	r := b.get(store.Starter, "/v1/markets?coin=ETH")
	if r.status != http.StatusOK || r.header.Get("X-Tier") != "PRO" {
		t.Errorf("after the upgrade: %d, X-Tier %q; %s", r.status, r.header.Get("X-Tier"), r.body)
	}
	if !strings.Contains(logs.String(), "billing event applied") {
		t.Errorf("applied event not logged:\n%s", logs)
	}

	// Recorded for support, with the body as signed.
	e, err := b.store.GetBillingEvent(context.Background(), "msg_1")
	if err != nil {
		t.Fatal(err)
	}
	want := b.activate("msg_1", store.Starter, "PRO", now.Add(-time.Minute)).body()
	if e.Outcome != store.BillingApplied || e.CustomerID != id || e.Tier != store.Pro || e.PreviousTier != store.Starter ||
		!bytes.Equal(e.Payload, want) || e.SubscriptionID != "sub_"+id || !e.OccurredAt.Equal(now.Add(-time.Minute)) || e.ReceivedAt.IsZero() {
		t.Errorf("recorded %+v", e)
	}
}

func TestWebhookTierNamesAnyCase(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	// Wire names in any case, and the plans' names as SPEC 1 writes them
	// ("Pro Trial"), which an operator may well put on a product.
	for i, tc := range []struct {
		name string
		want store.Tier
	}{
		{"pro_trial", store.ProTrial}, {"Suite", store.Suite}, {" enterprise ", store.Enterprise},
		{"Pro Trial", store.ProTrial}, {"Starter", store.Starter}, {"pro-trial", store.ProTrial}, {"Pro", store.Pro},
		{" PRO  TRIAL ", store.ProTrial}, {"PRO\n", store.Pro}, {"pro\r\n", store.Pro}, {"\u00a0Suite", store.Suite},
	} {
		res := wantHook(t, b.post(b.activate("msg_"+strconv.Itoa(i), store.Starter, tc.name, now.Add(time.Duration(i)*time.Second))), "applied", false)
		if got := b.tierOf(b.ids[store.Starter]); got != tc.want || res.Tier == nil || *res.Tier != string(tc.want) {
			t.Errorf("tier %q: customer tier %s, answered %s; want %s", tc.name, got, r2s(res.Tier), tc.want)
		}
		if r := b.get(store.Starter, "/v1/account"); r.header.Get("X-Tier") != string(tc.want) {
			t.Errorf("tier %q: the next request's X-Tier %q, want %s", tc.name, r.header.Get("X-Tier"), tc.want)
		}
	}
	// A name that is no plan's stays unknown.
	wantHook(t, b.post(b.activate("msg_gold", store.Starter, "Gold", now.Add(time.Minute))), "unknown_tier", false)
}

// r2s is a nullable answer field for a message.
func r2s(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func TestWebhookDuplicateDelivery(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	id := b.ids[store.Starter]
	e := b.activate("msg_1", store.Starter, "PRO", now.Add(-time.Minute))
	first := wantHook(t, b.post(e), "applied", false)
	// Support downgrades the customer by hand; the provider redelivers.
	if _, err := b.store.SetCustomerTier(context.Background(), id, store.Starter); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again := wantHook(t, b.post(e), "applied", true)
		if *again.PreviousTier != *first.PreviousTier || *again.CustomerID != *first.CustomerID {
			t.Errorf("redelivery answered %+v, want the first delivery's result %+v", again, first)
		}
	}
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("tier = %s after redeliveries, want STARTER: a redelivery was applied again", tier)
	}
	events, err := b.store.ListBillingEvents(context.Background(), store.BillingEventFilter{CustomerID: id})
	if err != nil || len(events) != 1 {
		t.Errorf("recorded events = %d (%v), want 1", len(events), err)
	}
}

func TestWebhookOutOfOrder(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	id := b.ids[store.Starter]
	t1, t2, t3 := now.Add(-30*time.Minute), now.Add(-20*time.Minute), now.Add(-10*time.Minute)

	wantHook(t, b.post(b.activate("msg_active", store.Starter, "PRO", t2)), "applied", false)
	cancelled := b.activate("msg_cancel_old", store.Starter, "", t1)
	cancelled.typ = "subscription.cancelled"
	wantHook(t, b.post(cancelled), "stale", false)
	if tier := b.tierOf(id); tier != store.Pro {
		t.Errorf("tier = %s after an older cancellation arrived late, want PRO", tier)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("stale event not logged as a warning:\n%s", logs)
	}
	cancelled.id, cancelled.at = "msg_cancel_new", t3
	res := wantHook(t, b.post(cancelled), "applied", false)
	if *res.Tier != "STARTER" || *res.PreviousTier != "PRO" {
		t.Errorf("cancellation result %+v", res)
	}
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("tier = %s after a newer cancellation, want STARTER", tier)
	}
}

// A customer upgrades by buying the new plan, then cancels the old
// subscription: the cancellation must not take the new plan away.
func TestWebhookCancelOfReplacedSubscription(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	id := b.ids[store.Starter]
	event := func(webhookID, typ, sub, tier string, at time.Time) hookEvent {
		e := b.activate(webhookID, store.Starter, tier, at)
		e.typ, e.sub = typ, sub
		return e
	}
	t1, t2, t3, t4 := now.Add(-40*time.Minute), now.Add(-30*time.Minute), now.Add(-20*time.Minute), now.Add(-10*time.Minute)

	wantHook(t, b.post(event("msg_pro", "subscription.active", "sub_pro", "PRO", t1)), "applied", false)
	wantHook(t, b.post(event("msg_ent", "subscription.active", "sub_ent", "ENTERPRISE", t2)), "applied", false)
	res := wantHook(t, b.post(event("msg_pro_cancelled", "subscription.cancelled", "sub_pro", "", t3)), "superseded", false)
	if res.CustomerID == nil || *res.CustomerID != id || res.PreviousTier != nil {
		t.Errorf("superseded result %+v", res)
	}
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Fatalf("tier = %s after the replaced PRO subscription was cancelled, want ENTERPRISE", tier)
	}
	if r := b.get(store.Starter, "/v1/markets?coin=ETH"); r.status != http.StatusOK {
		t.Errorf("ETH markets on the replacement plan: status %d, want 200; body %s", r.status, r.body)
	}

	// Cancelling the plan the customer is on still ends it.
	res = wantHook(t, b.post(event("msg_ent_cancelled", "subscription.cancelled", "sub_ent", "", t4)), "applied", false)
	if *res.Tier != "STARTER" || *res.PreviousTier != "ENTERPRISE" {
		t.Errorf("cancellation result %+v", res)
	}
	wantError(t, b.get(store.Starter, "/v1/markets?coin=ETH"), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

// A tier support set by hand (`updown customers set-tier`) is not taken
// away by the cancellation of the subscription the customer had before:
// only a new subscription changes it. The server and the store share the
// real clock here, as in production, so that the cancellation happens
// after the setting by hand.
func TestWebhookKeepsTierSetByHand(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t, func(o *setupOpts) { o.clock = time.Now })
	id := b.ids[store.Starter]
	post := func(e hookEvent) response {
		t.Helper()
		return b.deliver(signed(t, hookSecret, e.id, time.Now(), e.body()))
	}
	event := func(webhookID, typ, sub, tier string) hookEvent {
		e := b.activate(webhookID, store.Starter, tier, time.Now())
		e.typ, e.sub = typ, sub
		return e
	}
	pro := event("msg_pro", "subscription.active", "sub_pro", "PRO")
	pro.at = time.Now().Add(-time.Hour)
	wantHook(t, post(pro), "applied", false)
	if _, err := b.store.SetCustomerTier(context.Background(), id, store.Enterprise); err != nil {
		t.Fatal(err)
	}
	wantHook(t, post(event("msg_pro_cancelled", "subscription.cancelled", "sub_pro", "")), "superseded", false)
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Fatalf("tier = %s after the subscription of before the tier set by hand was cancelled, want ENTERPRISE", tier)
	}
	if r := b.get(store.Starter, "/v1/markets?coin=ETH"); r.status != http.StatusOK || r.header.Get("X-Tier") != "ENTERPRISE" {
		t.Errorf("ETH markets on the tier set by hand: status %d, X-Tier %q; body %s", r.status, r.header.Get("X-Tier"), r.body)
	}
	// A new subscription does change it.
	res := wantHook(t, post(event("msg_suite", "subscription.active", "sub_suite", "SUITE")), "applied", false)
	if *res.PreviousTier != "ENTERPRISE" || b.tierOf(id) != store.Suite {
		t.Errorf("a new subscription after the tier set by hand: %+v, tier %s", res, b.tierOf(id))
	}
}

func TestWebhookUnknownCustomerOrTier(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	unknown := hookEvent{id: "msg_nobody", typ: "subscription.active", at: now, customerID: "00000000-0000-4000-8000-000000000000",
		email: "nobody@example.com", tier: "PRO"}
	res := wantHook(t, b.post(unknown), "unknown_customer", false)
	if res.CustomerID != nil {
		t.Errorf("customer_id = %v, want null", *res.CustomerID)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "nobody@example.com") {
		t.Errorf("unknown customer not logged as an error:\n%s", logs)
	}
	if e, err := b.store.GetBillingEvent(context.Background(), "msg_nobody"); err != nil || e.Outcome != store.BillingUnknownCustomer {
		t.Errorf("recorded %+v, %v", e, err)
	}

	for i, tier := range []string{"GOLD", ""} {
		wantHook(t, b.post(b.activate("msg_tier_"+strconv.Itoa(i), store.Starter, tier, now)), "unknown_tier", false)
	}
	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Starter {
		t.Errorf("tier = %s after an unknown tier, want STARTER", tier)
	}
	if !strings.Contains(logs.String(), "unknown tier") {
		t.Errorf("unknown tier not logged:\n%s", logs)
	}
}

func TestWebhookEmailFallback(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	for i, ref := range []string{"", "not-a-uuid", "00000000-0000-4000-8000-000000000000"} {
		e := b.activate("msg_"+strconv.Itoa(i), store.Suite, "ENTERPRISE", now.Add(time.Duration(i)*time.Second))
		e.customerID = ref
		res := wantHook(t, b.post(e), "applied", false)
		if *res.CustomerID != b.ids[store.Suite] {
			t.Errorf("ref %q: customer %s, want the email's %s", ref, *res.CustomerID, b.ids[store.Suite])
		}
	}
	if tier := b.tierOf(b.ids[store.Suite]); tier != store.Enterprise {
		t.Errorf("tier = %s, want ENTERPRISE", tier)
	}
}

// TestWebhookCustomerIDAnyForm: data.metadata.updown_customer_id finds
// its customer in whatever form the UUID comes (upper case, braces, a
// urn:uuid: prefix: RFC 9562 reads them all as the same id), on both
// stores, rather than fall back to the email, which may be another
// customer's: the customer the id names gets the plan it paid for.
func TestWebhookCustomerIDAnyForm(t *testing.T) {
	t.Parallel()
	for _, st := range []struct {
		name string
		opt  func(*setupOpts)
	}{
		{"memory", func(*setupOpts) {}},
		{"postgres", func(o *setupOpts) { o.store = pgtest.NewStore(t) }},
	} {
		t.Run(st.name, func(t *testing.T) {
			b, _ := hookSetup(t, st.opt)
			id := b.ids[store.Suite]
			for i, ref := range []string{strings.ToUpper(id), "{" + id + "}", "urn:uuid:" + id} {
				// The email is the Starter customer's: the id must win.
				e := b.activate("msg_form_"+strconv.Itoa(i), store.Starter, "ENTERPRISE", now.Add(time.Duration(i)*time.Second))
				e.customerID, e.sub = ref, "sub_form_"+strconv.Itoa(i)
				res := wantHook(t, b.post(e), "applied", false)
				if got := res.CustomerID; got == nil || *got != id {
					t.Errorf("ref %q: customer %s, want the id's %s (not the email's %s)", ref, derefOr(got, "none"), id, b.ids[store.Starter])
				}
			}
			if tier := b.tierOf(id); tier != store.Enterprise {
				t.Errorf("tier of the customer the id names = %s, want ENTERPRISE", tier)
			}
			if tier := b.tierOf(b.ids[store.Starter]); tier != store.Starter {
				t.Errorf("tier of the customer whose email the events carry = %s, want STARTER (unchanged)", tier)
			}
		})
	}
}

func derefOr(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

// TestWebhookEmailAnyCase: the email fallback matches whatever case the
// provider sends the address in (issue 16, item 7).
func TestWebhookEmailAnyCase(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	e := b.activate("msg_case", store.Starter, "PRO", now)
	e.customerID, e.email = "", "  STARTER@Test.EXAMPLE "
	res := wantHook(t, b.post(e), "applied", false)
	if res.CustomerID == nil || *res.CustomerID != b.ids[store.Starter] {
		t.Errorf("customer %v, want the email's %s", res.CustomerID, b.ids[store.Starter])
	}
	if tier := b.tierOf(b.ids[store.Starter]); tier != store.Pro {
		t.Errorf("tier = %s, want PRO", tier)
	}
}

// A payment for a customer the service does not know is money taken for
// nobody's plan: an error in the logs for a person to act on, as an
// unknown customer's subscription is.
func TestWebhookPaymentOfUnknownCustomer(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	pay := hookEvent{id: "msg_pay_nobody", typ: "payment.succeeded", at: now, customerID: "00000000-0000-4000-8000-000000000000",
		email: "nobody@example.com"}
	if res := wantHook(t, b.post(pay), "recorded", false); res.CustomerID != nil {
		t.Errorf("customer_id = %v, want null", *res.CustomerID)
	}
	var line string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "msg_pay_nobody") {
			line = l
		}
	}
	if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "nobody@example.com") {
		t.Errorf("payment of an unknown customer not logged as an error naming the email: %q", line)
	}

	// A payment of a known customer stays an information.
	known := b.activate("msg_pay_known", store.Pro, "", now)
	known.typ = "payment.succeeded"
	wantHook(t, b.post(known), "recorded", false)
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "msg_pay_known") && !strings.Contains(l, "level=INFO") {
			t.Errorf("payment of a known customer logged as %q, want INFO", l)
		}
	}
}

func TestWebhookCancelledAndPayments(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	id := b.ids[store.Pro]

	pay := b.activate("msg_pay", store.Pro, "ENTERPRISE", now.Add(-time.Minute))
	pay.typ = "payment.succeeded"
	if res := wantHook(t, b.post(pay), "recorded", false); *res.CustomerID != id {
		t.Errorf("payment result %+v", res)
	}
	other := b.activate("msg_refund", store.Pro, "STARTER", now.Add(-time.Minute))
	other.typ = "refund.succeeded"
	wantHook(t, b.post(other), "recorded", false)
	if tier := b.tierOf(id); tier != store.Pro {
		t.Errorf("tier = %s after payment and unknown events, want PRO", tier)
	}

	cancelled := b.activate("msg_cancel", store.Pro, "ENTERPRISE", now) // metadata tier ignored
	cancelled.typ = "subscription.cancelled"
	res := wantHook(t, b.post(cancelled), "applied", false)
	if *res.Tier != "STARTER" || *res.PreviousTier != "PRO" {
		t.Errorf("cancellation result %+v", res)
	}
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("tier = %s after cancellation, want STARTER", tier)
	}
	wantError(t, b.get(store.Pro, "/v1/markets?coin=ETH"), http.StatusForbidden, "TIER_ACCESS_DENIED")
}

func TestWebhookNeedsNoAPIKey(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	r := b.get("", "/openapi.json")
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	op, ok := doc.Paths["/v1/webhook/dodo"]["post"]
	if !ok {
		t.Fatal("/v1/webhook/dodo is not in the OpenAPI document")
	}
	if len(op.Security) != 0 {
		t.Errorf("webhook security = %v, want none", op.Security)
	}
	if _, ok := doc.Paths["/v1/account"]["get"]; !ok {
		t.Error("/v1/account is not in the OpenAPI document")
	}
}

// TestWebhookOnPostgres runs a delivery, its redelivery and a late older
// event against the Postgres store.
func TestWebhookOnPostgres(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t, func(o *setupOpts) { o.store = pgtest.NewStore(t) })
	id := b.ids[store.Starter]
	e := b.activate("msg_pg", store.Starter, "PRO", now.Add(-time.Minute))
	wantHook(t, b.post(e), "applied", false)
	wantHook(t, b.post(e), "applied", true)
	old := b.activate("msg_pg_old", store.Starter, "SUITE", now.Add(-time.Hour))
	wantHook(t, b.post(old), "stale", false)
	if tier := b.tierOf(id); tier != store.Pro {
		t.Errorf("tier = %s, want PRO", tier)
	}
	if r := b.get(store.Starter, "/v1/account"); r.status != http.StatusOK || r.header.Get("X-Tier") != "PRO" {
		t.Errorf("account after the upgrade: %d, X-Tier %q", r.status, r.header.Get("X-Tier"))
	}
	rec, err := b.store.GetBillingEvent(context.Background(), "msg_pg")
	if err != nil || !bytes.Equal(rec.Payload, e.body()) || rec.CustomerID != id {
		t.Errorf("recorded %+v, %v", rec, err)
	}
}

// TestWebhookFromTheFuture refuses an event whose timestamp is later than
// its delivery was signed (beyond the clocks' 5 minutes): applied, it
// would have made every real event of the customer stale until then.
func TestWebhookFromTheFuture(t *testing.T) {
	t.Parallel()
	b, _ := hookSetup(t)
	id := b.ids[store.Starter]
	future := b.activate("msg_future", store.Starter, "ENTERPRISE", now.Add(365*24*time.Hour))
	e := wantError(t, b.post(future), http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "timestamp" {
		t.Errorf("error %v, want details.field timestamp", e)
	}
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("tier = %s after an event from the future, want STARTER", tier)
	}
	// A real event after it applies; so does one a few minutes ahead of
	// the signer's clock.
	wantHook(t, b.post(b.activate("msg_now", store.Starter, "PRO", now.Add(-time.Minute))), "applied", false)
	wantHook(t, b.post(b.activate("msg_skewed", store.Starter, "ENTERPRISE", now.Add(4*time.Minute))), "applied", false)
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Errorf("tier = %s, want ENTERPRISE", tier)
	}
}

// TestWebhookUnknownTypes: event kinds the billing provider sends beside
// SPEC 6's three (an expiry, a plan change, a subscription on hold, a
// refund) are answered 200 and recorded, change no tier whatever their
// metadata.tier says, and are logged as warnings naming the type, so that
// an operator sees a customer whose plan may need changing by hand.
func TestWebhookUnknownTypes(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	id := b.ids[store.Pro]
	for i, typ := range []string{"subscription.expired", "subscription.plan_changed", "subscription.on_hold", "subscription.updated", "refund.succeeded"} {
		e := b.activate(fmt.Sprintf("msg_unknown_%d", i), store.Pro, "ENTERPRISE", now.Add(-time.Minute))
		e.typ = typ
		if typ == "subscription.expired" {
			e.tier = "STARTER"
		}
		wantHook(t, b.post(e), "recorded", false)
		if tier := b.tierOf(id); tier != store.Pro {
			t.Fatalf("tier = %s after %s, want PRO unchanged", tier, typ)
		}
		found := false
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "webhook_id="+e.id+" ") {
				found = true
				if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "type="+typ) || !strings.Contains(l, "does not handle") {
					t.Errorf("%s logged as %q, want a WARN naming the type as not handled", typ, l)
				}
			}
		}
		if !found {
			t.Errorf("%s: nothing logged for webhook %s", typ, e.id)
		}
	}
}

// TestWebhookCheapPlanInACustomersName: payment providers do not verify
// email ownership, so anyone who knows a customer's email can buy the
// cheapest plan in their name, and the activation finds the customer by
// that email. It must not take away the plan the customer still pays
// for, nor must that subscription's cancellation; the customer's own
// cancellation still ends their plan.
func TestWebhookCheapPlanInACustomersName(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	id := b.ids[store.Enterprise]
	event := func(webhookID, typ, sub, tier string, at time.Time, byEmail bool) hookEvent {
		e := b.activate(webhookID, store.Enterprise, tier, at)
		e.typ, e.sub = typ, sub
		if byEmail {
			e.customerID = ""
		}
		return e
	}
	t1, t2, t3, t4 := now.Add(-40*time.Minute), now.Add(-30*time.Minute), now.Add(-20*time.Minute), now.Add(-10*time.Minute)
	wantHook(t, b.post(event("msg_s1", "subscription.active", "sub_s1", "ENTERPRISE", t1, false)), "applied", false)

	res := wantHook(t, b.post(event("msg_s2", "subscription.active", "sub_s2", "PRO_TRIAL", t2, true)), "superseded", false)
	if res.CustomerID == nil || *res.CustomerID != id || res.PreviousTier != nil {
		t.Errorf("the cheap plan's activation: %+v", res)
	}
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Fatalf("tier = %s after a cheap plan was bought in the customer's name, want ENTERPRISE", tier)
	}
	if r := b.get(store.Enterprise, "/v1/account"); r.status != http.StatusOK || r.header.Get("X-Tier") != "ENTERPRISE" {
		t.Errorf("account after the cheap plan: %d, X-Tier %q", r.status, r.header.Get("X-Tier"))
	}
	var line string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "webhook_id=msg_s2 ") {
			line = l
		}
	}
	if !strings.Contains(line, "outcome=superseded") {
		t.Errorf("the cheap plan's activation logged as %q, want outcome=superseded", line)
	}

	wantHook(t, b.post(event("msg_s2_cancelled", "subscription.cancelled", "sub_s2", "", t3, true)), "superseded", false)
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Fatalf("tier = %s after the cheap plan was cancelled, want ENTERPRISE", tier)
	}
	res = wantHook(t, b.post(event("msg_s1_cancelled", "subscription.cancelled", "sub_s1", "", t4, false)), "applied", false)
	if *res.PreviousTier != "ENTERPRISE" || b.tierOf(id) != store.Starter {
		t.Errorf("the customer's own cancellation: %+v, tier %s; want STARTER", res, b.tierOf(id))
	}
}

// TestWebhookCancelFallsBackToLiveSubscription: a customer with two
// subscriptions keeps the higher plan while both are live, and cancelling
// one leaves the other's plan, not STARTER: a downgrade bought as a new
// subscription takes hold when the dearer one ends, and an upgrade
// cancelled falls back to the plan still paid for.
func TestWebhookCancelFallsBackToLiveSubscription(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t)
	id := b.ids[store.Starter]
	event := func(webhookID, typ, sub, tier string, minutes int) hookEvent {
		e := b.activate(webhookID, store.Starter, tier, now.Add(time.Duration(minutes-60)*time.Minute))
		e.typ, e.sub = typ, sub
		return e
	}
	steps := []struct {
		e        hookEvent
		outcome  string
		wantTier store.Tier
	}{
		{event("msg_ent", "subscription.active", "sub_ent", "ENTERPRISE", 1), "applied", store.Enterprise},
		// A downgrade bought beside the dearer plan: the dearer one holds.
		{event("msg_pro", "subscription.active", "sub_pro", "PRO", 2), "superseded", store.Enterprise},
		// It ends: the plan still paid for takes over.
		{event("msg_ent_cancelled", "subscription.cancelled", "sub_ent", "", 3), "applied", store.Pro},
		// An upgrade beside it applies, and when it ends, PRO is back.
		{event("msg_ent2", "subscription.active", "sub_ent2", "ENTERPRISE", 4), "applied", store.Enterprise},
		{event("msg_ent2_cancelled", "subscription.cancelled", "sub_ent2", "", 5), "applied", store.Pro},
		// SUITE and PRO_TRIAL allow less than PRO does (no replay, no
		// exchange data): bought beside it, they do not replace it.
		{event("msg_suite", "subscription.active", "sub_suite", "SUITE", 6), "superseded", store.Pro},
		// A plan change of the current subscription applies as ever.
		{event("msg_pro_trial", "subscription.active", "sub_pro", "PRO_TRIAL", 7), "applied", store.ProTrial},
		// Its cancellation leaves the live SUITE.
		{event("msg_pro_cancelled", "subscription.cancelled", "sub_pro", "", 8), "applied", store.Suite},
		{event("msg_suite_cancelled", "subscription.cancelled", "sub_suite", "", 9), "applied", store.Starter},
	}
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	for _, s := range steps {
		res := wantHook(t, b.post(s.e), s.outcome, false)
		if tier := b.tierOf(id); tier != s.wantTier {
			t.Fatalf("after %s: tier = %s, want %s", s.e.id, tier, s.wantTier)
		}
		// The answer tells the tier the customer now has, not the one the
		// event asked for (STARTER, for a cancellation), which it names
		// as requested_tier.
		asked := s.e.tier
		if s.e.typ == "subscription.cancelled" {
			asked = "STARTER"
		}
		if str(res.RequestedTier) != asked {
			t.Errorf("%s answered requested_tier %s, want %s", s.e.id, str(res.RequestedTier), asked)
		}
		if s.outcome == "applied" && str(res.Tier) != string(s.wantTier) {
			t.Errorf("%s answered tier %s, but the customer is now %s", s.e.id, str(res.Tier), s.wantTier)
		}
		// A redelivery answers the first delivery's result.
		if s.outcome == "applied" && s.e.typ == "subscription.cancelled" {
			if again := wantHook(t, b.post(s.e), s.outcome, true); str(again.Tier) != str(res.Tier) || str(again.RequestedTier) != asked {
				t.Errorf("%s redelivered answered tier %s, requested_tier %s; want %s, %s", s.e.id, str(again.Tier), str(again.RequestedTier), str(res.Tier), asked)
			}
		}
	}
	if !strings.Contains(logs.String(), "new_tier=PRO\n") {
		t.Errorf("the fallback to the live subscription's plan not logged with its new tier:\n%s", logs)
	}
}

// TestWebhookProductTiers: with product ids mapped to tiers
// (BILLING_PRODUCT_TIERS), an activation's tier is its product's, whatever
// its metadata.tier says (logged when it disagrees), and a product not in
// the map is unknown_tier, logged as an error naming it. Cancellations
// need no product.
func TestWebhookProductTiers(t *testing.T) {
	t.Parallel()
	b, logs := hookSetup(t, func(o *setupOpts) {
		o.productTiers = map[string]store.Tier{"pdt_pro": store.Pro, "pdt_ent": store.Enterprise}
	})
	id := b.ids[store.Starter]
	event := func(webhookID, product, tier string, minutes int) hookEvent {
		e := b.activate(webhookID, store.Starter, tier, now.Add(time.Duration(minutes-60)*time.Minute))
		e.product = product
		return e
	}
	logLine := func(webhookID, has string) string {
		t.Helper()
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "webhook_id="+webhookID+" ") && strings.Contains(l, has) {
				return l
			}
		}
		t.Errorf("no log line of %s with %q:\n%s", webhookID, has, logs)
		return ""
	}

	res := wantHook(t, b.post(event("msg_pro", "pdt_pro", "ENTERPRISE", 1)), "applied", false)
	if *res.Tier != "PRO" || b.tierOf(id) != store.Pro {
		t.Errorf("the PRO product with metadata.tier ENTERPRISE: %+v, tier %s; want PRO", res, b.tierOf(id))
	}
	if l := logLine("msg_pro", "metadata.tier ignored"); l != "" && (!strings.Contains(l, "level=WARN") || !strings.Contains(l, "product_id=pdt_pro")) {
		t.Errorf("the disagreeing metadata.tier logged as %q, want a WARN naming the product", l)
	}

	res = wantHook(t, b.post(event("msg_other", "pdt_other", "ENTERPRISE", 2)), "unknown_tier", false)
	if res.Tier != nil || b.tierOf(id) != store.Pro {
		t.Errorf("a product not mapped: %+v, tier %s; want PRO unchanged", res, b.tierOf(id))
	}
	if l := logLine("msg_other", "BILLING_PRODUCT_TIERS"); l != "" && (!strings.Contains(l, "level=ERROR") || !strings.Contains(l, "product_id=pdt_other")) {
		t.Errorf("the product not mapped logged as %q, want an ERROR naming it", l)
	}

	wantHook(t, b.post(event("msg_ent", "pdt_ent", "", 3)), "applied", false)
	if tier := b.tierOf(id); tier != store.Enterprise {
		t.Errorf("the ENTERPRISE product without metadata.tier: tier %s, want ENTERPRISE", tier)
	}
	cancelled := event("msg_cancel", "pdt_other", "", 4)
	cancelled.typ = "subscription.cancelled"
	wantHook(t, b.post(cancelled), "applied", false)
	if tier := b.tierOf(id); tier != store.Starter {
		t.Errorf("after the cancellation: tier %s, want STARTER", tier)
	}

	for _, bad := range []map[string]store.Tier{{"pdt_x": "GOLD"}, {"": store.Pro}, {" pdt_x": store.Pro}} {
		if _, err := api.New(api.Config{Store: memory.New(), WebhookSecret: hookSecret, BillingProductTiers: bad}); err == nil {
			t.Errorf("api.New with product tiers %q: no error", bad)
		}
	}
}

// TestWebhookTimestampISOForms: the payload's timestamp is ISO 8601 (SPEC
// 6), and every ISO 8601 date-time form the API's own time parameters take
// (no zone, meaning UTC; an offset without its colon; a space between the
// date and the time) is read as the instant it names, so that the
// activation it carries is applied rather than answered 400 at every retry
// of the provider. A date alone, or text, is still 400 naming the field.
func TestWebhookTimestampISOForms(t *testing.T) {
	t.Parallel()
	at := now.Add(-time.Hour)
	plus2 := time.FixedZone("", 2*60*60)
	for _, tc := range []struct {
		name, timestamp string
		want            time.Time // zero: refused
	}{
		{"RFC 3339", at.Format(time.RFC3339), at},
		{"no zone", at.Format("2006-01-02T15:04:05"), at},
		{"no zone, fraction", at.Add(250 * time.Millisecond).Format("2006-01-02T15:04:05.000"), at.Add(250 * time.Millisecond)},
		{"offset without colon", at.In(plus2).Format("2006-01-02T15:04:05-0700"), at},
		{"UTC as +0000", at.Format("2006-01-02T15:04:05.000000-0700"), at},
		{"space between date and time", at.Format("2006-01-02 15:04:05Z07:00"), at},
		{"date alone", at.Format("2006-01-02"), time.Time{}},
		{"not a time", "yesterday noon", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := hookSetup(t)
			id := b.ids[store.Starter]
			ev := b.activate("msg_ts", store.Starter, "PRO", at)
			var payload map[string]any
			if err := json.Unmarshal(ev.body(), &payload); err != nil {
				t.Fatal(err)
			}
			payload["timestamp"] = tc.timestamp
			body, err := json.Marshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			r := b.deliver(signed(t, hookSecret, ev.id, now, body))
			if tc.want.IsZero() {
				e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
				if d, _ := e["details"].(map[string]any); d["field"] != "timestamp" {
					t.Errorf("error %v, want details.field timestamp", e)
				}
				if tier := b.tierOf(id); tier != store.Starter {
					t.Errorf("tier = %s after a refused event, want STARTER", tier)
				}
				return
			}
			wantHook(t, r, "applied", false)
			if tier := b.tierOf(id); tier != store.Pro {
				t.Errorf("tier = %s, want PRO", tier)
			}
			rec, err := b.store.GetBillingEvent(context.Background(), ev.id)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.OccurredAt.Equal(tc.want) {
				t.Errorf("recorded occurred_at %v, want %v", rec.OccurredAt, tc.want)
			}
		})
	}
}
