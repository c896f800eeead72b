package worker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestRunIsOneRoundTrip (issue 27): a job the api's Client runs costs
// it one round trip to Redis: the enqueue, its wake and the job's owner
// record in one pipeline, the outcome heard on the process's one
// subscription. The owner record had a transaction of its own beside the
// enqueue: two round trips a replay, and a goroutine. The record is still
// written, and lasts: GET /v1/jobs/{id} answers the owner, and no one else.
func TestRunIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	url := redistest.New(t)
	startWorker(t, worker.Config{Redis: redistest.ClientOf(t, url), Store: memory.New(), Logger: quietLog()})
	api := redistest.ClientOf(t, url)
	var trips redistest.Trips
	api.AddHook(&trips)
	// The Client's fallback look at a job's state (PollInterval, 250 ms
	// by default) would add round trips of its own to a job slower than
	// that on a busy machine: far off, only the Run's own are counted.
	c, err := worker.NewClient(t.Context(), worker.ClientConfig{Redis: api, Logger: quietLog(), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A first job loads Asynq's enqueue script, which a fresh Redis lacks
	// (NOSCRIPT), and names the queue in Asynq's set of queues (once a
	// process): the second is the one counted.
	if _, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(t.Name() + " first")}, "owner-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	j := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(t.Name())}
	trips.Start()
	_, id, err := c.Run(t.Context(), j, "owner-1", time.Minute)
	got := trips.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round trips of one Run: %q", got)
	if len(got) != 1 {
		t.Errorf("a Run made %d round trips to Redis, want 1: %q", len(got), got)
	}
	// The owner record's two commands go in a transaction of their own:
	// a connection lost between them would leave a record kept for good.
	if len(got) > 0 && !strings.Contains(strings.Join(redistest.Names(got[0]), " "), "evalsha publish multi hset expire exec") {
		t.Errorf("the Run's first round trip is %q, want the enqueue, its wake and the owner record in a transaction", got[0])
	}

	if ttl := api.TTL(t.Context(), "updown:job:"+id).Val(); ttl < time.Hour {
		t.Errorf("the owner record lasts %v, want at least an hour beyond the job's retention", ttl)
	}
	st, err := c.Status(t.Context(), id, "owner-1")
	if err != nil || st.State != "completed" || st.Outcome == nil {
		t.Errorf("Status for the owner = %+v, %v; want the completed job", st, err)
	}
	if _, err := c.Status(t.Context(), id, "owner-2"); !errors.Is(err, worker.ErrJobNotFound) {
		t.Errorf("Status for someone else: %v, want ErrJobNotFound", err)
	}
}
