package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

var _ store.ImportStore = (*Store)(nil)

// BeginImport starts an import. Its writes are held in the transaction and
// applied on Commit, after every one was checked, so that a failed import
// leaves the store as it was. One import runs at a time.
func (s *Store) BeginImport(ctx context.Context) (store.ImportTx, error) {
	if err := live(ctx, "begin import"); err != nil {
		return nil, err
	}
	s.importsMu.Lock()
	return &importTx{s: s, markets: map[string]*stagedMarket{}}, nil
}

// ListImports returns the committed imports, oldest first.
func (s *Store) ListImports(ctx context.Context) ([]store.Import, error) {
	if err := live(ctx, "list imports"); err != nil {
		return nil, err
	}
	s.importsMu.Lock()
	defer s.importsMu.Unlock()
	out := make([]store.Import, len(s.imports))
	for i, imp := range s.imports {
		imp.Files = slices.Clone(imp.Files)
		out[i] = imp
	}
	return out, nil
}

// importTx stages an import's writes.
type importTx struct {
	s     *Store
	done  bool
	order []string // slugs in the order first written
	// markets by slug: those the import created or added a source to.
	markets map[string]*stagedMarket
}

type stagedMarket struct {
	m       store.Market // as it will be stored
	created bool
	snaps   []store.Snapshot
	trades  []store.MarketTrade
	gaps    []gapReplace
}

type gapReplace struct {
	from, to time.Time
	gaps     []store.Gap
}

func (tx *importTx) check(ctx context.Context, op string) error {
	if tx.done {
		return fmt.Errorf("memory: %s: the import has ended: %w", op, store.ErrInvalid)
	}
	return live(ctx, op)
}

func (tx *importTx) MarketsByCondition(ctx context.Context, ids []string) ([]store.Market, error) {
	if err := tx.check(ctx, "markets by condition"); err != nil {
		return nil, err
	}
	var out []store.Market
	seen := map[string]bool{}
	for _, sm := range tx.markets {
		if slices.Contains(ids, sm.m.ConditionID) {
			out = append(out, cloneMarket(sm.m))
			seen[sm.m.Slug] = true
		}
	}
	tx.s.marketsMu.RLock()
	defer tx.s.marketsMu.RUnlock()
	for _, e := range tx.s.ordered {
		if !seen[e.m.Slug] && slices.Contains(ids, e.m.ConditionID) {
			out = append(out, cloneMarket(e.m))
		}
	}
	return out, nil
}

// staged returns the market's staging entry, made from the stored market
// on first use; ok is false for a market neither stored nor added.
func (tx *importTx) staged(slug string) (*stagedMarket, bool) {
	if sm, ok := tx.markets[slug]; ok {
		return sm, true
	}
	tx.s.marketsMu.RLock()
	e, ok := tx.s.markets[slug]
	var m store.Market
	if ok {
		m = cloneMarket(e.m)
	}
	tx.s.marketsMu.RUnlock()
	if !ok {
		return nil, false
	}
	sm := &stagedMarket{m: m}
	tx.markets[slug] = sm
	tx.order = append(tx.order, slug)
	return sm, true
}

func (tx *importTx) AddMarket(ctx context.Context, m store.Market, source string) (bool, error) {
	const op = "import: add market"
	if err := tx.check(ctx, op); err != nil {
		return false, err
	}
	if m.Slug == "" || source == "" {
		return false, fmt.Errorf("memory: %s: a market without a slug or a source without a name: %w", op, store.ErrInvalid)
	}
	if sm, ok := tx.markets[m.Slug]; ok && sm.created {
		m = normMarket(m)
		m.DataSources = []string{source}
		sm.m = m
		return false, nil
	}
	if sm, ok := tx.staged(m.Slug); ok {
		// Merged at the times as kept, as the stored ones are: a change
		// within the microsecond of a stored one is at its instant.
		m = normMarket(m)
		if len(m.TickSizeChanges) > 0 && !slices.Contains(sm.m.DataSources, store.DataRecorder) {
			sm.m.TickSizeChanges = store.MergeTickChanges(sm.m.TickSizeChanges, m.TickSizeChanges)
			last := sm.m.TickSizeChanges[len(sm.m.TickSizeChanges)-1].TickSize
			sm.m.TickSize = &last
		}
		if !slices.Contains(sm.m.DataSources, store.DataRecorder) {
			sm.m = sm.m.SettleFrom(m)
		}
		sm.m.DataSources = store.AddDataSource(sm.m.DataSources, source)
		// Stamped at Commit: the import changes the market's data, and
		// caches keyed by the record must not serve what it was.
		sm.m.UpdatedAt = time.Time{}
		return false, nil
	}
	tx.s.marketsMu.RLock()
	_, taken := tx.s.byMarketID[m.MarketID]
	tx.s.marketsMu.RUnlock()
	for _, sm := range tx.markets {
		taken = taken || (m.MarketID != "" && sm.m.MarketID == m.MarketID)
	}
	if m.MarketID != "" && taken {
		return false, fmt.Errorf("memory: %s %q: market_id %q belongs to another market: %w", op, m.Slug, m.MarketID, store.ErrConflict)
	}
	m = normMarket(m)
	m.DataSources = []string{source}
	tx.markets[m.Slug] = &stagedMarket{m: m, created: true}
	tx.order = append(tx.order, m.Slug)
	return true, nil
}

