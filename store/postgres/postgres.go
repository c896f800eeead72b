// Package postgres implements store.Store on PostgreSQL with pgx.
//
// The schema lives in embedded, versioned migrations (Migrate). Snapshots,
// the bulk of the data, are stored many to a row in a compact binary
// encoding (see codec.go) in a table partitioned by month.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
	"github.com/jackc/tern/v2/migrate"

	"github.com/updown/updown/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// versionTable records the applied migration version.
const versionTable = "schema_version"

// Store is a store.Store backed by a PostgreSQL database.
type Store struct {
	pool  *pgxpool.Pool
	parts *partitions
	// booksVersion is the books layout chunks are written in (0: the
	// current one); see WriteBooksVersion.
	booksVersion atomic.Uint32
	// deadline bounds each query when SetQueryTimeout set a timeout.
	deadline *queryDeadline
	// beforeImportLocks, when set (by tests), runs in an import's Commit
	// between the merging of stored markets' snapshots and the locking
	// of their rows.
	beforeImportLocks func()
}

var _ store.Store = (*Store)(nil)

// DefaultMaxConns is the pool's size when databaseURL does not set
// pool_max_conns: max(16, 4×GOMAXPROCS), above pgx's own max(4, NumCPU)
// so that an api process's heavy reads (half the pool at most, see
// api.Config.HeavyReads) leave connections for its light queries.
func DefaultMaxConns() int32 {
	return int32(max(16, 4*runtime.GOMAXPROCS(0)))
}

// DefaultLockTimeout is how long a statement waits for a lock (Postgres's
// lock_timeout) unless databaseURL says otherwise: a table held by a long
// transaction (an ALTER TABLE, an operator's session) makes the queries
// that need it fail, as store.ErrUnavailable, instead of hanging every
// request that reads it for as long (an api answered after 69 s, its
// /readyz ready all along). Migrate waits as long as it takes.
const DefaultLockTimeout = 10 * time.Second

// DefaultConnectTimeout bounds making a connection (dial, TLS, startup)
// unless databaseURL sets connect_timeout: without it, a Postgres that
// accepts connections but does not answer (a stuck server or pooler, a
// wrong port) kept every process's start, and updown migrate, waiting
// for ever instead of failing with DATABASE_URL's error.
const DefaultConnectTimeout = 10 * time.Second

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value connection string; pool settings such as pool_max_conns go in
// it too, the pool's size DefaultMaxConns unless it says, and so may
// lock_timeout, DefaultLockTimeout unless it says, and connect_timeout,
// DefaultConnectTimeout unless it says) and checks that it answers.
// Call Migrate before first use of a new database.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns()
	}
	if _, set := cfg.ConnConfig.RuntimeParams["lock_timeout"]; !set && !strings.Contains(databaseURL, "lock_timeout") {
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(DefaultLockTimeout.Milliseconds(), 10)
	}
	if !strings.Contains(databaseURL, "connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	// An idle connection is pinged before it is handed out: one to a
	// server that stopped answering is given up after this, not waited on
	// for as long as the caller's context.
	if !strings.Contains(databaseURL, "pool_ping_timeout") {
		cfg.PingTimeout = DefaultConnectTimeout
	}
	// A connection the server has closed is not handed out (liveConn).
	cfg.PrepareConn = liveConn
	deadline := &queryDeadline{}
	cfg.ConnConfig.Tracer = deadline
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return &Store{pool: pool, parts: newPartitions(), deadline: deadline}, nil
}

// WriteBooksVersion sets the layout of the order books in the chunks the
// store writes from now on: 2, the current one (each outcome's books a
// section of their own, read faster), or 1, which builds from before
// books version 2 can read too, so that a writer upgraded with 1 can be
// rolled back to one. Chunks of either are read whatever is set.
func (s *Store) WriteBooksVersion(v int) error {
	if v != booksVersion1 && v != booksVersion {
		return fmt.Errorf("postgres: books version %d: this build writes %d or %d", v, booksVersion1, booksVersion)
	}
	s.booksVersion.Store(uint32(v))
	return nil
}

// writeVersion is the books version chunks are written in.
func (s *Store) writeVersion() byte {
	if v := s.booksVersion.Load(); v != 0 {
		return byte(v)
	}
	return booksVersion
}

// Pool returns the connection pool, for readiness checks and tools.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// closeWait bounds how long Close waits for connections still in use.
const closeWait = 5 * time.Second

// Close closes every connection of the pool. It waits at most closeWait
// for connections still in use: one stuck on a server that stopped
// answering (the pool pings an idle connection before handing it out,
// and lets a ping its caller gave up on run on for a minute) is left to
// close in the background, rather than keeping a stopped process, its
// tasks already back in the queue, from exiting for over a minute past
// its SHUTDOWN_TIMEOUT.
func (s *Store) Close() {
	done := make(chan struct{})
	go func() {
		s.pool.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
	}
}

