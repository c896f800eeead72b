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
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	if abs < 1e9 && f != 0 {
		// Prices and sizes carry at most 6 decimals (stores keep 1e-6).
		// When f is exactly such a decimal, its digits are the shortest
		// representation, written here without strconv's search.
		if n := math.Round(f * 1e6); n/1e6 == f {
			return appendMicros(b, int64(n))
		}
	}
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

// appendMicros writes n millionths as a decimal with trailing zeros trimmed.
func appendMicros(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/1e6, 10)
	frac := n % 1e6
	if frac == 0 {
		return b
	}
	if frac%10000 == 0 {
		// Two decimals: every price on a 0.01 tick and most sizes.
		d := byte(frac / 10000)
		b = append(b, '.', '0'+d/10)
		if d%10 != 0 {
			b = append(b, '0'+d%10)
		}
		return b
	}
	var digits [7]byte
	digits[0] = '.'
	for i := 6; i >= 1; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 7
	for digits[end-1] == '0' {
		end--
	}
	return append(b, digits[:end]...)
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
