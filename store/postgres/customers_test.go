package postgres_test

import (
	"strings"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestEmailMigration: customers written before emails matched
// case-insensitively are brought to the normalized form, so the lookups
// of the conformance suite find them; emails that collide once normalized
// stop the migration with a message naming them.
func TestEmailMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	open := func(t *testing.T, rows ...string) (*postgres.Store, error) {
		s, err := postgres.Open(ctx, pgtest.NewEmptyDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if err := postgres.MigrateBefore(ctx, s, "customer_emails"); err != nil {
			t.Fatal(err)
		}
		for i, email := range rows {
			if _, err := s.Pool().Exec(ctx, `insert into customers (id, email, name, tier, created_at, updated_at)
				values ($1, $2, '', 'PRO', now(), now())`, "00000000-0000-4000-8000-00000000000"+string(rune('1'+i)), email); err != nil {
				t.Fatal(err)
			}
		}
		return s, s.Migrate(ctx)
	}

	t.Run("Normalizes", func(t *testing.T) {
		t.Parallel()
		s, err := open(t, "Starter@Example.COM", " pro@example.com ")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"STARTER@EXAMPLE.COM", "starter@example.com", "Pro@Example.com"} {
			c, err := s.GetCustomerByEmail(ctx, q)
			if err != nil {
				t.Fatalf("GetCustomerByEmail(%q) after the migration: %v", q, err)
			}
			if c.Email != strings.ToLower(strings.TrimSpace(c.Email)) || c.Limits != (store.Limits{}) {
				t.Errorf("migrated customer %+v: want a lower-case email and no limits of its own", c)
			}
		}
	})
	t.Run("RefusesCollisions", func(t *testing.T) {
		t.Parallel()
		_, err := open(t, "Ada@example.com", "ada@EXAMPLE.com")
		if err == nil || !strings.Contains(err.Error(), "ada@example.com") || !strings.Contains(err.Error(), "by hand") {
			t.Fatalf("migrating case-colliding emails: %v, want a refusal naming ada@example.com", err)
		}
	})
}
