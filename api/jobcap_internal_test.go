package api

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// stateRunner is a queue whose one job stands where the test says.
type stateRunner struct{ state atomic.Value }

func (r *stateRunner) Run(context.Context, worker.Job, string, time.Duration) (jobs.Outcome, string, error) {
	panic("not used")
}

func (r *stateRunner) Status(_ context.Context, id, _ string) (worker.JobState, error) {
	return worker.JobState{ID: id, State: r.state.Load().(string)}, nil
}

// TestWatchJobKeepsAQueuedJobsSlot (issue 28, item 4): a job waiting in
// the queue keeps its slot past its bound, which counts how long the job
// may run, not how long it waits; once it runs, the bound lets its slot go.
func TestWatchJobKeepsAQueuedJobsSlot(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	jr := &stateRunner{}
	jr.state.Store("pending")
	s, err := New(Config{Store: memory.New(), Redis: rdb, Jobs: jr, JobSlotLease: time.Second,
		JobsInFlight: map[store.Tier]int{store.Pro: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	release, added, err := s.takeJobSlot(t.Context(), p, "job-1", 0)
	if err != nil || release == nil || !added {
		t.Fatalf("take a slot: %v (added %v)", err, added)
	}
	if again, added, err := s.takeJobSlot(t.Context(), p, "job-1", 0); err != nil || again == nil || added {
		t.Fatalf("the job's own slot taken again: %v (added %v, want false)", err, added)
	}
	var released atomic.Bool
	ended := make(chan struct{})
	const bound = 300 * time.Millisecond
	go s.watchJob(p, "job-1", bound, heldSlot{id: "job-1", release: func() { released.Store(true); release() }}, func(*jobs.Outcome) { close(ended) })

	time.Sleep(3 * time.Second) // ten bounds, three leases
	if released.Load() {
		t.Fatal("the slot of a queued job was given back")
	}
	if _, _, err := s.takeJobSlot(t.Context(), p, "job-2", 0); err == nil {
		t.Fatal("the cap lapsed while the job was queued")
	}
	jr.state.Store("active")
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher never let go of a job running past its bound")
	}
	if n := rdb.ZCard(t.Context(), jobSlotKey("c1")).Val(); n != 0 {
		t.Errorf("%d slots after the watcher let go", n)
	}
}
