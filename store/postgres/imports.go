package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

var _ store.ImportStore = (*Store)(nil)

// BeginImport starts an import in one transaction: a failed import rolls
// back whole. Partitions its snapshots need are created outside it (as
// every append does): an empty partition is no data.
func (s *Store) BeginImport(ctx context.Context) (store.ImportTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, wrap("begin import", err)
	}
	return &importTx{s: s, tx: tx, created: map[string]bool{}}, nil
}

const importColumns = `id, key, source, files, from_time, to_time, markets, snapshots, trades, gaps, skipped, created_at`

func scanImport(row pgx.CollectableRow) (store.Import, error) {
	var imp store.Import
	var from, to *time.Time
	err := row.Scan(&imp.ID, &imp.Key, &imp.Source, &imp.Files, &from, &to, &imp.Markets, &imp.Snapshots,
		&imp.Trades, &imp.Gaps, &imp.Skipped, &imp.CreatedAt)
	if from != nil {
		imp.From = utc(*from)
	}
	if to != nil {
		imp.To = utc(*to)
	}
	imp.CreatedAt = utc(imp.CreatedAt)
	return imp, err
}

// ListImports returns the committed imports, oldest first.
func (s *Store) ListImports(ctx context.Context) ([]store.Import, error) {
	rows, _ := s.pool.Query(ctx, `select `+importColumns+` from imports order by id`)
	out, err := pgx.CollectRows(rows, scanImport)
	if out == nil {
		out = []store.Import{}
	}
	return out, wrap("list imports", err)
}

type importTx struct {
	s                          *Store
	tx                         pgx.Tx
	created                    map[string]bool
	markets, snapshots, trades int64
	gaps                       int64
}

func (t *importTx) MarketsByCondition(ctx context.Context, ids []string) ([]store.Market, error) {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !storable(id) })
	rows, _ := t.tx.Query(ctx, `select `+marketColumns+` from markets where condition_id = any($1) order by start_time desc, slug`, ids)
	out, err := pgx.CollectRows(rows, scanMarket)
	return out, wrap("import: markets by condition", err)
}

// addMarketSQL inserts a market with the import's source as its only
// data source, or adds the source to the sources of the market stored
// under the slug, whose every other field stays (recorded wins).
const addMarketSQL = `
insert into markets (` + marketColumns + `)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
	$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, array[$30::text])
on conflict (slug) do update set
	data_sources = case when $30::text = any(markets.data_sources) then markets.data_sources
		else markets.data_sources || $30::text end
returning (xmax = 0)`

func (t *importTx) AddMarket(ctx context.Context, m store.Market, source string) (bool, error) {
	op := fmt.Sprintf("import: add market %q", m.Slug)
	if m.Slug == "" || source == "" {
		return false, invalid(op, "a market without a slug or a source without a name")
	}
	now := t.s.stamp()
	var resolvedAt *time.Time
	if m.ResolvedAt != nil {
		r := micro(*m.ResolvedAt)
		resolvedAt = &r
	}
	tickTimes, tickSizes := splitTickChanges(m.TickSizeChanges)
	if t.created[m.Slug] {
		_, err := t.tx.Exec(ctx, upsertMarketSQL, m.Slug, m.MarketID, m.EventID, string(m.Coin), string(m.MarketType),
			micro(m.StartTime), micro(m.EndTime), m.CoinPriceStart, m.CoinPriceEnd,
			m.ConditionID, m.ClobTokenUp, m.ClobTokenDown, m.Winner, m.FinalVolume, m.FinalLiquidity,
			resolvedAt, now, now,
			m.UpstreamSlug, m.TakerFeeRate, m.FeeExponent, m.TickSize, tickTimes, tickSizes,
			m.MinOrderSize, m.ResolutionSource, m.PriceToBeat, m.FinalPrice, m.MakerRebateRate, []string{source})
		return false, wrap(op, err)
	}
	var created bool
	err := t.tx.QueryRow(ctx, addMarketSQL, m.Slug, m.MarketID, m.EventID, string(m.Coin), string(m.MarketType),
		micro(m.StartTime), micro(m.EndTime), m.CoinPriceStart, m.CoinPriceEnd,
		m.ConditionID, m.ClobTokenUp, m.ClobTokenDown, m.Winner, m.FinalVolume, m.FinalLiquidity,
		resolvedAt, now, now,
		m.UpstreamSlug, m.TakerFeeRate, m.FeeExponent, m.TickSize, tickTimes, tickSizes,
		m.MinOrderSize, m.ResolutionSource, m.PriceToBeat, m.FinalPrice, m.MakerRebateRate, source).Scan(&created)
	if err != nil {
		return false, wrap(op, err)
	}
	if created {
		t.markets++
		t.created[m.Slug] = true
	}
	return created, nil
}

func (t *importTx) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	op := fmt.Sprintf("import: append snapshots of %q", slug)
	in := normalize(snaps)
	if len(in) == 0 {
		return 0, nil
	}
	if err := t.s.ensurePartitions(ctx, monthsOf(in, func(sn store.Snapshot) time.Time { return sn.Time })); err != nil {
		return 0, wrap(op, err)
	}
	var before int64
	err := t.tx.QueryRow(ctx, `select coalesce((select s.n from snapshot_series s join markets m on m.id = s.market where m.slug = $1), 0)`, slug).Scan(&before)
	if err != nil {
		return 0, wrap(op, err)
	}
	if err := t.s.appendTx(ctx, t.tx, slug, in); err != nil {
		var need needPartitions
		if errors.As(err, &need) {
			return 0, wrap(op, fmt.Errorf("a partition was dropped during the import: %w", err))
		}
		return 0, wrap(op, err)
	}
	var after int64
	if err := t.tx.QueryRow(ctx, `select s.n from snapshot_series s join markets m on m.id = s.market where m.slug = $1`, slug).Scan(&after); err != nil {
		return 0, wrap(op, err)
	}
	t.snapshots += after - before
	return int(after - before), nil
}

