package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Billing webhooks (SPEC 3.2, 6; DESIGN 4): the billing provider (Dodo
// Payments) posts subscription and payment events to /v1/webhook/dodo,
// signed the Standard Webhooks way (REFERENCE.md).
//
// The raw body is verified before it is parsed, and the event is recorded
// and applied in one atomic store step (store.BillingStore) keyed by the
// webhook-id, so redeliveries and out-of-order events are harmless. Events
// that cannot be acted on (unknown customer or tier, stale, unknown type)
// are recorded and answered 200, so that the provider stops retrying; the
// ones that need a person are logged as errors.

// DevWebhookSecret is the webhook secret `updown dev` uses when
// WEBHOOK_SECRET is not set. It is public: never use it in production.
const DevWebhookSecret = "whsec_dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDA="

// webhookTolerance is how far webhook-timestamp may be from the server's
// clock, either way, before a delivery is refused as a replay.
const webhookTolerance = 5 * time.Minute

// tellTimeout bounds telling the other api processes (through Redis) of
// a change already stored, which runs on when the client hangs up.
const tellTimeout = 10 * time.Second

// maxWebhookIDLen bounds the webhook-id kept as the idempotency key.
const maxWebhookIDLen = 256

// webhookSecretPrefix starts a Standard Webhooks secret.
const webhookSecretPrefix = "whsec_"

// Billing event types of SPEC 6.
const (
	eventSubscriptionActive    = "subscription.active"
	eventSubscriptionCancelled = "subscription.cancelled"
	eventPaymentSucceeded      = "payment.succeeded"
)

// webhookKey decodes a Standard Webhooks secret ("whsec_" and the base64
// of the key bytes) into the HMAC key.
func webhookKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, webhookSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("must start with %q", webhookSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil {
		return nil, fmt.Errorf("the part after %q is not base64: %w", webhookSecretPrefix, err)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("the key after %q is %d bytes, want at least 16", webhookSecretPrefix, len(key))
	}
	return key, nil
}

// eventBeforeDelivery refuses an event that says it happened after its
// delivery was signed (as verifyWebhook read it), beyond the clocks'
// webhookTolerance: the timestamp orders a
// customer's events, so one from the future would make every real event
// after it stale until that time.
func eventBeforeDelivery(ev billingEvent, signed time.Time) error {
	if ev.OccurredAt.After(signed.Add(webhookTolerance)) {
		return Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field timestamp %s is later than the delivery was signed (%s): an event cannot come from the future",
			ev.OccurredAt.Format(time.RFC3339), signed.UTC().Format(time.RFC3339)).With("field", "timestamp")
	}
	return nil
}

// webhookSignature is the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}".
func webhookSignature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignWebhook returns the webhook-signature header value ("v1,<base64>")
// the billing provider would send with body under secret, for tools and
// tests that play the provider.
func SignWebhook(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + webhookSignature(key, id, strconv.FormatInt(timestamp.Unix(), 10), body), nil
}

// verifyWebhook checks a delivery's Standard Webhooks signature: the
// headers are present, webhook-timestamp is within webhookTolerance of now
// either way, and one of the space-separated "v1,<base64>" entries of
// signatures is the HMAC of the raw body (entries of other versions, such
// as "v1a,", are skipped). Signatures are compared in constant time. It
// returns when the delivery was signed.
func verifyWebhook(key []byte, id, timestamp, signatures string, body []byte, now time.Time) (signed time.Time, err error) {
	var missing []string
	for _, h := range []struct{ name, value string }{
		{"webhook-id", id}, {"webhook-timestamp", timestamp}, {"webhook-signature", signatures},
	} {
		if h.value == "" {
			missing = append(missing, h.name)
		}
	}
	if len(missing) > 0 {
		return time.Time{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "unsigned webhook: missing header(s) %s", strings.Join(missing, ", "))
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return time.Time{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "webhook-timestamp must be integer unix seconds")
	}
	sent := time.Unix(sec, 0)
	if d := now.Sub(sent); d > webhookTolerance || d < -webhookTolerance {
		return time.Time{}, Errorf(http.StatusUnauthorized, CodeUnauthorized,
			"webhook-timestamp %s is more than %s from the server's clock (%s): refused as a possible replay",
			sent.UTC().Format(time.RFC3339), webhookTolerance, now.UTC().Format(time.RFC3339))
	}
	want := []byte(webhookSignature(key, id, timestamp, body))
	for _, entry := range strings.Fields(signatures) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		if hmac.Equal([]byte(sig), want) {
			return sent, nil
		}
	}
	return time.Time{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid webhook signature: no v1 signature matches this body under the configured secret")
}

