package jobs_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
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
		{"large result", jobs.Outcome{Result: largeResult(200_000)}},
		{"large failure", jobs.Outcome{Failure: &jobs.Failure{Code: "X", Message: strings.Repeat("m", 100_000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := tc.o.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeWhole(b)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if !reflect.DeepEqual(norm(got), norm(tc.o)) {
				t.Errorf("decoded %+v, want %+v (wire %s)", got, tc.o, b)
			}
			// DecodeOutcome leaves a large result deflated; Data inflates
			// it, and Encode writes it again as it came.
			peeked, err := jobs.DecodeOutcome(b)
			if err != nil {
				t.Fatal(err)
			}
			if data, err := peeked.Data(); err != nil || !bytes.Equal(data, got.Result) {
				t.Errorf("the decoded outcome's data: %d bytes, %v; want %d", len(data), err, len(got.Result))
			}
			if again, err := peeked.Encode(); err != nil || !bytes.Equal(again, b) {
				t.Errorf("a decoded outcome encodes to %d other bytes (%v)", len(again), err)
			}
			if peeked.Deflated != nil {
				return // not JSON on the wire: TestLargeOutcomesAreCompressed
			}
			var std jobs.Outcome
			if b[0] == 0x1f { // gzipped: JSON inside
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				if b, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if err := json.Unmarshal(b, &std); err != nil {
				t.Fatalf("encoding/json cannot read %s: %v", b, err)
			}
			if !reflect.DeepEqual(norm(std), norm(tc.o)) {
				t.Errorf("encoding/json read %+v, want %+v", std, tc.o)
			}
		})
	}
}

// largeResult is valid compact JSON of about n bytes, as a replay that
// trades often answers.
func largeResult(n int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"trades":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"ENTRY","price":0.%d,"shares":%d}`, i%97, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestLargeOutcomesAreCompressed: a large result is stored and announced
// deflated (and kept so by DecodeOutcome), a large failure gzipped, and a
// corrupt one is an error, not a panic or a huge allocation.
func TestLargeOutcomesAreCompressed(t *testing.T) {
	t.Parallel()
	o := jobs.Outcome{Result: largeResult(1 << 20)}
	b, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || len(b) > len(o.Result)/4 {
		t.Fatalf("a %d-byte result encodes to %d bytes starting % x", len(o.Result), len(b), b[:4])
	}
	peeked, err := jobs.DecodeOutcome(b)
	if err != nil || peeked.Deflated == nil || peeked.Result != nil || peeked.Deflated.Len != len(o.Result) {
		t.Fatalf("DecodeOutcome: %+v, %v", peeked, err)
	}
	small, _ := jobs.Outcome{Result: largeResult(1000)}.Encode()
	if small[0] != '{' {
		t.Fatalf("a small result is compressed: % x", small[:2])
	}
	failure, _ := jobs.Outcome{Failure: &jobs.Failure{Code: "X", Message: strings.Repeat("m", 100_000)}}.Encode()
	if failure[0] != 0x1f || failure[1] != 0x8b {
		t.Fatalf("a large failure encodes to bytes starting % x", failure[:2])
	}
	lying := func(b []byte, at int, v byte) []byte {
		b = bytes.Clone(b)
		b[at] ^= v
		return b
	}
	for name, bad := range map[string][]byte{
		"deflated cut short":       b[:len(b)/2],
		"deflated header only":     b[:12],
		"deflated header cut":      b[:7],
		"deflated with a bad CRC":  lying(b, 4, 1),
		"deflated claiming 2^31":   lying(b, 11, 0x80),
		"deflated claiming less":   lying(b, 8, 1),
		"deflated, a flipped bit":  lying(b, len(b)/2, 0x20),
		"gzip cut short":           failure[:len(failure)/2],
		"gzip with a lying size":   append(failure[:len(failure)-4:len(failure)-4], 0xff, 0xff, 0xff, 0x7f),
		"gzip magic, zeros behind": append([]byte{0x1f, 0x8b}, make([]byte, 40)...),
	} {
		if got, err := decodeWhole(bad); err == nil {
			t.Errorf("%s: decoded %d result bytes", name, len(got.Result))
		}
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
		got, err := decodeWhole([]byte(wire))
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
		got, err := decodeWhole(b)
		if err != nil || got.Failure != nil || !bytes.Equal(got.Result, compact) {
			t.Fatalf("%s: decoded %+v, %v", compact, got, err)
		}
	})
}

// decodeWhole decodes b and inflates its result, as a reader that needs
// the bytes does.
func decodeWhole(b []byte) (jobs.Outcome, error) {
	o, err := jobs.DecodeOutcome(b)
	if err != nil {
		return o, err
	}
	if o.Result, err = o.Data(); err != nil {
		return jobs.Outcome{}, err
	}
	o.Deflated = nil
	return o, nil
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
