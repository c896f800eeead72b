package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/updown/updown/store"
)

// TestCutSweepResultRoundTrips: for results of many shapes and spacings,
// the cut's rest, valid JSON, and its trials joined by commas are the
// result byte for byte, and the trials, trimmed, are the elements of the
// trials array a JSON decoder finds, in order.
func TestCutSweepResultRoundTrips(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(7); {
		case depth > 2 || k == 0:
			return rng.Float64()*200 - 100
		case k == 1:
			return []string{"a,b", `"]`, "[{", `\`, "é<&>", ""}[rng.IntN(6)]
		case k == 2:
			return nil
		case k == 3:
			return rng.IntN(2) == 0
		case k == 4:
			out := make([]any, rng.IntN(4))
			for i := range out {
				out[i] = value(depth + 1)
			}
			return out
		default:
			out := map[string]any{}
			for i := range rng.IntN(4) {
				out[fmt.Sprintf("k%d,]", i)] = value(depth + 1)
			}
			if rng.IntN(3) == 0 {
				out["trials"] = value(depth + 1) // nested: not the sweep's trials
			}
			return out
		}
	}
	for i := range 500 {
		n := 1 + rng.IntN(6)
		trials := make([]any, n)
		for k := range trials {
			trials[k] = value(0)
		}
		doc := map[string]any{"objective": "total_pnl", "trials": trials, "best": value(0)}
		compact, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var spaced bytes.Buffer
		if err := json.Indent(&spaced, compact, " ", []string{"", " ", "\t", "\r\n  "}[i%4]); err != nil {
			t.Fatal(err)
		}
		for _, result := range [][]byte{compact, spaced.Bytes()} {
			cut, ok := store.CutSweepResult(result)
			if !ok || len(cut.Trials) != n {
				t.Fatalf("CutSweepResult(%s) = %d trials, %v; want %d", result, len(cut.Trials), ok, n)
			}
			joined := append(append(bytes.Clone(cut.Rest[:cut.At]), bytes.Join(cut.Trials, []byte(","))...), cut.Rest[cut.At:]...)
			if !bytes.Equal(joined, result) || !json.Valid(cut.Rest) {
				t.Fatalf("CutSweepResult(%s): rest %s (valid %v) and trials join to %s", result, cut.Rest, json.Valid(cut.Rest), joined)
			}
			var decoded struct{ Trials []json.RawMessage }
			if err := json.Unmarshal(result, &decoded); err != nil {
				t.Fatal(err)
			}
			for k, tr := range cut.Trials {
				if got, want := store.TrimJSONSpace(tr), bytes.TrimSpace(decoded.Trials[k]); !bytes.Equal(got, want) {
					t.Fatalf("CutSweepResult(%s): trial %d is %s, want %s", result, k, got, want)
				}
			}
		}
	}
}
