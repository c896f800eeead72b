package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkReplayPath times what a worker does for one replay of a 24hr
// market (288,000 snapshots with books) on Postgres, beside the engine
// alone on the same snapshots: read and decode from the store (first
// time), from the replay cache (again), the engine (the floor), and the
// whole job through Redis with the market cached.
func BenchmarkReplayPath(b *testing.B) {
	ctx := context.Background()
	st := pgtest.NewStore(b)
	// A fixed day: the generated markets' price paths, and so the trades
	// of a strategy, depend on their start.
	now := benchDay
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 0
	g, err := gen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	m, snaps, err := g.WriteMarket(ctx, st, store.BTC, store.H24, now.Add(-2*store.H24.Duration()).Truncate(store.H24.Duration()))
	if err != nil {
		b.Fatal(err)
	}
	m, err = st.GetMarket(ctx, m.Slug)
	if err != nil {
		b.Fatal(err)
	}
	req := replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{
		Side:            "UP",
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.45}},
		ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}},
		PositionSize:    100,
	}}
	tape, err := store.TapeOf(snaps, req.Strategy.Outcome())
	if err != nil {
		b.Fatal(err)
	}
	cache, err := NewCache(DefaultCacheBytes, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The queue: a worker with its cache on a real redis-server, and the
	// api's client waiting on each job.
	rdb := redistest.Client(b)
	w, err := NewServer(Config{Redis: rdb, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	defer func() { cancel(); <-done }()
	client, err := NewClient(ctx, ClientConfig{Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	size := 100
	viaQueue := func() error {
		size++ // a new request each time: none is a retained result
		r := req
		r.Strategy.PositionSize = float64(size)
		payload, _ := json.Marshal(r)
		o, _, err := client.Run(ctx, Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "bench", time.Minute)
		if err == nil && o.Failure != nil {
			err = o.Failure
		}
		return err
	}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"store", func() error { _, err := jobs.Replay(ctx, st, req); return err }},
		{"cache", func() error { _, err := jobs.Replay(ctx, cache.view(st), req); return err }},
		{"engine", func() error { _, err := replay.RunTape(m, tape, req.Strategy); return err }},
		// The cache and the answer's encoding, the queue's round trip and
		// the answer through Redis: what a worker adds to the engine.
		{"queue", viaQueue},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if err := tc.run(); err != nil { // and fill the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/replay")
		})
	}
}

// benchDay is the "now" of the generated market: on its 24hr market the
// strategy of BenchmarkReplayPath trades 24,920 times.
var benchDay = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
