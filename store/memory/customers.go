package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// CreateCustomer stores c. The store assigns a UUID when ID is empty and
// the timestamps when zero; an empty tier is Starter. A taken email or ID
// is ErrConflict; an empty email or unknown tier is ErrInvalid.
func (s *Store) CreateCustomer(ctx context.Context, c store.Customer) (store.Customer, error) {
	if err := live(ctx, "create customer"); err != nil {
		return store.Customer{}, err
	}
	if c.Tier == "" {
		c.Tier = store.Starter
	}
	c.Email = store.NormalizeEmail(c.Email)
	if c.Email == "" || !c.Tier.Valid() || c.Limits.Check() != nil {
		return store.Customer{}, fmt.Errorf("memory: create customer: email %q, tier %q, limits %+v: %w",
			c.Email, c.Tier, c.Limits, store.ErrInvalid)
	}
	if c.ID == "" {
		id, err := newID()
		if err != nil {
			return store.Customer{}, err
		}
		c.ID = id
	}
	now := s.clock()
	c.CreatedAt = stamp(c.CreatedAt, now)
	c.UpdatedAt = stamp(c.UpdatedAt, now)

	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	if _, taken := s.byEmail[c.Email]; taken {
		return store.Customer{}, fmt.Errorf("memory: create customer: email %q: %w", c.Email, store.ErrConflict)
	}
	if _, taken := s.customers[c.ID]; taken {
		return store.Customer{}, fmt.Errorf("memory: create customer: id %q: %w", c.ID, store.ErrConflict)
	}
	s.customers[c.ID] = c
	s.byEmail[c.Email] = c.ID
	return c, nil
}

// GetCustomer returns the customer with the ID, or ErrNotFound.
func (s *Store) GetCustomer(ctx context.Context, id string) (store.Customer, error) {
	if err := live(ctx, "get customer"); err != nil {
		return store.Customer{}, err
	}
	s.customersMu.RLock()
	defer s.customersMu.RUnlock()
	return s.customer(id)
}

// customer returns the customer with the ID; the caller holds customersMu.
func (s *Store) customer(id string) (store.Customer, error) {
	c, ok := s.customers[id]
	if !ok {
		return store.Customer{}, fmt.Errorf("memory: customer %q: %w", id, store.ErrNotFound)
	}
	return c, nil
}

// GetCustomerByEmail returns the customer with the email, or ErrNotFound.
func (s *Store) GetCustomerByEmail(ctx context.Context, email string) (store.Customer, error) {
	if err := live(ctx, "get customer by email"); err != nil {
		return store.Customer{}, err
	}
	s.customersMu.RLock()
	defer s.customersMu.RUnlock()
	id, ok := s.byEmail[store.NormalizeEmail(email)]
	if !ok {
		return store.Customer{}, fmt.Errorf("memory: customer with email %q: %w", email, store.ErrNotFound)
	}
	return s.customer(id)
}

