package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// aTask is what a dequeue that fetched a task answers: its message, here
// the encoding of an empty one (every field unset), which decodes.
const aTask = ""

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
	g := gatedRedis{UniversalClient: rdb, g: newGate([]string{"q"}, time.Second)}
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
			g.after(pendingKey(q), redis.Nil, epochOf(g))
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
	g.after(pendingKey("b"), nil, epochOf(g)) // a task fetched: start over
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
		return func() *redis.Cmd { calls++; return redis.NewCmdResult(aTask, err) }
	}
	if err := c.dequeue(context.Background(), keys, true, only(answer(redis.Nil))).Err(); err != redis.Nil || len(slots) != 0 {
		t.Fatalf("an empty queue: %v, %d slots taken; want redis.Nil and none", err, len(slots))
	}
	g.wakeQueue(pendingKey("sweeps")) // a shard enqueued
	if err := c.dequeue(context.Background(), keys, true, only(answer(nil))).Err(); err != nil || len(slots) != 1 {
		t.Fatalf("a task fetched: %v, %d slots taken; want it and one", err, len(slots))
	}
	before := calls
	if err := c.dequeue(context.Background(), keys, true, only(answer(nil))).Err(); err != redis.Nil || calls != before {
		t.Fatalf("every slot busy: %v after %d calls to Redis; want redis.Nil and none", err, calls-before)
	}
	if !g.known(pendingKey("sweeps")) {
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
	if g.known(pendingKey("sweeps")) {
		t.Error("a freed slot left its queue known as empty: its next shard would wait for the gate's turn")
	}
	g.release("replay") // a queue without slots: nothing to free
}

// TestGateAnswersQueuesFoundEmpty (issues 24 and 27): a queue found empty
// is answered by the gate, with no call to Redis, until a wake names it
// (or every queue), a task of it is fetched, or its turn comes; a wake for
// one queue does not send the dequeues of the others to Redis.
func TestGateAnswersQueuesFoundEmpty(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"replay", "collect", "sweeps"}, 10*time.Minute)
	c := gatedRedis{g: g}
	calls := map[string]int{}
	ask := func(q string, answer error) error {
		keys := []string{pendingKey(q), "asynq:{" + q + "}:paused", "asynq:{" + q + "}:active", "asynq:{" + q + "}:lease"}
		return c.dequeue(context.Background(), keys, true, only(func() *redis.Cmd { calls[q]++; return redis.NewCmdResult(aTask, answer) })).Err()
	}
	ask("replay", redis.Nil)
	ask("collect", redis.Nil)
	if calls["replay"] != 1 || calls["collect"] != 1 {
		t.Fatalf("first round: %v calls, want one a queue", calls)
	}
	if err := ask("replay", nil); err != redis.Nil || calls["replay"] != 1 {
		t.Fatalf("a queue found empty: %v after %d calls, want redis.Nil from the gate", err, calls["replay"])
	}
	g.wakeQueue(pendingKey("replay")) // a replay enqueued
	if err := ask("collect", nil); err != redis.Nil || calls["collect"] != 1 {
		t.Errorf("a wake for replay sent collect's dequeue to Redis (%d calls)", calls["collect"])
	}
	if err := ask("replay", nil); err != nil || calls["replay"] != 2 {
		t.Fatalf("after a wake for it: %v after %d calls, want the task from Redis", err, calls["replay"])
	}
	if err := ask("replay", redis.Nil); err != redis.Nil || calls["replay"] != 3 {
		t.Fatalf("after a task fetched: %v after %d calls, want Redis asked again", err, calls["replay"])
	}
	g.wake() // every queue
	ask("collect", redis.Nil)
	ask("replay", redis.Nil)
	if calls["collect"] != 2 || calls["replay"] != 4 {
		t.Errorf("after a wake for every queue: %v calls, want each asked again", calls)
	}
	g.wakeQueue(pendingKey("nosuchqueue")) // a queue this worker does not know: every queue
	if ask("collect", redis.Nil); calls["collect"] != 3 {
		t.Errorf("after a wake for an unknown queue: collect asked %d times, want 3", calls["collect"])
	}
}

