package worker_test

import (
	"bytes"
	"encoding/json"
	"slices"
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

// TestReplayCacheAnswersAsTheStore: replays through a worker, the first of
// a market read from the store and the next from the worker's cache of
// decoded markets, answer byte for byte what jobs.Replay answers straight
// from the store, on both stores; and a market written to after it was
// cached is read afresh.
func TestReplayCacheAnswersAsTheStore(t *testing.T) {
	t.Parallel()
	for name, open := range cacheStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			r := newCacheRig(t, open(t), 4)
			st, ms, reg := r.st, r.ms, r.reg

			size := 0
			check := func(slug, side, order string) {
				t.Helper()
				size++ // a new request each time: none is a retained result
				req := replay.Request{MarketSlug: slug, Strategy: replay.Strategy{
					Side:            side,
					EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 90}},
					ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 40}},
					PositionSize:    float64(100 + size), OrderType: order,
				}}
				got := r.replay(t, req)
				// A replay reads its side's books alone: the answer is the
				// engine's on both outcomes' books.
				m, err := st.GetMarket(ctx, slug)
				if err != nil {
					t.Fatal(err)
				}
				both, _, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
				if err != nil {
					t.Fatal(err)
				}
				full, err := replay.Run(m, both, req.Strategy)
				if err != nil {
					t.Fatal(err)
				}
				if want, _ := json.Marshal(full); !bytes.Equal(got, want) {
					t.Fatalf("replay of %s (%s %s) on its side's books:\n%s\non both outcomes' books:\n%s", slug, side, order, got, want)
				}
			}
			for round := range 2 {
				for _, m := range ms {
					for _, side := range []string{"UP", "DOWN"} {
						for _, order := range []string{"MARKET", "LIMIT"} {
							check(m.Slug, side, order)
						}
					}
				}
				t.Logf("round %d: %v hits, %v misses", round, metric(t, reg, "updown_replay_cache_hits_total"),
					metric(t, reg, "updown_replay_cache_misses_total"))
			}
			hits := metric(t, reg, "updown_replay_cache_hits_total")
			misses := metric(t, reg, "updown_replay_cache_misses_total")
			// A market is read once for each side's books.
			if n := float64(len(ms)); misses != 2*n || hits != 8*n-2*n {
				t.Errorf("%v hits and %v misses for %v markets replayed 8 times each (4 times a side)", hits, misses, n)
			}

			// A late snapshot written to a cached market: the next replay
			// sees it.
			m := ms[0]
			last, _, err := st.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Limit: 1, WithBooks: true})
			if err != nil {
				t.Fatal(err)
			}
			late := last[0]
			late.Time = late.Time.Add(time.Millisecond)
			late.PriceUp = 0.01
			if _, err := st.AppendSnapshots(ctx, m.Slug, []store.Snapshot{late}); err != nil {
				t.Fatal(err)
			}
			check(m.Slug, "UP", "MARKET")
			if got := metric(t, reg, "updown_replay_cache_misses_total"); got != misses+1 {
				t.Errorf("after a late write: %v misses, want %v", got, misses+1)
			}
			if b := metric(t, reg, "updown_replay_cache_bytes"); b <= 0 {
				t.Errorf("cache bytes %v", b)
			}
		})
	}
}

// cacheStores open the stores the cache is tested on.
var cacheStores = map[string]func(t *testing.T) store.Store{
	"memory":   func(*testing.T) store.Store { return memory.New() },
	"postgres": func(t *testing.T) store.Store { return pgtest.NewStore(t) },
}

// cacheRig is a worker (with its metrics) and a client over a store
// seeded with resolved BTC 15m markets that have recorded trades.
type cacheRig struct {
	st  store.Store
	ms  []store.Market // the resolved markets
	reg *prometheus.Registry
	c   *worker.Client
}

