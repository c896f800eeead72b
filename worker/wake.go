package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// An idle Asynq server polls: after a round of its queues finds nothing it
// sleeps TaskCheckInterval and looks again, a Lua script per queue. At the
// short interval a synchronous request needs (DESIGN 7) that is thousands
// of Redis calls a second from every idle worker, and most of an idle
// `updown dev`'s CPU. Asynq's sleep cannot be interrupted, so the gate sits
// in front of the poll instead: a worker whose last round found nothing
// waits, before its next round, until someone enqueues work and says so on
// wakeChannel, or until idlePoll has passed (tasks nobody announces: a
// retry coming due, a resolution scheduled for later, an old client).
// The gate does all the waiting: the server's own sleep is 1 ns (see
// Config.TaskCheckInterval), so a task announced on the channel starts
// within a Redis round trip, even one enqueued while the server was
// finding its queues empty; at rest a worker costs a round of polls per
// idlePoll.

// wakeChannel is where enqueuers tell idle workers to look at the queues.
const wakeChannel = "updown:wake"

// idlePoll bounds how long an idle worker waits for a wake before looking
// at its queues anyway.
const idlePoll = time.Second

// wake tells idle workers to look at the queues. A lost wake costs at most
// idlePoll of latency, so failure is only logged.
func wake(ctx context.Context, rdb redis.UniversalClient) error {
	return rdb.Publish(ctx, wakeChannel, "").Err()
}

// gate holds back an idle server's dequeue rounds until a wake.
type gate struct {
	queues int           // dequeue calls per round: one per queue
	empty  atomic.Int64  // dequeue calls in a row that found nothing
	wakes  chan struct{} // a pending wake (capacity 1)
	closed chan struct{} // closed at shutdown: never wait again
	idle   time.Duration
	// full, when set, reports whether the server would refuse a task of
	// the queue whose pending key this is (every sweep slot busy,
	// sweep.go): its dequeue is skipped as if the queue were empty. Set
	// before the server starts.
	full func(pendingKey string) bool
}

func newGate(queues int, idle time.Duration) *gate {
	return &gate{queues: max(queues, 1), wakes: make(chan struct{}, 1), closed: make(chan struct{}), idle: idle}
}

// wake lets a waiting (or the next) round go.
func (g *gate) wake() {
	select {
	case g.wakes <- struct{}{}:
	default: // one is pending already
	}
}

// close releases the gate for good (shutdown).
func (g *gate) close() { close(g.closed) }

// before is called ahead of each dequeue call. At the start of a round that
// follows a whole empty round, it waits for a wake or idlePoll.
func (g *gate) before() {
	n := g.empty.Load()
	if n < int64(g.queues) || n%int64(g.queues) != 0 {
		return
	}
	t := time.NewTimer(g.idle)
	defer t.Stop()
	select {
	case <-g.wakes:
		g.empty.Store(0)
	case <-t.C:
	case <-g.closed:
	}
}

// after records what a dequeue call found.
func (g *gate) after(err error) {
	switch err {
	case redis.Nil:
		g.empty.Add(1)
	case nil:
		g.empty.Store(0)
	}
	// Other errors (Redis down) leave the count; see pause.
}

// dequeueErrorPause is how long a dequeue that failed (Redis down or
// refusing) holds the server back: Asynq tries again at once after an
// error, and with no sleep between rounds (Config.TaskCheckInterval) an
// error Redis answers at once would make the worker spin.
const dequeueErrorPause = 100 * time.Millisecond

// pause holds back a server whose dequeue failed, unless it is stopping.
func (g *gate) pause() {
	t := time.NewTimer(dequeueErrorPause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.closed:
	}
}

// gatedRedis is the Redis client the Asynq server runs on: every call goes
// through as it is, except Asynq's dequeue script, which passes the gate.
type gatedRedis struct {
	redis.UniversalClient
	g *gate
}

// isDequeue recognises Asynq's dequeue script by its keys: a queue's
// pending, paused, active and lease keys (internal/rdb Dequeue). Should a
// later Asynq change them, nothing is gated and the server polls as
// before; TestIdleWorkerDoesNotPoll would say so.
func isDequeue(keys []string) bool {
	return len(keys) == 4 && strings.HasSuffix(keys[0], ":pending") && strings.HasSuffix(keys[1], ":paused") &&
		strings.HasSuffix(keys[2], ":active") && strings.HasSuffix(keys[3], ":lease")
}

func (c gatedRedis) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if !isDequeue(keys) {
		return c.UniversalClient.EvalSha(ctx, sha1, keys, args...)
	}
	if c.g.full != nil && c.g.full(keys[0]) {
		// Neither counted as an empty queue nor fetched: the task stays
		// pending for a slot that frees (which wakes the gate).
		return redis.NewCmdResult(nil, redis.Nil)
	}
	c.g.before()
	cmd := c.UniversalClient.EvalSha(ctx, sha1, keys, args...)
	if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") { // Eval follows, and is counted
		c.g.after(cmd.Err())
		c.pauseOnError(cmd.Err())
	}
	return cmd
}

func (c gatedRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := c.UniversalClient.Eval(ctx, script, keys, args...)
	if isDequeue(keys) {
		c.g.after(cmd.Err())
		c.pauseOnError(cmd.Err())
	}
	return cmd
}

func (c gatedRedis) pauseOnError(err error) {
	if err != nil && err != redis.Nil {
		c.g.pause()
	}
}

// listenForWakes opens the gate on every wake until ctx ends. The
// subscription reconnects by itself after a Redis outage; wakes sent
// meanwhile are lost, and idlePoll covers them.
func listenForWakes(ctx context.Context, rdb redis.UniversalClient, g *gate) (stop func()) {
	ps := rdb.Subscribe(ctx, wakeChannel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				g.wake()
			}
		}
	}()
	return func() {
		_ = ps.Close()
		<-done
	}
}
