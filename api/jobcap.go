package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/worker"
)

// Jobs in flight per customer (DESIGN 4, fairness between customers).
//
// Every job a request starts on the workers (a replay, a backtest, a
// generation) takes one of its customer's slots first, and gives it back
// when the job has finished, not when the request ends: a request that
// outlasts its wait (504) or whose client hangs up leaves its job running,
// and a watcher keeps the slot until the job is done. So a customer can
// never have more than its cap of jobs on the workers, however it sends
// them, and one customer's burst cannot hold another's replay behind it.
//
// The slots are a sorted set per customer in Redis, shared by every api
// process, taken and given back by one script each, atomically: job ids
// scored by when the slot lapses. A slot lapses on its own (jobSlotLease
// after the request's wait, or after the watcher last saw the job run)
// so that a process that dies holding slots does not keep them. A
// coalesced identical request (the same job id) shares its job's slot: it
// does not count twice.
//
// Without Redis there is no cap, as there are no rate limits. When Redis
// fails the request goes on uncapped (logged as the rate limiter logs):
// the queue, on the same Redis, answers for itself.

// jobSlotLease is how long a slot outlives the last sign that its job is
// awaited, when nobody gives it back.
const jobSlotLease = 30 * time.Second

// jobWatchEvery is how often a watcher asks about a job that outlived its
// request.
const jobWatchEvery = 250 * time.Millisecond

// jobSlotKey is the customer's set of jobs in flight; the hash tag keeps
// it in the slot of the customer's rate-limit keys.
func jobSlotKey(customerID string) string {
	return rateKeyPrefix + customerID + "}:jobs"
}

// takeSlotScript takes a slot for a job. KEYS: the customer's set. ARGV:
// now (unix ms), the cap, the job id, when the slot lapses (unix ms), and
// "peek" to only look. Returns 1 when the job holds a slot (newly taken,
// or already its own: a coalesced request) or could take one, else 0, and
// the jobs in flight.
var takeSlotScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local held = redis.call('ZSCORE', KEYS[1], ARGV[3])
local n = redis.call('ZCARD', KEYS[1])
if not held and n >= tonumber(ARGV[2]) then return {0, n} end
if ARGV[5] == 'peek' then return {1, n} end
if held then
	redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[3])
else
	redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
	n = n + 1
end
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {1, n}
`)

// jobCap is the caller's cap on jobs in flight (0: none): Config.JobsInFlight's
// entry for the tier when there is one, else the plan's.
func (s *Server) jobCap(p Plan) int {
	if n, ok := s.cfg.JobsInFlight[p.Tier]; ok {
		return n
	}
	return p.JobsInFlight
}

// jobCapReached answers the 429 takeJobSlot would, without taking a slot:
// a request checks it before the store reads that precede its job, so a
// customer knocking at its cap costs a Redis round trip, not a database's.
func (s *Server) jobCapReached(ctx context.Context, p principal, id string) error {
	_, err := s.slot(ctx, p, id, 0, true)
	return err
}

// takeJobSlot takes a slot for job id of the caller, or answers 429
// RATE_LIMIT_EXCEEDED with details.limit "concurrent_jobs". release gives
// the slot back (nil when nothing was taken).
func (s *Server) takeJobSlot(ctx context.Context, p principal, id string, wait time.Duration) (release func(), err error) {
	return s.slot(ctx, p, id, wait, false)
}

func (s *Server) slot(ctx context.Context, p principal, id string, wait time.Duration, peek bool) (release func(), err error) {
	limit := s.jobCap(p.Plan)
	if s.cfg.Redis == nil || limit <= 0 {
		return nil, nil
	}
	now := time.Now()
	key := jobSlotKey(p.Customer.ID)
	tctx, cancel := context.WithTimeout(ctx, rateLimitTimeout)
	defer cancel()
	mode := "take"
	if peek {
		mode = "peek"
	}
	res, err := takeSlotScript.Run(tctx, s.cfg.Redis, []string{key},
		now.UnixMilli(), limit, id, now.Add(wait+jobSlotLease).UnixMilli(), mode).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("job slot script answered %v", res)
	}
	if err != nil {
		if s.limiter != nil {
			s.limiter.warn(ctx, s.log, p.Customer.ID, fmt.Errorf("job slots: %w", err))
		}
		return nil, nil
	}
	if res[0] == 0 {
		e := Errorf(http.StatusTooManyRequests, CodeRateLimited,
			"too many jobs in flight: the %s plan runs at most %d replays, backtests or generations at once per customer; retry when one has finished",
			p.Plan.Tier, limit)
		e = e.With("limit", "concurrent_jobs").With("max", limit).With("retry_after", 1).With("upgrade_url", upgradeURL)
		e.GetHeaders().Set("Retry-After", "1")
		return nil, e
	}
	if peek {
		return nil, nil
	}
	return func() {
		// Not the request's context: a slot is given back whatever became
		// of the request.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.cfg.Redis.ZRem(rctx, key, id).Err(); err != nil {
			s.log.Warn("give back a job slot (it lapses on its own)", "customer_id", p.Customer.ID, "job_id", id, "err", err)
		}
	}, nil
}

// watchJob waits, detached from any request, for a job whose request
// ended before it did, keeping its slot alive while it runs; then it gives
// the slot back and calls done with the job's outcome (nil when the job
// could not be found any more, or did not end within bound).
func (s *Server) watchJob(p principal, id string, bound time.Duration, release func(), done func(*jobs.Outcome)) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var outcome *jobs.Outcome
	defer func() {
		if release != nil {
			release()
		}
		if done != nil {
			done(outcome)
		}
	}()
	tick := time.NewTicker(jobWatchEvery)
	defer tick.Stop()
	for {
		st, err := s.cfg.Jobs.Status(ctx, id, p.Customer.ID)
		switch {
		case errors.Is(err, worker.ErrJobNotFound):
			return
		case err == nil && st.Outcome != nil:
			outcome = st.Outcome
			return
		}
		if release != nil && s.cfg.Redis != nil {
			// Still running (or Redis is failing, in which case the slot
			// lapses): keep the slot alive.
			_ = s.cfg.Redis.ZAddXX(ctx, jobSlotKey(p.Customer.ID),
				redis.Z{Score: float64(time.Now().Add(jobSlotLease).UnixMilli()), Member: id}).Err()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// jobBound is how long a job can possibly run: every attempt to its
// timeout, and a minute in the queue.
func jobBound(j worker.Job) time.Duration {
	timeout, retries := j.Timeout, j.MaxRetry
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	if retries == 0 {
		retries = 3
	}
	return time.Duration(retries+1)*timeout + time.Minute
}
