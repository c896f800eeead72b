package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

const customerColumns = `id::text, email, name, tier, ` + limitColumns + `, created_at, updated_at`

// limitColumns are a customer's own allowances, in store.Limits' order.
const limitColumns = `rate_per_minute, rate_per_day, ai_generations_per_month, sweep_trials, sweep_markets, sweep_replays`

// validID reports whether id is a UUID in its canonical form (lower case,
// hyphenated), the one form the store gives out. Other strings name no
// row: lookups by them are store.ErrNotFound without asking the database.
// Postgres's uuid type reads other spellings (upper case, braced, without
// hyphens) as the same id, which the memory store never did: a webhook's
// customer id found a customer on one store and not the other.
func validID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// CreateCustomer stores c, assigning an ID when it has none.
func (s *Store) CreateCustomer(ctx context.Context, c store.Customer) (store.Customer, error) {
	const op = "create customer"
	if c.Tier == "" {
		c.Tier = store.Starter
	}
	c.Email = store.NormalizeEmail(c.Email)
	if c.Email == "" || !storable(c.Email) || !storable(c.Name) || !c.Tier.Valid() || c.Limits.Check() != nil {
		return store.Customer{}, invalid(op, fmt.Sprintf("email %q, tier %q, limits %+v", c.Email, c.Tier, c.Limits))
	}
	if c.ID == "" {
		c.ID = uuid.NewString()
	} else if !validID(c.ID) {
		return store.Customer{}, invalid(op, fmt.Sprintf("id %q is not a UUID", c.ID))
	}
	now := s.stamp()
	rows, _ := s.pool.Query(ctx, `
		insert into customers (id, email, name, tier, `+limitColumns+`, created_at, updated_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
		returning `+customerColumns, c.ID, c.Email, c.Name, string(c.Tier), c.Limits.PerMinute, c.Limits.PerDay,
		c.Limits.AIGenerationsPerMonth, c.Limits.SweepTrials, c.Limits.SweepMarkets, c.Limits.SweepReplays, now)
	got, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	return got, wrap(op, err)
}

// GetCustomer returns the customer with the id.
func (s *Store) GetCustomer(ctx context.Context, id string) (store.Customer, error) {
	op := fmt.Sprintf("get customer %q", id)
	if !validID(id) {
		return store.Customer{}, notFound(op)
	}
	rows, _ := s.pool.Query(ctx, `select `+customerColumns+` from customers where id = $1`, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	return c, wrap(op, err)
}

// GetCustomerByEmail returns the customer with the email.
func (s *Store) GetCustomerByEmail(ctx context.Context, email string) (store.Customer, error) {
	email = store.NormalizeEmail(email)
	if !storable(email) {
		return store.Customer{}, notFound(fmt.Sprintf("get customer by email %q", email))
	}
	rows, _ := s.pool.Query(ctx, `select `+customerColumns+` from customers where email = $1`, email)
	c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	return c, wrap(fmt.Sprintf("get customer by email %q", email), err)
}

// ListCustomers returns every customer, oldest first.
func (s *Store) ListCustomers(ctx context.Context) ([]store.Customer, error) {
	rows, _ := s.pool.Query(ctx, `select `+customerColumns+` from customers order by created_at, id`)
	cs, err := pgx.CollectRows(rows, scanCustomer)
	if err != nil {
		return nil, wrap("list customers", err)
	}
	return cs, nil
}

// SetCustomerTier changes the customer's tier by hand, and keeps when and
// to what (tier_by_hand_at, tier_by_hand) for RecordBillingEvent. The
// update takes the row lock RecordBillingEvent takes, so no event is
// judged between the change and its record.
func (s *Store) SetCustomerTier(ctx context.Context, id string, tier store.Tier) (store.Customer, error) {
	op := fmt.Sprintf("set tier of customer %q", id)
	if !validID(id) {
		return store.Customer{}, notFound(op)
	}
	if !tier.Valid() {
		return store.Customer{}, invalid(op, fmt.Sprintf("tier %q", tier))
	}
	rows, _ := s.pool.Query(ctx, `
		update customers set tier = $2, updated_at = $3, tier_by_hand = $2, tier_by_hand_at = $3 where id = $1
		returning `+customerColumns, id, string(tier), s.stamp())
	c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	return c, wrap(op, err)
}

// SetCustomerLimits sets the customer's own allowances.
func (s *Store) SetCustomerLimits(ctx context.Context, id string, l store.Limits) (store.Customer, error) {
	op := fmt.Sprintf("set limits of customer %q", id)
	if !validID(id) {
		return store.Customer{}, notFound(op)
	}
	if err := l.Check(); err != nil {
		return store.Customer{}, wrap(op, err)
	}
	rows, _ := s.pool.Query(ctx, `
		update customers set (`+limitColumns+`, updated_at) = ($2, $3, $4, $5, $6, $7, $8) where id = $1
		returning `+customerColumns, id, l.PerMinute, l.PerDay, l.AIGenerationsPerMonth, l.SweepTrials, l.SweepMarkets, l.SweepReplays, s.stamp())
	c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	return c, wrap(op, err)
}

func scanCustomer(row pgx.CollectableRow) (store.Customer, error) {
	var c store.Customer
	var tier string
	err := row.Scan(append([]any{&c.ID, &c.Email, &c.Name, &tier}, append(limitFields(&c.Limits), &c.CreatedAt, &c.UpdatedAt)...)...)
	c.Tier = store.Tier(tier)
	c.CreatedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.UpdatedAt)
	return c, err
}

