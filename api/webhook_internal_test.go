package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// The Standard Webhooks reference test vector (standard-webhooks/
// standard-webhooks, libraries' tests): our signatures must match the
// provider's byte for byte.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestWebhookSignatureVector(t *testing.T) {
	key, err := webhookKey(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := "v1," + webhookSignature(key, vectorID, vectorTimestamp, []byte(vectorBody)); got != vectorSignature {
		t.Errorf("signature = %s, want %s", got, vectorSignature)
	}
	sig, err := SignWebhook(vectorSecret, vectorID, time.Unix(1614265330, 0), []byte(vectorBody))
	if err != nil || sig != vectorSignature {
		t.Errorf("SignWebhook = %s, %v; want %s", sig, err, vectorSignature)
	}
	at := time.Unix(1614265330, 0)
	for _, tc := range []struct {
		name       string
		signatures string
		now        time.Time
		ok         bool
	}{
		{"exact", vectorSignature, at, true},
		{"among others", "v1,Zm9v v1a," + vectorSignature[3:] + "  " + vectorSignature, at, true},
		{"5 minutes old", vectorSignature, at.Add(5 * time.Minute), true},
		{"5 minutes ahead", vectorSignature, at.Add(-5 * time.Minute), true},
		{"5 minutes and a second old", vectorSignature, at.Add(5*time.Minute + time.Second), false},
		{"5 minutes and a second ahead", vectorSignature, at.Add(-5*time.Minute - time.Second), false},
		{"v1a only", "v1a," + vectorSignature[3:], at, false},
		{"v2", "v2," + vectorSignature[3:], at, false},
		{"prefix of the signature", vectorSignature[:len(vectorSignature)-2], at, false},
	} {
		_, err := verifyWebhook(key, vectorID, vectorTimestamp, tc.signatures, []byte(vectorBody), tc.now)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != CodeUnauthorized) {
			t.Errorf("%s: err = %#v, want 401 UNAUTHORIZED", tc.name, err)
		}
	}
}

func TestParseWebhookPayload(t *testing.T) {
	body := `{"business_id":"bus_1","type":"subscription.active","timestamp":"2026-04-29T13:07:30.123456Z",
		"data":{"subscription_id":" sub_1 ","status":"active","product_id":"pdt_1",
		"customer":{"email":"ada@example.com","name":"Ada"},
		"metadata":{"updown_customer_id":"3f2b8c1e-7d4a-4e6b-9a1c-5d8e7f6a4b3c","tier":"pro_trial","other":{"x":1}},
		"next_billing_date":"2026-05-29T13:07:30Z","extra":[1,2,3]}}`
	ev, err := parseWebhookPayload([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := billingEvent{Type: "subscription.active", OccurredAt: time.Date(2026, 4, 29, 13, 7, 30, 123456000, time.UTC),
		SubscriptionID: "sub_1", CustomerRef: "3f2b8c1e-7d4a-4e6b-9a1c-5d8e7f6a4b3c", Email: "ada@example.com",
		SetTier: true, Tier: store.ProTrial, ProductID: "pdt_1"}
	if ev != want {
		t.Errorf("parsed %+v, want %+v", ev, want)
	}

	cancelled := strings.Replace(body, "subscription.active", "subscription.cancelled", 1)
	if ev, err := parseWebhookPayload([]byte(cancelled)); err != nil || !ev.SetTier || ev.Tier != store.Starter {
		t.Errorf("cancelled: %+v, %v; want a change to STARTER", ev, err)
	}
	paid := strings.Replace(body, "subscription.active", "payment.succeeded", 1)
	if ev, err := parseWebhookPayload([]byte(paid)); err != nil || ev.SetTier {
		t.Errorf("payment: %+v, %v; want no tier change", ev, err)
	}
	offset := `{"type":"x","timestamp":"2026-04-29T15:07:30+02:00"}`
	if ev, err := parseWebhookPayload([]byte(offset)); err != nil || !ev.OccurredAt.Equal(time.Date(2026, 4, 29, 13, 7, 30, 0, time.UTC)) || ev.OccurredAt.Location() != time.UTC {
		t.Errorf("timestamp with an offset: %v, %v", ev.OccurredAt, err)
	}
}

// FuzzParseWebhookPayload: the parser never panics, accepts only JSON
// objects with a type and an ISO 8601 timestamp, and what it accepts is
// what a store can record.
func FuzzParseWebhookPayload(f *testing.F) {
	for _, s := range []string{
		`{"type":"subscription.active","timestamp":"2026-04-29T13:07:30Z","data":{"metadata":{"tier":"PRO","updown_customer_id":"x"},"customer":{"email":"a@b"}}}`,
		`{"type":"subscription.cancelled","timestamp":"2026-04-29T13:07:30.5+01:00","data":null}`,
		`{"type":"payment.succeeded","timestamp":"2026-04-29T13:07:30Z","data":{"payment_id":"p","total_amount":100}}`,
		`{"type":"","timestamp":""}`, `[]`, `null`, `"x"`, `{"type":1}`, `{"data":{"metadata":{"tier":["PRO"]}}}`,
		`{"type":"a\u0000","timestamp":"2026-04-29T13:07:30Z"}`, " \n{}", `{"TYPE":"subscription.active","Timestamp":"2026-04-29T13:07:30Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := parseWebhookPayload(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != CodeValidation || e.Message == "" {
				t.Fatalf("error %#v, want 400 VALIDATION_ERROR with a message", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		if ev.Type == "" || ev.Type != strings.TrimSpace(ev.Type) || ev.OccurredAt.IsZero() || ev.OccurredAt.Location() != time.UTC {
			t.Fatalf("accepted %+v", ev)
		}
		for _, s := range []string{ev.Type, ev.SubscriptionID, ev.CustomerRef, ev.Email, string(ev.Tier)} {
			if strings.ContainsRune(s, 0) {
				t.Fatalf("accepted a NUL character: %+v", ev)
			}
		}
		if string(ev.Tier) != strings.ToUpper(string(ev.Tier)) {
			t.Fatalf("tier %q is not upper-cased", ev.Tier)
		}
		switch strings.ToLower(ev.Type) {
		case eventSubscriptionActive:
			if !ev.SetTier {
				t.Fatalf("%s without a tier change", ev.Type)
			}
		case eventSubscriptionCancelled:
			if !ev.SetTier || ev.Tier != store.Starter {
				t.Fatalf("%s sets %q", ev.Type, ev.Tier)
			}
		default:
			if ev.SetTier {
				t.Fatalf("%s changes the tier", ev.Type)
			}
		}
		// Same bytes, same event.
		if again, err := parseWebhookPayload(body); err != nil || again != ev {
			t.Fatalf("parsed twice: %+v then %+v, %v", ev, again, err)
		}
	})
}
