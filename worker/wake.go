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
//
// It waits only once every queue has been found empty (or refused: full)
// since the last task or wake, queue by queue, not after as many empty
// calls as there are queues: Asynq shuffles each round's order, so a count
// would wait in the middle of a round, after a wake, before the one queue
// that woke it was asked (a sweep slot freeing, and its next shard started
// a second late).
type gate struct {
	bits   map[string]uint64 // a queue's pending key → its bit
	all    uint64            // every queue's bit
	seen   atomic.Uint64     // queues found empty since the last task or wake
	wakes  chan struct{}     // a pending wake (capacity 1)
	closed chan struct{}     // closed at shutdown: never wait again
	idle   time.Duration
	// slots bounds the tasks of a queue (by its pending key) that run at
	// once (sweep shards, sweep.go): a dequeue of the queue first takes a
	// slot, and is skipped as if the queue were empty when none is free;
	// a task fetched keeps its slot until its handler returns (release).
	// Set before the server starts.
	slots map[string]chan struct{}
}

// newGate gates the dequeues of the named queues (at most 64).
func newGate(queues []string, idle time.Duration) *gate {
	g := &gate{bits: map[string]uint64{}, slots: map[string]chan struct{}{}, wakes: make(chan struct{}, 1), closed: make(chan struct{}), idle: idle}
	for i, q := range queues[:min(len(queues), 64)] {
		bit := uint64(1) << i
		g.bits[pendingKey(q)] = bit
		g.all |= bit
	}
	return g
}

// pendingKey is Asynq's key of a queue's pending tasks (internal/rdb).
func pendingKey(queue string) string { return "asynq:{" + queue + "}:pending" }

// taskKey is Asynq's key of a task's hash (internal/rdb).
func taskKey(queue, id string) string { return "asynq:{" + queue + "}:t:" + id }

// wake lets a waiting (or the next) round go.
func (g *gate) wake() {
	select {
	case g.wakes <- struct{}{}:
	default: // one is pending already
	}
}

// close releases the gate for good (shutdown).
func (g *gate) close() { close(g.closed) }

// before is called ahead of each dequeue call. Once every queue has been
// found empty, it waits for a wake or idlePoll.
func (g *gate) before() {
	if g.all == 0 || g.seen.Load() != g.all {
		return
	}
	t := time.NewTimer(g.idle)
	defer t.Stop()
	select {
	case <-g.wakes:
		g.seen.Store(0)
	case <-t.C:
	case <-g.closed:
	}
}

// after records what a dequeue of the queue whose pending key this is
// found.
func (g *gate) after(key string, err error) {
	switch err {
	case redis.Nil:
		g.seen.Or(g.bits[key])
	case nil:
		g.seen.Store(0)
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
	return c.dequeue(keys, true, func() *redis.Cmd { return c.UniversalClient.EvalSha(ctx, sha1, keys, args...) })
}

func (c gatedRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if !isDequeue(keys) {
		return c.UniversalClient.Eval(ctx, script, keys, args...)
	}
	// The script's text follows a NOSCRIPT answer to EvalSha, which
	// passed the gate already.
	return c.dequeue(keys, false, func() *redis.Cmd { return c.UniversalClient.Eval(ctx, script, keys, args...) })
}

// dequeue runs one of Asynq's dequeue calls: through the gate when gated,
// and only with a slot of its queue free (gate.slots), which the task it
// fetches keeps.
func (c gatedRedis) dequeue(keys []string, gated bool, call func() *redis.Cmd) *redis.Cmd {
	slots := c.g.slots[keys[0]]
	if slots != nil {
		select {
		case slots <- struct{}{}:
		default:
			// Every slot is busy: not fetched, and counted as an empty
			// queue. The task stays pending for a slot that frees, which
			// wakes the gate.
			c.g.after(keys[0], redis.Nil)
			return redis.NewCmdResult(nil, redis.Nil)
		}
	}
	if gated {
		c.g.before()
	}
	cmd := call()
	if slots != nil && cmd.Err() != nil {
		<-slots // nothing fetched: the slot is free again
	}
	if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") { // Eval follows, and is counted
		c.g.after(keys[0], cmd.Err())
		c.pauseOnError(cmd.Err())
	}
	return cmd
}

// release frees the slot a task of queue took when it was fetched, once
// its handler has returned, and wakes the gate: the queue may hold more.
func (g *gate) release(queue string) {
	if slots := g.slots[pendingKey(queue)]; slots != nil {
		<-slots
		g.wake()
	}
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