// TestGateTurns: with every queue found empty and nothing said, the gate
// waits idlePoll, then lets every queue be asked again (a task nobody
// announced waits no longer), and waits again once they are found empty.
func TestGateTurns(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	start := time.Now() // before the gate's own start: a descheduled test cannot shorten the wait
	g := newGate([]string{"a", "b"}, idle)
	for turn := 1; turn <= 2; turn++ {
		for _, q := range []string{"a", "b"} {
			g.after(pendingKey(q), redis.Nil, epochOf(g))
		}
		g.before() // every queue found empty: waits for the turn
		if waited := time.Since(start); waited < time.Duration(turn)*idle {
			t.Errorf("turn %d came %v after the start, want %v or later", turn, waited, time.Duration(turn)*idle)
		}
		if g.known(pendingKey("a")) || g.known(pendingKey("b")) {
			t.Fatalf("turn %d did not let every queue be asked again", turn)
		}
	}
}

// TestGateAsksEveryQueueAfterAnError: a dequeue that fails (Redis down)
// forgets the queues found empty, whose wakes the outage may have lost.
func TestGateAsksEveryQueueAfterAnError(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"a", "b"}, time.Hour)
	g.after(pendingKey("a"), redis.Nil, epochOf(g))
	g.after(pendingKey("b"), errors.New("connection refused"), epochOf(g))
	if g.known(pendingKey("a")) {
		t.Error("a queue found empty before a failed dequeue is still taken for empty")
	}
}

// TestGateHearsOfTasksComeDue: a task that comes due (scheduled for
// later, or a retry) is moved to its queue by the worker's forwarder,
// which nobody announces; the gate hears of it from the forwarder's
// script and lets its queue be asked at once, not on a turn (an hour here).
func TestGateHearsOfTasksComeDue(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	s, err := NewServer(Config{Redis: rdb, Store: memory.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.gate.idle = time.Hour
	s.gate.next.Store(int64(time.Since(s.gate.start) + time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	info, err := asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask(jobs.TypePing, nil), asynq.Queue(jobs.QueueReplay),
		asynq.ProcessIn(300*time.Millisecond), asynq.Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(30 * time.Second) // a hang bound: the forwarder looks every second
	for {
		ti, err := insp.GetTaskInfo(jobs.QueueReplay, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ti.State == asynq.TaskStateCompleted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a task come due is still %s: the gate did not hear of it", ti.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGateWakeDuringADequeue: a dequeue that finds its queue empty while a
// wake for the queue comes (its task enqueued just after Redis answered)
// does not mark the queue empty: the next dequeue asks Redis, rather than
// the gate hiding the task until the queue's turn (seen: a no-op job's p99
// of 5 s in BenchmarkQueueOverhead).
func TestGateWakeDuringADequeue(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"replay", "collect"}, 10*time.Minute)
	c := gatedRedis{g: g}
	keys := []string{pendingKey("replay"), "asynq:{replay}:paused", "asynq:{replay}:active", "asynq:{replay}:lease"}
	err := c.dequeue(context.Background(), keys, true, only(func() *redis.Cmd {
		g.wakeQueue(pendingKey("replay")) // the enqueue and its wake, while Redis answers
		return redis.NewCmdResult(nil, redis.Nil)
	})).Err()
	if err != redis.Nil {
		t.Fatalf("dequeue: %v, want redis.Nil", err)
	}
	if g.known(pendingKey("replay")) {
		t.Error("a queue woken during its dequeue was marked empty by the dequeue's older answer")
	}
	if err := c.dequeue(context.Background(), keys, true, only(func() *redis.Cmd { return redis.NewCmdResult(aTask, nil) })).Err(); err != nil {
		t.Errorf("the next dequeue: %v, want the task from Redis", err)
	}
}

// TestGateWokenWhenItsSubscriptionIsMadeAgain: the wakes published while
// the wake subscription's connection is down are lost, so the subscription
// made again wakes every queue.
func TestGateWokenWhenItsSubscriptionIsMadeAgain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // a server of the test's own: it kills the subscription's connection
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	g := newGate([]string{"a"}, time.Hour)
	stop := listenForWakes(t.Context(), rdb, g)
	t.Cleanup(stop)
	subscribed := func() bool {
		n, err := rdb.PubSubNumSub(t.Context(), wakeChannel).Result()
		return err == nil && n[wakeChannel] == 1
	}
	for deadline := time.Now().Add(10 * time.Second); !subscribed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gate never subscribed to its wakes")
		}
	}
	// The first subscription wakes the gate too, maybe after the count
	// shows it: the queue is found empty again until it stays so.
	for deadline := time.Now().Add(10 * time.Second); !g.known(pendingKey("a")); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a queue found empty is not taken for empty")
		}
		g.after(pendingKey("a"), redis.Nil, epochOf(g))
	}
	time.Sleep(100 * time.Millisecond)
	if !g.known(pendingKey("a")) {
		t.Fatal("the gate was woken with nothing said")
	}
	if err := rdb.ClientKillByFilter(t.Context(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); g.known(pendingKey("a")); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscription made again did not wake the gate")
		}
	}
}

