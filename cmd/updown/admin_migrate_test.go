package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestMigrateSaysWhatItDid: migrate names the schema's version, and on a
// database a newer build migrated (this one rolled back) says it left it
// as it is, where it said "migrations applied" either way.
func TestMigrateSaysWhatItDid(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	want, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	if out := string(runCmd(t, "migrate", "--database-url", dbURL)); !strings.Contains(out, fmt.Sprintf("migrations applied: schema at version %d", want)) {
		t.Errorf("migrate of a new database said %q", out)
	}
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Pool().Exec(context.Background(), "update schema_version set version = version + 1"); err != nil {
		t.Fatal(err)
	}
	if out := string(runCmd(t, "migrate", "--database-url", dbURL)); !strings.Contains(out, fmt.Sprintf("schema at version %d, newer than this build's %d: left as it is", want+1, want)) {
		t.Errorf("migrate of a database a newer build migrated said %q", out)
	}
}

// TestCustomersCreateChecksItsFlagsFirst: a bad tier or email is told as
// itself before any database is opened (the URL here answers nowhere).
func TestCustomersCreateChecksItsFlagsFirst(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", "ada@example.com", "--tier", "GOLD"}, "GOLD"},
		{[]string{"--email", "not-an-email", "--tier", "PRO"}, "customers create"},
	} {
		args := append([]string{"customers", "create", "--database-url", nowhere}, tc.args...)
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "database") {
			t.Errorf("updown %s: %v; want an error naming %q, not the database", strings.Join(args, " "), err, tc.want)
		}
	}
}

// TestCustomerCommandsCheckTheirFlagsFirst: set-tier, set-limits and the
// keys commands tell a missing or mistyped flag as itself before any
// database is opened (the URL here answers nowhere), as customers create
// does: they opened (and migrated) the database first, so behind an
// unreachable one the typo was told as the database's error.
func TestCustomerCommandsCheckTheirFlagsFirst(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"customers", "set-tier", "--email", "ada@example.com", "--tier", "GOLD"}, "GOLD"},
		{[]string{"customers", "set-tier", "--email", "ada@example.com"}, "--tier"},
		{[]string{"customers", "set-tier", "--tier", "PRO"}, "--email"},
		{[]string{"customers", "set-limits", "--email", "ada@example.com", "--per-minute", "-5"}, "--per-minute"},
		{[]string{"customers", "set-limits", "--email", "ada@example.com"}, "--per-day"},
		{[]string{"customers", "set-limits", "--per-day", "100"}, "--email"},
		{[]string{"keys", "create"}, "--email"},
		{[]string{"keys", "list"}, "--email"},
		{[]string{"keys", "revoke"}, "--id"},
	} {
		args := append(append([]string{}, tc.args...), "--database-url", nowhere)
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "database") {
			t.Errorf("updown %s: %v; want an error naming %q, not the database", strings.Join(args, " "), err, tc.want)
		}
	}
}

// TestAdminCommandsLeaveMigratingToMigrate: with MIGRATE_ON_START=false,
// the operator's way of keeping schema changes to `updown migrate`, the
// administration commands (customers list, export, keys) do not migrate
// the database: they refuse a schema older than the build's, naming
// updown migrate, and leave it as it is; migrate still migrates, and the
// commands then run. They migrated it whenever one ran, under older
// processes still using it.
func TestAdminCommandsLeaveMigratingToMigrate(t *testing.T) {
	dbURL := pgtest.NewEmptyDatabase(t)
	t.Setenv("MIGRATE_ON_START", "false")
	version := func() int {
		t.Helper()
		st, err := postgres.Open(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		v, err := st.SchemaVersion(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, args := range [][]string{
		{"customers", "list"},
		{"export", "--what", "markets"},
		{"keys", "list", "--email", "ada@example.com"},
	} {
		args = append(args, "--database-url", dbURL)
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "updown migrate") {
			t.Errorf("updown %s on an unmigrated database with MIGRATE_ON_START=false: %v; want a refusal naming updown migrate",
				strings.Join(args, " "), err)
		}
		if v := version(); v != 0 {
			t.Fatalf("updown %s migrated the database to version %d with MIGRATE_ON_START=false", strings.Join(args, " "), v)
		}
	}
	runCmd(t, "migrate", "--database-url", dbURL)
	want, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v := version(); v != want {
		t.Fatalf("migrate with MIGRATE_ON_START=false left version %d, want %d", v, want)
	}
	if out := string(runCmd(t, "customers", "list", "--database-url", dbURL)); strings.TrimSpace(out) != "[]" {
		t.Errorf("customers list after migrate: %q", out)
	}
}

// TestCustomerCreatedWithoutKeySaysSo: when the customer is stored but its
// key cannot be, customers create says the customer exists and how to give
// it a key, where it said only that the key failed (and a second try was
// refused: the email was taken).
func TestCustomerCreatedWithoutKeySaysSo(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "alter table api_keys rename to api_keys_away"); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	err = run(ctx, []string{"customers", "create", "--database-url", dbURL, "--email", "nokey@example.com"}, &out, &errOut)
	if err == nil {
		t.Fatalf("customers create without an api_keys table succeeded: %s", out.String())
	}
	if _, err := conn.Exec(ctx, "alter table api_keys_away rename to api_keys"); err != nil {
		t.Fatal(err)
	}
	var id string
	if err := conn.QueryRow(ctx, "select id from customers where email = 'nokey@example.com'").Scan(&id); err != nil {
		t.Fatalf("the customer was not stored: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, id) || !strings.Contains(msg, "updown keys create --customer "+id) {
		t.Errorf("customers create: %q; want the stored customer's id %s and the keys create command", msg, id)
	}
}
