package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// seedSweepMarkets writes n resolved BTC 15m markets at the real 300 ms
// cadence, the newest ending half an hour before now.
func seedSweepMarkets(t testing.TB, dbURL string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket, cfg.Outage = 0, 0
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	newest := now.Truncate(15 * time.Minute).Add(-45 * time.Minute)
	for k := range n {
		if _, _, err := g.WriteMarket(ctx, st, store.BTC, store.M15, newest.Add(-time.Duration(k)*15*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
}

// sweepRequest sweeps entry and exit thresholds (entries × exits trials)
// over the newest count BTC 15m markets, with a holdout.
func sweepRequest(entries, exits, count int) string {
	return fmt.Sprintf(`{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","range":{"from":0.2,"to":%g,"step":0.01}},
			{"path":"/exitConditions/0/value","range":{"from":0.5,"to":%g,"step":0.01}}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":%d},
		"split":{"kind":"HOLDOUT","testFraction":0.3}}`, 0.2+0.01*float64(entries-1), 0.5+0.01*float64(exits-1), count)
}

// sweepState is a sweep as GET /v1/sweeps/{id} answers it.
type sweepState struct {
	Status   string `json:"status"`
	Progress struct {
		Done  int `json:"replays_done"`
		Total int `json:"replays_total"`
	} `json:"progress"`
	Results json.RawMessage `json:"results"`
}

func getSweepState(t *testing.T, base, key, id string) sweepState {
	t.Helper()
	a := do(nil, http.MethodGet, base+"/v1/sweeps/"+id, key, "")
	var out struct {
		Data sweepState `json:"data"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.raw, &out) != nil {
		t.Fatalf("GET sweep %s: %v", id, a)
	}
	return out.Data
}

func postSweep(t *testing.T, base, key, body string) string {
	t.Helper()
	a := do(nil, http.MethodPost, base+"/v1/sweeps", key, body)
	id, _ := a.body["data"].(map[string]any)["sweep_id"].(string)
	if a.status != http.StatusAccepted || id == "" {
		t.Fatalf("POST sweep: %v", a)
	}
	return id
}

// waitSweep polls the sweep until ok says so, for at most d.
func waitSweep(t *testing.T, base, key, id string, d time.Duration, what string, ok func(sweepState) bool) sweepState {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := getSweepState(t, base, key, id)
		if ok(s) {
			return s
		}
		if s.Status == "FAILED" || s.Status == "CANCELLED" || time.Now().After(deadline) {
			t.Fatalf("sweep %s, waiting for %s: %s, %d of %d replays", id, what, s.Status, s.Progress.Done, s.Progress.Total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSweepWorkerKilled: `updown worker` is SIGKILLed in the middle of a
// sweep; once Asynq recovers its shards (their leases moved into the past,
// as in TestFaults) another worker finishes the sweep, whose results are
// byte for byte those of the same sweep run without interruption.
func TestSweepWorkerKilled(t *testing.T) {
	t.Parallel()
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	const markets = 20
	seedSweepMarkets(t, dbURL, markets)
	key := createKey(t, dbURL, "sweep-faults@example.com", store.Enterprise)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL, key: key}
	_, base := startAPI(t, s)
	body := sweepRequest(30, 20, markets) // 600 trials × 20 markets

	// The reference: the sweep on one worker, undisturbed.
	ref := startWorker(t, s, "worker-reference", "--concurrency", "4")
	refID := postSweep(t, base, key, body)
	want := waitSweep(t, base, key, refID, 3*time.Minute, "DONE", func(s sweepState) bool { return s.Status == "DONE" })
	ref.signal(t, syscall.SIGTERM)
	if err := ref.wait(t, 30*time.Second); err != nil {
		t.Fatalf("reference worker: %v", err)
	}

	// The same sweep again, its worker killed once some shards are stored
	// and others are running.
	victim := startWorker(t, s, "worker-victim", "--concurrency", "4")
	id := postSweep(t, base, key, body)
	opt, err := asynq.ParseRedisURI(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	var active []*asynq.TaskInfo
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := getSweepState(t, base, key, id)
		if st.Status != "RUNNING" || time.Now().After(deadline) {
			t.Fatalf("sweep %s before the kill: %s, %d of %d", id, st.Status, st.Progress.Done, st.Progress.Total)
		}
		if st.Progress.Done > 0 {
			if tasks, err := insp.ListActiveTasks(jobs.QueueSweeps); err == nil && len(tasks) > 0 {
				active = tasks
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	victim.signal(t, syscall.SIGKILL)
	_ = victim.wait(t, 10*time.Second)
	before := getSweepState(t, base, key, id)
	if before.Status != "RUNNING" || before.Progress.Done >= before.Progress.Total {
		t.Fatalf("after the kill: %s, %d of %d replays: the sweep was not interrupted", before.Status, before.Progress.Done, before.Progress.Total)
	}
	t.Logf("killed the worker at %d of %d replays, with %d shards running", before.Progress.Done, before.Progress.Total, len(active))

	// A minute passes for the dead worker's leases.
	rdb := redisClient(t, rd.URL)
	leaseKey := "asynq:{" + jobs.QueueSweeps + "}:lease"
	tasks, err := insp.ListActiveTasks(jobs.QueueSweeps) // the dead worker's, still active
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if err := rdb.ZAddXX(context.Background(), leaseKey, redis.Z{Score: float64(time.Now().Add(-61 * time.Second).Unix()), Member: task.ID}).Err(); err != nil {
			t.Fatalf("age the lease of %s: %v", task.ID, err)
		}
	}
	startWorker(t, s, "worker-rescuer", "--concurrency", "4")
	got := waitSweep(t, base, key, id, 3*time.Minute, "DONE after the kill", func(s sweepState) bool { return s.Status == "DONE" })
	if got.Progress.Done != got.Progress.Total || got.Progress.Total != want.Progress.Total {
		t.Errorf("progress %d of %d, want %d of %d", got.Progress.Done, got.Progress.Total, want.Progress.Total, want.Progress.Total)
	}
	if !bytes.Equal(got.Results, want.Results) {
		t.Errorf("results after the kill differ from the undisturbed run's:\n got %s\nwant %s", lastN(string(got.Results), 600), lastN(string(want.Results), 600))
	}
}