// webhookPayload is the part of SPEC 6's payload the service reads. Other
// fields, whatever their shape, are ignored (and kept in the recorded
// payload).
type webhookPayload struct {
	BusinessID string `json:"business_id"`
	Type       string `json:"type" doc:"Event kind: subscription.active, subscription.cancelled, payment.succeeded; others are recorded only."`
	Timestamp  string `json:"timestamp" format:"date-time" doc:"When the event happened (ISO 8601); orders a customer's events."`
	Data       struct {
		SubscriptionID string `json:"subscription_id"`
		Status         string `json:"status"`
		ProductID      string `json:"product_id" doc:"Decides subscription.active's tier when the server maps product ids to tiers (BILLING_PRODUCT_TIERS); otherwise recorded only."`
		Customer       struct {
			Email string `json:"email" doc:"Finds the customer when metadata.updown_customer_id does not."`
			Name  string `json:"name"`
		} `json:"customer"`
		Metadata struct {
			CustomerID string `json:"updown_customer_id" doc:"The updown customer id."`
			Tier       string `json:"tier" doc:"Target tier of subscription.active: STARTER, PRO, PRO_TRIAL, SUITE or ENTERPRISE (any case; the plan names Pro Trial or pro-trial as well); ignored when the server maps product ids to tiers."`
		} `json:"metadata"`
		NextBillingDate string `json:"next_billing_date"`
	} `json:"data"`
}

// billingEvent is a verified delivery, parsed.
type billingEvent struct {
	Type           string
	OccurredAt     time.Time
	SubscriptionID string
	CustomerRef    string
	Email          string
	SetTier        bool
	// EndsSubscription: subscription.cancelled, which takes back only the
	// tier its own subscription set (store.BillingSuperseded).
	EndsSubscription bool
	Tier             store.Tier // upper-cased as sent; may be unknown
	// ProductID is data.product_id, as sent but for spaces around it.
	ProductID string
}

