package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
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
	// The fixture's one market with snapshots is the newest, a test market
	// of the HOLDOUT below; give the oldest of the five, which trains,
	// snapshots too, so that the trials have a train objective to choose
	// the best by (over no train market there is none).
	oldest := now.Truncate(15 * time.Minute).Add(-5 * 15 * time.Minute)
	var snaps []store.Snapshot
	for i := range 30 {
		snaps = append(snaps, store.Snapshot{Time: oldest.Add(time.Duration(i) * 30 * time.Second), CoinPrice: 95000 + float64(i),
			PriceUp: 0.5 + float64(i)/100, PriceDown: 0.49 - float64(i)/100})
	}
	if _, err := st.AppendSnapshots(context.Background(), slugOf(store.BTC, store.M15, oldest), snaps); err != nil {
		t.Fatal(err)
	}
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
	// The answer is what the document says a sweep is, its request and
	// results too (stored as JSON bytes, documented by their types).
	var doc map[string]any
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	if err := json.Unmarshal(r.body, &answer); err != nil {
		t.Fatal(err)
	}
	if errs := conforms(doc, map[string]any{"$ref": "#/components/schemas/SweepJSON"}, answer["data"], "data"); len(errs) > 0 {
		t.Errorf("the DONE sweep is not what the document says:\n%s", strings.Join(errs, "\n"))
	}
	r = b.do(http.MethodGet, "/v1/sweeps/"+c.SweepID+"/trials?limit=2&offset=1", key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"total":3`) {
		t.Fatalf("trials: %d %s", r.status, r.body)
	}
	checkTrialForms(t, b, c.SweepID, r.body)
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
	first := startSweep(t, b, key, sweepBody(3, ""))
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, ""))
	// The first has no pace yet (no shard done): a minute, not the
	// second a job's slot takes; a sweep runs for minutes.
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), `"limit":"concurrent_sweeps"`) ||
		!strings.Contains(string(r.body), `"retry_after":60`) || r.header.Get("Retry-After") != "60" {
		t.Fatalf("second: %d %s, Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	r = b.do(http.MethodDelete, "/v1/sweeps/"+first, key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"CANCELLED"`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r = b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, "")); r.status != http.StatusAccepted {
		t.Fatalf("after the cancel: %d %s", r.status, r.body)
	}
}

// checkTrialForms fetches the page of trials (limit 2, offset 1) whose
// JSON answer is page as CSV and as Parquet, and checks that both hold
// the same trials, parameters and figures, and that OpenAPI lists both.
func checkTrialForms(t *testing.T, b *bundle, id string, page []byte) {
	t.Helper()
	var want struct {
		Data struct {
			Trials []struct {
				Trial      int `json:"trial"`
				Parameters []struct {
					Path  string  `json:"path"`
					Value float64 `json:"value"`
				} `json:"parameters"`
				Train struct {
					NMarkets int     `json:"n_markets"`
					TotalPnL float64 `json:"total_pnl"`
				} `json:"train"`
			} `json:"trials"`
		} `json:"data"`
	}
	if err := json.Unmarshal(page, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Data.Trials) != 2 {
		t.Fatalf("JSON page: %s", page)
	}
	path := "/v1/sweeps/" + id + "/trials?limit=2&offset=1"

	r := b.getAccept(store.Pro, path, "text/csv")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, r.body)
	}
	if len(recs) != 3 {
		t.Fatalf("CSV: %d records, want a header and 2 trials:\n%s", len(recs), r.body)
	}
	col := map[string]int{}
	for j, name := range recs[0] {
		col[name] = j
	}
	for i, tr := range want.Data.Trials {
		row := recs[i+1]
		for _, cell := range []struct{ name, want string }{
			{"trial", strconv.Itoa(tr.Trial)},
			{"/entryConditions/0/value", strconv.FormatFloat(tr.Parameters[0].Value, 'g', -1, 64)},
			{"train.n_markets", strconv.Itoa(tr.Train.NMarkets)},
			{"train.total_pnl", strconv.FormatFloat(tr.Train.TotalPnL, 'g', -1, 64)},
		} {
			j, ok := col[cell.name]
			if !ok || row[j] != cell.want {
				t.Errorf("CSV trial %d %s: %q (column found %v), want %q", tr.Trial, cell.name, row[min(j, len(row)-1)], ok, cell.want)
			}
		}
	}

	r = b.getAccept(store.Pro, path, transfer.ParquetMediaType)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != transfer.ParquetMediaType {
		t.Fatalf("Parquet: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	f, err := parquet.OpenFile(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatalf("Parquet: %v", err)
	}
	if f.NumRows() != 2 {
		t.Fatalf("Parquet: %d rows, want 2", f.NumRows())
	}
	var trial, value int = -1, -1
	for i, c := range f.Schema().Columns() {
		switch c[0] {
		case "trial":
			trial = i
		case "/entryConditions/0/value":
			value = i
		}
	}
	if trial < 0 || value < 0 {
		t.Fatalf("Parquet columns %v", f.Schema().Columns())
	}
	pr := parquet.NewReader(f)
	defer pr.Close()
	rows := make([]parquet.Row, 2)
	if n, _ := pr.ReadRows(rows); n != 2 {
		t.Fatalf("Parquet: read %d rows", n)
	}
	for i, tr := range want.Data.Trials {
		if got := rows[i][trial].Int64(); got != int64(tr.Trial) {
			t.Errorf("Parquet row %d trial %d, want %d", i, got, tr.Trial)
		}
		if got := rows[i][value].Double(); got != tr.Parameters[0].Value {
			t.Errorf("Parquet row %d value %v, want %v", i, got, tr.Parameters[0].Value)
		}
	}

	// The document lists both forms.
	r = b.get(store.Pro, "/openapi.json")
	var doc struct {
		Paths map[string]struct {
			Get struct {
				Responses map[string]struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"responses"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	content := doc.Paths["/v1/sweeps/{id}/trials"].Get.Responses["200"].Content
	for _, ct := range []string{"application/json", "text/csv", transfer.ParquetMediaType} {
		if _, ok := content[ct]; !ok {
			t.Errorf("OpenAPI: the trials page has no %s form (%v)", ct, content)
		}
	}
}

// gatedCreate holds every CreateSweep until n have reached the store, so
// that racing requests all reach it before any sweep is stored: a cap
// checked before the store's own step would let them all through. A
// request that never comes (one refused earlier) opens the gate after
// a long wait instead.
type gatedCreate struct {
	store.Store
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
}

func newGatedCreate(st store.Store, n int) *gatedCreate {
	return &gatedCreate{Store: st, n: n, open: make(chan struct{})}
}

func (g *gatedCreate) CreateSweep(ctx context.Context, sw store.Sweep, maxActive int) (store.Sweep, error) {
	g.mu.Lock()
	if g.arrived++; g.arrived == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-time.After(30 * time.Second):
	}
	return g.Store.CreateSweep(ctx, sw, maxActive)
}

// TestSweepsInFlightRace posts sweeps of one PRO customer at the same
// moment, on both stores: exactly one is 202, every other 429 with
// details.limit concurrent_sweeps, and one sweep is stored in flight.
func TestSweepsInFlightRace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return memory.New() }},
		{"postgres", func(t *testing.T) store.Store { return pgtest.NewStore(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := tc.store(t)
			loadFixtures(t, st)
			q := newQueue(t, st) // no worker: the sweep stays in flight
			const racers = 6
			b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = newGatedCreate(st, racers), q.client, q.client })
			var wg sync.WaitGroup
			responses := make([]response, racers)
			start := make(chan struct{})
			for i := range racers {
				wg.Go(func() {
					<-start
					responses[i] = b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", sweepBody(3, ""))
				})
			}
			close(start)
			wg.Wait()
			accepted := 0
			for _, r := range responses {
				switch r.status {
				case http.StatusAccepted:
					accepted++
				case http.StatusTooManyRequests:
					e := wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
					wantLimitDetails(t, e, "concurrent_sweeps")
				default:
					t.Errorf("POST: %d %s", r.status, r.body)
				}
			}
			if accepted != 1 {
				t.Errorf("%d of %d simultaneous PRO sweeps accepted, want exactly 1", accepted, racers)
			}
			if n, err := st.CountActiveSweeps(t.Context(), b.ids[store.Pro]); err != nil || n != 1 {
				t.Errorf("sweeps in flight: %d, %v; want 1", n, err)
			}
		})
	}
}

