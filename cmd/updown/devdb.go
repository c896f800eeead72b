package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// devMarkerTable marks a database as `updown dev`'s own. Dev writes demo
// customers with public keys, and rewrites generated markets, in the
// database it runs on, so it takes only an empty database, which it marks
// before it writes anything else, or one that carries its mark (DESIGN 3).
const devMarkerTable = "updown_dev_database"

// errNotDevDatabase is dev refusing a database it did not make.
var errNotDevDatabase = errors.New("updown dev uses only an empty database or one it made itself " +
	"(it writes demo customers with public ud_dev_ keys and rewrites markets): " +
	"give --database an empty database, e.g. createdb updown_dev, or leave --database out for the in-memory store")

// claimDevDatabase makes sure the database's current schema is dev's:
// empty (then marked now) or marked by an earlier run. It reports whether
// the database was empty.
func claimDevDatabase(ctx context.Context, pool *pgxpool.Pool) (fresh bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// One claim at a time: two devs starting on one empty database
		// must not both find it empty halfway through the other's marking.
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock(hashtext('updown dev claim'))`); err != nil {
			return err
		}
		var schema *string
		var relations int
		var marked bool
		if err := tx.QueryRow(ctx, `
			select current_schema(),
			       (select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace
			         where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')),
			       exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
			         where n.nspname = current_schema() and c.relname = $1)`, devMarkerTable).
			Scan(&schema, &relations, &marked); err != nil {
			return err
		}
		switch {
		case schema == nil:
			return errors.New("the database has no schema to work in (its search_path names none that exists)")
		case marked:
			return nil
		case relations > 0:
			return fmt.Errorf("schema %q holds %d tables and no mark of updown dev: %w", *schema, relations, errNotDevDatabase)
		}
		fresh = true
		_, err := tx.Exec(ctx, `create table `+devMarkerTable+` (
			initialised_at timestamptz not null default now(),
			note text not null)`)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `insert into `+devMarkerTable+` (note) values ($1)`,
			"made by updown dev: demo customers and public ud_dev_ keys live here; never use this database in production")
		return err
	})
	if err != nil {
		return false, fmt.Errorf("dev database: %w", err)
	}
	return fresh, nil
}

// restoreRevokedKeys takes the revocation off those of keys (plain key:
// its hash) that are stored revoked, and returns them, sorted: the demo
// keys are fixed and printed, so a run of dev restores any an earlier
// run's revoke took away. The store has no way to unrevoke a key, rightly
// outside dev, hence SQL on the dev database here.
func restoreRevokedKeys(ctx context.Context, pool *pgxpool.Pool, keys map[string][]byte) ([]string, error) {
	var restored []string
	for plain, hash := range keys {
		tag, err := pool.Exec(ctx, `update api_keys set revoked_at = null where hash = $1 and revoked_at is not null`, hash)
		if err != nil {
			return nil, fmt.Errorf("restore demo key %s: %w", plain, err)
		}
		if tag.RowsAffected() > 0 {
			restored = append(restored, plain)
		}
	}
	slices.Sort(restored)
	return restored, nil
}
