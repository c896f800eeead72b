package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func billingTests() []test {
	return []test{
		{"RecordAndGet", testBillingRecordAndGet},
		{"AppliesTier", testBillingAppliesTier},
		{"EmailFallback", testBillingEmailFallback},
		{"UnknownCustomer", testBillingUnknownCustomer},
		{"UnknownTier", testBillingUnknownTier},
		{"Duplicate", testBillingDuplicate},
		{"OutOfOrder", testBillingOutOfOrder},
		{"CancelOfReplacedSubscription", testBillingCancelOfReplacedSubscription},
		{"ReplacementInAnyOrder", testBillingReplacementInAnyOrder},
		{"LowerTierBesideLiveSubscription", testBillingLowerTierBesideLive},
		{"TierSetByHand", testBillingTierSetByHand},
		{"TierBackToBilling", testBillingTierBackToBilling},
		{"TiersSetByHand", testBillingTiersSetByHand},
		{"List", testBillingList},
		{"Invalid", testBillingInvalid},
		{"CancelledContext", testBillingCancelledContext},
		{"CallersCannotMutateStoredData", testBillingCopies},
		{"ConcurrentDuplicates", testBillingConcurrentDuplicates},
		{"ConcurrentOrdering", testBillingConcurrentOrdering},
	}
}

// billingAt is the suite's event time minutes after t0, written in another
// zone with sub-microsecond digits that a store drops.
func billingAt(minutes int) time.Time {
	return t0().Add(time.Duration(minutes)*time.Minute + 789*time.Nanosecond).In(elsewhere())
}

// newBillingEvent is an event of the customer asking for tier (no tier
// change when tier is "").
func newBillingEvent(id string, c store.Customer, tier store.Tier, minutes int) store.BillingEvent {
	e := store.BillingEvent{
		ID: id, Type: "payment.succeeded", OccurredAt: billingAt(minutes),
		SubscriptionID: "sub_" + id, CustomerRef: c.ID, Email: c.Email,
		Payload: []byte(fmt.Sprintf(`{"type":"x","id":%q}`, id)),
	}
	if tier != "" {
		e.Type, e.SetTier, e.Tier = "subscription.active", true, tier
	}
	return e
}

func recordBilling(t *testing.T, s store.Store, e store.BillingEvent) store.BillingEvent {
	t.Helper()
	rec, dup, err := s.RecordBillingEvent(t.Context(), e)
	mustOK(t, err, "RecordBillingEvent "+e.ID)
	if dup {
		t.Fatalf("RecordBillingEvent %s: duplicate = true on first delivery", e.ID)
	}
	return rec
}

func billingEventDiff(want, got store.BillingEvent) diff {
	var d diff
	eq(&d, "ID", want.ID, got.ID)
	eq(&d, "Type", want.Type, got.Type)
	eqTime(&d, "OccurredAt", want.OccurredAt, got.OccurredAt)
	eqStamp(&d, "ReceivedAt", want.ReceivedAt, got.ReceivedAt)
	eq(&d, "Outcome", want.Outcome, got.Outcome)
	eq(&d, "SubscriptionID", want.SubscriptionID, got.SubscriptionID)
	eq(&d, "CustomerRef", want.CustomerRef, got.CustomerRef)
	eq(&d, "Email", want.Email, got.Email)
	eq(&d, "CustomerID", want.CustomerID, got.CustomerID)
	eq(&d, "SetTier", want.SetTier, got.SetTier)
	eq(&d, "Tier", want.Tier, got.Tier)
	eq(&d, "PreviousTier", want.PreviousTier, got.PreviousTier)
	eq(&d, "NewTier", want.NewTier, got.NewTier)
	eqSlice(&d, "Payload", want.Payload, got.Payload)
	return d
}

func checkBillingEvent(t testing.TB, op string, want, got store.BillingEvent) {
	t.Helper()
	billingEventDiff(want, got).check(t, fmt.Sprintf("%s: billing event %q", op, want.ID))
}

// tierOf returns the customer's tier as stored now.
func tierOf(t *testing.T, s store.Store, id string) store.Tier {
	t.Helper()
	c, err := s.GetCustomer(t.Context(), id)
	mustOK(t, err, "GetCustomer")
	return c.Tier
}

func testBillingRecordAndGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	in := newBillingEvent("msg_1", c, "", 0)
	before := time.Now()
	rec := recordBilling(t, s, in)
	after := time.Now()

	want := in
	want.Outcome, want.CustomerID = store.BillingRecorded, c.ID
	checkBillingEvent(t, "RecordBillingEvent", want, rec)
	checkRecent(t, "ReceivedAt", rec.ReceivedAt, before, after)
	if rec.OccurredAt.Location() != time.UTC {
		t.Errorf("OccurredAt location = %v, want UTC", rec.OccurredAt.Location())
	}

	got, err := s.GetBillingEvent(ctx, in.ID)
	mustOK(t, err, "GetBillingEvent")
	checkBillingEvent(t, "GetBillingEvent", rec, got)
	checkCustomer(t, "customer after a payment event", c, mustCustomer(t, s, c.ID))

	for _, id := range []string{"msg_unknown", ""} {
		_, err := s.GetBillingEvent(ctx, id)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("GetBillingEvent(%q)", id))
	}
}

func mustCustomer(t *testing.T, s store.Store, id string) store.Customer {
	t.Helper()
	c, err := s.GetCustomer(t.Context(), id)
	mustOK(t, err, "GetCustomer")
	return c
}

