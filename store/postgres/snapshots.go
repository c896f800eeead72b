package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"golang.org/x/sync/errgroup"

	"github.com/updown/updown/store"
)

// chunkSize is the most snapshots a chunk holds. An API page (1000
// snapshots) then reads two to four chunks, and a row's fixed cost is
// spread over hundreds of snapshots.
const chunkSize = 512

// tailChunks bounds how many of a market's newest chunks an append
// considers merging with.
const tailChunks = 16

// series is a market's row in snapshot_series.
type series struct {
	market      int64
	n           int64
	first, last *time.Time
}

// chunkMeta identifies a stored chunk.
type chunkMeta struct {
	first time.Time
	n     int
}

// newChunk is an encoded chunk ready to be written.
type newChunk struct {
	first, last time.Time
	n           int
	head, books []byte
}

// needPartitions is returned from inside an append transaction when the
// chunks it would write fall in months without a partition: the caller
// creates them outside the transaction and tries again.
type needPartitions []month

func (e needPartitions) Error() string {
	return fmt.Sprintf("partitions missing for %d months", len(e))
}

// AppendSnapshots stores the snapshots of the market with the slug,
// ignoring any whose time (to the microsecond) is already stored, and
// returns how many it stored.
//
// Snapshots newer than everything stored, the common case, are appended as
// new chunks; small appends fold the market's newest small chunks in so
// that chunks stay large (each snapshot is rewritten O(log chunkSize)
// times). Snapshots that fall among stored ones are merged into the chunks
// they overlap, which are rewritten in the same transaction.
func (s *Store) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	op := fmt.Sprintf("append snapshots of %q", slug)
	if !storable(slug) {
		return 0, notFound(op)
	}
	if err := store.CheckSnapshots(snaps); err != nil {
		return 0, wrap(op, err)
	}
	in := normalize(snaps)
	if len(in) == 0 {
		_, err := s.marketKey(ctx, slug)
		return 0, wrap(op, err)
	}
	months := monthsOf(in, func(sn store.Snapshot) time.Time { return sn.Time })
	for attempt := 1; ; attempt++ {
		if err := s.ensurePartitions(ctx, months); err != nil {
			return 0, wrap(op, err)
		}
		added := 0
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			var err error
			added, err = s.appendTx(ctx, tx, slug, in)
			return err
		})
		if attempt < maxAppendAttempts {
			var need needPartitions
			if errors.As(err, &need) {
				months = need
				continue
			}
			if pgCode(err) == checkViolation { // a partition this process knew was dropped
				s.parts.forget()
				continue
			}
		}
		if err != nil {
			return 0, wrap(op, err)
		}
		return added, nil
	}
}

// maxAppendAttempts bounds the transactions one append runs when it finds
// partitions missing.
const maxAppendAttempts = 3

// normalize returns snaps truncated to the microsecond, sorted by time,
// keeping the first of snapshots with one time. The caller's slice is left
// as it was.
func normalize(snaps []store.Snapshot) []store.Snapshot {
	out := slices.Clone(snaps)
	for i := range out {
		out[i].Time = micro(out[i].Time)
	}
	slices.SortStableFunc(out, func(a, b store.Snapshot) int { return a.Time.Compare(b.Time) })
	return slices.CompactFunc(out, func(a, b store.Snapshot) bool { return a.Time.Equal(b.Time) })
}

// marketKey returns the internal id of the market with the slug.
func (s *Store) marketKey(ctx context.Context, slug string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `select id from markets where slug = $1`, slug).Scan(&id)
	return id, err
}

// appendTx stores the snapshots in (normalized) of the market with the
// slug in tx and returns how many of them the market did not have.
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, slug string, in []store.Snapshot) (int, error) {
	// Locking the series row serialises appends to one market.
	var ser series
	err := tx.QueryRow(ctx, `
		insert into snapshot_series as s (market)
		select id from markets where slug = $1
		on conflict (market) do update set n = s.n
		returning market, n, first_time, last_time`, slug).Scan(&ser.market, &ser.n, &ser.first, &ser.last)
	if err != nil {
		return 0, err
	}
	if ser.n == 0 || in[0].Time.After(*ser.last) {
		return len(in), s.appendNewer(ctx, tx, ser, in)
	}
	return s.appendMerging(ctx, tx, ser, in)
}