func (tx *importTx) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	const op = "import: append snapshots"
	if err := tx.check(ctx, op); err != nil {
		return 0, err
	}
	if err := store.CheckSnapshots(snaps); err != nil {
		return 0, fmt.Errorf("memory: %s of %q: %w", op, slug, err)
	}
	sm, ok := tx.staged(slug)
	if !ok {
		return 0, fmt.Errorf("memory: %s of %q: %w", op, slug, store.ErrNotFound)
	}
	before := len(sm.snaps)
	for _, sn := range snaps {
		sn.Time = normTime(sn.Time)
		sm.snaps = append(sm.snaps, sn)
	}
	// Counted for real at Commit; here what was handed over.
	return len(sm.snaps) - before, nil
}

func (tx *importTx) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	const op = "import: append market trades"
	if err := tx.check(ctx, op); err != nil {
		return 0, err
	}
	sm, ok := tx.staged(slug)
	if !ok {
		return 0, fmt.Errorf("memory: %s of %q: %w", op, slug, store.ErrNotFound)
	}
	for _, t := range trades {
		t.Time = normTime(t.Time)
		if err := t.Check(); err != nil {
			return 0, fmt.Errorf("memory: %s of %q: %w", op, slug, err)
		}
		sm.trades = append(sm.trades, t)
	}
	return len(trades), nil
}

func (tx *importTx) ReplaceGaps(ctx context.Context, slug string, from, to time.Time, gaps []store.Gap) error {
	const op = "import: replace gaps"
	if err := tx.check(ctx, op); err != nil {
		return err
	}
	sm, ok := tx.staged(slug)
	if !ok {
		return fmt.Errorf("memory: %s of %q: %w", op, slug, store.ErrNotFound)
	}
	batch := make([]store.Gap, len(gaps))
	for i, g := range gaps {
		g = store.Gap{From: normTime(g.From), To: normTime(g.To), Kind: g.Kind}
		if err := g.Check(); err != nil {
			return fmt.Errorf("memory: %s of %q: %w", op, slug, err)
		}
		batch[i] = g
	}
	sm.gaps = append(sm.gaps, gapReplace{from: normTime(from), to: normTime(to), gaps: batch})
	return nil
}

// Commit applies the staged writes, every one checked when staged, and
// counts what they added.
func (tx *importTx) Commit(ctx context.Context, imp store.Import) (store.Import, bool, error) {
	const op = "import: commit"
	if err := tx.check(ctx, op); err != nil {
		return store.Import{}, false, err
	}
	s := tx.s
	defer tx.end()
	for _, old := range s.imports {
		if old.Key == imp.Key && imp.Key != "" {
			old.Files = slices.Clone(old.Files)
			return old, false, nil
		}
	}
	imp.Markets, imp.Snapshots, imp.Trades, imp.Gaps = 0, 0, 0, 0
	for _, slug := range tx.order {
		sm := tx.markets[slug]
		if err := s.UpsertMarkets(ctx, []store.Market{sm.m}); err != nil {
			return store.Import{}, false, fmt.Errorf("memory: %s: %w", op, err)
		}
		if sm.created {
			imp.Markets++
		}
		n, err := s.AppendSnapshots(ctx, slug, sm.snaps)
		if err != nil {
			return store.Import{}, false, fmt.Errorf("memory: %s: %w", op, err)
		}
		imp.Snapshots += int64(n)
		n, err = s.AppendMarketTrades(ctx, slug, sm.trades)
		if err != nil {
			return store.Import{}, false, fmt.Errorf("memory: %s: %w", op, err)
		}
		imp.Trades += int64(n)
		if len(sm.gaps) > 0 {
			a, err := s.activityOf(slug)
			if err != nil {
				return store.Import{}, false, fmt.Errorf("memory: %s: %w", op, err)
			}
			a.mu.Lock()
			gaps := a.gaps
			for _, r := range sm.gaps {
				gaps = store.ReplaceGaps(gaps, r.from, r.to, r.gaps)
				imp.Gaps += store.FoundGaps(r.gaps)
			}
			a.gaps = gaps
			a.mu.Unlock()
		}
	}
	imp.ID = int64(len(s.imports) + 1)
	imp.CreatedAt = s.clock()
	imp.From, imp.To = normTime(imp.From), normTime(imp.To)
	imp.Files = slices.Clone(imp.Files)
	s.imports = append(s.imports, imp)
	out := imp
	out.Files = slices.Clone(imp.Files)
	return out, true, nil
}

func (tx *importTx) Rollback(ctx context.Context) error {
	if !tx.done {
		tx.end()
	}
	return nil
}

func (tx *importTx) end() {
	tx.done = true
	tx.markets = nil
	tx.s.importsMu.Unlock()
}