const apiKeyColumns = `k.id::text, k.customer_id::text, k.prefix, k.hash, k.created_at, k.revoked_at`

// CreateAPIKey stores a key of an existing customer.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKey) (store.APIKey, error) {
	op := fmt.Sprintf("create API key %q", k.Prefix)
	if !validID(k.CustomerID) {
		return store.APIKey{}, notFound(op + ": customer")
	}
	if k.ID == "" {
		k.ID = uuid.NewString()
	} else if !validID(k.ID) {
		return store.APIKey{}, invalid(op, fmt.Sprintf("id %q is not a UUID", k.ID))
	}
	if len(k.Hash) == 0 {
		// Stored, it would be the key of a look-up of the empty hash.
		return store.APIKey{}, invalid(op, "empty hash")
	}
	rows, _ := s.pool.Query(ctx, `
		insert into api_keys as k (id, customer_id, prefix, hash, created_at)
		values ($1, $2, $3, $4, $5)
		returning `+apiKeyColumns, k.ID, k.CustomerID, k.Prefix, k.Hash, s.stamp())
	got, err := pgx.CollectExactlyOneRow(rows, scanAPIKey)
	if pgCode(err) == foreignKeyViolation {
		return store.APIKey{}, notFound(op + ": customer")
	}
	return got, wrap(op, err)
}

// LookupAPIKey returns the unrevoked key with the hash and its owner.
func (s *Store) LookupAPIKey(ctx context.Context, hash []byte) (store.APIKey, store.Customer, error) {
	var k store.APIKey
	var c store.Customer
	var tier string
	err := s.pool.QueryRow(ctx, `
		select `+apiKeyColumns+`, c.email, c.name, c.tier, `+limitColumns+`, c.created_at, c.updated_at
		from api_keys k join customers c on c.id = k.customer_id
		where k.hash = $1 and k.revoked_at is null`, hash).Scan(
		append([]any{&k.ID, &k.CustomerID, &k.Prefix, &k.Hash, &k.CreatedAt, &k.RevokedAt, &c.Email, &c.Name, &tier},
			append(limitFields(&c.Limits), &c.CreatedAt, &c.UpdatedAt)...)...)
	if err != nil {
		return store.APIKey{}, store.Customer{}, wrap("look up API key", err)
	}
	k.CreatedAt = utc(k.CreatedAt)
	c.ID, c.Tier = k.CustomerID, store.Tier(tier)
	c.CreatedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.UpdatedAt)
	return k, c, nil
}

// ListAPIKeys returns the customer's keys, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, customerID string) ([]store.APIKey, error) {
	if !validID(customerID) {
		return []store.APIKey{}, nil
	}
	rows, _ := s.pool.Query(ctx, `
		select `+apiKeyColumns+` from api_keys k
		where k.customer_id = $1 order by k.created_at, k.id`, customerID)
	keys, err := pgx.CollectRows(rows, scanAPIKey)
	if err != nil {
		return nil, wrap(fmt.Sprintf("list API keys of customer %q", customerID), err)
	}
	return keys, nil
}

// RevokeAPIKey marks the key revoked, keeping an earlier revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	op := fmt.Sprintf("revoke API key %q", id)
	if !validID(id) {
		return notFound(op)
	}
	tag, err := s.pool.Exec(ctx, `update api_keys set revoked_at = coalesce(revoked_at, $2) where id = $1`, id, s.stamp())
	if err != nil {
		return wrap(op, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(op)
	}
	return nil
}

