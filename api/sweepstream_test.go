package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// largeSweepResults are a DONE sweep's results of n trials, with strings
// json.Marshal escapes for HTML.
func largeSweepResults(n int) sweep.Results {
	f := func(v float64) *float64 { return &v }
	res := sweep.Results{Objective: "total_pnl", Split: "NONE", DSR: f(0.25)}
	for i := range n {
		tr := sweep.TrialResult{Trial: i, TrainObjective: f(float64(i) / 7),
			Parameters: []sweep.ParameterValue{{Path: "/orderType", Value: fmt.Sprintf("LIMIT<%d>&", i%3)}}}
		tr.Train.NMarkets, tr.Train.TotalPnL = 60, float64(i)/3
		for d := range 60 {
			tr.Train.Daily = append(tr.Train.Daily, stats.Day{Date: fmt.Sprintf("2026-02-%02d", d%28+1), Markets: 1, PnL: float64(d*i%89) / 4})
		}
		res.Trials = append(res.Trials, tr)
	}
	res.Best = &sweep.Best{Trial: 3, PerMarket: []sweep.MarketPnL{{Slug: "m", PnL: 2, Error: "x < y"}}}
	return res
}

// TestGetDoneSweepStreamsItsResults: GET /v1/sweeps/{id} of a DONE sweep
// answers its results from either store, written as they are read
// (sweepBody.WriteTo): data.results is the stored results compact and
// without HTML escapes, as the whole answer had them, the other fields
// as before, and the same bytes gzipped for a client that accepts it.
func TestGetDoneSweepStreamsItsResults(t *testing.T) {
	t.Parallel()
	res := largeSweepResults(2000)
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(res); err != nil {
		t.Fatal(err)
	}
	want := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
	eachStore(t, true, func(t *testing.T, st store.Store) {
		b := setup(t, func(o *setupOpts) { o.store = st })
		id, stored := storeDoneSweep(t, st, b.ids[store.Enterprise], sweepBody(200, ""), res)
		if bytes.Equal(stored, want) {
			t.Fatal("the stored results have no HTML escapes to unescape")
		}
		r := b.get(store.Enterprise, "/v1/sweeps/"+id)
		if r.status != http.StatusOK {
			t.Fatalf("GET: %d %.300s", r.status, r.body)
		}
		var answer struct {
			Success bool `json:"success"`
			Data    struct {
				SweepID string          `json:"sweep_id"`
				Status  string          `json:"status"`
				Request json.RawMessage `json:"request"`
				Results json.RawMessage `json:"results"`
			} `json:"data"`
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(r.body, &answer); err != nil {
			t.Fatalf("the answer is not JSON: %v", err)
		}
		d := answer.Data
		if !answer.Success || d.SweepID != id || d.Status != "DONE" || len(d.Request) == 0 || answer.Timestamp == "" || !bytes.Equal(d.Results, want) {
			t.Errorf("answer: success %v, sweep %s %s, %d bytes of request, timestamp %q, results equal %v (%d bytes, want %d)",
				answer.Success, d.SweepID, d.Status, len(d.Request), answer.Timestamp, bytes.Equal(d.Results, want), len(d.Results), len(want))
		}

		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/sweeps/"+id, nil)
		req.Header.Set("X-API-Key", b.keys[store.Enterprise])
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		zr, err := gzip.NewReader(res.Body)
		if err != nil || res.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzipped answer: Content-Encoding %q, %v", res.Header.Get("Content-Encoding"), err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unzipped, r.body) {
			t.Errorf("the gzipped answer unzips to %d bytes (%v), not the %d of the plain one", len(unzipped), err, len(r.body))
		}
	})
}

// failingResults is a store whose results fail half way through.
type failingResults struct{ store.Store }

func (s failingResults) WriteSweepResult(ctx context.Context, id string, w io.Writer) error {
	var b bytes.Buffer
	if err := s.Store.WriteSweepResult(ctx, id, &b); err != nil {
		return err
	}
	if _, err := w.Write(b.Bytes()[:b.Len()/2]); err != nil {
		return err
	}
	return errors.New("connection to the database lost")
}

