package worker_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestReplayUsesTheMarketTheApiRead: a replay task that carries its
// market's record and count (MarketHeaders, as the api sends them) is
// replayed without reading them again, through real Asynq headers, and
// answers what a replay straight from the store does. Without them, or
// with another market's, the worker reads the market itself.
func TestReplayUsesTheMarketTheApiRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem := memory.New()
	m := writeM15(t, mem)
	st := &askedStore{Store: mem}
	reads := func() int32 { return st.together.Load() + st.market.Load() + st.count.Load() }
	m, n, err := store.GetMarketSeries(ctx, mem, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	other := m
	other.Slug = "btc-updown-15m-1"
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
		before := reads()
		o, _, err := c.Run(ctx, worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, Headers: tc.headers}, "test", patience(t))
		if err != nil || o.Failure != nil {
			t.Fatalf("%s: %v %+v", tc.name, err, o.Failure)
		}
		if read := reads() > before; read != tc.reads {
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
