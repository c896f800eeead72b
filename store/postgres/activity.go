package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

// marketTradeColumns are the columns of market_trades scanMarketTrade
// reads, in its order; their order is also the table key's after market.
const marketTradeColumns = `time, outcome, side, price, size, fee_rate_bps, tx_hash`

// Trades of a market in the order of MarketTradeQuery: the primary key's,
// forwards or backwards, so a page is an index range scan.
const (
	tradesAscending  = ` order by time, outcome, side, price, size, fee_rate_bps, tx_hash`
	tradesDescending = ` order by time desc, outcome desc, side desc, price desc, size desc, fee_rate_bps desc, tx_hash desc`
)

// tradesFromArrays is the rest of an insert of a batch of trades passed as
// one array per column ($2..$8) into a table of market trades: one
// statement however many trades, and trades stored already are skipped by
// the key.
const tradesFromArrays = ` (market, ` + marketTradeColumns + `)
select $1, t.* from unnest($2::timestamptz[], $3::text[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::text[])
	as t (time, outcome, side, price, size, fee_rate_bps, tx_hash)
on conflict do nothing`

// appendTradesSQL inserts a batch of trades into the market's own
// (tradeArgs are its arguments).
const appendTradesSQL = `
insert into market_trades` + tradesFromArrays

// AppendMarketTrades stores the trades the market does not have yet and
// returns how many: the rows the insert affected, which skips a trade
// stored already or met earlier in the statement.
func (s *Store) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	op := fmt.Sprintf("append market trades of %q", slug)
	sorted, err := sortedTrades(op, trades)
	if err != nil {
		return 0, err
	}
	if !storable(slug) {
		return 0, notFound(op)
	}
	id, err := s.marketKey(ctx, slug)
	if err != nil || len(sorted) == 0 {
		return 0, wrap(op, err)
	}
	tag, err := s.pool.Exec(ctx, appendTradesSQL, tradeArgs(id, sorted)...)
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(tag.RowsAffected()), nil
}

// sortedTrades checks trades for op and returns a copy of them at the
// stores' microsecond, in key order (store.CompareMarketTrades): rows go
// in in key order, so that concurrent writers of overlapping batches wait
// for each other's keys in one order, never in a cycle.
func sortedTrades(op string, trades []store.MarketTrade) ([]store.MarketTrade, error) {
	sorted := make([]store.MarketTrade, len(trades))
	for i, t := range trades {
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", op, err)
		}
		if !storable(t.TxHash) {
			return nil, invalid(op, fmt.Sprintf("trade %d: tx hash is not text", i+1))
		}
		t.Time = micro(t.Time)
		sorted[i] = t
	}
	slices.SortFunc(sorted, store.CompareMarketTrades)
	return sorted, nil
}

// tradeArgs are the arguments of appendTradesSQL (or heldTradesSQL) for
// the market's trades.
func tradeArgs(market int64, trades []store.MarketTrade) []any {
	n := len(trades)
	times, outcomes, sides := make([]time.Time, n), make([]string, n), make([]string, n)
	prices, sizes, fees, hashes := make([]float64, n), make([]float64, n), make([]float64, n), make([]string, n)
	for i, tr := range trades {
		times[i], outcomes[i], sides[i] = tr.Time, tr.Outcome, tr.Side
		prices[i], sizes[i], fees[i], hashes[i] = tr.Price, tr.Size, tr.FeeRateBps, tr.TxHash
	}
	return []any{market, times, outcomes, sides, prices, sizes, fees, hashes}
}