// parseWebhookPayload reads a billing event from a verified body. A body
// that is not a JSON object, lacks type or timestamp, has a timestamp that
// is not ISO 8601, or carries a field the service reads in the wrong shape
// (or with a NUL character) is 400 VALIDATION_ERROR.
func parseWebhookPayload(body []byte) (billingEvent, error) {
	var ev billingEvent
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "the webhook body is empty: want the event as a JSON object")
	}
	if trimmed[0] != '{' {
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "the webhook body must be a JSON object")
	}
	var p webhookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field %s must be %s, not a JSON %s", te.Field, replay.WithArticle(replay.JSONKind(te.Type)), te.Value).With("field", te.Field)
		}
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "the webhook body is not valid JSON: %s", err.Error())
	}
	for _, f := range []struct{ name, value string }{
		{"type", p.Type}, {"timestamp", p.Timestamp}, {"data.subscription_id", p.Data.SubscriptionID}, {"data.product_id", p.Data.ProductID},
		{"data.customer.email", p.Data.Customer.Email}, {"data.metadata.updown_customer_id", p.Data.Metadata.CustomerID},
		{"data.metadata.tier", p.Data.Metadata.Tier},
	} {
		// Decoded strings are valid UTF-8 (encoding/json replaces bad
		// bytes), but \u0000 decodes to a NUL no database text can hold.
		if strings.ContainsRune(f.value, 0) {
			return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field %s holds a NUL character", f.name).With("field", f.name)
		}
	}
	ev.Type = strings.TrimSpace(p.Type)
	if ev.Type == "" {
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field type is missing").With("field", "type")
	}
	if p.Timestamp == "" {
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field timestamp is missing").With("field", "timestamp")
	}
	t, ok := parseEventTime(p.Timestamp)
	if !ok {
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field timestamp %s is not an ISO 8601 date-time (e.g. 2026-04-29T13:07:30Z)", quoteID(p.Timestamp)).With("field", "timestamp")
	}
	if t.IsZero() {
		// It parses, but the store takes the zero time for "none" and
		// refuses the event: that must be the sender's 400, not a 500.
		return ev, Errorf(http.StatusBadRequest, CodeValidation, "webhook payload field timestamp %s is the zero time, not when an event happened", quoteID(p.Timestamp)).With("field", "timestamp")
	}
	ev.OccurredAt = t.UTC()
	ev.SubscriptionID = strings.TrimSpace(p.Data.SubscriptionID)
	ev.CustomerRef = customerRef(p.Data.Metadata.CustomerID)
	ev.Email = strings.TrimSpace(p.Data.Customer.Email)
	ev.ProductID = strings.TrimSpace(p.Data.ProductID)
	ev.Tier = tierOfName(p.Data.Metadata.Tier)
	kind := eventKindOf(ev.Type)
	ev.SetTier, ev.EndsSubscription = kind.setsTier, kind.endsSubscription
	if kind.endsSubscription {
		ev.Tier = store.Starter
	}
	return ev, nil
}

// parseEventTime reads a payload's timestamp, an ISO 8601 date-time (SPEC
// 6) in any of the forms the API's own time parameters take (isoLayouts):
// RFC 3339, an offset without its colon (+0000) or its minutes, no zone
// (UTC), the date and time parted by a space or a small t, UTC a small z.
// A date alone is not a date-time: it cannot order a customer's events.
// Refused, a valid event would be answered 400 and the provider's retries
// would all fail alike, so that the tier change it carries is never made.
func parseEventTime(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if len(v) <= len("2006-01-02") {
		return time.Time{}, false
	}
	if v[10] == ' ' || v[10] == 't' {
		v = v[:10] + "T" + v[11:]
	}
	if strings.HasSuffix(v, "z") {
		v = v[:len(v)-1] + "Z"
	}
	return parseISO(v)
}

// tierOfName is the tier metadata.tier names: its wire name (PRO_TRIAL)
// or the plan's name as SPEC 1 writes it ("Pro Trial"), in any case, the
// words parted by white space (a pasted newline too), hyphens or
// underscores. A name the operator put on a product as the plan is called
// must not leave the customer who paid for it on STARTER as an unknown
// tier.
func tierOfName(name string) store.Tier {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return unicode.IsSpace(r) || r == '-' || r == '_' })
	return store.Tier(strings.Join(words, "_"))
}

// customerRef is data.metadata.updown_customer_id as the stores look
// customers up: a UUID in any form RFC 9562 reads (upper case, braces,
// a urn:uuid: prefix) in its canonical one, the form customer ids are
// stored in, so that the id finds its customer rather than fall back to
// the email, which may be another customer's; anything else as sent, but
// for spaces around it.
func customerRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if u, err := uuid.Parse(ref); err == nil {
		return u.String()
	}
	return ref
}

type webhookInput struct {
	ContentType string `header:"Content-Type"`
	ID          string `header:"webhook-id" doc:"Unique delivery id; the idempotency key (a redelivery is acknowledged and not applied twice)."`
	Timestamp   string `header:"webhook-timestamp" doc:"Unix seconds when the delivery was signed; refused beyond 5 minutes either way."`
	Signature   string `header:"webhook-signature" doc:"Space-separated v1,<base64 HMAC-SHA256> signatures (Standard Webhooks)."`
	RawBody     []byte
}