// only is a dequeue call that answers call's answer, without the queue's
// length.
func only(call func() *redis.Cmd) dequeueCall {
	return func() (*redis.Cmd, *redis.IntCmd) { return call(), nil }
}

// TestGateKnowsALastTaskFetched (issue 27): a dequeue that fetched its
// queue's last task (the pending list's length, read in its round trip
// after it, is 0) marks the queue empty, so that Asynq's next dequeue of
// it is answered by the gate instead of a round trip and a script that
// find nothing, beside every replay's handler; unless a wake for the queue
// came meanwhile (its task was enqueued after the length was read), or
// the length is not known. A dequeue that leaves tasks behind marks
// nothing.
func TestGateKnowsALastTaskFetched(t *testing.T) {
	t.Parallel()
	g := newGate([]string{"replay", "collect"}, 10*time.Minute)
	c := gatedRedis{g: g}
	keys := []string{pendingKey("replay"), "asynq:{replay}:paused", "asynq:{replay}:active", "asynq:{replay}:lease"}
	fetch := func(left *redis.IntCmd, during func()) {
		t.Helper()
		err := c.dequeue(context.Background(), keys, true, func() (*redis.Cmd, *redis.IntCmd) {
			if during != nil {
				during()
			}
			return redis.NewCmdResult(aTask, nil), left
		}).Err()
		if err != nil {
			t.Fatalf("dequeue: %v, want the task", err)
		}
	}
	fetch(redis.NewIntResult(2, nil), nil)
	if g.known(pendingKey("replay")) {
		t.Error("a dequeue that left two tasks behind marked its queue empty")
	}
	fetch(redis.NewIntResult(0, nil), nil)
	if !g.known(pendingKey("replay")) {
		t.Error("a dequeue that fetched the queue's last task left it to be asked again")
	}
	g.handled() // a handler returned: what came meanwhile unannounced is fetched
	if g.known(pendingKey("replay")) {
		t.Error("a queue whose last task was fetched was still marked empty after a handler returned")
	}
	if err := c.dequeue(context.Background(), keys, true, only(func() *redis.Cmd { return redis.NewCmdResult(nil, redis.Nil) })).Err(); err != redis.Nil {
		t.Fatalf("dequeue: %v, want redis.Nil", err)
	}
	g.handled()
	if !g.known(pendingKey("replay")) {
		t.Error("a queue a dequeue found empty was asked again after a handler returned")
	}
	g.wakeQueue(pendingKey("replay"))
	fetch(redis.NewIntResult(0, nil), func() { g.wakeQueue(pendingKey("replay")) })
	if g.known(pendingKey("replay")) {
		t.Error("a queue woken during the dequeue of its last task was marked empty")
	}
	// A handler returning while the last task's dequeue is under way
	// cleared nothing yet: a mark set after it would outlive the slot it
	// freed, and the dequeue that slot's freeing lets go be answered empty.
	fetch(redis.NewIntResult(0, nil), g.handled)
	if g.known(pendingKey("replay")) {
		t.Error("a queue whose last task was fetched while a handler returned was marked empty")
	}
	fetch(redis.NewIntResult(0, errors.New("no answer")), nil)
	fetch(nil, nil)
	if g.known(pendingKey("replay")) {
		t.Error("a queue whose length was not read was marked empty")
	}
}