// ListMarketTrades returns a page of the market's trades and how many it
// has, in one round trip. The page is one range scan of the primary key:
// the time range and the keyset position bound it (the position compared
// as a row, in the key's order).
func (s *Store) ListMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) ([]store.MarketTrade, int, error) {
	op := fmt.Sprintf("list market trades of %q", slug)
	if q.Limit < 0 || q.Offset < 0 {
		return nil, 0, invalid(op, fmt.Sprintf("limit %d, offset %d", q.Limit, q.Offset))
	}
	if !storable(slug) {
		return nil, 0, notFound(op)
	}
	page, args := tradePageSQL(slug, q)
	batch := &pgx.Batch{}
	var exists bool
	var total int
	batch.Queue(`select exists (select from markets where slug = $1),
		(select count(*) from market_trades where market = `+tradesMarket+`)`, slug).QueryRow(func(row pgx.Row) error {
		return row.Scan(&exists, &total)
	})
	var trades []store.MarketTrade
	batch.Queue(page, args...).Query(func(rows pgx.Rows) error {
		var err error
		trades, err = pgx.CollectRows(rows, scanMarketTrade)
		return err
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, 0, wrap(op, err)
	}
	if !exists {
		return nil, 0, notFound(op)
	}
	if trades == nil {
		trades = []store.MarketTrade{}
	}
	return trades, total, nil
}

// CountMarketTrades returns how many of the market's trades fall in q's
// time range: one index range count.
func (s *Store) CountMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) (int, error) {
	op := fmt.Sprintf("count market trades of %q", slug)
	if !storable(slug) {
		return 0, notFound(op)
	}
	where, args := tradeRangeSQL(slug, q, false)
	var exists bool
	var n int
	err := s.pool.QueryRow(ctx, `select exists (select from markets where slug = $1),
		(select count(*) from market_trades where `+where+`)`, args...).Scan(&exists, &n)
	if err == nil && !exists {
		return 0, notFound(op)
	}
	return n, wrap(op, err)
}

// tradePageSQL returns the query of q's page of the market's trades and
// its arguments.
func tradePageSQL(slug string, q store.MarketTradeQuery) (string, []any) {
	order := tradesDescending
	if q.Ascending {
		order = tradesAscending
	}
	where, args := tradeRangeSQL(slug, q, true)
	return `select ` + marketTradeColumns + ` from market_trades where ` + where + order + limitOffset(q.Limit, q.Offset), args
}

// tradesMarket is the market key of the slug passed as $1.
const tradesMarket = `(select id from markets where slug = $1)`

// tradeRangeSQL returns the condition on market_trades that selects q's
// trades of the market (before paging) and its arguments, the slug first;
// with keyset, q.After bounds it too.
func tradeRangeSQL(slug string, q store.MarketTradeQuery, keyset bool) (string, []any) {
	var b strings.Builder
	args := []any{slug}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	b.WriteString("market = " + tradesMarket)
	if q.From != nil {
		b.WriteString(" and time >= " + arg(micro(*q.From)))
	}
	if q.To != nil {
		b.WriteString(" and time < " + arg(micro(*q.To)))
	}
	if a := q.After; keyset && a != nil {
		cmp := " < "
		if q.Ascending {
			cmp = " > "
		}
		b.WriteString(" and (" + marketTradeColumns + ")" + cmp + "(" + arg(micro(a.Time)) + "::timestamptz, " +
			arg(a.Outcome) + "::text, " + arg(a.Side) + "::text, " + arg(a.Price) + "::float8, " + arg(a.Size) + "::float8, " +
			arg(a.FeeRateBps) + "::float8, " + arg(a.TxHash) + "::text)")
	}
	return b.String(), args
}

func scanMarketTrade(row pgx.CollectableRow) (store.MarketTrade, error) {
	var t store.MarketTrade
	err := row.Scan(&t.Time, &t.Outcome, &t.Side, &t.Price, &t.Size, &t.FeeRateBps, &t.TxHash)
	t.Time = utc(t.Time)
	return t, err
}

// RecordGaps merges the gaps into the market's and returns how many of
// them changed what it keeps (store.NewGaps). Writers of one
// market's gaps take turns on its row, so two merges never interleave.
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

