package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

var _ store.SweepStore = (*Store)(nil)

// sweepColumns are a sweep's columns in scanSweep's order; listColumns
// the same without the result, which listings leave out.
const (
	sweepColumns = `id, customer_id::text, status, request, trial_count, markets, replays_total,
		replays_done, result, error, created_at, updated_at, finished_at`
	listColumns = `id, customer_id::text, status, request, trial_count, markets, replays_total,
		replays_done, null::json, error, created_at, updated_at, finished_at`

	// listSweepsSQL is a customer's sweeps in the listing's order (the
	// sweeps_by_customer index), before its limit and offset.
	listSweepsSQL = `select ` + listColumns + ` from sweeps where customer_id = $1
		order by created_at desc, id desc`
	// activeSweepsSQL counts a customer's sweeps in flight (the
	// sweeps_active index).
	activeSweepsSQL = `select count(*) from sweeps
		where customer_id = $1 and status in ('QUEUED', 'RUNNING')`
	// deleteFinishedSQL deletes the sweeps finished before $1 (the
	// sweeps_finished index), but not one whose result is being written
	// (a reader counted, readLeaseSQL, whose lease has not lapsed); their
	// shards go with them (on delete cascade).
	deleteFinishedSQL = `delete from sweeps where finished_at < $1 and (readers = 0 or read_until < now())`
	// readLeaseSQL counts $3 more readers (1 to take a lease, 0 to renew
	// one) of DONE sweep $1 and pushes their lease out to $2 microseconds
	// from now (never shortening another reader's). It answers the sweep's
	// status as the statement began (no row: an unknown sweep) and, when
	// the lease was counted (leased true; null when the sweep is gone or
	// not DONE), what WriteSweepResult reads of the sweep's row: where its
	// trials stand, and, for a lease taken, the result around them. A
	// sweep that becomes DONE while the statement runs is not leased: the
	// update skips the row its snapshot sees unfinished without waiting
	// for it, and the status answered is that one (a conflict, as for a
	// GET a moment earlier).
	readLeaseSQL = `with lease as (
			update sweeps set readers = readers + $3, read_until = greatest(read_until, now() + $2 * interval '1 microsecond')
			where id = $1 and status = 'DONE'
			returning true as leased, trials_at, trial_rows, case when $3 > 0 then result end as result)
		select sw.status, lease.leased, lease.trials_at, lease.trial_rows, lease.result
		from sweeps sw left join lease on true where sw.id = $1`
	// readUnleaseSQL gives back a reader of sweep $1: the last one given
	// back, the sweep is a prune's again.
	readUnleaseSQL = `update sweeps set readers = greatest(readers - 1, 0) where id = $1`
)

// sweepCapLock is the advisory lock key (with hashtext of the customer's
// id) that serialises a customer's CreateSweeps under a cap, across
// processes: two customers whose ids hash alike merely wait for each
// other.
const sweepCapLock = 0x75707377 // "upsw"

