package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the group's sentinels monitor it by.
const SentinelMaster = "updownmaster"

// SentinelOptions shape a Sentinel group. Zero values take the defaults.
type SentinelOptions struct {
	// DownAfter is how long the primary must be silent before a sentinel
	// thinks it down (down-after-milliseconds; default 500 ms).
	DownAfter time.Duration
	// FailoverTimeout bounds a failover attempt (failover-timeout;
	// default 3 s).
	FailoverTimeout time.Duration
}

// Sentinel is a Redis Sentinel group of a test's own: a primary, a
// replica and three sentinels (quorum 2), each a process on a free
// loopback port, stopped when the test ends. Its URL is the
// redis+sentinel:// form of REDIS_URL.
type Sentinel struct {
	// URL is redis+sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/SentinelMaster/0.
	URL string
	// Sentinels are the sentinels' addresses.
	Sentinels []string
	// Opts are the options the group runs with, defaults filled in.
	Opts SentinelOptions

	t     testing.TB
	bin   string
	dir   string
	mu    sync.Mutex
	nodes map[string]*node // by address: the primary and the replica
}

// node is one process of the group, its output kept for a failed test.
type node struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartSentinel starts a Sentinel group and returns once the sentinels
// know the primary, the replica and each other, so that a failover can
// happen. Without redis-server (Debian's redis-sentinel package brings the
// sentinel mode) the test is skipped, or fails under CI=true.
func StartSentinel(t testing.TB, o SentinelOptions) *Sentinel {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "no redis-server binary on PATH (apt-get install redis-sentinel)")
		return nil
	}
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		unavailable(t, "no redis-sentinel binary on PATH (apt-get install redis-sentinel)")
		return nil
	}
	if o.DownAfter <= 0 {
		o.DownAfter = 500 * time.Millisecond
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 3 * time.Second
	}
	s := &Sentinel{Opts: o, t: t, bin: bin, dir: t.TempDir(), nodes: map[string]*node{}}
	t.Cleanup(s.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			s.logOutput()
		}
	})

	primary := s.startRedis("primary")
	replica := s.startRedis("replica", "--replicaof", "127.0.0.1", portOf(primary))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitFor(ctx, func(ctx context.Context) error { return replicaInSync(ctx, replica) }); err != nil {
		t.Fatalf("redistest: the replica did not sync with the primary: %v", err)
	}
	for i := 0; i < 3; i++ {
		s.Sentinels = append(s.Sentinels, s.startSentinel(i, primary))
	}
	s.URL = fmt.Sprintf("redis+sentinel://%s/%s/0", strings.Join(s.Sentinels, ","), SentinelMaster)
	for _, addr := range s.Sentinels {
		if err := waitFor(ctx, func(ctx context.Context) error { return knowsGroup(ctx, addr) }); err != nil {
			t.Fatalf("redistest: sentinel %s did not learn the group: %v", addr, err)
		}
	}
	return s
}

// startRedis starts a redis-server (no persistence) and returns its address.
func (s *Sentinel) startRedis(name string, args ...string) string {
	s.t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		dir := filepath.Join(s.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
		n := s.spawn(name, s.bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "notice"}, args...)...)
		if waitReady("redis://"+addr+"/0", 5*time.Second) {
			s.mu.Lock()
			s.nodes[addr] = n
			s.mu.Unlock()
			return addr
		}
		n.kill()
	}
	s.t.Fatalf("redistest: %s did not start", name)
	return ""
}

