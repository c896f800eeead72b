package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// storedSweep puts n markets and a sweep over them in a memory store.
func storedSweep(t *testing.T, n int) (store.Store, store.Sweep, Plan) {
	t.Helper()
	st := memory.New()
	ctx := t.Context()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "sweeper@example.com", Name: "Sweeper", Tier: store.Pro})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 11))
	var slugs []string
	for k := range n {
		m, snaps, trades := walkMarket(rng, k, 200)
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendMarketTrades(ctx, m.Slug, trades); err != nil {
			t.Fatal(err)
		}
		slugs = append(slugs, m.Slug)
	}
	p, err := plan(t, body(func(b map[string]any) {
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		b["parameters"] = []any{
			map[string]any{"path": "/entryConditions/0/value", "values": []any{0.45, 0.5}},
			map[string]any{"path": "/orderType", "values": []any{"MARKET", "GTC"}},
		}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(p.Request)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: req, TrialCount: len(p.Trials), Markets: slugs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sw, err = st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	return st, sw, p
}

// TestWorkFinishesASweep runs every shard of a stored sweep, one of them
// twice as a redelivered task would: the sweep ends DONE with results
// whose every trial's per-market pnl is what a replay of that market
// gives, and the repeated shard counted once.
func TestWorkFinishesASweep(t *testing.T) {
	t.Parallel()
	st, sw, p := storedSweep(t, 6)
	ctx := t.Context()
	var plans Plans
	for i, m := range sw.Markets {
		if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: m}, &plans); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: m}, &plans); err != nil {
				t.Fatal(err)
			}
		}
	}
	done, err := st.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.SweepDone || done.ReplaysDone != 6*len(p.Trials) {
		t.Fatalf("sweep %s, %d of %d replays", done.Status, done.ReplaysDone, done.ReplaysTotal)
	}
	var res Results
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != len(p.Trials) || res.Best == nil || len(res.Best.PerMarket) != 6 {
		t.Fatalf("results %+v", res)
	}
	// The best trial's pnl on each market is a replay's of that market.
	for _, mp := range res.Best.PerMarket {
		m, _ := st.GetMarket(ctx, mp.Slug)
		snaps, _, _ := st.ListSnapshots(ctx, mp.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		trades, _, _ := st.ListMarketTrades(ctx, mp.Slug, store.MarketTradeQuery{Ascending: true})
		r, err := replay.RunTrades(m, snaps, trades, p.Trials[res.Best.Trial].Strategy)
		if err != nil {
			t.Fatal(err)
		}
		if r.Performance.TotalPnL != mp.PnL {
			t.Errorf("%s: sweep pnl %v, replay %v", mp.Slug, mp.PnL, r.Performance.TotalPnL)
		}
	}
	// A finished sweep takes no more work.
	if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: sw.Markets[0]}, nil); !errors.Is(err, ErrStopped) {
		t.Errorf("a shard of a finished sweep: %v", err)
	}
}

// TestWorkFinishesAQueuedSweep: the api queues a sweep's shards before it
// marks the sweep RUNNING; a worker that runs every shard in between
// finishes the sweep DONE, where it once left it for the api to mark
// RUNNING with every replay done and nothing left to summarize it.
func TestWorkFinishesAQueuedSweep(t *testing.T) {
	t.Parallel()
	st, running, _ := storedSweep(t, 3)
	ctx := t.Context()
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: running.CustomerID, Request: running.Request,
		TrialCount: running.TrialCount, Markets: running.Markets}, 0)
	if err != nil || sw.Status != store.SweepQueued {
		t.Fatalf("create: %s, %v", sw.Status, err)
	}
	for _, m := range sw.Markets {
		if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: m}, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GetSweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepDone || len(got.Result) == 0 {
		t.Fatalf("sweep %s with %d of %d replays, %d bytes of results", got.Status, got.ReplaysDone, got.ReplaysTotal, len(got.Result))
	}
	// The api's start, after the worker, changes nothing.
	if _, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("the api's start of a finished sweep: %v", err)
	}
}

