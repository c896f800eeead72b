package worker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// options are the client options of a test's own Redis server.
func options(t *testing.T, srv *redistest.Server) *redis.Options {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// startWaits runs a shardWaits on rdb until the test ends.
func startWaits(t *testing.T, rdb redis.UniversalClient, tune func(*shardWaits)) *shardWaits {
	t.Helper()
	w := newShardWaits(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if tune != nil {
		tune(w)
	}
	running := make(chan struct{})
	go func() { w.run(); close(running) }()
	t.Cleanup(func() { _ = w.close(); <-running })
	return w
}

func hears(t *testing.T, inbox chan *redis.Message, channel, payload string) bool {
	t.Helper()
	select {
	case m := <-inbox:
		if m.Channel != channel || m.Payload != payload {
			t.Fatalf("heard %s %q, want %s %q", m.Channel, m.Payload, channel, payload)
		}
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

func numSub(t *testing.T, rdb *redis.Client, ch string) int64 {
	t.Helper()
	n, err := rdb.PubSubNumSub(context.Background(), ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[ch]
}

// waitOn is w.wait that must be confirmed by its pong, well before
// readyWait would let it go unconfirmed.
func waitOn(t *testing.T, w *shardWaits, channels []string, inbox chan *redis.Message) func() {
	t.Helper()
	start := time.Now()
	stop, err := w.wait(t.Context(), channels, inbox)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= readyWait*9/10 {
		t.Fatalf("wait took %v: its pong never came", d)
	}
	return stop
}

// TestShardWaits: a completion reaches every batch waiting on its channel,
// from the moment wait returns (the subscription is in force then) until
// stop; a channel nobody waits on is unsubscribed; and after Redis
// restarts, the subscription comes back by itself.
func TestShardWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redis.NewClient(options(t, srv))
	defer rdb.Close()
	ctx := t.Context()
	w := startWaits(t, rdb, nil)
	publish := func(channel, payload string) {
		t.Helper()
		if err := rdb.Publish(ctx, channel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// In force the moment wait returns, a hundred times over.
	for i := range 100 {
		ch := "done:now-" + strconv.Itoa(i)
		inbox := make(chan *redis.Message, 1)
		stop := waitOn(t, w, []string{ch}, inbox)
		if n := numSub(t, rdb, ch); n != 1 {
			t.Fatalf("round %d: %s has %d subscribers when wait returns", i, ch, n)
		}
		publish(ch, "x")
		if !hears(t, inbox, ch, "x") {
			t.Fatalf("round %d: a completion published as wait returned was lost", i)
		}
		stop()
	}

	// Two batches sharing a shard.
	a, b := make(chan *redis.Message, 4), make(chan *redis.Message, 4)
	stopA := waitOn(t, w, []string{"done:1", "done:shared"}, a)
	stopB := waitOn(t, w, []string{"done:shared", "done:2"}, b)
	publish("done:shared", "s")
	if !hears(t, a, "done:shared", "s") || !hears(t, b, "done:shared", "s") {
		t.Fatal("a shared shard's completion did not reach both batches")
	}
	publish("done:2", "two")
	if !hears(t, b, "done:2", "two") || hears(t, a, "", "") {
		t.Fatal("done:2 went astray")
	}
	stopA()
	publish("done:shared", "s2")
	if !hears(t, b, "done:shared", "s2") {
		t.Fatal("B stopped hearing the shared shard when A stopped waiting")
	}
	// The unsubscribe goes out on the subscription's connection: Redis may
	// answer this one before it has read it.
	for deadline := time.Now().Add(5 * time.Second); numSub(t, rdb, "done:1") != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("done:1 is still subscribed after its only batch stopped waiting")
		}
	}
	if n := numSub(t, rdb, "done:shared"); n != 1 {
		t.Errorf("done:shared has %d subscribers while B waits, want 1", n)
	}

	// Redis restarts: B's subscription comes back, and new waits work.
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for numSub(t, rdb, "done:2") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never came back after Redis restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	publish("done:2", "after")
	if !hears(t, b, "done:2", "after") {
		t.Fatal("B heard nothing after Redis restarted")
	}
	stopB()
	c := make(chan *redis.Message, 1)
	defer waitOn(t, w, []string{"done:3"}, c)()
	publish("done:3", "c")
	if !hears(t, c, "done:3", "c") {
		t.Fatal("a wait after the restart heard nothing")
	}
}

// TestShardWaitsConcurrently: batches waiting and leaving at once, some on
// shared shards, each hear their own completions; when all have left,
// nothing is subscribed.
func TestShardWaitsConcurrently(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	w := startWaits(t, rdb, nil)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				own := "done:c-" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				shared := "done:c-shared-" + strconv.Itoa(i%3)
				inbox := make(chan *redis.Message, 8)
				stop := waitOn(t, w, []string{own, shared}, inbox)
				if err := rdb.Publish(t.Context(), own, "x").Err(); err != nil {
					t.Error(err)
					return
				}
				for got := false; !got; {
					select {
					case m := <-inbox:
						got = m.Channel == own
					case <-time.After(2 * time.Second):
						t.Errorf("%s: its completion never came", own)
						return
					}
				}
				stop()
			}
		})
	}
	wg.Wait()
	// The unsubscribes go out on the subscription's connection: Redis
	// may answer another connection before it has read them.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		chans, err := rdb.PubSubChannels(t.Context(), "done:c-*").Result()
		if err == nil && len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribed after every batch left: %v %v", chans, err)
		}
	}
}

