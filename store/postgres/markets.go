package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

// marketColumns are the columns scanMarket reads, in its order.
const marketColumns = `slug, market_id, event_id, coin, market_type, start_time, end_time,
	coin_price_start, coin_price_end, condition_id, clob_token_up, clob_token_down,
	winner, final_volume, final_liquidity, resolved_at, created_at, updated_at,
	upstream_slug, taker_fee_rate, fee_exponent, tick_size, tick_change_times, tick_change_sizes,
	min_order_size, resolution_source, price_to_beat, final_price, maker_rebate_rate, fee_type, data_sources`

// upsertMarketArgs are upsertMarketSQL's arguments for m, stamped created
// and updated, with its data sources.
func upsertMarketArgs(m store.Market, created, updated time.Time, sources []string) []any {
	var resolvedAt *time.Time
	if m.ResolvedAt != nil {
		t := micro(*m.ResolvedAt)
		resolvedAt = &t
	}
	tickTimes, tickSizes := splitTickChanges(m.TickSizeChanges)
	return []any{m.Slug, m.MarketID, m.EventID, string(m.Coin), string(m.MarketType),
		micro(m.StartTime), micro(m.EndTime), m.CoinPriceStart, m.CoinPriceEnd,
		m.ConditionID, m.ClobTokenUp, m.ClobTokenDown, m.Winner, m.FinalVolume, m.FinalLiquidity,
		resolvedAt, created, updated,
		m.UpstreamSlug, m.TakerFeeRate, m.FeeExponent, m.TickSize, tickTimes, tickSizes,
		m.MinOrderSize, m.ResolutionSource, m.PriceToBeat, m.FinalPrice, m.MakerRebateRate, m.FeeType, sources}
}

const upsertMarketSQL = `
insert into markets (` + marketColumns + `)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
	$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30,
	case when cardinality($31::text[]) = 0 then '{recorder}'::text[] else $31::text[] end)
on conflict (slug) do update set
	market_id = excluded.market_id,
	event_id = excluded.event_id,
	coin = excluded.coin,
	market_type = excluded.market_type,
	start_time = excluded.start_time,
	end_time = excluded.end_time,
	coin_price_start = excluded.coin_price_start,
	coin_price_end = excluded.coin_price_end,
	condition_id = excluded.condition_id,
	clob_token_up = excluded.clob_token_up,
	clob_token_down = excluded.clob_token_down,
	winner = excluded.winner,
	final_volume = excluded.final_volume,
	final_liquidity = excluded.final_liquidity,
	resolved_at = excluded.resolved_at,
	updated_at = excluded.updated_at,
	upstream_slug = excluded.upstream_slug,
	taker_fee_rate = excluded.taker_fee_rate,
	fee_exponent = excluded.fee_exponent,
	tick_size = excluded.tick_size,
	tick_change_times = excluded.tick_change_times,
	tick_change_sizes = excluded.tick_change_sizes,
	min_order_size = excluded.min_order_size,
	resolution_source = excluded.resolution_source,
	price_to_beat = excluded.price_to_beat,
	final_price = excluded.final_price,
	maker_rebate_rate = excluded.maker_rebate_rate,
	fee_type = excluded.fee_type,
	data_sources = case when cardinality($31::text[]) = 0 then markets.data_sources else $31::text[] end`

// UpsertMarketsNewer is UpsertMarkets leaving as it is every market stored
// with a later updated_at than the one given (a record without one is
// written), decided row by row in the statement itself, so that no writer
// between a read and the write is undone. It returns how many it wrote.
func (s *Store) UpsertMarketsNewer(ctx context.Context, markets []store.Market) (int, error) {
	return s.upsertMarkets(ctx, "upsert newer markets", upsertMarketSQL+"\nwhere markets.updated_at <= excluded.updated_at", markets)
}

// UpsertMarkets inserts or updates the markets in one transaction: all of
// them are stored or none.
func (s *Store) UpsertMarkets(ctx context.Context, markets []store.Market) error {
	_, err := s.upsertMarkets(ctx, "upsert markets", upsertMarketSQL, markets)
	return err
}

