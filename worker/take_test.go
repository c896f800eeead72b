package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/store/redis/redistest"
)

// TestTakeQueuedTask holds takeScript to Asynq's layout of a queue: a
// pending task or one waiting to be retried is taken off its queue, and
// Asynq no longer knows it; a scheduled, running or finished one is left
// as it is, and one that never was is gone.
func TestTakeQueuedTask(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := t.Context()
	const queue = "take-test"
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	enqueue := func(id string, opts ...asynq.Option) {
		t.Helper()
		opts = append([]asynq.Option{asynq.TaskID(id), asynq.Queue(queue), asynq.Retention(time.Hour), asynq.MaxRetry(5)}, opts...)
		if _, err := client.EnqueueContext(ctx, asynq.NewTask("take:"+id, nil), opts...); err != nil {
			t.Fatal(err)
		}
	}
	state := func(id string) string {
		t.Helper()
		info, err := insp.GetTaskInfo(queue, id)
		if errors.Is(err, asynq.ErrTaskNotFound) {
			return "unknown to Asynq"
		}
		if err != nil {
			t.Fatal(err)
		}
		return info.State.String()
	}
	until := func(id, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); state(id) != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("task %s is %s, never %s", id, state(id), want)
			}
		}
	}

	// A server that fails "retry" (to be retried in an hour) and
	// "archived" (no retries left), holds "active" until released, and
	// completes "completed".
	release := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("take:retry", func(context.Context, *asynq.Task) error { return errors.New("try again") })
	mux.HandleFunc("take:archived", func(context.Context, *asynq.Task) error { return errors.New("no more") })
	mux.HandleFunc("take:active", func(ctx context.Context, _ *asynq.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	mux.HandleFunc("take:completed", func(context.Context, *asynq.Task) error { return nil })
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Queues: map[string]int{queue: 1}, Concurrency: 4,
		TaskCheckInterval: time.Millisecond, LogLevel: asynq.FatalLevel,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return time.Hour }})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	defer close(release)
	enqueue("retry")
	enqueue("active")
	enqueue("completed")
	enqueue("archived", asynq.MaxRetry(0))
	until("retry", "retry")
	until("archived", "archived")
	until("active", "active")
	until("completed", "completed")
	srv.Stop() // no more dequeues: what is enqueued now stays pending
	enqueue("pending")
	enqueue("scheduled", asynq.ProcessIn(time.Hour))

	for _, tc := range []struct {
		id, answer, after string
		retried           int
	}{
		{"pending", taken, "unknown to Asynq", 0},
		{"retry", takenRetry, "unknown to Asynq", 1}, // its one failed try
		{"scheduled", "scheduled", "scheduled", 0},
		{"active", "active", "active", 0},
		{"completed", "completed", "completed", 0},
		{"archived", "archived", "archived", 0},
		{"never", gone, "unknown to Asynq", 0},
		{"pending", gone, "unknown to Asynq", 0}, // taken already
	} {
		got, retried, err := take(ctx, rdb, queue, tc.id)
		if err != nil || got != tc.answer || retried != tc.retried {
			t.Errorf("take %s: %q, %d retried, %v; want %q, %d", tc.id, got, retried, err, tc.answer, tc.retried)
		}
		if s := state(tc.id); s != tc.after {
			t.Errorf("after take, %s is %s, want %s", tc.id, s, tc.after)
		}
	}
	q, err := insp.GetQueueInfo(queue)
	if err != nil {
		t.Fatal(err)
	}
	if q.Pending != 0 || q.Retry != 0 || q.Scheduled != 1 || q.Active != 1 || q.Completed != 1 || q.Archived != 1 {
		t.Errorf("queue after the takes: %+v", q)
	}
}