func testBillingAppliesTier(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	other := createCustomer(t, s, newCustomer("bea"))
	k := createKey(t, s, newKey(c.ID, "ud_live_a"))
	prev := c
	// Plan changes of one subscription: a lower tier of another, beside
	// a live one of a higher tier, would be superseded.
	for i, tier := range []store.Tier{store.Pro, store.Enterprise, store.Starter} {
		tick()
		in := newBillingEvent(fmt.Sprintf("msg_%d", i), c, tier, i)
		in.SubscriptionID = "sub_ada"
		rec := recordBilling(t, s, in)
		want := in
		want.Outcome, want.CustomerID, want.PreviousTier, want.NewTier = store.BillingApplied, c.ID, prev.Tier, tier
		checkBillingEvent(t, "RecordBillingEvent", want, rec)
		got, err := s.GetBillingEvent(ctx, in.ID)
		mustOK(t, err, "GetBillingEvent")
		checkBillingEvent(t, "GetBillingEvent of an applied event", want, got)

		cust := mustCustomer(t, s, c.ID)
		wantC := prev
		wantC.Tier, wantC.UpdatedAt = tier, time.Time{}
		checkCustomer(t, "customer after an applied event", wantC, cust)
		if !cust.UpdatedAt.After(prev.UpdatedAt) {
			t.Errorf("UpdatedAt = %v after a tier change, want later than %v", cust.UpdatedAt, prev.UpdatedAt)
		}
		_, owner, err := s.LookupAPIKey(ctx, k.Hash)
		mustOK(t, err, "LookupAPIKey")
		checkCustomer(t, "key owner after an applied event", cust, owner)
		prev = cust
	}
	checkCustomer(t, "another customer", other, mustCustomer(t, s, other.ID))
}

func testBillingEmailFallback(t *testing.T, s store.Store) {
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	for i, ref := range append(unknownIDs(), "") {
		in := newBillingEvent(fmt.Sprintf("msg_%d", i), a, store.Pro, i)
		in.CustomerRef = ref
		rec := recordBilling(t, s, in)
		if rec.Outcome != store.BillingApplied || rec.CustomerID != a.ID {
			t.Errorf("ref %q, email of %s: outcome %s, customer %q; want applied to %s", ref, a.Email, rec.Outcome, rec.CustomerID, a.ID)
		}
	}
	if tier := tierOf(t, s, a.ID); tier != store.Pro {
		t.Errorf("tier after the email fallback = %s, want PRO", tier)
	}

	// The id wins over the email.
	in := newBillingEvent("msg_both", b, store.Suite, 10)
	in.Email = a.Email
	rec := recordBilling(t, s, in)
	if rec.Outcome != store.BillingApplied || rec.CustomerID != b.ID {
		t.Errorf("id of %s, email of %s: outcome %s, customer %q; want applied to the id's customer", b.Email, a.Email, rec.Outcome, rec.CustomerID)
	}
	if tier := tierOf(t, s, a.ID); tier != store.Pro {
		t.Errorf("tier of the email's customer = %s, want PRO unchanged", tier)
	}
	if tier := tierOf(t, s, b.ID); tier != store.Suite {
		t.Errorf("tier of the id's customer = %s, want SUITE", tier)
	}
}

func testBillingUnknownCustomer(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	for i, ref := range append(unknownIDs(), "") {
		in := newBillingEvent(fmt.Sprintf("msg_%d", i), c, store.Pro, i)
		in.CustomerRef, in.Email = ref, "nobody@example.com"
		rec := recordBilling(t, s, in)
		want := in
		want.Outcome = store.BillingUnknownCustomer
		checkBillingEvent(t, "RecordBillingEvent of an unknown customer", want, rec)
	}
	checkCustomer(t, "customer after events of unknown customers", c, mustCustomer(t, s, c.ID))
}

func testBillingUnknownTier(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	for i, tier := range []store.Tier{"GOLD", "pro", ""} {
		in := newBillingEvent(fmt.Sprintf("msg_%d", i), c, store.Pro, i)
		in.Tier = tier
		rec := recordBilling(t, s, in)
		want := in
		want.Outcome, want.CustomerID = store.BillingUnknownTier, c.ID
		checkBillingEvent(t, fmt.Sprintf("RecordBillingEvent of tier %q", tier), want, rec)
	}
	checkCustomer(t, "customer after events of unknown tiers", c, mustCustomer(t, s, c.ID))

	// Events that changed nothing do not hold later ones back.
	rec := recordBilling(t, s, newBillingEvent("msg_real", c, store.Pro, -10))
	if rec.Outcome != store.BillingApplied {
		t.Errorf("an event older than events that applied nothing: outcome %s, want applied", rec.Outcome)
	}
}

func testBillingDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	first := recordBilling(t, s, newBillingEvent("msg_1", c, store.Pro, 0))
	_, err := s.SetCustomerTier(ctx, c.ID, store.Starter)
	mustOK(t, err, "SetCustomerTier")

	for _, again := range []store.BillingEvent{
		newBillingEvent("msg_1", c, store.Pro, 0),        // the same delivery
		newBillingEvent("msg_1", c, store.Enterprise, 5), // same id, other content
		newBillingEvent("msg_1", c, "", 9),
	} {
		tick()
		rec, dup, err := s.RecordBillingEvent(ctx, again)
		mustOK(t, err, "RecordBillingEvent of a redelivery")
		if !dup {
			t.Errorf("redelivery of %s: duplicate = false", again.ID)
		}
		checkBillingEvent(t, "redelivery", first, rec)
		if tier := tierOf(t, s, c.ID); tier != store.Starter {
			t.Errorf("tier after a redelivery = %s, want STARTER (set after the first delivery)", tier)
		}
	}
	got, err := s.GetBillingEvent(ctx, "msg_1")
	mustOK(t, err, "GetBillingEvent")
	checkBillingEvent(t, "GetBillingEvent after redeliveries", first, got)
	all, err := s.ListBillingEvents(ctx, store.BillingEventFilter{})
	mustOK(t, err, "ListBillingEvents")
	if len(all) != 1 {
		t.Errorf("ListBillingEvents after redeliveries: %d events, want 1", len(all))
	}

	// A duplicate of an event that applied nothing is still a duplicate.
	recordBilling(t, s, newBillingEvent("msg_2", c, "", 1))
	if _, dup, err := s.RecordBillingEvent(ctx, newBillingEvent("msg_2", c, store.Pro, 1)); err != nil || !dup {
		t.Errorf("redelivery of a recorded-only event: duplicate %v, err %v", dup, err)
	}
	if tier := tierOf(t, s, c.ID); tier != store.Starter {
		t.Errorf("tier = %s, want STARTER", tier)
	}
}

