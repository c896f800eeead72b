package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/updown/updown/store"
)

var _ store.QuotaStore = (*Store)(nil)

// quotaKey is a customer's month.
type quotaKey struct {
	customer string
	period   time.Time
}

func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// ReserveAIGeneration takes one generation under the lock, so concurrent
// callers cannot pass the limit together.
func (s *Store) ReserveAIGeneration(ctx context.Context, customerID string, period time.Time, limit int) (int, error) {
	if err := live(ctx, "reserve AI generation"); err != nil {
		return 0, err
	}
	if err := s.customerExists(customerID); err != nil {
		return 0, fmt.Errorf("memory: reserve AI generation: %w", err)
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	k := quotaKey{customerID, monthOf(period)}
	used := s.quota[k]
	if limit >= 0 && used >= limit {
		return used, fmt.Errorf("memory: reserve AI generation: %w", store.ErrQuotaExceeded)
	}
	s.quota[k] = used + 1
	return used + 1, nil
}

// ReleaseAIGeneration gives one generation back, never going below zero.
func (s *Store) ReleaseAIGeneration(ctx context.Context, customerID string, period time.Time) error {
	if err := live(ctx, "release AI generation"); err != nil {
		return err
	}
	if err := s.customerExists(customerID); err != nil {
		return fmt.Errorf("memory: release AI generation: %w", err)
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	k := quotaKey{customerID, monthOf(period)}
	if s.quota[k] > 0 {
		s.quota[k]--
	}
	return nil
}

// AIGenerationsUsed returns the month's count (0 when none was taken).
func (s *Store) AIGenerationsUsed(ctx context.Context, customerID string, period time.Time) (int, error) {
	if err := live(ctx, "count AI generations"); err != nil {
		return 0, err
	}
	if err := s.customerExists(customerID); err != nil {
		return 0, fmt.Errorf("memory: count AI generations: %w", err)
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	return s.quota[quotaKey{customerID, monthOf(period)}], nil
}

func (s *Store) customerExists(id string) error {
	s.customersMu.RLock()
	defer s.customersMu.RUnlock()
	if _, ok := s.customers[id]; !ok {
		return store.ErrNotFound
	}
	return nil
}
