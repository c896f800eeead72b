package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// marketEntry is a stored market, its snapshots, trades and gaps. The
// market is replaced under marketsMu; the timeline and the activity, made
// with the entry, are never replaced and have locks of their own.
type marketEntry struct {
	m     store.Market // as kept: times normalized, pointers owned
	snaps *timeline
	act   *activity
}

// cloneMarket returns m with pointer fields copied, so that neither side
// can change the other's.
func cloneMarket(m store.Market) store.Market {
	m.CoinPriceStart = clonePtr(m.CoinPriceStart)
	m.CoinPriceEnd = clonePtr(m.CoinPriceEnd)
	m.Winner = clonePtr(m.Winner)
	m.FinalVolume = clonePtr(m.FinalVolume)
	m.FinalLiquidity = clonePtr(m.FinalLiquidity)
	m.ResolvedAt = clonePtr(m.ResolvedAt)
	m.TakerFeeRate = clonePtr(m.TakerFeeRate)
	m.FeeExponent = clonePtr(m.FeeExponent)
	m.MakerRebateRate = clonePtr(m.MakerRebateRate)
	m.TickSize = clonePtr(m.TickSize)
	m.TickSizeChanges = slices.Clone(m.TickSizeChanges)
	m.MinOrderSize = clonePtr(m.MinOrderSize)
	m.PriceToBeat = clonePtr(m.PriceToBeat)
	m.FinalPrice = clonePtr(m.FinalPrice)
	m.DataSources = slices.Clone(m.DataSources)
	return m
}

// normMarket returns a copy of m with its times as kept, its tick changes
// in time order, one at an instant (store.SortTickChanges).
func normMarket(m store.Market) store.Market {
	m = cloneMarket(m)
	m.StartTime = normTime(m.StartTime)
	m.EndTime = normTime(m.EndTime)
	m.ResolvedAt = normTimePtr(m.ResolvedAt)
	if len(m.TickSizeChanges) == 0 {
		m.TickSizeChanges = nil // none is none, however the caller spelled it
	}
	for i := range m.TickSizeChanges {
		m.TickSizeChanges[i].Time = normTime(m.TickSizeChanges[i].Time)
	}
	m.TickSizeChanges = store.SortTickChanges(m.TickSizeChanges)
	m.CreatedAt = normTime(m.CreatedAt)
	m.UpdatedAt = normTime(m.UpdatedAt)
	return m
}

// compareOrder orders markets by start_time descending, then slug ascending.
func compareOrder(a, b *store.Market) int {
	if c := b.StartTime.Compare(a.StartTime); c != 0 {
		return c
	}
	return strings.Compare(a.Slug, b.Slug)
}

// UpsertMarkets inserts or updates the markets, all or none: a market
// without a slug is ErrInvalid, a market_id held by another slug (counting
// the batch's earlier markets) is ErrConflict, and either stores nothing.
// A market's empty market_id is not indexed.
func (s *Store) UpsertMarkets(ctx context.Context, markets []store.Market) error {
	_, err := s.upsertMarkets(ctx, "upsert markets", markets, false)
	return err
}

// UpsertMarketsNewer is UpsertMarkets leaving as it is every market stored
// with a later updated_at than the one given (a record without one is
// written), under the store's lock. It returns how many it wrote.
func (s *Store) UpsertMarketsNewer(ctx context.Context, markets []store.Market) (int, error) {
	return s.upsertMarkets(ctx, "upsert newer markets", markets, true)
}

// upsertMarkets writes the markets, all of them or none (newer: only those
// as new as the stored ones), and returns how many it wrote.
func (s *Store) upsertMarkets(ctx context.Context, op string, markets []store.Market, newer bool) (int, error) {
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	batch := make([]store.Market, 0, len(markets))
	for i, m := range markets {
		if m.Slug == "" {
			return 0, fmt.Errorf("memory: %s: market %d of %d has no slug: %w", op, i+1, len(markets), store.ErrInvalid)
		}
		batch = append(batch, normMarket(m))
	}
	now := s.clock()

	s.marketsMu.Lock()
	defer s.marketsMu.Unlock()
	if newer {
		keep := batch[:0]
		for _, m := range batch {
			if e, ok := s.markets[m.Slug]; !ok || !e.m.UpdatedAt.After(stamp(m.UpdatedAt, now)) {
				keep = append(keep, m)
			}
		}
		batch = keep
	}
	if err := s.checkMarketIDs(batch); err != nil {
		return 0, err
	}
	for _, m := range batch {
		s.putMarket(m, now)
	}
	return len(batch), nil
}