// webhookResult says what a delivery did.
type webhookResult struct {
	ID           string  `json:"id" doc:"The webhook-id."`
	Type         string  `json:"type"`
	Outcome      string  `json:"outcome" enum:"applied,recorded,stale,superseded,unknown_customer,unknown_tier" doc:"applied: the tier was set; recorded: nothing to apply; stale: a later event, or a setting of the tier by hand since, already set the tier; superseded: an event of a subscription other than the customer's current one (a cancellation of a subscription replaced by a newer one; after the tier was set by hand, any cancellation, and the activation of a subscription the customer had before; the activation of a new subscription at a lower tier than the customer's while a subscription of a higher tier is still live, activated and not cancelled, so that a cheap plan bought in a customer's name does not take away the one they pay for), nothing changed; unknown_customer, unknown_tier: recorded, nothing changed."`
	Duplicate    bool    `json:"duplicate" doc:"True when this webhook-id was received before; the first delivery's result is answered and nothing is applied again."`
	CustomerID   *string `json:"customer_id" nullable:"true"`
	Tier         *string `json:"tier" nullable:"true" doc:"applied: the customer's tier now, after the change; for a subscription.cancelled that leaves the customer on another live subscription, that subscription's tier, not the one the event asked for (requested_tier). Null on a redelivery of an event applied before the service kept the tier an event set (schema version 20). Any other outcome: nothing changed, and this is the tier the event asked for, as requested_tier."`
	PreviousTier *string `json:"previous_tier" nullable:"true" doc:"The customer's tier before an applied change."`
	// RequestedTier is the tier the event asked for, which tier answered
	// before it told the tier an applied event set.
	RequestedTier *string `json:"requested_tier" nullable:"true" doc:"The tier the event asked for (STARTER for a cancellation), whatever it did; null when the event names none or an unknown one."`
}

type webhookBody struct {
	Success   bool          `json:"success"`
	Data      webhookResult `json:"data"`
	Timestamp string        `json:"timestamp" format:"date-time"`
}

type webhookOutput struct{ Body webhookBody }

// registerBilling registers the billing webhook and GET /v1/account, and
// builds the rate limiter the authentication middleware uses. A
// malformed Config.WebhookSecret is an error: a process must not start
// with a secret that can verify nothing.
func (s *Server) registerBilling() error {
	if s.cfg.WebhookSecret != "" {
		if err := CheckWebhookSecret(s.cfg.WebhookSecret); err != nil {
			return fmt.Errorf("api: webhook secret: %w", err)
		}
	}
	for product, tier := range s.cfg.BillingProductTiers {
		if strings.TrimSpace(product) != product || product == "" || !tier.Valid() {
			return fmt.Errorf("api: billing product tiers: product %q to tier %q: want a product id, without spaces around it, to one of STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE", product, tier)
		}
	}
	if s.cfg.Redis != nil {
		s.limiter, s.auth = newRateLimiter(s.cfg.Redis, s.cfg.RedisTimeout), newAuthCache()
	}
	payloadSchema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[webhookPayload](), true, "BillingWebhookPayload")
	huma.Register(s.api, huma.Operation{
		OperationID: "billing-webhook",
		Method:      http.MethodPost,
		Path:        "/v1/webhook/dodo",
		Summary:     "Receive a billing event (Dodo Payments)",
		Description: "Called by the billing provider, not by API clients: no X-API-Key. Deliveries are verified with the Standard Webhooks signature " +
			"(webhook-id, webhook-timestamp, webhook-signature) over the raw body. subscription.active sets the customer's tier from data.metadata.tier (or, when the operator maps product ids to tiers, BILLING_PRODUCT_TIERS, from data.product_id), " +
			"subscription.cancelled sets STARTER, or the highest tier among the customer's other live (activated, not cancelled) subscriptions (unless the customer's tier came from a newer subscription than the one cancelled, or was set by hand since the subscription began: superseded); the activation of a new subscription at a lower tier than the customer's while a subscription of a higher tier is live is superseded, payment.succeeded and other types are recorded only. " +
			"A tier set by hand (`updown customers set-tier`) stays until a new subscription's activation, another setting by hand, or `set-tier --billing`, which hands it back to the customer's billing events. The customer is found by " +
			"data.metadata.updown_customer_id, else by data.customer.email. A tier change holds for the customer's next request in every api process " +
			"and starts their rate-limit windows afresh; a change to a plan without sweeps cancels the customer's running sweeps. Every verified event is recorded and answered 200, even one that changes nothing, so that " +
			"the provider stops retrying; 503 when no webhook secret is configured.",
		Tags:        []string{"Billing"},
		RequestBody: jsonBody(payloadSchema),
		Errors:      []int{400, 401, 413, 415, 500, 503},
		// The handler verifies the raw bytes before anything reads them.
		SkipValidateBody: true,
		// Huma bounds only operations with a Body field by default; without
		// this the outer limit would surface as a 500, not a 413.
		MaxBodyBytes: maxBodyBytes,
	}, s.billingWebhook)
	s.registerAccount()
	return nil
}

