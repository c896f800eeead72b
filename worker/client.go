package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/sweep"
)

// doneChannelPrefix + task id is the Redis channel a worker announces a
// finished task on; the payload is the task's jobs.Outcome.
const doneChannelPrefix = "updown:done:"

// jobKeyPrefix + task id is a hash recording the job's queue and owners,
// so GET /v1/jobs/{id} answers only those who asked for the job.
const jobKeyPrefix = "updown:job:"

// ErrJobNotFound is a job id that is unknown, expired, or not the caller's.
var ErrJobNotFound = errors.New("job not found")

// TimeoutError is a wait that ended before the job did. The job goes on;
// its result can be fetched later by JobID.
type TimeoutError struct{ JobID string }

func (e *TimeoutError) Error() string { return "job " + e.JobID + " did not finish in time" }

// Job is a unit of work to run on the workers.
type Job struct {
	Type    string
	Queue   string
	Payload []byte
	// Timeout bounds one attempt on the worker (default 2 min).
	Timeout time.Duration
	// MaxRetry is how often a failed attempt is retried (default 3).
	MaxRetry int
	// Retention, when set, is how long the job's outcome is kept once it
	// has finished, for reuse and GET /v1/jobs/{id}, in place of
	// ClientConfig.Retention.
	Retention time.Duration
	// Version, when set, is a version of what the job reads beyond its
	// payload (a replay's market: its updated_at and the version of its
	// data, store.DataVersion), part of the job's id
	// but not of its payload: a finished result is reused only while what
	// it was computed from is unchanged, so a corrected winner is never
	// answered from the result of the old one. A random Version makes a
	// job that is never reused (an AI generation: one per request).
	Version string
	// delay, when set, holds the task back this long once enqueued: a
	// shard a batch ran and that failed, put back for its next try after
	// the wait a worker's retry would have (backtester.runHere).
	delay time.Duration
	// tried, when set, is how often the job has failed already as other
	// tasks (a shard a batch ran, or took off a worker's retries, put
	// back): its task is retried that many times fewer, so that it is
	// tried MaxRetry + 1 times in all.
	tried int
	// Headers travel with the task (Asynq's headers) and are not part of
	// its id: what the api already read for the job, so that the worker
	// need not read it again (MarketHeaders). A worker that does not know
	// a header ignores it.
	Headers map[string]string
}

// ID is the job's deterministic id: identical jobs share one task.
func (j Job) ID() string {
	h := sha256.New()
	h.Write([]byte(j.Type))
	h.Write([]byte{0})
	h.Write(j.Payload)
	if j.Version != "" {
		h.Write([]byte{0})
		h.Write([]byte(j.Version))
	}
	return j.Queue + "-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// ClientConfig configures a Client.
type ClientConfig struct {
	Redis  redis.UniversalClient
	Logger *slog.Logger
	// Retention keeps finished results for reuse and GET /v1/jobs/{id}
	// (default 10 min).
	Retention time.Duration
	// PollInterval is the fallback check of a job's state, for a
	// completion announcement lost to a reconnect (default 250 ms).
	PollInterval time.Duration
}

// Client enqueues jobs and waits for their outcome: the api's side of the
// queue. One pattern subscription per process hears every completion and
// hands it to the requests waiting for that job, so a wait costs no
// polling and no connection of its own.
type Client struct {
	cfg    ClientConfig
	rdb    redis.UniversalClient
	queue  *asynq.Client
	insp   *asynq.Inspector
	log    *slog.Logger
	pubsub *redis.PubSub
	done   chan struct{}
	// stop is closed by StopWaiting: every wait then ends as if its time
	// were up.
	stop     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	waiters map[string]map[chan jobs.Outcome]struct{}
}

// NewClient subscribes to completions and returns a ready client. Close
// releases it.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Redis == nil {
		return nil, errors.New("worker: a Redis client is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retention == 0 {
		cfg.Retention = 10 * time.Minute
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	ps := cfg.Redis.PSubscribe(ctx, doneChannelPrefix+"*")
	if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
		_ = ps.Close()
		return nil, fmt.Errorf("worker: subscribe to completions: %w", err)
	}
	c := &Client{
		cfg: cfg, rdb: cfg.Redis, log: cfg.Logger.With("component", "jobs"),
		queue:   asynq.NewClientFromRedisClient(wakingRedis{cfg.Redis}),
		insp:    asynq.NewInspectorFromRedisClient(cfg.Redis),
		pubsub:  ps,
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
		waiters: map[string]map[chan jobs.Outcome]struct{}{},
	}
	go c.listen()
	return c, nil
}

