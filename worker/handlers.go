package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// work is a task's job once its payload is decoded: a result to encode, a
// *jobs.Failure to answer, a *refusal, or an error worth a retry.
type work func(ctx context.Context, payload []byte) (any, error)

// refusal is an answer that refuses the user's input after judging it (a
// prompt the generator cannot read): the task did its work, so it
// completes rather than fails, and Asynq counts it as processed, not in
// the queue's failed count or error rate (issue 16). A *jobs.Failure, by
// contrast, is archived with SkipRetry and counts as failed.
type refusal struct{ failure *jobs.Failure }

func (r *refusal) Error() string { return r.failure.Error() }

// partial is the result of work some parts of which failed on every
// attempt (a backtest shard's markets on its last try), their failures in
// it: the result is the task's outcome, as a result, and the task is
// archived, not completed, so that a later job runs it again (Client's
// submit) rather than reuse failures that may have passed since.
type partial struct {
	result any
	failed int
}

func (p *partial) Error() string {
	return fmt.Sprintf("%d part(s) of the result failed on every attempt", p.failed)
}

// handler wraps work with what every task does when it ends: write the
// outcome as the task's retained result, announce it on Redis for the
// waiting request, and tell Asynq whether a retry can help.
func (s *Server) handler(w work) asynq.HandlerFunc { return s.handle(w, false) }

// onceHandler is handler for work that must not be done twice for one
// task: a generation, whose model answers differently each time and costs
// the operator each call; a backtest batch and its shards, which replay
// up to 100 markets and whose report may differ when run later. Asynq runs a task again when it could not mark
// it done after its outcome was written (a worker killed or cut off from
// Redis in between: the lease lapses; a shutdown that outlasted its
// timeout: the task is requeued; a deadline landing as the handler
// returned). Run again, the task answers the outcome already written,
// which the waiting request (or GET /v1/jobs/{id}) has already been
// given and the customer's quota settled on, rather than ask the model
// for another.
func (s *Server) onceHandler(w work) asynq.HandlerFunc { return s.handle(w, true) }

func (s *Server) handle(w work, once bool) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) (err error) {
		start := time.Now()
		refused, failed, kept := false, false, false
		defer func() {
			outcome := "ok"
			if refused {
				outcome = "refused"
			}
			if err != nil {
				outcome = "error"
				if errors.Is(err, asynq.SkipRetry) && !failed {
					outcome = "refused"
				}
			}
			if kept {
				outcome = "kept" // run again, it answered the outcome written
			}
			s.metrics.observe(t.Type(), outcome, time.Since(start))
		}()
		if once {
			var done bool
			if done, err = s.keptOutcome(ctx, t); done {
				kept = err == nil || errors.Is(err, asynq.SkipRetry)
				return err
			}
		}
		if h := t.Headers(); len(h) > 0 {
			ctx = context.WithValue(ctx, headersKey{}, h)
		}
		v, err := runWork(ctx, w, t.Payload())
		var f *jobs.Failure
		var r *refusal
		var p *workPanic
		var part *partial
		switch {
		case errors.As(err, &p):
			// A bug: the same input would panic again, so the request is
			// answered now rather than after Asynq's retries (minutes).
			failed = true
			id, _ := asynq.GetTaskID(ctx)
			s.log.ErrorContext(ctx, "task panicked", "type", t.Type(), "task_id", id, "panic", p.value, "stack", string(p.stack))
			return s.finish(ctx, t, jobs.Outcome{Failure: &jobs.Failure{Code: "INTERNAL_ERROR", Message: "the job failed with an internal error, logged on the worker"}},
				fmt.Errorf("%w: %w", err, asynq.SkipRetry))
		case errors.As(err, &r):
			refused = true
			return s.finish(ctx, t, jobs.Outcome{Failure: r.failure, Refused: true}, nil)
		case errors.As(err, &part):
			failed = true
			raw, mErr := s.results.encode(part.result)
			defer s.results.put(raw)
			if mErr != nil {
				return s.finish(ctx, t, jobs.Outcome{Failure: &jobs.Failure{Code: "INTERNAL_ERROR", Message: "the result could not be encoded"}},
					fmt.Errorf("encode result: %w: %w", mErr, asynq.SkipRetry))
			}
			return s.finish(ctx, t, jobs.Outcome{Result: raw}, fmt.Errorf("%w: %w", err, asynq.SkipRetry))
		case err == nil:
			raw, mErr := s.results.encode(v)
			defer s.results.put(raw) // the outcome holds no reference once finish returns
			if mErr != nil {
				return s.finish(ctx, t, jobs.Outcome{Failure: &jobs.Failure{Code: "INTERNAL_ERROR", Message: "the result could not be encoded"}},
					fmt.Errorf("encode result: %w: %w", mErr, asynq.SkipRetry))
			}
			return s.finish(ctx, t, jobs.Outcome{Result: raw}, nil)
		case errors.As(err, &f):
			return s.finish(ctx, t, jobs.Outcome{Failure: f}, fmt.Errorf("%w: %w", err, asynq.SkipRetry))
		case ctx.Err() != nil:
			return err // shutting down or timed out: Asynq requeues it
		default:
			if lastAttempt(ctx) {
				return s.finish(ctx, t, jobs.Outcome{Failure: exhausted(err)}, err)
			}
			return err
		}
	}
}

