package api_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestSweepStatisticsAgreeWithReplays runs a HOLDOUT sweep of three trials
// over 24 markets through the real router and a real worker, then replays
// every trial on every market through POST /v1/replay and summarizes those
// results with the sweep package: the API's best trial, objectives, dsr,
// pbo and pbo_choices are the package's for the same replays.
func TestSweepStatisticsAgreeWithReplays(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	rng := rand.New(rand.NewPCG(3, 4))
	live := now.Truncate(15 * time.Minute)
	for i := 2; i <= 24; i++ { // i = 1, the newest resolved, has the fixture's snapshots
		start := live.Add(-time.Duration(i) * 15 * time.Minute)
		up := 0.45 + float64(rng.IntN(20))/100
		var snaps []store.Snapshot
		for k := range 30 {
			up = min(0.85, max(0.35, up+float64(rng.IntN(9)-4)/100))
			snaps = append(snaps, store.Snapshot{Time: start.Add(time.Duration(k) * 30 * time.Second), CoinPrice: 95000 + float64(k),
				PriceUp: up, PriceDown: 1 - up})
		}
		if _, err := st.AppendSnapshots(context.Background(), slugOf(store.BTC, store.M15, start), snaps); err != nil {
			t.Fatal(err)
		}
	}
	q := newQueue(t, st)
	q.startWorker(t)
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.sweeps, o.jobWait = st, q.client, q.client, 30*time.Second })
	key := b.keys[store.Pro]
	body := sweepBody(24, `,"split":{"kind":"HOLDOUT","testFraction":0.2,"embargoMarkets":1}`)
	id := startSweep(t, b, key, body)
	var got struct {
		Data struct {
			Status  string        `json:"status"`
			Results sweep.Results `json:"results"`
		} `json:"data"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := b.do(http.MethodGet, "/v1/sweeps/"+id, key, "", "")
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
			t.Fatalf("still %s", got.Data.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res := got.Data.Results
	if got.Data.Status != "DONE" || res.Best == nil || len(res.Best.PerMarket) != 24 {
		t.Fatalf("finished %s: %+v", got.Data.Status, res)
	}
	r, err := sweep.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Normalize(sweep.ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := p.Request.Split.Cut(24)
	if err != nil {
		t.Fatal(err)
	}
	markets := make([]sweep.MarketInfo, 24)
	outcomes := make([][]sweep.TrialMarket, 24)
	for m, mp := range res.Best.PerMarket {
		markets[m] = sweep.MarketInfo{Slug: mp.Slug}
		for tr := range p.Trials {
			entry := p.Trials[tr].Values[0]
			rb := `{"marketSlug":"` + mp.Slug + `","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":` +
				strconv.FormatFloat(entry.(float64), 'g', -1, 64) + `}],"exitConditions":[{"field":"price_up","operator":">=","value":0.7}],"positionSize":10}`
			rr := b.do(http.MethodPost, "/v1/replay", key, "application/json", rb)
			if rr.status != http.StatusOK {
				t.Fatalf("replay %s trial %d: %d %s", mp.Slug, tr, rr.status, rr.body)
			}
			var env struct {
				Data struct {
					Performance replay.Performance `json:"performance"`
				} `json:"data"`
			}
			if err := json.Unmarshal(rr.body, &env); err != nil {
				t.Fatal(err)
			}
			perf := env.Data.Performance
			outcomes[m] = append(outcomes[m], sweep.TrialMarket{Performance: &perf})
		}
	}
	want, err := p.Summarize(markets, outcomes, folds)
	if err != nil {
		t.Fatal(err)
	}
	if res.DSR == nil && res.PBO == nil {
		t.Fatalf("neither dsr nor pbo: the fixture gives the statistics nothing to compute")
	}
	if !reflect.DeepEqual(res.DSR, want.DSR) || !reflect.DeepEqual(res.PBO, want.PBO) || !reflect.DeepEqual(res.PBOChoices, want.PBOChoices) {
		t.Errorf("API dsr %v pbo %v (%v choices); the package over the replays %v %v (%v)",
			ptrText(res.DSR), ptrText(res.PBO), res.PBOChoices, ptrText(want.DSR), ptrText(want.PBO), want.PBOChoices)
	}
	if res.Best.Trial != want.Best.Trial || !reflect.DeepEqual(res.Best.TrainObjective, want.Best.TrainObjective) ||
		!reflect.DeepEqual(res.Best.TestObjective, want.Best.TestObjective) {
		t.Errorf("API best %d (%v, %v); the package %d (%v, %v)", res.Best.Trial, ptrText(res.Best.TrainObjective), ptrText(res.Best.TestObjective),
			want.Best.Trial, ptrText(want.Best.TrainObjective), ptrText(want.Best.TestObjective))
	}
	for tr := range res.Trials {
		a, w := res.Trials[tr], want.Trials[tr]
		if !reflect.DeepEqual(a.TrainObjective, w.TrainObjective) || !reflect.DeepEqual(a.TestObjective, w.TestObjective) ||
			!reflect.DeepEqual(a.Train.SharpePerMarket, w.Train.SharpePerMarket) || !reflect.DeepEqual(a.Train.PSR0, w.Train.PSR0) {
			t.Errorf("trial %d: API %v/%v sharpe %v psr0 %v; the package %v/%v sharpe %v psr0 %v", tr,
				ptrText(a.TrainObjective), ptrText(a.TestObjective), ptrText(a.Train.SharpePerMarket), ptrText(a.Train.PSR0),
				ptrText(w.TrainObjective), ptrText(w.TestObjective), ptrText(w.Train.SharpePerMarket), ptrText(w.Train.PSR0))
		}
	}
	t.Logf("best %d, dsr %s, pbo %s", res.Best.Trial, ptrText(res.DSR), ptrText(res.PBO))
}

func ptrText(x *float64) string {
	if x == nil {
		return "null"
	}
	return strconv.FormatFloat(*x, 'g', -1, 64)
}