// ListCustomers returns every customer by CreatedAt, then ID.
func (s *Store) ListCustomers(ctx context.Context) ([]store.Customer, error) {
	if err := live(ctx, "list customers"); err != nil {
		return nil, err
	}
	s.customersMu.RLock()
	out := make([]store.Customer, 0, len(s.customers))
	for _, c := range s.customers {
		out = append(out, c)
	}
	s.customersMu.RUnlock()
	slices.SortFunc(out, func(a, b store.Customer) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// SetCustomerTier sets the customer's tier by hand and returns the
// customer. It is kept as the customer's latest tier set by hand, which
// billing events are judged against (store.BillingOutcomeOf), under
// billingMu, so no event is judged between the change and its record.
func (s *Store) SetCustomerTier(ctx context.Context, id string, tier store.Tier) (store.Customer, error) {
	if err := live(ctx, "set customer tier"); err != nil {
		return store.Customer{}, err
	}
	if !tier.Valid() {
		return store.Customer{}, fmt.Errorf("memory: set customer tier: tier %q: %w", tier, store.ErrInvalid)
	}
	s.billingMu.Lock()
	defer s.billingMu.Unlock()
	now := s.clock()
	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	c, err := s.changeCustomer(id, now, func(c *store.Customer) { c.Tier = tier })
	if err != nil {
		return store.Customer{}, err
	}
	s.tierByHand[id] = store.BillingStep{OccurredAt: now, Tier: tier, ByHand: true}
	return c, nil
}

// ReturnTierToBilling forgets the customer's tier set by hand and sets the
// tier its billing events leave (store.BillingTier; STARTER when none
// sets one), under billingMu as RecordBillingEvent.
func (s *Store) ReturnTierToBilling(ctx context.Context, id string) (store.Customer, error) {
	if err := live(ctx, "return customer tier to billing"); err != nil {
		return store.Customer{}, err
	}
	s.billingMu.Lock()
	defer s.billingMu.Unlock()
	now := s.clock()
	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	c, err := s.changeCustomer(id, now, func(c *store.Customer) {
		tier, ok := store.BillingTier(s.billingSteps[id])
		if !ok {
			tier = store.Starter
		}
		c.Tier = tier
	})
	if err != nil {
		return store.Customer{}, err
	}
	delete(s.tierByHand, id)
	return c, nil
}

// SetCustomerLimits sets the customer's own allowances.
func (s *Store) SetCustomerLimits(ctx context.Context, id string, l store.Limits) (store.Customer, error) {
	if err := live(ctx, "set customer limits"); err != nil {
		return store.Customer{}, err
	}
	if err := l.Check(); err != nil {
		return store.Customer{}, fmt.Errorf("memory: set customer limits: %w", err)
	}
	now := s.clock()
	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	return s.changeCustomer(id, now, func(c *store.Customer) { c.Limits = l })
}

// changeCustomer applies change to the customer with the ID, stamps it
// updated at now and returns it, or ErrNotFound; the caller holds
// customersMu.
func (s *Store) changeCustomer(id string, now time.Time, change func(c *store.Customer)) (store.Customer, error) {
	c, err := s.customer(id)
	if err != nil {
		return store.Customer{}, err
	}
	change(&c)
	c.UpdatedAt = now
	s.customers[id] = c
	return c, nil
}

// cloneKey returns k with its hash and revocation time copied.
func cloneKey(k store.APIKey) store.APIKey {
	k.Hash = slices.Clone(k.Hash)
	k.RevokedAt = clonePtr(k.RevokedAt)
	return k
}

// CreateAPIKey stores k, unrevoked, with an ID of the store's and
// CreatedAt when zero. An unknown customer is ErrNotFound, a taken hash
// ErrConflict and an empty hash ErrInvalid.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKey) (store.APIKey, error) {
	if err := live(ctx, "create api key"); err != nil {
		return store.APIKey{}, err
	}
	if len(k.Hash) == 0 {
		return store.APIKey{}, fmt.Errorf("memory: create api key %q: empty hash: %w", k.Prefix, store.ErrInvalid)
	}
	id, err := newID()
	if err != nil {
		return store.APIKey{}, err
	}
	k = cloneKey(k)
	k.ID = id
	k.CreatedAt = stamp(k.CreatedAt, s.clock())
	k.RevokedAt = nil

	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	if _, err := s.customer(k.CustomerID); err != nil {
		return store.APIKey{}, fmt.Errorf("memory: create api key %q: %w", k.Prefix, err)
	}
	if _, taken := s.keyByHash[string(k.Hash)]; taken {
		return store.APIKey{}, fmt.Errorf("memory: create api key %q: hash: %w", k.Prefix, store.ErrConflict)
	}
	s.keys[k.ID] = &k
	s.keyByHash[string(k.Hash)] = k.ID
	s.keysOf[k.CustomerID] = append(s.keysOf[k.CustomerID], k.ID)
	return cloneKey(k), nil
}

// LookupAPIKey returns the unrevoked key with the hash and its owner, or
// ErrNotFound.
func (s *Store) LookupAPIKey(ctx context.Context, hash []byte) (store.APIKey, store.Customer, error) {
	if err := live(ctx, "lookup api key"); err != nil {
		return store.APIKey{}, store.Customer{}, err
	}
	s.customersMu.RLock()
	defer s.customersMu.RUnlock()
	k, ok := s.keys[s.keyByHash[string(hash)]]
	if !ok || k.RevokedAt != nil {
		return store.APIKey{}, store.Customer{}, fmt.Errorf("memory: lookup api key: %w", store.ErrNotFound)
	}
	c, err := s.customer(k.CustomerID)
	if err != nil {
		return store.APIKey{}, store.Customer{}, err
	}
	return cloneKey(*k), c, nil
}

// ListAPIKeys returns the customer's keys, revoked ones included, by
// CreatedAt, then ID. An unknown customer has none.
func (s *Store) ListAPIKeys(ctx context.Context, customerID string) ([]store.APIKey, error) {
	if err := live(ctx, "list api keys"); err != nil {
		return nil, err
	}
	s.customersMu.RLock()
	ids := s.keysOf[customerID]
	out := make([]store.APIKey, len(ids))
	for i, id := range ids {
		out[i] = cloneKey(*s.keys[id])
	}
	s.customersMu.RUnlock()
	slices.SortFunc(out, func(a, b store.APIKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeAPIKey marks the key revoked; a revoked key keeps its first
// revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	if err := live(ctx, "revoke api key"); err != nil {
		return err
	}
	now := s.clock()
	s.customersMu.Lock()
	defer s.customersMu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return fmt.Errorf("memory: revoke api key %q: %w", id, store.ErrNotFound)
	}
	if k.RevokedAt == nil {
		k.RevokedAt = &now
	}
	return nil
}

// GetAPIKey returns the key with the id, revoked or not, or ErrNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (store.APIKey, error) {
	if err := live(ctx, "get api key"); err != nil {
		return store.APIKey{}, err
	}
	s.customersMu.RLock()
	defer s.customersMu.RUnlock()
	k, ok := s.keys[id]
	if !ok {
		return store.APIKey{}, fmt.Errorf("memory: get api key %q: %w", id, store.ErrNotFound)
	}
	return cloneKey(*k), nil
}