// workPanic is the error of work that panicked, with what it panicked
// with and where.
type workPanic struct {
	value any
	stack []byte
}

func (p *workPanic) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// runWork runs w, turning a panic into a *workPanic.
func runWork(ctx context.Context, w work, payload []byte) (v any, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = &workPanic{value: x, stack: debug.Stack()}
		}
	}()
	return w(ctx, payload)
}

// jsonAppender is a result that writes its own JSON: faster than
// json.Marshal (replay.Result: an answer can run to megabytes), or as the
// api answers it (backtest.Report, its conditions' < and > unescaped).
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// resultBuffers recycles the buffers results are written into. A replay's
// answer runs to hundreds of kilobytes, and on a fresh buffer each time
// the page faults of new memory cost as much as writing it.
type resultBuffers struct{ pool sync.Pool }

// maxPooledResult bounds the buffers kept: a rare 24hr answer of many
// megabytes is left to the collector.
const maxPooledResult = 8 << 20

// encode writes a task's result as JSON: into a recycled buffer when the
// result writes itself, else with encoding/json.
func (r *resultBuffers) encode(v any) ([]byte, error) {
	a, ok := v.(jsonAppender)
	if !ok {
		return json.Marshal(v)
	}
	var buf []byte
	if b, ok := r.pool.Get().(*[]byte); ok {
		buf = *b
	}
	return a.AppendJSON(buf[:0])
}

// put keeps b for a later result. Its contents must no longer be used:
// Outcome.Encode copies or compresses a result, and nothing else keeps it.
func (r *resultBuffers) put(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledResult {
		return
	}
	b = b[:0]
	r.pool.Put(&b)
}

// exhausted is the failure a job answers once its last attempt failed
// with err, an error worth a retry.
func exhausted(err error) *jobs.Failure {
	if errors.Is(err, store.ErrUnavailable) { // not a bug: the database was down throughout
		return &jobs.Failure{Code: "SERVICE_UNAVAILABLE",
			Message: "the database was unreachable or turned the job away on every attempt; retry with backoff"}
	}
	return &jobs.Failure{Code: "INTERNAL_ERROR", Message: "the job failed on every attempt; try again later"}
}

func lastAttempt(ctx context.Context) bool {
	n, ok1 := asynq.GetRetryCount(ctx)
	max, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= max
}

