package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/collect"
)

// Resolution tasks are retried with Asynq's backoff (about n⁴ seconds
// before the n-th retry, jittered): within the resolver's hour before the
// coin prices decide an unsettled market, and for days if an upstream is
// down.
const (
	resolveMaxRetry = 20
	resolveTimeout  = 2 * time.Minute
)

// A market settled by its series' rule because Polymarket had not
// published in time (collect.AwaitsVerdict) is looked at again, up to
// verifyMax times, after verifyFirst and then twice as long each time (up
// to verifyMaxDelay): about four days in all. Polymarket's verdict, when it
// comes, corrects the market.
const (
	verifyMax      = 12
	verifyFirst    = 10 * time.Minute
	verifyMaxDelay = 12 * time.Hour
)

// verifyDelay is the wait before the n-th check (n ≥ 1).
func verifyDelay(n int) time.Duration {
	d := verifyFirst
	for i := 1; i < n && d < verifyMaxDelay; i++ {
		d *= 2
	}
	return min(d, verifyMaxDelay)
}

// registerCollect adds the handler that resolves ended markets, which the
// collector schedules on the collect queue (ResolutionScheduler).
//
// The resolver speaks to the upstreams the environment names
// (collect.UpstreamsFromEnv): every process of a deployment shares its
// environment, so workers resolve against the upstreams the collector
// recorded from.
//
// base is the logger the server was given, without the worker's component:
// the resolver names its own, and a record with two "component" keys is
// one that log pipelines read as they please.
func (s *Server) registerCollect(base *slog.Logger) {
	res, err := collect.NewResolver(collect.ResolverConfig{
		Upstreams: collect.UpstreamsFromEnv(os.LookupEnv),
		Store:     s.store,
		Logger:    base,
	})
	if err != nil {
		s.log.Error("market resolution is misconfigured; its tasks will fail until it is fixed", "err", err)
	}
	verify := NewResolutionScheduler(s.rdb)
	s.mux.HandleFunc(jobs.TypeResolve, func(ctx context.Context, t *asynq.Task) error {
		if err != nil {
			return fmt.Errorf("resolve: %w", err) // retried: a fixed environment and a restart mend it
		}
		var req collect.ResolveRequest
		if jerr := json.Unmarshal(t.Payload(), &req); jerr != nil || req.Slug == "" {
			return fmt.Errorf("resolve: undecodable payload %q: %v: %w", t.Payload(), jerr, asynq.SkipRetry)
		}
		m, rerr := res.Resolve(ctx, req.Slug)
		if errors.Is(rerr, collect.ErrNoRetry) {
			return fmt.Errorf("%w: %w", rerr, asynq.SkipRetry)
		}
		if rerr != nil {
			return rerr // Asynq retries with backoff
		}
		s.log.DebugContext(ctx, "market resolved", "market", m.Slug, "winner", *m.Winner, "source", m.ResolutionSource)
		if collect.AwaitsVerdict(m) {
			if req.Verify >= verifyMax {
				s.log.WarnContext(ctx, "Polymarket never published this market's settlement; the series' rule stands",
					"market", m.Slug, "winner", *m.Winner, "source", m.ResolutionSource, "checks", req.Verify)
				return nil
			}
			if err := verify.scheduleVerify(ctx, m.Slug, req.Verify+1); err != nil {
				return err // retried: the follow-up must not be lost
			}
		}
		return nil
	})
}

// VerifyTaskID is the task id of the n-th check of a market resolved
// before Polymarket's verdict.
func VerifyTaskID(slug string, n int) string { return fmt.Sprintf("resolve:%s:verify:%d", slug, n) }

