package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// sweepBody sweeps the entry threshold over the fixture's newest BTC 15m
// markets.
func sweepBody(count int, extra string) string {
	return `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.6}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","range":{"from":0.5,"to":0.7,"step":0.1}}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":` + strconv.Itoa(count) + `}` + extra + `}`
}

// TestSweepThroughWorkers posts a sweep, follows it to DONE through real
// Asynq workers, pages its trials, and checks the plan gate, validation
// and the size limit.
func TestSweepThroughWorkers(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st)
	q.startWorker(t)
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.jobWait = st, q.client, q.client, 30*time.Second })
	key := b.keys[store.Pro]

	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(5, `,"split":{"kind":"HOLDOUT","testFraction":0.4,"embargoMarkets":0}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	var created struct {
		Data struct {
			SweepID string `json:"sweep_id"`
			Status  string `json:"status"`
			Trials  int    `json:"trials"`
			Markets int    `json:"markets"`
			Replays int    `json:"replays"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	c := created.Data
	if !strings.HasPrefix(c.SweepID, "sw_") || c.Trials != 3 || c.Markets != 5 || c.Replays != 15 {
		t.Fatalf("created %+v", c)
	}
	var got struct {
		Data struct {
			Status   string `json:"status"`
			Progress struct {
				Done  int `json:"replays_done"`
				Total int `json:"replays_total"`
			} `json:"progress"`
			Results struct {
				Trials []json.RawMessage `json:"trials"`
				Best   *struct {
					Trial     int               `json:"trial"`
					PerMarket []json.RawMessage `json:"per_market"`
				} `json:"best"`
			} `json:"results"`
		} `json:"data"`
	}
	deadline := time.Now().Add(60 * time.Second) // generous: the suite runs on busy machines
	for {
		r = b.do(http.MethodGet, "/v1/sweeps/"+c.SweepID, key, "", "")
		if r.status != http.StatusOK {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Data.Status != "RUNNING" && got.Data.Status != "QUEUED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %s after a minute: %s", got.Data.Status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := got.Data
	if d.Status != "DONE" || d.Progress.Done != 15 || len(d.Results.Trials) != 3 || d.Results.Best == nil || len(d.Results.Best.PerMarket) != 5 {
		t.Fatalf("finished: %s", r.body)
	}
	r = b.do(http.MethodGet, "/v1/sweeps/"+c.SweepID+"/trials?limit=2&offset=1", key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"total":3`) {
		t.Fatalf("trials: %d %s", r.status, r.body)
	}
	r = b.do(http.MethodGet, "/v1/sweeps", key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), c.SweepID) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	// Cancelling a finished sweep answers it as it is.
	r = b.do(http.MethodDelete, "/v1/sweeps/"+c.SweepID, key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"DONE"`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	// Another customer cannot see it.
	if r = b.do(http.MethodGet, "/v1/sweeps/"+c.SweepID, b.keys[store.Enterprise], "", ""); r.status != http.StatusNotFound {
		t.Errorf("another customer's GET: %d", r.status)
	}
	for _, tc := range []struct {
		name, key, body string
		status          int
		want            string
	}{
		{"starter", b.keys[store.Starter], sweepBody(5, ""), http.StatusForbidden, "TIER_ACCESS_DENIED"},
		{"bad path", key, strings.Replace(sweepBody(5, ""), "/entryConditions/0/value", "/marketSlug", 1), http.StatusBadRequest, "parameters[0].path"},
		{"over PRO's markets", key, sweepBody(201, ""), http.StatusBadRequest, "PRO allows 200"},
		{"unknown key", key, sweepBody(5, `,"foo":1`), http.StatusBadRequest, `"foo"`},
		{"no markets", key, strings.Replace(sweepBody(5, ""), `"count":5`, `"count":5,"start_time":"2030-01-01T00:00:00Z"`, 1), http.StatusNotFound, "NO_BACKTEST_MARKETS"},
	} {
		r := b.do(http.MethodPost, "/v1/sweeps", tc.key, "application/json", tc.body)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
}

// TestSweepsInFlightAndCancel: with no worker to run it, a PRO sweep stays
// RUNNING; a second one is 429 concurrent_sweeps until the first is
// cancelled, and a cancelled sweep answers CANCELLED.
func TestSweepsInFlightAndCancel(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = st, q.client, q.client })
	key := b.keys[store.Pro]
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, ""))
	if r.status != http.StatusAccepted {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	var first struct {
		Data struct {
			SweepID string `json:"sweep_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &first); err != nil {
		t.Fatal(err)
	}
	r = b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, ""))
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), `"limit":"concurrent_sweeps"`) || r.header.Get("Retry-After") != "1" {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	r = b.do(http.MethodDelete, "/v1/sweeps/"+first.Data.SweepID, key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"CANCELLED"`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r = b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, "")); r.status != http.StatusAccepted {
		t.Fatalf("after the cancel: %d %s", r.status, r.body)
	}
}
