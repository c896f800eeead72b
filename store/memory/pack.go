package memory

import (
	"encoding/binary"
	"errors"
	"math"
)

// Snapshots and depth snapshots are kept packed: a few bytes a number
// instead of eight, which is what keeps half a million snapshots with books
// in little memory. Packing is lossless.
//
// A number with at most six decimals whose mantissa fits in 53 bits (every
// price and size the upstreams send) is packed as the uvarint of
// zigzag(mantissa)<<3 | decimals, so 0.53 takes two bytes and 1234.56
// three. Any other number is the uvarint rawNum followed by its eight
// IEEE 754 bytes.
const (
	maxDecimals = 6
	rawNum      = 7
)

// pow10 holds the exact powers of ten a mantissa is divided by.
var pow10 = [maxDecimals + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6}

// errCorrupt means packed data does not decode; it would be a bug in this
// package, never bad input.
var errCorrupt = errors.New("memory: corrupt packed data")

// appendNum appends v, packed.
func appendNum(dst []byte, v float64) []byte {
	if m, dec, ok := decimal(v); ok {
		zz := uint64(m<<1) ^ uint64(m>>63)
		return binary.AppendUvarint(dst, zz<<3|uint64(dec))
	}
	dst = binary.AppendUvarint(dst, rawNum)
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// decimal returns v as m / 10^dec with the fewest decimals, when that is
// exactly v and dec ≤ maxDecimals.
func decimal(v float64) (m int64, dec int, ok bool) {
	scaled := v * pow10[maxDecimals]
	if !(math.Abs(scaled) < 1<<53) || (v == 0 && math.Signbit(v)) {
		return 0, 0, false // NaN, infinities, huge numbers and -0 go raw
	}
	m, dec = int64(math.Round(scaled)), maxDecimals
	for dec > 0 && m%10 == 0 {
		m /= 10
		dec--
	}
	// Dividing is what unpacking does; both sides are correctly rounded
	// quotients, so equality means the round trip is exact.
	return m, dec, float64(m)/pow10[dec] == v
}

// reader decodes packed data. The first error sticks and later reads
// return zeros, so callers check err once at the end. It advances an
// offset rather than reslicing b, which would cost a write barrier a read.
type reader struct {
	b   []byte
	off int
	err error
}

// left returns the number of bytes not read yet.
func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) fail() {
	r.err = errCorrupt
	r.off = len(r.b)
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) uvarint() uint64 {
	// The common case, one or two bytes, inline.
	if r.off+1 < len(r.b) {
		c0 := r.b[r.off]
		if c0 < 0x80 {
			r.off++
			return uint64(c0)
		}
		if c1 := r.b[r.off+1]; c1 < 0x80 {
			r.off += 2
			return uint64(c0&0x7f) | uint64(c1)<<7
		}
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

// count reads a length, which cannot exceed the bytes left (every element
// takes at least one).
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(r.left()) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) num() float64 {
	u := r.uvarint()
	if u == rawNum {
		if r.left() < 8 {
			r.fail()
			return 0
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
		r.off += 8
		return v
	}
	dec := u & 7
	if dec > maxDecimals {
		r.fail()
		return 0
	}
	zz := u >> 3
	m := int64(zz>>1) ^ -int64(zz&1)
	return float64(m) / pow10[dec]
}
