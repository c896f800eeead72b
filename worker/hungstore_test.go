package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
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

// jobWait is the api's default wait for a replay (JOB_WAIT).
const jobWait = 60 * time.Second

// storeWorker is a worker whose store is reached through a freezing proxy,
// opened as a worker process opens it, with params added to its
// DATABASE_URL; direct is the store without the proxy, and runReplay runs
// a replay of market m of the given size.
type storeWorker struct {
	proxy     *pgtest.FreezingProxy
	st        *postgres.Store
	direct    *postgres.Store
	runReplay func(size float64) (jobs.Outcome, error)
}

func newStoreWorker(t *testing.T, params map[string]string) storeWorker {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	direct, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	m := writeM15(t, direct)
	_, sc, err := store.GetMarketSeries(t.Context(), direct, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	proxy, u := pgtest.Behind(t, dbURL)
	// As a worker process opens it: connections made within
	// postgres.DefaultConnectTimeout, not the test server's own.
	q := u.Query()
	q.Del("connect_timeout")
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads no + as a space
	st, err := postgres.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
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
		o, _, err := c.Run(t.Context(), worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload, Headers: headers}, "test", jobWait)
		var te *worker.TimeoutError
		if errors.As(err, &te) {
			t.Fatalf("the replay had no outcome when the api stops waiting for it (JOB_WAIT %v): its user got 504 JOB_TIMEOUT, where a frozen store answers 503 SERVICE_UNAVAILABLE", jobWait)
		}
		return o, err
	}
	return storeWorker{proxy: proxy, st: st, direct: direct, runReplay: run}
}

// TestReplayOnAHungStoreIsUnavailable: a replay whose worker's Postgres
// stops answering on a live connection (frozen, a stuck pooler, a network
// that drops what it sends) answers SERVICE_UNAVAILABLE with the api's
// message for an unavailable store, within the api's wait of a request
// (JOB_WAIT, 60 s by default) and with the retries the api gives the job.
// Its read of the snapshots waited for the task's deadline (2 min), and
// so did every retry: the request answered 504 JOB_TIMEOUT and the job
// ran on for minutes after. With idle connections in the worker's pool,
// each pinged in turn before one is handed out (10 s each), the wait
// for a connection is bounded too.
func TestReplayOnAHungStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		idle int // connections pooled and left idle over a second before the freeze
	}{
		{"live connection", 0},
		{"six idle connections", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newStoreWorker(t, nil)
			// A replay the store answers leaves its connection pooled, live.
			if o, err := w.runReplay(10); err != nil || o.Failure != nil {
				t.Fatalf("replay before the stall: %v %+v", err, o.Failure)
			}
			if tc.idle > 0 {
				var conns []interface{ Release() }
				for range tc.idle {
					c, err := w.st.Pool().Acquire(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
				}
				for _, c := range conns {
					c.Release()
				}
				time.Sleep(1500 * time.Millisecond)
			}
			w.proxy.Freeze()
			o, err := w.runReplay(20)
			if err != nil {
				t.Fatal(err)
			}
			if o.Failure == nil || o.Failure.Code != "SERVICE_UNAVAILABLE" || o.Failure.Message != "the data store is unavailable; retry with backoff" {
				t.Errorf("a replay on a store that stopped answering answered %+v (result %.100s), want the failure SERVICE_UNAVAILABLE with the api's message", o.Failure, o.Result)
			}
		})
	}
}

// TestReplayBehindALockIsAnswered: a replay whose read waits on a lock
// (a migration's, retention's, an operator's ALTER TABLE) fails it at
// Postgres's lock_timeout and is retried, and answered once the lock is
// gone, not failed SERVICE_UNAVAILABLE at once as a server that does not
// answer: the worker's bound of each query is well above lock_timeout.
// With a bound as short as lock_timeout (10 s each) which one fired first
// was chance; here lock_timeout is 12 s, where a 10 s bound always fired
// first.
func TestReplayBehindALockIsAnswered(t *testing.T) {
	t.Parallel()
	w := newStoreWorker(t, map[string]string{"lock_timeout": "12000"})
	tx, err := w.direct.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back once, by the timer or at the end, whichever comes
	// first: a pgx transaction is not safe for two goroutines at once.
	var once sync.Once
	rollback := func() { once.Do(func() { _ = tx.Rollback(context.Background()) }) }
	defer rollback()
	if _, err := tx.Exec(t.Context(), "LOCK TABLE snapshot_chunks IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// Held past the first try's lock_timeout, then let go.
	release := time.AfterFunc(14*time.Second, rollback)
	defer release.Stop()
	o, err := w.runReplay(10)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failure != nil {
		t.Errorf("a replay whose read waited on a lock answered %+v, want its result once the lock was gone", o.Failure)
	}
}