// TestDowngradedCustomerCancelsItsSweep: a customer whose plan loses
// sweeps (a billing webhook's downgrade) while a sweep of theirs runs can
// still stop it: the workers would otherwise run it to its end, up to
// ENTERPRISE's 2,000,000 replays, with nobody able to cancel it but an
// operator. Following or starting sweeps stays the plan's.
func TestDowngradedCustomerCancelsItsSweep(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: the sweep stays RUNNING
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = st, q.client, q.client })
	key := b.keys[store.Pro]
	id := startSweep(t, b, key, sweepBody(3, ""))
	if _, err := st.SetCustomerTier(t.Context(), b.ids[store.Pro], store.Starter); err != nil {
		t.Fatal(err)
	}
	// Another customer still cannot touch it.
	if r := b.do(http.MethodDelete, "/v1/sweeps/"+id, b.keys[store.Enterprise], "", ""); r.status != http.StatusNotFound {
		t.Errorf("another customer's DELETE: %d %s", r.status, r.body)
	}
	r := b.do(http.MethodDelete, "/v1/sweeps/"+id, key, "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"CANCELLED"`) {
		t.Fatalf("DELETE after the downgrade: %d %s", r.status, r.body)
	}
	if sw, err := st.GetSweep(t.Context(), id); err != nil || sw.Status != store.SweepCancelled {
		t.Fatalf("stored: %v %v", sw.Status, err)
	}
	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/sweeps/" + id, ""},
		{http.MethodGet, "/v1/sweeps", ""},
		{http.MethodPost, "/v1/sweeps", sweepBody(3, "")},
	} {
		ct := ""
		if req.body != "" {
			ct = "application/json"
		}
		if r = b.do(req.method, req.path, key, ct, req.body); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "TIER_ACCESS_DENIED") {
			t.Errorf("%s %s as STARTER: %d %s", req.method, req.path, r.status, r.body)
		}
	}
}

