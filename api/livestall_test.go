package api_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/store/redis/redistest"
)

// TestExchangeLiveStalledRedis: a Redis that accepts connections but
// answers nothing (frozen, or a network that drops what it sends) makes
// the live exchange endpoints answer 503 SERVICE_UNAVAILABLE within
// Config.LiveTimeout, as the rate limits and caps bound their own waits,
// where each waited out the Redis client's read timeout and its retry
// (5 s and more with the client's defaults; here, with no read timeout,
// for ever).
func TestExchangeLiveStalledRedis(t *testing.T) {
	t.Parallel()
	direct := redistest.Client(t)
	proxy := newStallingProxy(t, direct.Options().Addr)
	// As the api's client (openRedis), but with no read timeout of its
	// own: only the api's bound ends a read.
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), DB: direct.Options().DB,
		ContextTimeoutEnabled: true, MaxRetries: 1, ReadTimeout: -1, WriteTimeout: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	const liveTimeout = 500 * time.Millisecond
	b := setup(t, func(o *setupOpts) {
		o.live = redislive.New(rdb, "livestall:"+t.Name()+":")
		o.liveTimeout = liveTimeout
	})
	// Runs before the server's Close (cleanups run last first), which
	// waits for its handlers: a read still stuck ends with its connection.
	t.Cleanup(proxy.close)
	// Before the stall the live data answers (nothing recorded yet).
	if r := b.get(store.Pro, "/v1/btc/spot/latest"); r.status != http.StatusNotFound {
		t.Fatalf("before the stall: %d %s", r.status, r.body)
	}
	proxy.stall()
	for _, path := range exchangePaths[2:] {
		type answer struct {
			status int
			header http.Header
			body   []byte
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
			req.Header.Set("X-API-Key", b.keys[store.Pro])
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- answer{err: err}
				return
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			done <- answer{res.StatusCode, res.Header, body, err}
		}()
		var a answer
		select {
		case a = <-done:
		case <-time.After(40 * liveTimeout): // generous for a loaded machine
			t.Fatalf("%s: no answer %v into a Redis stall, bounded at %v", path, 40*liveTimeout, liveTimeout)
		}
		if a.err != nil {
			t.Fatalf("%s: %v", path, a.err)
		}
		e := wantError(t, response{status: a.status, header: a.header, body: a.body}, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		if msg, _ := e["message"].(string); !strings.Contains(msg, "retry") || strings.Contains(msg, proxy.addr()) || strings.Contains(msg, "timeout") {
			t.Errorf("%s: message %q", path, msg)
		}
		var env struct {
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(a.body, &env); err != nil || env.Timestamp == "" {
			t.Errorf("%s: envelope without a timestamp: %s", path, a.body)
		}
	}
}

// stallingProxy forwards TCP connections to a Redis server until stall,
// after which no connection carries anything more, in either direction,
// without closing: those open then, and those accepted later (a server
// that accepts connections but answers nothing).
type stallingProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	stalled chan struct{} // closed at stall
	conns   []net.Conn
}

func newStallingProxy(t *testing.T, target string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{ln: ln, stalled: make(chan struct{})}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go pipeUntilStalled(c, up, p.stalled)
			go pipeUntilStalled(up, c, p.stalled)
		}
	}()
	return p
}

// close stops the proxy and closes every connection it made.
func (p *stallingProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *stallingProxy) addr() string { return p.ln.Addr().String() }

func (p *stallingProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.stalled:
	default:
		close(p.stalled)
	}
}

// pipeUntilStalled copies from src to dst until stalled is closed, then
// drops what comes.
func pipeUntilStalled(dst, src net.Conn, stalled chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		select {
		case <-stalled:
			continue // swallowed
		default:
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}