func testBillingOutOfOrder(t *testing.T, s store.Store) {
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))

	recordBilling(t, s, newBillingEvent("a_activated", a, store.Pro, 10))
	// A cancellation that happened before the activation arrives late.
	late := newBillingEvent("a_cancelled_early", a, store.Starter, 5)
	late.Type = "subscription.cancelled"
	rec := recordBilling(t, s, late)
	want := late
	want.Outcome, want.CustomerID = store.BillingStale, a.ID
	checkBillingEvent(t, "an older event", want, rec)
	if tier := tierOf(t, s, a.ID); tier != store.Pro {
		t.Errorf("tier after a stale event = %s, want PRO", tier)
	}
	// Another subscription's older event is stale too: the tier is the
	// customer's.
	// (Not a higher tier: that one, still live, would outrank the
	// activation after it.)
	other := newBillingEvent("a_other_sub", a, store.Pro, 9)
	other.SubscriptionID = "sub_other"
	if rec := recordBilling(t, s, other); rec.Outcome != store.BillingStale {
		t.Errorf("an older event of another subscription: outcome %s, want stale", rec.Outcome)
	}

	// The same instant as the newest applied one applies (arrival order).
	if rec := recordBilling(t, s, newBillingEvent("a_same_time", a, store.Enterprise, 10)); rec.Outcome != store.BillingApplied {
		t.Errorf("an event as old as the newest applied: outcome %s, want applied", rec.Outcome)
	}
	// A newer one applies; stale events did not move the mark. (A plan
	// change of the current subscription: another's activation of a
	// lower tier would be superseded.)
	newer := newBillingEvent("a_newer", a, store.Starter, 11)
	newer.SubscriptionID = "sub_a_same_time"
	if rec := recordBilling(t, s, newer); rec.Outcome != store.BillingApplied || rec.PreviousTier != store.Enterprise {
		t.Errorf("a newer event: outcome %s, previous %s; want applied over ENTERPRISE", rec.Outcome, rec.PreviousTier)
	}
	if tier := tierOf(t, s, a.ID); tier != store.Starter {
		t.Errorf("tier = %s, want STARTER", tier)
	}
	// Marks are per customer.
	if rec := recordBilling(t, s, newBillingEvent("b_old", b, store.Pro, 0)); rec.Outcome != store.BillingApplied {
		t.Errorf("another customer's older event: outcome %s, want applied", rec.Outcome)
	}
}

// cancellation is subscription.cancelled of the customer's subscription
// sub, minutes after t0.
func cancellation(id string, c store.Customer, sub string, minutes int) store.BillingEvent {
	e := newBillingEvent(id, c, store.Starter, minutes)
	e.Type, e.SubscriptionID, e.EndsSubscription = "subscription.cancelled", sub, true
	return e
}

// A customer who buys a new plan and then cancels the old subscription
// keeps the new plan: a cancellation takes back only the tier its own
// subscription set.
func testBillingCancelOfReplacedSubscription(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	activation := func(id, sub string, tier store.Tier, minutes int) store.BillingEvent {
		e := newBillingEvent(id, c, tier, minutes)
		e.SubscriptionID = sub
		return e
	}
	recordBilling(t, s, activation("pro_started", "sub_pro", store.Pro, 1))
	recordBilling(t, s, activation("ent_started", "sub_ent", store.Enterprise, 2))

	old := cancellation("pro_cancelled", c, "sub_pro", 3)
	rec := recordBilling(t, s, old)
	want := old
	want.Outcome, want.CustomerID = store.BillingSuperseded, c.ID
	checkBillingEvent(t, "the replaced subscription cancelled", want, rec)
	if tier := tierOf(t, s, c.ID); tier != store.Enterprise {
		t.Fatalf("tier = %s after the replaced subscription was cancelled, want ENTERPRISE (the replacement's)", tier)
	}
	got, err := s.GetBillingEvent(t.Context(), old.ID)
	mustOK(t, err, "GetBillingEvent")
	checkBillingEvent(t, "GetBillingEvent", rec, got)

	// The current subscription's cancellation applies; after it, one of
	// another subscription (or of none named) takes nothing more away.
	if rec := recordBilling(t, s, cancellation("ent_cancelled", c, "sub_ent", 4)); rec.Outcome != store.BillingApplied || rec.PreviousTier != store.Enterprise {
		t.Errorf("the current subscription cancelled: outcome %s over %s, want applied over ENTERPRISE", rec.Outcome, rec.PreviousTier)
	}
	if rec := recordBilling(t, s, cancellation("pro_cancelled_again", c, "sub_pro", 5)); rec.Outcome != store.BillingApplied {
		t.Errorf("a cancellation on STARTER: outcome %s, want applied", rec.Outcome)
	}
	recordBilling(t, s, activation("pro_again", "sub_pro2", store.Pro, 6))
	if rec := recordBilling(t, s, cancellation("unnamed_cancelled", c, "", 7)); rec.Outcome != store.BillingApplied {
		t.Errorf("a cancellation naming no subscription: outcome %s, want applied", rec.Outcome)
	}
	if tier := tierOf(t, s, c.ID); tier != store.Starter {
		t.Errorf("tier = %s, want STARTER", tier)
	}
}

