package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestPoolSize (issue 28, item 3): the pool is DefaultMaxConns unless
// DATABASE_URL sets pool_max_conns.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		url  string
		want int32
	}{
		{url, postgres.DefaultMaxConns()},
		{withParam(url, "pool_max_conns=3"), 3},
	} {
		st, err := postgres.Open(t.Context(), tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Pool().Config().MaxConns; got != tc.want {
			t.Errorf("%s: pool of %d, want %d", tc.url, got, tc.want)
		}
		st.Close()
	}
	if n := postgres.DefaultMaxConns(); n < 16 {
		t.Errorf("DefaultMaxConns() = %d, want at least 16", n)
	}
}

func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

// TestLockTimeout: a query that waits for a lock a long transaction holds
// fails after lock_timeout (DefaultLockTimeout unless DATABASE_URL sets
// it) as store.ErrUnavailable, which the api answers 503, instead of
// hanging; a migration waits for its locks as long as it takes.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got string
	if err := st.Pool().QueryRow(ctx, "show lock_timeout").Scan(&got); err != nil || got != "10s" {
		t.Errorf("lock_timeout %q (%v), want 10s by default", got, err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	short, err := postgres.Open(ctx, withParam(url, "lock_timeout=300"))
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	// Another session holds the markets table.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "lock table markets in access exclusive mode"); err != nil {
		t.Fatal(err)
	}
	_, err = short.GetMarket(ctx, "btc-updown-15m-1")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetMarket while markets is locked: %v, want ErrUnavailable after the lock timeout", err)
	}
	// The pool's connections keep their timeout after a migration.
	if err := short.Migrate(ctx); err != nil {
		t.Fatalf("Migrate (nothing to do) beside the lock: %v", err)
	}
	for range 3 {
		if err := short.Pool().QueryRow(ctx, "show lock_timeout").Scan(&got); err != nil || got != "300ms" {
			t.Errorf("after Migrate: lock_timeout %q (%v), want 300ms", got, err)
		}
	}
}

// TestConnectTimeout: a Postgres that accepts connections and never
// answers fails Open after DefaultConnectTimeout (or DATABASE_URL's
// connect_timeout), rather than keeping a process's start, or updown
// migrate, waiting for ever.
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	url := "postgres://updown@" + ln.Addr().String() + "/updown?sslmode=disable"
	for _, tc := range []struct {
		url  string
		want time.Duration
	}{
		{withParam(url, "connect_timeout=1"), time.Second},
		{url, postgres.DefaultConnectTimeout},
	} {
		done := make(chan error, 1)
		go func() {
			st, err := postgres.Open(t.Context(), tc.url)
			if err == nil {
				st.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: Open succeeded against a server that never answers", tc.url)
			}
			if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "timeout") {
				t.Errorf("%s: Open failed with %v, want its connect timeout", tc.url, err)
			}
		case <-time.After(tc.want + 2*time.Minute): // without a timeout, Open waits for ever
			t.Fatalf("%s: Open still waiting after %v", tc.url, tc.want+2*time.Minute)
		}
	}
}

// TestCloseWithServerStuck: a store whose server stops answering while a
// connection is in use (here the pool's ping of an idle connection,
// which it lets run on for a minute after its caller gave up) closes
// within a few seconds all the same, so that a stopped worker exits
// rather than lingering past its SHUTDOWN_TIMEOUT.
func TestCloseWithServerStuck(t *testing.T) {
	t.Parallel()
	proxy, u := pgtest.Behind(t, pgtest.NewDatabase(t))
	st, err := postgres.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the connection idles long enough to be pinged
	proxy.Freeze()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := st.Ping(ctx); err == nil {
		t.Fatal("ping through a frozen proxy succeeded")
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		st.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Logf("closed in %v", time.Since(start))
	case <-time.After(45 * time.Second):
		// Unbounded, Close waits out the pool's ping, which runs on for a
		// minute: 45 s tells the two apart on a busy machine too.
		t.Fatal("Close still waiting after 45s for a connection stuck on a server that does not answer")
	}
}
