package store

import (
	"context"
	"maps"
	"slices"
	"time"
)

// BillingStore keeps the billing provider's webhook events and applies the
// tier changes they carry (SPEC 3.2, 6).
//
// Recording and applying are one atomic step, so that a redelivered event
// is never applied twice and events delivered out of order never let an
// older one undo a newer one, however many api processes receive them.
type BillingStore interface {
	// RecordBillingEvent records e under its ID (the webhook-id) and, when
	// e.SetTier is true, applies the tier change, all or nothing.
	//
	// The customer is the one whose ID is e.CustomerRef or, when no such
	// customer exists, the one whose email is e.Email (case-insensitively:
	// as NormalizeEmail compares); the record keeps the customer found in
	// CustomerID ("" when none was) and e.Email as sent.
	//
	// The tier change is applied (Outcome BillingApplied) only when e.Tier
	// is a known tier, the customer was found, and BillingOutcomeOf, which
	// takes the customer's events in the order they happened, with the
	// latest setting of its tier by hand (SetCustomerTier) among them
	// (WithTierSetByHand), says so;
	// otherwise the event is recorded with the outcome saying why nothing
	// changed (BillingUnknownTier, BillingUnknownCustomer, BillingStale,
	// BillingSuperseded). Events without SetTier are recorded with
	// BillingRecorded. Staleness is judged per customer rather than per
	// subscription because the tier belongs to the customer: a late
	// "cancelled" of an old subscription must not undo the activation of
	// its replacement.
	//
	// The store sets ReceivedAt, Outcome, PreviousTier and NewTier (the
	// customer's tier before and after the change, on applied events: the
	// one BillingOutcomeOf gives, e.Tier but for a cancellation that
	// leaves another live subscription's). It returns the record
	// and duplicate false; or, when an event with the ID is already
	// recorded, that earlier record untouched and duplicate true, whatever
	// e holds. An empty ID or Type, or a zero OccurredAt, is ErrInvalid.
	RecordBillingEvent(ctx context.Context, e BillingEvent) (rec BillingEvent, duplicate bool, err error)
	// GetBillingEvent returns the event recorded under the webhook id, or
	// ErrNotFound.
	GetBillingEvent(ctx context.Context, id string) (BillingEvent, error)
	// ListBillingEvents returns recorded events matching f, the most
	// recently received first (ID descending on ties).
	ListBillingEvents(ctx context.Context, f BillingEventFilter) ([]BillingEvent, error)
}

// BillingOutcome is what recording a billing event did.
type BillingOutcome string

// Outcomes of RecordBillingEvent.
const (
	// BillingApplied: the customer's tier was set to the event's tier.
	BillingApplied BillingOutcome = "applied"
	// BillingRecorded: the event asks for no tier change (payment.succeeded,
	// event types the service does not act on); it is kept for support.
	BillingRecorded BillingOutcome = "recorded"
	// BillingStale: the customer's tier was already set by an event that
	// occurred later, or by hand since; this older one changes nothing.
	BillingStale BillingOutcome = "stale"
	// BillingUnknownCustomer: no customer has the event's id or email.
	BillingUnknownCustomer BillingOutcome = "unknown_customer"
	// BillingUnknownTier: the event asks for a tier the service does not
	// know (or none at all).
	BillingUnknownTier BillingOutcome = "unknown_tier"
	// BillingSuperseded: the event is of a subscription other than the
	// customer's current one: it ends a subscription other than the one
	// that set the customer's current tier (a replaced subscription
	// cancelled after its replacement started), the tier was set by
	// hand after the subscription began, or it activates a subscription
	// whose tier is lower than the customer's while a subscription with a
	// higher tier is still live (BillingOutcomeOf); it changes nothing.
	BillingSuperseded BillingOutcome = "superseded"
)

// BillingStep is a tier-setting event of a customer (one with a known
// tier) as the order of the customer's events sees it.
type BillingStep struct {
	OccurredAt       time.Time
	SubscriptionID   string
	Tier             Tier
	EndsSubscription bool
	// ByHand: not an event but the customer's tier set by hand
	// (SetCustomerTier, `updown customers set-tier`) at OccurredAt.
	ByHand bool
}

// WithTierSetByHand returns history with the step of the customer's tier
// set by hand (hand.ByHand true; a zero OccurredAt: never) in its place:
// after the events that happened no later. Only the latest setting by hand
// matters (BillingOutcomeOf), so the stores keep that one alone.
func WithTierSetByHand(history []BillingStep, hand BillingStep) []BillingStep {
	if hand.OccurredAt.IsZero() {
		return history
	}
	hand.ByHand = true
	at := len(history)
	for at > 0 && hand.OccurredAt.Before(history[at-1].OccurredAt) {
		at--
	}
	return slices.Insert(slices.Clip(history), at, hand)
}