// A customer replaces subscription A (PRO) by B (ENTERPRISE), then A is
// cancelled: whatever order the provider delivers the three events in, the
// customer ends on ENTERPRISE, as in the order they happened. The
// activation of B arriving after A's later cancellation used to be stale,
// leaving a paying customer on STARTER.
func testBillingReplacementInAnyOrder(t *testing.T, s store.Store) {
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for n, order := range orders {
		c := createCustomer(t, s, newCustomer(fmt.Sprintf("order%d", n)))
		activation := func(id, sub string, tier store.Tier, minutes int) store.BillingEvent {
			e := newBillingEvent(id, c, tier, minutes)
			e.SubscriptionID = sub
			return e
		}
		events := []store.BillingEvent{
			activation(fmt.Sprintf("o%d_a_active", n), "sub_a", store.Pro, 1),
			activation(fmt.Sprintf("o%d_b_active", n), "sub_b", store.Enterprise, 2),
			cancellation(fmt.Sprintf("o%d_a_cancelled", n), c, "sub_a", 3),
		}
		var outcomes []string
		for _, i := range order {
			rec := recordBilling(t, s, events[i])
			outcomes = append(outcomes, events[i].ID+"="+string(rec.Outcome))
		}
		if tier := tierOf(t, s, c.ID); tier != store.Enterprise {
			t.Errorf("delivered as %v: tier = %s, want ENTERPRISE (B replaced A before A was cancelled)", outcomes, tier)
		}
	}

	// The order matters for what comes next too: with B's tier, another
	// subscription's cancellation takes nothing away; B's own does.
	c := createCustomer(t, s, newCustomer("next"))
	b := newBillingEvent("n_b_active", c, store.Enterprise, 2)
	b.SubscriptionID = "sub_b"
	recordBilling(t, s, newBillingEvent("n_a_active", c, store.Pro, 1)) // sub_n_a_active
	recordBilling(t, s, cancellation("n_a_cancelled", c, "sub_n_a_active", 3))
	if rec := recordBilling(t, s, b); rec.Outcome != store.BillingApplied || rec.PreviousTier != store.Starter {
		t.Errorf("the replacement's activation, arriving after the replaced one's later cancellation: outcome %s over %s, want applied over STARTER",
			rec.Outcome, rec.PreviousTier)
	}
	if rec := recordBilling(t, s, cancellation("n_x_cancelled", c, "sub_x", 4)); rec.Outcome != store.BillingSuperseded {
		t.Errorf("another subscription cancelled on the replacement's tier: outcome %s, want superseded", rec.Outcome)
	}
	if rec := recordBilling(t, s, cancellation("n_b_cancelled", c, "sub_b", 5)); rec.Outcome != store.BillingApplied {
		t.Errorf("the replacement cancelled: outcome %s, want applied", rec.Outcome)
	}
	if tier := tierOf(t, s, c.ID); tier != store.Starter {
		t.Errorf("tier = %s after the replacement was cancelled, want STARTER", tier)
	}

	// A replacement already cancelled when its activation arrives changes
	// nothing: the subscription it replaced was never cancelled.
	d := createCustomer(t, s, newCustomer("gone"))
	recordBilling(t, s, newBillingEvent("g_a_active", d, store.Pro, 1))
	recordBilling(t, s, cancellation("g_b_cancelled", d, "sub_g_b", 3))
	late := newBillingEvent("g_b_active", d, store.Enterprise, 2)
	late.SubscriptionID = "sub_g_b"
	if rec := recordBilling(t, s, late); rec.Outcome != store.BillingStale {
		t.Errorf("the activation of a subscription cancelled since: outcome %s, want stale", rec.Outcome)
	}
	if tier := tierOf(t, s, d.ID); tier != store.Pro {
		t.Errorf("tier = %s, want PRO", tier)
	}
}

// The activation of a new subscription at a lower tier than the
// customer's, while a subscription of a higher tier is live (activated,
// not cancelled), changes nothing: anyone who knows a customer's email can
// buy a cheap plan in their name, found by that email. Its cancellation
// takes nothing away either; the cancellation of the higher one leaves
// the highest tier among the customer's other live subscriptions, STARTER
// when none is, whatever order the events arrive in.
func testBillingLowerTierBesideLive(t *testing.T, s store.Store) {
	activation := func(c store.Customer, id, sub string, tier store.Tier, minutes int) store.BillingEvent {
		e := newBillingEvent(id, c, tier, minutes)
		e.SubscriptionID = sub
		return e
	}
	c := createCustomer(t, s, newCustomer("ent"))
	recordBilling(t, s, activation(c, "e_s1", "sub_s1", store.Enterprise, 1))
	cheap := activation(c, "e_s2", "sub_s2", store.ProTrial, 2)
	cheap.CustomerRef = "" // found by email
	rec := recordBilling(t, s, cheap)
	want := cheap
	want.Outcome, want.CustomerID = store.BillingSuperseded, c.ID
	checkBillingEvent(t, "a lower tier beside a live higher one", want, rec)
	if tier := tierOf(t, s, c.ID); tier != store.Enterprise {
		t.Fatalf("tier = %s after a lower tier's activation beside a live ENTERPRISE, want ENTERPRISE", tier)
	}
	cancelCheap := cancellation("e_s2_cancelled", c, "sub_s2", 3)
	cancelCheap.CustomerRef = ""
	if rec := recordBilling(t, s, cancelCheap); rec.Outcome != store.BillingSuperseded {
		t.Errorf("the lower subscription cancelled: outcome %s, want superseded", rec.Outcome)
	}
	if rec := recordBilling(t, s, cancellation("e_s1_cancelled", c, "sub_s1", 4)); rec.Outcome != store.BillingApplied ||
		rec.PreviousTier != store.Enterprise || rec.NewTier != store.Starter {
		t.Errorf("the higher subscription cancelled: outcome %s over %s to %s, want applied over ENTERPRISE to STARTER", rec.Outcome, rec.PreviousTier, rec.NewTier)
	}
	if tier := tierOf(t, s, c.ID); tier != store.Starter {
		t.Errorf("tier = %s after both subscriptions were cancelled, want STARTER", tier)
	}

	// With the lower one still live, the higher one's cancellation falls
	// back to it, in whatever order the three events arrive.
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for n, order := range orders {
		d := createCustomer(t, s, newCustomer(fmt.Sprintf("fallback%d", n)))
		events := []store.BillingEvent{
			activation(d, fmt.Sprintf("f%d_ent", n), "sub_ent", store.Enterprise, 1),
			activation(d, fmt.Sprintf("f%d_pro", n), "sub_pro", store.Pro, 2),
			cancellation(fmt.Sprintf("f%d_ent_cancelled", n), d, "sub_ent", 3),
		}
		var outcomes []string
		for _, i := range order {
			rec := recordBilling(t, s, events[i])
			outcomes = append(outcomes, events[i].ID+"="+string(rec.Outcome))
			if rec.Outcome == store.BillingApplied && rec.NewTier != tierOf(t, s, d.ID) {
				t.Errorf("delivered as %v: applied to %s, but the tier is %s", outcomes, rec.NewTier, tierOf(t, s, d.ID))
			}
		}
		if tier := tierOf(t, s, d.ID); tier != store.Pro {
			t.Errorf("delivered as %v: tier = %s, want PRO (the live subscription's)", outcomes, tier)
		}
	}
}

