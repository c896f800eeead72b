package worker

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Redis failing over (DESIGN 1: Sentinel) is a few seconds in which every
// command fails, until the sentinels name the new primary and the clients
// move to it. The work done meanwhile should not be lost to it.

// failoverWindow is how long a write that must not be lost is tried
// again: longer than a Sentinel failover takes (down-after plus the
// election, a few seconds), short enough not to hold a task for long when
// Redis is gone for good.
const failoverWindow = 15 * time.Second

// writeResult writes a finished task's result, trying again while Redis
// fails (a failover): the result failing to be written would fail the
// task, which Asynq retries only 15-45 s later, while the request that
// waits for it, or GET /v1/jobs/{id} after its 504, would wait as long.
func writeResult(ctx context.Context, t *asynq.Task, data []byte) error {
	deadline := time.Now().Add(failoverWindow)
	backoff := 50 * time.Millisecond
	for {
		_, err := t.ResultWriter().Write(data)
		if err == nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// publishDone announces a finished task to the api processes waiting for
// it, trying again while Redis fails (a failover). Besides sparing the
// waiting request its fallback poll, this hands the task back to Asynq
// only once Redis answers again: Asynq's own retry of a failed completion
// reuses a context it has cancelled (asynq v0.26 processor.markAsComplete),
// so a completion that meets the failover is lost, and the task stays
// active until its lease lapses and the recoverer, which looks once a
// minute, runs it again. An announcement heard twice is harmless: a
// waiter takes the first.
func publishDone(ctx context.Context, rdb redis.UniversalClient, id string, data []byte) error {
	deadline := time.Now().Add(failoverWindow)
	backoff := 50 * time.Millisecond
	for {
		err := rdb.Publish(ctx, doneChannelPrefix+id, data).Err()
		if err == nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
