package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestCollectorResolvesThroughWorker runs the collector over markets of two
// seconds with resolution scheduled on Asynq, and a real worker on a real
// redis-server resolving them, and checks each ended market against the
// fake upstreams. It also checks that scheduling one market twice queues
// one task, and that a task for an unknown market is dropped, not retried.
func TestCollectorResolvesThroughWorker(t *testing.T) {
	rdb := redistest.Client(t)
	st := memory.New()
	scheme := polytest.QuickScheme{Length: 2 * time.Second}
	poly := polytest.New(t, polytest.Options{Scheme: scheme})
	bin := binancetest.New(t, binancetest.Options{})
	// Workers take the upstreams from the environment, as in production.
	t.Setenv(collect.EnvGammaURL, poly.URL)
	t.Setenv(collect.EnvCLOBURL, poly.URL)
	t.Setenv(collect.EnvBinanceSpotURL, bin.URL)
	t.Setenv(collect.EnvBinanceFuturesURL, bin.URL)

	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workerDone := make(chan error, 1)
	go func() { workerDone <- srv.Run(ctx) }()

	series := []collect.Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.SOL, MarketType: store.H1}}
	began := time.Now()
	poly.AddRange(series, began, began.Add(time.Minute))
	sched := worker.NewResolutionScheduler(rdb)
	c, err := collect.New(collect.Config{
		Upstreams:         collect.Upstreams{Gamma: poly.URL, CLOB: poly.URL, BinanceSpot: bin.URL, BinanceFutures: bin.URL},
		Store:             st,
		Live:              memory.NewLive(),
		Scheduler:         sched,
		Scheme:            scheme,
		Logger:            quietLog(),
		Series:            series,
		Interval:          100 * time.Millisecond,
		DiscoveryInterval: 200 * time.Millisecond,
		ResolveDelay:      100 * time.Millisecond,
		FlushInterval:     100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopCollector := context.WithCancel(ctx)
	collectorDone := make(chan error, 1)
	go func() { collectorDone <- c.Run(cctx) }()
	time.Sleep(5 * time.Second)
	stopCollector()
	if err := <-collectorDone; err != nil {
		t.Fatal(err)
	}
	ended := time.Now()

	resolved := 0
	for _, up := range poly.Markets() {
		if up.End.After(ended) || up.Start.Before(began.Truncate(scheme.Length)) {
			continue
		}
		slug := polytest.SlugOf(&up)
		var m store.Market
		if _, err := st.GetMarket(context.Background(), slug); errors.Is(err, store.ErrNotFound) {
			// A window of two seconds that a loaded machine's discovery
			// rounds never caught: no market to resolve (discovery has
			// tests of its own). Those found must all resolve.
			t.Logf("%s was never discovered", slug)
			continue
		}
		// Asynq moves scheduled tasks to their queue every few seconds.
		deadline := time.Now().Add(20 * time.Second)
		for {
			m, err = st.GetMarket(context.Background(), slug)
			if err == nil && m.Resolved() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not resolved by the worker: %+v %v", slug, m, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resolved++
		if *m.Winner != poly.Winner(&up) || *m.CoinPriceStart != bin.Price(up.Coin, up.Start) ||
			*m.CoinPriceEnd != bin.Price(up.Coin, up.End) || m.FinalVolume == nil || *m.FinalVolume != up.Volume {
			t.Errorf("%s resolved as %s %v→%v volume %v; upstream: %s %v→%v volume %v", slug,
				*m.Winner, *m.CoinPriceStart, *m.CoinPriceEnd, m.FinalVolume,
				poly.Winner(&up), bin.Price(up.Coin, up.Start), bin.Price(up.Coin, up.End), up.Volume)
		}
	}
	if resolved < 2*len(series) {
		t.Errorf("%d markets resolved, want at least %d", resolved, 2*len(series))
	}

	// Scheduling a market twice queues one task.
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for range 2 {
		if err := sched.ScheduleResolution(ctx, "btc-updown-5m-4102444800", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	scheduled, err := insp.ListScheduledTasks(jobs.QueueCollect)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ti := range scheduled {
		if ti.ID == worker.ResolutionTaskID("btc-updown-5m-4102444800") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d tasks for a market scheduled twice, want 1", n)
	}

	// Polymarket's market_resolved: the scheduled task runs now.
	if err := sched.ResolveNow(ctx, "btc-updown-5m-4102444800"); err != nil {
		t.Fatal(err)
	}
	if ti, err := insp.GetTaskInfo(jobs.QueueCollect, worker.ResolutionTaskID("btc-updown-5m-4102444800")); err == nil && ti.State == asynq.TaskStateScheduled {
		t.Errorf("ResolveNow left the task scheduled for %v", ti.NextProcessAt)
	}

	// A market Polymarket never settled, ended two hours ago: the worker
	// settles it by the series' rule and books a check for Polymarket's
	// verdict.
	gone := time.Now().Add(-2 * time.Hour).Truncate(5 * time.Minute)
	lost := store.Market{Slug: collect.Slug(store.BTC, store.M5, gone), MarketID: "424242", Coin: store.BTC, MarketType: store.M5,
		StartTime: gone, EndTime: gone.Add(5 * time.Minute), ClobTokenUp: "1", ClobTokenDown: "2"}
	if err := st.UpsertMarkets(ctx, []store.Market{lost}); err != nil {
		t.Fatal(err)
	}
	if err := sched.ScheduleResolution(ctx, lost.Slug, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, err := st.GetMarket(ctx, lost.Slug)
		ti, terr := insp.GetTaskInfo(jobs.QueueCollect, worker.VerifyTaskID(lost.Slug, 1))
		if err == nil && m.Resolved() && terr == nil {
			if m.ResolutionSource != store.SourceRecorded || !collect.AwaitsVerdict(m) || ti.State != asynq.TaskStateScheduled ||
				time.Until(ti.NextProcessAt) < 5*time.Minute {
				t.Errorf("fallback %+v; check %+v", m, ti)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fallback resolution and its check: %+v %v; %v", m, err, terr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A market that does not exist is archived at once, not retried.
	if err := sched.ScheduleResolution(ctx, "eth-updown-5m-1", 0); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		ti, err := insp.GetTaskInfo(jobs.QueueCollect, worker.ResolutionTaskID("eth-updown-5m-1"))
		if err == nil && ti.State == asynq.TaskStateArchived {
			if ti.Retried != 0 {
				t.Errorf("an unknown market's task was retried %d times", ti.Retried)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unknown market's task is not archived: %+v %v", ti, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cancel()
	if err := <-workerDone; err != nil {
		t.Error(err)
	}
}
