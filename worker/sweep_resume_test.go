package worker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
	"github.com/updown/updown/worker"
)

// TestSweepResumerQueuesLostShards: a RUNNING sweep whose shard tasks were
// lost with Redis (nothing queued, nothing stored) has them queued again
// once it has not moved for SweepStallAfter; a sweep that moved recently,
// and a finished one, are left alone. Before the resumer such a sweep
// stayed RUNNING for ever and held its customer's only PRO sweep slot.
func TestSweepResumerQueuesLostShards(t *testing.T) {
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	var got [][]sweep.ShardTask
	r := worker.SweepResumer{Store: mem, Enqueue: func(_ context.Context, s []sweep.ShardTask) error {
		got = append(got, slices.Clone(s))
		return nil
	}}

	r.Now = time.Now
	if n, err := r.Resume(ctx); err != nil || n != 0 || len(got) != 0 {
		t.Fatalf("a sweep updated just now: Resume = %d, %v, enqueued %v; want nothing", n, err, got)
	}

	r.Now = func() time.Time { return time.Now().Add(worker.SweepStallAfter + time.Second) }
	n, err := r.Resume(ctx)
	if err != nil || n != len(shards) || len(got) != 1 || !slices.Equal(got[0], shards) {
		t.Fatalf("a stalled sweep: Resume = %d, %v, enqueued %v; want its %d shards %v", n, err, got, len(shards), shards)
	}

	got = nil
	if _, err := mem.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Resume(ctx); err != nil || n != 0 || len(got) != 0 {
		t.Fatalf("a cancelled sweep: Resume = %d, %v, enqueued %v; want nothing", n, err, got)
	}
}

// TestSweepResumerStartsQueuedSweep: a sweep left QUEUED (its api stopped
// between storing it and queueing its shards) is queued and RUNNING.
func TestSweepResumerStartsQueuedSweep(t *testing.T) {
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	c, err := mem.CreateSweep(ctx, store.Sweep{CustomerID: sw.CustomerID, Request: sw.Request, TrialCount: sw.TrialCount, Markets: sw.Markets}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, ""); err != nil {
		t.Fatal(err)
	}
	var got []sweep.ShardTask
	r := worker.SweepResumer{Store: mem, Now: func() time.Time { return time.Now().Add(worker.SweepStallAfter + time.Second) },
		Enqueue: func(_ context.Context, s []sweep.ShardTask) error { got = append(got, s...); return nil }}
	if n, err := r.Resume(ctx); err != nil || n != len(shards) {
		t.Fatalf("Resume = %d, %v; want %d", n, err, len(shards))
	}
	for i := range got {
		if got[i].Sweep != c.ID || got[i].Market != shards[i].Market {
			t.Fatalf("enqueued %v; want the shards of %s", got, c.ID)
		}
	}
	if s, err := mem.GetSweep(ctx, c.ID); err != nil || s.Status != store.SweepRunning {
		t.Fatalf("after Resume the sweep is %v, %v; want RUNNING", s.Status, err)
	}
}

// TestSweepResumerFinishesSummarizedNowhere: a sweep whose every shard is
// stored but which is still RUNNING (the worker that stored the last shard
// stopped before it summarized them, and its task was lost) has one shard
// queued again: run again, it stores nothing and finishes the sweep.
func TestSweepResumerFinishesSummarizedNowhere(t *testing.T) {
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	for _, sh := range shards {
		if _, err := mem.PutSweepShard(ctx, sw.ID, sh.Market, sw.TrialCount, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := mem.GetSweep(ctx, sw.ID); err != nil || s.Status != store.SweepRunning {
		t.Fatalf("sweep %v, %v; want RUNNING", s.Status, err)
	}
	var got []sweep.ShardTask
	r := worker.SweepResumer{Store: mem, Now: func() time.Time { return time.Now().Add(worker.SweepStallAfter + time.Second) },
		Enqueue: func(_ context.Context, s []sweep.ShardTask) error { got = append(got, s...); return nil }}
	if n, err := r.Resume(ctx); err != nil || n != 1 || len(got) != 1 || got[0] != shards[len(shards)-1] {
		t.Fatalf("Resume = %d, %v, enqueued %v; want the last shard %v", n, err, got, shards[len(shards)-1])
	}
}