// RemoveGaps takes the stretches of the gaps out of the market's, taking
// turns on its row with the other gap writers as RecordGaps does.
func (s *Store) RemoveGaps(ctx context.Context, slug string, gaps []store.Gap) error {
	return s.changeGaps(ctx, "remove gaps", slug, gaps, store.SubtractGaps)
}

// changeGaps checks the gaps and replaces the market's stored gaps with
// change(stored, gaps), on the market's row lock.
func (s *Store) changeGaps(ctx context.Context, what, slug string, gaps []store.Gap, change func(stored, batch []store.Gap) []store.Gap) error {
	op := fmt.Sprintf("%s of %q", what, slug)
	batch := make([]store.Gap, len(gaps))
	for i, g := range gaps {
		g = store.Gap{From: micro(g.From), To: micro(g.To), Kind: g.Kind}
		if err := g.Check(); err != nil {
			return fmt.Errorf("postgres: %s: %w", op, err)
		}
		batch[i] = g
	}
	if !storable(slug) {
		return notFound(op)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// No key update: the lock waits for other gap writers but not for
		// inserts of trades, which only hold the row's key.
		var id int64
		err := tx.QueryRow(ctx, `select id from markets where slug = $1 for no key update`, slug).Scan(&id)
		if err != nil || len(batch) == 0 {
			return err
		}
		return s.replaceGaps(ctx, tx, id, func(stored []store.Gap) []store.Gap { return change(stored, batch) })
	})
	return wrap(op, err)
}

// replaceGaps sets the gaps of the market with the id to what change makes
// of them, in tx (which holds the market's row).
func (s *Store) replaceGaps(ctx context.Context, tx pgx.Tx, id int64, change func([]store.Gap) []store.Gap) error {
	rows, _ := tx.Query(ctx, `select from_time, to_time, kind from market_gaps where market = $1`, id)
	stored, err := pgx.CollectRows(rows, scanGap)
	if err != nil {
		return err
	}
	gaps := change(stored)
	froms, tos, kinds := make([]time.Time, len(gaps)), make([]time.Time, len(gaps)), make([]string, len(gaps))
	for i, g := range gaps {
		froms[i], tos[i], kinds[i] = g.From, g.To, g.Kind.Name()
	}
	if _, err := tx.Exec(ctx, `delete from market_gaps where market = $1`, id); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `insert into market_gaps (market, from_time, to_time, kind)
		select $1, f, t, k from unnest($2::timestamptz[], $3::timestamptz[], $4::text[]) as g (f, t, k)`, id, froms, tos, kinds)
	return err
}