// StepOf is e as a step of its customer's history.
func StepOf(e BillingEvent) BillingStep {
	return BillingStep{OccurredAt: e.OccurredAt, SubscriptionID: e.SubscriptionID, Tier: e.Tier, EndsSubscription: e.EndsSubscription}
}

// BillingOutcomeOf decides what the tier-setting event e of a customer
// does, given the customer's tier-setting events recorded before it
// (whatever their outcomes), ordered by OccurredAt and then by arrival.
//
// The events are taken in the order they happened, not the one they
// arrived in, so that the customer ends on the same tier whatever order
// the provider delivers them in: e takes its place among them, and each
// event in turn sets the tier, except an event of a subscription that is
// not the customer's current one, which is skipped: a cancellation of a
// subscription other than the one whose paid tier the customer has
// (replaced by a newer one), and, after the tier was set by hand (a step
// with ByHand, WithTierSetByHand), any event of a subscription the
// customer had before (its cancellation, a late activation): a tier set
// by hand is none of those subscriptions', and only a subscription new
// since (its activation, or its cancellation: SPEC's cancelled sets
// STARTER) or another setting by hand changes it. An activation is
// skipped too when it would lower the tier (by what the plans allow:
// TierRank) while another subscription of the customer with a higher
// tier is live (activated and not cancelled):
// the email fallback lets anyone who knows a customer's email buy a cheap
// plan in their name, which must not take away the plan the customer
// still pays for; a plan change of the customer's current subscription
// is not skipped. A cancellation that takes the tier back leaves the
// highest tier among the customer's other live subscriptions, STARTER
// when none is live.
//
// e is BillingApplied when it sets the tier and no step after it does,
// or when it changes the tier a later step leaves (an activation that
// arrives after the later cancellation of the subscription that
// outranked it); BillingStale when a step after it sets the tier (a
// later event, or the tier set by hand since, already decided it);
// BillingSuperseded when it is skipped and none after it sets the tier.
// The tier is the one the customer is to be set to on BillingApplied:
// e's own for an activation, the fallback for a cancellation.
//
// So a replacement's activation that arrives after the cancellation of
// the subscription it replaced, which happened later, still applies: in
// the order they happened, the activation came first and the
// cancellation, of the replaced subscription, took nothing away.
func BillingOutcomeOf(history []BillingStep, e BillingStep) (BillingOutcome, Tier) {
	at := len(history)
	for at > 0 && e.OccurredAt.Before(history[at-1].OccurredAt) {
		at--
	}
	prior, _ := BillingTier(history)
	w := newTierWalk()
	for _, h := range history[:at] {
		w.take(h)
	}
	set, later := w.take(e), false
	for _, h := range history[at:] {
		later = w.take(h) || later
	}
	switch {
	case set && !later:
		return BillingApplied, w.tier
	case w.tier != prior:
		// e changes what a later step leaves: an activation that
		// arrives after the cancellation, which happened later, of the
		// subscription that outranked it.
		return BillingApplied, w.tier
	case later:
		return BillingStale, ""
	}
	return BillingSuperseded, ""
}

// BillingTier is the tier a customer's tier-setting events leave it on,
// taken in the order they happened as BillingOutcomeOf takes them (history
// ordered by OccurredAt and then by arrival, steps set by hand among them
// or not), and false when none of them sets a tier.
func BillingTier(history []BillingStep) (Tier, bool) {
	w := newTierWalk()
	set := false
	for _, h := range history {
		set = w.take(h) || set
	}
	return w.tier, set
}

// TierSetByHand reports whether a customer's tier-setting steps (history
// as BillingTier takes it, with the step set by hand in its place:
// WithTierSetByHand) leave the customer on the tier set by hand: no event
// set the tier after it (only a subscription new since can,
// BillingOutcomeOf).
func TierSetByHand(history []BillingStep) bool {
	w := newTierWalk()
	for _, h := range history {
		w.take(h)
	}
	return w.byHand
}

// tierWalk takes a customer's tier-setting steps one by one, in the order
// they happened, and keeps the tier they leave (BillingOutcomeOf).
type tierWalk struct {
	sub  string
	tier Tier
	// byHand: the tier was last set by hand; before holds the
	// subscriptions the customer had then.
	byHand       bool
	seen, before map[string]bool
	// live holds the tier of each subscription activated and not
	// cancelled since (none from before the tier was last set by hand).
	live map[string]Tier
}

func newTierWalk() *tierWalk {
	return &tierWalk{seen: map[string]bool{}, before: map[string]bool{}, live: map[string]Tier{}}
}

