package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
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
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, u.Host)
	u.Host = proxy.addr
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
	proxy.stall.Store(true)
	// No deadline of its own: without the query timeout it would wait for
	// ever (the test binary's timeout would end it).
	if _, err := st.GetMarket(context.Background(), "btc-updown-15m-1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetMarket on a stalled server: %v; want store.ErrUnavailable", err)
	}
}

// stallProxy forwards TCP to backend until stall is set, then forwards
// nothing more, holding its connections open: a server that stopped
// answering.
type stallProxy struct {
	addr  string
	stall atomic.Bool
}

func newStallProxy(t *testing.T, backend string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{addr: ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	var closed atomic.Bool
	t.Cleanup(func() {
		closed.Store(true)
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			for p.stall.Load() && !closed.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					dst.Close()
				}
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, b)
			mu.Unlock()
			go pipe(b, c)
			go pipe(c, b)
		}
	}()
	return p
}