// TestDowngradeWebhookStopsSweeps: a billing webhook that moves a customer
// to a plan without sweeps cancels the customer's running sweeps (the plan
// that allowed their thousands of replays on the workers is gone), and
// touches no other customer's; one to a plan with smaller sweeps cancels
// those larger than its sizes and leaves the others.
func TestDowngradeWebhookStopsSweeps(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: sweeps stay RUNNING until stopped
	b, _ := hookSetup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.redis = st, q.client, q.client, q.rdb })
	start := func(tier store.Tier) string {
		t.Helper()
		return startSweep(t, b, b.keys[tier], sweepBody(3, ""))
	}
	status := func(id string) store.SweepStatus {
		t.Helper()
		sw, err := st.GetSweep(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return sw.Status
	}
	pro, ent := start(store.Pro), start(store.Enterprise)
	// 301 trials: over PRO's 200, within ENTERPRISE's 10,000.
	big := startSweep(t, b, b.keys[store.Enterprise], strings.Replace(sweepBody(3, ""), `"step":0.1`, `"step":0.001`, 1))

	// ENTERPRISE to PRO: sweeps are still in the plan, those of PRO's
	// sizes go on; one PRO could not have started stops.
	wantHook(t, b.post(b.activate("evt_ent_pro", store.Enterprise, "PRO", now.Add(-time.Minute))), "applied", false)
	if s := status(ent); s != store.SweepRunning {
		t.Fatalf("a downgrade to a plan with sweeps of its size left the sweep %s", s)
	}
	if s := status(big); s != store.SweepCancelled {
		t.Fatalf("a sweep of 301 trials after a downgrade to PRO (200 at most) is %s, want CANCELLED", s)
	}

	// PRO cancelled: STARTER has no sweeps.
	wantHook(t, b.post(hookEvent{id: "evt_pro_cancel", typ: "subscription.cancelled", at: now.Add(-time.Minute),
		customerID: b.ids[store.Pro], email: "pro@test.example"}), "applied", false)
	if s := status(pro); s != store.SweepCancelled {
		t.Errorf("the sweep of a customer whose subscription was cancelled is %s, want CANCELLED", s)
	}
	if s := status(ent); s != store.SweepRunning {
		t.Errorf("another customer's sweep is %s", s)
	}
	// Its owner still sees how it ended.
	if r := b.do(http.MethodDelete, "/v1/sweeps/"+pro, b.keys[store.Pro], "", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"CANCELLED"`) {
		t.Errorf("DELETE after the downgrade: %d %s", r.status, r.body)
	}
}

// TestDowngradeWebhookKeepsTheSweepsInFlightCap: a downgrade to a plan
// that runs fewer sweeps at once (ENTERPRISE 4 to PRO 1, DESIGN 14)
// leaves as many of the customer's running sweeps as the new plan runs,
// the oldest, and cancels the others: the PRO plan could not have started
// them (429 concurrent_sweeps), and they would hold the workers' share of
// four sweeps for a customer who pays for one.
func TestDowngradeWebhookKeepsTheSweepsInFlightCap(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: sweeps stay RUNNING until stopped
	b, _ := hookSetup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.redis = st, q.client, q.client, q.rdb })
	key := b.keys[store.Enterprise]
	ids := []string{startSweep(t, b, key, sweepBody(3, "")), startSweep(t, b, key, sweepBody(3, "")), startSweep(t, b, key, sweepBody(3, ""))}

	wantHook(t, b.post(b.activate("evt_ent_pro", store.Enterprise, "PRO", now.Add(-time.Minute))), "applied", false)
	for i, want := range []store.SweepStatus{store.SweepRunning, store.SweepCancelled, store.SweepCancelled} {
		sw, err := st.GetSweep(t.Context(), ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if sw.Status != want {
			t.Errorf("sweep %d of 3 (oldest first) after the downgrade to PRO: %s, want %s", i+1, sw.Status, want)
		}
	}
	// The PRO plan's one sweep in flight is taken.
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, ""))
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "concurrent_sweeps") {
		t.Errorf("a new sweep beside the one kept: %d %s, want 429 concurrent_sweeps", r.status, r.body)
	}
}

// TestEnterpriseOwnSweepSizes: an ENTERPRISE customer's own sweep sizes
// (`customers set-limits --sweep-trials`, DESIGN 14) bound its sweeps in
// place of the plan's, and lowering them stops its running sweeps over
// them, as a plan change does.
func TestEnterpriseOwnSweepSizes(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: sweeps stay RUNNING until stopped
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.redis = st, q.client, q.client, q.rdb })
	ent := b.ids[store.Enterprise]
	if _, err := st.SetCustomerLimits(t.Context(), ent, store.Limits{SweepTrials: 2}); err != nil {
		t.Fatal(err)
	}
	// 3 trials (0.5, 0.6, 0.7) over its 2; PRO's 200 are not its.
	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", sweepBody(3, ""))
	if e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"); !strings.Contains(fmt.Sprint(e["message"]), "allows 2") {
		t.Errorf("a sweep of 3 trials over the customer's 2: %s", r.body)
	}
	two := startSweep(t, b, b.keys[store.Enterprise], strings.Replace(sweepBody(3, ""), `"step":0.1`, `"step":0.2`, 1))
	c, err := st.SetCustomerLimits(t.Context(), ent, store.Limits{SweepTrials: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := api.StopSweepsOffPlan(t.Context(), st, c); err != nil || n != 1 {
		t.Errorf("StopSweepsOffPlan after the sizes went to 1 trial: %d, %v; want the 2-trial sweep stopped", n, err)
	}
	if sw, err := st.GetSweep(t.Context(), two); err != nil || sw.Status != store.SweepCancelled {
		t.Errorf("the 2-trial sweep after the sizes went to 1 trial: %v, %v", sw.Status, err)
	}
}

// sweep181x200 sweeps latencyMs over 181 values (0 to 1800 by 10) on 200
// BTC 5m markets, of which the fixture has 54 resolved.
const sweep181x200 = `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.6}],
	"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10},
	"parameters":[{"path":"/latencyMs","range":{"from":0,"to":1800,"step":10}}],
	"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"5m","count":200}}`

