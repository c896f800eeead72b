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
// waiting on its channel; one that a batch misses (Redis restarted, its
// inbox full) is found by the batch's poll of its unfinished shards.
type shardWaits struct {
	ps  *redis.PubSub
	log *slog.Logger

	mu      sync.Mutex
	inboxes map[string]map[chan *redis.Message]struct{} // channel: the inboxes of the batches waiting on it
	pings   map[string]chan struct{}                    // ping payload: closed when its pong arrives
	nextID  uint64
}

// readyWait bounds how long a batch waits for Redis to confirm its
// subscriptions before it goes on anyway, its poll covering what it might
// miss meanwhile.
const readyWait = time.Second

// healthPing is how long the subscription may stay silent before it checks
// its connection, which go-redis replaces (and subscribes again) when it is
// dead.
const healthPing = 30 * time.Second

func newShardWaits(rdb redis.UniversalClient, log *slog.Logger) *shardWaits {
	return &shardWaits{ps: rdb.Subscribe(context.Background()), log: log,
		inboxes: map[string]map[chan *redis.Message]struct{}{}, pings: map[string]chan struct{}{}}
}

// run hands completions to the batches waiting on them until close.
func (w *shardWaits) run(ctx context.Context) {
	failures := 0
	for {
		msg, err := w.ps.ReceiveTimeout(ctx, healthPing)
		switch {
		case errors.Is(err, redis.ErrClosed) || ctx.Err() != nil:
			return
		case isTimeout(err):
			if err := w.ps.Ping(ctx); err != nil {
				w.log.WarnContext(ctx, "shard completions: ping", "err", err)
			}
			continue
		case err != nil:
			// go-redis connects again, and subscribes again to every
			// channel, on the next receive.
			if failures++; failures > 1 {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		failures = 0
		switch m := msg.(type) {
		case *redis.Message:
			w.mu.Lock()
			for inbox := range w.inboxes[m.Channel] {
				select {
				case inbox <- m:
				default: // full: the batch's poll finds the shard
				}
			}
			w.mu.Unlock()
		case *redis.Pong:
			w.mu.Lock()
			if done, ok := w.pings[m.Payload]; ok {
				close(done)
				delete(w.pings, m.Payload)
			}
			w.mu.Unlock()
		}
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// close ends the subscription and run.
func (w *shardWaits) close() error { return w.ps.Close() }

// wait delivers the completions announced on channels to inbox until the
// returned stop is called. It returns once Redis has confirmed the
// subscriptions: a ping sent after them comes back after them on the same
// connection (or after readyWait).
func (w *shardWaits) wait(ctx context.Context, channels []string, inbox chan *redis.Message) (stop func(), err error) {
	w.mu.Lock()
	var fresh []string
	for _, c := range channels {
		if w.inboxes[c] == nil {
			w.inboxes[c] = map[chan *redis.Message]struct{}{}
			fresh = append(fresh, c)
		}
		w.inboxes[c][inbox] = struct{}{}
	}
	w.nextID++
	id := strconv.FormatUint(w.nextID, 10)
	pong := make(chan struct{})
	w.pings[id] = pong
	if len(fresh) > 0 {
		err = w.ps.Subscribe(ctx, fresh...)
	}
	if err == nil {
		err = w.ps.Ping(ctx, id)
	}
	w.mu.Unlock()

	stop = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.pings, id)
		var unused []string
		for _, c := range channels {
			delete(w.inboxes[c], inbox)
			if len(w.inboxes[c]) == 0 {
				delete(w.inboxes, c)
				unused = append(unused, c)
			}
		}
		if len(unused) > 0 {
			if err := w.ps.Unsubscribe(context.WithoutCancel(ctx), unused...); err != nil {
				w.log.WarnContext(ctx, "shard completions: unsubscribe", "err", err)
			}
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	t := time.NewTimer(readyWait)
	defer t.Stop()
	select {
	case <-pong:
	case <-t.C:
		w.log.WarnContext(ctx, "shard completions: subscriptions unconfirmed; the batch polls", "after", readyWait)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	return stop, nil
}