// appendNewer appends snapshots newer than all the market has, folding in
// the newest chunks when the append is small (see foldableTail).
func (s *Store) appendNewer(ctx context.Context, tx pgx.Tx, ser series, in []store.Snapshot) error {
	tail, err := foldableTail(ctx, tx, ser, in[0].Time, len(in))
	if err != nil {
		return err
	}
	snaps := in
	if len(tail) > 0 {
		old, err := readChunks(ctx, tx, ser.market, tail)
		if err != nil {
			return err
		}
		if err := deleteChunks(ctx, tx, ser.market, tail); err != nil {
			return err
		}
		snaps = append(old, in...)
	}
	if err := s.writeChunks(ctx, tx, ser.market, snaps); err != nil {
		return err
	}
	return updateSeries(ctx, tx, ser, in, len(in))
}

// foldableTail returns the first times of the market's newest chunks that
// an append of n newer snapshots, the first at time first, rewrites
// together with them: each, newest first, while it is no larger than what
// is being written so far and all of it fits one chunk. Like carries in a
// binary counter, this keeps the tail to O(log chunkSize) chunks, and
// rewrites each snapshot O(log chunkSize) times, however small the
// appends; a large append folds nothing in and is a pure insert. Only
// chunks of first's month are folded in: a chunk holds one month's
// snapshots (encodeChunks), and rewriting the months before would only
// cut them off again.
func foldableTail(ctx context.Context, tx pgx.Tx, ser series, first time.Time, n int) ([]time.Time, error) {
	if ser.n == 0 || n >= chunkSize {
		return nil, nil
	}
	from := maxTime(*ser.first, monthOf(first).start())
	rows, _ := tx.Query(ctx, `
		select first_time, n from snapshot_chunks
		where market = $1 and first_time >= $2 and first_time <= $3
		order by first_time desc limit $4`, ser.market, from, *ser.last, tailChunks)
	tails, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chunkMeta, error) {
		var c chunkMeta
		err := row.Scan(&c.first, &c.n)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	var firsts []time.Time
	for _, c := range tails {
		if c.n > n || n+c.n > chunkSize {
			break
		}
		n += c.n
		firsts = append(firsts, c.first)
	}
	return firsts, nil
}

// appendMerging stores snapshots that reach back among stored ones: the
// chunks their time span overlaps are read, merged with them (stored
// snapshots win on equal times) and rewritten. When nothing is new, as
// when a write is repeated, nothing is rewritten. It returns how many of
// in it stored.
func (s *Store) appendMerging(ctx context.Context, tx pgx.Tx, ser series, in []store.Snapshot) (int, error) {
	lo, hi := in[0].Time, in[len(in)-1].Time
	rows, _ := tx.Query(ctx, `
		select first_time from snapshot_chunks
		where market = $1 and first_time >= $2 and first_time <= $3 and last_time >= $4`,
		ser.market, *ser.first, hi, lo)
	overlapped, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return 0, err
	}
	old, err := readChunks(ctx, tx, ser.market, overlapped)
	if err != nil {
		return 0, err
	}
	merged, added := merge(old, in)
	if added == 0 {
		return 0, nil
	}
	if err := deleteChunks(ctx, tx, ser.market, overlapped); err != nil {
		return 0, err
	}
	if err := s.writeChunks(ctx, tx, ser.market, merged); err != nil {
		return 0, err
	}
	return added, updateSeries(ctx, tx, ser, in, added)
}

// merge merges two time-sorted runs, keeping old's snapshot where both have
// a time, and returns how many of in it took.
func merge(old, in []store.Snapshot) ([]store.Snapshot, int) {
	out := make([]store.Snapshot, 0, len(old)+len(in))
	added := 0
	i, j := 0, 0
	for i < len(old) || j < len(in) {
		switch {
		case j == len(in) || i < len(old) && old[i].Time.Before(in[j].Time):
			out = append(out, old[i])
			i++
		case i == len(old) || in[j].Time.Before(old[i].Time):
			out = append(out, in[j])
			added++
			j++
		default: // same time: the stored one stays
			out = append(out, old[i])
			i++
			j++
		}
	}
	return out, added
}

