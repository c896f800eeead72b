package worker_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/worker"
)

// TestReplayCacheKeepsPackedTrades: a GTC replay reads its market's
// recorded trades once, packed, and the next replays of the market take
// them from the worker's cache, answering byte for byte what jobs.Replay
// answers straight from the store; a trade recorded late is seen on the
// next replay.
func TestReplayCacheKeepsPackedTrades(t *testing.T) {
	t.Parallel()
	for name, open := range cacheStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			r := newCacheRig(t, open(t), 3)
			st, ms, reg := r.st, r.ms, r.reg
			for _, m := range ms {
				if n, err := st.CountMarketTrades(ctx, m.Slug, store.MarketTradeQuery{}); err != nil || n == 0 {
					t.Fatalf("market %s: %d trades, %v", m.Slug, n, err)
				}
			}

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
				r.replay(t, req)
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
			if _, err := st.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{late}); err != nil {
				t.Fatal(err)
			}
			check(m.Slug)
			if got := metric(t, reg, "updown_replay_cache_misses_total"); got != misses+1 {
				t.Errorf("after a late trade: %v misses, want %v", got, misses+1)
			}
		})
	}
}

// TestReplayCacheWarnsOfTradeGaps: a GTC replay through the worker, whose
// cache packs the market's trades, still reads the market's recording
// gaps: an order that rested while the recorder lacked the trades (a
// trades gap) carries the warning jobs.Replay gives straight from the
// store.
func TestReplayCacheWarnsOfTradeGaps(t *testing.T) {
	t.Parallel()
	for name, open := range cacheStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			r := newCacheRig(t, open(t), 3)
			m := r.ms[0]
			gap := store.Gap{From: m.StartTime, To: m.EndTime, Kind: store.GapTrades}
			if _, err := r.st.RecordGaps(ctx, m.Slug, []store.Gap{gap}); err != nil {
				t.Fatal(err)
			}
			req := replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{
				Side:            "UP",
				EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 95}},
				ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 30}},
				PositionSize:    20, OrderType: "GTC",
			}}
			payload, _ := json.Marshal(req)
			o, _, err := r.c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", 30*time.Second)
			if err != nil || o.Failure != nil {
				t.Fatalf("replay %s: %v %+v", m.Slug, err, o.Failure)
			}
			raw, err := o.Data()
			if err != nil {
				t.Fatal(err)
			}
			var got replay.Result
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			want, err := jobs.Replay(ctx, r.st, req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(want.Warnings, "\n"), "trades gap") {
				t.Fatalf("jobs.Replay of %s over a trades gap warns %q", m.Slug, want.Warnings)
			}
			if !slices.Equal(got.Warnings, want.Warnings) {
				t.Errorf("replay of %s over a trades gap through the worker warns %q; straight from the store %q", m.Slug, got.Warnings, want.Warnings)
			}
		})
	}
}
