package worker_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestReplayOnAHungStoreIsUnavailable: a replay whose worker's Postgres
// stops answering on a live connection (frozen, a stuck pooler, a network
// that drops what it sends) answers SERVICE_UNAVAILABLE with the api's
// message for an unavailable store, within the api's wait of a request
// (JOB_WAIT, 60 s by default) and with the retries the api gives the job.
// Its read of the snapshots waited for the task's deadline (2 min), and
// so did every retry: the request answered 504 JOB_TIMEOUT and the job
// ran on for minutes after.
func TestReplayOnAHungStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	direct, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	m := writeM15(t, direct)
	_, sc, err := store.GetMarketSeries(t.Context(), direct, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.NewFreezingProxy(t, u.Host)
	u.Host = proxy.Addr
	// As a worker process opens it: connections made within
	// postgres.DefaultConnectTimeout, not the test server's own.
	q := u.Query()
	q.Del("connect_timeout")
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads no + as a space
	st, err := postgres.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := startWorker(t, worker.Config{Redis: redistest.Client(t), Store: st, Logger: quietLog(), CacheBytes: -1})
	// The market goes with the job as the api sends it: the worker reads
	// only its snapshots.
	headers, err := worker.MarketHeaders(m, sc)
	if err != nil {
		t.Fatal(err)
	}
	run := func(size float64) (jobs.Outcome, error) {
		payload, _ := json.Marshal(replay.Request{MarketSlug: m.Slug, Strategy: replay.Strategy{Side: "UP",
			EntryConditions: []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 90}},
			ExitConditions:  []replay.Condition{{Field: "time_remaining_pct", Operator: "<", Value: 40}}, PositionSize: size}})
		const jobWait = 60 * time.Second // the api's default JOB_WAIT
		o, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, Headers: headers}, "test", jobWait)
		var te *worker.TimeoutError
		if errors.As(err, &te) {
			t.Fatalf("a replay was not answered within JOB_WAIT (%v): the api answers 504 JOB_TIMEOUT", jobWait)
		}
		return o, err
	}
	// A replay the store answers leaves its connection pooled, live.
	if o, err := run(10); err != nil || o.Failure != nil {
		t.Fatalf("replay before the stall: %v %+v", err, o.Failure)
	}
	proxy.Freeze()
	o, err := run(20)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failure == nil || o.Failure.Code != "SERVICE_UNAVAILABLE" || o.Failure.Message != "the data store is unavailable; retry with backoff" {
		t.Errorf("a replay on a store that stopped answering answered %+v (result %.100s), want the failure SERVICE_UNAVAILABLE with the api's message", o.Failure, o.Result)
	}
}