func (t *importTx) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	op := fmt.Sprintf("import: append market trades of %q", slug)
	sorted := make([]store.MarketTrade, len(trades))
	for i, tr := range trades {
		if err := tr.Check(); err != nil {
			return 0, fmt.Errorf("postgres: %s: %w", op, err)
		}
		if !storable(tr.TxHash) {
			return 0, invalid(op, fmt.Sprintf("trade %d: tx hash is not text", i+1))
		}
		tr.Time = micro(tr.Time)
		sorted[i] = tr
	}
	slices.SortFunc(sorted, store.CompareMarketTrades)
	n := len(sorted)
	times, outcomes, sides := make([]time.Time, n), make([]string, n), make([]string, n)
	prices, sizes, fees, hashes := make([]float64, n), make([]float64, n), make([]float64, n), make([]string, n)
	for i, tr := range sorted {
		times[i], outcomes[i], sides[i] = tr.Time, tr.Outcome, tr.Side
		prices[i], sizes[i], fees[i], hashes[i] = tr.Price, tr.Size, tr.FeeRateBps, tr.TxHash
	}
	var id int64
	if err := t.tx.QueryRow(ctx, `select id from markets where slug = $1`, slug).Scan(&id); err != nil {
		return 0, wrap(op, err)
	}
	if n == 0 {
		return 0, nil
	}
	tag, err := t.tx.Exec(ctx, appendTradesSQL, id, times, outcomes, sides, prices, sizes, fees, hashes)
	if err != nil {
		return 0, wrap(op, err)
	}
	t.trades += tag.RowsAffected()
	return int(tag.RowsAffected()), nil
}

// ReplaceGaps cuts the market's stored gaps at from and to, drops their
// parts inside, and adds gaps. The statements name only the times, so
// that whatever else a gap row holds is kept with its parts (a gap cut in
// two is copied whole, then its times set). Parts left touching an added
// gap stay two rows.
func (t *importTx) ReplaceGaps(ctx context.Context, slug string, from, to time.Time, gaps []store.Gap) error {
	op := fmt.Sprintf("import: replace gaps of %q", slug)
	froms, tos := make([]time.Time, len(gaps)), make([]time.Time, len(gaps))
	for i, g := range gaps {
		g = store.Gap{From: micro(g.From), To: micro(g.To)}
		if err := g.Check(); err != nil {
			return fmt.Errorf("postgres: %s: %w", op, err)
		}
		froms[i], tos[i] = g.From, g.To
	}
	from, to = micro(from), micro(to)
	var id int64
	if err := t.tx.QueryRow(ctx, `select id from markets where slug = $1 for no key update`, slug).Scan(&id); err != nil {
		return wrap(op, err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// A gap holding the whole range: its part after the range, a copy.
		{`insert into market_gaps
			select (jsonb_populate_record(g, jsonb_build_object('from_time', $3::timestamptz))).*
			from market_gaps g where market = $1 and from_time < $2 and to_time > $3`, []any{id, from, to}},
		// Parts before the range, and after it.
		{`update market_gaps set to_time = $2 where market = $1 and from_time < $2 and to_time > $2`, []any{id, from}},
		{`update market_gaps set from_time = $3 where market = $1 and from_time >= $2 and from_time < $3 and to_time > $3`, []any{id, from, to}},
		// Gaps inside the range.
		{`delete from market_gaps where market = $1 and from_time >= $2 and to_time <= $3`, []any{id, from, to}},
	} {
		if _, err := t.tx.Exec(ctx, q.sql, q.args...); err != nil {
			return wrap(op, err)
		}
	}
	_, err := t.tx.Exec(ctx, `insert into market_gaps (market, from_time, to_time)
		select $1, f, t from unnest($2::timestamptz[], $3::timestamptz[]) as g (f, t)`, id, froms, tos)
	if err != nil {
		return wrap(op, err)
	}
	t.gaps += int64(len(gaps))
	return nil
}

// Commit records the import and commits, or, when an import with its key
// is stored, rolls back and returns that one.
func (t *importTx) Commit(ctx context.Context, imp store.Import) (store.Import, bool, error) {
	const op = "import: commit"
	var from, to *time.Time
	if !imp.From.IsZero() {
		f := micro(imp.From)
		from = &f
	}
	if !imp.To.IsZero() {
		x := micro(imp.To)
		to = &x
	}
	files := imp.Files
	if files == nil {
		files = []string{}
	}
	rows, _ := t.tx.Query(ctx, `
		insert into imports (key, source, files, from_time, to_time, markets, snapshots, trades, gaps, skipped, created_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		on conflict (key) do nothing
		returning `+importColumns,
		imp.Key, imp.Source, files, from, to, t.markets, t.snapshots, t.trades, t.gaps, imp.Skipped, t.s.stamp())
	stored, err := pgx.CollectRows(rows, scanImport)
	if err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	if len(stored) == 0 {
		rows, _ := t.tx.Query(ctx, `select `+importColumns+` from imports where key = $1`, imp.Key)
		old, err := pgx.CollectExactlyOneRow(rows, scanImport)
		_ = t.tx.Rollback(ctx)
		return old, false, wrap(op, err)
	}
	if err := t.tx.Commit(ctx); err != nil {
		return store.Import{}, false, wrap(op, err)
	}
	return stored[0], true, nil
}

func (t *importTx) Rollback(ctx context.Context) error {
	err := t.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return wrap("import: rollback", err)
}