// A tier set by hand (SetCustomerTier: `updown customers set-tier`) is no
// subscription's: no event of a subscription the customer had before it
// takes it away, neither a cancellation (of the subscription the customer
// was on, or one cancelled long ago and cancelled again) nor a late
// activation. An event that happened before it is stale; a new
// subscription's events apply as ever. The setting by hand happens at the
// store's clock, so the events after it are timed from now.
func testBillingTierSetByHand(t *testing.T, s store.Store) {
	wantTier := func(c store.Customer, want store.Tier, after string) {
		t.Helper()
		if tier := tierOf(t, s, c.ID); tier != want {
			t.Errorf("tier = %s after %s, want %s", tier, after, want)
		}
	}

	// On the subscription's paid tier, support sets ENTERPRISE by hand;
	// the customer then cancels the PRO subscription.
	a := createCustomer(t, s, newCustomer("ada"))
	pro := newBillingEvent("a_pro", a, store.Pro, 1)
	pro.SubscriptionID = "sub_a_pro"
	recordBilling(t, s, pro)
	setTierByHand(t, s, a, store.Enterprise)
	if rec := recordBilling(t, s, happenedIn(cancellation("a_pro_cancelled", a, "sub_a_pro", 0), time.Minute)); rec.Outcome != store.BillingSuperseded {
		t.Errorf("the cancellation of the subscription the tier set by hand replaced: outcome %s, want superseded", rec.Outcome)
	}
	wantTier(a, store.Enterprise, "the subscription of before the tier set by hand was cancelled")
	// Its late activation (or renewal) takes nothing either.
	again := happenedIn(newBillingEvent("a_pro_again", a, store.Pro, 0), 2*time.Minute)
	again.SubscriptionID = "sub_a_pro"
	if rec := recordBilling(t, s, again); rec.Outcome != store.BillingSuperseded {
		t.Errorf("an activation of a subscription of before the tier set by hand: outcome %s, want superseded", rec.Outcome)
	}
	// An event that happened before the setting by hand is stale.
	if rec := recordBilling(t, s, cancellation("a_old_cancelled", a, "sub_a_pro", 2)); rec.Outcome != store.BillingStale {
		t.Errorf("a cancellation that happened before the tier was set by hand: outcome %s, want stale", rec.Outcome)
	}
	wantTier(a, store.Enterprise, "events of the subscription of before")
	// A new subscription replaces the tier set by hand, and its own
	// cancellation ends it.
	suite := happenedIn(newBillingEvent("a_suite", a, store.Suite, 0), 3*time.Minute)
	suite.SubscriptionID = "sub_a_suite"
	if rec := recordBilling(t, s, suite); rec.Outcome != store.BillingApplied || rec.PreviousTier != store.Enterprise {
		t.Errorf("a new subscription after the tier set by hand: outcome %s over %s, want applied over ENTERPRISE", rec.Outcome, rec.PreviousTier)
	}
	if rec := recordBilling(t, s, happenedIn(cancellation("a_suite_cancelled", a, "sub_a_suite", 0), 4*time.Minute)); rec.Outcome != store.BillingApplied {
		t.Errorf("the new subscription cancelled: outcome %s, want applied", rec.Outcome)
	}
	wantTier(a, store.Starter, "the new subscription was cancelled")

	// A subscription cancelled long ago, cancelled again after support
	// gave the customer SUITE by hand: the customer keeps SUITE.
	b := createCustomer(t, s, newCustomer("bea"))
	old := newBillingEvent("b_pro", b, store.Pro, 1)
	old.SubscriptionID = "sub_b_pro"
	recordBilling(t, s, old)
	recordBilling(t, s, cancellation("b_pro_cancelled", b, "sub_b_pro", 2))
	setTierByHand(t, s, b, store.Suite)
	if rec := recordBilling(t, s, happenedIn(cancellation("b_pro_cancelled_again", b, "sub_b_pro", 0), time.Minute)); rec.Outcome != store.BillingSuperseded {
		t.Errorf("a cancelled subscription cancelled again after the tier was set by hand: outcome %s, want superseded", rec.Outcome)
	}
	wantTier(b, store.Suite, "an old subscription's cancellation came again")

	// A new subscription after the tier set by hand, its cancellation
	// delivered before its activation, which happened first: the customer
	// ends where the order they happened in leaves it (STARTER), as when
	// they arrive in that order, not on the tier set by hand.
	c := createCustomer(t, s, newCustomer("cid"))
	setTierByHand(t, s, c, store.Enterprise)
	recordBilling(t, s, happenedIn(cancellation("c_pro_cancelled", c, "sub_c_pro", 0), 2*time.Minute))
	act := happenedIn(newBillingEvent("c_pro", c, store.Pro, 0), time.Minute)
	act.SubscriptionID = "sub_c_pro"
	if rec := recordBilling(t, s, act); rec.Outcome != store.BillingStale {
		t.Errorf("an activation whose cancellation, later, was recorded first: outcome %s, want stale", rec.Outcome)
	}
	wantTier(c, store.Starter, "a new subscription's cancellation and then its earlier activation arrived")

	// Support sets PRO by hand in place of an activation that never
	// came; that subscription's cancellation ends it, as SPEC's cancelled
	// does: the tier set by hand replaced no subscription the customer
	// was known to have.
	d := createCustomer(t, s, newCustomer("dee"))
	setTierByHand(t, s, d, store.Pro)
	if rec := recordBilling(t, s, happenedIn(cancellation("d_lost_cancelled", d, "sub_d_lost", 0), time.Minute)); rec.Outcome != store.BillingApplied {
		t.Errorf("the cancellation of a subscription unknown when the tier was set by hand: outcome %s, want applied", rec.Outcome)
	}
	wantTier(d, store.Starter, "the subscription whose activation never came was cancelled")
}