// upsertMarkets runs the upsert statement sql (upsertMarketSQL, with a
// condition or without) for each market in one transaction, all of them
// or none, and returns how many rows it wrote.
func (s *Store) upsertMarkets(ctx context.Context, op, sql string, markets []store.Market) (int, error) {
	for _, m := range markets {
		if m.Slug == "" {
			return 0, invalid(op, "market without a slug")
		}
	}
	if len(markets) == 0 {
		return 0, nil
	}
	// Rows are written in slug order, whatever the caller's: two
	// transactions writing some of the same markets in opposite orders
	// would each hold a row the other waits for (a deadlock, which fails
	// one of them). Stable: of a slug given twice, the last is written last.
	markets = slices.Clone(markets)
	slices.SortStableFunc(markets, func(a, b store.Market) int { return strings.Compare(a.Slug, b.Slug) })
	now := s.stamp()
	batch := &pgx.Batch{}
	for _, m := range markets {
		created, updated := micro(m.CreatedAt), micro(m.UpdatedAt)
		if created.IsZero() {
			created = now
		}
		if updated.IsZero() {
			updated = now
		}
		batch.Queue(sql, upsertMarketArgs(m, created, updated, dataSources(m.DataSources))...)
	}
	written := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, batch)
		for range markets {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close()
				return err
			}
			written += int(tag.RowsAffected())
		}
		return br.Close()
	})
	if err != nil {
		return 0, wrap(op, err)
	}
	return written, nil
}

// swapMarketSQL updates the market with the slug ($1) from
// upsertMarketArgs if its updated_at is still $32, to an updated_at later
// than that, and returns it as stored. The stored created_at is kept: it is
// never null, so its coalesce with $17 (upsertMarketArgs's, which a
// statement must use for Postgres to type it) never takes $17.
const swapMarketSQL = `
update markets set (market_id, event_id, coin, market_type, start_time, end_time,
	coin_price_start, coin_price_end, condition_id, clob_token_up, clob_token_down,
	winner, final_volume, final_liquidity, resolved_at, created_at, updated_at,
	upstream_slug, taker_fee_rate, fee_exponent, tick_size, tick_change_times, tick_change_sizes,
	min_order_size, resolution_source, price_to_beat, final_price, maker_rebate_rate, fee_type, data_sources) =
	($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
	coalesce(markets.created_at, $17), greatest($18, $32::timestamptz + interval '1 microsecond'),
	$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30,
	case when cardinality($31::text[]) = 0 then markets.data_sources else $31::text[] end)
where slug = $1 and updated_at = $32
returning ` + marketColumns

// SwapMarket writes m over the stored market if its updated_at is still
// was, decided by the update itself.
func (s *Store) SwapMarket(ctx context.Context, m store.Market, was time.Time) (store.Market, bool, error) {
	op := fmt.Sprintf("swap market %q", m.Slug)
	if m.Slug == "" {
		return store.Market{}, false, invalid(op, "market without a slug")
	}
	if !storable(m.Slug) {
		return store.Market{}, false, notFound(op)
	}
	now := s.stamp()
	args := append(upsertMarketArgs(m, now, now, dataSources(m.DataSources)), micro(was))
	rows, _ := s.pool.Query(ctx, swapMarketSQL, args...)
	stored, err := pgx.CollectExactlyOneRow(rows, scanMarket)
	if err == nil {
		return stored, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Market{}, false, wrap(op, err)
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `select exists (select 1 from markets where slug = $1)`, m.Slug).Scan(&exists); err != nil {
		return store.Market{}, false, wrap(op, err)
	}
	if !exists {
		return store.Market{}, false, notFound(op)
	}
	return store.Market{}, false, nil
}

// GetMarket returns the market with the slug.
func (s *Store) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if !storable(slug) {
		return store.Market{}, notFound(fmt.Sprintf("get market %q", slug))
	}
	rows, _ := s.pool.Query(ctx, `select `+marketColumns+` from markets where slug = $1`, slug)
	m, err := pgx.CollectExactlyOneRow(rows, scanMarket)
	return m, wrap(fmt.Sprintf("get market %q", slug), err)
}

// GetMarketSeries returns the market with the slug, the number of its
// snapshots and the number a drop of old months took, in one query
// (store.MarketSeriesCounter): a replay's checks before it is queued, one
// round trip where GetMarket and CountSeries are two.
func (s *Store) GetMarketSeries(ctx context.Context, slug string) (store.Market, store.SeriesCount, error) {
	op := fmt.Sprintf("get market %q and count its snapshots", slug)
	if !storable(slug) {
		return store.Market{}, store.SeriesCount{}, notFound(op)
	}
	var r marketRow
	var n, dropped int64
	err := s.pool.QueryRow(ctx, `select `+marketColumns+`,
		coalesce(ss.n, 0), coalesce(ss.dropped, 0)
		from markets left join snapshot_series ss on ss.market = markets.id
		where slug = $1`, slug).Scan(append(r.dest(), &n, &dropped)...)
	if err != nil {
		return store.Market{}, store.SeriesCount{}, wrap(op, err)
	}
	m, err := r.market()
	return m, store.SeriesCount{N: int(n), Dropped: int(dropped)}, wrap(op, err)
}

