package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
)

// The built binary, shared by every test of the package that runs the
// real processes: built once, on first use, removed by TestMain.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	// Most tests here wait on other processes (the built binary, Redis,
	// Postgres, Chromium, a collector's windows of a few seconds) far more
	// than they compute: unless -parallel is given, run more of them at once
	// than its default of one per CPU.
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, "set -test.parallel:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// updownBinary builds ./cmd/updown once and returns its path.
func updownBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "updown-bin-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "updown")
		if out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// proc is one process of the real binary, its stdout and stderr (the
// JSON log) kept for assertions.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProc runs the binary with args and env (on top of this process's
// environment). It is stopped (SIGKILL) when the test ends, if still
// running, and its output is logged when the test failed.
func startProc(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(updownBinary(t), args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, lastN(p.out.String(), 4000))
		}
	})
	return p
}

func lastN(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

// wait waits for the process to exit and returns its error.
func (p *proc) wait(t testing.TB, within time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("%s did not exit within %s", p.name, within)
		return nil
	}
}

// services is a deployment for a test: a database with data, a Redis,
// and an ENTERPRISE customer's key.
type services struct {
	dbURL    string
	redisURL string
	key      string
}

// testSecrets are production-like secrets, distinct from the dev ones.
const (
	testTokenSecret   = "test-token-secret-0123456789abcdef-xyz"
	testWebhookSecret = "whsec_dGVzdC13ZWJob29rLXNlY3JldC1mb3ItdXBkb3duLXRlc3Rz"
)

func (s services) environ(extra ...string) []string {
	env := []string{"DATABASE_URL=" + s.dbURL, "REDIS_URL=" + s.redisURL, "LOG_LEVEL=info",
		"TOKEN_SECRET=" + testTokenSecret, "WEBHOOK_SECRET=" + testWebhookSecret, "MIGRATE_ON_START=false",
		"WORKER_ADDR=off"}
	return append(env, extra...)
}

// startAPI starts `updown api` on a free port and waits until it is ready.
func startAPI(t testing.TB, s services, extraEnv ...string) (*proc, string) {
	t.Helper()
	addr := freeAddr(t)
	p := startProc(t, "api", s.environ(extraEnv...), "api", "--addr", addr)
	base := "http://" + addr
	waitUp(t, p, base)
	return p, base
}

// startWorker starts `updown worker` without an ops listener.
func startWorker(t testing.TB, s services, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, s.environ(), append([]string{"worker", "--ops-addr", "off"}, args...)...)
}

// waitUp waits for /healthz, and for /readyz to no longer name the
// "startup" check of a process still opening its backends or waiting for
// the schema, which answers /healthz already (not for /readyz 200: fault
// tests start processes while a dependency is down).
func waitUp(t testing.TB, p *proc, base string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, lastN(p.out.String(), 2000))
		default:
		}
		if up(base) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not up within %v", base, patience)
}

// up reports whether the process at base is alive and past its start.
func up(base string) bool {
	res, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false
	}
	res, err = http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return err == nil && !strings.Contains(string(body), `"startup"`)
}

// seedMarkets writes one BTC market of each given type, at the real 300 ms
// cadence, that ended before now; it returns their slugs.
func seedMarkets(t testing.TB, dbURL string, types ...store.MarketType) map[store.MarketType]string {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 0
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slugs := map[store.MarketType]string{}
	for _, mt := range types {
		m, _, err := g.WriteMarket(ctx, st, store.BTC, mt, now.Add(-2*mt.Duration()).Truncate(mt.Duration()))
		if err != nil {
			t.Fatal(err)
		}
		slugs[mt] = m.Slug
	}
	return slugs
}

// createKey makes a customer of tier with an API key and returns the key.
func createKey(t testing.TB, dbURL, email string, tier store.Tier) string {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: email, Tier: tier})
	if err != nil {
		t.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return key
}

// replayBody is a replay request on slug; size makes it distinct, so it
// is never answered from another request's task.
func replayBody(slug string, size int) string {
	return fmt.Sprintf(`{"marketSlug":%q,"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],`+
		`"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":%d}`, slug, size)
}

// answer is a decoded HTTP answer.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
	err    error // a transport error (no answer)
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (a answer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.status, lastN(string(a.raw), 300))
}

// do sends a request with an optional API key and JSON body; it never
// fails the test, so it can be used from goroutines.
func do(client *http.Client, method, url, key, body string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return answer{err: err}
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	a.raw, a.err = io.ReadAll(res.Body)
	if len(a.raw) > 0 && a.raw[0] == '{' {
		_ = json.Unmarshal(a.raw, &a.body)
	}
	return a
}

// tcpProxy forwards a loopback port to a backend; Down makes the backend
// unreachable (open connections cut, new ones refused) and Up restores it
// on the same port, as a database failover or restart looks to a client.
type tcpProxy struct {
	Addr    string
	backend string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newTCPProxy(t testing.TB, backend string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{backend: backend, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.Down(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.DialTimeout("tcp", p.backend, 2*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[b] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(b, c); b.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
}

// Down closes the listener and every open connection.
func (p *tcpProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Up listens again on the same address.
func (p *tcpProxy) Up(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.Addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("proxy: listen again on %s: %v", p.Addr, err)
}
