package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// countingModel is a model whose every answer differs (as a model's at a
// temperature above 0 does): the built-in generator's strategy, its
// explanation numbering the call.
type countingModel struct{ calls atomic.Int32 }

func (m *countingModel) Generate(ctx context.Context, req strategy.Request) (strategy.Spec, error) {
	n := m.calls.Add(1)
	spec, err := strategy.Builtin{}.Generate(ctx, req)
	spec.Explanation = fmt.Sprintf("the model's answer number %d", n)
	return spec, err
}

// stallAfterResult holds, once, the round trip that writes a task's
// result, after Redis has done it, until release: a worker that stops
// (killed, cut off, or shut down past its timeout) between writing its
// outcome and telling Asynq the task is done.
type stallAfterResult struct {
	// key, when set, is the task hash whose result write is held; else
	// the first task's to write one is.
	key     string
	stalled chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *stallAfterResult) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *stallAfterResult) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *stallAfterResult) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			args := cmd.Args()
			if strings.ToLower(cmd.Name()) == "hset" && len(args) > 2 && strings.Contains(fmt.Sprint(args[1]), "}:t:") && args[2] == "result" &&
				(h.key == "" || args[1] == h.key) {
				h.once.Do(func() {
					close(h.stalled)
					<-h.release
				})
			}
		}
		return err
	}
}

// TestGenerationRunAgainKeepsItsAnswer: a generation whose worker wrote its
// outcome (and the request was answered with it) but stopped before Asynq
// marked the task done is run again by another worker, after its shutdown
// requeued it. The run again must answer the strategy already given, not
// ask the model for another: the model was called twice, and the job's
// kept answer (GET /v1/jobs/{id}) changed from the one the customer got.
//
// A refused prompt's answer (the generator could not read it) is kept the
// same way, and its task completes again as it did, not archived as a
// failure.
func TestGenerationRunAgainKeepsItsAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prompt string
		refused      bool
	}{
		{"answered", "buy UP when price_up drops below 0.35, exit above 0.6", false},
		{"refused", "what a lovely day", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			generationRunAgain(t, tc.prompt, tc.refused)
		})
	}
}

func generationRunAgain(t *testing.T, prompt string, refused bool) {
	url := redistest.New(t)
	model := &countingModel{}
	stall := &stallAfterResult{stalled: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(stall.release) })

	first := redistest.ClientOf(t, url)
	first.AddHook(stall)
	w1, err := worker.NewServer(worker.Config{Redis: first, Store: memory.New(), Logger: quietLog(), Concurrency: 2,
		ShutdownTimeout: 100 * time.Millisecond, Backtest: worker.BacktestConfig{Generator: model}})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	stopped1 := make(chan struct{})
	go func() { _ = w1.Run(ctx1); close(stopped1) }()
	t.Cleanup(func() { stop1(); <-stopped1 })

	rdb := redistest.ClientOf(t, url)
	client, err := worker.NewClient(t.Context(), worker.ClientConfig{Redis: rdb, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	payload, _ := json.Marshal(strategy.Request{Prompt: prompt})
	job := worker.Job{Type: strategy.TaskType, Queue: jobs.QueueAI, Payload: payload, Version: "one request"}
	o, id, err := client.Run(t.Context(), job, "customer-1", patience(t))
	if err != nil || (o.Failure != nil) != refused {
		t.Fatalf("the generation: %v, failure %+v, want refused %v", err, o.Failure, refused)
	}
	answered, _ := o.Data()
	<-stall.stalled

	// The first worker stops; the task it could not mark done goes back
	// to the queue, and a second worker takes it.
	stop1()
	<-stopped1
	// Requeued, waiting for a worker, the job answers the outcome it
	// wrote (GET /v1/jobs/{id} said 202, still running).
	if st, err := client.Status(t.Context(), id, "customer-1"); err != nil || st.State != "completed" || st.Outcome == nil {
		t.Errorf("the requeued job with its outcome written: state %q, outcome %v, err %v; want completed with the outcome", st.State, st.Outcome != nil, err)
	} else if got, _ := st.Outcome.Data(); string(got) != string(answered) {
		t.Errorf("the requeued job answers %s, want the outcome given %s", got, answered)
	}
	startWorker(t, worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog(), Concurrency: 2,
		Backtest: worker.BacktestConfig{Generator: model}})
	// Done when Asynq says so: the job answers its written outcome from
	// the start (above), so its state cannot tell the run again ended.
	awaitCompleted(t, rdb, jobs.QueueAI, id, "the generation run again")
	st, err := client.Status(t.Context(), id, "customer-1")
	if err != nil || st.Outcome == nil {
		t.Fatalf("the job run again: %v, outcome %v", err, st.Outcome != nil)
	}
	kept, err := st.Outcome.Data()
	if err != nil {
		t.Fatal(err)
	}
	if refused {
		if st.Outcome.Failure == nil || o.Failure == nil || *st.Outcome.Failure != *o.Failure {
			t.Errorf("the refused job's kept answer %+v, want the refusal given %+v", st.Outcome.Failure, o.Failure)
		}
		kept, answered = nil, nil
	}
	if n := model.calls.Load(); n != 1 {
		t.Errorf("the model was called %d times for one generation, want 1", n)
	}
	if string(kept) != string(answered) {
		t.Errorf("the job's kept answer changed when it ran again:\nanswered %s\nkept     %s", answered, kept)
	}
}
