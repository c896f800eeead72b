package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

// Snapshots by time (DESIGN 13). A query with a time range or a keyset
// position reads, in one read-only snapshot of the data, the metadata of
// the chunks its range overlaps (pruned by first_time, so only the months
// and chunks of the range are touched), decodes the heads of the at most
// two chunks the range cuts to count exactly, and then reads only the
// chunks the page overlaps.

// rangeChunksSQL lists the chunks of market $1 that hold times in [$2, $3),
// with the head of those the range cuts. $4 is the market's first time: the
// lower bound is the first chunk at or before $2, found by the primary key,
// so that partitions before the range are pruned.
const rangeChunksSQL = `
select first_time, last_time, n, case when first_time < $2 or last_time >= $3 then head end
from snapshot_chunks
where market = $1
	and first_time >= coalesce((select max(first_time) from snapshot_chunks
		where market = $1 and first_time >= $4 and first_time <= $2), $2)
	and first_time < $3 and last_time >= $2
order by first_time`

// rangeChunk is a chunk of a range: its first time and how many of its
// snapshots the range holds.
type rangeChunk struct {
	first time.Time
	in    int
}

// seriesOf returns the market's internal id and its series row (n = 0 when
// it has no snapshots).
func seriesOf(ctx context.Context, tx pgx.Tx, slug string) (series, error) {
	var ser series
	if !storable(slug) {
		return ser, pgx.ErrNoRows
	}
	err := tx.QueryRow(ctx, `
		select m.id, coalesce(ss.n, 0), ss.first_time, ss.last_time
		from markets m left join snapshot_series ss on ss.market = m.id
		where m.slug = $1`, slug).Scan(&ser.market, &ser.n, &ser.first, &ser.last)
	return ser, err
}

// clampRange returns the Unix-microsecond range [lo, hi) clamped to the
// series' span, as times; ok is false when it holds nothing.
func clampRange(ser series, lo, hi int64) (from, to time.Time, ok bool) {
	if ser.n == 0 {
		return from, to, false
	}
	lo = max(lo, ser.first.UnixMicro())
	hi = min(hi, ser.last.UnixMicro()+1)
	if lo >= hi {
		return from, to, false
	}
	return time.UnixMicro(lo).UTC(), time.UnixMicro(hi).UTC(), true
}