func (s *Server) billingWebhook(ctx context.Context, in *webhookInput) (*webhookOutput, error) {
	if s.cfg.WebhookSecret == "" {
		s.log.ErrorContext(ctx, "billing webhook refused: no webhook secret is configured (set WEBHOOK_SECRET); the provider will retry",
			"request_id", RequestID(ctx), "webhook_id", in.ID[:min(len(in.ID), 64)])
		return nil, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "billing webhooks are not configured on this server: no webhook secret is set")
	}
	key, err := webhookKey(s.cfg.WebhookSecret)
	if err != nil { // checked in New; kept for safety
		return nil, s.internal(ctx, "decode webhook secret", err)
	}
	signed, err := verifyWebhook(key, in.ID, in.Timestamp, in.Signature, in.RawBody, s.now())
	if err != nil {
		// The id is unverified here: log no more than a short prefix of it.
		s.log.WarnContext(ctx, "billing webhook refused", "request_id", RequestID(ctx), "webhook_id", in.ID[:min(len(in.ID), 64)], "err", err)
		return nil, err
	}
	if len(in.ID) > maxWebhookIDLen || strings.ContainsFunc(in.ID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return nil, Errorf(http.StatusBadRequest, CodeValidation, "webhook-id must be at most %d printable ASCII characters", maxWebhookIDLen)
	}
	if err := requireJSON(in.ContentType); err != nil {
		return nil, err
	}
	ev, err := parseWebhookPayload(in.RawBody)
	if err == nil {
		err = eventBeforeDelivery(ev, signed)
	}
	if err != nil {
		s.log.WarnContext(ctx, "billing webhook payload refused", "request_id", RequestID(ctx), "webhook_id", in.ID, "err", err)
		return nil, err
	}
	ev.Tier = s.tierOfProduct(ctx, in.ID, ev)
	rec, dup, err := s.store.RecordBillingEvent(ctx, store.BillingEvent{
		ID: in.ID, Type: ev.Type, OccurredAt: ev.OccurredAt, SubscriptionID: ev.SubscriptionID,
		CustomerRef: ev.CustomerRef, Email: ev.Email, SetTier: ev.SetTier, EndsSubscription: ev.EndsSubscription, Tier: ev.Tier, Payload: in.RawBody,
	})
	if err != nil {
		return nil, s.storeFailure(ctx, "record billing event", err)
	}
	s.logBillingEvent(ctx, rec, dup)
	if rec.Outcome == store.BillingApplied && rec.PreviousTier != rec.NewTier {
		s.afterTierChange(ctx, rec, dup)
	}
	return &webhookOutput{Body: webhookBody{Success: true, Data: webhookResultOf(rec, dup), Timestamp: formatTime(s.now())}}, nil
}