// StopWaiting ends every wait, under way or to come, as if its time were
// up (a *TimeoutError with the job's id): the jobs go on, and their
// results can be fetched by id. A stopping api calls it, so that its
// requests waiting on jobs answer, with the job id, before it exits
// instead of being cut off.
func (c *Client) StopWaiting() { c.stopOnce.Do(func() { close(c.stop) }) }

// Close stops listening. It does not close the Redis client.
func (c *Client) Close() error {
	err := c.pubsub.Close()
	<-c.done
	return err
}

func (c *Client) listen() {
	defer close(c.done)
	for msg := range c.pubsub.Channel() {
		o, err := decodeAnnounced(msg)
		if err != nil {
			c.log.Warn("undecodable completion", "channel", msg.Channel, "err", err)
			continue
		}
		c.deliver(strings.TrimPrefix(msg.Channel, doneChannelPrefix), o)
	}
}

// decodeAnnounced decodes the outcome a completion announces, over the
// message's own bytes: the payload, a string go-redis made for this
// message alone and read by nothing else, is not copied again (the whole
// answer: 4.5 MB for a trade-heavy 24hr replay). The outcome keeps
// pointing into it (its result, or its deflated blocks), read only, as
// every reader of an outcome does.
func decodeAnnounced(msg *redis.Message) (jobs.Outcome, error) {
	if len(msg.Payload) == 0 {
		return jobs.DecodeOutcome(nil)
	}
	return jobs.DecodeOutcome(unsafe.Slice(unsafe.StringData(msg.Payload), len(msg.Payload)))
}

func (c *Client) deliver(id string, o jobs.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.waiters[id] {
		select {
		case ch <- o:
		default: // already has an outcome
		}
	}
}

func (c *Client) wait(id string) chan jobs.Outcome {
	ch := make(chan jobs.Outcome, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiters[id] == nil {
		c.waiters[id] = map[chan jobs.Outcome]struct{}{}
	}
	c.waiters[id][ch] = struct{}{}
	return ch
}

func (c *Client) unwait(id string, ch chan jobs.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiters[id], ch)
	if len(c.waiters[id]) == 0 {
		delete(c.waiters, id)
	}
}

// Run submits the job on behalf of owner and waits up to wait for its
// outcome. An identical job already queued, running or finished (and
// retained) is joined rather than run again. When the wait ends first the
// error is a *TimeoutError carrying the job id. A large result may come
// still deflated: read it with the outcome's Data.
func (c *Client) Run(ctx context.Context, j Job, owner string, wait time.Duration) (jobs.Outcome, string, error) {
	id := j.ID()
	ch := c.wait(id) // before enqueueing, so the announcement cannot be missed
	defer c.unwait(id, ch)

	// The owner record only matters to GET /v1/jobs/{id}, after a timeout:
	// it goes with the enqueue and its wake, in their round trip
	// (wakingRedis), rather than in one of its own beside them.
	rec := &ownerRecord{key: jobKeyPrefix + id, queue: j.Queue, owner: owner, keep: c.retention(j) + wait + time.Hour}
	// A task that vanishes while waited for was lost with a Redis primary
	// that failed over before its replica had the enqueue (issue 28, item
	// 12): enqueued again, with its owner record, so that the wait, or
	// GET /v1/jobs/{id} after a 504, still finds it.
	lost := func() {
		again := &ownerRecord{key: rec.key, queue: rec.queue, owner: rec.owner, keep: rec.keep}
		if _, _, err := c.submit(withOwner(withWake(ctx, j.Queue), again), j, id); err != nil {
			c.log.WarnContext(ctx, "enqueue a job lost with Redis again", "job_id", id, "err", err)
			return
		}
		c.log.InfoContext(ctx, "job lost with Redis (a failover) enqueued again", "job_id", id)
		if err := again.result(); err != nil {
			c.log.WarnContext(ctx, "record the owner of a job enqueued again", "job_id", id, "err", err)
		}
	}
	o, err := c.await(withOwner(ctx, rec), j, id, ch, wait, lost)
	oErr := rec.result()
	if !rec.sent() && (err == nil || errors.As(err, new(*TimeoutError))) {
		// No enqueue went through wakingRedis's pipeline (an Asynq whose
		// enqueue it does not recognise): the record on its own.
		oErr = c.recordOwner(ctx, rec)
	}
	if oErr != nil && errors.As(err, new(*TimeoutError)) {
		return o, id, oErr // without its owner record the job could not be fetched later
	}
	return o, id, err
}

