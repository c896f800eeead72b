package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// names is a trip's commands' names.
func names(trip [][]string) string { return strings.Join(redistest.Names(trip), " ") }

// isReplayDequeue reports whether a command is Asynq's dequeue of the
// replay queue.
func isReplayDequeue(c []string) bool {
	return len(c) > 4 && (c[0] == "evalsha" || c[0] == "eval") && c[3] == "asynq:{"+jobs.QueueReplay+"}:pending" &&
		strings.HasSuffix(c[4], ":paused")
}

// TestReplayRoundTrips (issue 27) is the inventory of the Redis round
// trips of one first-time replay, api and worker each on a client of its
// own, with rate limits and the job cap on. The api makes four, in turn:
// the rate limit (one script, which also checks the cached key), the job
// slot (beside the market's read from the store), the enqueue with its
// wake and the job's owner record (one pipeline), and the slot given back
// once the outcome was heard on the process's one subscription. It made
// five: the owner record had a transaction of its own. The worker fetches
// the task once (the dequeue's round trip reads the queue's length, and
// the gate answers the next dequeue of the emptied queue: it asked Redis
// again after every task), writes and announces the outcome in one
// transaction, and marks the task done.
func TestReplayRoundTrips(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	url := redistest.New(t)
	apiRdb, workerRdb := redistest.ClientOf(t, url), redistest.ClientOf(t, url)
	var apiTrips, workerTrips redistest.Trips
	apiRdb.AddHook(&apiTrips)
	workerRdb.AddHook(&workerTrips)
	// The Client's fallback look at a job's state (PollInterval, 250 ms
	// by default) would add round trips of its own to a replay slower than
	// that on a busy machine: far off, only the replay's own are counted.
	client, err := worker.NewClient(t.Context(), worker.ClientConfig{Redis: apiRdb, Logger: quiet(), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	w, err := worker.NewServer(worker.Config{Redis: workerRdb, Store: st, Logger: quiet(), Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait, o.redis = st, client, time.Minute, apiRdb })
	slug, _ := snapshotMarket()
	replayOf := func(size int) response {
		t.Helper()
		r := b.replay(store.Pro, replayBody(slug, func(m map[string]any) { m["positionSize"] = size }))
		if r.status != http.StatusOK {
			t.Fatalf("replay: %d %s", r.status, r.body)
		}
		return r
	}
	// The first replays load the scripts, name the queue in Asynq's set
	// of queues (once a process) and fill the auth cache.
	replayOf(1)
	replayOf(2)
	// and the worker marks a task done after announcing its outcome: the
	// count begins once it has.
	look := redistest.ClientOf(t, url)
	for look.LLen(t.Context(), "asynq:{"+jobs.QueueReplay+"}:active").Val() > 0 {
		time.Sleep(5 * time.Millisecond)
	}

	const replays = 5
	workerTrips.Start()
	began := time.Now()
	var apiPer [][][][]string
	for i := range replays {
		apiTrips.Start()
		replayOf(10 + i)
		apiPer = append(apiPer, apiTrips.Stop())
	}
	// The worker marks the last task done after its announcement: wait
	// for it.
	for look.LLen(t.Context(), "asynq:{"+jobs.QueueReplay+"}:active").Val() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(began)
	workerAll := workerTrips.Stop()

	for i, trips := range apiPer {
		var kept []string
		for _, trip := range trips {
			// The customer's generation, read when the cached key
			// lapses (every 5 s): not the replay's.
			if names(trip) == "get" {
				continue
			}
			kept = append(kept, names(trip))
		}
		if i == 0 {
			t.Logf("the api's round trips of a replay: %q", kept)
		}
		if len(kept) > 4 {
			t.Errorf("replay %d: the api made %d round trips to Redis, want at most 4: %q", i, len(kept), kept)
		}
	}

	dequeues := 0
	var mine []string
	for _, trip := range workerAll {
		for _, c := range trip {
			if isReplayDequeue(c) {
				dequeues++
				mine = append(mine, names(trip))
				break
			}
			if strings.Contains(strings.Join(c, " "), "asynq:{"+jobs.QueueReplay+"}:t:") {
				mine = append(mine, names(trip))
				break
			}
		}
	}
	t.Logf("the worker's round trips of %d replays: %q", replays, mine)
	// Besides, the gate asks every queue again once a second.
	allowed := replays + int(elapsed/time.Second) + 1
	if dequeues > allowed {
		t.Errorf("%d replays: the worker made %d dequeue calls of their queue, want at most %d (one a replay, and the gate's turns)",
			replays, dequeues, allowed)
	}
}
