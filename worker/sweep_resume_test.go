package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/redis/redistest"
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

// TestSweepResumerFailsSweepOfShardGivenUp: a RUNNING sweep one of whose
// shards Asynq gave up on without the sweep being failed (its worker died
// on the shard's every try, killed by the shard's memory, or the
// database was down when the shard's last try failed and the worker went
// to fail the sweep) is failed by the resumer, naming the market: it
// cannot finish. The shard's archived task kept its id taken, so the
// resumer's enqueue, every minute, did nothing, and the sweep stayed
// RUNNING for good, holding one of its customer's sweeps in flight. Its
// other shards, queued, are left to find it failed.
func TestSweepResumerFailsSweepOfShardGivenUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sw, shards := busyFixture(t)
	rdb := redistest.Client(t)
	client, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if err := client.EnqueueSweep(ctx, shards); err != nil {
		t.Fatal(err)
	}
	r := worker.SweepResumer{Store: mem, Enqueue: client.EnqueueSweep, Log: quietLog(),
		Now: func() time.Time { return time.Now().Add(worker.SweepStallAfter + time.Second) }}
	// Its shards all queued (no worker runs), the sweep is left as it is.
	if _, err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := mem.GetSweep(ctx, sw.ID); err != nil || got.Status != store.SweepRunning {
		t.Fatalf("a stalled sweep whose shards are queued is %s (%q), %v; want RUNNING", got.Status, got.Error, err)
	}

	insp := asynq.NewInspectorFromRedisClient(rdb)
	if err := insp.ArchiveTask(jobs.QueueSweeps, shards[1].Sweep+":"+shards[1].Market); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := mem.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepFailed || !strings.Contains(got.Error, shards[1].Market) {
		t.Fatalf("the stalled sweep with a shard given up on is %s (%q), want FAILED naming %s", got.Status, got.Error, shards[1].Market)
	}
}
