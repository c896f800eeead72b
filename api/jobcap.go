package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
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
// process, taken, kept and given back by one script each, atomically: job
// ids scored by when the slot lapses. A slot lapses on its own (the lease
// after the request's wait, or after the watcher last saw the job queued
// or running) so that a process that dies holding slots does not keep
// them; while its process lives, a slot lives as long as its job, however
// long that waits in the queue. The set itself expires when its latest
// slot lapses, never before (issue 28, item 4: it used to expire one lease
// after the last take, dropping slots whose watchers were still keeping
// them), so a customer who never comes back leaves nothing behind. A
// coalesced identical request (the same job id) shares its job's slot: it
// does not count twice. A replay's slot is named by its request, without
// its market's version (it is taken while the market is read, replay.go):
// identical replays share it all the same.
//
// Without Redis there is no cap, as there are no rate limits. When the
// check fails (Redis down, or slower than Config.JobRedisTimeout) the request
// is refused with 503 SERVICE_UNAVAILABLE, which clients retry: a job
// needs the queue, on the same Redis, anyway, and a request let through
// uncapped could run past the cap, since a customer's own burst can make
// the checks slow while the queue still takes its jobs.

// defaultJobSlotLease is how long a slot outlives the last sign that its
// job is awaited, when nobody gives it back (Config.JobSlotLease).
const defaultJobSlotLease = 30 * time.Second

// jobWatchEvery is how often a watcher asks about a job that outlived its
// request.
const jobWatchEvery = 250 * time.Millisecond

// jobSlotKey is the customer's set of jobs in flight; the hash tag keeps
// it in the slot of the customer's rate-limit keys.
func jobSlotKey(customerID string) string {
	return rateKeyPrefix + customerID + "}:jobs"
}

// takeSlotScript takes a slot for a job. KEYS: the customer's set. ARGV:
// now (unix ms), the cap, the job id, and when the slot lapses (unix ms).
// Returns 1 when the job holds a slot (newly taken, or already its own: a
// coalesced request), else 0; the jobs in flight; and 1 when this take
// added the slot, 0 when it was the job's already. The set expires with
// its latest slot: a take with a short wait never cuts short a slot kept
// longer.
var takeSlotScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local held = redis.call('ZSCORE', KEYS[1], ARGV[3])
local n = redis.call('ZCARD', KEYS[1])
if not held and n >= tonumber(ARGV[2]) then return {0, n, 0} end
local added = 0
if held then
	redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[3])
else
	redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
	n = n + 1
	added = 1
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return {1, n, added}
`)

// keepSlotScript keeps a job's slot: it moves the slot's lapse to ARGV[1]
// (unix ms, never earlier) and the set's expiry with it. KEYS: the
// customer's set. ARGV: when the slot lapses, the job id. A slot that has
// already lapsed is not taken again (the customer may have filled it):
// returns 0 then, else 1.
var keepSlotScript = redis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
`)

// jobCap is the caller's cap on jobs in flight (0: none): Config.JobsInFlight's
// entry for the tier when there is one, else the plan's.
func (s *Server) jobCap(p Plan) int {
	if n, ok := s.cfg.JobsInFlight[p.Tier]; ok {
		return n
	}
	return p.JobsInFlight
}

// heldSlot is a slot of the caller's taken for a job: under the job's id,
// or under the id of the request that made it (a replay takes its slot
// while its market, and so its job's id, is read). release gives it back
// (nil when nothing was taken); added is set when this request took it,
// not an identical one before it, whose job may be running on it.
type heldSlot struct {
	id      string
	release func()
	added   bool
}

