package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/updown/updown/store"
)

var _ store.BillingStore = (*Store)(nil)

// RecordBillingEvent records e and applies its tier change under
// billingMu, which makes the duplicate check, the ordering of the
// customer's events (store.BillingOutcomeOf) and the change one step; customersMu is held across the lookup and the change so
// the customer cannot change in between.
func (s *Store) RecordBillingEvent(ctx context.Context, e store.BillingEvent) (store.BillingEvent, bool, error) {
	if err := live(ctx, "record billing event"); err != nil {
		return store.BillingEvent{}, false, err
	}
	if e.ID == "" || e.Type == "" || e.OccurredAt.IsZero() {
		return store.BillingEvent{}, false, fmt.Errorf("memory: record billing event %q: id, type and occurrence time are required: %w", e.ID, store.ErrInvalid)
	}
	e = cloneBillingEvent(e)
	e.OccurredAt = normTime(e.OccurredAt)
	e.CustomerID, e.PreviousTier, e.NewTier = "", "", ""

	s.billingMu.Lock()
	defer s.billingMu.Unlock()
	e.ReceivedAt = s.clock()
	if prev, ok := s.billing[e.ID]; ok {
		return cloneBillingEvent(prev), true, nil
	}

	s.customersMu.Lock()
	c, found := s.customers[e.CustomerRef]
	if !found && e.Email != "" {
		if id, ok := s.byEmail[store.NormalizeEmail(e.Email)]; ok {
			c, found = s.customers[id]
		}
	}
	if found {
		e.CustomerID = c.ID
	}
	switch {
	case !e.SetTier:
		e.Outcome = store.BillingRecorded
	case !e.Tier.Valid():
		e.Outcome = store.BillingUnknownTier
	case !found:
		e.Outcome = store.BillingUnknownCustomer
	default:
		steps, step := s.billingSteps[c.ID], store.StepOf(e)
		var tier store.Tier
		e.Outcome, tier = store.BillingOutcomeOf(store.WithTierSetByHand(steps, s.tierByHand[c.ID]), step)
		if e.Outcome == store.BillingApplied {
			e.PreviousTier, e.NewTier = c.Tier, tier
			c.Tier, c.UpdatedAt = tier, e.ReceivedAt
			s.customers[c.ID] = c
		}
		// After the events that happened no later, as BillingOutcomeOf
		// placed it.
		at := len(steps)
		for at > 0 && step.OccurredAt.Before(steps[at-1].OccurredAt) {
			at--
		}
		s.billingSteps[c.ID] = slices.Insert(steps, at, step)
	}
	s.customersMu.Unlock()

	s.billing[e.ID] = e
	return cloneBillingEvent(e), false, nil
}

// GetBillingEvent returns the event recorded under id, or ErrNotFound.
func (s *Store) GetBillingEvent(ctx context.Context, id string) (store.BillingEvent, error) {
	if err := live(ctx, "get billing event"); err != nil {
		return store.BillingEvent{}, err
	}
	s.billingMu.Lock()
	defer s.billingMu.Unlock()
	e, ok := s.billing[id]
	if !ok {
		return store.BillingEvent{}, fmt.Errorf("memory: billing event %q: %w", id, store.ErrNotFound)
	}
	return cloneBillingEvent(e), nil
}

// ListBillingEvents returns the events matching f, newest received first.
func (s *Store) ListBillingEvents(ctx context.Context, f store.BillingEventFilter) ([]store.BillingEvent, error) {
	if err := live(ctx, "list billing events"); err != nil {
		return nil, err
	}
	s.billingMu.Lock()
	out := make([]store.BillingEvent, 0, len(s.billing))
	for _, e := range s.billing {
		if f.CustomerID == "" || e.CustomerID == f.CustomerID {
			out = append(out, cloneBillingEvent(e))
		}
	}
	s.billingMu.Unlock()
	slices.SortFunc(out, func(a, b store.BillingEvent) int {
		if c := b.ReceivedAt.Compare(a.ReceivedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// cloneBillingEvent returns e with its payload copied.
func cloneBillingEvent(e store.BillingEvent) store.BillingEvent {
	e.Payload = slices.Clone(e.Payload)
	return e
}
