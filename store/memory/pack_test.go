package memory

import (
	"math"
	"testing"
)

func TestNumRoundTrip(t *testing.T) {
	cases := []struct {
		v       float64
		maxSize int // bytes packed
	}{
		{0, 1},
		{0.53, 2},
		{0.001, 2},
		{1, 1},
		{100, 2},
		{1234.56, 3},
		{97123.45, 4},
		{145.123456, 5},
		{-7.25, 2},
		{0.000001, 1},
		{1_000_000_000.5, 6},
		{0.1 + 0.2, 9}, // 0.30000000000000004: not six decimals
		{1e-7, 9},
		{math.Pi, 9},
		{1e300, 9},
		{math.Copysign(0, -1), 9},
		{math.Inf(1), 9},
		{math.Inf(-1), 9},
		{math.MaxFloat64, 9},
		{math.SmallestNonzeroFloat64, 9},
	}
	for _, tc := range cases {
		b := appendNum(nil, tc.v)
		if len(b) > tc.maxSize {
			t.Errorf("%v packs to %d bytes, want at most %d", tc.v, len(b), tc.maxSize)
		}
		r := reader{b: b}
		got := r.num()
		if r.err != nil || r.left() != 0 || math.Float64bits(got) != math.Float64bits(tc.v) {
			t.Errorf("%v unpacks to %v (error %v, %d bytes left)", tc.v, got, r.err, r.left())
		}
	}
	r := reader{b: appendNum(nil, math.NaN())}
	if got := r.num(); !math.IsNaN(got) || r.err != nil {
		t.Errorf("NaN unpacks to %v, error %v", got, r.err)
	}
}

func TestReaderRejectsTruncatedData(t *testing.T) {
	b := appendNum(nil, math.Pi) // the raw form: tag and eight bytes
	for n := range len(b) {
		r := reader{b: b[:n]}
		r.num()
		if r.err == nil {
			t.Errorf("reading %d of %d bytes gave no error", n, len(b))
		}
	}
	r := reader{b: []byte{5}}
	if r.count(); r.err == nil {
		t.Error("a count larger than the bytes left gave no error")
	}
}

func FuzzNum(f *testing.F) {
	for _, v := range []float64{0, 0.53, 1234.56, -1, 1e-7, math.Pi, math.Inf(1)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		r := reader{b: appendNum(nil, v)}
		got := r.num()
		if r.err != nil || r.left() != 0 {
			t.Fatalf("%v: error %v, %d bytes left", v, r.err, r.left())
		}
		if math.Float64bits(got) != math.Float64bits(v) && !(math.IsNaN(v) && math.IsNaN(got)) {
			t.Fatalf("%v unpacks to %v", v, got)
		}
	})
}

func TestArenaKeepsPayloadsInPlace(t *testing.T) {
	var a arena
	var spans []span
	var want [][]byte
	for i := range 3000 {
		b := make([]byte, 1+i%300)
		for j := range b {
			b[j] = byte(i + j)
		}
		if i == 1500 {
			b = make([]byte, 3*maxChunk) // larger than a chunk
		}
		first := a.chunks
		spans = append(spans, a.add(b))
		want = append(want, b)
		for c := range first {
			if &first[c][:1][0] != &a.chunks[c][:1][0] {
				t.Fatalf("adding payload %d moved chunk %d", i, c)
			}
		}
	}
	for i, s := range spans {
		got := a.get(s)
		if string(got) != string(want[i]) || cap(got) != len(got) {
			t.Fatalf("payload %d: got %d bytes (cap %d), want %d", i, len(got), cap(got), len(want[i]))
		}
	}
	for _, c := range a.chunks {
		if cap(c) > maxChunk && cap(c) != 3*maxChunk {
			t.Errorf("chunk of %d bytes, want at most %d", cap(c), maxChunk)
		}
	}
}
