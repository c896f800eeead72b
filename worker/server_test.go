package worker_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestServerProcessesTasks runs a real Asynq server on a real redis-server
// and checks a task is consumed and its result retained.
func TestServerProcessesTasks(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	runServer(t, worker.Config{Redis: rdb, Store: memory.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	client := asynq.NewClientFromRedisClient(rdb)
	info, err := client.Enqueue(asynq.NewTask(jobs.TypePing, nil), asynq.Queue(jobs.QueueReplay), asynq.Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(patience(t))
	for time.Now().Before(deadline) {
		ti, err := insp.GetTaskInfo(jobs.QueueReplay, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ti.State == asynq.TaskStateCompleted {
			if string(ti.Result) != `{"result":"pong"}` {
				t.Fatalf("result %q, want pong", ti.Result)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("ping task not completed within 10s")
}

// awaitCompleted waits until Asynq has completed the task id of queue and
// returns its info; the test fails if the task is archived (a failure) or
// still not done past patience. what names the task in the failures.
func awaitCompleted(t *testing.T, rdb redis.UniversalClient, queue, id, what string) *asynq.TaskInfo {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(patience(t))
	for {
		info, err := insp.GetTaskInfo(queue, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case info.State == asynq.TaskStateCompleted:
			return info
		case info.State == asynq.TaskStateArchived:
			t.Fatalf("%s was archived as a failure (%s)", what, info.LastErr)
		case time.Now().After(deadline):
			t.Fatalf("%s did not finish: %s", what, info.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// patience is how long a test waits for what must happen (a task to
// start, a job to be answered): until the test's own deadline (go test
// -timeout) less a minute for its report, so that a busy machine slows a
// test down and does not fail it; an hour without a deadline.
func patience(t *testing.T) time.Duration {
	if d, ok := t.Deadline(); ok {
		return max(time.Until(d)-time.Minute, time.Second)
	}
	return time.Hour
}

// runServer runs a worker server with cfg until the test ends, and fails
// the test if it ends with an error.
func runServer(t *testing.T, cfg worker.Config) {
	t.Helper()
	srv, err := worker.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// startWorker runs a worker server with cfg until the test ends and
// returns a client on the same Redis.
func startWorker(t *testing.T, cfg worker.Config) *worker.Client {
	t.Helper()
	w, err := worker.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := worker.NewClient(t.Context(), worker.ClientConfig{Redis: cfg.Redis, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrips records, per round trip to Redis (a command, or a pipeline),
// the commands of it that write or announce a task's outcome.
type roundTrips struct {
	mu    sync.Mutex
	trips [][]string
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds)
		return next(ctx, cmds)
	}
}

func (h *roundTrips) record(cmds []redis.Cmder) {
	var trip []string
	for _, cmd := range cmds {
		args := cmd.Args()
		if len(args) < 2 {
			continue
		}
		key, _ := args[1].(string)
		switch name := strings.ToLower(cmd.Name()); {
		case name == "hset" && strings.HasPrefix(key, "asynq:{") && strings.Contains(key, "}:t:"),
			name == "publish" && strings.HasPrefix(key, "updown:done:"):
			trip = append(trip, name+" "+key)
		}
	}
	if trip != nil {
		h.mu.Lock()
		h.trips = append(h.trips, trip)
		h.mu.Unlock()
	}
}

// TestOutcomeWrittenAndAnnouncedInOneRoundTrip (issue 27): a finished
// task's outcome is kept as its result and announced to the waiting api in
// one round trip to Redis, the write first, and the waiting request gets it.
func TestOutcomeWrittenAndAnnouncedInOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	var rt roundTrips
	rdb.AddHook(&rt)
	c := startWorker(t, worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog()})
	o, id, err := c.Run(t.Context(), worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(`{}`)}, "customer-1", 10*time.Second)
	if err != nil || o.Failure != nil || string(o.Result) != `"pong"` {
		t.Fatalf("ping: %s %+v %v", o.Result, o.Failure, err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	want := []string{"hset asynq:{" + jobs.QueueReplay + "}:t:" + id, "publish updown:done:" + id}
	if len(rt.trips) != 1 || !slices.Equal(rt.trips[0], want) {
		t.Errorf("round trips writing or announcing the outcome: %q, want one: %q", rt.trips, want)
	}
}