// readChunks decodes, books included, the market's chunks with the given
// first times, in time order.
func readChunks(ctx context.Context, tx pgx.Tx, market int64, firsts []time.Time) ([]store.Snapshot, error) {
	return readChunksOf(ctx, tx, "snapshot_chunks", market, firsts)
}

// readChunksOf is readChunks of a table of chunks (snapshot_chunks, or an
// import's staging, whose columns are the same).
func readChunksOf(ctx context.Context, tx pgx.Tx, table string, market int64, firsts []time.Time) ([]store.Snapshot, error) {
	if len(firsts) == 0 {
		return nil, nil
	}
	rows, _ := tx.Query(ctx, `
		select head, books from `+table+`
		where market = $1 and first_time = any($2)
		order by first_time`, market, firsts)
	defer rows.Close()
	var out []store.Snapshot
	for rows.Next() {
		var head, books pgtype.DriverBytes // valid until the next row: decoded at once
		if err := rows.Scan(&head, &books); err != nil {
			return nil, err
		}
		n := len(out)
		var err error
		if out, err = decodeHead(out, head); err != nil {
			return nil, err
		}
		if err := decodeBooks(out[n:], books); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// deleteChunks deletes the market's chunks with the given first times.
func deleteChunks(ctx context.Context, tx pgx.Tx, market int64, firsts []time.Time) error {
	if len(firsts) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `delete from snapshot_chunks where market = $1 and first_time = any($2)`, market, firsts)
	return err
}

// writeChunks writes time-sorted snaps as chunks of nearly equal size.
func (s *Store) writeChunks(ctx context.Context, tx pgx.Tx, market int64, snaps []store.Snapshot) error {
	chunks := encodeChunks(snaps, s.writeVersion())
	months := monthsOf(chunks, func(c newChunk) time.Time { return c.first })
	if missing := s.parts.missing(months); len(missing) > 0 {
		return needPartitions(missing)
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"snapshot_chunks"},
		[]string{"market", "first_time", "last_time", "n", "head", "books"},
		pgx.CopyFromSlice(len(chunks), func(i int) ([]any, error) {
			c := chunks[i]
			return []any{market, c.first, c.last, int32(c.n), c.head, c.books}, nil
		}))
	return err
}

// encodeChunks splits time-sorted snaps by calendar month (UTC), and each
// month's into ceil(len/chunkSize) chunks of nearly equal size, and
// encodes them, their books in the given version. A chunk never holds two
// months' snapshots: chunks are partitioned by their first time's month,
// and a month's partition must hold only that month's snapshots, or
// dropping it (DropSnapshotsBefore) would take later ones with it.
func encodeChunks(snaps []store.Snapshot, version byte) []newChunk {
	var chunks []newChunk
	for len(snaps) > 0 {
		end := monthOf(snaps[0].Time).next().start()
		m, _ := slices.BinarySearchFunc(snaps, end, func(sn store.Snapshot, t time.Time) int { return sn.Time.Compare(t) })
		run := snaps[:m]
		snaps = snaps[m:]
		k := (len(run) + chunkSize - 1) / chunkSize
		for i := range k {
			part := run[i*len(run)/k : (i+1)*len(run)/k]
			head, books := encodeChunk(part, version)
			chunks = append(chunks, newChunk{first: part[0].Time, last: part[len(part)-1].Time, n: len(part), head: head, books: books})
		}
	}
	return chunks
}

