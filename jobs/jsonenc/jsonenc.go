// Package jsonenc writes JSON numbers and strings into byte slices,
// exactly as encoding/json writes them, without reflection: the service's
// large answers (snapshot pages, replay results) are written by hand with
// it, and tests pin every writer to encoding/json's bytes.
package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// AppendFloat writes f as encoding/json would (shortest representation that
// round-trips; exponent form only for very small or large magnitudes).
// Non-finite values, which JSON cannot carry, are written as 0.
func AppendFloat(b []byte, f float64) []byte {
	// Prices and sizes carry at most 6 decimals (stores keep 1e-6). When
	// f is exactly such a decimal below 1e9, its digits are the shortest
	// representation (no shorter decimal lies within half an ulp of it),
	// written here without strconv's search. The candidate is checked
	// exactly: float64(n)/1e6 is the float64 nearest n millionths.
	switch {
	case f > 0 && f < 1e9:
		if n := uint64(f*1e6 + 0.5); float64(n)/1e6 == f {
			return appendMicros(b, n)
		}
	case f < 0 && f > -1e9:
		if n := uint64(-f*1e6 + 0.5); float64(n)/1e6 == -f {
			return appendMicros(append(b, '-'), n)
		}
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(b, '0')
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	b = strconv.AppendFloat(b, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// pairs holds "00" to "99": two digits a lookup.
const pairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendMicros writes n millionths as a decimal with trailing zeros trimmed.
func appendMicros(b []byte, n uint64) []byte {
	ip := n / 1e6
	frac := n - ip*1e6
	switch {
	case ip < 10:
		b = append(b, byte('0'+ip))
	case ip < 100:
		b = append(b, pairs[2*ip], pairs[2*ip+1])
	case ip < 10000:
		hi, lo := ip/100, ip%100
		if hi < 10 {
			b = append(b, byte('0'+hi))
		} else {
			b = append(b, pairs[2*hi], pairs[2*hi+1])
		}
		b = append(b, pairs[2*lo], pairs[2*lo+1])
	default:
		b = strconv.AppendUint(b, ip, 10)
	}
	if frac == 0 {
		return b
	}
	// The six decimals as three pairs; the last pair written drops a
	// trailing zero, and pairs after it are all zeros.
	d := [3]uint64{frac / 10000, frac / 100 % 100, frac % 100}
	last := 2
	for d[last] == 0 {
		last--
	}
	b = append(b, '.')
	for i := 0; i < last; i++ {
		b = append(b, pairs[2*d[i]], pairs[2*d[i]+1])
	}
	if p := d[last]; p%10 == 0 {
		b = append(b, byte('0'+p/10))
	} else {
		b = append(b, pairs[2*p], pairs[2*p+1])
	}
	return b
}

// AppendString writes s as a JSON string, as an encoding/json Encoder
// with SetEscapeHTML(false) writes it (Huma's, the api's).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return appendEncoded(b, s, false)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEncoded writes s through an encoding/json Encoder: the rare string
// that needs escaping.
func appendEncoded(b []byte, s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// AppendStringHTML writes s as json.Marshal does, which also escapes <, >
// and & (AppendString writes them as they are, as an encoder with
// SetEscapeHTML(false) does).
func AppendStringHTML(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c >= 0x80, c == '<', c == '>', c == '&':
			return appendEncoded(b, s, true)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