// ReturnTierToBilling undoes setting a tier by hand: the customer's tier
// becomes what its billing events, all of them in the order they
// happened, leave it (those recorded while the tier was set by hand
// included; STARTER when none set a tier), and from then on the events of
// any subscription apply as if the tier had never been set by hand.
func testBillingTierBackToBilling(t *testing.T, s store.Store) {
	ctx := t.Context()
	back := func(c store.Customer, want store.Tier, why string) {
		t.Helper()
		got, err := s.ReturnTierToBilling(ctx, c.ID)
		mustOK(t, err, "ReturnTierToBilling")
		if got.ID != c.ID || got.Tier != want {
			t.Errorf("ReturnTierToBilling (%s) = customer %s on %s, want %s on %s", why, got.ID, got.Tier, c.ID, want)
		}
		if tier := tierOf(t, s, c.ID); tier != want {
			t.Errorf("tier = %s after ReturnTierToBilling (%s), want %s", tier, why, want)
		}
	}

	// ENTERPRISE set by mistake over a PRO subscription: back to PRO, and
	// that subscription's cancellation, which the tier set by hand would
	// have left superseded, ends it.
	a := createCustomer(t, s, newCustomer("ada"))
	pro := newBillingEvent("a_pro", a, store.Pro, 1)
	pro.SubscriptionID = "sub_a_pro"
	recordBilling(t, s, pro)
	setTierByHand(t, s, a, store.Enterprise)
	back(a, store.Pro, "over a PRO subscription")
	if rec := recordBilling(t, s, happenedIn(cancellation("a_pro_cancelled", a, "sub_a_pro", 0), time.Minute)); rec.Outcome != store.BillingApplied || rec.PreviousTier != store.Pro {
		t.Errorf("the subscription's cancellation once the tier is billing's again: outcome %s over %s, want applied over PRO", rec.Outcome, rec.PreviousTier)
	}
	if tier := tierOf(t, s, a.ID); tier != store.Starter {
		t.Errorf("tier = %s after the subscription was cancelled, want STARTER", tier)
	}

	// An event recorded while the tier was set by hand counts once the tier
	// is billing's again: the subscription cancelled meanwhile leaves STARTER.
	b := createCustomer(t, s, newCustomer("bea"))
	old := newBillingEvent("b_pro", b, store.Pro, 1)
	old.SubscriptionID = "sub_b_pro"
	recordBilling(t, s, old)
	setTierByHand(t, s, b, store.Suite)
	if rec := recordBilling(t, s, happenedIn(cancellation("b_pro_cancelled", b, "sub_b_pro", 0), time.Minute)); rec.Outcome != store.BillingSuperseded {
		t.Fatalf("a cancellation while the tier is set by hand: outcome %s, want superseded", rec.Outcome)
	}
	back(b, store.Starter, "the subscription was cancelled while the tier was set by hand")

	// A replaced subscription's cancellation, recorded after its
	// replacement began, leaves the replacement's tier, as when the events
	// were first taken.
	c := createCustomer(t, s, newCustomer("cid"))
	first := newBillingEvent("c_pro", c, store.Pro, 1)
	first.SubscriptionID = "sub_c_pro"
	recordBilling(t, s, first)
	second := newBillingEvent("c_suite", c, store.Suite, 2)
	second.SubscriptionID = "sub_c_suite"
	recordBilling(t, s, second)
	recordBilling(t, s, cancellation("c_pro_cancelled", c, "sub_c_pro", 3))
	setTierByHand(t, s, c, store.Starter)
	back(c, store.Suite, "a subscription replaced and cancelled")

	// No billing event ever set the tier: the free plan.
	d := createCustomer(t, s, newCustomer("dee"))
	recordBilling(t, s, newBillingEvent("d_paid", d, "", 1)) // payment.succeeded: no tier
	setTierByHand(t, s, d, store.Pro)
	back(d, store.Starter, "no subscription")
	// Twice is the same as once.
	back(d, store.Starter, "again")

	// Another customer's tier set by hand stays.
	e := createCustomer(t, s, newCustomer("eve"))
	setTierByHand(t, s, e, store.Enterprise)
	if tier := tierOf(t, s, e.ID); tier != store.Enterprise {
		t.Errorf("another customer's tier set by hand = %s, want ENTERPRISE", tier)
	}

	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "not-a-uuid", ""} {
		_, err := s.ReturnTierToBilling(ctx, id)
		wantErr(t, err, store.ErrNotFound, "ReturnTierToBilling("+id+")")
	}
}

