package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

// month is a calendar month in UTC: the unit of snapshot_chunks partitions.
type month struct {
	year int
	mon  time.Month
}

func monthOf(t time.Time) month {
	t = t.UTC()
	return month{t.Year(), t.Month()}
}

func (m month) start() time.Time { return time.Date(m.year, m.mon, 1, 0, 0, 0, 0, time.UTC) }

func (m month) next() month { return monthOf(m.start().AddDate(0, 1, 0)) }

// table is the name of the month's partition.
func (m month) table() string { return fmt.Sprintf("snapshot_chunks_p%04d%02d", m.year, int(m.mon)) }

// monthsOf lists the distinct months of the times of xs, in order of
// first appearance.
func monthsOf[T any](xs []T, at func(T) time.Time) []month {
	var out []month
	for _, x := range xs {
		m := monthOf(at(x))
		if len(out) == 0 || out[len(out)-1] != m && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// partitions remembers which monthly partitions this process has seen
// exist, so that writers check the catalog once per month rather than per
// write. It is only a cache: a partition dropped behind its back shows up
// as a failed insert, after which the writer forgets and checks again.
type partitions struct {
	mu    sync.Mutex
	known map[month]bool
}

func newPartitions() *partitions { return &partitions{known: map[month]bool{}} }

// missing returns the months not known to have a partition.
func (p *partitions) missing(months []month) []month {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []month
	for _, m := range months {
		if !p.known[m] {
			out = append(out, m)
		}
	}
	return out
}

func (p *partitions) add(m month) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known[m] = true
}

// forget drops everything known, after a write found a partition missing.
func (p *partitions) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.known)
}

// partitionLock is the advisory lock key (with 0) that serialises creating
// partitions across processes.
const partitionLock = 0x75706470 // "updp"

// ensurePartitions creates the partitions of the months that lack one. It
// runs outside any write transaction, and may run while one (an import's)
// holds its lock on snapshot_chunks: see createPartition.
func (s *Store) ensurePartitions(ctx context.Context, months []month) error {
	for _, m := range s.parts.missing(months) {
		if m.year < 1 || m.year > 9999 {
			return fmt.Errorf("%w: snapshot time in year %d", store.ErrInvalid, m.year)
		}
		if err := s.createPartition(ctx, m); err != nil {
			return fmt.Errorf("create partition %s: %w", m.table(), err)
		}
		s.parts.add(m)
	}
	return nil
}

func (s *Store) createPartition(ctx context.Context, m month) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, `select to_regclass($1) is not null`, m.table()).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	// The partition is made as a table of its own, then attached: ATTACH
	// PARTITION takes a lock on snapshot_chunks that writers and readers
	// do not conflict with, where CREATE TABLE … PARTITION OF waits for
	// every transaction that wrote to it, an import's among them, whose
	// next write may be waiting for this very partition. The table is
	// empty, so attaching scans nothing; its indexes and TOAST compression
	// are the parent's (the primary key is made as it is attached).
	table := pgx.Identifier{m.table()}.Sanitize()
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1, 0)`, partitionLock); err != nil {
			return err
		}
		// Made meanwhile by another writer? Asked of the catalog's rows as
		// this statement sees them (to_regclass may answer from a cache
		// that has not heard of a table committed while this waited).
		var exists bool
		if err := tx.QueryRow(ctx, `select exists (select from pg_inherits i join pg_class c on c.oid = i.inhrelid
			where i.inhparent = 'snapshot_chunks'::regclass and c.relname = $1)`, m.table()).Scan(&exists); err != nil || exists {
			return err
		}
		for _, ddl := range []string{
			fmt.Sprintf(`create table %s (like snapshot_chunks including all)`, table),
			fmt.Sprintf(`alter table snapshot_chunks attach partition %s for values from ('%s') to ('%s')`, table,
				m.start().Format(time.RFC3339), m.next().start().Format(time.RFC3339)),
		} {
			if _, err := tx.Exec(ctx, ddl); err != nil {
				return err
			}
		}
		return nil
	})
}
