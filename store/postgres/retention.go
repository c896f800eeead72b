package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

// Dropped is what DropSnapshotsBefore dropped, or would drop.
type Dropped struct {
	// Partitions are the monthly partitions of snapshot_chunks dropped,
	// oldest first.
	Partitions []string
	// Snapshots is how many snapshots went with them.
	Snapshots int64
	// Markets is how many markets lost snapshots; Emptied how many of them
	// have none left.
	Markets, Emptied int
	// Kept is how many snapshots of the months kept were held by chunks
	// that began before them (written before chunks were cut at months'
	// ends), and were rewritten into the months kept rather than dropped.
	Kept int64
}

// lockNotAvailable is a lock not granted within lock_timeout.
const lockNotAvailable = "55P03"

// maxDropAttempts bounds the transactions one DropSnapshotsBefore runs:
// one more when partitions must be made for what it keeps, and a few
// when writers hold the tables past lock_timeout or it meets one in a
// deadlock.
const maxDropAttempts = 6

// DropSnapshotsBefore drops the snapshots of every month before the month
// starting at before (the first instant of a calendar month in UTC, and
// not later than the current month's: the month being recorded is never
// dropped), and returns what it dropped. In one transaction it drops the
// months' partitions of snapshot_chunks and counts every market's
// snapshots afresh from what remains, so that each market's listing,
// count and tape agree with its chunks; a market left with none is a
// market without snapshots. Markets, their trades and gaps are kept.
// With dryRun it changes nothing and returns what it would drop.
//
// It holds the readers and writers of snapshots and of the markets'
// counts off while it runs: a moment, as dropping a table does not read
// it. When other transactions hold those tables (an import, say) longer
// than it waits, it tries again a few times, then fails as
// store.ErrUnavailable, having changed nothing.
func (s *Store) DropSnapshotsBefore(ctx context.Context, before time.Time, dryRun bool) (Dropped, error) {
	op := fmt.Sprintf("drop the snapshots before %s", before.UTC().Format("2006-01"))
	m := monthOf(before)
	switch {
	case !m.start().Equal(before):
		return Dropped{}, invalid(op, fmt.Sprintf("%s is not the start of a month in UTC", before.Format(time.RFC3339Nano)))
	case m.start().After(monthOf(time.Now()).start()):
		return Dropped{}, invalid(op, "the current month is being recorded: the latest month whose snapshots can be dropped is the one before it")
	}
	var need []month
	for attempt := 1; ; attempt++ {
		if err := s.ensurePartitions(ctx, need); err != nil {
			return Dropped{}, wrap(op, err)
		}
		var d Dropped
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			var err error
			d, err = s.dropBefore(ctx, tx, m.start(), dryRun)
			if err == nil && dryRun {
				return errDryRun
			}
			return err
		})
		if errors.Is(err, errDryRun) {
			return d, nil
		}
		if err == nil {
			s.parts.forget() // the months dropped are made afresh if written again
			return d, nil
		}
		if attempt < maxDropAttempts {
			var np needPartitions
			if errors.As(err, &np) {
				need = np
				continue
			}
			switch pgCode(err) {
			case checkViolation: // a partition this process knew of was dropped
				s.parts.forget()
				continue
			case lockNotAvailable, "40P01": // writers held the tables, or a deadlock with one
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(attempt) * time.Second):
				}
				continue
			}
		}
		if code := pgCode(err); code == lockNotAvailable || code == "40P01" {
			err = fmt.Errorf("the snapshot tables stayed busy (an import, or another long transaction, writing or reading them): "+
				"nothing was dropped; try again once it is done: %w", err)
		}
		return Dropped{}, wrap(op, err)
	}
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// dropBefore is DropSnapshotsBefore in tx.
func (s *Store) dropBefore(ctx context.Context, tx pgx.Tx, before time.Time, dryRun bool) (Dropped, error) {
	var d Dropped
	if !dryRun {
		// Appends lock their market's series row first and then read and
		// write chunks, and readers read the series before (or with) the
		// chunks: the series table is taken first here too, which waits
		// for the appends and reads under way and holds the next off
		// before they touch the chunks, so that none waits on a chunk lock
		// this holds while holding a series row this needs, and no reader
		// reads a series before the drop and its chunks after. Readers
		// queue behind the locks while they are waited for: they are
		// waited for briefly, and tried again (maxDropAttempts).
		for _, lock := range []string{
			`set local lock_timeout = '2s'`,
			`lock table snapshot_series in access exclusive mode`,
			`lock table snapshot_chunks in access exclusive mode`,
		} {
			if _, err := tx.Exec(ctx, lock); err != nil {
				return d, err
			}
		}
	}
	// The partitions wholly before the month.
	rows, _ := tx.Query(ctx, `select c.relname::text from pg_inherits i join pg_class c on c.oid = i.inhrelid
		where i.inhparent = 'snapshot_chunks'::regclass`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return d, err
	}
	for _, name := range names {
		if t, ok := partitionMonth(name); ok && t.Before(before) {
			d.Partitions = append(d.Partitions, name)
		}
	}
	slices.Sort(d.Partitions)

	// Chunks that begin before the month and end in it (or later) hold
	// snapshots that are kept: they are written anew, in the months they
	// belong to, before the old months go.
	rows, _ = tx.Query(ctx, `select market, first_time from snapshot_chunks
		where first_time < $1 and last_time >= $1 order by market, first_time`, before)
	type chunkKey struct {
		market int64
		first  time.Time
	}
	crossing, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chunkKey, error) {
		var c chunkKey
		err := row.Scan(&c.market, &c.first)
		return c, err
	})
	if err != nil {
		return d, err
	}
	for i := 0; i < len(crossing); {
		market := crossing[i].market
		var firsts []time.Time
		for ; i < len(crossing) && crossing[i].market == market; i++ {
			firsts = append(firsts, crossing[i].first)
		}
		snaps, err := readChunks(ctx, tx, market, firsts)
		if err != nil {
			return d, err
		}
		k, _ := slices.BinarySearchFunc(snaps, before, func(sn store.Snapshot, t time.Time) int { return sn.Time.Compare(t) })
		kept := snaps[k:]
		d.Kept += int64(len(kept))
		if dryRun || len(kept) == 0 {
			continue
		}
		if err := s.writeChunks(ctx, tx, market, kept); err != nil {
			return d, err
		}
	}

	// What goes: every chunk before the month, less what was kept.
	if err := tx.QueryRow(ctx, `select count(distinct market), coalesce(sum(n), 0) from snapshot_chunks where first_time < $1`,
		before).Scan(&d.Markets, &d.Snapshots); err != nil {
		return d, err
	}
	d.Snapshots -= d.Kept
	if dryRun {
		err := tx.QueryRow(ctx, `select count(*) from snapshot_series where first_time < $1 and last_time < $1`, before).Scan(&d.Emptied)
		return d, err
	}

	for _, name := range d.Partitions {
		if _, err := tx.Exec(ctx, `drop table `+pgx.Identifier{name}.Sanitize()); err != nil {
			return d, err
		}
	}
	// Anything left before the month is in a partition updown did not make
	// (a default partition, one made by hand): the counts below would
	// disagree with it.
	var left bool
	if err := tx.QueryRow(ctx, `select exists (select from snapshot_chunks where first_time < $1)`, before).Scan(&left); err != nil {
		return d, err
	}
	if left {
		return d, fmt.Errorf("snapshot chunks before %s remain in a partition not named snapshot_chunks_pYYYYMM: detach or drop it first",
			before.Format("2006-01"))
	}

	// The series of the markets that had snapshots before the month,
	// counted afresh from their chunks: those with some left (few, the
	// markets that ran across the month's start), then the rest, which
	// have none. Each counts what it lost (dropped).
	rows, _ = tx.Query(ctx, `select market from snapshot_series where first_time < $1 and last_time >= $1`, before)
	spanning, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return d, err
	}
	if len(spanning) > 0 {
		if _, err := tx.Exec(ctx, `
			update snapshot_series s set dropped = s.dropped + s.n - c.n, n = c.n, first_time = c.first_time, last_time = c.last_time
			from (select market, sum(n)::bigint as n, min(first_time) as first_time, max(last_time) as last_time
				from snapshot_chunks where market = any($1) group by market) c
			where s.market = c.market`, spanning); err != nil {
			return d, err
		}
	}
	// Emptied, each keeps its row and the count of what went
	// (store.DataVersion).
	tag, err := tx.Exec(ctx, `update snapshot_series set dropped = dropped + n, n = 0, first_time = null, last_time = null
		where first_time < $1`, before)
	if err != nil {
		return d, err
	}
	d.Emptied = int(tag.RowsAffected())
	return d, nil
}

// partitionMonth returns the month a partition of snapshot_chunks named as
// month.table names it holds.
func partitionMonth(name string) (time.Time, bool) {
	digits, ok := strings.CutPrefix(name, "snapshot_chunks_p")
	if !ok || len(digits) != 6 {
		return time.Time{}, false
	}
	t, err := time.Parse("200601", digits)
	if err != nil || monthOf(t).table() != name {
		return time.Time{}, false
	}
	return t, true
}
