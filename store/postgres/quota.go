package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

var _ store.QuotaStore = (*Store)(nil)

// ReserveAIGeneration takes one generation in a single statement: the
// conditional upsert increments only while used < limit, so concurrent
// callers can never pass the limit together.
func (s *Store) ReserveAIGeneration(ctx context.Context, customerID string, period time.Time, limit int) (int, error) {
	const op = "reserve AI generation"
	if !validID(customerID) {
		return 0, notFound(op)
	}
	day := periodDate(period)
	if limit == 0 {
		used, err := s.AIGenerationsUsed(ctx, customerID, period)
		if err != nil {
			return 0, err
		}
		return used, fmt.Errorf("postgres: %s: %w", op, store.ErrQuotaExceeded)
	}
	var used int
	err := s.pool.QueryRow(ctx, `
		insert into ai_generations (customer_id, period, used) values ($1, $2, 1)
		on conflict (customer_id, period) do update set used = ai_generations.used + 1
		where $3::int < 0 or ai_generations.used < $3::int
		returning used`, customerID, day, limit).Scan(&used)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		used, err := s.AIGenerationsUsed(ctx, customerID, period)
		if err != nil {
			return 0, err
		}
		return used, fmt.Errorf("postgres: %s: %w", op, store.ErrQuotaExceeded)
	case pgCode(err) == foreignKeyViolation:
		return 0, notFound(op)
	case err != nil:
		return 0, wrap(op, err)
	}
	return used, nil
}

// ReleaseAIGeneration gives one generation back, never going below zero.
func (s *Store) ReleaseAIGeneration(ctx context.Context, customerID string, period time.Time) error {
	const op = "release AI generation"
	if !validID(customerID) {
		return notFound(op)
	}
	_, err := s.pool.Exec(ctx, `update ai_generations set used = used - 1
		where customer_id = $1 and period = $2 and used > 0`, customerID, periodDate(period))
	return wrap(op, err)
}

// AIGenerationsUsed returns the month's count (0 when none was taken).
func (s *Store) AIGenerationsUsed(ctx context.Context, customerID string, period time.Time) (int, error) {
	const op = "count AI generations"
	if !validID(customerID) {
		return 0, notFound(op)
	}
	var used int
	err := s.pool.QueryRow(ctx, `
		select coalesce(g.used, 0) from customers c
		left join ai_generations g on g.customer_id = c.id and g.period = $2
		where c.id = $1`, customerID, periodDate(period)).Scan(&used) // no row: unknown customer
	return used, wrap(op, err)
}

// periodDate is the calendar month containing t, as its first day (UTC).
func periodDate(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