// Migrate brings the schema up to the newest embedded migration. Processes
// may call it at the same time: the migrator holds an advisory lock while it
// reads and advances the version.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.MigrateFrom(ctx)
	return err
}

// migrateLock is the session advisory lock MigrateFrom holds while it reads
// the version it starts from and migrates ("updown" in ASCII); tern's own
// lock, taken inside it, has another key.
const migrateLock = 0x7570646f776e

// MigrateFrom is Migrate, and returns the version the schema was at when
// this call came to migrate it: read under the same lock as the migrating,
// so of processes starting together on a new database one says it found
// version 0 and the others the version it left, where a version read
// before the lock had them all say 0, as if each had migrated it.
func (s *Store) MigrateFrom(ctx context.Context) (from int, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	// A migration waits for its locks as long as it takes (lock_timeout
	// 0); the connection goes back to the pool with the pool's own.
	if _, err := conn.Exec(ctx, "set lock_timeout = 0"); err != nil {
		return 0, fmt.Errorf("postgres: migrate: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "reset lock_timeout") }()
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", int64(migrateLock)); err != nil {
		return 0, fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "select pg_advisory_unlock($1)", int64(migrateLock))
	}()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate: %w", err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate: %w", err)
	}
	if err := m.LoadMigrations(sub); err != nil {
		return 0, fmt.Errorf("postgres: migrate: load: %w", err)
	}
	// A database a newer build migrated (web rolled back, as README's
	// Production allows) is as new as this build needs, as the worker
	// and collector take it (waitForSchema): left as it is, rather than
	// tern's "current version 11 is outside the valid versions of 0 to
	// 10", which kept the rolled-back api from starting.
	have, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate: %w", err)
	}
	if int(have) > len(m.Migrations) {
		return int(have), nil
	}
	if err := m.Migrate(ctx); err != nil {
		return int(have), fmt.Errorf("postgres: migrate: %w", err)
	}
	return int(have), nil
}

// LatestSchemaVersion is the schema version this build needs: that of its
// newest migration, which Migrate brings a database to.
func LatestSchemaVersion() (int, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return 0, fmt.Errorf("postgres: read the embedded migrations: %w", err)
	}
	latest := 0
	for _, e := range entries {
		digits, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.Atoi(digits); err == nil && n > latest {
			latest = n
		}
	}
	return latest, nil
}

// SchemaVersion is the schema version the database is at: 0 when it was
// never migrated.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int32
	err := s.pool.QueryRow(ctx, `select version from `+versionTable).Scan(&v)
	switch {
	case pgCode(err) == undefinedTable, errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, wrap("read the schema version", err)
	}
	return int(v), nil
}

// stamp is the time the store records for a write, at Postgres's precision.
func (s *Store) stamp() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// SQLSTATE codes the store maps to store errors.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	checkViolation      = "23514" // also "no partition of relation found for row"
	undefinedTable      = "42P01"
)

// pgCode returns err's SQLSTATE, or "" when it is not a server error.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// wrap names the operation that failed and maps what callers test for:
// no rows to store.ErrNotFound and a taken unique key to store.ErrConflict.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return notFound(op)
	case pgCode(err) == uniqueViolation:
		return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrConflict, err)
	case unreachable(err):
		return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// unreachable reports whether err means the server could not be talked
// to (refused or lost connection, shutdown, pool closed, network timeout)
// or turned the work away for the moment (a deadlock or serialization
// failure, a disk full, its connections all taken, a lock timeout): a
// condition to retry later, not a bug.
func unreachable(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr), pgconn.Timeout(err), pgconn.SafeToRetry(err),
		errors.Is(err, puddle.ErrClosedPool), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	code := pgCode(err)
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "40"): // transaction rollback: serialization failure, deadlock
		return true
	}
	// Not among them: a statement_timeout (57014) or a read-only server
	// (25006), which the same work meets again on every try (a query too
	// heavy for the role's bound, a DATABASE_URL naming a replica), and
	// out of memory for one query (53200).
	switch code {
	case "57P01", "57P02", "57P03", // the server shutting down or starting
		"55P03", // a lock not granted within lock_timeout (DefaultLockTimeout)
		"53100", // disk full
		"53300": // too many connections
		return true
	}
	return false
}

// storable reports whether Postgres can hold s as text: valid UTF-8 with no
// NUL. A key that is not can match no row; asking would be an encoding error.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// notFound is store.ErrNotFound for op.
func notFound(op string) error { return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound) }

// invalid is store.ErrInvalid for op, with the reason.
func invalid(op, why string) error {
	return fmt.Errorf("postgres: %s: %w: %s", op, store.ErrInvalid, why)
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// utc returns t in UTC (pgx returns timestamptz in the local zone).
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr is utc for a nullable time.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// micro truncates t to the microsecond, Postgres's precision.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }
