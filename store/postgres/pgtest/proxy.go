package pgtest

import (
	"net"
	"net/url"
	"sync"
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
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case <-p.frozen:
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
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

// Freeze stops the proxy forwarding, on the connections it has and on
// those it accepts from now on.
func (p *FreezingProxy) Freeze() { p.once.Do(func() { close(p.frozen) }) }