// take applies s and says whether it set the tier.
func (w *tierWalk) take(s BillingStep) bool {
	if s.ByHand {
		w.byHand, w.sub, w.tier = true, "", s.Tier
		maps.Copy(w.before, w.seen)
		clear(w.live)
		return true
	}
	if s.SubscriptionID != "" {
		w.seen[s.SubscriptionID] = true
	}
	if w.byHand && w.before[s.SubscriptionID] {
		return false // a subscription from before the tier was set by hand
	}
	if s.EndsSubscription {
		return w.end(s)
	}
	if s.SubscriptionID != "" {
		w.live[s.SubscriptionID] = s.Tier
	}
	if s.SubscriptionID != w.sub && w.outranked(s) {
		return false // a cheaper subscription beside a dearer one still live
	}
	w.byHand, w.sub, w.tier = false, s.SubscriptionID, s.Tier
	return true
}

// outranked reports whether the activation s would lower the tier while
// another live subscription has a higher one than s: anyone who knows
// a customer's email can buy a cheap plan in their name (the email
// fallback), and must not take away the plan the customer still pays for.
func (w *tierWalk) outranked(s BillingStep) bool {
	rank := TierRank(s.Tier)
	if rank >= TierRank(w.tier) {
		return false
	}
	for sub, t := range w.live {
		if sub != s.SubscriptionID && TierRank(t) > rank {
			return true
		}
	}
	return false
}

// end takes the cancellation s: it ends its subscription, and takes the
// tier back unless the customer is on another subscription's (replaced
// by a newer one). The tier falls to the highest of the customer's other
// live subscriptions' or, when none is live, to s.Tier (STARTER). A
// cancellation naming no subscription ends them all.
func (w *tierWalk) end(s BillingStep) bool {
	if s.SubscriptionID == "" {
		clear(w.live)
	} else {
		delete(w.live, s.SubscriptionID)
	}
	if s.SubscriptionID != "" && w.sub != "" && w.sub != s.SubscriptionID && w.tier != Starter {
		return false // ends a subscription the customer has replaced
	}
	w.byHand, w.sub, w.tier = false, s.SubscriptionID, s.Tier
	for sub, t := range w.live {
		// The highest tier; of equal ones, the first subscription id,
		// so that the walk does not depend on the map's order.
		if r, cur := TierRank(t), TierRank(w.tier); r > cur || (r == cur && w.sub != s.SubscriptionID && sub < w.sub) {
			w.sub, w.tier = sub, t
		}
	}
	return true
}

// BillingEvent is one billing webhook event as received, and what it did.
type BillingEvent struct {
	// ID is the webhook-id header: the provider's idempotency key.
	ID string
	// Type is the event kind, e.g. subscription.active.
	Type string
	// OccurredAt is the payload's timestamp: when the provider says the
	// event happened. It orders the events of a customer.
	OccurredAt time.Time
	// ReceivedAt is when the store recorded the event (set by the store).
	ReceivedAt time.Time
	// Outcome is what recording did (set by the store).
	Outcome BillingOutcome
	// SubscriptionID is the provider's subscription id ("" when absent).
	SubscriptionID string
	// CustomerRef is the customer id the payload's metadata names, as sent.
	CustomerRef string
	// Email is the payload's customer email, as sent.
	Email string
	// CustomerID is the customer the event was matched to (set by the
	// store; "" when none matched).
	CustomerID string
	// SetTier says the event asks for the customer's tier to become Tier
	// (subscription.active, subscription.cancelled).
	SetTier bool
	// EndsSubscription says the event ends the subscription SubscriptionID
	// (subscription.cancelled): it sets Tier only while that subscription
	// is the customer's current one (see RecordBillingEvent). The store
	// keeps it to place the customer's later events among this one
	// (BillingOutcomeOf); records read back need not carry it.
	EndsSubscription bool
	// Tier is the tier the event asks for, as a wire name; it may be
	// unknown (then the outcome is BillingUnknownTier) or empty.
	Tier Tier
	// PreviousTier is the customer's tier before an applied change (set by
	// the store; "" unless Outcome is BillingApplied).
	PreviousTier Tier
	// NewTier is the customer's tier after an applied change (set by the
	// store; "" unless Outcome is BillingApplied, and on an event a store
	// recorded before it kept the field): Tier,
	// except for a cancellation that leaves the customer on another live
	// subscription's tier (BillingOutcomeOf).
	NewTier Tier
	// Payload is the request body exactly as signed and received.
	Payload []byte
}

// BillingEventFilter selects recorded billing events. Zero fields do not
// filter.
type BillingEventFilter struct {
	CustomerID string
	Limit      int // 0 means no limit
}