// TestShardWaitsReplacesASilentConnection: a connection that stops
// answering without closing (a host or network lost) is noticed by the
// health ping and replaced, and the batches waiting hear their shards on
// the new one.
func TestShardWaitsReplacesASilentConnection(t *testing.T) {
	t.Parallel()
	direct := redistest.Client(t)
	proxy := newFreezingProxy(t, direct.Options().Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr()})
	defer rdb.Close()
	w := startWaits(t, rdb, func(w *shardWaits) { w.healthPing, w.pongWait = 50*time.Millisecond, 200*time.Millisecond })

	inbox := make(chan *redis.Message, 4)
	defer waitOn(t, w, []string{"done:silent"}, inbox)()
	if err := direct.Publish(t.Context(), "done:silent", "before").Err(); err != nil {
		t.Fatal(err)
	}
	if !hears(t, inbox, "done:silent", "before") {
		t.Fatal("nothing heard before the connection froze")
	}
	proxy.freeze() // the connections open now carry nothing more, either way
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := direct.Publish(t.Context(), "done:silent", "after").Err(); err != nil {
			t.Fatal(err)
		}
		if hears(t, inbox, "done:silent", "after") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the frozen subscription was never replaced")
		}
	}
}

// freezingProxy forwards TCP connections to a Redis server until freeze,
// after which the connections open then carry nothing more, in either
// direction, without closing: a connection to a lost host. Connections
// opened later work.
type freezingProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	live chan struct{} // closed at freeze: the connections opened before stop carrying
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, live: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close() })
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
			stop := p.live
			p.mu.Unlock()
			t.Cleanup(func() { _ = c.Close(); _ = up.Close() })
			go pipeUntil(c, up, stop)
			go pipeUntil(up, c, stop)
		}
	}()
	return p
}

func (p *freezingProxy) addr() string { return p.ln.Addr().String() }

func (p *freezingProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.live)
	p.live = make(chan struct{})
}

// pipeUntil copies from src to dst until stop is closed, then drops what
// comes.
func pipeUntil(dst, src net.Conn, stop chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		select {
		case <-stop:
			continue // frozen: swallowed
		default:
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestShardWaitsCloseIsQuiet: closing the subscription under its receive,
// as a worker's shutdown does, fails that receive, which is expected: it
// logs no warning.
func TestShardWaitsCloseIsQuiet(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(options(t, redistest.Start(t)))
	defer rdb.Close()
	for i := range 5 {
		var log syncLog
		w := newShardWaits(rdb, slog.New(slog.NewTextHandler(&log, nil)))
		running := make(chan struct{})
		go func() { w.run(); close(running) }()
		stop := waitOn(t, w, []string{"quiet-" + strconv.Itoa(i)}, make(chan *redis.Message, 1))
		stop()
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		<-running
		if out := log.String(); out != "" {
			t.Fatalf("run %d: closing logged:\n%s", i, out)
		}
	}
}

// syncLog is a log destination safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  []byte
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
