package jobs_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updown/updown/jobs"
)

// TestOutcomeRoundTrip: what Encode writes, DecodeOutcome reads back as it
// was, and encoding/json reads it the same (the wire stays plain JSON).
func TestOutcomeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    jobs.Outcome
	}{
		{"result", jobs.Outcome{Result: json.RawMessage(`{"trades":[],"x":1.5,"s":"}"}`)}},
		{"scalar result", jobs.Outcome{Result: json.RawMessage(`7`)}},
		{"failure", jobs.Outcome{Failure: &jobs.Failure{Code: "NO_DATA", Message: `no "data"`}}},
		{"both", jobs.Outcome{Failure: &jobs.Failure{Code: "X", Message: "y"}, Result: json.RawMessage(`{"a":1}`)}},
		{"empty", jobs.Outcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := tc.o.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := jobs.DecodeOutcome(b)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if !reflect.DeepEqual(norm(got), norm(tc.o)) {
				t.Errorf("decoded %+v, want %+v (wire %s)", got, tc.o, b)
			}
			var std jobs.Outcome
			if err := json.Unmarshal(b, &std); err != nil {
				t.Fatalf("encoding/json cannot read %s: %v", b, err)
			}
			if !reflect.DeepEqual(norm(std), norm(tc.o)) {
				t.Errorf("encoding/json read %+v, want %+v", std, tc.o)
			}
		})
	}
}

// TestDecodeOutcomeOfEncodingJSON: outcomes encoding/json wrote (results
// retained before Encode existed) decode the same. No worker ever wrote a
// result and a failure together, the one form DecodeOutcome would misread.
func TestDecodeOutcomeOfEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{
		`{"failure":{"code":"X","message":"m"},"result":{"a":1}}`,
		`{"result":{"a":1}}`,
		`{}`,
	} {
		var want jobs.Outcome
		if err := json.Unmarshal([]byte(wire), &want); err != nil {
			t.Fatal(err)
		}
		got, err := jobs.DecodeOutcome([]byte(wire))
		if err != nil {
			t.Fatalf("%s: %v", wire, err)
		}
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("%s: decoded %+v, want %+v", wire, got, want)
		}
	}
}

func FuzzOutcomeResult(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"}"}]}`))
	f.Add([]byte(`"x"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		compact, _ := json.Marshal(v) // a result as a worker encodes it
		b, err := jobs.Outcome{Result: compact}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := jobs.DecodeOutcome(b)
		if err != nil || got.Failure != nil || !bytes.Equal(got.Result, compact) {
			t.Fatalf("%s: decoded %+v, %v", compact, got, err)
		}
	})
}

// norm compacts a result so that equal JSON compares equal.
func norm(o jobs.Outcome) jobs.Outcome {
	if len(o.Result) == 0 {
		o.Result = nil
		return o
	}
	var b bytes.Buffer
	if err := json.Compact(&b, o.Result); err == nil {
		o.Result = b.Bytes()
	}
	return o
}
