package sweep

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
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
		{"every field", []TrialMarket{{Performance: fullPerformance(t, 0), Trips: []Trip{
			{EntryFill: 0.51, EntryMid: 0.5, PnL: -1.25, Fees: 0.0001, Won: 1},
			{EntryFill: math.Inf(1), EntryMid: math.NaN(), PnL: math.Copysign(0, -1), Fees: math.MaxFloat64, Won: 0.5},
		}}}},
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
	out := []TrialMarket{{Performance: fullPerformance(t, 1), Trips: []Trip{{EntryFill: 0.4, EntryMid: 0.41, PnL: 2, Fees: 0.01, Won: 1}}}, {Error: "NO_DATA"}}
	j, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeShard(j)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, out) {
		t.Errorf("JSON shard decoded to %+v, want %+v", got, out)
	}
}

// TestShardCodecRefusesDamage: every truncation of a valid shard, and
// bytes after it, are errors, never a panic or a shorter result.
func TestShardCodecRefusesDamage(t *testing.T) {
	t.Parallel()
	b := EncodeShard([]TrialMarket{{Performance: fullPerformance(t, 2), Trips: []Trip{{PnL: 1}}}, {Error: "NO_DATA"}})
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
	f.Add(EncodeShard([]TrialMarket{{Performance: &replay.Performance{TotalPnL: 1, OrdersPlaced: &one}, Trips: []Trip{{PnL: 1}}}, {Error: "X"}}))
	f.Add([]byte(`[{"error":"NO_DATA"}]`))
	f.Add([]byte{shardFormatV1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecodeShard(b)
		if err != nil || len(b) == 0 || b[0] != shardFormatV1 {
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