// keptOutcome finishes a task run again after it wrote its outcome
// (onceHandler): the outcome is written and announced again as it is, and
// the task ends as it would have (a failure is not retried). kept is
// false when the task has written none, and it is to run.
func (s *Server) keptOutcome(ctx context.Context, t *asynq.Task) (kept bool, err error) {
	id := t.ResultWriter().TaskID()
	queue, ok := asynq.GetQueueName(ctx)
	if !ok {
		return false, nil
	}
	data, err := s.rdb.HGet(ctx, taskKey(queue, id), "result").Bytes()
	switch {
	case errors.Is(err, redis.Nil) || err == nil && len(data) == 0:
		return false, nil
	case err != nil:
		// Unknown, it must not be run: tried again later.
		return true, fmt.Errorf("read the outcome task %s may have written: %w", id, err)
	}
	o, err := jobs.DecodeOutcome(data)
	if err != nil {
		s.log.WarnContext(ctx, "a task's written outcome is unreadable; running it again", "task_id", id, "err", err)
		return false, nil
	}
	s.log.InfoContext(ctx, "task run again after its outcome was written: answering that outcome", "type", t.Type(), "task_id", id)
	var taskErr error
	if o.Failure != nil && !o.Refused {
		// Archived, as it was; a refusal completed.
		taskErr = fmt.Errorf("%w: %w", o.Failure, asynq.SkipRetry)
	}
	written, err := writeOutcome(ctx, s.rdb, queue, id, data)
	if !written {
		return true, fmt.Errorf("write result: %w", err)
	}
	if err != nil {
		s.log.WarnContext(ctx, "announce completion", "task_id", id, "err", err)
	}
	return true, taskErr
}

// finish records and announces the outcome, then returns taskErr.
func (s *Server) finish(ctx context.Context, t *asynq.Task, o jobs.Outcome, taskErr error) error {
	data, err := o.Encode()
	if err != nil {
		return fmt.Errorf("encode outcome: %w", err)
	}
	id := t.ResultWriter().TaskID()
	queue, ok := asynq.GetQueueName(ctx)
	if !ok {
		return fmt.Errorf("write result of task %s: its context names no queue", id)
	}
	written, err := writeOutcome(ctx, s.rdb, queue, id, data)
	if !written {
		return fmt.Errorf("write result: %w", err) // retried: the result must be kept
	}
	if err != nil {
		// The waiting api falls back to polling the result; not fatal.
		s.log.WarnContext(ctx, "announce completion", "task_id", id, "err", err)
	}
	return taskErr
}

// replayWork runs TypeReplay.
func (s *Server) replayWork(ctx context.Context, payload []byte) (any, error) {
	var req replay.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, &jobs.Failure{Code: "VALIDATION_ERROR", Message: "undecodable replay payload: " + err.Error()}
	}
	v, err := s.replay(store.WithQueryTimeout(ctx, s.queryTimeout), req)
	if err != nil && ctx.Err() == nil && stalled(err) {
		// Retried after 1, 4 and 16 s, four tries of a server that does
		// not answer outlast the request's wait (JOB_WAIT): it is
		// answered now, as the api answers its own reads of such a
		// server, and the client retries with backoff.
		return nil, &jobs.Failure{Code: "SERVICE_UNAVAILABLE", Message: storeStalled}
	}
	return v, err
}

// storeStalled is the message of a replay whose store did not answer: the
// api's for its own reads of an unavailable store (api.Server's
// storeFailure), which a worker has no request id to add to.
const storeStalled = "the data store is unavailable; retry with backoff"

// stalled reports whether err is a store that did not answer in time (a
// query, a ping or a connection past its bound), as opposed to one that
// refused or dropped the connection (a restart), which is soon back.
func stalled(err error) bool {
	var ne net.Error
	return errors.Is(err, store.ErrUnavailable) &&
		(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout())
}

// replay runs the replay req.
func (s *Server) replay(ctx context.Context, req replay.Request) (any, error) {
	// The market's record and its counts: the count of snapshots sizes the
	// memory budget, and with the count of those dropped tells the cache
	// whether its copy is current. The api sends them as it read them
	// (MarketHeaders); else they are read, in one question.
	m, sc, ok := marketHint(taskHeaders(ctx), req.MarketSlug)
	if !ok {
		var err error
		if m, sc, err = jobs.MarketSeries(ctx, s.store, req.MarketSlug); err != nil {
			return nil, err
		}
	}
	release, err := s.budget.admit(ctx, req.MarketSlug, sc.N)
	if err != nil {
		return nil, err // shutting down or timed out: Asynq requeues it
	}
	defer release()
	return jobs.ReplayMarket(ctx, s.cache.viewOf(s.store, m, sc), m, req)
}
