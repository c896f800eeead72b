package redislive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/updown/updown/store"
)

// The latest depth of a coin and kind is one string value:
//
//	20 bytes  Time in Unix milliseconds, as a zero-padded signed decimal
//	1 byte    format version (depthVersion)
//	uvarint   len(Symbol), then Symbol
//	varint    LastUpdateID
//	8 bytes   CoinPrice (IEEE 754, little endian)
//	uvarint   len(Bids), uvarint len(Asks)
//	16 bytes  Price and Quantity of each bid, then of each ask
//
// The decimal time leads so that the check-and-set script can read it with
// GETRANGE and tonumber, without a binary decoder in Lua. Numbers are kept
// as their exact IEEE 754 bits: a 20-level book is about 700 bytes, and
// whatever the collector recorded is what the api rounds at its edge.
//
// A recent trade is one sorted-set member scored by its id:
//
//	1 byte    format version (tradeVersion)
//	varint    ID
//	varint    Time in Unix milliseconds
//	8 bytes   Price, Qty, QuoteQty each (IEEE 754, little endian)
//	1 byte    flags: isBuyerMaker, isBestMatch known, isBestMatch
const (
	timeWidth    = 20
	depthVersion = 1
	tradeVersion = 1
	levelBytes   = 16

	flagBuyerMaker    = 1 << 0
	flagHasBestMatch  = 1 << 1
	flagBestMatchTrue = 1 << 2
	knownFlags        = flagBuyerMaker | flagHasBestMatch | flagBestMatchTrue
)

// errCorrupt means a stored value does not decode: written by something
// other than this package, or by a newer version of it.
var errCorrupt = errors.New("redislive: corrupt value")

// encodeTime writes ms as the fixed-width decimal the set script compares.
func encodeTime(dst []byte, ms int64) []byte {
	var buf [timeWidth]byte
	s := strconv.AppendInt(buf[:0], ms, 10)
	// Zero-pad after the sign so that Lua's tonumber reads it back.
	pad := timeWidth - len(s)
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	for range pad {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// encodeDepth packs d (whose Time is already in milliseconds).
func encodeDepth(d store.DepthSnapshot) []byte {
	n := timeWidth + 1 + binary.MaxVarintLen64*4 + len(d.Symbol) + 8 + levelBytes*(len(d.Bids)+len(d.Asks))
	b := make([]byte, 0, n)
	b = encodeTime(b, d.Time.UnixMilli())
	b = append(b, depthVersion)
	b = binary.AppendUvarint(b, uint64(len(d.Symbol)))
	b = append(b, d.Symbol...)
	b = binary.AppendVarint(b, d.LastUpdateID)
	b = appendFloat(b, d.CoinPrice)
	b = binary.AppendUvarint(b, uint64(len(d.Bids)))
	b = binary.AppendUvarint(b, uint64(len(d.Asks)))
	for _, side := range [][]store.DepthLevel{d.Bids, d.Asks} {
		for _, l := range side {
			b = appendFloat(b, l.Price)
			b = appendFloat(b, l.Quantity)
		}
	}
	return b
}

// decodeDepth unpacks a value written by encodeDepth. Kind is left for the
// caller, who knows it from the key. Both sides share one allocation, each
// capped so that appending to one cannot overwrite the other.
func decodeDepth(b string) (store.DepthSnapshot, error) {
	var d store.DepthSnapshot
	if len(b) < timeWidth+1 {
		return d, fmt.Errorf("%w: depth value of %d bytes", errCorrupt, len(b))
	}
	ms, err := strconv.ParseInt(b[:timeWidth], 10, 64)
	if err != nil {
		return d, fmt.Errorf("%w: depth time %q", errCorrupt, b[:timeWidth])
	}
	r := reader{s: b[timeWidth:]}
	if v := r.byte(); v != depthVersion {
		return d, fmt.Errorf("%w: depth format version %d", errCorrupt, v)
	}
	symLen := r.uvarint()
	d.Symbol = r.str(symLen)
	d.LastUpdateID = r.varint()
	d.CoinPrice = r.float()
	nb, na := r.uvarint(), r.uvarint()
	// Bound the counts by what is left before allocating, so a corrupt
	// count cannot ask for gigabytes.
	if r.err != nil || nb > uint64(r.left()/levelBytes) || na > uint64(r.left()/levelBytes) || (nb+na)*levelBytes != uint64(r.left()) {
		return d, fmt.Errorf("%w: depth book of %d bids and %d asks in %d bytes", errCorrupt, nb, na, r.left())
	}
	levels := make([]store.DepthLevel, nb+na)
	for i := range levels {
		levels[i] = store.DepthLevel{Price: r.float(), Quantity: r.float()}
	}
	d.Bids, d.Asks = levels[:nb:nb], levels[nb:]
	d.Time = time.UnixMilli(ms).UTC()
	return d, r.err
}

// encodeTrade packs t (whose Time is already in milliseconds).
func encodeTrade(t store.Trade) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+3*8+1)
	b = append(b, tradeVersion)
	b = binary.AppendVarint(b, t.ID)
	b = binary.AppendVarint(b, t.Time.UnixMilli())
	b = appendFloat(b, t.Price)
	b = appendFloat(b, t.Qty)
	b = appendFloat(b, t.QuoteQty)
	var flags byte
	if t.IsBuyerMaker {
		flags |= flagBuyerMaker
	}
	if t.IsBestMatch != nil {
		flags |= flagHasBestMatch
		if *t.IsBestMatch {
			flags |= flagBestMatchTrue
		}
	}
	return append(b, flags)
}