// TestUnannouncedTaskAfterABusySlot: a task enqueued without a wake (an
// old client, another worker's forwarder moving a retry, a stopping
// worker handing tasks back, the collector's resolutions, the monitoring
// UI's "run") while every slot of a worker is busy starts once a slot
// frees, as Asynq alone would start it: the dequeue that fetched the
// queue's last task, before it came, marked the queue empty only until a
// handler returns. It waited for the gate's turn (idlePoll, here set
// long), the dequeue after the handler answered by the gate.
func TestUnannouncedTaskAfterABusySlot(t *testing.T) {
	t.Parallel()
	const typ = "test:busy"
	// The gate's turns come far later than this test waits: only a
	// dequeue that goes to Redis finds the task.
	const idle = 10 * time.Minute
	started, release := make(chan string, 2), make(chan struct{})
	rdb, client, ctx := runTaskWith(t, typ, Config{Concurrency: 1}, func(srv *Server) {
		srv.gate.idle = idle
		srv.gate.next.Store(int64(idle))
	}, func(ctx context.Context, p []byte) (any, error) {
		started <- string(p)
		if string(p) == "a" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return "done", nil
	})

	ran := make(chan error, 1)
	go func() {
		_, _, err := client.Run(ctx, Job{Type: typ, Queue: jobs.QueueReplay, Payload: []byte("a")}, "test", time.Minute)
		ran <- err
	}()
	select {
	case p := <-started:
		if p != "a" {
			t.Fatalf("task %q started, want a", p)
		}
	case <-ctx.Done():
		t.Fatal("the announced task did not start")
	}
	plain := asynq.NewClientFromRedisClient(rdb)
	if _, err := plain.EnqueueContext(ctx, asynq.NewTask(typ, []byte("b")), asynq.Queue(jobs.QueueReplay)); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-ran; err != nil {
		t.Fatalf("the announced task: %v", err)
	}
	wait := time.NewTimer(20 * time.Second) // far short of the gate's turn
	defer wait.Stop()
	select {
	case p := <-started:
		if p != "b" {
			t.Fatalf("task %q started, want b", p)
		}
	case <-wait.C:
		t.Fatalf("a task enqueued without a wake while the worker's only slot was busy had not started 20 s after the slot freed (the gate's turn: %v)", idle)
	}
}

// TestGateAsksAgainBehindAGoneTask: Asynq's dequeue answers nil for a
// pending id whose task's hash is gone (taking it off the list all the
// same); the gate, seeing tasks still pending behind it (the length read
// in the dequeue's round trip), lets the next dequeue fetch them, where it
// marked the queue empty and they waited for its turn (idlePoll, here set
// long). A paused queue, whose dequeue answers nil too, is still marked
// empty: asked again at once it would be asked without end.
func TestGateAsksAgainBehindAGoneTask(t *testing.T) {
	t.Parallel()
	const typ = "test:behind"
	const idle = 10 * time.Minute
	started := make(chan string, 2)
	rdb, client, ctx := runTaskWith(t, typ, Config{}, func(srv *Server) {
		srv.gate.idle = idle
		srv.gate.next.Store(int64(idle))
	}, func(_ context.Context, p []byte) (any, error) {
		started <- string(p)
		return "done", nil
	})
	// A first job: the worker is up and its gate has found every other
	// queue empty.
	if _, _, err := client.Run(ctx, Job{Type: typ, Queue: jobs.QueueReplay, Payload: []byte("first")}, "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	<-started
	// A task whose hash is gone, fetched first, and one behind it; then
	// a wake for the queue.
	if err := rdb.LPush(ctx, pendingKey(jobs.QueueReplay), "gone-"+t.Name()).Err(); err != nil {
		t.Fatal(err)
	}
	plain := asynq.NewClientFromRedisClient(rdb)
	if _, err := plain.EnqueueContext(ctx, asynq.NewTask(typ, []byte("behind")), asynq.Queue(jobs.QueueReplay)); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, wakeChannel, jobs.QueueReplay).Err(); err != nil {
		t.Fatal(err)
	}
	wait := time.NewTimer(20 * time.Second) // far short of the gate's turn
	defer wait.Stop()
	select {
	case p := <-started:
		if p != "behind" {
			t.Fatalf("task %q started, want behind", p)
		}
	case <-wait.C:
		t.Fatalf("a task pending behind one whose hash is gone had not started 20 s after the wake (the gate's turn: %v)", idle)
	}

	// A paused queue with a task pending: its dequeue answers nil, and it
	// is marked empty.
	g := gatedRedis{UniversalClient: rdb, g: newGate([]string{"paused"}, time.Hour)}
	keys := []string{pendingKey("paused"), "asynq:{paused}:paused", "asynq:{paused}:active", "asynq:{paused}:lease"}
	rdb.LPush(ctx, keys[0], "an-id")
	rdb.Set(ctx, keys[1], "1", 0)
	nothing := func(r redis.Scripter) *redis.Cmd { return r.Eval(ctx, "return nil", keys) }
	if err := g.dequeue(ctx, keys, true, g.sized(ctx, keys, nothing)).Err(); err != redis.Nil {
		t.Fatalf("dequeue of a paused queue: %v, want redis.Nil", err)
	}
	if !g.g.known(keys[0]) {
		t.Error("a paused queue with a task pending was not marked empty: it would be asked without end")
	}
}

// epochOf is the gate's count of wakes so far (counts), for after.
func epochOf(g *gate) uint64 {
	epoch, _ := g.counts()
	return epoch
}
