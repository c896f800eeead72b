package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
)

// BacktestConfig configures multi-market backtests and AI generation.
type BacktestConfig struct {
	// Generator turns prompts into strategies for strategy.TaskType tasks
	// (the built-in generator when nil).
	Generator strategy.Generator
	// ShardTimeout bounds one shard task, a group of markets' replays, on a
	// worker (default 2 min).
	ShardTimeout time.Duration
	// Retention keeps finished shards so that batches sharing a market and
	// strategy, and a batch retried after a crash, reuse them (default
	// 10 min).
	Retention time.Duration
	// PollInterval is how often a waiting batch looks at its unfinished
	// shards in Redis: to pick up shards that went back to the queue, and
	// announcements lost to a reconnect (default 250 ms).
	PollInterval time.Duration
}

// registerBacktest adds the backtest and AI handlers.
func (s *Server) registerBacktest(cfg BacktestConfig) {
	if cfg.Generator == nil {
		cfg.Generator = strategy.Builtin{}
	}
	if cfg.ShardTimeout == 0 {
		cfg.ShardTimeout = 2 * time.Minute
	}
	if cfg.Retention == 0 {
		cfg.Retention = 10 * time.Minute
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	b := &backtester{
		s:   s,
		cfg: cfg,
		// Only submit and finished are used, and they need no completion
		// listener: a batch subscribes to its own shards' channels, for
		// as long as it runs, instead of to every completion for as long
		// as the worker runs.
		jobs: &Client{cfg: ClientConfig{Retention: cfg.Retention}, rdb: s.rdb, log: s.log,
			queue: asynq.NewClientFromRedisClient(s.rdb), insp: asynq.NewInspectorFromRedisClient(s.rdb)},
	}
	// A batch and its shards are done once as a generation is
	// (onceHandler): a batch replays up to 100 markets, a shard up to 25,
	// and a batch's report run again may differ from the one answered (its
	// deadline cut other shards off, a market was corrected meanwhile). A
	// replay (TypeReplay) is left to the handler: run again it answers the
	// same, and a look for its written outcome would cost every replay a
	// Redis round trip on the path a request waits on.
	s.mux.HandleFunc(backtest.TaskType, s.onceHandler(b.batch))
	s.mux.HandleFunc(backtest.GroupType, s.onceHandler(b.shard))
	s.mux.HandleFunc(backtest.ShardType, s.onceHandler(b.olderShard))
	s.mux.HandleFunc(strategy.TaskType, s.onceHandler(b.generate))
}

// backtester runs batches, their shards, and generations.
type backtester struct {
	s    *Server
	cfg  BacktestConfig
	jobs *Client
}

// generate runs strategy.TaskType.
func (b *backtester) generate(ctx context.Context, payload []byte) (any, error) {
	var req strategy.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, &jobs.Failure{Code: strategy.CodeValidation, Message: "undecodable generation payload: " + err.Error()}
	}
	if err := req.Normalize(); err != nil {
		return nil, &jobs.Failure{Code: strategy.CodeValidation, Message: err.Error()}
	}
	spec, err := b.cfg.Generator.Generate(ctx, req)
	var se *strategy.Error
	if errors.As(err, &se) {
		if se.Cause != nil {
			b.s.log.WarnContext(ctx, "strategy generation failed", "code", se.Code, "err", se.Cause)
		}
		f := &jobs.Failure{Code: se.Code, Message: se.Message}
		if se.Code != strategy.CodeGenerationFailed {
			// The prompt was read and refused: the user's error, not the
			// queue's.
			return nil, &refusal{f}
		}
		return nil, f
	}
	if err != nil {
		return nil, err // cancelled: the task goes back to the queue
	}
	return spec, nil
}

// shard runs backtest.GroupType: a group of markets' replays, each through
// the same store reads as POST /v1/replay and the worker's replay cache,
// answering their performance only.
func (b *backtester) shard(ctx context.Context, payload []byte) (any, error) {
	return b.runTaskAll(ctx, backtest.GroupType, payload)
}

// olderShard runs backtest.ShardType, the shards of a batch an older worker
// began: the same replays, a request a market.
func (b *backtester) olderShard(ctx context.Context, payload []byte) (any, error) {
	return b.runTaskAll(ctx, backtest.ShardType, payload)
}