// updateSeries records that added snapshots of in were stored.
func updateSeries(ctx context.Context, tx pgx.Tx, ser series, in []store.Snapshot, added int) error {
	first, last := in[0].Time, in[len(in)-1].Time
	if ser.n > 0 {
		first, last = minTime(first, *ser.first), maxTime(last, *ser.last)
	}
	_, err := tx.Exec(ctx, `update snapshot_series set n = $2, first_time = $3, last_time = $4 where market = $1`,
		ser.market, ser.n+int64(added), first, last)
	return err
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// listSnapshotsSQL selects the chunks of a page in one statement, so that
// the total and the chunks come from one snapshot of the data: the market's
// series row gives the total and the time span that prunes partitions, and
// a running sum of n places each chunk. The page is the ascending
// positions [lo, hi): $2 ascending, $3 offset, $4 limit. %s is the books
// column or a null.
const listSnapshotsSQL = `
with s as materialized (
	select m.id, coalesce(ss.n, 0) as total, ss.first_time, ss.last_time
	from markets m left join snapshot_series ss on ss.market = m.id
	where m.slug = $1
), c as (
	select first_time, n, head, %s as books, sum(n) over (order by first_time) - n as before
	from snapshot_chunks
	where market = (select id from s)
		and first_time >= (select first_time from s)
		and first_time <= (select last_time from s)
)
select s.total, c.before, c.head, c.books
from s left join c
	on c.before < (case when $2::boolean then $3::bigint + $4::bigint else s.total - $3::bigint end)
	and c.before + c.n > (case when $2::boolean then $3::bigint else s.total - $3::bigint - $4::bigint end)
order by c.first_time`

var (
	listWithBooksSQL    = fmt.Sprintf(listSnapshotsSQL, "books")
	listWithoutBooksSQL = fmt.Sprintf(listSnapshotsSQL, "null::bytea")
)

// ListSnapshots returns a page of the market's snapshots and their total.
// It reads only the chunks the page overlaps, and without books never
// touches the book bytes.
func (s *Store) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	if q.From != nil || q.To != nil || q.After != nil {
		return s.listSnapshotRange(ctx, slug, q) // snaprange.go
	}
	op := fmt.Sprintf("list snapshots of %q", slug)
	if !storable(slug) {
		return nil, 0, notFound(op)
	}
	off, lim := pageOffset(q.Offset), int64(q.Limit)
	if lim <= 0 {
		lim = math.MaxInt32 // all: more than a market ever has
	}
	sql := listWithoutBooksSQL
	if q.WithBooks {
		sql = listWithBooksSQL
	}
	rows, _ := s.pool.Query(ctx, sql, slug, q.Ascending, off, lim)
	pg, err := readPage(rows, q.WithBooks, func(total int64) int64 {
		lo, hi := pageRange(total, off, lim, q.Ascending)
		return hi - lo
	})
	switch {
	case err != nil:
		return nil, 0, wrap(op, err)
	case !pg.found:
		return nil, 0, notFound(op)
	}
	lo, hi := pageRange(pg.total, off, lim, q.Ascending)
	if lo >= hi {
		return []store.Snapshot{}, int(pg.total), nil
	}
	if lo < pg.start || hi > pg.start+int64(len(pg.snaps)) {
		return nil, 0, fmt.Errorf("postgres: %s: chunks hold positions %d..%d, not the page %d..%d (series and chunks disagree)",
			op, pg.start, pg.start+int64(len(pg.snaps)), lo, hi)
	}
	page := pg.snaps[lo-pg.start : hi-pg.start]
	if !q.Ascending {
		slices.Reverse(page)
	}
	return page, int(pg.total), nil
}

// page is what listSnapshotsSQL returned: whether the market exists, its
// number of snapshots, and the snapshots of the chunks the page overlaps,
// the first at position start.
type page struct {
	found        bool
	total, start int64
	snaps        []store.Snapshot
}

// readPage decodes the rows of listSnapshotsSQL, with their books when
// withBooks. size tells, from the total, how many snapshots
// the page holds: the chunks it overlaps hold at most two chunks more, and
// the slice is made that large at once rather than regrown (and copied)
// chunk by chunk.
func readPage(rows pgx.Rows, withBooks bool, size func(total int64) int64) (pg page, err error) {
	defer rows.Close()
	decodes := newChunkDecodes()
	defer func() {
		if werr := decodes.wait(); err == nil {
			err = werr
		}
	}()
	for rows.Next() && !decodes.failed() {
		var before *int64
		var head, bk pgtype.DriverBytes // valid until the next row
		if err = rows.Scan(&pg.total, &before, &head, &bk); err != nil {
			return pg, err
		}
		if !pg.found {
			pg.found = true
			if before == nil {
				break // no chunk overlaps the page
			}
			pg.start = *before
			pg.snaps = make([]store.Snapshot, 0, max(min(size(pg.total)+2*chunkSize, pg.total-pg.start), 0))
		}
		n := len(pg.snaps)
		if n+headCount(head) > cap(pg.snaps) {
			// The slice will move: the books of the chunks before must be
			// in it first.
			if err = decodes.wait(); err != nil {
				return pg, err
			}
		}
		if pg.snaps, err = decodeHead(pg.snaps, head); err != nil {
			return pg, err
		}
		if withBooks {
			snaps := pg.snaps[n:]
			decodes.add(nil, bk, func(_, books []byte) error { return decodeBooks(snaps, books) })
		}
	}
	return pg, rows.Err()
}