// TestSweepReplaysCountTheMarketsFound: a sweep's replays are its trials
// × the markets it runs, not × markets.count. 181 trials over count 200
// of BTC 5m, where 54 resolved markets exist, is 9,774 replays and runs
// on PRO (it was refused as 36,200); over a smaller limit the refusal
// counts the markets found and says what was asked.
func TestSweepReplaysCountTheMarketsFound(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	b := setup(t, func(o *setupOpts) { o.store, o.sweeps = st, discardSweeps{} })
	// The enterprise customer's own size: 5,000 replays a sweep.
	if _, err := st.SetCustomerLimits(t.Context(), b.ids[store.Enterprise], store.Limits{SweepReplays: 5000}); err != nil {
		t.Fatal(err)
	}
	body := sweep181x200

	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", body)
	if r.status != http.StatusAccepted {
		t.Fatalf("PRO, 181 trials over the 54 markets that exist of 200 asked: %d %s", r.status, r.body)
	}
	var got struct {
		Data struct {
			Trials, Markets, Replays int
			Progress                 struct {
				ReplaysTotal int `json:"replays_total"`
			}
		}
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if d := got.Data; d.Trials != 181 || d.Markets != 54 || d.Replays != 181*54 || d.Progress.ReplaysTotal != 181*54 {
		t.Errorf("the sweep: %+v, want 181 trials × 54 markets = 9774 replays", d)
	}

	r = b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", body)
	const want = "this sweep is 181 trials × 54 markets (200 asked, 54 exist) = 9,774 replays: your ENTERPRISE plan allows 5,000 a sweep"
	e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); e["message"] != want || d["field"] != "parameters" {
		t.Errorf("over the customer's 5,000 replays: message %q details %v, want %q on parameters", e["message"], e["details"], want)
	}
	if sws, _, err := st.ListSweeps(t.Context(), b.ids[store.Enterprise], 0, 0); err != nil || len(sws) != 0 {
		t.Errorf("the refused sweep was stored: %d sweeps, %v", len(sws), err)
	}
}

// replaysShrinkWhileStored is a store on which the customer's own sweep
// size drops to 5,000 replays while a sweep is being stored.
type replaysShrinkWhileStored struct{ *memory.Store }

func (s replaysShrinkWhileStored) CreateSweep(ctx context.Context, sw store.Sweep, limit int) (store.Sweep, error) {
	if _, err := s.SetCustomerLimits(ctx, sw.CustomerID, store.Limits{SweepReplays: 5000}); err != nil {
		return store.Sweep{}, err
	}
	return s.Store.CreateSweep(ctx, sw, limit)
}

// TestSweepStoredAsTheReplaysShrink: a sweep stored just as its
// customer's replays a sweep dropped below it is cancelled and refused as
// the new size refuses it, counting the markets found.
func TestSweepStoredAsTheReplaysShrink(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	b := setup(t, func(o *setupOpts) { o.store, o.sweeps = replaysShrinkWhileStored{mem}, discardSweeps{} })
	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", sweep181x200)
	const want = "this sweep is 181 trials × 54 markets (200 asked, 54 exist) = 9,774 replays: your ENTERPRISE plan allows 5,000 a sweep"
	if e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"); e["message"] != want {
		t.Errorf("as the replays dropped: %q, want %q", e["message"], want)
	}
	sws, _, err := mem.ListSweeps(t.Context(), b.ids[store.Enterprise], 0, 0)
	if err != nil || len(sws) != 1 || sws[0].Status != store.SweepCancelled {
		t.Errorf("stored sweeps: %+v %v; want one, CANCELLED", sws, err)
	}
}

// downgradeWhileStored is a store on which a downgrade to STARTER lands
// while a sweep is being stored: the tier is set and the webhook's stop of
// the customer's sweeps has looked, finding none, before the sweep is
// written.
type downgradeWhileStored struct{ *memory.Store }

func (s downgradeWhileStored) CreateSweep(ctx context.Context, sw store.Sweep, limit int) (store.Sweep, error) {
	c, err := s.SetCustomerTier(ctx, sw.CustomerID, store.Starter)
	if err != nil {
		return store.Sweep{}, err
	}
	if _, err := api.StopSweepsOffPlan(ctx, s.Store, c); err != nil {
		return store.Sweep{}, err
	}
	return s.Store.CreateSweep(ctx, sw, limit)
}

// TestSweepStoredAsThePlanDrops: a sweep stored just after a downgrade's
// stop looked for the customer's sweeps (the request had read the plan
// before the downgrade) is cancelled before its shards are queued, and
// the request is refused as the new plan refuses it, not left running
// for its thousands of replays.
func TestSweepStoredAsThePlanDrops(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	st := downgradeWhileStored{mem}
	q := newQueue(t, st)
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps = st, q.client, q.client })
	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", sweepBody(3, ""))
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "TIER_ACCESS_DENIED") {
		t.Fatalf("POST as the plan dropped: %d %s", r.status, r.body)
	}
	sws, _, err := mem.ListSweeps(t.Context(), b.ids[store.Pro], 0, 0)
	if err != nil || len(sws) != 1 {
		t.Fatalf("stored sweeps: %d %v", len(sws), err)
	}
	if sws[0].Status != store.SweepCancelled {
		t.Errorf("the sweep stored as the plan dropped is %s, want CANCELLED", sws[0].Status)
	}
	if n, err := q.rdb.Exists(t.Context(), "asynq:{"+jobs.QueueSweeps+"}:pending").Result(); err != nil || n != 0 {
		t.Errorf("shards queued for the cancelled sweep: %d %v", n, err)
	}
}

// capDropsWhileStored is a store on which, once armed, a downgrade from
// ENTERPRISE to PRO lands while a sweep is being stored: the tier is set
// and the webhook's stop of the customer's sweeps has looked before the
// sweep is written (under the ENTERPRISE cap the request read).
type capDropsWhileStored struct {
	*memory.Store
	armed *bool
}

func (s capDropsWhileStored) CreateSweep(ctx context.Context, sw store.Sweep, limit int) (store.Sweep, error) {
	if *s.armed {
		c, err := s.SetCustomerTier(ctx, sw.CustomerID, store.Pro)
		if err != nil {
			return store.Sweep{}, err
		}
		if _, err := api.StopSweepsOffPlan(ctx, s.Store, c); err != nil {
			return store.Sweep{}, err
		}
	}
	return s.Store.CreateSweep(ctx, sw, limit)
}

