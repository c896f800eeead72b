package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// An idle Asynq server polls: after a round of its queues finds nothing it
// sleeps TaskCheckInterval and looks again, a Lua script per queue. At the
// short interval a synchronous request needs (DESIGN 7) that is thousands
// of Redis calls a second from every idle worker, and most of an idle
// `updown dev`'s CPU. Asynq's sleep cannot be interrupted, so the gate sits
// in front of the poll instead. The gate does all the waiting: the
// server's own sleep is 1 ns (see Config.TaskCheckInterval), so a task
// announced starts within a Redis round trip, even one enqueued while the
// server was finding its queues empty.
//
// The gate remembers, queue by queue, which queues were found empty, and
// answers a dequeue of such a queue itself, without asking Redis, until
// someone enqueues work on it and says so on wakeChannel (naming the
// queue), a task of it comes due (the server's own forwarder moved it to
// pending), a slot of it frees (sweep shards), or idlePoll has passed
// since the gate last let every queue be asked (tasks nobody announces: an
// old client, a task another worker's forwarder moved or a stopping worker
// handed back, the collector's resolutions, the monitoring UI's "run").
// Once every queue was found empty the gate waits for one of these. So a
// replay announced to a worker is asked for on the replay queue first, not
// after a round of the queues Asynq shuffled before it, and the round after
// each task is one call, not one per queue: each was a Redis round trip on
// the path of a replay and, beside a sweep whose shards end and wake the
// gate many times a second, CPU taken from the replays (issues 24 and 27).
// At rest a worker costs a call per queue per idlePoll, and a task nobody
// announces waits at most idlePoll.

// wakeChannel is where enqueuers tell idle workers to look at a queue: the
// message is the queue's name, or empty for every queue.
const wakeChannel = "updown:wake"

// idlePoll is how often the gate asks Redis again about the queues it
// found empty, whether or not anyone said they have work.
const idlePoll = time.Second

// wake tells idle workers to look at queue ("": every queue). A lost wake
// costs at most a few idlePolls of latency, so failure is only logged.
func wake(ctx context.Context, rdb redis.UniversalClient, queue string) error {
	return rdb.Publish(ctx, wakeChannel, queue).Err()
}

// gate holds back an idle server's dequeues until a wake, and answers the
// dequeues of the queues it knows are empty.
type gate struct {
	bits map[string]uint64 // a queue's pending key → its bit
	all  uint64            // every queue's bit
	// empty holds the queues found empty (or refused: full) since they
	// were last woken or a task was fetched from them. It is read freely
	// and changed under mu, with epoch, which counts the wakes: a dequeue
	// that was under way when a wake came marks nothing empty (after), or
	// its answer, older than the wake, would hide the task the wake was
	// for until the queue's turn.
	empty atomic.Uint64
	mu    sync.Mutex
	epoch uint64
	// guessed holds the queues of empty marked so by a dequeue that
	// fetched their last task (lastFetched), not by one that found
	// nothing: the mark holds only until a handler returns (handled).
	guessed uint64
	// returned counts the handlers that returned (handled): a dequeue
	// that fetched a queue's last task marks it (lastFetched) only when
	// none returned while it was under way, or the mark, set after that
	// handler's clear, would outlive the slot it freed.
	returned uint64
	wakes    chan struct{} // a pending wake (capacity 1)
	closed   chan struct{} // closed at shutdown: never wait again
	idle     time.Duration
	// next is when the queues found empty are next asked again anyway:
	// nanoseconds after start, on the monotonic clock (a step of the wall
	// clock must not stop the turns).
	start time.Time
	next  atomic.Int64
	// slots bounds the tasks of a queue (by its pending key) that run at
	// once (sweep shards, sweep.go): a dequeue of the queue first takes a
	// slot, and is skipped as if the queue were empty when none is free;
	// a task fetched keeps its slot until its handler returns (release).
	// Set before the server starts.
	slots map[string]chan struct{}
}