// decodeTrade unpacks a member written by encodeTrade. bestMatch is where
// IsBestMatch points when it is known, so that a page of trades shares one
// allocation for them.
func decodeTrade(b string, bestMatch *bool) (store.Trade, error) {
	var t store.Trade
	r := reader{s: b}
	if v := r.byte(); v != tradeVersion {
		return t, fmt.Errorf("%w: trade format version %d", errCorrupt, v)
	}
	t.ID = r.varint()
	ms := r.varint()
	t.Price, t.Qty, t.QuoteQty = r.float(), r.float(), r.float()
	flags := r.byte()
	if r.err != nil || r.left() != 0 || flags&^knownFlags != 0 {
		return store.Trade{}, fmt.Errorf("%w: trade member of %d bytes", errCorrupt, len(b))
	}
	t.Time = time.UnixMilli(ms).UTC()
	t.IsBuyerMaker = flags&flagBuyerMaker != 0
	if flags&flagHasBestMatch != 0 {
		*bestMatch = flags&flagBestMatchTrue != 0
		t.IsBestMatch = bestMatch
	}
	return t, nil
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// reader decodes packed data. It reads a string, which is what go-redis
// answers, so that decoding copies nothing. The first error sticks and
// later reads return zeros, so callers check err once at the end.
type reader struct {
	s   string
	err error
}

func (r *reader) left() int { return len(r.s) }

func (r *reader) fail() {
	r.err = errCorrupt
	r.s = ""
}

func (r *reader) byte() byte {
	if len(r.s) < 1 {
		r.fail()
		return 0
	}
	c := r.s[0]
	r.s = r.s[1:]
	return c
}

func (r *reader) str(n uint64) string {
	if n > uint64(len(r.s)) {
		r.fail()
		return ""
	}
	out := r.s[:n]
	r.s = r.s[n:]
	return out
}

// uvarint decodes as binary.Uvarint does, rejecting overlong encodings.
func (r *reader) uvarint() uint64 {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64 && i < len(r.s); i++ {
		c := r.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *reader) float() float64 {
	if len(r.s) < 8 {
		r.fail()
		return 0
	}
	var u uint64
	for i := 7; i >= 0; i-- {
		u = u<<8 | uint64(r.s[i])
	}
	r.s = r.s[8:]
	return math.Float64frombits(u)
}