// SwapMarket writes m over the stored market if its updated_at is still
// was, under the store's lock.
func (s *Store) SwapMarket(ctx context.Context, m store.Market, was time.Time) (store.Market, bool, error) {
	const op = "swap market"
	if err := live(ctx, op); err != nil {
		return store.Market{}, false, err
	}
	m = normMarket(m)
	now := s.clock()
	s.marketsMu.Lock()
	defer s.marketsMu.Unlock()
	e, ok := s.markets[m.Slug]
	if !ok {
		return store.Market{}, false, fmt.Errorf("memory: %s %q: %w", op, m.Slug, store.ErrNotFound)
	}
	if !e.m.UpdatedAt.Equal(normTime(was)) {
		return store.Market{}, false, nil
	}
	if err := s.checkMarketIDs([]store.Market{m}); err != nil {
		return store.Market{}, false, err
	}
	// Later than was even on a clock that stands still (a test's), so that
	// a reader of was sees the change.
	m.UpdatedAt = now
	if !now.After(e.m.UpdatedAt) {
		m.UpdatedAt = e.m.UpdatedAt.Add(time.Microsecond)
	}
	s.putMarket(m, now)
	return cloneMarket(e.m), true, nil
}

// checkMarketIDs returns ErrConflict if writing the batch, one market after
// the other, would give a market_id to a second slug. It changes nothing:
// it tracks the batch's effect in maps of its own.
func (s *Store) checkMarketIDs(batch []store.Market) error {
	owner := map[string]string{} // market_id → slug ("" once released)
	idOf := map[string]string{}  // slug → market_id
	ownerOf := func(id string) string {
		if slug, ok := owner[id]; ok {
			return slug
		}
		if e, ok := s.byMarketID[id]; ok {
			return e.m.Slug
		}
		return ""
	}
	for _, m := range batch {
		if m.MarketID != "" {
			if o := ownerOf(m.MarketID); o != "" && o != m.Slug {
				return fmt.Errorf("memory: upsert market %q: market_id %q belongs to %q: %w", m.Slug, m.MarketID, o, store.ErrConflict)
			}
		}
		old, ok := idOf[m.Slug]
		if e, stored := s.markets[m.Slug]; !ok && stored {
			old = e.m.MarketID
		}
		if old != "" && old != m.MarketID {
			owner[old] = ""
		}
		if m.MarketID != "" {
			owner[m.MarketID] = m.Slug
		}
		idOf[m.Slug] = m.MarketID
	}
	return nil
}

// putMarket inserts or updates one normalized market. The caller holds
// marketsMu for writing and has checked the market_id.
func (s *Store) putMarket(m store.Market, now time.Time) {
	m.UpdatedAt = stamp(m.UpdatedAt, now)
	e, ok := s.markets[m.Slug]
	if len(m.DataSources) == 0 {
		// None given: a stored market keeps its sources, a new one was
		// recorded.
		if ok {
			m.DataSources = slices.Clone(e.m.DataSources)
		} else {
			m.DataSources = []string{store.DataRecorder}
		}
	}
	if !ok {
		m.CreatedAt = stamp(m.CreatedAt, now)
		e = &marketEntry{m: m, snaps: &timeline{}, act: &activity{}}
		s.markets[m.Slug] = e
		s.indexMarketID(e)
		s.insertOrdered(e)
		return
	}
	m.CreatedAt = e.m.CreatedAt
	if e.m.MarketID != m.MarketID && s.byMarketID[e.m.MarketID] == e {
		delete(s.byMarketID, e.m.MarketID)
	}
	if e.m.StartTime.Equal(m.StartTime) {
		e.m = m
	} else {
		s.removeOrdered(e)
		e.m = m
		s.insertOrdered(e)
	}
	s.indexMarketID(e)
}

func (s *Store) indexMarketID(e *marketEntry) {
	if e.m.MarketID != "" {
		s.byMarketID[e.m.MarketID] = e
	}
}

func (s *Store) orderedIndex(e *marketEntry) (int, bool) {
	return slices.BinarySearchFunc(s.ordered, e, func(a, b *marketEntry) int { return compareOrder(&a.m, &b.m) })
}

func (s *Store) insertOrdered(e *marketEntry) {
	i, _ := s.orderedIndex(e)
	s.ordered = slices.Insert(s.ordered, i, e)
}