// TestSweepStoredAsTheCapDrops: a sweep stored beside a running one just
// as the plan drops to one that runs a single sweep at once (ENTERPRISE to
// PRO) is cancelled before its shards are queued and refused as PRO
// refuses a second sweep (429 concurrent_sweeps); the older one goes on.
func TestSweepStoredAsTheCapDrops(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	armed := false
	st := capDropsWhileStored{mem, &armed}
	q := newQueue(t, st) // no worker: sweeps stay RUNNING until stopped
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.redis = st, q.client, q.client, q.rdb })
	key := b.keys[store.Enterprise]
	first := startSweep(t, b, key, sweepBody(3, ""))
	armed = true
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, ""))
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "concurrent_sweeps") {
		t.Fatalf("POST as the cap dropped: %d %s, want 429 concurrent_sweeps", r.status, r.body)
	}
	sws, _, err := mem.ListSweeps(t.Context(), b.ids[store.Enterprise], 0, 0)
	if err != nil || len(sws) != 2 {
		t.Fatalf("stored sweeps: %d %v", len(sws), err)
	}
	for _, sw := range sws {
		want := store.SweepCancelled
		if sw.ID == first {
			want = store.SweepRunning
		}
		if sw.Status != want {
			t.Errorf("sweep %s (first %t): %s, want %s", sw.ID, sw.ID == first, sw.Status, want)
		}
	}
}

// tierDropsWhileStored is a store on which, once armed, a change from
// ENTERPRISE to PRO is stored (by the billing webhook, whose stop of the
// customer's sweeps has not run yet) while a sweep is being stored under
// the ENTERPRISE plan the request read.
type tierDropsWhileStored struct {
	*memory.Store
	armed *bool
}

func (s tierDropsWhileStored) CreateSweep(ctx context.Context, sw store.Sweep, limit int) (store.Sweep, error) {
	if *s.armed {
		if _, err := s.SetCustomerTier(ctx, sw.CustomerID, store.Pro); err != nil {
			return store.Sweep{}, err
		}
	}
	return s.Store.CreateSweep(ctx, sw, limit)
}

// TestSweepStoredAsThePlanDropsBesideALargeOne: an ENTERPRISE customer
// runs a sweep larger than PRO's sizes; the plan drops to PRO and, before
// the webhook's stop runs, a small sweep is stored under the ENTERPRISE
// plan the request read. PRO keeps the small one (it runs one sweep at
// once, and the large one is over its sizes): the POST is accepted and,
// once the stop has run, the small sweep is running and the large one
// cancelled, not both cancelled, each by a different rule.
func TestSweepStoredAsThePlanDropsBesideALargeOne(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	armed := false
	st := tierDropsWhileStored{mem, &armed}
	b := setup(t, func(o *setupOpts) { o.store, o.sweeps = st, discardSweeps{} })
	key, id := b.keys[store.Enterprise], b.ids[store.Enterprise]
	large := startSweep(t, b, key, strings.Replace(sweepBody(3, ""), `"step":0.1`, `"step":0.001`, 1)) // 201 trials, over PRO's 200
	armed = true
	small := startSweep(t, b, key, sweepBody(3, ""))
	armed = false
	c, err := mem.GetCustomer(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.StopSweepsOffPlan(t.Context(), mem, c); err != nil { // the webhook's stop
		t.Fatal(err)
	}
	for _, want := range []struct {
		id, name string
		status   store.SweepStatus
	}{{small, "the small sweep", store.SweepRunning}, {large, "the large sweep", store.SweepCancelled}} {
		sw, err := mem.GetSweepInfo(t.Context(), want.id)
		if err != nil {
			t.Fatal(err)
		}
		if sw.Status != want.status {
			t.Errorf("%s after the drop to PRO: %s, want %s", want.name, sw.Status, want.status)
		}
	}
}

// twoStoredAsTheCapDrops is a store on which two sweeps are stored under
// the ENTERPRISE cap the requests read, the plan drops to PRO once both
// are stored, and both requests read the customer's sweeps again (to
// check the new plan) before either acts on what it read.
type twoStoredAsTheCapDrops struct {
	*memory.Store
	mu            sync.Mutex
	stored, reads int
	both, read    chan struct{}
}

func (s *twoStoredAsTheCapDrops) CreateSweep(ctx context.Context, sw store.Sweep, limit int) (store.Sweep, error) {
	got, err := s.Store.CreateSweep(ctx, sw, limit)
	if err != nil {
		return got, err
	}
	s.mu.Lock()
	s.stored++
	last := s.stored == 2
	s.mu.Unlock()
	if last {
		if _, err := s.SetCustomerTier(ctx, sw.CustomerID, store.Pro); err != nil {
			return store.Sweep{}, err
		}
		close(s.both)
	}
	return got, s.wait(ctx, s.both)
}

// meet holds the first two reads of the customer's sweeps after both are
// stored until both have read.
func (s *twoStoredAsTheCapDrops) meet(ctx context.Context) error {
	s.mu.Lock()
	n := 0
	if s.stored == 2 {
		s.reads++
		n = s.reads
	}
	s.mu.Unlock()
	if n == 2 {
		close(s.read)
	}
	if n == 0 || n > 2 {
		return nil
	}
	return s.wait(ctx, s.read)
}

func (s *twoStoredAsTheCapDrops) wait(ctx context.Context, c chan struct{}) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *twoStoredAsTheCapDrops) CountActiveSweeps(ctx context.Context, customerID string) (int, error) {
	n, err := s.Store.CountActiveSweeps(ctx, customerID)
	if err != nil {
		return n, err
	}
	return n, s.meet(ctx)
}

func (s *twoStoredAsTheCapDrops) ListSweeps(ctx context.Context, customerID string, limit, offset int) ([]store.Sweep, int, error) {
	sws, n, err := s.Store.ListSweeps(ctx, customerID, limit, offset)
	if err != nil {
		return sws, n, err
	}
	return sws, n, s.meet(ctx)
}