// runTaskAll runs a shard task on a worker: every market's outcome, or an
// error.
func (b *backtester) runTaskAll(ctx context.Context, typ string, payload []byte) (any, error) {
	out, _, err := b.runTask(ctx, typ, payload, lastAttempt(ctx))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runTask runs a shard task's markets (runMarkets), its payload read as
// its type's; last says whether this is the task's last attempt.
func (b *backtester) runTask(ctx context.Context, typ string, payload []byte, last bool) (out []jobs.Outcome, finished int, err error) {
	var group []replay.Request
	if typ == backtest.GroupType {
		var g backtest.ShardGroup
		if err := json.Unmarshal(payload, &g); err != nil {
			return nil, 0, &jobs.Failure{Code: replay.CodeValidation, Message: "undecodable shard payload: " + err.Error()}
		}
		group = g.Requests()
	} else if err := json.Unmarshal(payload, &group); err != nil {
		return nil, 0, &jobs.Failure{Code: replay.CodeValidation, Message: "undecodable shard payload: " + err.Error()}
	}
	return b.runMarkets(ctx, group, last)
}

// runMarkets replays a shard's markets one after the other, and returns
// their outcomes in order. A market whose replay panics fails alone: its
// result is INTERNAL_ERROR (the panic is logged) and the markets that
// share its shard keep theirs, as beside a market without data. (A panic
// left to the task's handler failed every market of the shard, up to 25
// of a 100-market backtest.) An error is a fault worth a retry of the
// whole shard, except on its last attempt (last): the market fails alone
// with the failure the shard's last attempt would have answered
// (exhausted), the others keep their results, and the error is a
// *partial holding them all, where every market of the shard failed with
// it. A store that did not answer in time (stalled) fails the markets
// after it too, untried: each would wait out its bound on a database that
// does not answer, until the shard's deadline cut them all off (one that
// refused, a restart or a lock, is soon past: the others are tried). When
// ctx ends (a shutdown, the shard's or the batch's deadline) its error is
// returned, and out's first finished outcomes are those of the markets
// done before it.
func (b *backtester) runMarkets(ctx context.Context, group []replay.Request, last bool) (out []jobs.Outcome, finished int, err error) {
	st := b.s.cache.view(b.s.store)
	out = make([]jobs.Outcome, len(group))
	var unavailable error // the stalled store's failure that ends the last attempt's replays
	failed := 0
	for i, sh := range group {
		o, rErr := jobs.Outcome{}, unavailable
		if rErr == nil {
			o, rErr = b.runMarket(ctx, st, sh)
		}
		if rErr != nil {
			if !last || ctx.Err() != nil {
				return out, i, rErr
			}
			if unavailable == nil {
				b.s.log.WarnContext(ctx, "backtest market failed on its shard's last attempt", "market", sh.MarketSlug, "err", rErr)
				if stalled(rErr) {
					unavailable = rErr
				}
			}
			o = jobs.Outcome{Failure: exhausted(rErr)}
			failed++
		}
		out[i] = o
	}
	if failed > 0 {
		return out, len(group), &partial{result: out, failed: failed}
	}
	return out, len(group), nil
}

// runMarket is backtest.RunShard, a panic turned into the market's
// INTERNAL_ERROR. The replay holds its market's history as a replay task
// does, so it is admitted against the worker's memory budget as one is
// (membudget.go): a 24hr backtest's shards, one 24hr market each on every
// slot, otherwise held them all at once beside the replays the budget
// admitted.
func (b *backtester) runMarket(ctx context.Context, st store.Store, sh replay.Request) (jobs.Outcome, error) {
	// The whole count, which the cache's check of the market reads again
	// from its view (cachedStore) without asking the store. A count that
	// fails admits nothing: RunShard reads the market and answers for it
	// (MARKET_NOT_FOUND, or a fault worth a retry).
	if n, err := st.CountSnapshots(ctx, sh.MarketSlug, store.SnapshotQuery{}); err == nil {
		release, err := b.s.budget.admit(ctx, sh.MarketSlug, n)
		if err != nil {
			return jobs.Outcome{}, err // shutting down or out of time: the shard goes back to the queue
		}
		defer release()
	}
	v, err := runWork(ctx, func(ctx context.Context, _ []byte) (any, error) { return backtest.RunShard(ctx, st, sh) }, nil)
	if p, ok := errors.AsType[*workPanic](err); ok {
		id, _ := asynq.GetTaskID(ctx)
		b.s.log.ErrorContext(ctx, "backtest market panicked", "market", sh.MarketSlug, "task_id", id, "panic", p.value, "stack", string(p.stack))
		return jobs.Outcome{Failure: &jobs.Failure{Code: "INTERNAL_ERROR",
			Message: "this market's replay failed with an internal error, logged on the worker"}}, nil
	}
	if err != nil {
		return jobs.Outcome{}, err
	}
	return v.(jobs.Outcome), nil
}

// batch runs backtest.TaskType: it fans the strategy out as shard tasks,
// each a group of markets, on the backtest queue, so every worker process
// takes part, and gathers their results into the report.
func (b *backtester) batch(ctx context.Context, payload []byte) (any, error) {
	var req backtest.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, &jobs.Failure{Code: replay.CodeValidation, Message: "undecodable backtest payload: " + err.Error()}
	}
	if err := req.Normalize(); err != nil {
		return nil, &jobs.Failure{Code: replay.CodeValidation, Message: err.Error()}
	}
	groups := req.Groups()
	js := make([]Job, len(groups))
	for i, g := range groups {
		p, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("encode shards of %s: %w", g.Markets[0], err)
		}
		// The group's markets' versions are part of the shard's id: a
		// shard kept from before one of them was corrected is not reused.
		js[i] = Job{Type: backtest.GroupType, Queue: jobs.QueueBacktest, Payload: p, Timeout: b.cfg.ShardTimeout, Version: req.GroupVersion(g)}
	}
	outcomes, err := b.gather(ctx, js)
	if err != nil {
		return nil, err
	}
	results, err := backtest.Ungroup(groups, outcomes)
	if err != nil {
		return nil, err
	}
	return backtest.Collect(req, results)
}

