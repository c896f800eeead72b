package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/worker"
)

// seedSweepMarkets writes n resolved BTC 15m markets at the real 300 ms
// cadence, the newest ending before now, and returns their slugs, oldest
// first.
func seedSweepMarkets(t *testing.T, st store.Store, n int) []string {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC()
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket, cfg.Outage = 0, 0
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	newest := now.Truncate(15 * time.Minute).Add(-30 * time.Minute)
	slugs := make([]string, n)
	for k := range n {
		m, _, err := g.WriteMarket(ctx, st, store.BTC, store.M15, newest.Add(-time.Duration(n-1-k)*15*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		slugs[k] = m.Slug
	}
	return slugs
}

// shardLog is a worker's store that notes when each shard starts its
// work (reads its market, after finding its sweep running) and when it
// stores its results.
type shardLog struct {
	store.Store
	mu            sync.Mutex
	starts, puts  []time.Time // puts: shard results offered to the store
	startsMarkets []string
}

func (s *shardLog) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	s.mu.Lock()
	s.starts, s.startsMarkets = append(s.starts, time.Now()), append(s.startsMarkets, slug)
	s.mu.Unlock()
	return s.Store.GetMarket(ctx, slug)
}

func (s *shardLog) PutSweepShard(ctx context.Context, id, market string, trials int, results []byte) (store.Sweep, error) {
	s.mu.Lock()
	s.puts = append(s.puts, time.Now())
	s.mu.Unlock()
	return s.Store.PutSweepShard(ctx, id, market, trials, results)
}

// after counts the times at or after t.
func after(ts []time.Time, t time.Time) int {
	n := 0
	for _, x := range ts {
		if !x.Before(t) {
			n++
		}
	}
	return n
}

// TestSweepCancelStopsShards runs a large ENTERPRISE sweep on a real Asynq
// worker over Postgres and cancels it with DELETE once its first shards
// are stored: the sweep is CANCELLED and its progress stops there; every
// shard still queued is dropped without reading its market, and a shard
// running at the cancel stops (its watcher) without storing results. The
// test counts shard starts and stores after the cancel, plus a margin
// generous for a loaded machine (SweepWatch is 250 ms), and asserts there
// are none; it asserts no wall-clock bound.
func TestSweepCancelStopsShards(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	const markets = 24
	seedSweepMarkets(t, st, markets)
	log := &shardLog{Store: st}
	q := newQueue(t, st)
	q.runWorker(t, worker.Config{Store: log, Concurrency: 4})
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = st, q.client, q.client })
	key := b.keys[store.Enterprise]

	// 1,500 trials a market: each shard runs for a while, and the sweep
	// for many times the cancel's reach.
	body := `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","range":{"from":0.2,"to":0.69,"step":0.01}},
			{"path":"/exitConditions/0/value","range":{"from":0.5,"to":0.79,"step":0.01}}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":` + fmt.Sprint(markets) + `}}`
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", body)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	var created struct {
		Data struct {
			SweepID string `json:"sweep_id"`
			Trials  int    `json:"trials"`
			Markets int    `json:"markets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	id := created.Data.SweepID
	if created.Data.Trials != 1500 || created.Data.Markets != markets {
		t.Fatalf("created %s", r.body)
	}
	type progress struct {
		Data struct {
			Status   string `json:"status"`
			Progress struct {
				Done  int `json:"replays_done"`
				Total int `json:"replays_total"`
			} `json:"progress"`
		} `json:"data"`
	}
	get := func() progress {
		t.Helper()
		r := b.do(http.MethodGet, "/v1/sweeps/"+id, key, "", "")
		var p progress
		if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		return p
	}
	waitFor(t, "a shard stored", func() bool { return get().Data.Progress.Done > 0 })

	r = b.do(http.MethodDelete, "/v1/sweeps/"+id, key, "", "")
	cancelled := time.Now()
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"CANCELLED"`) {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	at := get()

	// Every remaining shard is taken from the queue and dropped: wait
	// until the sweeps queue is empty.
	insp := asynq.NewInspectorFromRedisClient(q.rdb)
	waitFor(t, "the sweeps queue emptied after the cancel", func() bool {
		qi, err := insp.GetQueueInfo(jobs.QueueSweeps)
		if err != nil {
			t.Fatal(err)
		}
		return qi.Pending+qi.Active+qi.Scheduled+qi.Retry == 0
	})

	const margin = 10 * time.Second // generous: the suite runs on busy machines
	log.mu.Lock()
	starts, puts := after(log.starts, cancelled.Add(margin)), after(log.puts, cancelled.Add(margin))
	total := len(log.starts)
	log.mu.Unlock()
	if starts != 0 || puts != 0 {
		t.Errorf("%d shards started and %d offered results more than %s after the cancel; want none", starts, puts, margin)
	}
	if total >= markets {
		t.Errorf("every one of the %d shards read its market: the cancel stopped nothing", markets)
	}
	end := get()
	if end.Data.Status != "CANCELLED" || end.Data.Progress.Done != at.Data.Progress.Done || end.Data.Progress.Done >= end.Data.Progress.Total {
		t.Errorf("after the cancel: %+v, at the cancel %+v; want CANCELLED with the progress of the cancel", end.Data, at.Data)
	}
	t.Logf("%d of %d shards started, %d replays of %d stored; %d shard starts after the cancel (within the margin)",
		total, markets, end.Data.Progress.Done, end.Data.Progress.Total, after(log.starts, cancelled))
}
