package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/updown/updown/store"
)

// The decoding of a chunk into a tape, which a replay's read runs for every
// snapshot of a market: decodeTicks for the head, tapeSection for the books
// of version 2. They decode what decodeHead and bookDecoder.side do, with
// the same checks, in loops that keep their state in locals, call nothing
// through a function value, and allocate a chunk's levels once, at their
// exact size.

// decodeTicks appends the chunk's snapshots to dst as the ticks of a tape,
// their books not set. The head's version, count and end are read as
// decodeHead reads them (growHead, endHead).
func decodeTicks(dst []store.Tick, head []byte) ([]store.Tick, error) {
	r := reader{b: head}
	start := len(dst)
	dst, err := growHead(&r, dst)
	if err != nil || len(dst) == start {
		return dst, err
	}
	out := dst[start:]
	decodeTickTimes(&r, out)
	for col := range 3 {
		if r.err == nil {
			r.b = decodeTickColumn(&r, r.b, out, col)
		}
	}
	return endHead(&r, dst, start)
}

// decodeTickTimes is decodeTimes for ticks.
func decodeTickTimes(r *reader, out []store.Tick) {
	t := r.varint()
	out[0].Nanos = t * 1000
	if len(out) == 1 {
		return
	}
	g := r.uvarint()
	if g == 0 || g > math.MaxInt64 {
		r.fail("bad time gcd %d", g)
		return
	}
	var gap int64
	b := r.b
	for i := 1; i < len(out); i++ {
		var d int64
		if len(b) > 0 && b[0] < 0x80 {
			u := int64(b[0])
			d, b = u>>1^-(u&1), b[1:]
		} else {
			v, n := binary.Varint(b)
			if n <= 0 {
				r.fail("bad varint")
				return
			}
			d, b = v, b[n:]
		}
		gap += d
		if gap <= 0 {
			r.fail("times not increasing")
			return
		}
		t += gap * int64(g)
		out[i].Nanos = t * 1000
	}
	r.b = b
}

// decodeTickColumn is decodeColumn for ticks: column col, 0 to 2, is the
// coin price, the up price or the down price. A value that did not change
// is not computed again.
func decodeTickColumn(r *reader, b []byte, out []store.Tick, col int) []byte {
	sc, n := binary.Uvarint(b)
	if n <= 0 {
		r.fail("bad uvarint")
		return nil
	}
	b = b[n:]
	s := scale(sc)
	var u int64
	v := s.value(0)
	for i := range out {
		var d int64
		if len(b) > 0 && b[0] < 0x80 {
			x := int64(b[0])
			d, b = x>>1^-(x&1), b[1:]
		} else {
			x, n := binary.Varint(b)
			if n <= 0 {
				r.fail("bad varint")
				return nil
			}
			d, b = x, b[n:]
		}
		if d != 0 || i == 0 {
			u += d
			v = s.value(u)
		}
		switch col {
		case 0:
			out[i].CoinPrice = v
		case 1:
			out[i].PriceUp = v
		default:
			out[i].PriceDown = v
		}
	}
	return b
}

// tapeSide is what tapeSection keeps of one side of the kept book: the
// side as last decoded (nil for none), where it is, its best level, and
// its units, which the next side written is predicted from.
type tapeSide struct {
	levels []store.Level
	span   store.Span
	best   store.Level
	ref    sideRef
}

