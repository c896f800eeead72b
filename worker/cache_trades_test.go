package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestReplayCacheKeepsPackedTrades: a GTC replay reads its market's
// recorded trades once, packed, and the next replays of the market take
// them from the worker's cache, answering byte for byte what jobs.Replay
// answers straight from the store; a trade recorded late is seen on the
// next replay.
func TestReplayCacheKeepsPackedTrades(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		st   func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return memory.New() }},
		{"postgres", func(t *testing.T) store.Store { return pgtest.NewStore(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st := tc.st(t)
			cfg := gen.DefaultConfig(btNow)
			cfg.Coins = gen.DefaultCoins()[:1]
			cfg.Markets = map[store.MarketType]int{store.M15: 3}
			cfg.MaxSnapshotsPerMarket = 400
			cfg.BookLevels = 6
			cfg.DepthHistory = 0
			cfg.Outage = 0
			if _, err := gen.Seed(ctx, cfg, st); err != nil {
				t.Fatal(err)
			}
			resolved := true
			ms, _, err := st.ListMarkets(ctx, store.MarketFilter{Coin: store.BTC, MarketType: store.M15, Resolved: &resolved})
			if err != nil || len(ms) < 2 {
				t.Fatalf("%d resolved markets, %v", len(ms), err)
			}
			for _, m := range ms {
				if n, err := st.CountMarketTrades(ctx, m.Slug, store.MarketTradeQuery{}); err != nil || n == 0 {
					t.Fatalf("market %s: %d trades, %v", m.Slug, n, err)
				}
			}

			rdb := redistest.Client(t)
			reg := prometheus.NewRegistry()
			w, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: quietLog(), Metrics: reg})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = w.Run(wctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			c, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })

			size := 0
			check := func(slug string) {
				t.Helper()
				size++ // a new request each time: none is a retained result
				req := replay.Request{MarketSlug: slug, Strategy: replay.Strategy{
					Side:            "UP",
					EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 95}},
					ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 30}},
					PositionSize:    float64(20 + size), OrderType: "GTC",
				}}
				payload, _ := json.Marshal(req)
				o, _, err := c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", 30*time.Second)
				if err != nil || o.Failure != nil {
					t.Fatalf("replay %s: %v %+v", slug, err, o.Failure)
				}
				got, err := o.Data()
				if err != nil {
					t.Fatal(err)
				}
				res, err := jobs.Replay(ctx, st, req)
				if err != nil {
					t.Fatal(err)
				}
				if want, _ := json.Marshal(res); !bytes.Equal(got, want) {
					t.Fatalf("GTC replay of %s through the worker:\n%s\nstraight from the store:\n%s", slug, got, want)
				}
			}
			for range 3 {
				for _, m := range ms {
					check(m.Slug)
				}
			}
			hits := metric(t, reg, "updown_replay_cache_hits_total")
			misses := metric(t, reg, "updown_replay_cache_misses_total")
			// Each market: its tape and its trades read once, then kept.
			if n := float64(len(ms)); misses != 2*n || hits != 2*2*n {
				t.Errorf("%v hits and %v misses for %v markets replayed 3 times each", hits, misses, n)
			}

			// A trade recorded late on a cached market: the next replay
			// reads the trades again (and the tape from the cache).
			m := ms[0]
			last, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Limit: 1})
			if err != nil || len(last) != 1 {
				t.Fatalf("last trade: %v %v", last, err)
			}
			late := last[0]
			late.Time = late.Time.Add(time.Millisecond)
			late.TxHash = "0xlate"
			if err := st.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{late}); err != nil {
				t.Fatal(err)
			}
			check(m.Slug)
			if got := metric(t, reg, "updown_replay_cache_misses_total"); got != misses+1 {
				t.Errorf("after a late trade: %v misses, want %v", got, misses+1)
			}
		})
	}
}
