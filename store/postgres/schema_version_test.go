package postgres_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSchemaVersion: a database never migrated is at version 0, one
// migrated part way at that migration, and Migrate brings it to
// LatestSchemaVersion, the number of the newest migration file.
func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	latest, err := postgres.LatestSchemaVersion()
	if err != nil || latest != len(files) || latest < 5 {
		t.Fatalf("LatestSchemaVersion() = %d, %v with %d migration files", latest, err, len(files))
	}

	url := pgtest.NewEmptyDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	version := func() int {
		t.Helper()
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := version(); v != 0 {
		t.Fatalf("an empty database is at version %d", v)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if v := version(); v != 0 {
		t.Fatalf("a database with an empty version table is at version %d", v)
	}
	if err := m.LoadMigrations(os.DirFS("migrations")); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != 3 {
		t.Fatalf("migrated to 3, the database says %d", v)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != latest {
		t.Fatalf("migrated, the database is at %d, want %d", v, latest)
	}
}

// TestMigrateNewerDatabase: a database a newer build migrated (its
// schema version past this build's newest migration, as after rolling
// web back) is left as it is by Migrate, which the api runs at start,
// rather than failing it.
func TestMigrateNewerDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgtest.NewStore(t)
	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "update schema_version set version = $1", latest+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate on a database at version %d (this build's newest is %d): %v", latest+1, latest, err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != latest+1 {
		t.Errorf("after Migrate the database is at %d, %v; want %d, as it was", v, err, latest+1)
	}
}