// newGate gates the dequeues of the named queues (at most 64).
func newGate(queues []string, idle time.Duration) *gate {
	g := &gate{bits: map[string]uint64{}, slots: map[string]chan struct{}{}, wakes: make(chan struct{}, 1), closed: make(chan struct{}),
		idle: idle, start: time.Now()}
	for i, q := range queues[:min(len(queues), 64)] {
		bit := uint64(1) << i
		g.bits[pendingKey(q)] = bit
		g.all |= bit
	}
	g.next.Store(int64(idle))
	return g
}

// pendingKey is Asynq's key of a queue's pending tasks (internal/rdb).
func pendingKey(queue string) string { return "asynq:{" + queue + "}:pending" }

// taskKey is Asynq's key of a task's hash (internal/rdb).
func taskKey(queue, id string) string { return "asynq:{" + queue + "}:t:" + id }

// wake lets the dequeues of every queue go to Redis again, and a waiting
// (or the next) round go.
func (g *gate) wake() { g.wakeQueue("") }

// wakeQueue lets the dequeues of the queue whose pending key this is go to
// Redis again ("", or a queue the gate does not know: every queue), and a
// waiting (or the next) round go.
func (g *gate) wakeQueue(key string) {
	bit, ok := g.bits[key]
	if !ok {
		bit = g.all
	}
	g.mu.Lock()
	g.epoch++
	g.empty.And(^bit)
	g.guessed &^= bit
	g.mu.Unlock()
	select {
	case g.wakes <- struct{}{}:
	default: // one is pending already
	}
}

// close releases the gate for good (shutdown).
func (g *gate) close() { close(g.closed) }

// before is called ahead of each dequeue call. When the turn of a queue
// found empty has come, it is asked again; once every queue has been found
// empty, before waits for a wake or that turn.
func (g *gate) before() {
	if g.all == 0 {
		return
	}
	g.due()
	if g.empty.Load() != g.all {
		select {
		case <-g.wakes: // seen already: it let a queue be asked
		default:
		}
		return
	}
	t := time.NewTimer(time.Duration(g.next.Load()) - time.Since(g.start))
	defer t.Stop()
	select {
	case <-g.wakes:
	case <-t.C:
		g.due()
	case <-g.closed:
	}
}

// due lets every queue found empty be asked again once idlePoll has
// passed since it last did.
func (g *gate) due() {
	now := int64(time.Since(g.start))
	next := g.next.Load()
	if now < next || !g.next.CompareAndSwap(next, now+int64(g.idle)) {
		return
	}
	g.mu.Lock()
	g.epoch++
	g.empty.Store(0)
	g.guessed = 0
	g.mu.Unlock()
}

// counts returns the counts of wakes and of handlers returned so far, for
// after and lastFetched.
func (g *gate) counts() (epoch, returned uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch, g.returned
}

// known reports whether the queue whose pending key this is was found
// empty and nothing said it has work since.
func (g *gate) known(key string) bool {
	bit, ok := g.bits[key]
	return ok && g.empty.Load()&bit != 0
}

// after records what a dequeue of the queue whose pending key this is
// found, asked when the gate had heard of epoch wakes (since): a queue
// found empty is marked so only when no wake came meanwhile.
func (g *gate) after(key string, err error, epoch uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch err {
	case redis.Nil:
		if g.epoch == epoch {
			g.empty.Or(g.bits[key])
			g.guessed &^= g.bits[key] // found so
		}
	case nil:
		g.empty.And(^g.bits[key]) // it may hold more
		g.guessed &^= g.bits[key]
	default:
		// Redis down or refusing (see pause): the wakes of the outage may
		// be lost, so once it answers again every queue is asked.
		g.epoch++
		g.empty.Store(0)
		g.guessed = 0
	}
}