// rangeChunks returns the chunks holding times in [from, to), in time
// order, with how many of their snapshots fall in it.
func rangeChunks(ctx context.Context, tx pgx.Tx, ser series, from, to time.Time) ([]rangeChunk, error) {
	rows, _ := tx.Query(ctx, rangeChunksSQL, ser.market, from, to, *ser.first)
	defer rows.Close()
	var out []rangeChunk
	var buf []store.Snapshot
	for rows.Next() {
		var c rangeChunk
		var last time.Time
		var head []byte
		if err := rows.Scan(&c.first, &last, &c.in, &head); err != nil {
			return nil, err
		}
		if head != nil { // cut by the range: count what it holds
			var err error
			if buf, err = decodeHead(buf[:0], head); err != nil {
				return nil, err
			}
			c.in = countIn(buf, from, to)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// countIn counts the time-sorted snapshots in [from, to).
func countIn(snaps []store.Snapshot, from, to time.Time) int {
	lo, _ := slices.BinarySearchFunc(snaps, from, func(s store.Snapshot, t time.Time) int { return s.Time.Compare(t) })
	hi, _ := slices.BinarySearchFunc(snaps, to, func(s store.Snapshot, t time.Time) int { return s.Time.Compare(t) })
	return hi - lo
}

// readOnly runs fn in a read-only transaction that sees one snapshot of
// the data.
func (s *Store) readOnly(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// listSnapshotRange is ListSnapshots for a query with a time range or a
// keyset position.
func (s *Store) listSnapshotRange(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	op := fmt.Sprintf("list snapshots of %q", slug)
	var page []store.Snapshot
	var total int64
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		ser, err := seriesOf(ctx, tx, slug)
		if err != nil {
			return err
		}
		total = ser.n
		lo, hi := q.MicroRange(true)
		from, to, ok := clampRange(ser, lo, hi)
		if !ok {
			return nil
		}
		chunks, err := rangeChunks(ctx, tx, ser, from, to)
		if err != nil {
			return err
		}
		page, err = readRangePage(ctx, tx, ser.market, chunks, from, to, q)
		return err
	})
	if err != nil {
		return nil, 0, wrap(op, err)
	}
	if page == nil {
		page = []store.Snapshot{}
	}
	return page, int(total), nil
}

// readRangePage reads the page of q among the chunks' snapshots in
// [from, to): only the chunks the page overlaps are read.
func readRangePage(ctx context.Context, tx pgx.Tx, market int64, chunks []rangeChunk, from, to time.Time, q store.SnapshotQuery) ([]store.Snapshot, error) {
	var n int64
	for _, c := range chunks {
		n += int64(c.in)
	}
	lim := int64(q.Limit)
	if lim <= 0 {
		lim = math.MaxInt32
	}
	lo, hi := pageRange(n, pageOffset(q.Offset), lim, q.Ascending)
	if lo >= hi {
		return nil, nil
	}
	var firsts []time.Time
	var start, pos int64 = -1, 0
	for _, c := range chunks {
		if pos < hi && pos+int64(c.in) > lo && c.in > 0 {
			if start < 0 {
				start = pos
			}
			firsts = append(firsts, c.first)
		}
		pos += int64(c.in)
	}
	books := "null::bytea"
	if q.WithBooks {
		books = "books"
	}
	rows, _ := tx.Query(ctx, `
		select head, `+books+` from snapshot_chunks
		where market = $1 and first_time >= $2 and first_time <= $3 and first_time = any($4)
		order by first_time`, market, firsts[0], firsts[len(firsts)-1], firsts)
	defer rows.Close()
	var in []store.Snapshot
	var buf []store.Snapshot
	for rows.Next() {
		var head, bk []byte
		if err := rows.Scan(&head, &bk); err != nil {
			return nil, err
		}
		var err error
		if buf, err = decodeHead(buf[:0], head); err != nil {
			return nil, err
		}
		if q.WithBooks {
			if err := decodeBooks(buf, bk); err != nil {
				return nil, err
			}
		}
		for _, sn := range buf {
			if !sn.Time.Before(from) && sn.Time.Before(to) {
				in = append(in, sn)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if lo < start || hi > start+int64(len(in)) {
		return nil, fmt.Errorf("chunks hold positions %d..%d of the range, not the page %d..%d (chunks changed under the read)",
			start, start+int64(len(in)), lo, hi)
	}
	page := in[lo-start : hi-start]
	if !q.Ascending {
		slices.Reverse(page)
	}
	return page, nil
}

// CountSeries returns the number of the market's snapshots and the number
// a drop of old months took (store.SeriesCounter): the series row alone,
// one round trip, as CountSnapshots of the whole market.
func (s *Store) CountSeries(ctx context.Context, slug string) (store.SeriesCount, error) {
	op := fmt.Sprintf("count snapshots of %q", slug)
	if !storable(slug) {
		return store.SeriesCount{}, notFound(op)
	}
	var n, dropped int64
	err := s.pool.QueryRow(ctx, `
		select coalesce(ss.n, 0), coalesce(ss.dropped, 0)
		from markets m left join snapshot_series ss on ss.market = m.id
		where m.slug = $1`, slug).Scan(&n, &dropped)
	return store.SeriesCount{N: int(n), Dropped: int(dropped)}, wrap(op, err)
}

// CountSnapshots returns how many of the market's snapshots q's time range
// holds: the series' count when q has no range, else the chunks' counts
// with the at most two chunks the range cuts decoded.
func (s *Store) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	op := fmt.Sprintf("count snapshots of %q", slug)
	var n int
	if q.From == nil && q.To == nil {
		// The series row alone: one round trip, no transaction. Workers
		// ask it before every replay (memory budget, replay cache).
		if !storable(slug) {
			return 0, notFound(op)
		}
		err := s.pool.QueryRow(ctx, `
			select coalesce(ss.n, 0)
			from markets m left join snapshot_series ss on ss.market = m.id
			where m.slug = $1`, slug).Scan(&n)
		return n, wrap(op, err)
	}
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		ser, err := seriesOf(ctx, tx, slug)
		if err != nil {
			return err
		}
		lo, hi := q.MicroRange(false)
		from, to, ok := clampRange(ser, lo, hi)
		if !ok {
			return nil
		}
		chunks, err := rangeChunks(ctx, tx, ser, from, to)
		for _, c := range chunks {
			n += c.in
		}
		return err
	})
	return n, wrap(op, err)
}
