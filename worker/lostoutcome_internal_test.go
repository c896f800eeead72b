package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
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
	const slow = "test:slow"
	started, finish := make(chan struct{}, 1), make(chan struct{})
	first := true
	rdb, client, ctx := runTask(t, slow, func(ctx context.Context, _ []byte) (any, error) {
		if first {
			first = false
			started <- struct{}{}
			<-finish
		}
		return "done", nil
	})
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
