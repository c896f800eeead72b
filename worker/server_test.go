package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"

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
	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: memory.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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

	client := asynq.NewClientFromRedisClient(rdb)
	info, err := client.Enqueue(asynq.NewTask(jobs.TypePing, nil), asynq.Queue(jobs.QueueReplay), asynq.Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(10 * time.Second)
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

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

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
