package worker_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// dequeueCounter counts Asynq's dequeue scripts (the calls whose first key
// is a queue's pending list) on a Redis client.
type dequeueCounter struct{ n atomic.Int64 }

func (c *dequeueCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *dequeueCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *dequeueCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			if k, ok := a[3].(string); ok && strings.HasSuffix(k, ":pending") {
				c.n.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}

// TestIdleWorkerDoesNotPoll: a worker with nothing to do looks at its
// queues about once a second, not a thousand times (Asynq's 1 ms task
// check), and a job enqueued through the Client still starts at once:
// the Client wakes the idle workers. Measured: the dequeue calls an idle
// worker makes, and the enqueue-to-result time of a job sent to a worker
// that has been idle for longer than its fallback poll.
func TestIdleWorkerDoesNotPoll(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	var count dequeueCounter
	rdb.AddHook(&count)
	w, err := worker.NewServer(worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	time.Sleep(300 * time.Millisecond) // started, and idle
	before := count.n.Load()
	const idle = 3 * time.Second
	time.Sleep(idle)
	polls := count.n.Load() - before
	perSecond := float64(polls) / idle.Seconds()
	t.Logf("idle worker: %d dequeue calls in %v (%.1f/s)", polls, idle, perSecond)
	// Four queues looked at about once a second; Asynq's own 1 ms check
	// makes it about 4,000.
	if perSecond > 20 {
		t.Errorf("an idle worker made %.0f dequeue calls a second", perSecond)
	}

	var worst time.Duration
	for i := range 3 {
		time.Sleep(1200 * time.Millisecond) // past the fallback poll: only a wake is quick
		j := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(strconv.Itoa(i) + t.Name())}
		start := time.Now()
		if _, _, err := c.Run(ctx, j, "test", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("enqueue to result after idling: slowest of 3 %v", worst)
	if worst > 250*time.Millisecond {
		t.Errorf("a job sent to an idle worker took %v: the wake did not reach it", worst)
	}
}

// TestAnnouncedJobAsksItsQueue (issues 24 and 27): a job announced to an
// idle worker costs about two dequeue calls to Redis: its queue asked
// first, and once more after its task was fetched; the other queues,
// found empty and not woken, are answered by the gate. A wake used to send
// a round of every queue to Redis, in Asynq's shuffled order before and
// after the task: about seven calls, each a round trip on a replay's path.
func TestAnnouncedJobAsksItsQueue(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	var count dequeueCounter
	rdb.AddHook(&count)
	c := startWorker(t, worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog()})
	time.Sleep(300 * time.Millisecond) // started, and idle
	const jobsRun = 20
	before := count.n.Load()
	start := time.Now()
	for i := range jobsRun {
		j := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(strconv.Itoa(i) + t.Name())}
		if _, _, err := c.Run(t.Context(), j, "test", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	calls := count.n.Load() - before
	// The gate's turns ask one queue found empty a second besides.
	turns := int64(time.Since(start)/time.Second) + 1
	t.Logf("%d jobs: %d dequeue calls (turns allowed: %d)", jobsRun, calls, turns)
	if calls > 2*jobsRun+turns {
		t.Errorf("%d announced jobs cost %d dequeue calls, want at most %d", jobsRun, calls, 2*jobsRun+turns)
	}
}
