package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestReadsAfterPostgresEndedSessions: once Postgres has ended the server
// side of the pool's connections (a restart, pg_terminate_backend), the
// next requests are answered 200, where the first to take each dead
// connection from the pool answered 503 SERVICE_UNAVAILABLE.
func TestReadsAfterPostgresEndedSessions(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewStore(t)
	loadFixtures(t, pg)
	b := setup(t, func(o *setupOpts) { o.store = pg })
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, pg.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	slug := slugOf(store.BTC, store.M15, now.Truncate(store.M15.Duration()).Add(-store.M15.Duration()))
	// Each request reads the store: a new page of the list each time, and
	// a market by slug.
	limit := 0
	paths := func() []string {
		limit++
		return []string{fmt.Sprintf("/v1/markets?coin=BTC&limit=%d", limit), "/v1/markets/" + slug}
	}
	for range 3 {
		for _, p := range paths() {
			if r := b.get(store.Pro, p); r.status != http.StatusOK {
				t.Fatalf("%s before the sessions were ended: %d %s", p, r.status, r.body)
			}
		}
	}
	idle := pg.Pool().AcquireAllIdle(ctx)
	if len(idle) == 0 {
		t.Fatal("no idle connection in the pool")
	}
	for _, c := range idle {
		pid := c.Conn().PgConn().PID()
		c.Release()
		var ok bool
		// With a timeout, pg_terminate_backend waits for the backend to exit.
		if err := admin.QueryRow(ctx, "select pg_terminate_backend($1, 10000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
		}
	}
	for range 3 {
		for _, p := range paths() {
			if r := b.get(store.Pro, p); r.status != http.StatusOK {
				t.Errorf("%s after Postgres ended the pool's sessions: %d %s", p, r.status, r.body)
			}
		}
	}
}