// startSentinel starts sentinel i monitoring primary and returns its address.
func (s *Sentinel) startSentinel(i int, primary string) string {
	s.t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
		dir := filepath.Join(s.dir, fmt.Sprintf("sentinel%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
		conf := filepath.Join(dir, "sentinel.conf") // the sentinel rewrites it
		host, pport, _ := strings.Cut(primary, ":")
		body := strings.Join([]string{
			"port " + strconv.Itoa(port), "bind 127.0.0.1", "dir " + dir, "loglevel notice",
			fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMaster, host, pport),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, s.Opts.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, s.Opts.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
		n := s.spawn(fmt.Sprintf("sentinel%d", i), s.bin, conf, "--sentinel")
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if waitReady("redis://"+addr, 5*time.Second) {
			s.mu.Lock()
			s.nodes["sentinel "+addr] = n
			s.mu.Unlock()
			return addr
		}
		n.kill()
	}
	s.t.Fatalf("redistest: sentinel %d did not start", i)
	return ""
}

func (s *Sentinel) spawn(name, bin string, args ...string) *node {
	s.t.Helper()
	n := &node{name: name, cmd: exec.Command(bin, args...), out: &lockedBuffer{}}
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start %s: %v", name, err)
	}
	return n
}

func (n *node) kill() {
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
}

func (s *Sentinel) stopAll() {
	s.mu.Lock()
	nodes := s.nodes
	s.nodes = map[string]*node{}
	s.mu.Unlock()
	for _, n := range nodes {
		n.kill()
	}
}

func (s *Sentinel) logOutput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, n := range s.nodes {
		out := n.out.String()
		if len(out) > 3000 {
			out = "…" + out[len(out)-3000:]
		}
		s.t.Logf("redistest: output of %s (%s):\n%s", n.name, addr, out)
	}
}

// Primary asks the sentinels which address is the primary now.
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	var errs []error
	for _, addr := range s.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
		got, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err == nil && len(got) == 2 {
			return got[0] + ":" + got[1], nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v %w", addr, got, err))
	}
	return "", errors.Join(errs...)
}

// Client is a plain client of one node of the group (by address), closed
// with the test: for a test to look at the primary or the replica itself.
func (s *Sentinel) Client(addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Sync waits until the replica has every write the primary took so far
// (WAIT), so that what a test wrote before it survives a failover.
func (s *Sentinel) Sync(ctx context.Context) error {
	primary, err := s.Primary(ctx)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: primary, MaxRetries: -1})
	defer c.Close()
	// WAIT counts from this connection's last write: write, then wait.
	if err := c.Set(ctx, "redistest:sync", time.Now().UnixNano(), 0).Err(); err != nil {
		return fmt.Errorf("write to the primary: %w", err)
	}
	for {
		n, err := c.Do(ctx, "WAIT", 1, 1000).Int64()
		if err != nil {
			return fmt.Errorf("wait for the replica: %w", err)
		}
		if n >= 1 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the replica did not acknowledge: %w", ctx.Err())
		}
	}
}

// KillPrimary kills the current primary with SIGKILL, as a crash would,
// and returns its address. It stays down: the sentinels promote the
// replica.
func (s *Sentinel) KillPrimary(ctx context.Context) string {
	s.t.Helper()
	primary, err := s.Primary(ctx)
	if err != nil {
		s.t.Fatalf("redistest: find the primary: %v", err)
	}
	s.mu.Lock()
	n := s.nodes[primary]
	s.mu.Unlock()
	if n == nil {
		s.t.Fatalf("redistest: the primary %s is not a node of this group", primary)
	}
	n.kill()
	return primary
}

// WaitFailover waits until the sentinels name a primary other than old
// and that primary answers as one, and returns it.
func (s *Sentinel) WaitFailover(ctx context.Context, old string) (string, error) {
	var now string
	err := waitFor(ctx, func(ctx context.Context) error {
		p, err := s.Primary(ctx)
		if err != nil {
			return err
		}
		if p == old {
			return fmt.Errorf("the sentinels still name %s", old)
		}
		c := redis.NewClient(&redis.Options{Addr: p, MaxRetries: -1})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") {
			return fmt.Errorf("%s is named but not promoted yet", p)
		}
		now = p
		return nil
	})
	return now, err
}

func portOf(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return port
}

// replicaInSync is nil once the replica's link to its primary is up.
func replicaInSync(ctx context.Context, replica string) error {
	c := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return errors.New("replication link not up")
	}
	return nil
}

// knowsGroup is nil once the sentinel at addr knows the primary, one
// replica and the two other sentinels: a failover can be agreed on.
func knowsGroup(ctx context.Context, addr string) error {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer sc.Close()
	replicas, err := sc.Replicas(ctx, SentinelMaster).Result()
	if err != nil {
		return err
	}
	sentinels, err := sc.Sentinels(ctx, SentinelMaster).Result()
	if err != nil {
		return err
	}
	if len(replicas) < 1 || len(sentinels) < 2 {
		return fmt.Errorf("knows %d replicas and %d other sentinels", len(replicas), len(sentinels))
	}
	return nil
}

// waitFor retries f until it returns nil or ctx ends.
func waitFor(ctx context.Context, f func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