// TestGetSweepWhoseResultsFail: results the store fails to write half
// way through end the answer with a broken connection, not as a whole
// answer of half the results (nor with an error appended to them): its
// status and start are sent already.
func TestGetSweepWhoseResultsFail(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	b := setup(t, func(o *setupOpts) { o.store = failingResults{st} })
	id, _ := storeDoneSweep(t, st, b.ids[store.Enterprise], sweepBody(200, ""), largeSweepResults(300))
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/sweeps/"+id, nil)
	req.Header.Set("X-API-Key", b.keys[store.Enterprise])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil {
		t.Errorf("the answer of results failing half way read to its end: %d %d bytes ending %q", res.StatusCode, len(body), body[max(0, len(body)-80):])
	}
}

// pruningResults is a store whose retention prune (DeleteSweepsFinishedBefore,
// as a worker's SweepPruner runs it) deletes every finished sweep once
// the results being written have passed after bytes: a sweep deleted
// while its answer streams.
type pruningResults struct {
	store.Store
	after  int
	pruned chan int // how many the prune deleted
}

func (s pruningResults) WriteSweepResult(ctx context.Context, id string, w io.Writer) error {
	return s.Store.WriteSweepResult(ctx, id, &pruneAfter{w: w, s: s, ctx: ctx})
}

type pruneAfter struct {
	w    io.Writer
	s    pruningResults
	ctx  context.Context
	n    int
	done bool
}

func (p *pruneAfter) Write(b []byte) (int, error) {
	p.n += len(b)
	if !p.done && p.n > p.s.after {
		p.done = true
		n, err := p.s.DeleteSweepsFinishedBefore(p.ctx, time.Now().Add(time.Hour))
		if err != nil {
			return 0, err
		}
		p.s.pruned <- n
	}
	return p.w.Write(b)
}

// TestGetSweepDeletedWhileItStreams: a DONE sweep that retention prunes
// while GET /v1/sweeps/{id} writes its results out (the status and the
// answer's start are sent already) still answers its whole results, on
// either store, not a cut answer: the sweep being read is spared, and the
// next prune after the answer deletes it.
func TestGetSweepDeletedWhileItStreams(t *testing.T) {
	t.Parallel()
	res := largeSweepResults(1500) // several of the store's batches of trials
	eachStore(t, true, func(t *testing.T, st store.Store) {
		pr := pruningResults{Store: st, after: 256 << 10, pruned: make(chan int, 1)}
		b := setup(t, func(o *setupOpts) { o.store = pr })
		id, stored := storeDoneSweep(t, st, b.ids[store.Enterprise], sweepBody(200, ""), res)
		if len(stored) < 4*pr.after {
			t.Fatalf("the results are %d bytes: too few to be cut", len(stored))
		}
		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/sweeps/"+id, nil)
		req.Header.Set("X-API-Key", b.keys[store.Enterprise])
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatalf("the answer of a sweep pruned while it streamed was cut: %d, %d bytes read, %v", r.StatusCode, len(body), err)
		}
		var answer struct {
			Data struct {
				Results json.RawMessage `json:"results"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("answer %d, not JSON: %v", r.StatusCode, err)
		}
		var got, want any
		if err := json.Unmarshal(answer.Data.Results, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(stored, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the results answered (%d bytes) are not the stored ones (%d bytes)", len(answer.Data.Results), len(stored))
		}
		select {
		case n := <-pr.pruned:
			t.Logf("the prune during the answer deleted %d sweeps", n)
		default:
			t.Fatal("the store did not prune while the answer streamed")
		}
		// Once the answer is whole, retention deletes the sweep.
		if _, err := st.DeleteSweepsFinishedBefore(context.Background(), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetSweepInfo(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after the answer, the prune left the sweep: %v", err)
		}
	})
}
