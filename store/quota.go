package store

import (
	"context"
	"errors"
	"time"
)

// ErrQuotaExceeded means a customer's monthly AI generations are spent.
var ErrQuotaExceeded = errors.New("quota exceeded")

// QuotaStore counts Backtest AI generations per customer and calendar
// month. A generation is reserved before it runs and released if it fails,
// so concurrent requests can never spend more than the limit.
type QuotaStore interface {
	// ReserveAIGeneration atomically takes one generation of the month that
	// starts at period (UTC, first day 00:00) if fewer than limit are used
	// (limit < 0: unlimited) and returns the count used after it; with none
	// left it returns ErrQuotaExceeded and the count used.
	ReserveAIGeneration(ctx context.Context, customerID string, period time.Time, limit int) (used int, err error)
	// ReleaseAIGeneration gives back one reserved generation (never below 0).
	ReleaseAIGeneration(ctx context.Context, customerID string, period time.Time) error
	// AIGenerationsUsed returns the generations used in the month.
	AIGenerationsUsed(ctx context.Context, customerID string, period time.Time) (int, error)
}
