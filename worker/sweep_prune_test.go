package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// pruneFixture is a memory store with a customer's sweeps: one cancelled
// (finished now), one running.
func pruneFixture(t *testing.T) (st *memory.Store, finished, running store.Sweep) {
	t.Helper()
	ctx := t.Context()
	st = memory.New()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "prune@example.com", Tier: store.Pro})
	if err != nil {
		t.Fatal(err)
	}
	sw := store.Sweep{CustomerID: c.ID, Request: []byte(`{}`), TrialCount: 1, Markets: []string{"btc-updown-15m-1"}}
	if finished, err = st.CreateSweep(ctx, sw, 0); err != nil {
		t.Fatal(err)
	}
	if finished, err = st.SetSweepStatus(ctx, finished.ID, []store.SweepStatus{store.SweepQueued}, store.SweepCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if running, err = st.CreateSweep(ctx, sw, 0); err != nil {
		t.Fatal(err)
	}
	return st, finished, running
}

func exists(t *testing.T, st store.Store, id string) bool {
	t.Helper()
	_, err := st.GetSweep(t.Context(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestSweepPruner: a finished sweep is kept 30 days and deleted after;
// a sweep in flight is never deleted, however old.
func TestSweepPruner(t *testing.T) {
	t.Parallel()
	st, finished, running := pruneFixture(t)
	at := func(d time.Duration) func() time.Time {
		return func() time.Time { return finished.FinishedAt.Add(d) }
	}
	for _, tc := range []struct {
		after   time.Duration
		deleted int
	}{
		{29 * 24 * time.Hour, 0},
		{worker.SweepRetention - time.Second, 0},
		{worker.SweepRetention + time.Second, 1},
		{400 * 24 * time.Hour, 0},
	} {
		n, err := worker.SweepPruner{Store: st, Log: quietLog(), Now: at(tc.after)}.Prune(t.Context())
		if err != nil || n != tc.deleted {
			t.Errorf("prune %s after the finish: %d deleted, %v; want %d", tc.after, n, err, tc.deleted)
		}
	}
	if exists(t, st, finished.ID) || !exists(t, st, running.ID) {
		t.Errorf("after pruning: finished sweep kept %v, running sweep kept %v; want false, true",
			exists(t, st, finished.ID), exists(t, st, running.ID))
	}
}

// TestSweepPrunerRuns: Run prunes at once and again every Every, so a
// sweep that passes its retention while the pruner runs goes.
func TestSweepPrunerRuns(t *testing.T) {
	t.Parallel()
	st, finished, running := pruneFixture(t)
	var shift atomic.Int64 // how far past the finish the pruner's clock is
	shift.Store(int64(time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	p := worker.SweepPruner{Store: st, Log: quietLog(), Every: 5 * time.Millisecond,
		Now: func() time.Time { return finished.FinishedAt.Add(time.Duration(shift.Load())) }}
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // a few ticks within the retention
	if !exists(t, st, finished.ID) {
		t.Fatal("a sweep finished an hour ago was deleted")
	}
	shift.Store(int64(31 * 24 * time.Hour))
	deadline := time.Now().Add(30 * time.Second) // generous: a loaded machine
	for exists(t, st, finished.ID) {
		if time.Now().After(deadline) {
			t.Fatal("a sweep 31 days past its finish was not deleted within 30 s of ticks")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !exists(t, st, running.ID) {
		t.Error("a running sweep was deleted")
	}
}

// prunedStore records the times a worker asks to prune before.
type prunedStore struct {
	store.Store
	mu     sync.Mutex
	before []time.Time
}

func (s *prunedStore) DeleteSweepsFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	s.mu.Lock()
	s.before = append(s.before, t)
	s.mu.Unlock()
	return s.Store.DeleteSweepsFinishedBefore(ctx, t)
}

// TestWorkerPrunesSweeps: a running worker server prunes the sweeps
// finished 30 days before now.
func TestWorkerPrunesSweeps(t *testing.T) {
	t.Parallel()
	st := &prunedStore{Store: memory.New()}
	srv, err := worker.NewServer(worker.Config{Redis: redistest.Client(t), Store: st, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st.mu.Lock()
		calls := append([]time.Time(nil), st.before...)
		st.mu.Unlock()
		if len(calls) > 0 {
			want := started.Add(-worker.SweepRetention)
			if d := calls[0].Sub(want); d < 0 || d > time.Hour {
				t.Errorf("the worker pruned sweeps finished before %v, want %v (30 days before it started)", calls[0], want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not prune sweeps within 30 s of starting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
