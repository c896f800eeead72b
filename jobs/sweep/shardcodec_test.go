package sweep

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
)

// fullPerformance is a Performance with every field set to a distinct
// value, found by reflection: a field added to Performance and not to the
// shard codec fails the round trip.
func fullPerformance(t *testing.T, seed int) *replay.Performance {
	t.Helper()
	p := &replay.Performance{}
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		x := seed*100 + i + 1
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(float64(x) + 0.125)
		case reflect.Int:
			f.SetInt(int64(-x))
		case reflect.String:
			f.SetString(strings.Repeat("é", x%4+1))
		case reflect.Pointer:
			e := reflect.New(f.Type().Elem())
			switch e.Elem().Kind() {
			case reflect.Int:
				e.Elem().SetInt(int64(x))
			case reflect.Float64:
				e.Elem().SetFloat(float64(x) / 3)
			default:
				t.Fatalf("Performance.%s: a pointer to %s, which the test does not fill", v.Type().Field(i).Name, e.Elem().Kind())
			}
			f.Set(e)
		default:
			t.Fatalf("Performance.%s is a %s, which the test does not fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	return p
}

func TestShardCodecRoundTrip(t *testing.T) {
	t.Parallel()
	one := 7
	cases := []struct {
		name string
		out  []TrialMarket
	}{
		{"no trials", []TrialMarket{}},
		{"every field", []TrialMarket{{Performance: fullPerformance(t, 0), Sums: &stats.TradeSums{N: 3, Mean: -1.25, M2: math.NaN(),
			SumSq: math.Copysign(0, -1), SqErrEntry: math.Inf(1), SqErrMid: math.MaxFloat64,
			Buckets: [10]stats.BucketSums{1: {N: 1, Price: 0.11, Won: 0.5}, 9: {N: 2, Price: 1.9, Won: 2}}}}}},
		{"an error", []TrialMarket{{Error: "NO_DATA"}}},
		{"mixed", []TrialMarket{
			{Performance: &replay.Performance{TotalPnL: 1.5, TotalTrades: 1, FinalMarketOutcome: "UP", OrdersFilled: &one}},
			{Error: "MARKET_NOT_FOUND"},
			{Performance: &replay.Performance{}},
			{Performance: fullPerformance(t, 3)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := EncodeShard(tc.out)
			got, err := DecodeShard(b)
			if err != nil {
				t.Fatal(err)
			}
			// Bits, not ==: NaN and -0 must come back as they went.
			want, _ := json.Marshal(bitsOf(tc.out))
			have, _ := json.Marshal(bitsOf(got))
			if string(want) != string(have) {
				t.Errorf("round trip:\n got %s\nwant %s", have, want)
			}
			if len(got) != len(tc.out) {
				t.Fatalf("%d trials, want %d", len(got), len(tc.out))
			}
		})
	}
}

// bitsOf is out with every float as its bits, through reflection over
// whatever TrialMarket holds.
func bitsOf(out []TrialMarket) any {
	var walk func(v reflect.Value) any
	walk = func(v reflect.Value) any {
		switch v.Kind() {
		case reflect.Float64:
			return math.Float64bits(v.Float())
		case reflect.Pointer:
			if v.IsNil() {
				return nil
			}
			return []any{walk(v.Elem())}
		case reflect.Slice:
			s := []any{}
			for i := range v.Len() {
				s = append(s, walk(v.Index(i)))
			}
			return s
		case reflect.Struct:
			m := map[string]any{}
			for i := range v.NumField() {
				m[v.Type().Field(i).Name] = walk(v.Field(i))
			}
			return m
		default:
			return v.Interface()
		}
	}
	return walk(reflect.ValueOf(out))
}

// TestShardCodecReadsJSON: shards an earlier version stored as JSON still
// decode, to the same results.
func TestShardCodecReadsJSON(t *testing.T) {
	t.Parallel()
	trips := []Trip{{EntryFill: 0.4, EntryMid: 0.41, PnL: 2, Fees: 0.01, Won: 1}, {EntryFill: 0.7, EntryMid: 0.69, PnL: -1, Won: 0}}
	// The JSON an earlier version stored: the round trips themselves.
	old := []map[string]any{{"performance": fullPerformance(t, 1), "trips": trips}, {"error": "NO_DATA"}}
	j, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeShard(j)
	if err != nil {
		t.Fatal(err)
	}
	want := []TrialMarket{{Performance: fullPerformance(t, 1), Sums: replay.SumTrips(trips)}, {Error: "NO_DATA"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON shard decoded to %+v, want %+v", got, want)
	}
}

// TestShardCodecReadsVersion1: shards stored in the first binary form,
// with their round trips, still decode, the trips added up.
func TestShardCodecReadsVersion1(t *testing.T) {
	t.Parallel()
	trips := []Trip{{EntryFill: 0.4, EntryMid: 0.41, PnL: 2, Fees: 0.01, Won: 1}, {EntryFill: 0.95, EntryMid: 0.9, PnL: -1.5, Won: 0.5}}
	// Version 1 of one trial with no performance and two trips: flags 0,
	// then uvarint 2 and the trips' 5 floats each, and a second trial
	// with an error and none.
	b := []byte{shardFormatV1, 2, 0, 2}
	for _, tr := range trips {
		for _, f := range []float64{tr.EntryFill, tr.EntryMid, tr.PnL, tr.Fees, tr.Won} {
			b = appendFloat(b, f)
		}
	}
	b = append(b, shardError)
	b = appendString(b, "NO_DATA")
	b = append(b, 0)
	got, err := DecodeShard(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []TrialMarket{{Sums: replay.SumTrips(trips)}, {Error: "NO_DATA"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("version 1 decoded to %+v, want %+v", got, want)
	}
}

// TestShardCodecRefusesDamage: every truncation of a valid shard, and
// bytes after it, are errors, never a panic or a shorter result.
func TestShardCodecRefusesDamage(t *testing.T) {
	t.Parallel()
	b := EncodeShard([]TrialMarket{{Performance: fullPerformance(t, 2), Sums: replay.SumTrips([]Trip{{PnL: 1}})}, {Error: "NO_DATA"}})
	for n := range len(b) {
		if _, err := DecodeShard(b[:n]); err == nil {
			t.Errorf("the first %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := DecodeShard(append(b[:len(b):len(b)], 0)); err == nil {
		t.Error("a trailing byte decoded")
	}
	if _, err := DecodeShard([]byte{shardFormatV1, 1, 0xff, 0x7f, 0}); err == nil {
		t.Error("unknown flags decoded")
	}
}

func FuzzShardCodec(f *testing.F) {
	one := 1
	f.Add(EncodeShard([]TrialMarket{{Performance: &replay.Performance{TotalPnL: 1, OrdersPlaced: &one}, Sums: replay.SumTrips([]Trip{{PnL: 1}})}, {Error: "X"}}))
	f.Add([]byte{shardFormatV1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte(`[{"error":"NO_DATA"}]`))
	f.Add([]byte{shardFormatV1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecodeShard(b)
		if err != nil || len(b) == 0 || b[0] != shardFormatV1 && b[0] != shardFormatV2 {
			return
		}
		// What decodes survives encoding and decoding again.
		again, err := DecodeShard(EncodeShard(out))
		if err != nil {
			t.Fatalf("decoded, encoded, and refused: %v", err)
		}
		want, _ := json.Marshal(bitsOf(out))
		have, _ := json.Marshal(bitsOf(again))
		if string(want) != string(have) {
			t.Errorf("decoded and encoded again:\n got %s\nwant %s", have, want)
		}
	})
}
