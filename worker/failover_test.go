package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestRunSurvivesALostEnqueue (issue 28, item 12): a Redis primary that
// fails over before its replica had a job's enqueue loses the task and
// its owner record while a request waits for it. The wait notices the
// task gone and enqueues it again: the job runs once a worker is there,
// the request gets its answer, and GET /v1/jobs/{id} finds the job.
func TestRunSurvivesALostEnqueue(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog(), PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	job := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(`{}`)}
	type result struct {
		o   jobs.Outcome
		id  string
		err error
	}
	res := make(chan result, 1)
	go func() {
		o, id, err := client.Run(ctx, job, "customer-1", 15*time.Second)
		res <- result{o, id, err}
	}()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for {
		if _, err := insp.GetTaskInfo(jobs.QueueReplay, job.ID()); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the job was never enqueued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// What the new primary does not have, written the moment before the
	// old one died: the task and its owner record (the queue itself is
	// older, so replicated).
	id := job.ID()
	pipe := rdb.TxPipeline()
	pipe.Del(ctx, "asynq:{"+jobs.QueueReplay+"}:t:"+id, "updown:job:"+id)
	pipe.LRem(ctx, "asynq:{"+jobs.QueueReplay+"}:pending", 0, id)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := insp.GetTaskInfo(jobs.QueueReplay, id); err == nil {
		t.Fatal("the task is still there")
	}
	time.Sleep(200 * time.Millisecond) // a few polls of the wait see it gone

	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() { scancel(); <-done }()

	r := <-res
	if r.err != nil || r.o.Failure != nil {
		t.Fatalf("the wait for a job lost with Redis: %v %+v", r.err, r.o.Failure)
	}
	// The answer comes with the result, a moment before Asynq marks the
	// task completed: GET /v1/jobs/{id} may say active until then.
	for {
		st, err := client.Status(ctx, r.id, "customer-1")
		if err == nil && st.State == "completed" {
			break
		}
		if err != nil || st.State != "active" || ctx.Err() != nil {
			t.Fatalf("GET /v1/jobs/{id} of the job enqueued again: %+v %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunAfterRedisCameBackEmpty: Redis restarts empty under a client that
// has enqueued to a queue before. Asynq's client names a queue in its set
// of queues once a process, so after the restart its new task's queue is
// unnamed there, and Asynq's inspector answers ErrQueueNotFound for every
// task of it. A request asked again, whose task is already queued, must
// still wait for it and get its answer, not fail for good.
func TestRunAfterRedisCameBackEmpty(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog(), PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	before := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(`{"n":1}`)}
	if _, _, err := client.Run(ctx, before, "customer-1", 100*time.Millisecond); err == nil {
		t.Fatal("a job ran with no worker")
	}
	if err := rdb.FlushDB(ctx).Err(); err != nil { // Redis back, empty
		t.Fatal(err)
	}
	job := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(`{"n":2}`)}
	var te *worker.TimeoutError
	if _, _, err := client.Run(ctx, job, "customer-1", 100*time.Millisecond); !errors.As(err, &te) {
		t.Fatalf("the first ask with no worker: %v, want a timeout", err)
	}
	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() { scancel(); <-done }()
	o, _, err := client.Run(ctx, job, "customer-1", 30*time.Second) // asked again: the same task
	if err != nil || o.Failure != nil {
		t.Fatalf("the job asked again after Redis came back empty: %v %+v", err, o.Failure)
	}
}

// TestRunAnswersInTimeWhileRedisStalls: Redis stops answering (stuck in a
// slow command, or cut off by a partition: connections open, no replies)
// while requests wait for their jobs. A wait still ends when its time is
// up, with the job's id, and StopWaiting (a stopping api) still ends one:
// a look at the task that hangs on Redis must not hold the 504. How soon
// they end is BenchmarkRunWhileRedisStalls's figure.
func TestRunAnswersInTimeWhileRedisStalls(t *testing.T) {
	t.Parallel()
	pastWait, afterStop := stalledWaits(t)
	t.Logf("while Redis stalled: a wait ended %s past its time, StopWaiting ended one after %s",
		pastWait.Round(time.Millisecond), afterStop.Round(time.Millisecond))
}

// BenchmarkRunWhileRedisStalls reports how long past its time a wait for
// a job ends while Redis stalls (ms_past_wait; the look at the task, which
// hangs on Redis, runs beside the wait) and how soon after StopWaiting a
// wait ends (ms_after_stop): the 504 a request gets, and a stopping api's
// grace. The code before the look ran beside the wait: 8-25 s past.
func BenchmarkRunWhileRedisStalls(b *testing.B) {
	var past, stop time.Duration
	for b.Loop() {
		p, s := stalledWaits(b)
		past, stop = past+p, stop+s
	}
	b.ReportMetric(float64(past.Milliseconds())/float64(b.N), "ms_past_wait")
	b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "ms_after_stop")
}

// stalledWaits queues two jobs with no worker, stalls Redis, and returns
// how long past its wait the first request's wait ended and how long the
// second's took to end after StopWaiting; each must end in a timeout
// naming its job.
func stalledWaits(tb testing.TB) (pastWait, afterStop time.Duration) {
	rd := redistest.Start(tb)
	opt, err := redis.ParseURL(rd.URL)
	if err != nil {
		tb.Fatal(err)
	}
	opt.MaxRetries, opt.ContextTimeoutEnabled = 1, true // as the api's client (cmd/updown)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog(), PollInterval: 50 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	defer client.Close()

	type result struct {
		err  error
		took time.Duration
	}
	run := func(n int, wait time.Duration) (chan result, string) {
		job := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: fmt.Appendf(nil, `{"n":%d}`, n)}
		res := make(chan result, 1)
		go func() {
			start := time.Now()
			_, _, err := client.Run(ctx, job, "customer-1", wait)
			res <- result{err, time.Since(start)}
		}()
		return res, job.ID()
	}
	const wait = 1500 * time.Millisecond
	timed, timedID := run(1, wait)
	stopped, stoppedID := run(2, time.Hour)
	// Both queued and owned, as every request's job is before Redis stalls.
	look := redistest.ClientOf(tb, rd.URL)
	for _, id := range []string{timedID, stoppedID} {
		for look.Exists(ctx, "updown:job:"+id, "asynq:{"+jobs.QueueReplay+"}:t:"+id).Val() != 2 {
			if ctx.Err() != nil {
				tb.Fatal("the jobs were never queued")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	rd.Pause()
	defer rd.Resume()

	r := <-timed
	var te *worker.TimeoutError
	if !errors.As(r.err, &te) || te.JobID != timedID {
		tb.Fatalf("the wait while Redis stalls: %v, want a timeout naming %s", r.err, timedID)
	}
	pastWait = r.took - wait
	client.StopWaiting()
	stopAt := time.Now()
	r = <-stopped
	if !errors.As(r.err, &te) || te.JobID != stoppedID {
		tb.Fatalf("the wait StopWaiting ended: %v, want a timeout naming %s", r.err, stoppedID)
	}
	return pastWait, time.Since(stopAt)
}