// await submits the job and waits for its outcome on ch; lost is called
// when the task is found gone meanwhile.
func (c *Client) await(ctx context.Context, j Job, id string, ch chan jobs.Outcome, wait time.Duration, lost func()) (jobs.Outcome, error) {
	// The wake, and the owner record ctx carries, go with the enqueue, in
	// its round trip (wakingRedis).
	if o, ok, err := c.submit(withWake(ctx, j.Queue), j, id); err != nil || ok {
		return o, err
	}

	timer := time.NewTimer(wait)
	defer timer.Stop()
	poll := time.NewTicker(c.cfg.PollInterval)
	defer poll.Stop()
	// A look at the task runs beside the wait, one at a time: Asynq's
	// inspector takes no context, and on a Redis that stalls (a slow
	// command, a partition) a look hangs for seconds, which must not hold
	// the answer past the wait or StopWaiting.
	type look struct {
		o   jobs.Outcome
		ok  bool
		err error
	}
	looked := make(chan look, 1)
	looking := false
	for {
		select {
		case o := <-ch:
			return o, nil
		case <-poll.C:
			if !looking {
				looking = true
				go func() {
					o, ok, err := c.finished(j.Queue, id)
					looked <- look{o, ok, err}
				}()
			}
		case l := <-looked:
			looking = false
			switch {
			case l.err == nil && l.ok:
				return l.o, nil
			case errors.Is(l.err, asynq.ErrTaskNotFound) || errors.Is(l.err, asynq.ErrQueueNotFound):
				lost()
			}
		case <-timer.C:
			return jobs.Outcome{}, &TimeoutError{JobID: id}
		case <-c.stop:
			return jobs.Outcome{}, &TimeoutError{JobID: id}
		case <-ctx.Done():
			return jobs.Outcome{}, ctx.Err()
		}
	}
}

// wakingRedis is the Redis client the api's Asynq client enqueues
// through. An enqueue whose context asks for a wake (withWake) goes to
// Redis in one pipeline with the wake, after it: Redis runs them in that
// order, so a worker the wake reaches finds the task, and the worker hears
// of the task a round trip sooner than from a wake sent once the enqueue
// has answered. The job's owner record, when the context carries one
// (withOwner), follows in the same pipeline: a round trip fewer a job than
// a transaction of its own. Asynq's enqueue script is recognised by its
// keys (the task's hash and its queue's pending list, internal/rdb);
// TestRunWakesWithItsEnqueue holds it to the Asynq of go.mod.
type wakingRedis struct{ redis.UniversalClient }

// ownerKey is the context key of the owner record an enqueue writes.
type ownerKey struct{}

// ownerRecord is a job's owner record (recordOwner) to write with its
// enqueue; err is the last write's answer, set by wakingRedis.
type ownerRecord struct {
	key, queue, owner string
	keep              time.Duration // the record's lifetime
	mu                sync.Mutex
	written           bool
	err               error
}

// withOwner asks the enqueue made with ctx to write rec.
func withOwner(ctx context.Context, rec *ownerRecord) context.Context {
	return context.WithValue(ctx, ownerKey{}, rec)
}

// add queues rec's write on p: the owner, then the record's lifetime, in
// a transaction (MULTI/EXEC) of their own within the pipeline, so that a
// connection lost between them leaves no record without its lifetime,
// kept for good.
func (rec *ownerRecord) add(ctx context.Context, p redis.Pipeliner) func() {
	multi := p.Do(ctx, "multi")
	set := p.Do(ctx, "hset", rec.key, "queue", rec.queue, "owner:"+rec.owner, 1)
	keep := p.Do(ctx, "expire", rec.key, int64(max(rec.keep/time.Second, 1)))
	exec := p.Do(ctx, "exec")
	return func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.written = true
		rec.err = errors.Join(multi.Err(), set.Err(), keep.Err(), execErr(exec))
	}
}