// TestTwoSweepsStoredAsTheCapDrops: two sweeps posted at once, both
// stored under the ENTERPRISE cap, as the plan drops to PRO, which runs
// one at once: the one stored first runs (202) and the other is refused
// 429 concurrent_sweeps, where each counted two sweeps in flight and
// cancelled itself, leaving none.
func TestTwoSweepsStoredAsTheCapDrops(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	st := &twoStoredAsTheCapDrops{Store: mem, both: make(chan struct{}), read: make(chan struct{})}
	b := setup(t, func(o *setupOpts) { o.store, o.sweeps = st, discardSweeps{} })
	key, id := b.keys[store.Enterprise], b.ids[store.Enterprise]
	var wg sync.WaitGroup
	rs := make([]response, 2)
	for i := range rs {
		wg.Go(func() { rs[i] = b.do(http.MethodPost, "/v1/sweeps", key, "application/json", sweepBody(3, "")) })
	}
	wg.Wait()
	statuses := []int{rs[0].status, rs[1].status}
	slices.Sort(statuses)
	if !slices.Equal(statuses, []int{http.StatusAccepted, http.StatusTooManyRequests}) {
		t.Fatalf("two POSTs as the cap dropped: %d %s and %d %s, want one 202 and one 429", rs[0].status, rs[0].body, rs[1].status, rs[1].body)
	}
	for _, r := range rs {
		if r.status == http.StatusTooManyRequests && !strings.Contains(string(r.body), "concurrent_sweeps") {
			t.Errorf("the refused POST: %s, want concurrent_sweeps", r.body)
		}
	}
	sws, _, err := mem.ListSweeps(t.Context(), id, 0, 0)
	if err != nil || len(sws) != 2 {
		t.Fatalf("stored sweeps: %d %v", len(sws), err)
	}
	// The webhook's stop, run after, agrees: the accepted sweep runs on.
	c, err := mem.GetCustomer(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := api.StopSweepsOffPlan(t.Context(), mem, c); err != nil || n != 0 {
		t.Errorf("the webhook's stop after both rechecks cancelled %d (%v), want 0", n, err)
	}
	if n, err := mem.CountActiveSweeps(t.Context(), id); err != nil || n != 1 {
		t.Errorf("sweeps in flight after the drop to PRO: %d %v, want 1", n, err)
	}
}

// startSweep posts a sweep with the key and returns its id, failing the
// test unless it is accepted.
func startSweep(t *testing.T, b *bundle, key, body string) string {
	t.Helper()
	r := b.do(http.MethodPost, "/v1/sweeps", key, "application/json", body)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST /v1/sweeps: %d %s", r.status, r.body)
	}
	var created struct {
		Data struct {
			SweepID string `json:"sweep_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	return created.Data.SweepID
}

// conforms lists where v is not what the OpenAPI document doc's schema
// says: a property the schema does not name (where it names any), a
// required one missing, or a JSON type it does not allow; it follows
// $ref, items and additionalProperties. path names v in the messages.
func conforms(doc map[string]any, schema map[string]any, v any, path string) []string {
	for {
		ref, ok := schema["$ref"].(string)
		if !ok {
			break
		}
		comps, _ := doc["components"].(map[string]any)
		schemas, _ := comps["schemas"].(map[string]any)
		next, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if !ok {
			return []string{path + ": no schema " + ref}
		}
		schema = next
	}
	if alts, ok := schema["anyOf"].([]any); ok {
		var errs []string
		for _, a := range alts {
			e := conforms(doc, a.(map[string]any), v, path)
			if len(e) == 0 {
				return nil
			}
			errs = append(errs, e...)
		}
		return errs
	}
	var kind string
	switch v.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "boolean"
	case float64:
		kind = "number"
	case string:
		kind = "string"
	case []any:
		kind = "array"
	case map[string]any:
		kind = "object"
	}
	var types []string
	switch ty := schema["type"].(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, x.(string))
		}
	}
	if len(types) > 0 && !slices.Contains(types, kind) && !(kind == "number" && slices.Contains(types, "integer")) {
		return []string{fmt.Sprintf("%s: %s, the document says %v", path, kind, types)}
	}
	var errs []string
	switch x := v.(type) {
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range x {
				errs = append(errs, conforms(doc, items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		for k, e := range x {
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				errs = append(errs, conforms(doc, ps, e, path+"."+k)...)
			case extra != nil:
				errs = append(errs, conforms(doc, extra, e, path+"."+k)...)
			case len(props) > 0:
				errs = append(errs, path+"."+k+": not in the document")
			}
		}
		req, _ := schema["required"].([]any)
		for _, k := range req {
			if _, ok := x[k.(string)]; !ok {
				errs = append(errs, path+"."+k.(string)+": required, missing")
			}
		}
	}
	return errs
}

// TestTrialsOfAnUnfinishedSweep: the trials of a sweep still running are
// promised for when it is DONE; those of a sweep that stopped (cancelled)
// never come, and the 409 says so rather than to wait.
func TestTrialsOfAnUnfinishedSweep(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // no worker: sweeps stay RUNNING until stopped
	b, _ := hookSetup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.redis = st, q.client, q.client, q.rdb })
	key := b.keys[store.Enterprise]
	id := startSweep(t, b, key, sweepBody(3, ""))
	trials := func() string {
		t.Helper()
		r := b.do(http.MethodGet, "/v1/sweeps/"+id+"/trials", key, "", "")
		if r.status != http.StatusConflict || !strings.Contains(string(r.body), `"SWEEP_NOT_DONE"`) {
			t.Fatalf("trials of an unfinished sweep: %d %s, want 409 SWEEP_NOT_DONE", r.status, r.body)
		}
		return string(r.body)
	}
	if body := trials(); !strings.Contains(body, "once it is DONE") {
		t.Errorf("a running sweep's trials: %s, want them promised for when it is DONE", body)
	}
	if r := b.do(http.MethodDelete, "/v1/sweeps/"+id, key, "", ""); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if body := trials(); strings.Contains(body, "once it is DONE") || !strings.Contains(body, "CANCELLED") {
		t.Errorf("a cancelled sweep's trials: %s, want a 409 saying they will not be listed", body)
	}
}

// TestTrialsPageOfALargeSweep: a page of a large sweep's trials reads
// and decodes that page, not every trial: an ENTERPRISE sweep's results
// are a hundred megabytes and more, and decoding them all for each page
// of a hundred cost a second and twice their size in memory a page, and
// read from Postgres, the whole result was read for every page (the store
// reads the page's rows: postgres.TestSweepTrialsPageReadsThePage). Here
// the results are some 30 MB; a page of 10 trials, on either store,
// allocates less than half as much (the page, not the results), and
// answers the trials a full decode has at its offset. Not parallel: the
// bytes allocated are the process's.
func TestTrialsPageOfALargeSweep(t *testing.T) {
	const trials = 3000
	res := sweep.Results{Objective: "total_pnl", Split: "NONE", Trials: make([]sweep.TrialResult, trials)}
	for i := range res.Trials {
		tr := &res.Trials[i]
		tr.Trial = i
		tr.Parameters = []sweep.ParameterValue{{Path: "/entryConditions/0/value", Value: 0.5 + float64(i)/10000}}
		tr.Train.NMarkets, tr.Train.TotalPnL = 200, float64(i)/7
		for d := range 200 {
			tr.Train.Daily = append(tr.Train.Daily, stats.Day{Date: now.AddDate(0, 0, d-200).Format(time.DateOnly), Markets: 1, PnL: float64(d*i%97) / 3})
		}
	}
	eachStore(t, false, func(t *testing.T, st store.Store) {
		b := setup(t, func(o *setupOpts) { o.store = st })
		id, result := storeDoneSweep(t, st, b.ids[store.Enterprise], sweepBody(200, ""), res)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := b.do(http.MethodGet, "/v1/sweeps/"+id+"/trials?limit=10&offset=1234", b.keys[store.Enterprise], "", "")
		runtime.ReadMemStats(&after)
		if r.status != http.StatusOK {
			t.Fatalf("trials: %d %s", r.status, r.body)
		}
		var page struct {
			Data struct {
				Trials []sweep.TrialResult `json:"trials"`
				Total  int                 `json:"total"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		if page.Data.Total != trials || len(page.Data.Trials) != 10 || page.Data.Trials[0].Trial != 1234 || page.Data.Trials[9].Trial != 1243 ||
			!reflect.DeepEqual(page.Data.Trials[3].Train.Daily, res.Trials[1237].Train.Daily) {
			t.Fatalf("page: total %d, %d trials from %d", page.Data.Total, len(page.Data.Trials), page.Data.Trials[0].Trial)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(result))/2 {
			t.Errorf("a page of 10 trials allocated %d MB for results of %d MB", alloc>>20, len(result)>>20)
		}
	})
}