// lastFetched marks empty the queue whose pending key this is, whose last
// task a dequeue asked when the gate had heard of epoch wakes just fetched
// (unless a wake came meanwhile), until a handler returns (handled).
//
// With a slot of the worker free, Asynq's next dequeue follows at once,
// and would find nothing: the gate answers it. With every slot taken, the
// next comes once a handler returns, maybe much later: a task nobody
// announces (another worker's forwarder moving a retry, a stopping worker
// handing tasks back, the collector's resolutions, the monitoring UI's
// "run") enqueued meanwhile would wait for the gate's turn (idlePoll),
// where Asynq would have fetched it at once; so that dequeue goes to Redis.
//
// A handler that returned while the dequeue was under way (returned, as
// since gave it) freed a slot after its clear: the next dequeue may be
// that slot's, so the queue is not marked.
func (g *gate) lastFetched(key string, epoch, returned uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if bit := g.bits[key]; g.epoch == epoch && g.returned == returned && bit != 0 {
		g.empty.Or(bit)
		g.guessed |= bit
	}
}

// handled is called when a task's handler returns, before Asynq's
// processor frees the task's slot: the queues marked empty only because a
// dequeue fetched their last task (lastFetched) are asked again by the
// next dequeue. A dequeue waiting (every queue empty) is not woken: with
// a slot free all along, its queues were as good as asked.
func (g *gate) handled() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.empty.And(^g.guessed)
	g.guessed = 0
	g.returned++
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
	g   *gate
	log *slog.Logger // nil: slog.Default()
}

// isDequeue recognises Asynq's dequeue script by its keys: a queue's
// pending, paused, active and lease keys (internal/rdb Dequeue). Should a
// later Asynq change them, nothing is gated and the server polls as
// before; TestIdleWorkerDoesNotPoll would say so.
func isDequeue(keys []string) bool {
	return len(keys) == 4 && strings.HasSuffix(keys[0], ":pending") && strings.HasSuffix(keys[1], ":paused") &&
		strings.HasSuffix(keys[2], ":active") && strings.HasSuffix(keys[3], ":lease")
}

// isForward recognises Asynq's script that moves the tasks come due from a
// queue's scheduled or retry set to its pending list (internal/rdb
// forward), by its keys. Should a later Asynq change them, the gate hears
// of such tasks only on its turns; TestGateHearsOfTasksComeDue would say
// so.
func isForward(keys []string) bool {
	return len(keys) == 2 && (strings.HasSuffix(keys[0], ":scheduled") || strings.HasSuffix(keys[0], ":retry")) &&
		strings.HasSuffix(keys[1], ":pending")
}

func (c gatedRedis) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	switch {
	case isDequeue(keys):
		return c.dequeue(ctx, keys, true, c.sized(ctx, keys, func(r redis.Scripter) *redis.Cmd { return r.EvalSha(ctx, sha1, keys, args...) }))
	case isForward(keys):
		return c.forwarded(keys, c.UniversalClient.EvalSha(ctx, sha1, keys, args...))
	}
	return c.UniversalClient.EvalSha(ctx, sha1, keys, args...)
}

func (c gatedRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	switch {
	case isDequeue(keys):
		// The script's text follows a NOSCRIPT answer to EvalSha, which
		// passed the gate already.
		return c.dequeue(ctx, keys, false, c.sized(ctx, keys, func(r redis.Scripter) *redis.Cmd { return r.Eval(ctx, script, keys, args...) }))
	case isForward(keys):
		return c.forwarded(keys, c.UniversalClient.Eval(ctx, script, keys, args...))
	}
	return c.UniversalClient.Eval(ctx, script, keys, args...)
}

// dequeueCall makes a dequeue call to Redis: its answer, and how many
// tasks a dequeue could fetch right after it (nil when not asked): the
// length of the queue's pending list, 0 while the queue is paused.
type dequeueCall func() (*redis.Cmd, *redis.IntCmd)