// ListGaps returns the market's gaps, oldest first: one query, whose single
// row of nulls is a market without gaps and whose no rows an unknown one.
func (s *Store) ListGaps(ctx context.Context, slug string) ([]store.Gap, error) {
	op := fmt.Sprintf("list gaps of %q", slug)
	if !storable(slug) {
		return nil, notFound(op)
	}
	rows, _ := s.pool.Query(ctx, `
		select g.from_time, g.to_time, g.kind
		from markets m left join market_gaps g on g.market = m.id
		where m.slug = $1
		order by g.from_time`, slug)
	var from, to *time.Time
	var kind *string
	found := false
	gaps := []store.Gap{}
	_, err := pgx.ForEachRow(rows, []any{&from, &to, &kind}, func() error {
		found = true
		if from != nil && to != nil && kind != nil {
			k, err := store.ParseGapKind(*kind)
			if err != nil {
				return err
			}
			gaps = append(gaps, store.Gap{From: utc(*from), To: utc(*to), Kind: k})
		}
		return nil
	})
	// Kinds sort in Go's order (CompareGaps), not the database's.
	slices.SortStableFunc(gaps, store.CompareGaps)
	if err == nil && !found {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	return gaps, nil
}

// ListGapsEndingAfter returns the gaps of kind of every market that end
// after t, in one query.
func (s *Store) ListGapsEndingAfter(ctx context.Context, kind store.GapKind, t time.Time) ([]store.MarketGap, error) {
	const op = "list gaps ending after"
	if _, err := store.ParseGapKind(kind.Name()); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Slugs in byte order (collate "C"), as Go sorts them.
	rows, _ := s.pool.Query(ctx, `
		select m.slug, g.from_time, g.to_time, g.kind
		from market_gaps g join markets m on m.id = g.market
		where g.kind = $1 and g.to_time > $2
		order by m.slug collate "C", g.from_time`, kind.Name(), t)
	gaps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.MarketGap, error) {
		var g store.MarketGap
		var k string
		if err := row.Scan(&g.Market, &g.From, &g.To, &k); err != nil {
			return g, err
		}
		var err error
		g.Kind, err = store.ParseGapKind(k)
		g.From, g.To = utc(g.From), utc(g.To)
		return g, err
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return gaps, nil
}

func scanGap(row pgx.CollectableRow) (store.Gap, error) {
	var g store.Gap
	var kind string
	if err := row.Scan(&g.From, &g.To, &kind); err != nil {
		return g, err
	}
	k, err := store.ParseGapKind(kind)
	g.From, g.To, g.Kind = utc(g.From), utc(g.To), k
	return g, err
}

// dataVersionsSQL reads the data versions of the markets named in $1, one
// row each (none for a slug of no market): the counts of snapshots the
// series row keeps (those stored, and those dropped), an index-only count
// of the trades, and the gaps (one scan of them, its three columns in one
// order).
const dataVersionsSQL = `
select q.i, coalesce(ss.n, 0), coalesce(ss.dropped, 0),
	(select count(*) from market_trades t where t.market = m.id),
	coalesce(g.froms, '{}'), coalesce(g.tos, '{}'), coalesce(g.kinds, '{}')
from unnest($1::text[]) with ordinality as q (slug, i)
	join markets m on m.slug = q.slug
	left join snapshot_series ss on ss.market = m.id
	left join lateral (
		select array_agg(g.from_time order by g.kind, g.from_time) as froms,
			array_agg(g.to_time order by g.kind, g.from_time) as tos,
			array_agg(g.kind order by g.kind, g.from_time) as kinds
		from market_gaps g where g.market = m.id) g on true`

// DataVersions returns the data versions of the markets with the slugs
// (store.DataVersioner) in one round trip.
func (s *Store) DataVersions(ctx context.Context, slugs []string) ([]store.DataVersion, error) {
	const op = "read data versions"
	for _, slug := range slugs {
		if !storable(slug) {
			return nil, notFound(fmt.Sprintf("%s of %q", op, slug))
		}
	}
	out := make([]store.DataVersion, len(slugs))
	found := make([]bool, len(slugs))
	var i int64
	var n, dropped, trades int64
	var froms, tos []time.Time
	var kinds []string
	rows, _ := s.pool.Query(ctx, dataVersionsSQL, slugs)
	_, err := pgx.ForEachRow(rows, []any{&i, &n, &dropped, &trades, &froms, &tos, &kinds}, func() error {
		if len(froms) != len(tos) || len(froms) != len(kinds) {
			return fmt.Errorf("gaps read as %d, %d and %d columns", len(froms), len(tos), len(kinds))
		}
		v := store.DataVersion{SeriesCount: store.SeriesCount{N: int(n), Dropped: int(dropped)}, Trades: int(trades)}
		for j := range froms {
			k, err := store.ParseGapKind(kinds[j])
			if err != nil {
				return err
			}
			v.Gaps = append(v.Gaps, store.Gap{From: utc(froms[j]), To: utc(tos[j]), Kind: k})
		}
		out[i-1], found[i-1] = v, true
		return nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	for j, ok := range found {
		if !ok {
			return nil, notFound(fmt.Sprintf("%s of %q", op, slugs[j]))
		}
	}
	return out, nil
}