// execErr is the error of an EXEC's answer: its own, or the first of the
// transaction's commands (answered within it, not as the EXEC's error).
func execErr(exec *redis.Cmd) error {
	answers, err := exec.Slice()
	if err == redis.Nil {
		return errors.New("transaction aborted")
	}
	if err != nil {
		return err
	}
	for _, a := range answers {
		if e, ok := a.(error); ok {
			return e
		}
	}
	return nil
}

// sent reports whether the record went to Redis with an enqueue.
func (rec *ownerRecord) sent() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.written
}

// result is the answer of the record's write: an error when it failed or
// was never sent (the enqueue did not reach Redis).
func (rec *ownerRecord) result() error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case rec.err != nil:
		return fmt.Errorf("record job owner: %w", rec.err)
	case !rec.written:
		return errors.New("record job owner: not sent")
	}
	return nil
}

// wakeKey is the context key of the queue an enqueue wakes the workers
// for.
type wakeKey struct{}

// withWake asks the enqueue made with ctx to wake the workers for queue.
func withWake(ctx context.Context, queue string) context.Context {
	return context.WithValue(ctx, wakeKey{}, queue)
}

func isEnqueue(keys []string) bool {
	return len(keys) == 2 && strings.Contains(keys[0], "}:t:") && strings.HasSuffix(keys[1], ":pending")
}

func (c wakingRedis) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return c.enqueue(ctx, keys, func(r redis.Scripter) *redis.Cmd { return r.EvalSha(ctx, sha1, keys, args...) })
}

func (c wakingRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.enqueue(ctx, keys, func(r redis.Scripter) *redis.Cmd { return r.Eval(ctx, script, keys, args...) })
}

// enqueue runs a script, in one pipeline with a wake when it is an
// enqueue whose context asks for one. A wake that fails is not the
// enqueue's failure: the gate's turns find the task.
func (c wakingRedis) enqueue(ctx context.Context, keys []string, run func(redis.Scripter) *redis.Cmd) *redis.Cmd {
	queue, wakes := ctx.Value(wakeKey{}).(string)
	rec, _ := ctx.Value(ownerKey{}).(*ownerRecord)
	if (!wakes && rec == nil) || !isEnqueue(keys) {
		return run(c.UniversalClient)
	}
	var cmd *redis.Cmd
	var recorded func()
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = run(p)
		if wakes {
			p.Publish(ctx, wakeChannel, queue)
		}
		if rec != nil {
			recorded = rec.add(ctx, p)
		}
		return nil
	})
	if recorded != nil {
		recorded()
	}
	return cmd
}

// wake tells idle workers that work is queued on queue (see gate).
func (c *Client) wake(ctx context.Context, queue string) {
	if err := wake(ctx, c.rdb, queue); err != nil {
		c.log.WarnContext(ctx, "wake the workers", "err", err)
	}
}

// submit enqueues the job, or joins the task that already has its id.
// ok is true when that task has finished and o is its outcome.
func (c *Client) submit(ctx context.Context, j Job, id string) (o jobs.Outcome, ok bool, err error) {
	timeout := j.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	opts := []asynq.Option{asynq.TaskID(id), asynq.Queue(j.Queue),
		asynq.Retention(c.retention(j)), asynq.MaxRetry(max(j.maxRetry()-j.tried, 0)), asynq.Timeout(timeout)}
	if j.delay > 0 {
		opts = append(opts, asynq.ProcessIn(j.delay))
	}
	for attempt := 0; attempt < 2; attempt++ {
		_, err = c.queue.EnqueueContext(ctx, asynq.NewTaskWithHeaders(j.Type, j.Payload, j.Headers), opts...)
		if err == nil {
			return o, false, nil
		}
		if !errors.Is(err, asynq.ErrTaskIDConflict) {
			return o, false, fmt.Errorf("enqueue %s: %w", j.Type, err)
		}
		info, err := c.taskInfo(j.Queue, id)
		if errors.Is(err, asynq.ErrTaskNotFound) {
			continue // gone between the two calls: enqueue afresh
		}
		if err != nil {
			return o, false, fmt.Errorf("inspect job %s: %w", id, err)
		}
		switch info.State {
		case asynq.TaskStateCompleted:
			o, err := decodeOutcome(info)
			return o, err == nil, err
		case asynq.TaskStateArchived:
			// A failed earlier run: run it again rather than repeat a
			// failure that may have been transient.
			if err := c.insp.DeleteTask(j.Queue, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				return o, false, fmt.Errorf("clear failed job %s: %w", id, err)
			}
			continue
		default:
			return o, false, nil // queued or running: wait for it
		}
	}
	return o, false, fmt.Errorf("enqueue %s: task id %s kept conflicting", j.Type, id)
}