// tapeSection sets the kept outcome's books on ticks from its section of a
// books section of version 2, which open read the header of, adds the
// ticks without one to noBook, and returns the levels their spans index
// (block number block of the tape). It reads what decodeTapeBooks reads
// through side, and fails where that fails.
func (d *bookDecoder) tapeSection(ticks []store.Tick, noBook *store.TickSet, flags []byte, block int) ([]store.Level, error) {
	k, p := 0, 0 // the kept book's first side position, and its section
	if d.keep == flagDown {
		k, p = 2, 1
	}
	in := d.in[p]
	// The levels the section writes, to allocate them once: each varint
	// ends in one byte below 0x80, and the section is a header for each
	// side written (those present and not marked unchanged), then two
	// varints a level. A section that decodes holds exactly that many; a
	// corrupt one that holds more fails below.
	written := 0
	same := byte(flagSame<<k | flagSame<<(k+1))
	for _, f := range flags {
		if f&d.keep != 0 {
			written += 2 - bits.OnesCount8(f&same)
		}
	}
	levels := make([]store.Level, 0, max(0, min((varintEnds(in)-written)/2, d.total[p])))

	noBest := store.Level{Price: math.NaN()}
	sd := [2]tapeSide{{best: noBest}, {best: noBest}}
	// The units of the two sides and of the side being decoded, in arrays
	// on the stack while the sides are no deeper (grow moves them when
	// one is).
	var units [3][2][32]int64
	sd[0].ref = sideRef{price: units[0][0][:0], size: units[0][1][:0]}
	sd[1].ref = sideRef{price: units[1][0][:0], size: units[1][1][:0]}
	next := sideRef{price: units[2][0][:0], size: units[2][1][:0]}
	left := d.total[p] // the levels the header still allows, repeats included
	fail := func(format string, args ...any) ([]store.Level, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
	}
	for i, f := range flags {
		tk := &ticks[i]
		switch {
		case f&d.keep == 0:
			tk.Bids, tk.Asks = store.Span{}, store.Span{}
			tk.BestBid, tk.BestBidSize, tk.BestAsk, tk.BestAskSize = noBest.Price, 0, noBest.Price, 0
			noBook.Add(i)
			continue
		case f&same == same:
			// Both sides as they were (most ticks of a book that moves).
			n := len(sd[0].levels) + len(sd[1].levels)
			if n > left {
				return fail("more levels than the %d announced", d.total[p])
			}
			left -= n
			tk.Bids, tk.Asks = sd[0].span, sd[1].span
			tk.BestBid, tk.BestBidSize = sd[0].best.Price, sd[0].best.Size
			tk.BestAsk, tk.BestAskSize = sd[1].best.Price, sd[1].best.Size
			continue
		}
		for j := range sd {
			if f&(flagSame<<(k+j)) != 0 {
				if len(sd[j].levels) > left {
					return fail("more levels than the %d announced", d.total[p])
				}
				left -= len(sd[j].levels)
				continue
			}
			var c uint64
			m := 1
			if len(in) > 0 && in[0] < 0x80 {
				c = uint64(in[0])
			} else if c, m = binary.Uvarint(in); m <= 0 {
				return fail("bad uvarint")
			}
			switch {
			case c == 0:
				in = in[m:]
				sd[j].levels, sd[j].span, sd[j].best = nil, store.Span{}, noBest
				sd[j].ref.price, sd[j].ref.size = sd[j].ref.price[:0], sd[j].ref.size[:0]
				continue
			case c-1 > uint64(len(in)/2):
				return fail("side of %d levels exceeds the %d bytes left", c-1, len(in))
			}
			in = in[m:]
			n := int(c - 1)
			switch {
			case n > left:
				return fail("more levels than the %d announced", d.total[p])
			case n > cap(levels)-len(levels):
				return fail("more levels than the section can hold")
			}
			left -= n
			off := len(levels)
			levels = levels[:off+n]
			out := levels[off : off+n : off+n]
			next.price = grow(next.price, n)
			next.size = grow(next.size, n)
			rest, ok := decodeLevels(in, out, next.price, next.size, &sd[j].ref, sd[j].levels, j == 0, &d.pv, &d.sv, d.pScale, d.sScale)
			if !ok {
				return fail("bad varint")
			}
			in = rest
			sd[j].ref, next = next, sd[j].ref
			sd[j].levels = out
			sp, err := store.SideSpan(block, off, n)
			if err != nil {
				return nil, err
			}
			sd[j].span = sp
			sd[j].best.Price, sd[j].best.Size = store.BestOf(out)
		}
		tk.Bids, tk.Asks = sd[0].span, sd[1].span
		tk.BestBid, tk.BestBidSize = sd[0].best.Price, sd[0].best.Size
		tk.BestAsk, tk.BestAskSize = sd[1].best.Price, sd[1].best.Size
	}
	d.in[p], d.levels[p] = in, d.total[p]-left
	if err := d.close(); err != nil {
		return nil, err
	}
	return levels, nil
}

// varintEnds returns the number of bytes of b below 0x80: the number of
// varints in b when b is a run of them.
func varintEnds(b []byte) int {
	n, cont := len(b), 0 // cont: bytes with the continuation bit
	for len(b) >= 8 {
		cont += bits.OnesCount64(binary.LittleEndian.Uint64(b) & 0x8080808080808080)
		b = b[8:]
	}
	for _, c := range b {
		cont += int(c >> 7)
	}
	return n - cont
}
