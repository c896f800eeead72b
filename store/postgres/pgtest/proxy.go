package pgtest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// FreezingProxy forwards TCP connections to a server until Freeze, after
// which it forwards nothing more either way, and keeps every connection
// open: a server, or a network, that stopped answering without closing
// anything.
type FreezingProxy struct {
	// Addr is the proxy's host:port, to put in place of the server's.
	Addr   string
	frozen chan struct{}
	once   sync.Once
	done   chan struct{} // closed when the test ends
	asked  atomic.Int32  // connections whose client asked something after Freeze
}

// Behind starts a FreezingProxy to the server of the database URL dbURL
// and returns it with the URL that reaches the database through it.
func Behind(t testing.TB, dbURL string) (*FreezingProxy, *url.URL) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := NewFreezingProxy(t, u.Host)
	u.Host = p.Addr
	return p, u
}

// NewFreezingProxy starts a proxy to target (host:port) for the life of
// the test.
func NewFreezingProxy(t testing.TB, target string) *FreezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FreezingProxy{Addr: ln.Addr().String(), frozen: make(chan struct{}), done: make(chan struct{})}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		close(p.done)
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	// pipe copies src to dst; fromClient says src is the client's side.
	pipe := func(dst, src net.Conn, fromClient bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case <-p.frozen:
					if fromClient && buf[0] != terminate {
						p.asked.Add(1)
					}
					<-p.done // hold the bytes
					return
				default:
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
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
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case <-p.frozen:
				continue // accepted, never answered
			default:
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, s)
			mu.Unlock()
			go pipe(s, c, true)
			go pipe(c, s, false)
		}
	}()
	return p
}

// Freeze stops the proxy forwarding, on the connections it has and on
// those it accepts from now on.
func (p *FreezingProxy) Freeze() { p.once.Do(func() { close(p.frozen) }) }

// Asked returns the number of connections on which the client sent the
// server something to answer after Freeze (a query, a ping), each held
// unanswered: how many the client waited on. A Terminate, which a client
// sends as it closes a connection, asks nothing and does not count; nor
// does a connection the proxy accepts once frozen, which it never reads.
func (p *FreezingProxy) Asked() int { return int(p.asked.Load()) }

// terminate is the type byte of the protocol's Terminate message.
const terminate = 'X'