// gather submits the shards and waits for their outcomes, one per shard in
// order; a nil outcome is a shard unfinished at the batch's deadline
// (shortly before ctx's, so the partial report can still be written).
//
// The batch holds a worker slot while it waits, so it works too: it takes
// shards that no worker has started off the queue (take: one script, so a
// shard runs here or on a worker, never both) and runs them itself, from
// the newest end of the queue while workers take the oldest. A batch
// therefore finishes even when every slot of every worker holds a batch,
// and with Concurrency 1 on a single worker.
func (b *backtester) gather(ctx context.Context, js []Job) ([]*jobs.Outcome, error) {
	n := len(js)
	ids := make([]string, n)
	channels := make([]string, n)
	index := make(map[string]int, n)
	for i, j := range js {
		ids[i] = j.ID()
		channels[i] = doneChannelPrefix + ids[i]
		index[ids[i]] = i
	}
	// Subscribed before anything is submitted, so no announcement is
	// missed: wait returns once Redis has confirmed it.
	msgs := make(chan *redis.Message, 2*n)
	stopWaiting, err := b.s.waits.wait(ctx, channels, msgs)
	if err != nil {
		return nil, fmt.Errorf("subscribe to shard completions: %w", err)
	}
	defer stopWaiting()

	g := &gathering{outcomes: make([]*jobs.Outcome, n), tries: make([]int, n), left: n}
	woken := false
	for i, j := range js {
		o, done, err := b.jobs.submit(ctx, j, ids[i])
		if err != nil {
			return nil, fmt.Errorf("submit shard: %w", err)
		}
		if done {
			g.record(i, o)
		} else if !woken {
			// Idle workers start on the first shard while the rest are
			// submitted, rather than after all of them (16 round trips).
			b.jobs.wake(ctx, j.Queue)
			woken = true
		}
	}
	if woken && n > 1 {
		// Once more for the whole batch: a worker that drained the queue
		// faster than it filled has gone back to waiting.
		b.jobs.wake(ctx, js[0].Queue)
	}

	stop := batchDeadline(ctx)
	hear := func(m *redis.Message) {
		o, err := decodeAnnounced(m)
		if err != nil {
			b.s.log.WarnContext(ctx, "undecodable shard completion", "channel", m.Channel, "err", err)
			return
		}
		if i, ok := index[strings.TrimPrefix(m.Channel, doneChannelPrefix)]; ok {
			g.record(i, o)
		}
	}

	// First pass: take what is still queued, newest first.
	for i := n - 1; i >= 0 && g.left > 0 && time.Now().Before(stop); i-- {
		for drained := false; !drained; {
			select {
			case m := <-msgs:
				hear(m)
			default:
				drained = true
			}
		}
		if g.outcomes[i] == nil {
			if err := b.claim(ctx, stop, g, i, js[i], ids[i]); err != nil {
				return nil, err
			}
		}
	}

	// Then wait for the workers, looking in on the stragglers now and then.
	timer := time.NewTimer(time.Until(stop))
	defer timer.Stop()
	poll := time.NewTicker(b.cfg.PollInterval)
	defer poll.Stop()
	for g.left > 0 {
		select {
		case m := <-msgs:
			hear(m)
		case <-poll.C:
			for i := range js {
				if g.outcomes[i] == nil && time.Now().Before(stop) {
					if err := b.claim(ctx, stop, g, i, js[i], ids[i]); err != nil {
						return nil, err
					}
				}
			}
		case <-timer.C:
			b.s.log.WarnContext(ctx, "backtest deadline passed", "shards", n, "unfinished", g.left)
			return g.outcomes, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.outcomes, nil
}

// gathering is the state of one batch's wait.
type gathering struct {
	outcomes []*jobs.Outcome
	// tries counts the failed attempts of each shard the batch knows of:
	// its own, and the workers' of a shard task it took (its retried
	// count). A shard put back on the queue is a new task, whose own count
	// starts again, so the batch keeps it, and ends the shard with its
	// failure after as many retries as a worker would; the task put back
	// is retried only as often as is left (Job.tried).
	tries []int
	left  int
}

func (g *gathering) record(i int, o jobs.Outcome) {
	if g.outcomes[i] == nil {
		g.outcomes[i] = &o
		g.left--
	}
}

// claim looks at an unfinished shard in Redis and takes it if it is still
// queued (pending, or waiting to be retried), to run it here; a finished
// one is recorded, a vanished one is submitted again, and one that a
// worker is running is left to it. The look and the take are one script
// (take), so a shard that just finished, its announcement not yet heard,
// is recorded rather than run again.
func (b *backtester) claim(ctx context.Context, stop time.Time, g *gathering, i int, j Job, id string) error {
	state, retried, err := take(ctx, b.s.rdb, j.Queue, id)
	if err != nil {
		return fmt.Errorf("claim shard: %w", err)
	}
	switch state {
	case taken, takenRetry:
		// Its tries that failed on workers (or whose workers died), each
		// counted once: the task taken is gone, and one put back is new.
		g.tries[i] += retried
		return b.runAndRecord(ctx, stop, g, i, j, id)
	case gone:
		return b.resubmit(ctx, g, i, j, id)
	case asynq.TaskStateCompleted.String(), asynq.TaskStateArchived.String():
		info, err := b.jobs.insp.GetTaskInfo(j.Queue, id)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			return b.resubmit(ctx, g, i, j, id) // its retention ran out meanwhile
		}
		if err != nil {
			return fmt.Errorf("inspect shard %s: %w", id, err)
		}
		if info.State != asynq.TaskStateCompleted && info.State != asynq.TaskStateArchived {
			return nil // another batch sent it round again meanwhile: wait for it
		}
		o, err := decodeOutcome(info)
		if err != nil {
			return err
		}
		g.record(i, o)
	}
	return nil
}

// resubmit puts back a shard that vanished: another batch took it and its
// announcement was lost, or its retention ran out.
func (b *backtester) resubmit(ctx context.Context, g *gathering, i int, j Job, id string) error {
	o, done, err := b.jobs.submit(ctx, j, id)
	if err != nil {
		return fmt.Errorf("resubmit shard: %w", err)
	}
	if done {
		g.record(i, o)
	} else {
		b.jobs.wake(ctx, j.Queue)
	}
	return nil
}

func (b *backtester) runAndRecord(ctx context.Context, stop time.Time, g *gathering, i int, j Job, id string) error {
	o, err := b.runHere(ctx, stop, g, i, j, id)
	if err != nil {
		return err
	}
	if o != nil {
		g.record(i, *o)
	}
	return nil
}

// runHere runs shard i, taken off the queue, in this goroutine and
// announces its outcome as a worker would, for other batches waiting on
// the same shard. A failure worth a retry puts the shard back on the
// queue, to be tried after the wait a worker's retry would have
// (retryDelay); the outcome is then nil, as it is for a shard cut off by
// the batch's deadline (stop), which must not take the batch past its
// task's own, before any of its markets finished (after, the outcome is
// theirs, and the rest's JOB_TIMEOUT). Once it has failed as often as a
// worker tries it (g.tries), its outcome is the failure its last attempt
// on a worker would answer.
func (b *backtester) runHere(ctx context.Context, stop time.Time, g *gathering, i int, j Job, id string) (*jobs.Outcome, error) {
	sctx, cancel := context.WithDeadline(ctx, stop)
	defer cancel()
	start := time.Now()
	out, finished, err := b.runTask(sctx, j.Type, j.Payload, g.tries[i] >= j.maxRetry())
	var o jobs.Outcome
	var f *jobs.Failure
	// The task metrics count shards run here too, as the handler would.
	outcome := "ok"
	if err != nil {
		outcome = "error"
		if errors.As(err, &f) {
			outcome = "refused"
		}
	}
	b.s.metrics.observe(j.Type, outcome, time.Since(start))
	var part *partial
	switch {
	case err == nil || errors.As(err, &part):
		raw, mErr := json.Marshal(out)
		if mErr != nil {
			return nil, fmt.Errorf("encode shard result: %w", mErr)
		}
		o.Result = raw
	case errors.As(err, &f):
		o.Failure = f
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case sctx.Err() != nil && finished == 0:
		return nil, nil
	case sctx.Err() != nil:
		// The markets finished before the deadline keep their results in
		// this batch's report, and the rest timed out: they all timed out
		// with the one cut off. (A shard a worker runs past the deadline
		// still does: its outcome never reaches the batch.) This is not
		// the shard's outcome, and is not announced: other batches
		// waiting on it find it gone and submit it again.
		for k := finished; k < len(out); k++ {
			out[k] = jobs.Outcome{Failure: backtest.Unfinished()}
		}
		raw, mErr := json.Marshal(out)
		if mErr != nil {
			return nil, fmt.Errorf("encode shard result: %w", mErr)
		}
		return &jobs.Outcome{Result: raw}, nil
	case g.tries[i] >= j.maxRetry():
		b.s.log.WarnContext(ctx, "shard failed on every attempt", "task_id", id, "attempts", g.tries[i]+1, "err", err)
		o.Failure = exhausted(err)
	default:
		j.delay = retryDelay(g.tries[i], err, asynq.NewTask(j.Type, nil))
		g.tries[i]++
		j.tried = g.tries[i] // a worker that takes it tries it only as often as is left
		b.s.log.WarnContext(ctx, "shard failed; back to the queue", "task_id", id, "retry_in", j.delay, "err", err)
		if _, _, err := b.jobs.submit(ctx, j, id); err != nil {
			return nil, fmt.Errorf("requeue shard: %w", err)
		}
		if j.delay <= 0 {
			b.jobs.wake(ctx, j.Queue)
		} // else the batch's poll, or the worker that moves it to its queue when due (gatedRedis.forwarded), finds it
		return nil, nil
	}
	data, err := o.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode shard outcome: %w", err)
	}
	if err := b.s.rdb.Publish(ctx, doneChannelPrefix+id, data).Err(); err != nil {
		b.s.log.WarnContext(ctx, "announce shard completion", "task_id", id, "err", err)
	}
	return &o, nil
}

// batchDeadline is when a batch stops waiting: a little before ctx's
// deadline (the task's timeout), leaving time to write the partial report.
func batchDeadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(24 * time.Hour)
	}
	margin := min(time.Until(d)/10, 5*time.Second)
	return d.Add(-margin)
}