func (s *Store) removeOrdered(e *marketEntry) {
	if i, ok := s.orderedIndex(e); ok {
		s.ordered = slices.Delete(s.ordered, i, i+1)
	}
}

// GetMarket returns the market with the slug, or ErrNotFound.
func (s *Store) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if err := live(ctx, "get market"); err != nil {
		return store.Market{}, err
	}
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	e, ok := s.markets[slug]
	if !ok {
		return store.Market{}, fmt.Errorf("memory: market %q: %w", slug, store.ErrNotFound)
	}
	return cloneMarket(e.m), nil
}

// GetMarketByMarketID returns the market with the external market id, or
// ErrNotFound.
func (s *Store) GetMarketByMarketID(ctx context.Context, marketID string) (store.Market, error) {
	if err := live(ctx, "get market by market id"); err != nil {
		return store.Market{}, err
	}
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	e, ok := s.byMarketID[marketID]
	if !ok {
		return store.Market{}, fmt.Errorf("memory: market with market_id %q: %w", marketID, store.ErrNotFound)
	}
	return cloneMarket(e.m), nil
}

// ListMarkets returns one page of the markets matching f, start_time
// descending and slug ascending, and how many match in all.
func (s *Store) ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error) {
	if err := live(ctx, "list markets"); err != nil {
		return nil, 0, err
	}
	if err := checkPage(f.Limit, f.Offset); err != nil {
		return nil, 0, fmt.Errorf("memory: list markets: %w", err)
	}
	match := newMarketMatcher(f)
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	page := []store.Market{}
	total := 0
	for _, e := range s.ordered {
		if !match(&e.m) {
			continue
		}
		if total >= f.Offset && (f.Limit == 0 || len(page) < f.Limit) {
			page = append(page, cloneMarket(e.m))
		}
		total++
	}
	return page, total, nil
}

// CountMarkets returns how many markets match f.
func (s *Store) CountMarkets(ctx context.Context, f store.MarketFilter) (int, error) {
	if err := live(ctx, "count markets"); err != nil {
		return 0, err
	}
	match := newMarketMatcher(f)
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	n := 0
	for _, e := range s.ordered {
		if match(&e.m) {
			n++
		}
	}
	return n, nil
}

// NthNewestStart returns the start_time of the n-th newest market of the
// coin and type that started by startedBy (any when zero); ok is false
// when there are fewer than n. n < 1 is ErrInvalid.
func (s *Store) NthNewestStart(ctx context.Context, coin store.Coin, mt store.MarketType, n int, startedBy time.Time) (time.Time, bool, error) {
	if err := live(ctx, "nth newest start"); err != nil {
		return time.Time{}, false, err
	}
	if n < 1 {
		return time.Time{}, false, fmt.Errorf("memory: nth newest start: n = %d: %w", n, store.ErrInvalid)
	}
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	for _, e := range s.ordered {
		if e.m.Coin == coin && e.m.MarketType == mt && !e.m.StartTime.After(startedBy) {
			if n--; n == 0 {
				return e.m.StartTime, true, nil
			}
		}
	}
	return time.Time{}, false, nil
}

// checkPage rejects a negative limit or offset.
func checkPage(limit, offset int) error {
	if limit < 0 || offset < 0 {
		return fmt.Errorf("limit %d, offset %d: %w", limit, offset, store.ErrInvalid)
	}
	return nil
}

// newMarketMatcher returns a predicate for f. Its times are truncated to
// the microsecond first, as a database does with a query's parameters, so
// that bounds compare as they would there.
func newMarketMatcher(f store.MarketFilter) func(*store.Market) bool {
	after, before := normTimePtr(f.StartAfter), normTimePtr(f.StartBefore)
	var w *store.Window
	if f.Window != nil {
		w = &store.Window{MinStart: normTime(f.Window.MinStart)}
		if f.Window.MinStartByType != nil {
			w.MinStartByType = make(map[store.MarketType]time.Time, len(f.Window.MinStartByType))
			for mt, t := range f.Window.MinStartByType {
				w.MinStartByType[mt] = normTime(t)
			}
		}
	}
	return func(m *store.Market) bool {
		switch {
		case f.Coin != "" && m.Coin != f.Coin,
			f.MarketType != "" && m.MarketType != f.MarketType,
			f.Resolved != nil && m.Resolved() != *f.Resolved,
			after != nil && !m.StartTime.After(*after),
			before != nil && !m.StartTime.Before(*before):
			return false
		}
		return w.Contains(*m)
	}
}