// sized is the dequeue call run makes, in one pipeline with a look at the
// length of the queue's pending list (keys[0]) after it, and at whether
// the queue is paused (keys[1]).
func (c gatedRedis) sized(ctx context.Context, keys []string, run func(redis.Scripter) *redis.Cmd) dequeueCall {
	return func() (cmd *redis.Cmd, left *redis.IntCmd) {
		var paused *redis.IntCmd
		_, _ = c.UniversalClient.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = run(p)
			left = p.LLen(ctx, keys[0])
			paused = p.Exists(ctx, keys[1])
			return nil
		})
		if paused.Err() != nil {
			return cmd, nil
		}
		if paused.Val() > 0 {
			return cmd, redis.NewIntResult(0, nil)
		}
		return cmd, left
	}
}

// forwarded wakes the gate for the queue the forwarder moved tasks of to
// pending (cmd answers how many): a retry or a scheduled task come due.
func (c gatedRedis) forwarded(keys []string, cmd *redis.Cmd) *redis.Cmd {
	if n, err := cmd.Int64(); err == nil && n > 0 {
		c.g.wakeQueue(keys[1])
	}
	return cmd
}

// dequeue runs one of Asynq's dequeue calls: through the gate when gated
// (answered here for a queue known to be empty), and only with a slot of
// its queue free (gate.slots), which the task it fetches keeps. A task
// whose message does not decode is set aside (setAside) and answered as
// none fetched.
//
// The call goes to Redis in one pipeline with a look at the length of the
// queue's pending list, after it: a dequeue that fetched the queue's last
// task marks the queue empty (gate.after's rule: unless a wake came
// meanwhile) until a handler returns (gate.lastFetched), where Asynq's
// next call would have asked Redis again only to find nothing, a round
// trip and a script beside every replay's handler.
func (c gatedRedis) dequeue(ctx context.Context, keys []string, gated bool, call dequeueCall) *redis.Cmd {
	if gated {
		c.g.before()
		if c.g.known(keys[0]) {
			return redis.NewCmdResult(nil, redis.Nil)
		}
	}
	epoch, returned := c.g.counts()
	slots := c.g.slots[keys[0]]
	if slots != nil {
		select {
		case slots <- struct{}{}:
		default:
			// Every slot is busy: not fetched, and counted as an empty
			// queue. The task stays pending for a slot that frees, which
			// wakes the gate.
			c.g.after(keys[0], redis.Nil, epoch)
			return redis.NewCmdResult(nil, redis.Nil)
		}
	}
	cmd, left := call()
	// A message Asynq cannot decode fails its Dequeue after the task was
	// moved to the queue's active list: no handler runs, so its slot was
	// never freed, and the message, left there, failed every look of
	// Asynq's recoverer for the tasks of dead workers, of every queue.
	corrupt := cmd.Err() == nil && c.setAside(ctx, keys, cmd)
	if slots != nil && (cmd.Err() != nil || corrupt) {
		<-slots // nothing fetched: the slot is free again
	}
	if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") { // Eval follows, and is counted
		found := cmd.Err()
		if found == redis.Nil && left != nil && left.Err() == nil && left.Val() > 0 {
			// Asynq's script answers nil for a pending id whose task's
			// hash is gone, taken off the list all the same: the tasks
			// behind it are fetched by the next dequeue, not the gate's
			// turn.
			found = nil
		}
		c.g.after(keys[0], found, epoch)                                             // a task set aside: the queue may hold more
		if cmd.Err() == nil && left != nil && left.Err() == nil && left.Val() == 0 { // that was its last task
			if corrupt {
				c.g.after(keys[0], redis.Nil, epoch) // no handler runs: the next dequeue follows at once
			} else {
				c.g.lastFetched(keys[0], epoch, returned)
			}
		}
		c.pauseOnError(cmd.Err())
	}
	if corrupt {
		return redis.NewCmdResult(nil, redis.Nil) // Asynq goes on to its next queue
	}
	return cmd
}

