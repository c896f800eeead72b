package book

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// FuzzFastLevel checks the fast path of book levels against the general
// decoder: where the fast path accepts a level, both read the same values.
func FuzzFastLevel(f *testing.F) {
	for _, s := range []string{`{"price":"0.48","size":"30"}`, ` { "size" : 1.5e2 , "price" : "0.5" } `,
		`{"price":"0.5","size":"1","x":1}`, `{"price":"0\u002e5","size":"1"}`, `{"price":"","size":"1"}`,
		`{"price":"0.5","price":"0.6"}`, `{"price":null,"size":"1"}`, `{"price":"NaN","size":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		p, s, ok := FastLevel(b)
		if !ok {
			return
		}
		type plain Level
		var want plain
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path accepted %s, the general decoder refuses it: %v", b, err)
		}
		if p != want.Price || s != want.Size {
			t.Fatalf("%s: fast path %+v %+v, general %+v %+v", b, p, s, want.Price, want.Size)
		}
	})
}

// FuzzParseFinite checks parseFinite against strconv.ParseFloat: the same
// float64, to the bit (-0 too), for every finite number it reads, and a
// refusal of everything else.
func FuzzParseFinite(f *testing.F) {
	for _, s := range []string{"0.52", "1530.25", "-0", "-0.0", "0", "5.", ".5", "-.5", ".", "-", "", "+1", "1e5", "1E-3",
		"0.1", "0.3", "123456789012345", "1234567890123456", "0.000000000000001", "99999999999999.9", "9007199254740993",
		"007.5", "1_0", "0x1p3", "inf", "NaN", "1e400", " 1", "1.2.3", "0.333333333333333333333"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFinite([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		wantOK := err == nil && !math.IsNaN(want) && !math.IsInf(want, 0)
		if ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFinite(%q) = %v, %v; ParseFloat %v, %v", s, got, ok, want, err)
		}
	})
}

// TestParseFiniteDecimals checks parseFinite against strconv.ParseFloat on
// random decimals of 1 to 17 digits, the point anywhere among them: the
// forms it reads itself (up to 15 digits), where rounding is at stake,
// and past them.
func TestParseFiniteDecimals(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 15))
	for range 300_000 {
		n := 1 + rng.IntN(17)
		b := make([]byte, 0, n+2)
		if rng.IntN(4) == 0 {
			b = append(b, '-')
		}
		point := rng.IntN(n + 1)
		for i := range n {
			if i == point {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		got, ok := parseFinite(b)
		want, err := strconv.ParseFloat(string(b), 64)
		if !ok || err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFinite(%q) = %v, %v; ParseFloat %v, %v", b, got, ok, want, err)
		}
	}
}

// TestStopIn checks stopIn, eight bytes at a time, against strStop, byte
// by byte: every byte value at every place among plain ones, and random
// words (of plain bytes mostly, so that both answers come up).
func TestStopIn(t *testing.T) {
	bytewise := func(w [8]byte) bool {
		for _, c := range w {
			if strStop[c] {
				return true
			}
		}
		return false
	}
	check := func(w [8]byte) {
		if got, want := stopIn(binary.LittleEndian.Uint64(w[:])), bytewise(w); got != want {
			t.Fatalf("stopIn(%q) = %v, want %v", w, got, want)
		}
	}
	for c := range 256 {
		for at := range 8 {
			w := [8]byte{'a', '0', 'x', '7', 'Z', ' ', '~', '!'}
			w[at] = byte(c)
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for range 1_000_000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(0x20 + rng.IntN(0x60))
			if rng.IntN(40) == 0 {
				w[i] = byte(rng.IntN(256))
			}
		}
		check(w)
	}
}

// TestCheckLevelRefusesNaNAndInf: a level read from a Parquet column may
// hold NaN or an infinity, which no JSON frame can; such a level is
// malformed, not a price that would sort first and stay the best.
func TestCheckLevelRefusesNaNAndInf(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct{ price, size float64 }{{nan, 10}, {0.5, nan}, {0.5, inf}, {inf, 10}, {-inf, 10}, {0.5, -inf}} {
		if err := CheckLevel(Num{V: c.price, Set: true}, Num{V: c.size, Set: true}); !errors.Is(err, ErrMalformed) {
			t.Errorf("CheckLevel(%v, %v) = %v, want ErrMalformed", c.price, c.size, err)
		}
	}
	if err := CheckLevel(Num{V: 0.5, Set: true}, Num{V: 0, Set: true}); err != nil {
		t.Errorf("CheckLevel(0.5, 0) = %v", err)
	}
}