// testBillingTiersSetByHand: TiersSetByHand names the customers on the
// tier set by hand: from SetCustomerTier until the tier is handed back to
// billing or a new subscription's event sets it; the events of a
// subscription of before, which the tier set by hand leaves superseded or
// stale, do not take it away.
func testBillingTiersSetByHand(t *testing.T, s store.Store) {
	ctx := t.Context()
	wantByHand := func(c store.Customer, want bool, after string) {
		t.Helper()
		got, err := s.TiersSetByHand(ctx)
		mustOK(t, err, "TiersSetByHand")
		if got[c.ID] != want {
			t.Errorf("TiersSetByHand after %s: %s's tier set by hand %v, want %v", after, c.Email, got[c.ID], want)
		}
		for id, byHand := range got {
			if !byHand {
				t.Errorf("TiersSetByHand after %s names %s false: only customers on a tier set by hand are named", after, id)
			}
		}
	}

	a := createCustomer(t, s, newCustomer("ada"))
	wantByHand(a, false, "a customer was created")
	pro := newBillingEvent("a_pro", a, store.Pro, 1)
	pro.SubscriptionID = "sub_a_pro"
	recordBilling(t, s, pro)
	wantByHand(a, false, "a subscription set the tier")
	setTierByHand(t, s, a, store.Enterprise)
	wantByHand(a, true, "the tier was set by hand")
	// The subscription of before: its cancellation is superseded, an
	// event that happened before the setting by hand stale. (The events
	// after it happen now: a later setting by hand comes after them.)
	tick()
	if rec := recordBilling(t, s, happenedIn(cancellation("a_pro_cancelled", a, "sub_a_pro", 0), 0)); rec.Outcome != store.BillingSuperseded {
		t.Fatalf("the cancellation of the subscription of before: outcome %s, want superseded", rec.Outcome)
	}
	if rec := recordBilling(t, s, cancellation("a_old_cancelled", a, "sub_a_pro", 2)); rec.Outcome != store.BillingStale {
		t.Fatalf("a cancellation that happened before the tier was set by hand: outcome %s, want stale", rec.Outcome)
	}
	wantByHand(a, true, "events of the subscription of before")
	// A new subscription sets the tier: billing's again.
	suite := happenedIn(newBillingEvent("a_suite", a, store.Suite, 0), 0)
	suite.SubscriptionID = "sub_a_suite"
	if rec := recordBilling(t, s, suite); rec.Outcome != store.BillingApplied {
		t.Fatalf("a new subscription after the tier set by hand: outcome %s, want applied", rec.Outcome)
	}
	wantByHand(a, false, "a new subscription set the tier")
	tick()
	setTierByHand(t, s, a, store.Pro)
	wantByHand(a, true, "the tier was set by hand again")

	// Handed back to billing.
	b := createCustomer(t, s, newCustomer("bea"))
	setTierByHand(t, s, b, store.Suite)
	wantByHand(b, true, "the tier was set by hand")
	_, err := s.ReturnTierToBilling(ctx, b.ID)
	mustOK(t, err, "ReturnTierToBilling")
	wantByHand(b, false, "the tier was handed back to billing")
	wantByHand(a, true, "another customer's tier was handed back to billing")
}

func testBillingList(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	var recs []store.BillingEvent
	for i, e := range []store.BillingEvent{
		newBillingEvent("msg_c", a, store.Pro, 0),
		newBillingEvent("msg_a", b, "", 1),
		newBillingEvent("msg_b", a, "", 2),
	} {
		if i == 2 {
			e.CustomerRef, e.Email = "", "nobody@example.com"
		}
		recs = append(recs, recordBilling(t, s, e))
		tick()
	}
	list := func(f store.BillingEventFilter) []store.BillingEvent {
		t.Helper()
		got, err := s.ListBillingEvents(ctx, f)
		mustOK(t, err, "ListBillingEvents")
		return got
	}
	check := func(op string, want, got []store.BillingEvent) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d events, want %d", op, len(got), len(want))
			return
		}
		for i := range want {
			checkBillingEvent(t, op, want[i], got[i])
		}
	}
	check("ListBillingEvents", []store.BillingEvent{recs[2], recs[1], recs[0]}, list(store.BillingEventFilter{}))
	check("ListBillingEvents with a limit", []store.BillingEvent{recs[2], recs[1]}, list(store.BillingEventFilter{Limit: 2}))
	check("ListBillingEvents of a customer", []store.BillingEvent{recs[0]}, list(store.BillingEventFilter{CustomerID: a.ID}))
	check("ListBillingEvents of another customer", []store.BillingEvent{recs[1]}, list(store.BillingEventFilter{CustomerID: b.ID}))
	for _, id := range unknownIDs() {
		check("ListBillingEvents of an unknown customer", nil, list(store.BillingEventFilter{CustomerID: id}))
	}
}

func testBillingInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	valid := newBillingEvent("msg_1", c, store.Pro, 0)
	for name, mutate := range map[string]func(*store.BillingEvent){
		"empty id":        func(e *store.BillingEvent) { e.ID = "" },
		"empty type":      func(e *store.BillingEvent) { e.Type = "" },
		"zero occurrence": func(e *store.BillingEvent) { e.OccurredAt = time.Time{} },
	} {
		e := valid
		mutate(&e)
		_, _, err := s.RecordBillingEvent(ctx, e)
		wantErr(t, err, store.ErrInvalid, "RecordBillingEvent with "+name)
	}
	if all, err := s.ListBillingEvents(ctx, store.BillingEventFilter{}); err != nil || len(all) != 0 {
		t.Errorf("ListBillingEvents after invalid events = %d events, %v; want none", len(all), err)
	}
	checkCustomer(t, "customer after invalid events", c, mustCustomer(t, s, c.ID))
}

