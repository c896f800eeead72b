package worker

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// shardWaits is a worker's one subscription to the completions of the
// shards its batches wait on. A batch adds its shards' channels to it for
// as long as it waits, rather than opening a subscription of its own, a
// connection and its handshake each time. A completion goes to every batch
// waiting on its channel; one that a batch misses (Redis restarted, the
// connection replaced, its inbox full) is found by the batch's poll of its
// unfinished shards.
//
// A connection can die without a word (a host or a network lost), and
// writes to it still succeed for a while: so every healthPing the
// subscription pings, and when no pong has come back within pongWait it
// is replaced by a new one on the same channels.
type shardWaits struct {
	rdb        redis.UniversalClient
	log        *slog.Logger
	healthPing time.Duration
	pongWait   time.Duration
	done       chan struct{} // closed by close: the health check stops

	mu       sync.Mutex // guards what follows, and orders the writes to ps
	ps       *redis.PubSub
	closed   bool
	waiting  map[string]map[*waiter]struct{} // channel: the batches waiting on it
	pings    map[string]*ping                // ping payload: who waits for its pong
	nextPing uint64
}

// waiter is one batch's inbox. It is live once the batch's own ping has
// come back: what the connection carried before it was published before
// the batch subscribed (an earlier run of the same shard).
type waiter struct {
	inbox chan *redis.Message
	live  bool
}

// ping is a ping awaiting its pong, for a batch's waiter (nil for the
// health check).
type ping struct {
	pong chan struct{}
	w    *waiter
}

// Defaults: readyWait bounds how long a batch waits for Redis to confirm
// its subscriptions before it goes on anyway, its poll covering what it
// might miss meanwhile; writeTimeout bounds a subscribe, ping or
// unsubscribe (which may have to connect).
const (
	readyWait        = time.Second
	writeTimeout     = time.Second
	healthPing       = 15 * time.Second
	healthPongWait   = 5 * time.Second
	receiveWarnEvery = 10 * time.Second
)

func newShardWaits(rdb redis.UniversalClient, log *slog.Logger) *shardWaits {
	return &shardWaits{rdb: rdb, log: log, healthPing: healthPing, pongWait: healthPongWait, done: make(chan struct{}),
		ps:      rdb.Subscribe(context.Background()),
		waiting: map[string]map[*waiter]struct{}{}, pings: map[string]*ping{}}
}

