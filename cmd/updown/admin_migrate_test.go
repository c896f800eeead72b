package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

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
