package worker_test

import (
	"bytes"
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

// resolverUpstreams points the resolver at a fake Polymarket and a fake
// Binance (collect's environment variables), and returns the Polymarket
// fake for the test to fail its routes.
func resolverUpstreams(t *testing.T) *polytest.Server {
	t.Helper()
	poly := polytest.New(t, polytest.Options{})
	bin := binancetest.New(t, binancetest.Options{})
	t.Setenv(collect.EnvGammaURL, poly.URL)
	t.Setenv(collect.EnvCLOBURL, poly.URL)
	t.Setenv(collect.EnvBinanceSpotURL, bin.URL)
	t.Setenv(collect.EnvBinanceFuturesURL, bin.URL)
	return poly
}

// resolve runs a worker on st logging to log, schedules the resolution of
// m and waits, as long as the test may, until logs holds want.
func resolve(t *testing.T, st store.Store, m store.Market, log *slog.Logger, logs *lockedBuffer, want string) {
	t.Helper()
	rdb := redistest.Client(t)
	runServer(t, worker.Config{Redis: rdb, Store: st, Logger: log})
	ctx := t.Context()
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	if err := worker.NewResolutionScheduler(rdb).ScheduleResolution(ctx, m.Slug, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience(t))
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the resolution of %s never logged %q:\n%s", m.Slug, want, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNotSettledRetryIsNotAnError resolves a market that has not ended:
// the resolver answers collect.ErrNotSettled and the task is retried. That
// wait is expected (every market meets it once or twice), so it is logged
// at INFO, not as a failed task at ERROR.
func TestNotSettledRetryIsNotAnError(t *testing.T) {
	resolverUpstreams(t)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	start := time.Now().Truncate(time.Hour).Add(time.Hour) // ends over an hour from now
	m := store.Market{Slug: collect.Slug(store.BTC, store.H1, start), MarketID: "777001", Coin: store.BTC, MarketType: store.H1,
		StartTime: start, EndTime: start.Add(time.Hour), ClobTokenUp: "11", ClobTokenDown: "12"}
	resolve(t, memory.New(), m, log, logs, m.Slug)
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
	poly := resolverUpstreams(t)
	poly.FailAlways(polytest.RouteEvents, polytest.Fault{Status: 503})
	poly.FailAlways(polytest.RouteMarkets, polytest.Fault{Status: 503})
	logs := &lockedBuffer{}
	start := time.Now().Truncate(5 * time.Minute).Add(-time.Hour) // ended
	m := store.Market{Slug: collect.Slug(store.BTC, store.M5, start), MarketID: "777002", Coin: store.BTC, MarketType: store.M5,
		StartTime: start, EndTime: start.Add(5 * time.Minute), ClobTokenUp: "21", ClobTokenDown: "22"}
	resolve(t, memory.New(), m, slog.New(slog.NewJSONHandler(logs, nil)), logs, "upstream request failed")
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "upstream request failed") && strings.Count(line, `"component":`) != 1 {
			t.Errorf("a resolver record with %d component keys, want 1:\n%s", strings.Count(line, `"component":`), line)
		}
	}
}
