package store

import "context"

// LiveExchange keeps the hot exchange data every api process must see the
// same: the latest depth and the recent trades of each coin and market
// kind. Production keeps it in Redis (store/redis); the collector writes
// it, the api reads it.
type LiveExchange interface {
	// SetLatestDepth replaces the latest depth of the coin and kind. An
	// older snapshot (by Time) than the one stored is ignored, so late
	// writes never roll the latest back.
	SetLatestDepth(ctx context.Context, coin Coin, kind ExchangeKind, d DepthSnapshot) error
	// LatestDepth returns the latest depth, or ErrNotFound when none was
	// recorded yet.
	LatestDepth(ctx context.Context, coin Coin, kind ExchangeKind) (DepthSnapshot, error)
	// AddTrades records trades (any order; a trade id already kept is
	// ignored) and keeps only the most recent MaxRecentTrades by id.
	AddTrades(ctx context.Context, coin Coin, kind ExchangeKind, trades []Trade) error
	// RecentTrades returns up to limit of the most recent trades, newest
	// (highest id) first; an empty slice when none were recorded.
	RecentTrades(ctx context.Context, coin Coin, kind ExchangeKind, limit int) ([]Trade, error)
}

// MaxRecentTrades is how many trades per coin and kind LiveExchange keeps:
// the API serves at most 1,000.
const MaxRecentTrades = 1000
