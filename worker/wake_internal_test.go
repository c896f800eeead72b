package worker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// TestFailingDequeuePauses: a dequeue Redis refuses at once (here: a user
// without the right to run scripts) holds the server back, so that a worker
// with no sleep between rounds does not spin against it; other calls go
// through as they are.
func TestFailingDequeuePauses(t *testing.T) {
	t.Parallel()
	opt := options(t, redistest.Start(t))
	admin := redis.NewClient(opt)
	defer admin.Close()
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	opt.Username, opt.Password = "noscripts", "pw"
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	g := gatedRedis{rdb, newGate([]string{"q"}, time.Second)}
	call := func(keys []string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := g.EvalSha(context.Background(), "0123", keys).Err(); !redis.HasErrorPrefix(err, "NOPERM") {
			t.Fatalf("EvalSha: %v, want NOPERM", err)
		}
		return time.Since(start)
	}
	var others time.Duration
	for range 5 {
		others += call([]string{"other"})
	}
	if others >= 5*dequeueErrorPause {
		t.Errorf("5 other scripts refused took %v: they were held back too", others)
	}
	dequeue := []string{"asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease"}
	if d := call(dequeue); d < dequeueErrorPause {
		t.Errorf("a refused dequeue returned after %v, want at least %v", d, dequeueErrorPause)
	}
}

// TestGateWaitsOnlyWhenEveryQueueWasEmpty: after a wake, the gate lets the
// server ask every queue before it waits again, whatever order Asynq's
// shuffled rounds ask them in. It used to count empty calls, and waited
// after as many as there were queues, before the one queue that had work
// was asked (a sweep slot freeing: its next shard started a second late).
func TestGateWaitsOnlyWhenEveryQueueWasEmpty(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"a", "b", "c"}, 10*time.Minute)
	empty := func(qs ...string) {
		for _, q := range qs {
			g.after(pendingKey(q), redis.Nil)
		}
	}
	returns := func(what string) {
		t.Helper()
		done := make(chan struct{})
		go func() { g.before(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute): // a hang bound: the gate waits ten
			g.wake() // let the goroutine end
			t.Fatalf("%s: the gate waited", what)
		}
	}
	empty("a", "b", "c")
	g.wake()
	returns("a wake after every queue was empty")
	empty("b", "a", "b") // c, which the wake was for, not asked yet
	returns("three empty calls that did not ask c")
	empty("c")
	waited := make(chan struct{})
	go func() { g.before(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("every queue was empty, and the gate did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	g.wake()
	<-waited
	g.after(pendingKey("b"), nil) // a task fetched: start over
	empty("a", "c")
	returns("a task fetched since")
}

// TestGateSlots: a queue with slots is fetched from only while one is
// free; the task fetched keeps it until release, a dequeue that finds
// nothing gives it back at once, and a full queue counts as empty without
// a call to Redis.
func TestGateSlots(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"sweeps", "replay"}, 10*time.Minute)
	slots := make(chan struct{}, 1)
	g.slots[pendingKey("sweeps")] = slots
	c := gatedRedis{g: g}
	keys := []string{pendingKey("sweeps"), "asynq:{sweeps}:paused", "asynq:{sweeps}:active", "asynq:{sweeps}:lease"}
	calls := 0
	answer := func(err error) func() *redis.Cmd {
		return func() *redis.Cmd { calls++; return redis.NewCmdResult("task", err) }
	}
	if err := c.dequeue(keys, true, answer(redis.Nil)).Err(); err != redis.Nil || len(slots) != 0 {
		t.Fatalf("an empty queue: %v, %d slots taken; want redis.Nil and none", err, len(slots))
	}
	if err := c.dequeue(keys, true, answer(nil)).Err(); err != nil || len(slots) != 1 {
		t.Fatalf("a task fetched: %v, %d slots taken; want it and one", err, len(slots))
	}
	before := calls
	if err := c.dequeue(keys, true, answer(nil)).Err(); err != redis.Nil || calls != before {
		t.Fatalf("every slot busy: %v after %d calls to Redis; want redis.Nil and none", err, calls-before)
	}
	if g.seen.Load()&g.bits[pendingKey("sweeps")] == 0 {
		t.Error("a full queue was not counted as empty: the gate would poll it while the slot is busy")
	}
	g.release("sweeps")
	if len(slots) != 0 {
		t.Fatal("release did not free the slot")
	}
	select {
	case <-g.wakes:
	default:
		t.Error("a freed slot did not wake the gate")
	}
	g.release("replay") // a queue without slots: nothing to free
}