func newCacheRig(t *testing.T, st store.Store, markets int) cacheRig {
	t.Helper()
	ctx := t.Context()
	cfg := gen.DefaultConfig(btNow)
	cfg.Coins = gen.DefaultCoins()[:1]
	cfg.Markets = map[store.MarketType]int{store.M15: markets}
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
	rdb := redistest.Client(t)
	reg := prometheus.NewRegistry()
	c := startWorker(t, worker.Config{Redis: rdb, Store: st, Logger: quietLog(), Metrics: reg})
	return cacheRig{st: st, ms: ms, reg: reg, c: c}
}

// replay runs req through the worker and answers its bytes, failing
// unless they are byte for byte jobs.Replay's straight from the store.
func (r cacheRig) replay(t *testing.T, req replay.Request) []byte {
	t.Helper()
	ctx := t.Context()
	payload, _ := json.Marshal(req)
	o, _, err := r.c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}, "test", 30*time.Second)
	if err != nil || o.Failure != nil {
		t.Fatalf("replay %s: %v %+v", req.MarketSlug, err, o.Failure)
	}
	got, err := o.Data() // a large result comes deflated
	if err != nil {
		t.Fatal(err)
	}
	res, err := jobs.Replay(ctx, r.st, req)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(res); !bytes.Equal(got, want) {
		t.Fatalf("replay of %s (%s %s) through the worker:\n%s\nstraight from the store:\n%s",
			req.MarketSlug, req.Strategy.Side, req.Strategy.OrderType, got, want)
	}
	return got
}

// metric returns the value of the registered counter or gauge with the name.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestReplayCacheSeesADropRefilled: a market's snapshots dropped with its
// month (drop-snapshots) and as many imported again, its record untouched,
// are replayed afresh by a worker that cached its tape before the drop:
// with the market's counts sent by the api and without.
func TestReplayCacheSeesADropRefilled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pg := pgtest.NewStore(t)
	r := newCacheRig(t, pg, 4)
	m := r.ms[0]
	snaps, _, err := pg.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil || len(snaps) < 10 {
		t.Fatalf("%d snapshots, %v", len(snaps), err)
	}
	req := func(size float64) replay.Request {
		return replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
			EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}},
			ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}}, PositionSize: size}}
	}
	withHeaders := func(t *testing.T, rq replay.Request) {
		t.Helper()
		mm, sc, err := store.GetMarketSeries(ctx, pg, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		h, err := worker.MarketHeaders(mm, sc)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(rq)
		o, _, err := r.c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, Headers: h}, "test", 30*time.Second)
		if err != nil || o.Failure != nil {
			t.Fatalf("replay: %v %+v", err, o.Failure)
		}
		got, err := o.Data()
		if err != nil {
			t.Fatal(err)
		}
		res, err := jobs.Replay(ctx, pg, rq)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(res); !bytes.Equal(got, want) {
			t.Fatalf("replay with the api's headers through the worker:\n%s\nstraight from the store:\n%s", got, want)
		}
	}
	r.replay(t, req(101)) // cached
	withHeaders(t, req(102))
	hits := metric(t, r.reg, "updown_replay_cache_hits_total")
	if hits < 1 {
		t.Fatalf("%v cache hits before the drop", hits)
	}

	// Drop the market's month, then import as many snapshots again, other
	// prices at the same times: the count is as it was, the record too.
	month := time.Date(m.StartTime.Year(), m.StartTime.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	if _, err := pg.DropSnapshotsBefore(ctx, month, false); err != nil {
		t.Fatal(err)
	}
	refill := slices.Clone(snaps)
	for i := range refill {
		refill[i].PriceUp = 1 - refill[i].PriceUp
		refill[i].PriceDown = 1 - refill[i].PriceDown
	}
	if _, err := pg.AppendSnapshots(ctx, m.Slug, refill); err != nil {
		t.Fatal(err)
	}
	if after, err := pg.GetMarket(ctx, m.Slug); err != nil || !after.UpdatedAt.Equal(m.UpdatedAt) {
		t.Logf("the record changed with the drop: %v", err)
	}
	r.replay(t, req(103)) // the worker reads the market itself
	withHeaders(t, req(104))
}
