package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/tern/v2/migrate"
)

// MigrateBefore brings the schema up to the migration before the one whose
// file name contains name, for tests of what that migration does to rows
// written before it.
func MigrateBefore(ctx context.Context, s *Store, name string) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return err
	}
	for _, mig := range m.Migrations {
		if strings.Contains(mig.Name, name) {
			return m.MigrateTo(ctx, mig.Sequence-1)
		}
	}
	return fmt.Errorf("no migration named like %q", name)
}