// GetMarketByMarketID returns the market with the external market id.
func (s *Store) GetMarketByMarketID(ctx context.Context, marketID string) (store.Market, error) {
	if marketID == "" || !storable(marketID) {
		return store.Market{}, notFound(fmt.Sprintf("get market by market id %q", marketID))
	}
	// The second test is the index's own (012): without it a generic plan
	// could not use the index.
	rows, _ := s.pool.Query(ctx, `select `+marketColumns+` from markets where market_id = $1 and market_id <> ''`, marketID)
	m, err := pgx.CollectExactlyOneRow(rows, scanMarket)
	return m, wrap(fmt.Sprintf("get market by market id %q", marketID), err)
}

// ListMarkets returns one page of the markets matching f and their number.
func (s *Store) ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error) {
	const op = "list markets"
	where, args := marketWhere(f)
	page := `select ` + marketColumns + ` from markets` + where + ` order by start_time desc, slug` + limitOffset(f.Limit, f.Offset)
	batch := &pgx.Batch{}
	var total int
	batch.Queue(`select count(*) from markets`+where, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&total)
	})
	var markets []store.Market
	batch.Queue(page, args...).Query(func(rows pgx.Rows) error {
		var err error
		markets, err = pgx.CollectRows(rows, scanMarket)
		return err
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, 0, wrap(op, err)
	}
	if markets == nil {
		markets = []store.Market{}
	}
	return markets, total, nil
}

// CountMarkets returns the number of markets matching f.
func (s *Store) CountMarkets(ctx context.Context, f store.MarketFilter) (int, error) {
	where, args := marketWhere(f)
	var n int
	err := s.pool.QueryRow(ctx, `select count(*) from markets`+where, args...).Scan(&n)
	return n, wrap("count markets", err)
}

// NthNewestStart returns the start_time of the n-th newest market (n ≥ 1)
// of the coin and type that started by startedBy.
func (s *Store) NthNewestStart(ctx context.Context, coin store.Coin, mt store.MarketType, n int, startedBy time.Time) (time.Time, bool, error) {
	if n < 1 {
		return time.Time{}, false, invalid("nth newest start", fmt.Sprintf("n = %d, not a place from 1 on", n))
	}
	var t time.Time
	err := s.pool.QueryRow(ctx, `
		select start_time from markets
		where coin = $1 and market_type = $2 and start_time <= $4
		order by start_time desc, slug
		offset $3 limit 1`, string(coin), string(mt), n-1, micro(startedBy)).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, wrap("nth newest start", err)
	}
	return utc(t), true, nil
}

// marketWhere builds the WHERE clause of f (empty when f does not filter)
// and its arguments.
func marketWhere(f store.MarketFilter) (string, []any) {
	var w conds
	if f.Coin != "" {
		w.add("coin = ?", string(f.Coin))
	}
	if f.MarketType != "" {
		w.add("market_type = ?", string(f.MarketType))
	}
	if f.Resolved != nil {
		w.add("resolved = ?", *f.Resolved)
	}
	if f.StartAfter != nil {
		w.add("start_time > ?", micro(*f.StartAfter))
	}
	if f.StartBefore != nil {
		w.add("start_time < ?", micro(*f.StartBefore))
	}
	if win := f.Window; win != nil {
		if !win.MinStart.IsZero() {
			w.add("start_time >= ?", micro(win.MinStart))
		}
		if win.MinStartByType != nil {
			w.addWindowByType(win.MinStartByType)
		}
	}
	return w.sql(), w.args
}

// conds collects AND-ed conditions with ? placeholders numbered as added.
type conds struct {
	parts []string
	args  []any
}

// add appends a condition; each ? in it takes the next argument.
func (c *conds) add(cond string, args ...any) {
	for _, a := range args {
		c.args = append(c.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(c.args)), 1)
	}
	c.parts = append(c.parts, cond)
}