// storeDoneSweep stores the customer's sweep of body as DONE with res, as
// a worker would have finished it, and returns its id and the results
// stored.
func storeDoneSweep(t *testing.T, st store.Store, customerID, body string, res sweep.Results) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	req, err := sweep.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p, err := req.Normalize(sweep.EnterpriseLimits)
	if err != nil {
		t.Fatal(err)
	}
	request, _ := json.Marshal(p.Request)
	result, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: customerID, Request: request, TrialCount: len(p.Trials), Markets: []string{"m"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishSweep(ctx, sw.ID, result); err != nil {
		t.Fatal(err)
	}
	return sw.ID, result
}

// TestTrialPagesShareTheirColumns: every Parquet page of a sweep's trials
// has the same columns of the same types, the page past the end too: a
// parameter swept over names (orderType) or booleans is a string or
// boolean column by the values the sweep swept, where a page without a
// trial had every parameter a double, and a reader stacking the pages
// (polars, pyarrow) refused the mix.
func TestTrialPagesShareTheirColumns(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	b := setup(t, func(o *setupOpts) { o.store = st })
	body := strings.Replace(sweepBody(10, ""), `"parameters":[`, `"parameters":[{"path":"/orderType","values":["MARKET","LIMIT"]},`, 1)
	res := sweep.Results{Objective: "total_pnl", Split: "NONE"}
	for i, ot := range []string{"MARKET", "MARKET", "MARKET", "LIMIT", "LIMIT", "LIMIT"} {
		res.Trials = append(res.Trials, sweep.TrialResult{Trial: i, Parameters: []sweep.ParameterValue{
			{Path: "/orderType", Value: ot}, {Path: "/entryConditions/0/value", Value: 0.5 + float64(i%3)/10}}})
	}
	id, _ := storeDoneSweep(t, st, b.ids[store.Pro], body, res)
	for _, offset := range []int{0, 4, 6, 100} {
		r := b.getAccept(store.Pro, fmt.Sprintf("/v1/sweeps/%s/trials?limit=4&offset=%d", id, offset), transfer.ParquetMediaType)
		if r.status != http.StatusOK {
			t.Fatalf("offset %d: %d %s", offset, r.status, r.body)
		}
		f, err := parquet.OpenFile(bytes.NewReader(r.body), int64(len(r.body)))
		if err != nil {
			t.Fatalf("offset %d: %v", offset, err)
		}
		for name, want := range map[string]parquet.Kind{"/orderType": parquet.ByteArray, "/entryConditions/0/value": parquet.Double} {
			var got parquet.Kind = -1
			for _, fd := range f.Schema().Fields() {
				if fd.Name() == name {
					got = fd.Type().Kind()
				}
			}
			if got != want {
				t.Errorf("offset %d (%d rows): column %s is %v, want %v", offset, f.NumRows(), name, got, want)
			}
		}
	}
}

// discardSweeps is a sweep queue that takes every shard and runs none.
type discardSweeps struct{}

func (discardSweeps) EnqueueSweep(context.Context, []sweep.ShardTask) error { return nil }