// TestWorkStopsOnACancelledSweep: a shard of a cancelled sweep does
// nothing and says so.
func TestWorkStopsOnACancelledSweep(t *testing.T) {
	t.Parallel()
	st, sw, _ := storedSweep(t, 2)
	ctx := t.Context()
	if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: sw.Markets[0]}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: sw.Markets[1]}, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("a shard of a cancelled sweep: %v", err)
	}
	got, _ := st.GetSweep(ctx, sw.ID)
	if got.Status != store.SweepCancelled || got.ReplaysDone != got.ReplaysTotal/2 {
		t.Errorf("sweep %s with %d of %d replays", got.Status, got.ReplaysDone, got.ReplaysTotal)
	}
}

// TestPlansKeepsAFewPlans: a sweep is planned once for all its shards on a
// worker, and the cache holds at most maxPlans sweeps.
func TestPlansKeepsAFewPlans(t *testing.T) {
	t.Parallel()
	_, sw, _ := storedSweep(t, 2)
	var plans Plans
	for i := range maxPlans + 3 {
		s := sw
		s.ID = sw.ID + string(rune('a'+i))
		if _, err := plans.of(s); err != nil {
			t.Fatal(err)
		}
		if _, err := plans.of(s); err != nil {
			t.Fatal(err)
		}
	}
	if len(plans.plans) != maxPlans || len(plans.order) != maxPlans {
		t.Errorf("%d plans kept (%d in order), want %d", len(plans.plans), len(plans.order), maxPlans)
	}
	bad := sw
	bad.ID, bad.TrialCount = "other", sw.TrialCount+1
	if _, err := plans.of(bad); err == nil {
		t.Error("a sweep whose request plans other trials than stored was planned")
	}
}

// TestWorkFailsASweepThatNoLongerPlans: a stored sweep whose request plans
// other trials than it was stored with (a later release validating it
// otherwise) can never run a shard: the first shard fails the sweep, which
// stayed RUNNING for as long as its shards were retried.
func TestWorkFailsASweepThatNoLongerPlans(t *testing.T) {
	t.Parallel()
	st, sw, p := storedSweep(t, 2)
	ctx := t.Context()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "replanned@example.com", Name: "Replanned", Tier: store.Pro})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := st.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: sw.Request, TrialCount: len(p.Trials) + 1, Markets: sw.Markets}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSweepStatus(ctx, bad.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	if err := Work(ctx, st, ShardTask{Sweep: bad.ID, Market: bad.Markets[0]}, nil); err == nil {
		t.Fatal("a shard of a sweep that does not plan ran")
	}
	got, err := st.GetSweep(ctx, bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.SweepFailed || got.Error == "" {
		t.Errorf("sweep %s (%q), want FAILED with a reason", got.Status, got.Error)
	}
	// Its next shard stops at once.
	if err := Work(ctx, st, ShardTask{Sweep: bad.ID, Market: bad.Markets[1]}, nil); !errors.Is(err, ErrStopped) {
		t.Errorf("the next shard: %v", err)
	}
}

// flakyStore is a store out of reach for the shard list (failList) or for
// one market's record (failMarket), as Postgres is for a moment.
type flakyStore struct {
	store.Store
	failList   atomic.Bool
	failMarket atomic.Value // string
}

func (s *flakyStore) EachSweepShard(ctx context.Context, id string, f func(store.SweepShard) error) error {
	if s.failList.Load() {
		return fmt.Errorf("flaky: %w", store.ErrUnavailable)
	}
	return s.Store.EachSweepShard(ctx, id, f)
}

func (s *flakyStore) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	if m, _ := s.failMarket.Load().(string); m == slug {
		return store.Market{}, fmt.Errorf("flaky: %w", store.ErrUnavailable)
	}
	return s.Store.GetMarket(ctx, slug)
}

