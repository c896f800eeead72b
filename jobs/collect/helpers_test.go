package collect_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// rig is a test bundle: the fake upstreams, a store, the live exchange
// store, a scheduler that records what it is asked, and the logs, all on
// one clock.
type rig struct {
	clock func() time.Time // the fakes' and the collector's (time.Now)
	poly  *polytest.Server
	bin   *binancetest.Server
	st    store.Store
	live  *memory.LiveExchange
	sched *recordingScheduler
	act   *activityRecorder
	logs  *syncBuffer
	log   *slog.Logger
}

func newRig(t testing.TB, st store.Store, scheme collect.SlugScheme) *rig {
	t.Helper()
	return newClockedRig(t, st, scheme, time.Now)
}

// newRigAt is newRig on a clock that reads at when called and runs at real
// speed from there: a test can start just before the windows turn, say, at any
// hour it runs. Pacing (timers, sleeps) stays real time.
func newRigAt(t testing.TB, st store.Store, scheme collect.SlugScheme, at time.Time) *rig {
	t.Helper()
	offset := time.Until(at)
	return newClockedRig(t, st, scheme, func() time.Time { return time.Now().Add(offset) })
}

func newClockedRig(t testing.TB, st store.Store, scheme collect.SlugScheme, clock func() time.Time) *rig {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if os.Getenv("COLLECT_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return &rig{
		clock: clock,
		poly:  polytest.New(t, polytest.Options{Scheme: scheme, Clock: clock}),
		bin:   binancetest.New(t, binancetest.Options{Clock: clock}),
		st:    st,
		live:  memory.NewLive(),
		sched: &recordingScheduler{},
		act:   &activityRecorder{},
		logs:  logs,
		log:   log,
	}
}

// config is a collector config on the rig at test speed: the snapshot
// cadence is left to the test.
func (r *rig) config(scheme collect.SlugScheme, series []collect.Series) collect.Config {
	return collect.Config{
		Upstreams: collect.Upstreams{Gamma: r.poly.URL, CLOB: r.poly.URL, BinanceSpot: r.bin.URL, BinanceFutures: r.bin.URL},
		Store:     r.st,
		Live:      r.live,
		Scheduler: r.sched,
		Activity:  r.act,
		Scheme:    scheme,
		Logger:    r.log,
		Now:       r.clock,
		Series:    series,

		Interval:          100 * time.Millisecond,
		DiscoveryInterval: 200 * time.Millisecond,
		SweepInterval:     300 * time.Millisecond,
		ResolveDelay:      100 * time.Millisecond,
		DepthInterval:     200 * time.Millisecond,
		TradesInterval:    200 * time.Millisecond,
		// 200 trades a poll, not Binance's 1,000: six polls of 1,000
		// every 200 ms (generated, encoded and decoded under -race) are
		// more than a loaded 2-core machine finishes within the 2 s
		// timeout, and the tests read at most the latest 100.
		TradesLimit:    200,
		FlushInterval:  100 * time.Millisecond,
		MaxLag:         time.Second,
		RequestTimeout: 2 * time.Second,
		Backoff:        collect.Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	}
}

// start runs a collector until the returned stop is called (or the test
// ends), and checks it stops cleanly.
func start(t testing.TB, cfg collect.Config) (c *collect.Collector, stop func()) {
	t.Helper()
	c, err := collect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("collector: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("collector did not stop within 20s")
			}
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// stores returns the stores the collector is tested on: memory, and
// Postgres where one is available.
func stores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory":   func(*testing.T) store.Store { return memory.New() },
		"postgres": func(t *testing.T) store.Store { return pgtest.NewStore(t) },
	}
}

// eventually polls cond until it holds or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allSnapshots returns every snapshot of the market, oldest first.
func allSnapshots(t testing.TB, st store.Store, slug string) []store.Snapshot {
	t.Helper()
	snaps, _, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil {
		t.Fatalf("snapshots of %s: %v", slug, err)
	}
	return snaps
}

// recordingScheduler records the resolutions it is asked for and, when
// resolve is set, runs them after their delay.
type recordingScheduler struct {
	mu      sync.Mutex
	calls   map[string][]time.Duration
	now     map[string]time.Time
	resolve func(slug string)
}

// activityRecorder keeps the trades and gaps the collector writes, the
// way store.MarketActivityStore promises (an equal trade once; touching
// gaps of a kind merged), for tests that read them back.
type activityRecorder struct {
	mu     sync.Mutex
	trades map[string][]store.MarketTrade
	gaps   map[string][]store.Gap
}

func (a *activityRecorder) AppendMarketTrades(_ context.Context, slug string, trades []store.MarketTrade) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.trades == nil {
		a.trades = map[string][]store.MarketTrade{}
	}
	for _, t := range trades {
		if !slices.Contains(a.trades[slug], t) {
			a.trades[slug] = append(a.trades[slug], t)
		}
	}
	return len(trades), nil
}

func (a *activityRecorder) RecordGaps(_ context.Context, slug string, gaps []store.Gap) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gaps == nil {
		a.gaps = map[string][]store.Gap{}
	}
	a.gaps[slug] = store.MergeGaps(append(a.gaps[slug], gaps...)) // each kind with its own
	return len(gaps), nil
}

func (a *activityRecorder) tradesOf(slug string) []store.MarketTrade {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.trades[slug])
}

func (a *activityRecorder) gapsOf(slug string) []store.Gap {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.gaps[slug])
}

func (s *recordingScheduler) ScheduleResolution(_ context.Context, slug string, delay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string][]time.Duration{}
	}
	first := len(s.calls[slug]) == 0
	s.calls[slug] = append(s.calls[slug], delay)
	if first && s.resolve != nil {
		fn := s.resolve
		time.AfterFunc(max(delay, 0), func() { fn(slug) })
	}
	return nil
}

// ResolveNow implements collect.NowScheduler: it records the call.
func (s *recordingScheduler) ResolveNow(_ context.Context, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now == nil {
		s.now = map[string]time.Time{}
	}
	if _, ok := s.now[slug]; !ok {
		s.now[slug] = time.Now()
	}
	return nil
}

// nowAt returns when ResolveNow was first asked for the market.
func (s *recordingScheduler) nowAt(slug string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.now[slug]
	return t, ok
}

func (s *recordingScheduler) delays(slug string) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.calls[slug]...)
}

// syncBuffer is a log sink tests read while the collector writes.
type syncBuffer = collect.SyncBuffer

// flakyStore refuses snapshot writes while failing is set, as a store that
// lost its connection does.
type flakyStore struct {
	store.Store
	failing atomic.Bool
}

func (f *flakyStore) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	if f.failing.Load() {
		return 0, fmt.Errorf("flaky: append snapshots of %q: %w", slug, store.ErrUnavailable)
	}
	return f.Store.AppendSnapshots(ctx, slug, snaps)
}