// CreateSweep stores a new QUEUED sweep. Under a cap, the count of the
// customer's sweeps in flight and the insert are one transaction holding
// the customer's advisory lock, so that a concurrent create counts after
// this one commits (read committed: each statement sees what committed
// before it began). CreatedAt is the database's clock as the row is
// inserted, after the lock is held: a customer's sweeps stored under a cap
// are in the order they were stored, in every process, and the oldest a
// plan keeps (api.StopSweepsOffPlan) are the ones stored first.
func (s *Store) CreateSweep(ctx context.Context, sw store.Sweep, maxActive int) (store.Sweep, error) {
	const op = "create sweep"
	if err := sw.Check(); err != nil {
		return store.Sweep{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := store.CheckSweepCap(maxActive); err != nil {
		return store.Sweep{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if !validID(sw.CustomerID) {
		return store.Sweep{}, early(ctx, op, fmt.Errorf("customer %q: %w", sw.CustomerID, store.ErrNotFound))
	}
	var got store.Sweep
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if maxActive > 0 {
			if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1, hashtext($2))`, sweepCapLock, sw.CustomerID); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, activeSweepsSQL, sw.CustomerID).Scan(&n); err != nil {
				return err
			}
			if n >= maxActive {
				return fmt.Errorf("customer %q has %d sweeps in flight, its cap: %w", sw.CustomerID, n, store.ErrSweepsInFlight)
			}
		}
		rows, _ := tx.Query(ctx, `
			insert into sweeps (id, customer_id, status, request, trial_count, markets, replays_total,
				created_at, updated_at)
			select $1, $2, $3, $4, $5, $6, $7, t.now, t.now from (select clock_timestamp() as now) t
			returning `+sweepColumns,
			store.NewSweepID(), sw.CustomerID, string(store.SweepQueued), sw.Request, sw.TrialCount,
			sw.Markets, sw.TrialCount*len(sw.Markets))
		var err error
		got, err = pgx.CollectExactlyOneRow(rows, scanSweep)
		return err
	})
	if pgCode(err) == foreignKeyViolation {
		return store.Sweep{}, notFound(fmt.Sprintf("%s: customer %q", op, sw.CustomerID))
	}
	if err != nil {
		return store.Sweep{}, wrap(op, err)
	}
	return got, nil
}

// GetSweep returns the sweep with the id.
func (s *Store) GetSweep(ctx context.Context, id string) (store.Sweep, error) {
	op := fmt.Sprintf("get sweep %q", id)
	if !storable(id) {
		return store.Sweep{}, early(ctx, op, store.ErrNotFound)
	}
	var r sweepRow
	var at, n *int32
	err := s.pool.QueryRow(ctx, `select `+sweepColumns+`, trials_at, trial_rows from sweeps where id = $1`, id).Scan(
		append(r.dest(), &at, &n)...)
	if err != nil {
		return store.Sweep{}, wrap(op, err)
	}
	sw := r.sweep()
	if at == nil {
		return sw, nil
	}
	// The result's trials are rows of their own (migration 015): put them
	// back where they stood.
	var result bytes.Buffer
	result.Grow(len(sw.Result))
	if err := s.writeAround(ctx, id, sw.Result, int(*at), int(*n), &result); err != nil {
		return store.Sweep{}, wrap(op, err)
	}
	sw.Result = result.Bytes()
	return sw, nil
}

// GetSweepInfo returns the sweep with the id without its result.
func (s *Store) GetSweepInfo(ctx context.Context, id string) (store.Sweep, error) {
	op := fmt.Sprintf("get sweep %q", id)
	if !storable(id) {
		return store.Sweep{}, early(ctx, op, store.ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `select `+listColumns+` from sweeps where id = $1`, id)
	sw, err := pgx.CollectExactlyOneRow(rows, scanSweep)
	return sw, wrap(op, err)
}

// sweepTrialsHeadSQL is what SweepTrials reads of the sweep before its
// trials: not its result, unless its trials are in it
// (trial_rows null: a sweep finished before migration 015, read whole as
// it was then).
const sweepTrialsHeadSQL = `select status, trials_at, trial_rows,
		case when status = 'DONE' and trial_rows is null then result end
	from sweeps where id = $1`

// sweepTrialsSQL is trials $2 to $3 (exclusive) of sweep $1, in order: a
// range of sweep_trials' key.
const sweepTrialsSQL = `select body from sweep_trials where sweep_id = $1 and trial >= $2 and trial < $3 order by trial`

// trialBatch is how many trials WriteSweepResult and GetSweep read at a
// time: some three megabytes of a large sweep's.
const trialBatch = 200

// sweepTrialsHead is what sweepTrialsHeadSQL reads.
type sweepTrialsHead struct {
	status   store.SweepStatus
	at, rows *int32
	legacy   []byte // the whole result of a sweep finished before migration 015
}

// trialsHead reads the head of the DONE sweep with the id: ErrNotFound
// for an unknown one, ErrConflict for one not DONE.
func (s *Store) trialsHead(ctx context.Context, op, id string) (sweepTrialsHead, error) {
	var h sweepTrialsHead
	var status string
	if err := s.pool.QueryRow(ctx, sweepTrialsHeadSQL, id).Scan(&status, &h.at, &h.rows, &h.legacy); err != nil {
		return h, wrap(op, err)
	}
	h.status = store.SweepStatus(status)
	if h.status != store.SweepDone {
		return h, notDone(op, h.status)
	}
	return h, nil
}

// notDone is ErrConflict for op on a sweep in status, not DONE.
func notDone(op string, status store.SweepStatus) error {
	return fmt.Errorf("postgres: %s: the sweep is %s, not DONE: %w", op, status, store.ErrConflict)
}

// SweepTrials reads the page's rows of sweep_trials, not the result.
func (s *Store) SweepTrials(ctx context.Context, id string, offset, limit int) ([][]byte, int, error) {
	op := fmt.Sprintf("list trials of sweep %q", id)
	if limit < 0 || offset < 0 {
		return nil, 0, invalid(op, fmt.Sprintf("limit %d, offset %d: want neither negative", limit, offset))
	}
	if !storable(id) {
		return nil, 0, early(ctx, op, store.ErrNotFound)
	}
	h, err := s.trialsHead(ctx, op, id)
	if err != nil {
		return nil, 0, err
	}
	page := [][]byte{}
	if h.rows == nil { // finished before migration 015: the result is whole
		cut, _ := store.CutSweepResult(h.legacy)
		end := len(cut.Trials)
		if limit > 0 {
			end = min(end, offset+limit)
		}
		for i := offset; i < end; i++ {
			page = append(page, store.TrimJSONSpace(cut.Trials[i]))
		}
		return page, len(cut.Trials), nil
	}
	total := int(*h.rows)
	end := total
	if limit > 0 {
		end = min(end, offset+limit)
	}
	if offset >= end {
		return page, total, nil
	}
	rows, _ := s.pool.Query(ctx, sweepTrialsSQL, id, offset, end)
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, 0, wrap(op, err)
	}
	if len(bodies) != end-offset { // deleted meanwhile (retention)
		return nil, 0, notFound(op)
	}
	for _, b := range bodies {
		page = append(page, store.TrimJSONSpace(b))
	}
	return page, total, nil
}

// readLease is how long a read lease (readLeaseSQL) lasts; WriteSweepResult
// renews it once half of it has passed, before each batch of trials.
const readLease = 10 * time.Minute

// WriteSweepResult writes the result's rest around its trials, read
// trialBatch at a time, with no connection held while w writes. It holds a
// read lease on the sweep while it writes, so that a retention prune
// meanwhile spares it: a cut answer cannot be mended once its start is
// sent. The lease is renewed as the writing goes, and given back at its
// end. Taking it reads what the writing needs of the sweep's row, in the
// same statement: a sweep of fewer trials than a batch is three
// statements, the lease, its trials and the lease given back.
func (s *Store) WriteSweepResult(ctx context.Context, id string, w io.Writer) error {
	op := fmt.Sprintf("write the result of sweep %q", id)
	if !storable(id) {
		return early(ctx, op, store.ErrNotFound)
	}
	lease := &readLeaseHeld{s: s, op: op, id: id}
	h, err := lease.lease(ctx, 1)
	if err != nil {
		return err
	}
	defer lease.release(ctx)
	w = lease.renewing(ctx, w)
	if h.at == nil { // whole in the sweep's row: before migration 015, or without trials to cut out
		_, err := w.Write(h.rest)
		return err
	}
	return s.writeAround(ctx, id, h.rest, int(*h.at), int(*h.rows), w)
}

// readLeaseHeld is a read lease a WriteSweepResult holds on its sweep.
type readLeaseHeld struct {
	s     *Store
	op    string
	id    string
	taken time.Time // when it was taken or last renewed (this process's clock)
}

// leasedHead is what readLeaseSQL reads of the sweep's row: where the
// result's trials stand (at nil: nowhere, the result is whole) and how
// many they are, and the result around them (nil on a renewal).
type leasedHead struct {
	at, rows *int32
	rest     []byte
}

// renew pushes the lease out: ErrNotFound when the sweep is gone.
func (l *readLeaseHeld) renew(ctx context.Context) error {
	_, err := l.lease(ctx, 0)
	return err
}

// lease counts readers more readers of the sweep (1 to take the lease, 0
// to renew it), pushes the lease out and returns the sweep's head:
// ErrNotFound when the sweep is gone, ErrConflict when it is not DONE.
func (l *readLeaseHeld) lease(ctx context.Context, readers int) (leasedHead, error) {
	var h leasedHead
	var status string
	var leased *bool
	err := l.s.pool.QueryRow(ctx, readLeaseSQL, l.id, readLease.Microseconds(), readers).Scan(&status, &leased, &h.at, &h.rows, &h.rest)
	switch {
	case err != nil:
		return h, wrap(l.op, err)
	case leased != nil:
		l.taken = time.Now()
		return h, nil
	case store.SweepStatus(status) != store.SweepDone:
		return h, notDone(l.op, store.SweepStatus(status))
	}
	return h, notFound(l.op) // DONE as the statement began, deleted since
}

// release gives the reader back, so that the next prune may delete a
// sweep past its retention once no other is reading it; a failure only
// leaves the lease to lapse.
func (l *readLeaseHeld) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = l.s.pool.Exec(rctx, readUnleaseSQL, l.id)
}

// renewing is w, renewing the lease before a write once half of it has
// passed, so that a long writing keeps its sweep. A renewal that fails for
// another reason than the sweep being gone is tried again at the next
// write: the lease still has half its time.
func (l *readLeaseHeld) renewing(ctx context.Context, w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if time.Since(l.taken) > readLease/2 {
			if err := l.renew(ctx); errors.Is(err, store.ErrNotFound) {
				return 0, err
			}
		}
		return w.Write(p)
	})
}

// writerFunc is a func as an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// writeAround writes rest, a DONE sweep's result without its trials, to w
// with the sweep's n trial rows put back at offset at, comma-separated,
// read trialBatch at a time (eachTrial).
func (s *Store) writeAround(ctx context.Context, id string, rest []byte, at, n int, w io.Writer) error {
	if _, err := w.Write(rest[:at]); err != nil {
		return err
	}
	comma := []byte{','}
	err := s.eachTrial(ctx, id, n, func(i int, body []byte) error {
		if i > 0 {
			if _, err := w.Write(comma); err != nil {
				return err
			}
		}
		_, err := w.Write(body)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(rest[at:])
	return err
}

// eachTrial calls f with each of the sweep's n trial rows in order, read
// trialBatch at a time into one buffer used again for each batch (body
// is f's until it returns), no connection held while f runs. Fewer rows
// than n is ErrNotFound: the sweep was deleted meanwhile (retention).
func (s *Store) eachTrial(ctx context.Context, id string, n int, f func(i int, body []byte) error) error {
	op := fmt.Sprintf("read the trials of sweep %q", id)
	var buf []byte
	ends := make([]int, 0, trialBatch)
	for from := 0; from < n; from += trialBatch {
		to := min(n, from+trialBatch)
		buf, ends = buf[:0], ends[:0]
		rows, _ := s.pool.Query(ctx, sweepTrialsSQL, id, from, to)
		for rows.Next() {
			if rows.FieldDescriptions()[0].Format == pgx.BinaryFormatCode { // bytea's bytes as they are
				buf = append(buf, rows.RawValues()[0]...)
			} else {
				var b []byte
				if err := rows.Scan(&b); err != nil {
					rows.Close()
					return wrap(op, err)
				}
				buf = append(buf, b...)
			}
			ends = append(ends, len(buf))
		}
		if err := rows.Err(); err != nil {
			return wrap(op, err)
		}
		if len(ends) != to-from {
			return notFound(op)
		}
		start := 0
		for k, end := range ends {
			if err := f(from+k, buf[start:end:end]); err != nil {
				return err
			}
			start = end
		}
	}
	return nil
}

// querier is what both a pool and a transaction answer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// getSweep reads the sweep with the id; lock, when not empty, is the
// locking clause (for no key update).
func getSweep(ctx context.Context, q querier, id, lock string) (store.Sweep, error) {
	rows, _ := q.Query(ctx, `select `+sweepColumns+` from sweeps where id = $1 `+lock, id)
	return pgx.CollectExactlyOneRow(rows, scanSweep)
}

// ListSweeps returns one page of the customer's sweeps, newest first, and
// their number. The count and the page are one batch, as in ListMarkets.
func (s *Store) ListSweeps(ctx context.Context, customerID string, limit, offset int) ([]store.Sweep, int, error) {
	op := fmt.Sprintf("list sweeps of customer %q", customerID)
	if limit < 0 || offset < 0 {
		return nil, 0, invalid(op, fmt.Sprintf("limit %d, offset %d: want neither negative", limit, offset))
	}
	if !validID(customerID) {
		return []store.Sweep{}, 0, early(ctx, op, nil)
	}
	batch := &pgx.Batch{}
	var total int
	batch.Queue(`select count(*) from sweeps where customer_id = $1`, customerID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&total)
	})
	var sweeps []store.Sweep
	batch.Queue(listSweepsSQL+limitOffset(limit, offset), customerID).Query(func(rows pgx.Rows) error {
		var err error
		sweeps, err = pgx.CollectRows(rows, scanSweep)
		return err
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, 0, wrap(op, err)
	}
	if sweeps == nil {
		sweeps = []store.Sweep{}
	}
	return sweeps, total, nil
}

// CountActiveSweeps counts the customer's QUEUED and RUNNING sweeps.
func (s *Store) CountActiveSweeps(ctx context.Context, customerID string) (int, error) {
	op := fmt.Sprintf("count active sweeps of customer %q", customerID)
	if !validID(customerID) {
		return 0, early(ctx, op, nil)
	}
	var n int
	err := s.pool.QueryRow(ctx, activeSweepsSQL, customerID).Scan(&n)
	return n, wrap(op, err)
}

// SetSweepStatus moves the sweep from one of from to to. The sweep's row
// is locked while its status is compared and changed, so that of two
// callers racing exactly one sees the status it expects.
func (s *Store) SetSweepStatus(ctx context.Context, id string, from []store.SweepStatus, to store.SweepStatus, errText string) (store.Sweep, error) {
	op := fmt.Sprintf("set status of sweep %q to %s", id, to)
	if err := store.CheckSweepTransition(from, to, errText); err != nil {
		return store.Sweep{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	return s.transition(ctx, op, id, from, func(tx pgx.Tx, sw store.Sweep, now time.Time) (store.Sweep, error) {
		if sw.Status == to {
			return sw, nil
		}
		var finished *time.Time
		if to.Final() {
			finished = &now
		}
		rows, _ := tx.Query(ctx, `update sweeps set status = $2, error = $3, updated_at = $4, finished_at = $5
			where id = $1 returning `+sweepColumns, id, string(to), errText, now, finished)
		return pgx.CollectExactlyOneRow(rows, scanSweep)
	})
}

// FinishSweep moves a RUNNING sweep to DONE with its result.
func (s *Store) FinishSweep(ctx context.Context, id string, result []byte) error {
	op := fmt.Sprintf("finish sweep %q", id)
	if err := store.CheckSweepJSON("result", result); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	from := []store.SweepStatus{store.SweepRunning}
	// The trials are rows of their own (migration 015), the rest of the
	// result in the sweep's row.
	cut, ok := store.CutSweepResult(result)
	rest, at := result, (*int)(nil)
	if ok {
		rest, at = cut.Rest, &cut.At
	}
	_, err := s.transition(ctx, op, id, from, func(tx pgx.Tx, _ store.Sweep, now time.Time) (store.Sweep, error) {
		_, err := tx.Exec(ctx, `update sweeps set status = 'DONE', result = $2, updated_at = $3, finished_at = $3,
				trials_at = $4, trial_rows = $5
			where id = $1`, id, rest, now, at, len(cut.Trials))
		if err != nil || !ok {
			return store.Sweep{}, err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"sweep_trials"}, []string{"sweep_id", "trial", "body"},
			pgx.CopyFromSlice(len(cut.Trials), func(i int) ([]any, error) { return []any{id, i, cut.Trials[i]}, nil }))
		return store.Sweep{}, err
	})
	return err
}

// transition locks the sweep, checks that its status is one of from
// (ErrConflict otherwise) and applies change, in one transaction.
func (s *Store) transition(ctx context.Context, op, id string, from []store.SweepStatus,
	change func(tx pgx.Tx, sw store.Sweep, now time.Time) (store.Sweep, error)) (store.Sweep, error) {
	if !storable(id) {
		return store.Sweep{}, early(ctx, op, store.ErrNotFound)
	}
	var out store.Sweep
	var conflict error
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		sw, err := getSweep(ctx, tx, id, "for no key update")
		if err != nil {
			return err
		}
		if !slices.Contains(from, sw.Status) {
			conflict = fmt.Errorf("postgres: %s: the sweep is %s, not %v: %w", op, sw.Status, from, store.ErrConflict)
			return nil
		}
		out, err = change(tx, sw, s.stamp())
		return err
	})
	switch {
	case err != nil:
		return store.Sweep{}, wrap(op, err)
	case conflict != nil:
		return store.Sweep{}, conflict
	}
	return out, nil
}

// PutSweepShard stores a shard's results once. The sweep's row is locked
// (for no key update) for the transaction, so that the status check, the
// insert and the count are one step: of two workers racing on a shard the
// second waits, finds the row and counts nothing, and a cancel waits for
// a put in progress or refuses the ones after it.
func (s *Store) PutSweepShard(ctx context.Context, sweepID, market string, trials int, results []byte) (store.Sweep, error) {
	op := fmt.Sprintf("put shard %q of sweep %q", market, sweepID)
	if err := store.CheckSweepShard(results); err != nil {
		return store.Sweep{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if !storable(sweepID) {
		return store.Sweep{}, early(ctx, op, store.ErrNotFound)
	}
	key := market
	if !storable(market) {
		key = "" // no sweep has it: not one of the sweep's markets
	}
	var out store.Sweep
	var refused error
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var status string
		var trialCount int
		var position *int32 // nil: not one of the sweep's markets
		err := tx.QueryRow(ctx, `select status, trial_count, array_position(markets, $2)
			from sweeps where id = $1 for no key update`, sweepID, key).Scan(&status, &trialCount, &position)
		if err != nil {
			return err
		}
		switch {
		case position == nil:
			refused = invalid(op, "the market is not one of the sweep's")
			return nil
		case trials != trialCount:
			refused = invalid(op, fmt.Sprintf("%d trials, the sweep has %d", trials, trialCount))
			return nil
		case !store.SweepStatus(status).Active():
			refused = fmt.Errorf("postgres: %s: the sweep is %s: %w", op, status, store.ErrConflict)
			return nil
		}
		now := s.stamp()
		tag, err := tx.Exec(ctx, `insert into sweep_shards (sweep_id, market, position, trials, results, created_at)
			values ($1, $2, $3, $4, $5, $6) on conflict (sweep_id, market) do nothing`,
			sweepID, market, *position-1, trials, results, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			out, err = getSweep(ctx, tx, sweepID, "")
			return err
		}
		rows, _ := tx.Query(ctx, `update sweeps set replays_done = replays_done + $2, updated_at = $3
			where id = $1 returning `+sweepColumns, sweepID, trials, now)
		out, err = pgx.CollectExactlyOneRow(rows, scanSweep)
		return err
	})
	switch {
	case err != nil:
		return store.Sweep{}, wrap(op, err)
	case refused != nil:
		return store.Sweep{}, refused
	}
	return out, nil
}

// ListSweepShards returns the sweep's shards in its markets' order.
func (s *Store) ListSweepShards(ctx context.Context, sweepID string) ([]store.SweepShard, error) {
	out := []store.SweepShard{}
	err := s.EachSweepShard(ctx, sweepID, func(sh store.SweepShard) error {
		out = append(out, sh)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachSweepShard calls f with each of the sweep's shards in its markets'
// order, read shardBatch at a time: f runs with no connection held, so
// that what it waits for (a worker's shard gives way to its replays,
// which read the store) never waits for the connection f's own read
// holds, however small the pool.
func (s *Store) EachSweepShard(ctx context.Context, sweepID string, f func(store.SweepShard) error) error {
	op := fmt.Sprintf("list shards of sweep %q", sweepID)
	if !storable(sweepID) {
		return early(ctx, op, store.ErrNotFound)
	}
	after := -1
	for first := true; ; first = false {
		// The first batch with the sweep, so that an unknown sweep (no
		// row) is told from one without shards (a row of nulls).
		rows, _ := s.pool.Query(ctx, `
			select sh.position, sh.market, sh.trials, sh.results, sh.created_at
			from sweeps sw left join sweep_shards sh on sh.sweep_id = sw.id and sh.position > $2
			where sw.id = $1 order by sh.position limit $3`, sweepID, after, shardBatch)
		var batch []store.SweepShard
		found := false
		for rows.Next() {
			found = true
			var position *int
			var market *string
			var trials *int
			var results []byte
			var created *time.Time
			if err := rows.Scan(&position, &market, &trials, &results, &created); err != nil {
				rows.Close()
				return wrap(op, err)
			}
			if market == nil {
				continue
			}
			after = *position
			batch = append(batch, store.SweepShard{SweepID: sweepID, Market: *market, Trials: *trials,
				Results: results, CreatedAt: utc(*created)})
		}
		if err := rows.Err(); err != nil {
			return wrap(op, err)
		}
		if first && !found {
			return notFound(op)
		}
		for i := range batch {
			sh := batch[i]
			batch[i] = store.SweepShard{}
			if err := f(sh); err != nil {
				return err
			}
		}
		if len(batch) < shardBatch {
			return nil
		}
	}
}

// shardBatch is how many shards EachSweepShard reads at a time: a few
// megabytes of a 10,000-trial sweep's.
const shardBatch = 4

// DeleteSweepsFinishedBefore deletes the sweeps finished before t and
// their shards, in one statement.
func (s *Store) DeleteSweepsFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	op := fmt.Sprintf("delete sweeps finished before %s", t.UTC().Format(time.RFC3339Nano))
	tag, err := s.pool.Exec(ctx, deleteFinishedSQL, micro(t))
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(tag.RowsAffected()), nil
}

// early answers a call decided before asking the server (a key no row can
// have): ctx's error if it is done, as a call to the server would,
// otherwise err (nil for an empty answer) for op.
func early(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return wrap(op, cerr)
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// scanSweep reads a row of sweepColumns (or listColumns).
func scanSweep(row pgx.CollectableRow) (store.Sweep, error) {
	var r sweepRow
	if err := row.Scan(r.dest()...); err != nil {
		return store.Sweep{}, err
	}
	return r.sweep(), nil
}

// sweepRow is a row of sweepColumns as scanned.
type sweepRow struct {
	sw          store.Sweep
	status      string
	total, done int64
}

// dest are the destinations of a row of sweepColumns.
func (r *sweepRow) dest() []any {
	sw := &r.sw
	return []any{&sw.ID, &sw.CustomerID, &r.status, &sw.Request, &sw.TrialCount, &sw.Markets, &r.total,
		&r.done, &sw.Result, &sw.Error, &sw.CreatedAt, &sw.UpdatedAt, &sw.FinishedAt}
}

// sweep is the sweep the row holds.
func (r *sweepRow) sweep() store.Sweep {
	sw := r.sw
	sw.Status, sw.ReplaysTotal, sw.ReplaysDone = store.SweepStatus(r.status), int(r.total), int(r.done)
	sw.CreatedAt, sw.UpdatedAt, sw.FinishedAt = utc(sw.CreatedAt), utc(sw.UpdatedAt), utcPtr(sw.FinishedAt)
	return sw
}

// StoredShardMarkets returns the markets of the sweep's stored shards, in
// no order, without their results (worker.SweepResumer: what a stalled
// sweep lacks); none for an unknown sweep.
func (s *Store) StoredShardMarkets(ctx context.Context, sweepID string) ([]string, error) {
	op := fmt.Sprintf("list the stored shards of sweep %q", sweepID)
	if !storable(sweepID) {
		return []string{}, early(ctx, op, nil)
	}
	rows, _ := s.pool.Query(ctx, `select market from sweep_shards where sweep_id = $1`, sweepID)
	markets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrap(op, err)
	}
	if markets == nil {
		markets = []string{}
	}
	return markets, nil
}

// ListStalledSweeps returns the QUEUED and RUNNING sweeps last updated
// before t, oldest first, without their results (worker.SweepResumer).
func (s *Store) ListStalledSweeps(ctx context.Context, t time.Time) ([]store.Sweep, error) {
	const op = "list stalled sweeps"
	rows, _ := s.pool.Query(ctx, `select `+listColumns+` from sweeps
		where status in ('QUEUED', 'RUNNING') and updated_at < $1 order by updated_at`, t)
	sweeps, err := pgx.CollectRows(rows, scanSweep)
	if err != nil {
		return nil, wrap(op, err)
	}
	if sweeps == nil {
		sweeps = []store.Sweep{}
	}
	return sweeps, nil
}