// takeJobSlot takes a slot for job id of the caller, or answers 429
// RATE_LIMIT_EXCEEDED with details.limit "concurrent_jobs". release gives
// the slot back (nil when nothing was taken); added reports whether this
// take added it (false: the job's already, taken by an identical request).
func (s *Server) takeJobSlot(ctx context.Context, p principal, id string, wait time.Duration) (release func(), added bool, err error) {
	limit := s.jobCap(p.Plan)
	if s.cfg.Redis == nil || limit <= 0 {
		return nil, false, nil
	}
	now := time.Now()
	key := jobSlotKey(p.Customer.ID)
	lapse := now.Add(wait + s.slotLease())
	held, added, err := s.takeSlot(ctx, s.cfg.JobRedisTimeout, key, limit, id, now, lapse)
	if err == nil && !held && s.returnSlots(ctx, key) {
		// Slots this process failed to give back in an outage (a
		// failover) are returned now, rather than at their next try in
		// the background: the customer's jobs that held them have ended,
		// and a 429 "too many jobs in flight" with none running would
		// answer the first request after the outage.
		held, added, err = s.takeSlot(ctx, s.cfg.JobRedisTimeout, key, limit, id, now, lapse)
	}
	if err != nil {
		// A take that timed out may have been carried out all the same:
		// its slot is given back (in the background, as a release is), or
		// it would refuse the customer's jobs (429) until it lapsed with
		// nothing running. Should an identical request's job hold that
		// slot, the job runs a moment without one: the cap errs by one
		// job, not by a lease of refusals.
		go s.giveBackSlot(key, p.Customer.ID, id, lapse)
		if !s.clientWentAway(ctx, "take a job slot", err) && s.limiter != nil {
			s.limiter.warn(ctx, s.log, p.Customer.ID, fmt.Errorf("job slots: %w", err))
		}
		return nil, false, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"the job queue's Redis did not answer in time, so the job was not started; retry with backoff (request id %s)", RequestID(ctx))
	}
	if !held {
		what := "replays, backtests or generations"
		if limit == 1 {
			what = "replay, backtest or generation"
		}
		e := Errorf(http.StatusTooManyRequests, CodeRateLimited,
			"too many jobs in flight: the %s plan runs at most %d %s at once per customer; retry when one has finished",
			p.Plan.Tier, limit, what)
		e = e.With("limit", "concurrent_jobs").With("max", limit).With("retry_after", 1).With("upgrade_url", upgradeURL)
		e.GetHeaders().Set("Retry-After", "1")
		return nil, false, e
	}
	return func() { s.giveBackSlot(key, p.Customer.ID, id, lapse) }, added, nil
}

// takeSlot runs takeSlotScript for id in the set at key, capped at limit,
// the slot lapsing at lapse, waiting for Redis at most timeout: held reports whether id holds a slot now, and
// added whether this take added it. Both caps (jobs, heavy reads) read
// its answer here.
func (s *Server) takeSlot(ctx context.Context, timeout time.Duration, key string, limit int, id string, now, lapse time.Time) (held, added bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := takeSlotScript.Run(tctx, s.cfg.Redis, []string{key}, now.UnixMilli(), limit, id, lapse.UnixMilli()).Int64Slice()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("slot script answered %v", res)
	}
	if err != nil {
		return false, false, err
	}
	return res[0] == 1, res[2] == 1, nil
}

// giveBackSlot removes a job's slot. Not the request's context: a slot is
// given back whatever became of the request. When Redis fails (a primary
// failing over, a restart) it tries again in the background until the
// slot would have lapsed anyway: else a moment's outage would hold the
// slot a whole lease, and a customer at its cap would be refused (429)
// for that long after the outage (issue 28, item 12).
func (s *Server) giveBackSlot(key, customerID, id string, lapse time.Time) {
	giveBack := func() error {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.cfg.Redis.ZRem(rctx, key, id).Err()
	}
	err := giveBack()
	if err == nil {
		return
	}
	// The slot lapses when its take said, or a lease after a watcher
	// last kept it, whichever is later.
	lapse = later(lapse, time.Now().Add(s.slotLease()))
	s.unreturned.add(key, id)
	go func() {
		defer s.unreturned.remove(key, id)
		err := err
		for backoff := 50 * time.Millisecond; time.Now().Add(backoff).Before(lapse); backoff = min(2*backoff, time.Second) {
			time.Sleep(backoff)
			if err = giveBack(); err == nil {
				return
			}
		}
		s.log.Warn("give back a job slot (it lapses on its own)", "customer_id", customerID, "job_id", id, "err", err)
	}()
}

