package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

var _ store.BillingStore = (*Store)(nil)

const billingColumns = `id, type, occurred_at, received_at, outcome, subscription_id, customer_ref, email,
	coalesce(customer_id::text, ''), set_tier, tier, previous_tier, new_tier, payload`

// RecordBillingEvent records e and applies its tier change in one
// transaction. The customer's row is locked (FOR UPDATE) before its
// events are read for store.BillingOutcomeOf, so concurrent events of one
// customer queue and each sees the one before. Two
// deliveries of one webhook id racing past the duplicate check collide on
// the primary key: the loser's transaction, tier change included, rolls
// back and it answers the winner's record as a duplicate.
func (s *Store) RecordBillingEvent(ctx context.Context, e store.BillingEvent) (store.BillingEvent, bool, error) {
	op := fmt.Sprintf("record billing event %q", e.ID)
	if e.ID == "" || e.Type == "" || e.OccurredAt.IsZero() {
		return store.BillingEvent{}, false, invalid(op, "id, type and occurrence time are required")
	}
	e.OccurredAt = micro(e.OccurredAt).UTC()
	e.ReceivedAt = s.stamp()
	e.CustomerID, e.PreviousTier, e.NewTier = "", "", ""
	if e.Payload == nil {
		e.Payload = []byte{}
	}

	var rec store.BillingEvent
	var duplicate bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prev, err := getBillingEvent(ctx, tx, e.ID)
		if err == nil {
			rec, duplicate = prev, true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		c, found, err := lockBillingCustomer(ctx, tx, e.CustomerRef, e.Email)
		if err != nil {
			return err
		}
		if found {
			e.CustomerID = c.ID
		}
		// Stamped under the customer's lock: of events of one instant,
		// the one recorded later is the one that arrived later.
		e.ReceivedAt = s.stamp()
		switch {
		case !e.SetTier:
			e.Outcome = store.BillingRecorded
		case !e.Tier.Valid():
			e.Outcome = store.BillingUnknownTier
		case !found:
			e.Outcome = store.BillingUnknownCustomer
		default:
			// The customer's tier-setting events, in the order they
			// happened (of one instant, in the order they arrived): the
			// row lock makes the events of a customer arrive one by one.
			history, err := billingHistory(ctx, tx, c.ID)
			if err != nil {
				return err
			}
			// The latest setting of the tier by hand, among them.
			var hand store.BillingStep
			var handTier *string
			var handAt *time.Time
			if err := tx.QueryRow(ctx, `select tier_by_hand, tier_by_hand_at from customers where id = $1`, c.ID).Scan(&handTier, &handAt); err != nil {
				return err
			}
			if handTier != nil && handAt != nil {
				hand = store.BillingStep{OccurredAt: handAt.UTC(), Tier: store.Tier(*handTier)}
			}
			var tier store.Tier
			e.Outcome, tier = store.BillingOutcomeOf(store.WithTierSetByHand(history, hand), store.StepOf(e))
			if e.Outcome != store.BillingApplied {
				break
			}
			if _, err := tx.Exec(ctx, `update customers set tier = $2, updated_at = $3 where id = $1`,
				c.ID, string(tier), e.ReceivedAt); err != nil {
				return err
			}
			e.PreviousTier, e.NewTier = c.Tier, tier
		}
		var customerID *string
		if e.CustomerID != "" {
			customerID = &e.CustomerID
		}
		_, err = tx.Exec(ctx, `
			insert into billing_events (id, type, occurred_at, received_at, outcome, subscription_id,
				customer_ref, email, customer_id, set_tier, tier, previous_tier, new_tier, payload, ends_subscription)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			e.ID, e.Type, e.OccurredAt, e.ReceivedAt, string(e.Outcome), e.SubscriptionID,
			e.CustomerRef, e.Email, customerID, e.SetTier, string(e.Tier), string(e.PreviousTier), string(e.NewTier), e.Payload, e.EndsSubscription)
		if err != nil {
			return err
		}
		rec = e
		return nil
	})
	if pgCode(err) == uniqueViolation {
		// Another delivery of the same id committed first.
		prev, gerr := s.GetBillingEvent(ctx, e.ID)
		if gerr != nil {
			return store.BillingEvent{}, false, gerr
		}
		return prev, true, nil
	}
	if err != nil {
		return store.BillingEvent{}, false, wrap(op, err)
	}
	return rec, duplicate, nil
}

// tierSettingEvents picks, from billing_events e, a customer's
// tier-setting events: those of a known tier it was found for.
const tierSettingEvents = `e.set_tier and e.outcome in ('applied', 'stale', 'superseded')`

// billingHistory returns the customer's tier-setting events, in the order
// they happened (of one instant, in the order they arrived).
func billingHistory(ctx context.Context, q billingReader, customerID string) ([]store.BillingStep, error) {
	rows, _ := q.Query(ctx, `
		select e.occurred_at, e.subscription_id, e.tier, e.ends_subscription from billing_events e
		where e.customer_id = $1 and `+tierSettingEvents+`
		order by e.occurred_at, e.received_at, e.id`, customerID)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.BillingStep, error) {
		var st store.BillingStep
		var tier string
		err := row.Scan(&st.OccurredAt, &st.SubscriptionID, &tier, &st.EndsSubscription)
		st.Tier = store.Tier(tier)
		return st, err
	})
}

// ReturnTierToBilling forgets the customer's tier set by hand and sets the
// tier its billing events leave (store.BillingTier; STARTER when none sets
// one), in one transaction that holds the customer's row lock, the one
// RecordBillingEvent takes, from reading the events to the update.
func (s *Store) ReturnTierToBilling(ctx context.Context, id string) (store.Customer, error) {
	op := fmt.Sprintf("return tier of customer %q to billing", id)
	if !validID(id) {
		return store.Customer{}, notFound(op)
	}
	var c store.Customer
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `select id::text from customers where id = $1 for update`, id)
		if _, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		history, err := billingHistory(ctx, tx, id)
		if err != nil {
			return err
		}
		tier, ok := store.BillingTier(history)
		if !ok {
			tier = store.Starter
		}
		rows, _ = tx.Query(ctx, `
			update customers set tier = $2, updated_at = $3, tier_by_hand = null, tier_by_hand_at = null where id = $1
			returning `+customerColumns, id, string(tier), s.stamp())
		c, err = pgx.CollectExactlyOneRow(rows, scanCustomer)
		return err
	})
	if err != nil {
		return store.Customer{}, wrap(op, err)
	}
	return c, nil
}

// lockBillingCustomer finds the customer an event names, by id and then
// by email, and locks its row for the rest of the transaction.
func lockBillingCustomer(ctx context.Context, tx pgx.Tx, ref, email string) (store.Customer, bool, error) {
	const lock = `select ` + customerColumns + ` from customers where %s = $1 for update`
	if validID(ref) {
		rows, _ := tx.Query(ctx, fmt.Sprintf(lock, "id"), ref)
		c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
		if err == nil {
			return c, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Customer{}, false, err
		}
	}
	email = store.NormalizeEmail(email)
	if email == "" || !storable(email) {
		return store.Customer{}, false, nil
	}
	rows, _ := tx.Query(ctx, fmt.Sprintf(lock, "email"), email)
	c, err := pgx.CollectExactlyOneRow(rows, scanCustomer)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Customer{}, false, nil
	}
	return c, err == nil, err
}

// GetBillingEvent returns the event recorded under the webhook id.
func (s *Store) GetBillingEvent(ctx context.Context, id string) (store.BillingEvent, error) {
	e, err := getBillingEvent(ctx, s.pool, id)
	return e, wrap(fmt.Sprintf("get billing event %q", id), err)
}

// billingReader is what both a pool and a transaction answer.
type billingReader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func getBillingEvent(ctx context.Context, q billingReader, id string) (store.BillingEvent, error) {
	rows, _ := q.Query(ctx, `select `+billingColumns+` from billing_events where id = $1`, id)
	return pgx.CollectExactlyOneRow(rows, scanBillingEvent)
}

// ListBillingEvents returns the events matching f, newest received first.
func (s *Store) ListBillingEvents(ctx context.Context, f store.BillingEventFilter) ([]store.BillingEvent, error) {
	op := "list billing events"
	var limit any // nil: LIMIT NULL, no limit
	if f.Limit > 0 {
		limit = f.Limit
	}
	var rows pgx.Rows
	switch {
	case f.CustomerID == "":
		rows, _ = s.pool.Query(ctx, `select `+billingColumns+` from billing_events
			order by received_at desc, id desc limit $1`, limit)
	case !validID(f.CustomerID):
		if err := ctx.Err(); err != nil {
			return nil, wrap(op, err)
		}
		return []store.BillingEvent{}, nil
	default:
		op = fmt.Sprintf("list billing events of customer %q", f.CustomerID)
		rows, _ = s.pool.Query(ctx, `select `+billingColumns+` from billing_events
			where customer_id = $1 order by received_at desc, id desc limit $2`, f.CustomerID, limit)
	}
	events, err := pgx.CollectRows(rows, scanBillingEvent)
	if err != nil {
		return nil, wrap(op, err)
	}
	return events, nil
}

func scanBillingEvent(row pgx.CollectableRow) (store.BillingEvent, error) {
	var e store.BillingEvent
	var outcome, tier, previous, set string
	err := row.Scan(&e.ID, &e.Type, &e.OccurredAt, &e.ReceivedAt, &outcome, &e.SubscriptionID,
		&e.CustomerRef, &e.Email, &e.CustomerID, &e.SetTier, &tier, &previous, &set, &e.Payload)
	e.Outcome, e.Tier, e.PreviousTier, e.NewTier = store.BillingOutcome(outcome), store.Tier(tier), store.Tier(previous), store.Tier(set)
	e.OccurredAt, e.ReceivedAt = utc(e.OccurredAt), utc(e.ReceivedAt)
	return e, err
}
