package worker

import (
	"context"
	"fmt"
	"time"

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

// writeOutcome writes a finished task's outcome as its retained result
// (what Asynq's ResultWriter writes: the task hash's result field) and
// announces it to the api processes waiting for it, in one round trip: a
// transaction (MULTI/EXEC) of the write, then the announcement, so that
// the request waiting for it hears only of an outcome already kept (a
// write Redis refuses, out of memory or read-only after a failover, aborts
// the announcement with it). Once begun, a round trip is not cut short by
// the task's context: a deadline landing in it must not take a result
// Redis kept for one it lost. Both are tried again while Redis fails (a
// failover), for two reasons.
//
// The result failing to be written would fail the task, which Asynq
// retries only 15-45 s later, while the request that waits for it, or GET
// /v1/jobs/{id} after its 504, would wait as long: written is false then,
// and the task fails.
//
// The announcement, besides sparing the waiting request its fallback
// poll, hands the task back to Asynq only once Redis answers again:
// Asynq's own retry of a failed completion reuses a context it has
// cancelled (asynq v0.26 processor.markAsComplete), so a completion that
// meets the failover is lost, and the task stays active until its lease
// lapses and the recoverer, which looks once a minute, runs it again. An
// announcement heard twice is harmless: a waiter takes the first. One
// that fails still leaves the result written (err is the announcement's).
// outcomeWriteTimeout bounds one round trip of writeOutcome.
const outcomeWriteTimeout = 5 * time.Second

func writeOutcome(ctx context.Context, rdb redis.UniversalClient, queue, id string, data []byte) (written bool, err error) {
	deadline := time.Now().Add(failoverWindow)
	backoff := 50 * time.Millisecond
	for {
		if err := ctx.Err(); err != nil { // as the ResultWriter refuses a task that ran out of time
			return written, fmt.Errorf("write the outcome of task %s: %w", id, err)
		}
		var write, fields, announce *redis.IntCmd
		key := taskKey(queue, id)
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeWriteTimeout)
		_, err = rdb.TxPipelined(tctx, func(p redis.Pipeliner) error {
			write = p.HSet(tctx, key, "result", data)
			fields = p.HLen(tctx, key)
			announce = p.Publish(tctx, doneChannelPrefix+id, data)
			return nil
		})
		if err == nil && fields.Val() == 1 {
			// The task was gone, lost with Redis (a restart without
			// persistence, a failover) while it ran, and the write made a
			// hash of the result alone. Asynq takes it for the task: the
			// id is taken and its state unreadable, so every identical job
			// was refused (503) for as long as Redis kept it, for ever.
			// The announcement stands for whoever waits.
			if dErr := rdb.Del(tctx, key).Err(); dErr != nil {
				err = fmt.Errorf("remove the result of lost task %s: %w", id, dErr)
			}
		}
		cancel()
		written = written || write.Err() == nil
		if err == nil || time.Now().Add(backoff).After(deadline) {
			if err != nil {
				err = fmt.Errorf("write the outcome of task %s: %w", id, err)
			}
			if written && announce.Err() != nil {
				err = fmt.Errorf("announce the outcome of task %s: %w", id, announce.Err())
			}
			return written, err
		}
		select {
		case <-ctx.Done():
			return written, fmt.Errorf("write the outcome of task %s: %w", id, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
