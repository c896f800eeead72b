package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/updown/updown/jobs/jsonenc"
)

// FuzzAppendFloat pins the fast encoder to encoding/json's output.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 0.1, 0.57, 95123.45, 1e-7, 1e21, 123456789.123456, -0.000001, 5e-324, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if got := string(jsonenc.AppendFloat(nil, v)); got != "0" {
				t.Fatalf("non-finite %v written as %s", v, got)
			}
			return
		}
		want, _ := json.Marshal(v)
		if got := jsonenc.AppendFloat(nil, v); string(got) != string(want) {
			t.Fatalf("jsonenc.AppendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "btc-updown-5m-1", "quote\"", "back\\slash", "new\nline", "ünïcode", "\x00", "<html>&", "é<&>", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := jsonenc.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, an Encoder without HTML escaping writes %s", s, got, want)
		}
	})
}

func FuzzAppendStringHTML(f *testing.F) {
	for _, s := range []string{"", "btc-updown-5m-1", "quote\"", "<html>&", "ünïcode", "\x00", "2026-04-29T13:00:00.300000Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonenc.AppendStringHTML(nil, s); string(got) != string(want) {
			t.Fatalf("AppendStringHTML(%q) = %s, json.Marshal writes %s", s, got, want)
		}
	})
}

// BenchmarkAppendFloat writes the numbers of an order book page: prices on
// a 0.01 tick and sizes in hundredths of a share, beside strconv's
// shortest formatting of the same numbers (the general path).
func BenchmarkAppendFloat(b *testing.B) {
	vals := make([]float64, 4096)
	for i := range vals {
		if i%2 == 0 {
			vals[i] = float64(1+i%99) / 100 // a price
		} else {
			vals[i] = float64(5000+(i*7919)%495000) / 100 // a size
		}
	}
	for _, bc := range []struct {
		name string
		f    func([]byte, float64) []byte
	}{
		{"jsonenc", jsonenc.AppendFloat},
		{"strconv", func(b []byte, f float64) []byte { return strconv.AppendFloat(b, f, 'f', -1, 64) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			for b.Loop() {
				buf = buf[:0]
				for _, v := range vals {
					buf = bc.f(buf, v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vals)), "ns/number")
		})
	}
}