// chunkDecodes decodes a listing's chunks on up to GOMAXPROCS goroutines
// while the rows of later chunks arrive: chunks decode independently, and a
// 24hr market is 563 of them.
type chunkDecodes struct {
	g   *errgroup.Group
	bad atomic.Bool // a decode failed: the rest is not worth reading
}

func newChunkDecodes() *chunkDecodes {
	b := &chunkDecodes{}
	b.reset()
	return b
}

func (b *chunkDecodes) reset() {
	b.g = new(errgroup.Group)
	b.g.SetLimit(runtime.GOMAXPROCS(0))
}

// add runs decode on a chunk's head and books, a row's bytes (copied, as
// the row's are reused). What decode writes, nothing else writes until
// wait returns. A panic in the decode, which on the caller's goroutine the
// api or Asynq would have recovered, is an error here rather than the end
// of the process.
func (b *chunkDecodes) add(head, books []byte, decode func(head, books []byte) error) {
	buf := rowBuffers.Get().(*[]byte)
	*buf = append(append((*buf)[:0], head...), books...)
	h := len(head)
	b.g.Go(func() (err error) {
		defer rowBuffers.Put(buf)
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("%w: decoding panicked: %v", errCorrupt, v)
			}
			if err != nil {
				b.bad.Store(true)
			}
		}()
		return decode((*buf)[:h], (*buf)[h:])
	})
}

// failed reports whether a decode has failed.
func (b *chunkDecodes) failed() bool { return b.bad.Load() }

// wait returns once every book added is decoded, with the first error.
func (b *chunkDecodes) wait() error {
	err := b.g.Wait()
	b.reset()
	return err
}

// rowBuffers holds copies of the rows being decoded: decoded snapshots and
// levels do not point into them, so each is reused once its chunk is
// decoded.
var rowBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPageOffset is the largest offset a page is computed with: far past
// any market's count, so a larger one is the same page past the end, and
// far enough inside int64 that offset + limit and total − offset − limit
// cannot overflow (in listSnapshotsSQL a larger one failed as "bigint out
// of range", a 500 to an API caller where the memory store answered an
// empty page).
const maxPageOffset = 1 << 53

// pageOffset is a query's offset as a page is computed with it: at least 0
// and at most maxPageOffset.
func pageOffset(offset int) int64 { return min(int64(max(offset, 0)), maxPageOffset) }

// pageRange returns the ascending positions [lo, hi) of a page of total
// snapshots, as listSnapshotsSQL computes them, clamped to [0, total].
func pageRange(total, off, lim int64, ascending bool) (lo, hi int64) {
	if ascending {
		lo, hi = off, off+lim
	} else {
		lo, hi = total-off-lim, total-off
	}
	return max(lo, 0), min(hi, total)
}

// ReadTape returns all the market's snapshots, oldest first, with the books
// of outcome, decoded straight into a tape: the same rows as a listing of
// the whole market, with no book or side allocated.
func (s *Store) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	op := fmt.Sprintf("read the tape of %q", slug)
	if err := store.CheckOutcome(outcome); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if !storable(slug) {
		return nil, notFound(op)
	}
	rows, _ := s.pool.Query(ctx, listWithBooksSQL, slug, true, 0, math.MaxInt32)
	t, found, err := readTape(rows, bookFlag(outcome))
	switch {
	case err != nil:
		return nil, wrap(op, err)
	case !found:
		return nil, notFound(op)
	}
	t.Outcome = outcome
	return t, nil
}

