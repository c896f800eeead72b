package store_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestBillingOrderIndependence: whatever order a customer's events arrive
// in, recording each as the stores do (BillingOutcomeOf over the events
// recorded before it, in the order they happened, with its tier set by
// hand among them; the tier set on BillingApplied) leaves the customer on
// the tier the events taken in the order they happened leave
// (BillingTier): random histories of activations and cancellations of a
// few subscriptions, and perhaps a tier set by hand.
func TestBillingOrderIndependence(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 2026))
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for n := range 3000 {
		var hand store.BillingStep
		if rng.IntN(2) == 0 {
			hand = store.BillingStep{OccurredAt: base.Add(time.Duration(rng.IntN(20)) * time.Minute).Add(time.Second), Tier: store.Tiers[rng.IntN(len(store.Tiers))]}
		}
		events := make([]store.BillingStep, 1+rng.IntN(7))
		for i, minute := range rng.Perm(20)[:len(events)] {
			e := store.BillingStep{
				OccurredAt:     base.Add(time.Duration(minute) * time.Minute),
				SubscriptionID: fmt.Sprintf("sub_%d", rng.IntN(3)),
				Tier:           store.Tiers[rng.IntN(len(store.Tiers))],
			}
			if rng.IntN(3) == 0 {
				e.EndsSubscription, e.Tier = true, store.Starter
			}
			events[i] = e
		}
		history := func(recorded []store.BillingStep) []store.BillingStep {
			return store.WithTierSetByHand(recorded, hand)
		}
		inTimeOrder := slices.SortedFunc(slices.Values(events), func(a, b store.BillingStep) int { return a.OccurredAt.Compare(b.OccurredAt) })
		want, ok := store.BillingTier(history(inTimeOrder))
		if !ok {
			want = store.Starter
		}

		for range 4 {
			tier, ok := store.BillingTier(history(nil)) // set by hand, or none
			if !ok {
				tier = store.Starter
			}
			var recorded []store.BillingStep
			var arrivals []string
			for _, i := range rng.Perm(len(events)) {
				e := events[i]
				outcome, to := store.BillingOutcomeOf(history(recorded), e)
				if outcome == store.BillingApplied {
					tier = to
				}
				arrivals = append(arrivals, fmt.Sprintf("%+v=%s", e, outcome))
				at := len(recorded)
				for at > 0 && e.OccurredAt.Before(recorded[at-1].OccurredAt) {
					at--
				}
				recorded = slices.Insert(recorded, at, e)
			}
			if tier != want {
				t.Fatalf("history %d (hand %+v): arrived as %v: tier %s, want %s (the events in the order they happened)",
					n, hand, arrivals, tier, want)
			}
		}
	}
}
