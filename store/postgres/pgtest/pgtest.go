// Package pgtest gives tests a PostgreSQL database of their own, with the
// schema migrated, dropped when the test ends.
//
// The server is, in order of preference: the one TEST_DATABASE_URL points
// to (an admin URL of a role that may CREATE DATABASE), a server answering
// at postgres://postgres@127.0.0.1:5432, or a throwaway cluster started
// from the installed PostgreSQL binaries for the life of the test process.
// Without any, tests are skipped, except under CI=true, where that is a
// failure.
//
// A test's database is a schema of its own in a database shared by tests
// (see NewDatabase), which is much faster to make than a database.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/updown/updown/store/postgres"
)

// localURL is where a developer's PostgreSQL usually listens.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=2"

// errUnavailable marks a missing server: a skip on a laptop, a failure in CI.
var errUnavailable = errors.New("no PostgreSQL server available")

// process holds what a test process finds out once: the server to use. A test harness is the one place where such
// process-wide state is the point.
var process struct {
	once sync.Once
	srv  *server
	err  error
}

// server is a PostgreSQL server tests may create databases on.
type server struct {
	admin   string   // URL of a database to issue CREATE/DROP DATABASE from
	cluster *cluster // the throwaway cluster, when the harness started one

	sharedOnce sync.Once
	shared     string // URL of the shared database
	sharedErr  error
}

// NewDatabase returns the URL of a fresh database with the schema migrated,
// made for this test and dropped when it ends.
//
// The database is a schema of its own in a database the harness shares
// between tests and processes (updown_test): the URL names that schema as
// the search_path, so code using it sees nothing else. A schema costs tens
// of milliseconds to make, migrate and drop where a database costs about a
// second on a server that syncs to disk. The one thing schemas share is
// the database's advisory locks, which the store only takes briefly.
func NewDatabase(t testing.TB) string {
	t.Helper()
	u := NewEmptyDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// NewEmptyDatabase is NewDatabase without the schema migrated, for tests of
// migrations themselves.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	srv := theServer(t)
	db, err := srv.sharedDatabase()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), randomHex(6))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := execSQL(ctx, db, "create schema "+ident(name)); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := execSQL(ctx, db, "drop schema if exists "+ident(name)+" cascade"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return withSearchPath(db, name)
}

// NewStore returns a store on a fresh database (see NewDatabase), closed
// when the test ends.
func NewStore(t testing.TB) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, NewDatabase(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// theServer finds (once per process) the server to use, or ends the test.
func theServer(t testing.TB) *server {
	t.Helper()
	process.once.Do(func() { process.srv, process.err = findServer() })
	switch {
	case process.err == nil:
		return process.srv
	case errors.Is(process.err, errUnavailable) && os.Getenv("CI") != "true":
		t.Skipf("pgtest: skipping: %v", process.err)
	case errors.Is(process.err, errUnavailable):
		t.Fatalf("pgtest: PostgreSQL is required under CI=true: %v (set TEST_DATABASE_URL or install PostgreSQL)", process.err)
	default:
		t.Fatalf("pgtest: %v", process.err)
	}
	return nil
}

func findServer() (*server, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		if err := ping(u); err != nil {
			return nil, fmt.Errorf("TEST_DATABASE_URL does not answer: %w", err)
		}
		return &server{admin: u}, nil
	}
	localErr := ping(localURL)
	if localErr == nil {
		return &server{admin: localURL}, nil
	}
	c, err := startCluster()
	if err != nil {
		return nil, fmt.Errorf("%w: TEST_DATABASE_URL is not set, %s: %v; throwaway cluster: %w",
			errUnavailable, "127.0.0.1:5432", localErr, err)
	}
	return &server{admin: c.url, cluster: c}, nil
}

// ping connects to u and disconnects.
func ping(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// execSQL runs one statement on the database at u.
func execSQL(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// sharedName is the database the harness makes test schemas in. It is
// made when missing and kept.
const sharedName = "updown_test"

// schemaPrefix starts the name of every test schema, followed by the Unix
// time it was made, so that schemas a crashed process left behind can be
// recognised and dropped.
const schemaPrefix = "updown_test_"

// staleAfter is the age past which a test schema is a leftover.
const staleAfter = 24 * time.Hour

// sharedDatabase returns the URL of the shared database, making it the
// first time a process needs it and dropping stale schemas from it.
func (s *server) sharedDatabase() (string, error) {
	s.sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.shared, s.sharedErr = s.makeShared(ctx)
	})
	return s.shared, s.sharedErr
}

func (s *server) makeShared(ctx context.Context) (string, error) {
	u := databaseURL(s.admin, sharedName)
	var pgErr *pgconn.PgError
	err := execSQL(ctx, s.admin, "create database "+ident(sharedName))
	switch {
	case err == nil:
	case !errors.As(err, &pgErr):
		return "", fmt.Errorf("create database %s: %w", sharedName, err)
	case pgErr.Code == duplicateDatabase || pgErr.Code == uniqueViolation:
		// Made before, or by another process just now.
	case pgErr.Code == insufficientPrivilege:
		u = s.admin // a role that may not create databases: schemas in its own
	default:
		return "", fmt.Errorf("create database %s: %w", sharedName, err)
	}
	dropStaleSchemas(ctx, u)
	return u, nil
}

// SQLSTATEs of creating the shared database: it exists already, another
// process is making it at the same moment, or the role may not.
const (
	duplicateDatabase     = "42P04"
	uniqueViolation       = "23505"
	insufficientPrivilege = "42501"
)

// dropStaleSchemas drops test schemas older than staleAfter; failing to is
// not worth failing a test over.
func dropStaleSchemas(ctx context.Context, u string) {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "select nspname from pg_namespace where nspname like $1", schemaPrefix+"%")
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		ts, _, _ := strings.Cut(strings.TrimPrefix(n, schemaPrefix), "_")
		made, err := strconv.ParseInt(ts, 10, 64)
		if err == nil && time.Since(time.Unix(made, 0)) > staleAfter {
			_, _ = conn.Exec(ctx, "drop schema if exists "+ident(n)+" cascade")
		}
	}
}

// databaseURL is admin with the database replaced by name. admin is a URL
// or a key=value connection string.
func databaseURL(admin, name string) string {
	if u, err := url.Parse(admin); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		u.RawPath = ""
		return u.String()
	}
	return admin + " dbname=" + name
}

// withSearchPath is the URL u with the session's search_path set to the
// schema, through the options parameter libpq and pgx both understand.
func withSearchPath(u, schema string) string {
	opt := "-c search_path=" + schema
	if pu, err := url.Parse(u); err == nil && (pu.Scheme == "postgres" || pu.Scheme == "postgresql") {
		q := pu.Query()
		if o := q.Get("options"); o != "" {
			opt = o + " " + opt
		}
		q.Set("options", opt)
		// Spaces as %20: pgx, like libpq, does not read + as a space.
		pu.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return pu.String()
	}
	return u + " options='" + opt + "'"
}

// ident quotes a name for SQL.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
