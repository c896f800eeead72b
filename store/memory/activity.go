package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/updown/updown/store"
)

// activity is a market's trades and recording gaps.
type activity struct {
	mu     sync.RWMutex
	trades []store.MarketTrade // oldest first (store.CompareMarketTrades), no two equal
	gaps   []store.Gap         // oldest first, merged (store.MergeGaps)
}

// activityOf returns the activity of the market with the slug.
func (s *Store) activityOf(slug string) (*activity, error) {
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	e, ok := s.markets[slug]
	if !ok {
		return nil, fmt.Errorf("market %q: %w", slug, store.ErrNotFound)
	}
	return e.act, nil
}

// AppendMarketTrades stores the trades the market does not have yet and
// returns how many.
func (s *Store) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	const op = "append market trades"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	batch := make([]store.MarketTrade, len(trades))
	for i, t := range trades {
		t.Time = normTime(t.Time)
		if err := t.Check(); err != nil {
			return 0, fmt.Errorf("memory: %s of %q: %w", op, slug, err)
		}
		batch[i] = t
	}
	a, err := s.activityOf(slug)
	if err != nil {
		return 0, fmt.Errorf("memory: %s: %w", op, err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	slices.SortFunc(batch, store.CompareMarketTrades)
	batch = slices.CompactFunc(batch, func(x, y store.MarketTrade) bool { return store.CompareMarketTrades(x, y) == 0 })

	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.trades); n == 0 || store.CompareMarketTrades(a.trades[n-1], batch[0]) < 0 {
		a.trades = append(a.trades, batch...) // the recorder's case: newer than all
		return len(batch), nil
	}
	before := len(a.trades)
	a.trades = mergeTrades(a.trades, batch)
	return len(a.trades) - before, nil
}