// maxRetry is how often a failed attempt of j is retried.
func (j Job) maxRetry() int {
	if j.MaxRetry == 0 {
		return 3
	}
	return j.MaxRetry
}

// retention is how long j's outcome is kept once it has finished.
func (c *Client) retention(j Job) time.Duration {
	if j.Retention > 0 {
		return j.Retention
	}
	return c.cfg.Retention
}

// recordOwner writes rec on a round trip of its own: the record no
// enqueue carried.
func (c *Client) recordOwner(ctx context.Context, rec *ownerRecord) error {
	var done func()
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		done = rec.add(ctx, p)
		return nil
	})
	done()
	if err := rec.result(); err != nil {
		return fmt.Errorf("record job owner: %w", err)
	}
	return nil
}

// allQueues is Asynq's set of queue names in Redis (internal/base's
// AllQueues), which its inspector asks before it reads a task.
const allQueues = "asynq:queues"

// taskInfo is the inspector's GetTaskInfo, after the queue's name is put
// back in Asynq's set of queues when Redis has lost it. Asynq's client
// adds a queue's name once a process, at its first enqueue to it: after
// Redis comes back empty, the api's enqueues no longer add it, and every
// look at a task of the queue, its own tasks included, would answer
// ErrQueueNotFound until the api restarts (a replay asked again, whose id
// is taken, answered 503 for good).
func (c *Client) taskInfo(queue, id string) (*asynq.TaskInfo, error) {
	info, err := c.insp.GetTaskInfo(queue, id)
	if !errors.Is(err, asynq.ErrQueueNotFound) {
		return info, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Looked at again whether this call added the name or another process
	// did since the first look (a worker starting, another api's enqueue):
	// either way the set names the queue now. Redis down: the answer stands.
	if err := c.rdb.SAdd(ctx, allQueues, queue).Err(); err != nil {
		return info, fmt.Errorf("%w (and naming the queue again failed: %v)", asynq.ErrQueueNotFound, err)
	}
	return c.insp.GetTaskInfo(queue, id)
}

// finished reads a task's outcome from its retained result.
func (c *Client) finished(queue, id string) (jobs.Outcome, bool, error) {
	info, err := c.taskInfo(queue, id)
	if err != nil {
		return jobs.Outcome{}, false, err
	}
	if info.State != asynq.TaskStateCompleted && info.State != asynq.TaskStateArchived {
		return jobs.Outcome{}, false, nil
	}
	o, err := decodeOutcome(info)
	return o, err == nil, err
}

func decodeOutcome(info *asynq.TaskInfo) (jobs.Outcome, error) {
	var o jobs.Outcome
	if len(info.Result) == 0 {
		if info.State == asynq.TaskStateArchived {
			return jobs.Outcome{Failure: &jobs.Failure{Code: "INTERNAL_ERROR", Message: "the job failed on every attempt; try again later"}}, nil
		}
		return o, fmt.Errorf("job %s finished without a result", info.ID)
	}
	o, err := jobs.DecodeOutcome(info.Result)
	if err != nil {
		return o, fmt.Errorf("decode result of job %s: %w", info.ID, err)
	}
	return o, nil
}

// JobState is where a job stands, for GET /v1/jobs/{id}.
type JobState struct {
	ID    string
	State string // pending, active, retry, scheduled, completed, failed
	// Outcome is set once the job has finished.
	Outcome *jobs.Outcome
	// Headers are the headers the job was enqueued with (Job.Headers).
	Headers map[string]string
	// Payload is the job's payload (Job.Payload).
	Payload []byte
}

// Status reports a job to its owner; anyone else gets ErrJobNotFound.
func (c *Client) Status(ctx context.Context, id, owner string) (JobState, error) {
	vals, err := c.rdb.HMGet(ctx, jobKeyPrefix+id, "queue", "owner:"+owner).Result()
	if err != nil {
		return JobState{}, fmt.Errorf("look up job %s: %w", id, err)
	}
	queue, _ := vals[0].(string)
	if queue == "" || vals[1] == nil {
		return JobState{}, ErrJobNotFound
	}
	info, err := c.taskInfo(queue, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return JobState{}, ErrJobNotFound
	}
	if err != nil {
		return JobState{}, fmt.Errorf("inspect job %s: %w", id, err)
	}
	st := JobState{ID: id, State: info.State.String(), Headers: info.Headers, Payload: info.Payload}
	switch {
	case info.State == asynq.TaskStateArchived:
		st.State = "failed"
	case len(info.Result) > 0:
		// The handler wrote its outcome and announced it, and Asynq has
		// not marked the task done: not yet (active), or not at all, the
		// worker stopped in between and the task waits to run again
		// (pending, retry), when it answers that outcome (onceHandler)
		// or one like it. The job has finished, and the waiting request
		// may have answered already.
		st.State = "completed"
	case info.State != asynq.TaskStateCompleted:
		return st, nil
	}
	o, err := decodeOutcome(info)
	if err != nil {
		return JobState{}, err
	}
	st.Outcome = &o
	return st, nil
}

// Ping checks the queue's Redis, for readiness.
func (c *Client) Ping(ctx context.Context) error { return c.rdb.Ping(ctx).Err() }

// EnqueueSweep puts a sweep's shards on the sweeps queue (DESIGN 14) and
// wakes the workers. A shard's task id is its sweep and market, so that
// enqueueing a sweep again (after a crash between two shards) adds only
// the shards that are missing.
//
// A shard whose task Asynq gave up on (archived: every try failed) is not
// enqueued again: its id is taken, and the error is a *shardsGivenUp
// naming it, once the others are enqueued.
func (c *Client) EnqueueSweep(ctx context.Context, shards []sweep.ShardTask) error {
	err := enqueueShards(ctx, c.queue, c.insp, shards)
	if _, ok := errors.AsType[*shardsGivenUp](err); err != nil && !ok {
		return err
	}
	c.wake(ctx, jobs.QueueSweeps)
	return err
}

// shardsGivenUp is the error of an enqueue of shards whose tasks Asynq has
// given up on: they never run again, and their sweep cannot finish.
type shardsGivenUp struct{ markets []string }

func (e *shardsGivenUp) Error() string {
	return fmt.Sprintf("the shards of %s were given up on after every try", strings.Join(e.markets, ", "))
}

// enqueueShards puts shards on the sweeps queue, each under its task id
// (sweep and market): a shard still queued, running or retrying is left as
// it is, and one given up on is named in a *shardsGivenUp.
func enqueueShards(ctx context.Context, queue *asynq.Client, insp *asynq.Inspector, shards []sweep.ShardTask) error {
	var givenUp []string
	for _, sh := range shards {
		b, err := json.Marshal(sh)
		if err != nil {
			return fmt.Errorf("encode sweep shard: %w", err)
		}
		_, err = queue.EnqueueContext(ctx, asynq.NewTask(sweep.TaskType, b), asynq.Queue(jobs.QueueSweeps),
			asynq.TaskID(sh.Sweep+":"+sh.Market), asynq.Timeout(30*time.Minute),
			// A shard whose worker died comes back at once (retryDelay);
			// one that fails again and again is a fault worth giving up on,
			// within hours (retryDelay), and its sweep fails with it.
			asynq.MaxRetry(shardMaxRetry))
		if errors.Is(err, asynq.ErrTaskIDConflict) && insp != nil {
			info, iErr := insp.GetTaskInfo(jobs.QueueSweeps, sh.Sweep+":"+sh.Market)
			if iErr == nil && info.State == asynq.TaskStateArchived {
				givenUp = append(givenUp, sh.Market)
			}
			continue
		}
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			return fmt.Errorf("enqueue the shard of %s: %w", sh.Market, err)
		}
	}
	if len(givenUp) > 0 {
		return &shardsGivenUp{markets: givenUp}
	}
	return nil
}