// run hands completions to the batches waiting on them, and checks the
// connection's health, until close.
func (w *shardWaits) run() {
	go w.checkHealth()
	failures, warned := 0, time.Time{} // receive errors in a row; the last one logged
	for {
		w.mu.Lock()
		ps, closed := w.ps, w.closed
		w.mu.Unlock()
		if closed {
			return
		}
		msg, err := ps.Receive(context.Background())
		if err != nil {
			// A subscription closed under its receive (the worker is
			// stopping, or it was replaced) fails with whatever the
			// connection said, redis.ErrClosed or a read on a closed
			// socket: expected, not worth a word. After any other
			// error go-redis connects again, and subscribes again to
			// every channel, on the next receive.
			w.mu.Lock()
			gone := w.closed || w.ps != ps
			w.mu.Unlock()
			if gone || errors.Is(err, redis.ErrClosed) {
				continue
			}
			if time.Since(warned) > receiveWarnEvery {
				warned = time.Now()
				w.log.Warn("shard completions: receive failed; batches poll meanwhile", "err", err)
			}
			if failures++; failures > 1 {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		failures = 0
		w.mu.Lock()
		switch m := msg.(type) {
		case *redis.Message:
			for wt := range w.waiting[m.Channel] {
				if !wt.live {
					continue
				}
				select {
				case wt.inbox <- m:
				default: // full: the batch's poll finds the shard
				}
			}
		case *redis.Pong:
			if p, ok := w.pings[m.Payload]; ok {
				if p.w != nil {
					p.w.live = true
				}
				close(p.pong)
				delete(w.pings, m.Payload)
			}
		}
		w.mu.Unlock()
	}
}

// checkHealth pings every healthPing and replaces the subscription when a
// pong does not come back within pongWait.
func (w *shardWaits) checkHealth() {
	t := time.NewTicker(w.healthPing)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		p, err := w.ping(nil)
		if err == nil {
			select {
			case <-w.done:
				return
			case <-p.pong:
				continue
			case <-time.After(w.pongWait):
			}
		}
		w.log.Warn("shard completions: the subscription does not answer; replacing it", "err", err)
		w.replace()
	}
}

// ping sends a ping on the subscription and registers who waits for its
// pong.
func (w *shardWaits) ping(wt *waiter) (*ping, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pingLocked(wt)
}

func (w *shardWaits) pingLocked(wt *waiter) (*ping, error) {
	w.nextPing++
	id := strconv.FormatUint(w.nextPing, 10)
	p := &ping{pong: make(chan struct{}), w: wt}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := w.ps.Ping(ctx, id); err != nil {
		return nil, err
	}
	w.pings[id] = p
	return p, nil
}

// replace opens a new subscription on every channel waited on and closes
// the old one. What the old connection held is lost; the batches' polls
// find it.
func (w *shardWaits) replace() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	old := w.ps
	w.ps = w.rdb.Subscribe(context.Background())
	if len(w.waiting) > 0 {
		channels := make([]string, 0, len(w.waiting))
		for c := range w.waiting {
			channels = append(channels, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if err := w.ps.Subscribe(ctx, channels...); err != nil {
			// go-redis subscribes to them again when it connects.
			w.log.Warn("shard completions: subscribe again", "err", err)
		}
	}
	clear(w.pings) // their pongs were on the old connection
	_ = old.Close()
}

// close ends the subscription, run and the health check.
func (w *shardWaits) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	close(w.done)
	return w.ps.Close()
}

// wait delivers the completions announced on channels to inbox until the
// returned stop is called. It returns once Redis has confirmed the
// subscriptions: a ping sent after them comes back after them on the same
// connection (or after readyWait, the batch's poll covering the rest).
func (w *shardWaits) wait(ctx context.Context, channels []string, inbox chan *redis.Message) (stop func(), err error) {
	wt := &waiter{inbox: inbox}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, redis.ErrClosed
	}
	var fresh []string
	for _, c := range channels {
		if w.waiting[c] == nil {
			w.waiting[c] = map[*waiter]struct{}{}
			fresh = append(fresh, c)
		}
		w.waiting[c][wt] = struct{}{}
	}
	if len(fresh) > 0 {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err = w.ps.Subscribe(wctx, fresh...)
		cancel()
	}
	var p *ping
	if err == nil {
		p, err = w.pingLocked(wt)
	}
	if err != nil {
		w.leaveLocked(channels, wt)
		w.mu.Unlock()
		return nil, err
	}
	w.mu.Unlock()

	stop = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.leaveLocked(channels, wt)
	}
	t := time.NewTimer(readyWait)
	defer t.Stop()
	select {
	case <-p.pong:
	case <-t.C:
		w.log.WarnContext(ctx, "shard completions: subscriptions unconfirmed; the batch polls", "after", readyWait)
		w.mu.Lock()
		wt.live = true
		w.mu.Unlock()
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	return stop, nil
}

// leaveLocked takes wt off channels, and unsubscribes those nobody else
// waits on.
func (w *shardWaits) leaveLocked(channels []string, wt *waiter) {
	var unused []string
	for _, c := range channels {
		delete(w.waiting[c], wt)
		if len(w.waiting[c]) == 0 {
			delete(w.waiting, c)
			unused = append(unused, c)
		}
	}
	if len(unused) == 0 || w.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := w.ps.Unsubscribe(ctx, unused...); err != nil && !errors.Is(err, redis.ErrClosed) {
		w.log.Warn("shard completions: unsubscribe", "err", err)
	}
}