// addWindowByType keeps markets whose type is a key of byType and that
// start at or after that key's time; an empty map keeps none.
func (c *conds) addWindowByType(byType map[store.MarketType]time.Time) {
	if len(byType) == 0 {
		c.parts = append(c.parts, "false")
		return
	}
	var alts []string
	for _, mt := range slices.Sorted(maps.Keys(byType)) { // sorted: the same filter is the same statement
		c.args = append(c.args, string(mt), micro(byType[mt]))
		n := len(c.args)
		alts = append(alts, fmt.Sprintf("(market_type = $%d and start_time >= $%d)", n-1, n))
	}
	c.parts = append(c.parts, "("+strings.Join(alts, " or ")+")")
}

func (c *conds) sql() string {
	if len(c.parts) == 0 {
		return ""
	}
	return " where " + strings.Join(c.parts, " and ")
}

// limitOffset renders LIMIT and OFFSET; limit 0 means no limit.
func limitOffset(limit, offset int) string {
	var b strings.Builder
	if limit > 0 {
		b.WriteString(" limit " + strconv.Itoa(limit))
	}
	if offset > 0 {
		b.WriteString(" offset " + strconv.Itoa(offset))
	}
	return b.String()
}

// scanMarket reads a row of marketColumns.
func scanMarket(row pgx.CollectableRow) (store.Market, error) {
	var r marketRow
	if err := row.Scan(r.dest()...); err != nil {
		return r.m, err
	}
	return r.market()
}

// marketRow is a row of marketColumns as it is scanned.
type marketRow struct {
	m         store.Market
	coin, mt  string
	tickTimes []time.Time
	tickSizes []float64
}

// dest is where the row's columns are scanned to, in marketColumns' order.
func (r *marketRow) dest() []any {
	m := &r.m
	return []any{&m.Slug, &m.MarketID, &m.EventID, &r.coin, &r.mt, &m.StartTime, &m.EndTime,
		&m.CoinPriceStart, &m.CoinPriceEnd, &m.ConditionID, &m.ClobTokenUp, &m.ClobTokenDown,
		&m.Winner, &m.FinalVolume, &m.FinalLiquidity, &m.ResolvedAt, &m.CreatedAt, &m.UpdatedAt,
		&m.UpstreamSlug, &m.TakerFeeRate, &m.FeeExponent, &m.TickSize, &r.tickTimes, &r.tickSizes,
		&m.MinOrderSize, &m.ResolutionSource, &m.PriceToBeat, &m.FinalPrice, &m.MakerRebateRate, &m.FeeType, &m.DataSources}
}

// market is the market the scanned row holds.
func (r *marketRow) market() (store.Market, error) {
	m := r.m
	if len(r.tickTimes) != len(r.tickSizes) { // the table's check constraint rules this out
		return m, fmt.Errorf("market %q: %d tick change times for %d sizes", m.Slug, len(r.tickTimes), len(r.tickSizes))
	}
	// In time order, one at an instant, as every write keeps them
	// (splitTickChanges) and migration 019 put those written before.
	for i, t := range r.tickTimes {
		m.TickSizeChanges = append(m.TickSizeChanges, store.TickSizeChange{Time: utc(t), TickSize: r.tickSizes[i]})
	}
	m.Coin, m.MarketType = store.Coin(r.coin), store.MarketType(r.mt)
	m.StartTime, m.EndTime = utc(m.StartTime), utc(m.EndTime)
	m.ResolvedAt = utcPtr(m.ResolvedAt)
	m.CreatedAt, m.UpdatedAt = utc(m.CreatedAt), utc(m.UpdatedAt)
	return m, nil
}

// dataSources is a market's data sources as the upsert passes them: never
// nil, so that none is '{}' (keep the stored ones), not null.
func dataSources(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// splitTickChanges returns the changes' times (to the microsecond) and
// sizes as the two arrays the markets table keeps them in, in time order
// with one change at an instant (store.SortTickChanges); never nil, so
// that no changes is '{}', not null.
func splitTickChanges(changes []store.TickSizeChange) ([]time.Time, []float64) {
	kept := make([]store.TickSizeChange, len(changes))
	for i, c := range changes {
		kept[i] = store.TickSizeChange{Time: micro(c.Time), TickSize: c.TickSize}
	}
	kept = store.SortTickChanges(kept)
	times, sizes := make([]time.Time, len(kept)), make([]float64, len(kept))
	for i, c := range kept {
		times[i], sizes[i] = c.Time, c.TickSize
	}
	return times, sizes
}
