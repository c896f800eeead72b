package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestQueryTimeoutBoundsAStalledServer: a server that stops answering on
// a live connection (frozen, or a network that drops what it sends) fails
// a query after SetQueryTimeout's bound, as store.ErrUnavailable, where
// the query waited as long as its context: an api request for ever, or
// until its client gave up (and was then logged as a 500).
func TestQueryTimeoutBoundsAStalledServer(t *testing.T) {
	t.Parallel()
	proxy, u := pgtest.Behind(t, pgtest.NewDatabase(t))
	st, err := postgres.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetQueryTimeout(time.Second)

	// A query on the connection the next one takes: it is not idle long
	// enough to be pinged first.
	if _, err := st.GetMarket(context.Background(), "btc-updown-15m-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetMarket before the stall: %v", err)
	}
	proxy.Freeze()
	// No deadline of its own: without the query timeout it would wait for
	// ever (the test binary's timeout would end it).
	if _, err := st.GetMarket(context.Background(), "btc-updown-15m-1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetMarket on a stalled server: %v; want store.ErrUnavailable", err)
	}
}

// TestContextQueryTimeoutBoundsAStalledServer: a query whose context
// carries store.WithQueryTimeout (a worker's replay or sweep shard) fails
// after that bound on a server that stopped answering, as
// store.ErrUnavailable, in a store with no bound of its own (a worker's),
// where it waited for its context's deadline.
func TestContextQueryTimeoutBoundsAStalledServer(t *testing.T) {
	t.Parallel()
	proxy, u := pgtest.Behind(t, pgtest.NewDatabase(t))
	st, err := postgres.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GetMarket(context.Background(), "btc-updown-15m-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetMarket before the stall: %v", err)
	}
	proxy.Freeze()
	ctx := store.WithQueryTimeout(context.Background(), time.Second)
	if _, err := st.GetMarket(ctx, "btc-updown-15m-1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetMarket on a stalled server: %v; want store.ErrUnavailable", err)
	}
}

// TestContextQueryTimeoutBoundsTheAcquire: store.WithQueryTimeout's bound
// holds for taking a connection from the pool too. The pool pings each
// connection idle over a second before handing it out, one after the
// other, each within its ping timeout (10 s): on a frozen server a call
// with several idle pooled connections waited for that times their
// number before its query's bound began, and its caller's deadline (a
// replay's JOB_WAIT) passed first.
func TestContextQueryTimeoutBoundsTheAcquire(t *testing.T) {
	t.Parallel()
	proxy, u := pgtest.Behind(t, pgtest.NewDatabase(t))
	st, err := postgres.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Six connections pooled, then idle long enough to be pinged.
	var conns []interface{ Release() }
	for range 6 {
		c, err := st.Pool().Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	time.Sleep(1500 * time.Millisecond)
	proxy.Freeze()
	// The caller sets no deadline of its own: what ends the call is the
	// store's bound, while the pool pings the first idle connection,
	// where without it the pool pinged every one in turn, each for its
	// ping timeout, before it even began the query. (Once the bound has
	// passed, pgxpool may still take and drop a few more idle connections
	// before it sees its context done, pinging none of them: the proxy
	// counts the pings that reached the server, not what the pool kept.)
	_, err = st.GetMarket(store.WithQueryTimeout(context.Background(), time.Second), "btc-updown-15m-1")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetMarket on a stalled server with idle pooled connections: %v; want store.ErrUnavailable", err)
	}
	if n := proxy.Asked(); n > 1 {
		t.Errorf("the call waited on %d of the %d idle pooled connections, one after the other, where its bound covers taking a connection", n, len(conns))
	}
}
