package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestReadAfterBackendsTerminated: after Postgres ends the server side of
// the pool's connections (a restart, pg_terminate_backend, an idle
// session killed by an operator), the next read answers as before,
// where the first to take each dead connection from the pool failed as
// store.ErrUnavailable (57P01 admin_shutdown) and the api answered 503.
// The pool pings only connections idle for over a second; here they are
// taken again at once.
func TestReadAfterBackendsTerminated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slug := newMarket(t, st, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	reads := []struct {
		name string
		read func(context.Context) error
	}{
		{"GetMarket", func(ctx context.Context) error { _, err := st.GetMarket(ctx, slug); return err }},
		{"ListMarkets", func(ctx context.Context) error {
			ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Limit: 10})
			if err == nil && len(ms) != 1 {
				t.Errorf("ListMarkets: %d markets, want 1", len(ms))
			}
			return err
		}},
	}
	for _, r := range reads {
		// Several connections pooled, each of which has run the read
		// (so its statement is prepared on it, as on a warm api's).
		var held []func()
		for range 3 {
			c, err := st.Pool().Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c.Release)
		}
		for _, release := range held {
			release()
		}
		for range 3 {
			if err := r.read(ctx); err != nil {
				t.Fatalf("%s before the termination: %v", r.name, err)
			}
		}
		terminateAll(t, admin, st)
		for i := range 3 {
			if err := r.read(ctx); err != nil {
				t.Errorf("%s #%d right after the pool's backends were terminated: %v", r.name, i+1, err)
			}
		}
	}
}

// terminateAll ends the server side of every idle connection of st's pool
// and waits until each backend has exited, as after a restart.
func terminateAll(t *testing.T, admin *pgx.Conn, st *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	conns := st.Pool().AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connection in the pool")
	}
	for _, c := range conns {
		pid := c.Conn().PgConn().PID()
		c.Release()
		var ok bool
		// With a timeout, pg_terminate_backend waits for the backend to exit.
		if err := admin.QueryRow(ctx, "select pg_terminate_backend($1, 10000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
		}
	}
}
