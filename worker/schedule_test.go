package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestResolutionRescheduledAfterArchive: a resolution whose retries ran out
// (archived) does not block the market: scheduling it again queues it.
func TestResolutionRescheduledAfterArchive(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	sched := worker.NewResolutionScheduler(rdb)
	ctx := context.Background()
	const slug = "btc-updown-5m-1777467600"
	if err := sched.ScheduleResolution(ctx, slug, time.Hour); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	id := worker.ResolutionTaskID(slug)
	// Scheduling again while it waits changes nothing.
	if err := sched.ScheduleResolution(ctx, slug, 0); err != nil {
		t.Fatal(err)
	}
	if info, err := insp.GetTaskInfo(jobs.QueueCollect, id); err != nil || info.State != asynq.TaskStateScheduled {
		t.Fatalf("before archiving: %v %v", info, err)
	}
	if err := insp.ArchiveTask(jobs.QueueCollect, id); err != nil {
		t.Fatal(err)
	}
	if err := sched.ScheduleResolution(ctx, slug, 0); err != nil {
		t.Fatal(err)
	}
	info, err := insp.GetTaskInfo(jobs.QueueCollect, id)
	if err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("after rescheduling an archived resolution: %v %v, want pending", info, err)
	}
}
