package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// TestJobAskedAgainAfterItsTaskWasLost: Redis comes back empty (a restart
// without persistence, a failover) while a job runs on a worker, after
// its request answered 504. The worker's outcome then has no task to
// go to: it must not leave a task hash of a result alone behind, which
// Asynq takes for the task (its id is taken) and cannot read (no message,
// no state), so that the same request asked again answered 503 for as
// long as Redis kept the hash: for ever.
func TestJobAskedAgainAfterItsTaskWasLost(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := NewServer(Config{Redis: rdb, Store: memory.New(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	const slow = "test:slow"
	started, finish := make(chan struct{}, 1), make(chan struct{})
	first := true
	srv.mux.HandleFunc(slow, srv.handler(func(ctx context.Context, _ []byte) (any, error) {
		if first {
			first = false
			started <- struct{}{}
			<-finish
		}
		return "done", nil
	}))
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() { scancel(); <-done }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := NewClient(ctx, ClientConfig{Redis: rdb, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	job := Job{Type: slow, Queue: jobs.QueueReplay, Payload: []byte(`{}`)}
	res := make(chan error, 1)
	go func() {
		_, _, err := client.Run(ctx, job, "customer-1", 50*time.Millisecond)
		res <- err
	}()
	<-started
	var te *TimeoutError
	if err := <-res; !errors.As(err, &te) {
		t.Fatalf("the first ask: %v, want a timeout", err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil { // Redis back, empty
		t.Fatal(err)
	}
	close(finish) // the worker finishes the job whose task is gone
	time.Sleep(200 * time.Millisecond)

	o, _, err := client.Run(ctx, job, "customer-1", 20*time.Second)
	if err != nil || o.Failure != nil {
		t.Fatalf("the job asked again after its task was lost: %v %+v", err, o.Failure)
	}
	if data, err := o.Data(); err != nil || string(data) != `"done"` {
		t.Fatalf("the job asked again answered %s %v", data, err)
	}
}
