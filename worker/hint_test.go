package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// marketReads counts the reads of a market's record and count.
type marketReads struct {
	store.Store
	reads atomic.Int64
}

func (s *marketReads) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	s.reads.Add(1)
	return s.Store.GetMarket(ctx, slug)
}

func (s *marketReads) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	s.reads.Add(1)
	return s.Store.CountSnapshots(ctx, slug, q)
}

// TestReplayUsesTheMarketTheApiRead: a replay task that carries its
// market's record and count (MarketHeaders, as the api sends them) is
// replayed without reading them again, through real Asynq headers, and
// answers what a replay straight from the store does. Without them, or
// with another market's, the worker reads the market itself.
func TestReplayUsesTheMarketTheApiRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 200
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &marketReads{Store: memory.New()}
	m, _, err := g.WriteMarket(ctx, st, store.BTC, store.M15, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := g.WriteMarket(ctx, st, store.BTC, store.M15, now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if m, err = st.GetMarket(ctx, m.Slug); err != nil {
		t.Fatal(err)
	}
	n, err := st.CountSnapshots(ctx, m.Slug, store.SnapshotQuery{})
	if err != nil {
		t.Fatal(err)
	}
	c := startWorker(t, worker.Config{Redis: redistest.Client(t), Store: st, Logger: quietLog(), CacheBytes: -1})

	req := replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{{Field: "price_up", Operator: "<", Value: 0.5}},
		ExitConditions:  []replay.Condition{{Field: "price_up", Operator: ">", Value: 0.6}}}}
	hinted, err := worker.MarketHeaders(m, n)
	if err != nil {
		t.Fatal(err)
	}
	misleading, err := worker.MarketHeaders(other, n)
	if err != nil {
		t.Fatal(err)
	}
	for k, tc := range []struct {
		name    string
		headers map[string]string
		reads   bool
	}{
		{"headers of its market", hinted, false},
		{"no headers", nil, true},
		{"another market's headers", misleading, true},
		{"an unreadable count", withHeader(hinted, "updown-snapshots", "many"), true},
		// An api whose store.Market has other fields (a rolling upgrade).
		{"a record of another shape", withHeader(hinted, "updown-market-schema", "0123456789abcdef"), true},
		{"a record of no known shape", withHeader(hinted, "updown-market-schema", ""), true},
	} {
		r := req
		r.Strategy.PositionSize = float64(10 + k) // a job of its own each time
		payload, _ := json.Marshal(r)
		before := st.reads.Load()
		o, _, err := c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, Headers: tc.headers}, "test", patience(t))
		if err != nil || o.Failure != nil {
			t.Fatalf("%s: %v %+v", tc.name, err, o.Failure)
		}
		if read := st.reads.Load() > before; read != tc.reads {
			t.Errorf("%s: the worker read the market: %v, want %v", tc.name, read, tc.reads)
		}
		got, err := o.Data()
		if err != nil {
			t.Fatal(err)
		}
		res, err := jobs.Replay(ctx, st, r)
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := res.AppendJSON(nil)
		if !bytes.Equal(got, exp) {
			t.Errorf("%s: the answer differs from a replay straight from the store", tc.name)
		}
	}
}

// withHeader is h with the header k set to v (deleted when v is empty).
func withHeader(h map[string]string, k, v string) map[string]string {
	out := maps.Clone(h)
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}