// TestSweepBadRangeNamesItsField: a sweep whose parameter range holds a
// value of the wrong type is 400 VALIDATION_ERROR whose details.field is
// the field as the body spells it (parameters[0].range.from), not the Go
// field's name (From).
func TestSweepBadRangeNamesItsField(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.sweeps = discardSweeps{} })
	post := func(body string) map[string]any {
		t.Helper()
		r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", body)
		return wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	for _, f := range []string{"from", "to", "step"} {
		body := strings.Replace(sweepBody(3, ""), `{"from":0.5,"to":0.7,"step":0.1}`,
			map[string]string{"from": `{"from":"x","to":0.7,"step":0.1}`, "to": `{"from":0.5,"to":"x","step":0.1}`, "step": `{"from":0.5,"to":0.7,"step":"x"}`}[f], 1)
		e := post(body)
		if d, _ := e["details"].(map[string]any); d["field"] != "parameters[0].range."+f {
			t.Errorf("range.%s a string: details %v, want field parameters[0].range.%s; message %q", f, e["details"], f, e["message"])
		}
	}
}

// TestSweepFarOutOfRangeMessage: a sweep value far out of range is 400
// VALIDATION_ERROR said in a message of readable length, not the value's
// hundreds of digits.
func TestSweepFarOutOfRangeMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.sweeps = discardSweeps{} })
	for _, body := range []string{
		sweepBody(3, `,"split":{"kind":"HOLDOUT","testFraction":1e308}`),
		strings.Replace(sweepBody(3, ""), `"step":0.1`, `"step":-1e-300`, 1),
	} {
		r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", body)
		if msg, _ := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")["message"].(string); len(msg) > 200 {
			t.Errorf("a far out-of-range number is said in %d characters: %.120s…", len(msg), msg)
		}
	}
}

// TestSweepBodyIsOneJSONValue: a sweep body with anything after its JSON
// object (another value, a stray bracket, text) is 400 VALIDATION_ERROR,
// as a replay body is, and no sweep is stored: it was taken as the object
// alone and the sweep started.
func TestSweepBodyIsOneJSONValue(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.sweeps = discardSweeps{} })
	for _, tail := range []string{"x", "]", "{}", ` {"strategy":null}`, "\n1"} {
		r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", sweepBody(3, "")+tail)
		if e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"); !strings.Contains(fmt.Sprint(e["message"]), "not valid JSON") {
			t.Errorf("a body followed by %q: message %q, want it to say the body is not valid JSON", tail, e["message"])
		}
	}
	if _, n, err := b.store.ListSweeps(t.Context(), b.ids[store.Enterprise], 0, 0); err != nil || n != 0 {
		t.Errorf("%d sweeps stored (%v), want none", n, err)
	}
	// White space after the object is JSON still.
	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Enterprise], "application/json", sweepBody(3, "")+" \n\t")
	if r.status != http.StatusAccepted {
		t.Errorf("a body followed by white space: %d %.300s", r.status, r.body)
	}
}

// TestSweepMarketsLimitCountsTheMarketsFound: markets.count over the
// plan's markets a sweep is refused only when more markets than the plan
// allows exist. PRO's count 201 over the 51 resolved BTC 15m markets of
// the fixture runs on those 51 (it was refused); over 300 it is refused
// as before, naming the limit, and nothing is stored.
func TestSweepMarketsLimitCountsTheMarketsFound(t *testing.T) {
	t.Parallel()
	few := memory.New()
	loadFixtures(t, few)
	b := setup(t, func(o *setupOpts) { o.store, o.sweeps = few, discardSweeps{} })
	r := b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", sweepBody(201, ""))
	if r.status != http.StatusAccepted {
		t.Fatalf("PRO, count 201 of the 51 markets that exist: %d %s", r.status, r.body)
	}
	var got struct{ Data struct{ Markets int } }
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Data.Markets != 51 {
		t.Errorf("the sweep runs %d markets, want the 51 that exist", got.Data.Markets)
	}

	many := memory.New()
	loadFixtures(t, many)
	// BTC 15m markets older than the fixture's 52, resolved: 300 in all.
	d := store.M15.Duration()
	var older []store.Market
	for i := 52; i < 300; i++ {
		start := now.Truncate(d).Add(-time.Duration(i) * d)
		older = append(older, store.Market{
			Slug: slugOf(store.BTC, store.M15, start), MarketID: fmt.Sprintf("old-%d", i), EventID: fmt.Sprintf("ev-old-%d", i),
			Coin: store.BTC, MarketType: store.M15, StartTime: start, EndTime: start.Add(d), ConditionID: "0xabc",
			ClobTokenUp: "111", ClobTokenDown: "222", CoinPriceStart: ptr(95000.0), CoinPriceEnd: ptr(95100.0),
			Winner: ptr(store.OutcomeUp), ResolvedAt: ptr(start.Add(d + time.Minute)),
		})
	}
	if err := many.UpsertMarkets(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	b = setup(t, func(o *setupOpts) { o.store, o.sweeps = many, discardSweeps{} })
	r = b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", sweepBody(201, ""))
	const want = "markets.count 201 is over the limit: PRO allows 200 markets a sweep"
	e := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); e["message"] != want || d["field"] != "markets.count" {
		t.Errorf("PRO, count 201 of 300 markets: message %q details %v, want %q on markets.count", e["message"], e["details"], want)
	}
	if sws, _, err := many.ListSweeps(t.Context(), b.ids[store.Pro], 0, 0); err != nil || len(sws) != 0 {
		t.Errorf("the refused sweep was stored: %d sweeps, %v", len(sws), err)
	}
	// 200 of them is the limit, and runs.
	if r = b.do(http.MethodPost, "/v1/sweeps", b.keys[store.Pro], "application/json", sweepBody(200, "")); r.status != http.StatusAccepted {
		t.Errorf("PRO, count 200 of 300 markets: %d %s", r.status, r.body)
	}
}