// PageAPIKeys returns a page of the customer's keys, unrevoked first, then
// revoked, each newest first, with the customer's counts.
func (s *Store) PageAPIKeys(ctx context.Context, customerID string, limit, offset int) (store.APIKeyPage, error) {
	if err := live(ctx, "page api keys"); err != nil {
		return store.APIKeyPage{}, err
	}
	if limit < 0 || offset < 0 {
		return store.APIKeyPage{}, fmt.Errorf("memory: page api keys: limit %d, offset %d: %w", limit, offset, store.ErrInvalid)
	}
	s.customersMu.RLock()
	ids := s.keysOf[customerID]
	all := make([]*store.APIKey, len(ids))
	page := store.APIKeyPage{Keys: []store.APIKey{}, Total: len(ids)}
	for i, id := range ids {
		all[i] = s.keys[id]
		if all[i].RevokedAt == nil {
			page.Live++
		}
	}
	if limit > 0 && offset < len(all) {
		slices.SortFunc(all, func(a, b *store.APIKey) int {
			if ar, br := a.RevokedAt != nil, b.RevokedAt != nil; ar != br {
				if ar {
					return 1
				}
				return -1
			}
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		for _, k := range all[offset:min(len(all), offset+limit)] {
			page.Keys = append(page.Keys, cloneKey(*k))
		}
	}
	s.customersMu.RUnlock()
	return page, nil
}

// TiersSetByHand names the customers whose latest tier set by hand is, in
// the order their billing events happened, still their tier
// (store.TierSetByHand), under billingMu, which guards both.
func (s *Store) TiersSetByHand(ctx context.Context) (map[string]bool, error) {
	if err := live(ctx, "list tiers set by hand"); err != nil {
		return nil, err
	}
	s.billingMu.Lock()
	defer s.billingMu.Unlock()
	out := map[string]bool{}
	for id, hand := range s.tierByHand {
		if store.TierSetByHand(store.WithTierSetByHand(s.billingSteps[id], hand)) {
			out[id] = true
		}
	}
	return out, nil
}
