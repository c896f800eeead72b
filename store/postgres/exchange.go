package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/updown/updown/store"
)

// AppendDepth stores depth snapshots in one statement, ignoring those whose
// (symbol, kind, time) is stored already or earlier in snaps. A snapshot
// without a symbol or of an unknown kind is ErrInvalid and stores nothing,
// as in the memory store: no query would ever read it back.
func (s *Store) AppendDepth(ctx context.Context, snaps []store.DepthSnapshot) error {
	for i, d := range snaps {
		if d.Symbol == "" || !d.Kind.Valid() {
			return invalid("append depth", fmt.Sprintf("snapshot %d of %d has symbol %q, kind %q", i+1, len(snaps), d.Symbol, d.Kind))
		}
	}
	if len(snaps) == 0 {
		return nil
	}
	n := len(snaps)
	symbols, kinds := make([]string, n), make([]string, n)
	times := make([]time.Time, n)
	prices, ids := make([]float64, n), make([]int64, n)
	books := make([][]byte, n)
	for i, d := range snaps {
		symbols[i], kinds[i], times[i] = d.Symbol, string(d.Kind), micro(d.Time)
		prices[i], ids[i] = d.CoinPrice, d.LastUpdateID
		books[i] = encodeDepthBook(d.Bids, d.Asks)
	}
	_, err := s.pool.Exec(ctx, `
		insert into depth_snapshots (symbol, kind, time, coin_price, last_update_id, book)
		select symbol, kind, time, coin_price, last_update_id, book
		from unnest($1::text[], $2::text[], $3::timestamptz[], $4::float8[], $5::int8[], $6::bytea[])
			with ordinality as d (symbol, kind, time, coin_price, last_update_id, book, ord)
		order by ord
		on conflict do nothing`, symbols, kinds, times, prices, ids, books)
	return wrap("append depth", err)
}

// ListDepth returns a page of the depth snapshots matching f, newest first,
// and their number.
func (s *Store) ListDepth(ctx context.Context, f store.DepthFilter) ([]store.DepthSnapshot, int, error) {
	op := fmt.Sprintf("list depth of %s %s", f.Symbol, f.Kind)
	if f.Limit < 0 || f.Offset < 0 {
		return nil, 0, invalid(op, fmt.Sprintf("limit %d, offset %d: want neither negative", f.Limit, f.Offset))
	}
	var w conds
	w.add("symbol = ?", f.Symbol)
	w.add("kind = ?", string(f.Kind))
	if f.From != nil {
		w.add("time >= ?", micro(*f.From))
	}
	if f.To != nil {
		w.add("time <= ?", micro(*f.To))
	}
	if !f.MinTime.IsZero() {
		w.add("time >= ?", micro(f.MinTime))
	}
	where, whereArgs := w.sql(), slices.Clone(w.args)
	order := " order by time desc"
	if f.Ascending {
		order = " order by time"
	}
	if f.After != nil {
		if f.Ascending {
			w.add("time > ?", micro(*f.After))
		} else {
			w.add("time < ?", micro(*f.After))
		}
	}

	batch := &pgx.Batch{}
	var total int
	batch.Queue(`select count(*) from depth_snapshots`+where, whereArgs...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&total)
	})
	page := []store.DepthSnapshot{}
	batch.Queue(`select symbol, kind, time, coin_price, last_update_id, book from depth_snapshots`+w.sql()+
		order+limitOffset(f.Limit, f.Offset), w.args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var d store.DepthSnapshot
			var kind string
			var book pgtype.DriverBytes
			if err := rows.Scan(&d.Symbol, &kind, &d.Time, &d.CoinPrice, &d.LastUpdateID, &book); err != nil {
				return err
			}
			d.Kind, d.Time = store.ExchangeKind(kind), utc(d.Time)
			var err error
			if d.Bids, d.Asks, err = decodeDepthBook(book); err != nil {
				return err
			}
			page = append(page, d)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, 0, wrap(op, err)
	}
	return page, total, nil
}