// TestWorkRetriesASummaryTheStoreInterrupts: the store out of reach while
// the last shard summarizes the sweep leaves it RUNNING for the task's
// retry, which finishes it with every figure; it once FAILED a sweep whose
// every replay was done, or (a market's record unread) finished it with
// its days and drawdown silently null.
func TestWorkRetriesASummaryTheStoreInterrupts(t *testing.T) {
	t.Parallel()
	mem, sw, _ := storedSweep(t, 4)
	st := &flakyStore{Store: mem}
	ctx := t.Context()
	last := ShardTask{Sweep: sw.ID, Market: sw.Markets[3]}
	for _, m := range sw.Markets[:3] {
		if err := Work(ctx, st, ShardTask{Sweep: sw.ID, Market: m}, nil); err != nil {
			t.Fatal(err)
		}
	}
	status := func() store.Sweep {
		t.Helper()
		got, err := mem.GetSweep(ctx, sw.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	st.failList.Store(true)
	if err := Work(ctx, st, last, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the last shard with the shards unreadable: %v", err)
	}
	if got := status(); got.Status != store.SweepRunning {
		t.Fatalf("with the shards unreadable the sweep is %s (%q), want RUNNING for the retry", got.Status, got.Error)
	}
	st.failList.Store(false)
	st.failMarket.Store(sw.Markets[0])
	if err := Work(ctx, st, last, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the last shard with a market unreadable: %v", err)
	}
	if got := status(); got.Status != store.SweepRunning {
		t.Fatalf("with a market unreadable the sweep is %s, want RUNNING for the retry", got.Status)
	}
	st.failMarket.Store("")
	if err := Work(ctx, st, last, nil); err != nil {
		t.Fatal(err)
	}
	got := status()
	if got.Status != store.SweepDone {
		t.Fatalf("after the retry the sweep is %s (%q)", got.Status, got.Error)
	}
	var res Results
	if err := json.Unmarshal(got.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Trials[0].Train.Daily == nil || res.Trials[0].Train.PortfolioMaxDrawdown == nil {
		t.Errorf("daily %v, portfolio drawdown %v: the markets' end times were lost", res.Trials[0].Train.Daily, res.Trials[0].Train.PortfolioMaxDrawdown)
	}
}

// errFirstShard stops a summary at its first shard.
var errFirstShard = errors.New("the first shard")

// TestSummaryReadsShardsAsItDecodes: the last shard's summary reads the
// stored shards from Postgres a few at a time, decoding each as it comes:
// when the first is decoded, the others are not in memory yet. A sweep of
// 2,000,000 replays stores some 700 MB of shards, which were read whole
// before the first was decoded, and sat in the worker beside the
// gigabyte decoded from them. Here 60 shards of some 600 KB: at the first
// the live heap has grown by less than half of them.
func TestSummaryReadsShardsAsItDecodes(t *testing.T) {
	st := pgtest.NewStore(t)
	ctx := t.Context()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "sweeper@example.com", Name: "Sweeper", Tier: store.Enterprise})
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	losses, latencies := make([]any, 40), make([]any, 50)
	for i := range losses {
		losses[i] = float64(i + 1)
	}
	for i := range latencies {
		latencies[i] = float64(10 * i)
	}
	p, err := plan(t, body(func(b map[string]any) {
		b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": n}
		b["split"] = map[string]any{"kind": "NONE"}
		b["parameters"] = []any{
			map[string]any{"path": "/maxLossPercent", "values": losses},
			map[string]any{"path": "/latencyMs", "values": latencies},
		}
	}), EnterpriseLimits)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(p.Request)
	slugs := make([]string, n)
	for m := range slugs {
		slugs[m] = fmt.Sprintf("btc-updown-15m-%d", 1_700_000_000+900*m)
	}
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: req, TrialCount: len(p.Trials), Markets: slugs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]TrialMarket, len(p.Trials))
	for i := range out {
		out[i] = traded(float64(i%7) - 3)
	}
	shard := EncodeShard(out)
	for _, m := range slugs {
		if sw, err = st.PutSweepShard(ctx, sw.ID, m, len(out), shard); err != nil {
			t.Fatal(err)
		}
	}
	stored := uint64(n * len(shard))
	runtime.GC()
	var before, first runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = summarizeStored(ctx, st, sw, p, func(context.Context) error {
		runtime.GC()
		runtime.ReadMemStats(&first)
		return errFirstShard
	})
	if !errors.Is(err, errFirstShard) {
		t.Fatalf("summary: %v", err)
	}
	if grown := first.HeapAlloc - min(first.HeapAlloc, before.HeapAlloc); grown > stored/2 {
		t.Errorf("at the first shard the live heap grew by %d KB, with %d KB of shards stored", grown>>10, stored>>10)
	}
}