// scheduleVerify queues the n-th check of a market resolved by its
// series' rule, to run after verifyDelay(n).
func (r *ResolutionScheduler) scheduleVerify(ctx context.Context, slug string, n int) error {
	payload, err := json.Marshal(collect.ResolveRequest{Slug: slug, Verify: n})
	if err != nil {
		return fmt.Errorf("schedule check %d of %s: %w", n, slug, err)
	}
	_, err = r.client.EnqueueContext(ctx, asynq.NewTask(jobs.TypeResolve, payload),
		asynq.TaskID(VerifyTaskID(slug, n)), asynq.Queue(jobs.QueueCollect), asynq.ProcessIn(verifyDelay(n)),
		asynq.MaxRetry(resolveMaxRetry), asynq.Timeout(resolveTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("schedule check %d of %s: %w", n, slug, err)
	}
	return nil
}

// ResolutionScheduler queues resolution tasks on Asynq: the collector's
// collect.Scheduler.
type ResolutionScheduler struct {
	client *asynq.Client
	insp   *asynq.Inspector
}

var _ collect.NowScheduler = (*ResolutionScheduler)(nil)

// NewResolutionScheduler returns a scheduler on rdb; it holds nothing of
// its own to release.
func NewResolutionScheduler(rdb redis.UniversalClient) *ResolutionScheduler {
	return &ResolutionScheduler{client: asynq.NewClientFromRedisClient(rdb), insp: asynq.NewInspectorFromRedisClient(rdb)}
}

// ResolutionTaskID is the task id of a market's resolution: one per
// market, so that the collector's repeated scheduling (on discovery, on
// every sweep, from several collectors) queues it once.
func ResolutionTaskID(slug string) string { return "resolve:" + slug }

// ScheduleResolution implements collect.Scheduler: the market's resolution
// runs on the collect queue after delay, unless it is queued already.
func (r *ResolutionScheduler) ScheduleResolution(ctx context.Context, slug string, delay time.Duration) error {
	payload, err := json.Marshal(collect.ResolveRequest{Slug: slug})
	if err != nil {
		return fmt.Errorf("schedule resolution of %s: %w", slug, err)
	}
	id := ResolutionTaskID(slug)
	enqueue := func() error {
		_, err := r.client.EnqueueContext(ctx, asynq.NewTask(jobs.TypeResolve, payload),
			asynq.TaskID(id), asynq.Queue(jobs.QueueCollect), asynq.ProcessIn(max(delay, 0)),
			asynq.MaxRetry(resolveMaxRetry), asynq.Timeout(resolveTimeout))
		return err
	}
	err = enqueue()
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		// Queued or running: nothing to do. Archived (every retry spent,
		// e.g. a long upstream outage): its id would block the market
		// forever, so clear it and schedule afresh.
		info, iErr := r.insp.GetTaskInfo(jobs.QueueCollect, id)
		if iErr != nil || info.State != asynq.TaskStateArchived {
			return nil
		}
		if dErr := r.insp.DeleteTask(jobs.QueueCollect, id); dErr != nil && !errors.Is(dErr, asynq.ErrTaskNotFound) {
			return fmt.Errorf("schedule resolution of %s: clear the failed task: %w", slug, dErr)
		}
		err = enqueue()
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("schedule resolution of %s: %w", slug, err)
	}
	return nil
}

// ResolveNow implements collect.NowScheduler: the market's resolution runs
// at once (Polymarket said it settled), moving a scheduled or retrying
// task forward rather than queueing a second one.
func (r *ResolutionScheduler) ResolveNow(ctx context.Context, slug string) error {
	if err := r.ScheduleResolution(ctx, slug, 0); err != nil {
		return err
	}
	id := ResolutionTaskID(slug)
	info, err := r.insp.GetTaskInfo(jobs.QueueCollect, id)
	if err != nil || (info.State != asynq.TaskStateScheduled && info.State != asynq.TaskStateRetry) {
		return nil // pending, running or done: nothing to move forward
	}
	if err := r.insp.RunTask(jobs.QueueCollect, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return fmt.Errorf("resolve %s now: %w", slug, err)
	}
	return nil
}
