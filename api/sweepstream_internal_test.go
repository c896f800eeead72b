package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/sweep"
)

// writeInPieces writes b to w at most max bytes at a time,
// as a store writes a result in parts.
func writeInPieces(w io.Writer, b []byte, max int) error {
	for len(b) > 0 {
		k := min(max, len(b))
		if _, err := w.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// TestStreamedSweepAnswerIsTheWholeOne: a DONE sweep's answer written
// with its results streamed (sweepBody.WriteTo) is byte for byte the
// answer marshalled whole, as getSweep answered before: the results
// compacted, their strings' HTML escapes (as json.Marshal writes "<", ">"
// and "&") written as the characters and every other escape kept, the
// request around them as it was, however the store cuts the results into
// writes (a byte at a time too).
func TestStreamedSweepAnswerIsTheWholeOne(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	res := sweep.Results{Objective: "total_pnl", Split: "HOLDOUT", DSR: f(0.5)}
	for i := range 5 {
		tr := sweep.TrialResult{Trial: i, TrainObjective: f(float64(i) / 3),
			Parameters: []sweep.ParameterValue{{Path: "/entryConditions/0/value", Value: 0.5}, {Path: "/orderType", Value: "LIMIT<&>\u2028"}}}
		tr.Train.NMarkets, tr.Train.Daily = 3, []stats.Day{{Date: "2026-01-02", Markets: 1, PnL: -1.25}}
		res.Trials = append(res.Trials, tr)
	}
	res.Best = &sweep.Best{Trial: 2, PerMarket: []sweep.MarketPnL{{Slug: "m<1>", PnL: 1, Error: `a "quoted" \ error & more`}}}
	marshalled, err := json.Marshal(res) // as the worker stores it: HTML escaped
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(res, " ", "\t")
	if err != nil {
		t.Fatal(err)
	}
	request := json.RawMessage(`{"strategy":{"side":"UP"},"note":"a<b","x":{"results":0},"timestamp":"t"}`)
	errText := "none < all"
	for _, tc := range []struct {
		name   string
		result []byte
	}{
		{"as stored", marshalled},
		{"indented", indented},
		{"escapes", []byte("{\"a\":\"\\\\u003c \\u003C \\u003E \\u0026 \\u0027 \\u2028 \\n \\\" \\\\\",\"b\" : [ 1 , \"x y\" , {} ] ,\"c\":\"\\u00e9\\ud83d\\ude00\"}")},
		{"a number", []byte(` 0 `)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := sweepJSON{SweepID: "sw_abc", Status: "DONE", Trials: 5, Markets: 3, Replays: 15,
				Progress: sweepProgress{ReplaysDone: 15, ReplaysTotal: 15}, CreatedAt: "2026-01-01T00:00:00Z",
				Error: &errText, Request: request}
			whole := data
			whole.Results = tc.result
			want, err := marshalJSON(sweepBody{Success: true, Data: whole, Timestamp: "2026-01-02T00:00:00Z"})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			for _, piece := range []int{1, 2, 5, 7, 64 << 10} {
				body := &sweepBody{Success: true, Data: data, Timestamp: "2026-01-02T00:00:00Z",
					results: func(w io.Writer) error { return writeInPieces(w, tc.result, piece) }}
				var got bytes.Buffer
				n, err := body.WriteTo(&got)
				if err != nil || n != int64(got.Len()) {
					t.Fatalf("pieces of %d: WriteTo = %d, %v for %d bytes", piece, n, err, got.Len())
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("pieces of %d: the streamed answer\n%s\nis not the whole one\n%s", piece, got.Bytes(), want)
				}
			}
		})
	}
}

// TestStreamedSweepAnswerInSmallWrites: a streamed answer over many
// chunks (answerChunk) is written whole to a writer, and a writer's error
// stops it and is returned.
func TestStreamedSweepAnswerInSmallWrites(t *testing.T) {
	t.Parallel()
	var result strings.Builder
	result.WriteString(`{"trials":[`)
	for i := range 20000 {
		if i > 0 {
			result.WriteString(", ")
		}
		fmt.Fprintf(&result, `{"trial": %d, "s": "x\u003cy"}`, i)
	}
	result.WriteString(`]}`)
	body := &sweepBody{Success: true, Data: sweepJSON{SweepID: "sw_abc", Status: "DONE"},
		results: func(w io.Writer) error { return writeInPieces(w, []byte(result.String()), 4096) }}
	var got bytes.Buffer
	if _, err := body.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Data struct {
			Results struct {
				Trials []struct {
					S string `json:"s"`
				} `json:"trials"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.Bytes(), &v); err != nil || len(v.Data.Results.Trials) != 20000 || v.Data.Results.Trials[19999].S != "x<y" ||
		bytes.Contains(got.Bytes(), []byte(`\u003c`)) || bytes.Contains(got.Bytes(), []byte(`, `)) {
		t.Errorf("streamed answer of %d bytes: %v, %d trials", got.Len(), err, len(v.Data.Results.Trials))
	}
	stop := fmt.Errorf("the client went away")
	if _, err := body.WriteTo(failingWriter{stop}); err != stop {
		t.Errorf("WriteTo a failing writer: %v, want its error", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
