package worker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store"
)

// TestRetryDelayOfAStoreOutage: a task a request waits on (a replay, a
// backtest) whose store was unreachable is retried after 1, 4, 16 s, then
// 30 s at most, not after Asynq's 15-45 s; other failures, and tasks
// nobody waits on, keep Asynq's delays. The delays chosen are asserted,
// not how long a retry took (TestReplayRetriesAStoreOutageSoon checks
// that one happens).
func TestRetryDelayOfAStoreOutage(t *testing.T) {
	down := fmt.Errorf("load market m: %w: connection refused", store.ErrUnavailable)
	for _, typ := range []string{jobs.TypeReplay, backtest.TaskType, backtest.GroupType, backtest.ShardType} {
		task := asynq.NewTask(typ, nil)
		for n, want := range []time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second} {
			if got := retryDelay(n, down, task); got != want {
				t.Errorf("%s, retry %d of a store outage: %v, want %v", typ, n, got, want)
			}
		}
		if got := retryDelay(0, errors.New("a bug"), task); got < 15*time.Second {
			t.Errorf("%s, another failure: %v, want Asynq's 15 s or more", typ, got)
		}
	}
	if got := retryDelay(0, down, asynq.NewTask(jobs.TypeResolve, nil)); got < 15*time.Second {
		t.Errorf("a resolution nobody waits on, its store down: %v, want Asynq's 15 s or more", got)
	}
	if got := retryDelay(3, asynq.ErrLeaseExpired, asynq.NewTask(jobs.TypeReplay, nil)); got != 0 {
		t.Errorf("a task whose worker died: %v, want 0", got)
	}
}
