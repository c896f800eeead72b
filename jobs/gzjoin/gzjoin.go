// Package gzjoin deflates a byte string once and later writes it, framed
// by a head and a tail, as one gzip member without inflating and
// deflating it again.
//
// A worker deflates a large job result before it stores and announces it;
// the api wraps that result in its answer envelope. Where the client takes
// gzip, the api writes the member straight from the deflated bytes: the
// head and the tail go in as stored blocks, and the member's CRC-32 is
// combined from the parts' checksums. Where it does not, Inflate gives the
// bytes back.
package gzjoin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Deflated is a byte string as raw DEFLATE blocks (RFC 1951), none of them
// final, the last ending on a byte boundary (a sync flush): blocks that
// can be followed by more blocks in one stream.
type Deflated struct {
	Blocks []byte
	CRC    uint32 // CRC-32 (IEEE) of the inflated bytes
	Len    int    // length of the inflated bytes
}

var writers = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(nil, flate.BestSpeed) // a valid level: no error
	return zw
}}

// Deflate compresses p at the fastest level.
func Deflate(p []byte) (Deflated, error) {
	var buf bytes.Buffer
	buf.Grow(len(p)/8 + 1024)
	zw := writers.Get().(*flate.Writer)
	defer func() {
		zw.Reset(io.Discard) // the pool keeps the writer, not buf
		writers.Put(zw)
	}()
	zw.Reset(&buf)
	if _, err := zw.Write(p); err != nil {
		return Deflated{}, fmt.Errorf("deflate: %w", err)
	}
	// Flush, not Close: a sync flush ends the blocks on a byte boundary
	// without a final block, so that more blocks may follow them.
	if err := zw.Flush(); err != nil {
		return Deflated{}, fmt.Errorf("deflate: %w", err)
	}
	return Deflated{Blocks: buf.Bytes(), CRC: crc32.ChecksumIEEE(p), Len: len(p)}, nil
}

// finalEmpty is an empty final block (fixed Huffman codes, end of block
// alone): it ends a stream of non-final blocks.
var finalEmpty = []byte{0x03, 0x00}

// ErrCorrupt is returned for deflated bytes that do not inflate to what
// their length and checksum say.
var ErrCorrupt = errors.New("gzjoin: corrupt deflated data")

// maxRatio bounds how many bytes one byte of DEFLATE can inflate to
// (258 bytes for a 2-bit code, with room to spare): a corrupt length is
// not believed beyond it before the bytes are there.
const maxRatio = 1032

// Inflate returns the bytes d holds, checked against its length and CRC.
// max bounds the length d may claim.
func (d Deflated) Inflate(max int) ([]byte, error) {
	if d.Len < 0 || d.Len > max {
		return nil, fmt.Errorf("%w: length %d over the bound %d", ErrCorrupt, d.Len, max)
	}
	zr := flate.NewReader(io.MultiReader(bytes.NewReader(d.Blocks), bytes.NewReader(finalEmpty)))
	defer zr.Close()
	var out bytes.Buffer
	out.Grow(min(d.Len, maxRatio*(len(d.Blocks)+len(finalEmpty))) + bytes.MinRead) // sized once when the length is true
	// One byte more than announced, to see a longer stream.
	if _, err := out.ReadFrom(io.LimitReader(zr, int64(d.Len)+1)); err != nil && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if out.Len() != d.Len {
		return nil, fmt.Errorf("%w: inflates to more or less than %d bytes", ErrCorrupt, d.Len)
	}
	if crc32.ChecksumIEEE(out.Bytes()) != d.CRC {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return out.Bytes(), nil
}

// gzipHeader starts a member: magic, DEFLATE, no flags, no time, no extra
// flags, unknown OS (as compress/gzip writes it).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// maxStored is the most bytes one stored block carries.
const maxStored = 0xffff

// WriteMember writes one gzip member (RFC 1952) of head, then the bytes d
// holds, then tail, to w. d's blocks are copied as they are.
func WriteMember(w io.Writer, head []byte, d Deflated, tail []byte) (int64, error) {
	b := make([]byte, 0, len(gzipHeader)+len(head)+len(tail)+32)
	b = append(b, gzipHeader...)
	b = appendStored(b, head, false)
	n, err := w.Write(b)
	total := int64(n)
	if err != nil {
		return total, err
	}
	n, err = w.Write(d.Blocks)
	total += int64(n)
	if err != nil {
		return total, err
	}
	b = appendStored(b[:0], tail, true)
	crc := crc32.ChecksumIEEE(head)
	crc = combine(crc, d.CRC, int64(d.Len))
	crc = crc32.Update(crc, crc32.IEEETable, tail)
	b = binary.LittleEndian.AppendUint32(b, crc)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(head)+d.Len+len(tail))) // ISIZE: the length mod 2^32
	n, err = w.Write(b)
	return total + int64(n), err
}

// appendStored appends p as stored blocks, the last one final when final
// is set. Every block written here starts on a byte boundary (after the
// header, or after a sync flush), so its 3 header bits take a byte.
func appendStored(b, p []byte, final bool) []byte {
	for {
		n := min(len(p), maxStored)
		var bfinal byte
		if final && n == len(p) {
			bfinal = 1
		}
		b = append(b, bfinal)
		b = binary.LittleEndian.AppendUint16(b, uint16(n))
		b = binary.LittleEndian.AppendUint16(b, ^uint16(n))
		b = append(b, p[:n]...)
		p = p[n:]
		if len(p) == 0 {
			return b
		}
	}
}

// combine returns the CRC-32 of a string A followed by a string B of
// length lenB, from crcA and crcB: zlib's crc32_combine (1.2.12 and
// later), which multiplies crcA by x^(8·lenB) modulo the CRC polynomial,
// the power made from the table of x^(2^k) one set bit of lenB at a time.
// It costs a few hundred shifts where raising the zero-byte operator
// matrix by squaring (zlib before 1.2.12) cost 14 µs for a 15m replay's
// answer, on every answer the api passes on deflated.
func combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(xPow8n(lenB), crcA) ^ crcB
}

// The CRC-32 polynomials here are reflected, as crc32.IEEE is: bit 31
// holds x^0 and bit 0 holds x^31.
const one = uint32(1) << 31 // the polynomial 1

// multModP returns a·b modulo the CRC-32 polynomial.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := one; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// x2n holds x^(2^k) modulo the CRC-32 polynomial, for k from 0 to 31.
var x2n = func() (t [32]uint32) {
	p := one >> 1 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// xPow8n returns x^(8·n) modulo the CRC-32 polynomial: the operator of n
// zero bytes.
func xPow8n(n int64) uint32 {
	p := one
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}
