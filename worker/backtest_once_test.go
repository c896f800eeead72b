package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestBacktestRunAgainKeepsItsReport: a multi-market backtest whose worker
// wrote its report (and the request was answered with it) but stopped
// before Asynq marked the task done is run again by another worker, after
// its shutdown requeued it. The run again must answer the report already
// given, not replay every market again: a batch of up to 100 markets is
// the costliest task there is, and a report recomputed later (its deadline
// cutting off other shards, a market corrected meanwhile) may differ from
// the one the customer got. A shard, a group of up to 25 of its markets,
// run again answers its written outcome the same way.
func TestBacktestRunAgainKeepsItsReport(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{backtest.TaskType, backtest.GroupType} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			backtestRunAgain(t, kind)
		})
	}
}

func backtestRunAgain(t *testing.T, kind string) {
	f := newBTFixture(t)
	req := backtest.Request{Strategy: testSpec(t, 100), Markets: f.markets[:8]}
	markets := req.Markets
	var payload []byte
	var err error
	if kind == backtest.TaskType {
		payload, err = json.Marshal(req)
	} else {
		if err := req.Normalize(); err != nil {
			t.Fatal(err)
		}
		g := req.Groups()[0]
		markets = g.Markets
		payload, err = json.Marshal(g)
	}
	if err != nil {
		t.Fatal(err)
	}
	job := worker.Job{Type: kind, Queue: jobs.QueueBacktest, Payload: payload, Timeout: time.Minute}

	// One slot: a batch runs its shards itself, and the only result
	// written by a task is its own, which the stall holds once written.
	stall := &stallAfterResult{key: "asynq:{" + jobs.QueueBacktest + "}:t:" + job.ID(),
		stalled: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(stall.release) })
	first := redistest.ClientOf(t, f.url)
	first.AddHook(stall)
	ss1 := &servedStore{Store: f.st, served: map[string]int{}}
	w1, err := worker.NewServer(worker.Config{Redis: first, Store: ss1, Logger: quietLog(), Concurrency: 1,
		ShutdownTimeout: 100 * time.Millisecond, Backtest: worker.BacktestConfig{PollInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	stopped1 := make(chan struct{})
	go func() { _ = w1.Run(ctx1); close(stopped1) }()
	t.Cleanup(func() { stop1(); <-stopped1 })

	o, id, err := f.client.Run(t.Context(), job, "customer-1", patience(t))
	if err != nil || o.Failure != nil {
		t.Fatalf("the backtest: %v, failure %+v", err, o.Failure)
	}
	answered, err := o.Data()
	if err != nil {
		t.Fatal(err)
	}
	<-stall.stalled
	if n := len(ss1.slugs()); n != len(markets) {
		t.Fatalf("the first run replayed %d markets, want %d", n, len(markets))
	}

	// The first worker stops; the batch it could not mark done goes back
	// to the queue, and a second worker takes it.
	stop1()
	<-stopped1
	ss2 := f.start(t, 2, 0)
	awaitCompleted(t, f.rdb, jobs.QueueBacktest, id, "the backtest run again")
	if served := ss2.slugs(); len(served) != 0 {
		t.Errorf("the backtest run again replayed %d markets (%v), want none: its report was written", len(served), served)
	}
	st, err := f.client.Status(t.Context(), id, "customer-1")
	if err != nil || st.Outcome == nil {
		t.Fatalf("the backtest run again: %v, outcome %v", err, st.Outcome != nil)
	}
	kept, err := st.Outcome.Data()
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != string(answered) {
		t.Errorf("the backtest's kept report changed when it ran again:\nanswered %.400s\nkept     %.400s", answered, kept)
	}
}