// mergeTrades merges two sorted, duplicate-free runs into a new one,
// keeping one of two equal trades.
func mergeTrades(old, add []store.MarketTrade) []store.MarketTrade {
	out := make([]store.MarketTrade, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) && j < len(add) {
		switch c := store.CompareMarketTrades(old[i], add[j]); {
		case c < 0:
			out = append(out, old[i])
			i++
		case c > 0:
			out = append(out, add[j])
			j++
		default:
			out = append(out, old[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, old[i:]...)
	return append(out, add[j:]...)
}

// ListMarketTrades returns a page of the market's trades and how many it
// has.
func (s *Store) ListMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) ([]store.MarketTrade, int, error) {
	const op = "list market trades"
	if err := live(ctx, op); err != nil {
		return nil, 0, err
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		return nil, 0, fmt.Errorf("memory: %s: %w", op, err)
	}
	a, err := s.activityOf(slug)
	if err != nil {
		return nil, 0, fmt.Errorf("memory: %s: %w", op, err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	lo, hi := a.tradeRange(q, true)
	n := max(0, hi-lo-q.Offset)
	if q.Limit > 0 {
		n = min(n, q.Limit)
	}
	page := make([]store.MarketTrade, n)
	for i := range page {
		if q.Ascending {
			page[i] = a.trades[lo+q.Offset+i]
		} else {
			page[i] = a.trades[hi-1-q.Offset-i]
		}
	}
	return page, len(a.trades), nil
}

// CountMarketTrades returns how many of the market's trades fall in q's
// time range.
func (s *Store) CountMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) (int, error) {
	const op = "count market trades"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	a, err := s.activityOf(slug)
	if err != nil {
		return 0, fmt.Errorf("memory: %s: %w", op, err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	lo, hi := a.tradeRange(q, false)
	return max(0, hi-lo), nil
}

// tradeRange returns the indexes [lo, hi) of the trades q selects before
// paging, with its keyset position applied when keyset is true. The caller
// holds a.mu.
func (a *activity) tradeRange(q store.MarketTradeQuery, keyset bool) (lo, hi int) {
	// first returns the index of the first trade for which past is true
	// (past is false, then true, along the sorted trades).
	first := func(past func(store.MarketTrade) bool) int {
		i, _ := slices.BinarySearchFunc(a.trades, true, func(t store.MarketTrade, _ bool) int {
			if past(t) {
				return 1
			}
			return -1
		})
		return i
	}
	lo, hi = 0, len(a.trades)
	if q.From != nil {
		from := normTime(*q.From)
		lo = first(func(t store.MarketTrade) bool { return !t.Time.Before(from) })
	}
	if q.To != nil {
		to := normTime(*q.To)
		hi = first(func(t store.MarketTrade) bool { return !t.Time.Before(to) })
	}
	if keyset && q.After != nil {
		after := *q.After
		after.Time = normTime(after.Time)
		if q.Ascending {
			lo = max(lo, first(func(t store.MarketTrade) bool { return store.CompareMarketTrades(t, after) > 0 }))
		} else {
			hi = min(hi, first(func(t store.MarketTrade) bool { return store.CompareMarketTrades(t, after) >= 0 }))
		}
	}
	return lo, hi
}

// RecordGaps merges the gaps into the market's and returns how many of
// them changed what it keeps (store.NewGaps).
func (s *Store) RecordGaps(ctx context.Context, slug string, gaps []store.Gap) (int, error) {
	added := 0
	err := s.changeGaps(ctx, "record gaps", slug, gaps, func(stored, batch []store.Gap) []store.Gap {
		var merged []store.Gap
		merged, added = store.NewGaps(stored, batch)
		return merged
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// RemoveGaps takes the stretches of the gaps out of the market's.
func (s *Store) RemoveGaps(ctx context.Context, slug string, gaps []store.Gap) error {
	return s.changeGaps(ctx, "remove gaps", slug, gaps, store.SubtractGaps)
}

// changeGaps checks the gaps and replaces the market's with
// change(its gaps, gaps).
func (s *Store) changeGaps(ctx context.Context, op, slug string, gaps []store.Gap, change func(stored, batch []store.Gap) []store.Gap) error {
	if err := live(ctx, op); err != nil {
		return err
	}
	batch := make([]store.Gap, len(gaps))
	for i, g := range gaps {
		g = store.Gap{From: normTime(g.From), To: normTime(g.To), Kind: g.Kind}
		if err := g.Check(); err != nil {
			return fmt.Errorf("memory: %s of %q: %w", op, slug, err)
		}
		batch[i] = g
	}
	a, err := s.activityOf(slug)
	if err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if len(batch) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gaps = change(a.gaps, batch)
	return nil
}

// ListGaps returns the market's gaps, oldest first.
func (s *Store) ListGaps(ctx context.Context, slug string) ([]store.Gap, error) {
	const op = "list gaps"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	a, err := s.activityOf(slug)
	if err != nil {
		return nil, fmt.Errorf("memory: %s: %w", op, err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return append([]store.Gap{}, a.gaps...), nil
}

// ListGapsEndingAfter returns the gaps of kind of every market that end
// after t.
func (s *Store) ListGapsEndingAfter(ctx context.Context, kind store.GapKind, t time.Time) ([]store.MarketGap, error) {
	const op = "list gaps ending after"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if _, err := store.ParseGapKind(kind.Name()); err != nil {
		return nil, fmt.Errorf("memory: %s: %w", op, err)
	}
	t = normTime(t)
	s.marketsMu.RLock()
	acts := make(map[string]*activity, len(s.markets))
	for slug, e := range s.markets {
		acts[slug] = e.act
	}
	s.marketsMu.RUnlock()
	out := []store.MarketGap{}
	for _, slug := range slices.Sorted(maps.Keys(acts)) {
		a := acts[slug]
		a.mu.RLock()
		for _, g := range a.gaps {
			if g.Kind == kind && g.To.After(t) {
				out = append(out, store.MarketGap{Market: slug, Gap: g})
			}
		}
		a.mu.RUnlock()
	}
	return out, nil
}