func scanAPIKey(row pgx.CollectableRow) (store.APIKey, error) {
	var k store.APIKey
	err := row.Scan(&k.ID, &k.CustomerID, &k.Prefix, &k.Hash, &k.CreatedAt, &k.RevokedAt)
	k.CreatedAt, k.RevokedAt = utc(k.CreatedAt), utcPtr(k.RevokedAt)
	return k, err
}

// GetAPIKey returns the key with the id, revoked or not.
func (s *Store) GetAPIKey(ctx context.Context, id string) (store.APIKey, error) {
	op := fmt.Sprintf("get API key %q", id)
	if !validID(id) {
		return store.APIKey{}, notFound(op)
	}
	rows, _ := s.pool.Query(ctx, `select `+apiKeyColumns+` from api_keys k where k.id = $1`, id)
	k, err := pgx.CollectExactlyOneRow(rows, scanAPIKey)
	return k, wrap(op, err)
}

// PageAPIKeys returns a page of the customer's keys, unrevoked first, then
// revoked, each newest first, with the customer's counts. The page reads
// api_keys_live_first in its order: the live keys, then the revoked ones
// up to the page's end, never the rest.
func (s *Store) PageAPIKeys(ctx context.Context, customerID string, limit, offset int) (store.APIKeyPage, error) {
	op := fmt.Sprintf("page API keys of customer %q", customerID)
	if limit < 0 || offset < 0 {
		return store.APIKeyPage{}, invalid(op, fmt.Sprintf("limit %d, offset %d", limit, offset))
	}
	page := store.APIKeyPage{Keys: []store.APIKey{}}
	if !validID(customerID) {
		return page, nil
	}
	b := &pgx.Batch{}
	b.Queue(`select count(*) filter (where revoked_at is null), count(*) from api_keys where customer_id = $1`, customerID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&page.Live, &page.Total) })
	if limit > 0 {
		b.Queue(`
			select `+apiKeyColumns+` from api_keys k where k.customer_id = $1
			order by (k.revoked_at is not null), k.created_at desc, k.id desc
			limit $2 offset $3`, customerID, limit, offset).
			Query(func(rows pgx.Rows) error {
				keys, err := pgx.CollectRows(rows, scanAPIKey)
				page.Keys = append(page.Keys, keys...)
				return err
			})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return store.APIKeyPage{}, wrap(op, err)
	}
	return page, nil
}

// limitFields are the scan targets of limitColumns.
func limitFields(l *store.Limits) []any {
	return []any{&l.PerMinute, &l.PerDay, &l.AIGenerationsPerMonth, &l.SweepTrials, &l.SweepMarkets, &l.SweepReplays}
}

// TiersSetByHand names the customers whose latest tier set by hand is,
// in the order their billing events happened, still their tier
// (store.TierSetByHand): one statement reads the customers with a tier
// set by hand and their tier-setting events (billingHistory's), in that
// order.
func (s *Store) TiersSetByHand(ctx context.Context) (map[string]bool, error) {
	rows, _ := s.pool.Query(ctx, `
		select c.id::text, c.tier_by_hand, c.tier_by_hand_at, e.occurred_at, e.subscription_id, e.tier, e.ends_subscription
		from customers c
		left join billing_events e on e.customer_id = c.id and `+tierSettingEvents+`
		where c.tier_by_hand is not null and c.tier_by_hand_at is not null
		order by c.id, e.occurred_at, e.received_at, e.id`)
	type customerSteps struct {
		hand    store.BillingStep
		history []store.BillingStep
	}
	var customers []string
	steps := map[string]*customerSteps{}
	var (
		id, handTier string
		handAt       time.Time
		at           *time.Time
		sub, tier    *string
		ends         *bool
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &handTier, &handAt, &at, &sub, &tier, &ends}, func() error {
		cs := steps[id]
		if cs == nil {
			cs = &customerSteps{hand: store.BillingStep{OccurredAt: handAt.UTC(), Tier: store.Tier(handTier)}}
			steps[id] = cs
			customers = append(customers, id)
		}
		if at != nil && sub != nil && tier != nil && ends != nil {
			cs.history = append(cs.history, store.BillingStep{OccurredAt: *at, SubscriptionID: *sub, Tier: store.Tier(*tier), EndsSubscription: *ends})
		}
		return nil
	})
	if err != nil {
		return nil, wrap("list tiers set by hand", err)
	}
	out := map[string]bool{}
	for _, id := range customers {
		if cs := steps[id]; store.TierSetByHand(store.WithTierSetByHand(cs.history, cs.hand)) {
			out[id] = true
		}
	}
	return out, nil
}