func testBillingCancelledContext(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	recordBilling(t, s, newBillingEvent("msg_1", c, "", 0))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"RecordBillingEvent": func() error {
			_, _, err := s.RecordBillingEvent(ctx, newBillingEvent("msg_2", c, store.Pro, 1))
			return err
		},
		"GetBillingEvent":   func() error { _, err := s.GetBillingEvent(ctx, "msg_1"); return err },
		"ListBillingEvents": func() error { _, err := s.ListBillingEvents(ctx, store.BillingEventFilter{}); return err },
		"ListBillingEvents of a customer": func() error {
			_, err := s.ListBillingEvents(ctx, store.BillingEventFilter{CustomerID: c.ID})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want one matching context.Canceled", name, err)
		}
	}
	if _, err := s.GetBillingEvent(t.Context(), "msg_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the event recorded with a cancelled context exists: %v", err)
	}
	checkCustomer(t, "customer", c, mustCustomer(t, s, c.ID))
}

func testBillingCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	in := newBillingEvent("msg_1", c, "", 0)
	payload := slices.Clone(in.Payload)
	rec := recordBilling(t, s, in)
	in.Payload[0]++  // what was written
	rec.Payload[1]++ // what was returned
	got, err := s.GetBillingEvent(ctx, "msg_1")
	mustOK(t, err, "GetBillingEvent")
	got.Payload[2]++
	all, err := s.ListBillingEvents(ctx, store.BillingEventFilter{})
	mustOK(t, err, "ListBillingEvents")
	all[0].Payload[3]++
	got, err = s.GetBillingEvent(ctx, "msg_1")
	mustOK(t, err, "GetBillingEvent")
	if !slices.Equal(got.Payload, payload) {
		t.Errorf("Payload = %q after changing copies, want %q", got.Payload, payload)
	}
}

// testBillingConcurrentDuplicates delivers one event from many processes
// at once: exactly one delivery records it.
func testBillingConcurrentDuplicates(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	const n = 16
	var wg sync.WaitGroup
	recs := make([]store.BillingEvent, n)
	dups := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			var err error
			recs[i], dups[i], err = s.RecordBillingEvent(t.Context(), newBillingEvent("msg_1", c, store.Pro, 0))
			if err != nil {
				t.Errorf("delivery %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	firsts := 0
	for i := range n {
		if !dups[i] {
			firsts++
		}
		checkBillingEvent(t, fmt.Sprintf("delivery %d", i), recs[0], recs[i])
	}
	if firsts != 1 {
		t.Errorf("%d deliveries were not duplicates, want exactly 1", firsts)
	}
	if recs[0].Outcome != store.BillingApplied || recs[0].PreviousTier != store.Starter {
		t.Errorf("record: outcome %s, previous %s; want applied over STARTER", recs[0].Outcome, recs[0].PreviousTier)
	}
}

// testBillingConcurrentOrdering delivers events of one customer with
// shuffled times from many processes at once: the tier ends as the newest
// event says, whatever order they were applied in.
func testBillingConcurrentOrdering(t *testing.T, s store.Store) {
	c := createCustomer(t, s, newCustomer("ada"))
	tiers := []store.Tier{store.Pro, store.Suite, store.Enterprise, store.ProTrial, store.Starter}
	const n = 20
	minutes := rand.Perm(n)
	var wg sync.WaitGroup
	recs := make([]store.BillingEvent, n)
	for i := range n {
		wg.Go(func() {
			e := newBillingEvent(fmt.Sprintf("msg_%02d", i), c, tiers[minutes[i]%len(tiers)], minutes[i])
			// Plan changes of one subscription: of several, the
			// activation of a lower tier beside a live higher one would
			// be superseded.
			e.SubscriptionID = "sub_ada"
			var err error
			recs[i], _, err = s.RecordBillingEvent(t.Context(), e)
			if err != nil {
				t.Errorf("event %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	newest := tiers[(n-1)%len(tiers)]
	if tier := tierOf(t, s, c.ID); tier != newest {
		t.Errorf("tier after concurrent events = %s, want %s (the newest event's)", tier, newest)
	}
	// Applied in time order: sorted by occurrence, each applied event
	// found the tier the one before it set. An event applied after a newer
	// one would break the chain.
	var applied []store.BillingEvent
	for _, r := range recs {
		switch r.Outcome {
		case store.BillingApplied:
			applied = append(applied, r)
		case store.BillingStale:
		default:
			t.Errorf("event %s: outcome %s, want applied or stale", r.ID, r.Outcome)
		}
	}
	slices.SortFunc(applied, func(a, b store.BillingEvent) int { return a.OccurredAt.Compare(b.OccurredAt) })
	prev := store.Starter
	for _, r := range applied {
		if r.PreviousTier != prev {
			t.Errorf("applied %s (occurred %v) over %s, want over %s: events were applied out of time order", r.ID, r.OccurredAt, r.PreviousTier, prev)
		}
		prev = r.Tier
	}
}

// happenedIn is e as if it happened d from now (in another time zone, as
// a webhook may say it): the events after a tier set by hand, which the
// store sets at its clock.
func happenedIn(e store.BillingEvent, d time.Duration) store.BillingEvent {
	e.OccurredAt = time.Now().Add(d).In(elsewhere())
	return e
}

// setTierByHand sets c's tier as `updown customers set-tier` does.
func setTierByHand(t *testing.T, s store.Store, c store.Customer, tier store.Tier) {
	t.Helper()
	_, err := s.SetCustomerTier(t.Context(), c.ID, tier)
	mustOK(t, err, "SetCustomerTier")
}
