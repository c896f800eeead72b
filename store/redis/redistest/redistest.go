// Package redistest gives tests a Redis of their own.
//
// Each call starts a throwaway redis-server on a free loopback port (so
// Asynq queues and rate-limit keys never collide between tests or
// packages), or, when the binary is missing, uses TEST_REDIS_URL with a
// flushed database. Without either the test is skipped, except under
// CI=true, where a missing Redis is a failure.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// New returns the URL of a Redis for this test, cleaned up with the test.
func New(t testing.TB) string {
	t.Helper()
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return startServer(t, bin)
	}
	if url := os.Getenv("TEST_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			t.Fatalf("redistest: TEST_REDIS_URL: %v", err)
		}
		c := redis.NewClient(opt)
		defer c.Close()
		if err := c.FlushDB(context.Background()).Err(); err != nil {
			unavailable(t, fmt.Sprintf("TEST_REDIS_URL %s: %v", url, err))
		}
		return url
	}
	unavailable(t, "no redis-server binary on PATH and TEST_REDIS_URL is not set")
	return ""
}

// Client returns a client of a fresh Redis (see New), closed with the test.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	return ClientOf(t, New(t))
}

// ClientOf is a client of the database at url (New's), closed when the
// test ends. A second client of a database is made from its URL rather
// than from the first's Options(): a client writes into its options as it
// connects, and a client made from them meanwhile races with it.
func ClientOf(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("redistest: Redis is required under CI=true: %s", why)
	}
	t.Skipf("redistest: skipping, Redis unavailable: %s", why)
}

func startServer(t testing.TB, bin string) string {
	t.Helper()
	return Start(t).URL
}

// Server is a throwaway redis-server a test controls: fault tests stop it
// and start it again on the same port, as an operator restarting Redis
// would. It holds no data across a restart (no persistence).
type Server struct {
	// URL is the server's address; it stays the same across restarts.
	URL string

	t    testing.TB
	bin  string
	port int
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// Start starts a redis-server of this test's own (see New for what
// happens without the binary), stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "no redis-server binary on PATH")
		return nil
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for attempt := 0; attempt < 5; attempt++ {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", s.port)
		if err := s.launch(); err == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	unavailable(t, "redis-server did not start")
	return nil
}

func (s *Server) launch() error {
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	if !waitReady(s.URL, 5*time.Second) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("redis-server on port %d did not answer", s.port)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

// Stop kills the server (as a crash would); clients see refused
// connections until Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// Pause stops the server's process without ending it (SIGSTOP), as a
// Redis stuck in a slow command or cut off by a network partition looks
// to its clients: connections stay open and nothing answers. Resume
// undoes it; a paused server is resumed when the test ends.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	s.t.Cleanup(s.Resume)
}

// Resume lets a paused server answer again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil {
		if err := cmd.Process.Signal(sig); err != nil {
			s.t.Errorf("redistest: signal %v: %v", sig, err)
		}
	}
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for attempt := 0; attempt < 3; attempt++ { // the port may linger a moment
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart: %v", err)
}

func waitReady(url string, within time.Duration) bool {
	opt, _ := redis.ParseURL(url)
	c := redis.NewClient(opt)
	defer c.Close()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