// corruptKeyPrefix + "{queue}:" + task id keeps, for corruptRetention, the
// hash of a task whose message did not decode, for an operator to look at.
const (
	corruptKeyPrefix = "updown:corrupt:"
	corruptRetention = 7 * 24 * time.Hour
)

// setAsideScript takes the task whose message is ARGV[2] off a queue's
// active list (KEYS[1]) and lease set (KEYS[2]), where the dequeue just
// moved it, and renames its hash (ARGV[1] .. id) to ARGV[3] .. id. The
// dequeue script answers the message, not the id, so the id is looked up
// by its message among the active tasks, newest first (where the dequeue
// put it). It answers the id, or nil when none has that message.
var setAsideScript = redis.NewScript(`
for _, id in ipairs(redis.call("LRANGE", KEYS[1], 0, -1)) do
	if redis.call("HGET", ARGV[1] .. id, "msg") == ARGV[2] then
		redis.call("LREM", KEYS[1], 1, id)
		redis.call("ZREM", KEYS[2], id)
		redis.call("RENAME", ARGV[1] .. id, ARGV[3] .. id)
		redis.call("HSET", ARGV[3] .. id, "state", "corrupt")
		redis.call("EXPIRE", ARGV[3] .. id, ARGV[4])
		return id
	end
end
return nil
`)

// setAside reports whether the task a dequeue fetched (cmd, on keys) has
// a message Asynq cannot decode; such a task is taken off the queue's
// active tasks and its hash kept aside (corruptKeyPrefix). Should a later
// Asynq rename its message type, nothing is checked.
func (c gatedRedis) setAside(ctx context.Context, keys []string, cmd *redis.Cmd) bool {
	msg, err := cmd.Text()
	if err != nil {
		return false // not a message at all: Asynq says so
	}
	_, known, decodeErr := decodeTaskMessage([]byte(msg))
	if !known || decodeErr == nil {
		return false
	}
	log := c.log
	if log == nil {
		log = slog.Default()
	}
	queue := strings.TrimSuffix(keys[0], "pending")                     // asynq:{queue}:
	tag := strings.TrimSuffix(strings.TrimPrefix(queue, "asynq:"), ":") // {queue}
	id, err := setAsideScript.Run(ctx, c.UniversalClient, []string{keys[2], keys[3]},
		queue+"t:", msg, corruptKeyPrefix+tag+":", int64(corruptRetention/time.Second)).Text()
	if err != nil {
		// Left active, it is Asynq's to handle, as without this look;
		// its slot is freed all the same, no handler will run for it.
		log.ErrorContext(ctx, "a queued task's message does not decode, and it could not be set aside",
			"queue", tag, "decode_err", decodeErr, "err", err)
		return true
	}
	log.ErrorContext(ctx, "a queued task's message does not decode: set aside, it will not run",
		"queue", tag, "task_id", id, "kept_as", corruptKeyPrefix+tag+":"+id, "decode_err", decodeErr)
	return true
}

// release is called once the handler of a task of queue has returned:
// the queues guessed empty are asked again (handled), and the slot the
// task took when it was fetched is freed, waking the gate for the queue:
// it may hold more.
func (g *gate) release(queue string) {
	g.handled()
	if slots := g.slots[pendingKey(queue)]; slots != nil {
		<-slots
		g.wakeQueue(pendingKey(queue))
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
		// With the subscriptions: a subscription made again (the
		// connection dropped, Redis failed over) may have missed wakes
		// meanwhile, so it wakes every queue.
		ch := ps.ChannelWithSubscriptions()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-ch:
				if !ok {
					return
				}
				switch msg := msg.(type) {
				case *redis.Subscription:
					g.wake()
				case *redis.Message:
					if msg.Payload == "" {
						g.wake()
					} else {
						g.wakeQueue(pendingKey(msg.Payload))
					}
				}
			}
		}
	}()
	return func() {
		_ = ps.Close()
		<-done
	}
}