// unreturnedSlots are the job slots, by their set's key, whose give-back
// failed and is tried again in the background (giveBackSlot).
type unreturnedSlots struct {
	mu  sync.Mutex
	ids map[string]map[string]struct{}
}

func (u *unreturnedSlots) add(key, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = make(map[string]map[string]struct{})
	}
	if u.ids[key] == nil {
		u.ids[key] = make(map[string]struct{})
	}
	u.ids[key][id] = struct{}{}
}

func (u *unreturnedSlots) remove(key, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.ids[key], id)
	if len(u.ids[key]) == 0 {
		delete(u.ids, key)
	}
}

// of returns the slots of key not yet given back.
func (u *unreturnedSlots) of(key string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	ids := make([]string, 0, len(u.ids[key]))
	for id := range u.ids[key] {
		ids = append(ids, id)
	}
	return ids
}

// returnSlots gives back now the slots of key that this process failed to
// give back, and reports whether it returned any.
func (s *Server) returnSlots(ctx context.Context, key string) bool {
	ids := s.unreturned.of(key)
	if len(ids) == 0 {
		return false
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.JobRedisTimeout)
	defer cancel()
	if err := s.cfg.Redis.ZRem(rctx, key, members...).Err(); err != nil {
		return false // still unreachable: the background tries go on
	}
	for _, id := range ids {
		s.unreturned.remove(key, id)
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// slotLease is Config.JobSlotLease, or its default.
func (s *Server) slotLease() time.Duration {
	if s.cfg.JobSlotLease > 0 {
		return s.cfg.JobSlotLease
	}
	return defaultJobSlotLease
}

// watchJob waits, detached from any request, for a job whose request
// ended before it did, keeping its slot alive while it is queued or runs;
// then it gives the slot back and calls done with the job's outcome (nil
// when the job could not be found any more, or did not end within bound).
//
// bound is how long the job can run, and counts from when the watcher last
// saw it waiting (queued, or between attempts): a job queued behind paused
// or saturated workers keeps its slot however long it waits (issue 28,
// item 4). It is still known to the queue meanwhile; once it is not,
// Status says so and the slot comes back.
func (s *Server) watchJob(p principal, id string, bound time.Duration, slot heldSlot, done func(*jobs.Outcome)) {
	release := slot.release
	ctx := context.Background()
	var outcome *jobs.Outcome
	defer func() {
		if release != nil {
			release()
		}
		if done != nil {
			done(outcome)
		}
	}()
	lease := s.slotLease()
	every := min(jobWatchEvery, lease/4)
	tick := time.NewTicker(every)
	defer tick.Stop()
	deadline := time.Now().Add(bound)
	for {
		sctx, scancel := context.WithTimeout(ctx, max(every, time.Second))
		st, err := s.cfg.Jobs.Status(sctx, id, p.Customer.ID)
		scancel()
		switch {
		case errors.Is(err, worker.ErrJobNotFound):
			return
		case err == nil && st.Outcome != nil:
			outcome = st.Outcome
			return
		case err == nil && st.State != "active":
			deadline = time.Now().Add(bound)
		}
		if time.Now().After(deadline) {
			s.log.Warn("stop watching a job that outlived its bound; its slot comes back", "customer_id", p.Customer.ID, "job_id", id, "bound", bound)
			return
		}
		if release != nil && s.cfg.Redis != nil {
			// Still queued or running (or Redis is failing, in which case
			// the slot lapses): keep the slot alive.
			kctx, kcancel := context.WithTimeout(ctx, s.cfg.RedisTimeout)
			err := keepSlotScript.Run(kctx, s.cfg.Redis, []string{jobSlotKey(p.Customer.ID)},
				time.Now().Add(lease).UnixMilli(), slot.id).Err()
			kcancel()
			if err != nil {
				s.log.Debug("keep a job slot", "customer_id", p.Customer.ID, "job_id", id, "err", err)
			}
		}
		<-tick.C
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