// afterTierChange makes a stored tier change hold everywhere: every api
// process serves the new plan at the customer's next request, with its
// rate-limit counters started afresh, and the customer's running sweeps
// the new plan could not have started are cancelled. A redelivery (dup)
// of an applied event does it again, all but the counters: the first
// delivery may have been stored and then not answered (a connection cut
// as it committed, a process stopped right after), and its retry is the
// only delivery left to finish it; both steps are idempotent, while
// clearing the counters again would also wipe what the customer spent
// since the change.
//
// Not the request's context: the provider hanging up once the change is
// stored must not leave it half done (a provider may not retry a
// delivery it saw answered, or only hours later); bounded all the same.
func (s *Server) afterTierChange(ctx context.Context, rec store.BillingEvent, dup bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
	var err error
	if dup {
		if s.limiter != nil {
			err = InvalidateCustomer(rctx, s.limiter.rdb, rec.CustomerID)
		}
	} else {
		err = s.resetRateLimits(rctx, rec.CustomerID)
	}
	cancel()
	if err != nil {
		// The new tier's counters are fresh anyway (keys name the tier).
		s.log.WarnContext(ctx, "billing webhook: could not clear rate-limit state after a tier change",
			"request_id", RequestID(ctx), "customer_id", rec.CustomerID, "err", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	n, err := s.stopSweepsOffPlan(sctx, rec.CustomerID)
	cancel()
	if err != nil {
		// Recorded and applied all the same; the provider must not retry.
		s.log.ErrorContext(ctx, "billing webhook: could not cancel the sweeps of a customer whose new plan does not allow them; cancel them by hand",
			"request_id", RequestID(ctx), "customer_id", rec.CustomerID, "tier", string(rec.NewTier), "err", err)
	} else if n > 0 {
		s.log.InfoContext(ctx, "billing webhook: cancelled the sweeps of a customer whose new plan does not allow them",
			"request_id", RequestID(ctx), "customer_id", rec.CustomerID, "tier", string(rec.NewTier), "sweeps", n, "redelivery", dup)
	}
}

// tierOfProduct is the tier an activation asks for: with
// Config.BillingProductTiers set, its product's ("" for a product not in
// it: unknown_tier), whatever its metadata.tier says, since anyone can
// set that (a checkout link's metadata is the buyer's to change); without
// it, ev.Tier, metadata.tier's.
func (s *Server) tierOfProduct(ctx context.Context, webhookID string, ev billingEvent) store.Tier {
	if len(s.cfg.BillingProductTiers) == 0 || !ev.SetTier || ev.EndsSubscription {
		return ev.Tier
	}
	tier, ok := s.cfg.BillingProductTiers[ev.ProductID]
	if !ok {
		s.log.ErrorContext(ctx, "billing event's product is not in BILLING_PRODUCT_TIERS: its tier is unknown; map the product to a tier",
			"request_id", RequestID(ctx), "webhook_id", webhookID, "product_id", ev.ProductID, "metadata_tier", string(ev.Tier))
		return ""
	}
	if ev.Tier != "" && ev.Tier != tier {
		s.log.WarnContext(ctx, "billing event's metadata.tier disagrees with its product's tier (BILLING_PRODUCT_TIERS): metadata.tier ignored",
			"request_id", RequestID(ctx), "webhook_id", webhookID, "product_id", ev.ProductID, "metadata_tier", string(ev.Tier), "tier", string(tier))
	}
	return tier
}

// logBillingEvent logs what an event did; the outcomes a person must act
// on (money taken for a customer or tier the service does not know) are
// errors.
func (s *Server) logBillingEvent(ctx context.Context, e store.BillingEvent, dup bool) {
	attrs := []any{"request_id", RequestID(ctx), "webhook_id", e.ID, "type", e.Type, "outcome", string(e.Outcome),
		"customer_id", e.CustomerID, "customer_ref", e.CustomerRef, "email", e.Email,
		"subscription_id", e.SubscriptionID, "tier", string(e.Tier), "occurred_at", e.OccurredAt}
	switch {
	case dup:
		s.log.InfoContext(ctx, "billing event redelivered: acknowledged, not applied again", attrs...)
	case !eventKindOf(e.Type).known:
		// The provider sends more kinds than SPEC 6 names (an expiry, a
		// plan change, a subscription on hold): none changes a tier here,
		// so a person must see them, not an INFO line like a payment's.
		s.log.WarnContext(ctx, "billing event of a type this service does not handle: recorded, the tier is unchanged; check whether the customer's plan needs changing by hand", attrs...)
	case e.Outcome == store.BillingApplied:
		s.log.InfoContext(ctx, "billing event applied", append(attrs, "previous_tier", string(e.PreviousTier), "new_tier", string(e.NewTier))...)
	case e.Outcome == store.BillingUnknownCustomer:
		s.log.ErrorContext(ctx, "billing event names no known customer (by metadata.updown_customer_id or email): recorded, nothing changed; fix by hand", attrs...)
	case e.Outcome == store.BillingUnknownTier:
		s.log.ErrorContext(ctx, "billing event asks for an unknown tier: recorded, nothing changed; check the product's metadata.tier, or its place in BILLING_PRODUCT_TIERS when that is set", attrs...)
	case e.Outcome == store.BillingStale:
		s.log.WarnContext(ctx, "billing event is older than the customer's last applied one, or than its tier set by hand: recorded, not applied", attrs...)
	case e.CustomerID == "" && strings.EqualFold(e.Type, eventPaymentSucceeded):
		s.log.ErrorContext(ctx, "billing payment names no known customer (by metadata.updown_customer_id or email): money was taken for no plan here; recorded, fix by hand", attrs...)
	case e.Outcome == store.BillingSuperseded:
		s.log.InfoContext(ctx, "billing event is of a subscription the customer has replaced, or had before its tier was set by hand, or activates a lower tier than one of the customer's live subscriptions: recorded, the tier stays", attrs...)
	default:
		s.log.InfoContext(ctx, "billing event recorded", attrs...)
	}
}

// eventKind is what an event of a type does: known, one of SPEC 6's
// kinds (the others are recorded only); setsTier, it sets the customer's
// tier; endsSubscription, it takes back the tier its subscription set,
// to STARTER or another live subscription's (subscription.cancelled:
// store.BillingOutcomeOf).
type eventKind struct{ known, setsTier, endsSubscription bool }

// eventKindOf is what an event of type typ (any case) does.
func eventKindOf(typ string) eventKind {
	switch strings.ToLower(typ) {
	case eventSubscriptionActive:
		return eventKind{known: true, setsTier: true}
	case eventSubscriptionCancelled:
		return eventKind{known: true, setsTier: true, endsSubscription: true}
	case eventPaymentSucceeded:
		return eventKind{known: true}
	}
	return eventKind{}
}

func webhookResultOf(e store.BillingEvent, dup bool) webhookResult {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	// An applied event answers the tier it set, not the one it asked for:
	// a cancellation that falls back to another live subscription asks
	// for STARTER and leaves the customer on that subscription's tier.
	tier := e.Tier
	if e.Outcome == store.BillingApplied {
		tier = e.NewTier // "" on a record read back that does not carry it
	}
	return webhookResult{ID: e.ID, Type: e.Type, Outcome: string(e.Outcome), Duplicate: dup,
		CustomerID: opt(e.CustomerID), Tier: opt(string(tier)), PreviousTier: opt(string(e.PreviousTier)),
		RequestedTier: opt(string(e.Tier))}
}
