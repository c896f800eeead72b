package worker_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// lockedBuffer is a log sink read while the worker writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNotSettledRetryIsNotAnError resolves a market that has not ended:
// the resolver answers collect.ErrNotSettled and the task is retried. That
// wait is expected (every market meets it once or twice), so it is logged
// at INFO, not as a failed task at ERROR.
func TestNotSettledRetryIsNotAnError(t *testing.T) {
	rdb := redistest.Client(t)
	st := memory.New()
	poly := polytest.New(t, polytest.Options{})
	bin := binancetest.New(t, binancetest.Options{})
	t.Setenv(collect.EnvGammaURL, poly.URL)
	t.Setenv(collect.EnvCLOBURL, poly.URL)
	t.Setenv(collect.EnvBinanceSpotURL, bin.URL)
	t.Setenv(collect.EnvBinanceFuturesURL, bin.URL)

	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	start := time.Now().Truncate(time.Hour).Add(time.Hour) // ends over an hour from now
	m := store.Market{Slug: collect.Slug(store.BTC, store.H1, start), MarketID: "777001", Coin: store.BTC, MarketType: store.H1,
		StartTime: start, EndTime: start.Add(time.Hour), ClobTokenUp: "11", ClobTokenDown: "12"}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	if err := worker.NewResolutionScheduler(rdb).ScheduleResolution(ctx, m.Slug, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), m.Slug) {
		if time.Now().After(deadline) {
			t.Fatalf("the resolution of %s was not logged within 30s:\n%s", m.Slug, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if !strings.Contains(line, m.Slug) {
			continue
		}
		if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "not settled") {
			t.Errorf("an expected wait for the upstream's settlement is logged as:\n%s\nwant an INFO line saying it is not settled yet", line)
		}
	}
}

// TestResolverLogsOneComponent fails the upstream of a resolution: the
// resolver's warning carries one "component" key ("resolver"), not the
// worker's and its own, which a JSON log holds as a record with a
// duplicate key.
func TestResolverLogsOneComponent(t *testing.T) {
	rdb := redistest.Client(t)
	st := memory.New()
	poly := polytest.New(t, polytest.Options{})
	poly.FailAlways(polytest.RouteEvents, polytest.Fault{Status: 503})
	poly.FailAlways(polytest.RouteMarkets, polytest.Fault{Status: 503})
	bin := binancetest.New(t, binancetest.Options{})
	t.Setenv(collect.EnvGammaURL, poly.URL)
	t.Setenv(collect.EnvCLOBURL, poly.URL)
	t.Setenv(collect.EnvBinanceSpotURL, bin.URL)
	t.Setenv(collect.EnvBinanceFuturesURL, bin.URL)

	logs := &lockedBuffer{}
	srv, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	start := time.Now().Truncate(5 * time.Minute).Add(-time.Hour) // ended
	m := store.Market{Slug: collect.Slug(store.BTC, store.M5, start), MarketID: "777002", Coin: store.BTC, MarketType: store.M5,
		StartTime: start, EndTime: start.Add(5 * time.Minute), ClobTokenUp: "21", ClobTokenDown: "22"}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	if err := worker.NewResolutionScheduler(rdb).ScheduleResolution(ctx, m.Slug, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "upstream request failed") {
		if time.Now().After(deadline) {
			t.Fatalf("the failed upstream request was not logged within 30s:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "upstream request failed") && strings.Count(line, `"component":`) != 1 {
			t.Errorf("a resolver record with %d component keys, want 1:\n%s", strings.Count(line, `"component":`), line)
		}
	}
}
