package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
)

// TestPanickingTaskAnswersAtOnce: a task whose work panics (a bug) is
// answered 500 INTERNAL_ERROR at once, as the api answers its own panics
// (DESIGN 5), and not retried: Asynq retried it after 15-45 s and longer
// each time, so the request waited out JOB_WAIT for a 504, and GET
// /v1/jobs/{id} said "retry" for minutes, the customer's job slot held,
// before the same panic's INTERNAL_ERROR.
func TestPanickingTaskAnswersAtOnce(t *testing.T) {
	t.Parallel()
	const panics = "test:panics"
	rdb, client, ctx := runTask(t, panics, func(context.Context, []byte) (any, error) {
		var buf []byte
		return buf[len(buf)+1], nil // a bug: an index out of range panics
	})
	// A generous wait: what tells a retry is the task's count of retries
	// below, not how soon it answered.
	o, id, err := client.Run(ctx, Job{Type: panics, Queue: jobs.QueueReplay, Payload: []byte(`{}`)}, "customer-1", 2*time.Minute)
	var te *TimeoutError
	if errors.As(err, &te) {
		t.Fatalf("a panicking task was never answered: its outcome waits on retries")
	}
	if err != nil || o.Failure == nil || o.Failure.Code != "INTERNAL_ERROR" {
		t.Fatalf("a panicking task answered %+v, %v; want INTERNAL_ERROR", o.Failure, err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for {
		info, err := insp.GetTaskInfo(jobs.QueueReplay, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State == asynq.TaskStateArchived {
			if info.Retried != 0 {
				t.Errorf("the panicking task was retried %d times", info.Retried)
			}
			break
		}
		if info.State != asynq.TaskStateActive || ctx.Err() != nil {
			t.Fatalf("the panicking task is %v, want archived without a retry", info.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, err := client.Status(ctx, id, "customer-1")
	if err != nil || st.State != "failed" || st.Outcome == nil || st.Outcome.Failure == nil || st.Outcome.Failure.Code != "INTERNAL_ERROR" {
		t.Errorf("GET /v1/jobs/{id} of the panicking task: %+v %v", st, err)
	}
}