// readTape decodes the rows of listSnapshotsSQL for a whole market into a
// tape, with the books keep names (flagUp or flagDown). Each chunk decodes
// on its own goroutine, at most GOMAXPROCS at once, into its place in the
// ticks and a block of its own, while the rows of later chunks arrive.
func readTape(rows pgx.Rows, keep byte) (t *store.Tape, found bool, err error) {
	defer rows.Close()
	t = &store.Tape{}
	var total, start int64
	decodes := newChunkDecodes()
	defer func() {
		if werr := decodes.wait(); err == nil {
			err = werr
		}
	}()
	// The ticks of each chunk without the kept book, counted from the
	// chunk's first tick: added to the tape's once every decode is done,
	// as chunks decode side by side and a word of the tape's set may hold
	// ticks of two.
	type chunkNoBook struct {
		at  int
		set store.TickSet
	}
	var noBooks []*chunkNoBook
	for rows.Next() && !decodes.failed() {
		var before *int64
		var head, bk pgtype.DriverBytes // valid until the next row
		if err = rows.Scan(&total, &before, &head, &bk); err != nil {
			return nil, found, err
		}
		if !found {
			found = true
			if before == nil {
				break // no chunks
			}
			start = *before
			t.Ticks = make([]store.Tick, 0, total)
			t.Blocks = make([][]store.Level, 0, total/chunkSize+2)
		}
		n, c := len(t.Ticks), headCount(head)
		if n+c > cap(t.Ticks) || len(t.Blocks) == cap(t.Blocks) {
			// The ticks or the blocks will move (when chunks are larger or
			// smaller than most): the decodes writing into them must be
			// done first.
			if err = decodes.wait(); err != nil {
				return nil, found, err
			}
		}
		t.Ticks = slices.Grow(t.Ticks, c)[:n+c]
		ticks := t.Ticks[n : n+c : n+c]
		block := len(t.Blocks)
		t.Blocks = append(t.Blocks, nil)
		blocks := t.Blocks
		nb := &chunkNoBook{at: n}
		noBooks = append(noBooks, nb)
		decodes.add(head, bk, func(head, books []byte) (err error) {
			blocks[block], err = decodeTapeChunk(ticks, &nb.set, head, books, keep, block)
			return err
		})
	}
	if err = rows.Err(); err != nil {
		return nil, found, err
	}
	if err = decodes.wait(); err != nil {
		return nil, found, err
	}
	for _, nb := range noBooks {
		t.NoBook.AddAt(nb.at, nb.set)
	}
	if start != 0 || int64(len(t.Ticks)) != total {
		return nil, found, fmt.Errorf("chunks hold %d snapshots from position %d, the series %d (series and chunks disagree)",
			len(t.Ticks), start, total)
	}
	return t, found, nil
}

// decodeTapeChunk decodes a chunk into ticks, which its head must fill
// (headCount), with the books keep names, adds the ticks without one to
// noBook (ticks[0] is its tick 0), and returns the levels their spans
// index, the tape's block number block.
func decodeTapeChunk(ticks []store.Tick, noBook *store.TickSet, head, books []byte, keep byte, block int) ([]store.Level, error) {
	got, err := decodeTicks(ticks[:0], head)
	if err != nil {
		return nil, err
	}
	if len(got) != len(ticks) {
		return nil, fmt.Errorf("%w: a head of %d snapshots decodes to %d", errCorrupt, len(ticks), len(got))
	}
	return decodeTapeBooks(ticks, noBook, books, keep, block)
}

// levelBuffers recycles the arenas the chunks of books version 1 are
// decoded into for a tape, which are sized for the worst case: the levels
// are copied out of them. (Version 2 sections are counted first, and
// decoded into arrays of their exact size: tapeSection.)
var levelBuffers levelPool

type levelPool struct{ p sync.Pool }

// get returns an empty buffer of at least n levels, never nil.
func (lp *levelPool) get(n int) []store.Level {
	if b, ok := lp.p.Get().(*[]store.Level); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]store.Level, 0, n)
}

func (lp *levelPool) put(b []store.Level) {
	if b != nil {
		lp.p.Put(&b)
	}
}
