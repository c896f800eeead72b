package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/updown/updown/store"
)

// maxTradeID bounds trade ids as the Redis implementation must (a
// sorted-set score is exact up to 2^53), so that both behave alike.
const maxTradeID = 1 << 53

// liveKey names one coin and market kind.
type liveKey struct {
	coin store.Coin
	kind store.ExchangeKind
}

// LiveExchange is an in-memory store.LiveExchange: dev mode without Redis,
// and tests. It passes the same conformance suite (storetest.RunLive) as the
// Redis implementation, but it is one process's: api processes that must
// agree share Redis instead. It copies on the way in and out, so callers
// never share its slices.
type LiveExchange struct {
	mu     sync.RWMutex
	depth  map[liveKey]store.DepthSnapshot
	trades map[liveKey][]store.Trade // id descending, at most MaxRecentTrades
}

var _ store.LiveExchange = (*LiveExchange)(nil)

// NewLive returns an empty LiveExchange.
func NewLive() *LiveExchange {
	return &LiveExchange{
		depth:  map[liveKey]store.DepthSnapshot{},
		trades: map[liveKey][]store.Trade{},
	}
}

// SetLatestDepth implements store.LiveExchange. d.Kind may be empty (the
// kind argument says it) but not another kind; Time is kept to the
// millisecond, as Binance stamps it.
func (l *LiveExchange) SetLatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind, d store.DepthSnapshot) error {
	op := fmt.Sprintf("set latest depth of %s %s", coin, kind)
	if err := checkLive(ctx, op, coin, kind); err != nil {
		return err
	}
	if d.Kind != "" && d.Kind != kind {
		return fmt.Errorf("memory: %s: snapshot is of kind %q: %w", op, d.Kind, store.ErrInvalid)
	}
	d = copyDepth(d)
	d.Kind, d.Time = kind, toMillis(d.Time)
	k := liveKey{coin, kind}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.depth[k]; ok && cur.Time.After(d.Time) {
		return nil
	}
	l.depth[k] = d
	return nil
}

// LatestDepth implements store.LiveExchange.
func (l *LiveExchange) LatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind) (store.DepthSnapshot, error) {
	op := fmt.Sprintf("latest depth of %s %s", coin, kind)
	if err := checkLive(ctx, op, coin, kind); err != nil {
		return store.DepthSnapshot{}, err
	}
	l.mu.RLock()
	d, ok := l.depth[liveKey{coin, kind}]
	l.mu.RUnlock()
	if !ok {
		return store.DepthSnapshot{}, fmt.Errorf("memory: %s: %w", op, store.ErrNotFound)
	}
	return copyDepth(d), nil
}

// AddTrades implements store.LiveExchange. Ids must lie in [0, 2^53] (as
// the Redis implementation requires); a batch with any other is ErrInvalid
// and stores nothing. Of one id twice in a batch the first is kept.
func (l *LiveExchange) AddTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, trades []store.Trade) error {
	op := fmt.Sprintf("add trades of %s %s", coin, kind)
	if err := checkLive(ctx, op, coin, kind); err != nil {
		return err
	}
	for i, t := range trades {
		if t.ID < 0 || t.ID > maxTradeID {
			return fmt.Errorf("memory: %s: trade %d of %d has id %d outside [0, 2^53]: %w", op, i+1, len(trades), t.ID, store.ErrInvalid)
		}
	}
	if len(trades) == 0 {
		return nil
	}
	k := liveKey{coin, kind}
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.trades[k]
	seen := make(map[int64]struct{}, len(kept)+len(trades))
	for _, t := range kept {
		seen[t.ID] = struct{}{}
	}
	merged := slices.Clone(kept)
	for _, t := range trades {
		if _, dup := seen[t.ID]; dup {
			continue
		}
		seen[t.ID] = struct{}{}
		merged = append(merged, copyTrade(t))
	}
	slices.SortFunc(merged, func(a, b store.Trade) int { return cmp.Compare(b.ID, a.ID) })
	l.trades[k] = slices.Clip(merged[:min(len(merged), store.MaxRecentTrades)])
	return nil
}

// RecentTrades implements store.LiveExchange. A limit of 0 means every
// trade kept; a negative one is ErrInvalid.
func (l *LiveExchange) RecentTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, limit int) ([]store.Trade, error) {
	op := fmt.Sprintf("recent trades of %s %s", coin, kind)
	if err := checkLive(ctx, op, coin, kind); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("memory: %s: limit %d: %w", op, limit, store.ErrInvalid)
	}
	l.mu.RLock()
	kept := l.trades[liveKey{coin, kind}]
	if limit == 0 || limit > len(kept) {
		limit = len(kept)
	}
	out := make([]store.Trade, limit)
	for i, t := range kept[:limit] {
		out[i] = copyTrade(t)
	}
	l.mu.RUnlock()
	return out, nil
}

// checkLive reports a done context or a coin and kind that name no series.
func checkLive(ctx context.Context, op string, coin store.Coin, kind store.ExchangeKind) error {
	if err := live(ctx, op); err != nil {
		return err
	}
	if !coin.Valid() || !kind.Valid() {
		return fmt.Errorf("memory: %s: coin %q, kind %q: %w", op, coin, kind, store.ErrInvalid)
	}
	return nil
}

// toMillis returns t as LiveExchange keeps it: to the millisecond, in UTC.
func toMillis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// copyDepth returns d with sides of its own, sharing one allocation and
// capped so that appending to one side cannot overwrite the other.
func copyDepth(d store.DepthSnapshot) store.DepthSnapshot {
	nb, na := len(d.Bids), len(d.Asks)
	levels := make([]store.DepthLevel, nb+na)
	copy(levels, d.Bids)
	copy(levels[nb:], d.Asks)
	d.Bids, d.Asks = levels[:nb:nb], levels[nb:nb+na:nb+na]
	return d
}

// copyTrade returns t with its time as kept and an IsBestMatch of its own.
func copyTrade(t store.Trade) store.Trade {
	t.Time = toMillis(t.Time)
	if t.IsBestMatch != nil {
		v := *t.IsBestMatch
		t.IsBestMatch = &v
	}
	return t
}
