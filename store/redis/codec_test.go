package redislive

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func TestEncodeTimeWidth(t *testing.T) {
	t.Parallel()
	for _, ms := range []int64{0, 1, -1, 1_777_467_600_123, -62_135_596_800_000, math.MaxInt64, math.MinInt64} {
		b := encodeTime(nil, ms)
		if len(b) != timeWidth {
			t.Errorf("encodeTime(%d) = %q: %d bytes, want %d", ms, b, len(b), timeWidth)
		}
		if got, err := strconv.ParseInt(string(b), 10, 64); err != nil || got != ms {
			t.Errorf("encodeTime(%d) = %q reads back as %d (%v)", ms, b, got, err)
		}
	}
}

// sameFloat compares bit for bit, so that NaNs compare equal to
// themselves and -0 differs from 0.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameDepth(a, b store.DepthSnapshot) bool {
	sameLevels := func(x, y []store.DepthLevel) bool {
		return slices.EqualFunc(x, y, func(p, q store.DepthLevel) bool {
			return sameFloat(p.Price, q.Price) && sameFloat(p.Quantity, q.Quantity)
		})
	}
	return a.Symbol == b.Symbol && a.Time.Equal(b.Time) && sameFloat(a.CoinPrice, b.CoinPrice) &&
		a.LastUpdateID == b.LastUpdateID && sameLevels(a.Bids, b.Bids) && sameLevels(a.Asks, b.Asks)
}

// FuzzDepthRoundTrip checks that every snapshot decodes to what was encoded,
// numbers bit for bit.
func FuzzDepthRoundTrip(f *testing.F) {
	f.Add("BTCUSDT", int64(1_777_467_600_123), 95_123.456789, int64(73_829_374_829), 95_123.45, 0.123456789, uint8(20), uint8(20))
	f.Add("", int64(-1), math.NaN(), int64(math.MinInt64), math.Inf(1), math.Copysign(0, -1), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, symbol string, ms int64, coinPrice float64, id int64, price, qty float64, bids, asks uint8) {
		d := store.DepthSnapshot{Symbol: symbol, Time: time.UnixMilli(ms).UTC(), CoinPrice: coinPrice, LastUpdateID: id}
		for i := range int(bids) {
			d.Bids = append(d.Bids, store.DepthLevel{Price: price - float64(i), Quantity: qty * float64(i)})
		}
		for i := range int(asks) {
			d.Asks = append(d.Asks, store.DepthLevel{Price: price + float64(i), Quantity: qty / float64(i+1)})
		}
		got, err := decodeDepth(string(encodeDepth(d)))
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", d, err)
		}
		if !sameDepth(d, got) {
			t.Fatalf("round trip changed the snapshot:\n got %+v\nwant %+v", got, d)
		}
	})
}

// FuzzDecodeDepth feeds arbitrary values: decoding never panics nor asks
// for more memory than the value could describe, and what decodes
// re-encodes to a value that decodes the same.
func FuzzDecodeDepth(f *testing.F) {
	f.Add(encodeDepth(store.DepthSnapshot{Symbol: "BTCUSDT", Time: time.UnixMilli(1_777_467_600_123), CoinPrice: 1,
		Bids: []store.DepthLevel{{Price: 1, Quantity: 2}}, Asks: []store.DepthLevel{{Price: 3, Quantity: 4}}}))
	f.Add([]byte("00000000000000000000\x01\x00\x00"))
	f.Add([]byte("-0000000000000000001\x01\x07BTCUSDT\x02\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x0f\x00"))
	f.Add([]byte("not a depth snapshot"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDepth(string(b))
		if err != nil {
			return
		}
		if len(d.Bids)+len(d.Asks) > len(b)/levelBytes {
			t.Fatalf("%d levels from %d bytes", len(d.Bids)+len(d.Asks), len(b))
		}
		again, err := decodeDepth(string(encodeDepth(d)))
		if err != nil || !sameDepth(d, again) {
			t.Fatalf("re-encoding %+v gave %+v (%v)", d, again, err)
		}
	})
}

func sameTrade(a, b store.Trade) bool {
	bm := func(p *bool) int {
		switch {
		case p == nil:
			return -1
		case *p:
			return 1
		}
		return 0
	}
	return a.ID == b.ID && a.Time.Equal(b.Time) && sameFloat(a.Price, b.Price) && sameFloat(a.Qty, b.Qty) &&
		sameFloat(a.QuoteQty, b.QuoteQty) && a.IsBuyerMaker == b.IsBuyerMaker && bm(a.IsBestMatch) == bm(b.IsBestMatch)
}

func FuzzTradeRoundTrip(f *testing.F) {
	f.Add(int64(4_123_456_789), int64(1_777_467_600_123), 95_123.456789, 0.123456789, 11_743.3, true, uint8(2))
	f.Add(int64(math.MaxInt64), int64(math.MinInt64), math.NaN(), math.Inf(-1), math.Copysign(0, -1), false, uint8(0))
	f.Fuzz(func(t *testing.T, id, ms int64, price, qty, quote float64, buyerMaker bool, bestMatch uint8) {
		tr := store.Trade{ID: id, Time: time.UnixMilli(ms).UTC(), Price: price, Qty: qty, QuoteQty: quote, IsBuyerMaker: buyerMaker}
		if bestMatch%3 != 0 {
			v := bestMatch%3 == 1
			tr.IsBestMatch = &v
		}
		var slot bool
		got, err := decodeTrade(string(encodeTrade(tr)), &slot)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", tr, err)
		}
		if !sameTrade(tr, got) {
			t.Fatalf("round trip changed the trade:\n got %+v\nwant %+v", got, tr)
		}
	})
}

func FuzzDecodeTrade(f *testing.F) {
	f.Add(encodeTrade(store.Trade{ID: 1, Time: time.UnixMilli(2), Price: 3, Qty: 4, QuoteQty: 12}))
	f.Add([]byte("garbage"))
	f.Add([]byte{tradeVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		var slot bool
		tr, err := decodeTrade(string(b), &slot)
		if err != nil {
			return
		}
		var slot2 bool
		again, err := decodeTrade(string(encodeTrade(tr)), &slot2)
		if err != nil || !sameTrade(tr, again) {
			t.Fatalf("re-encoding %+v gave %+v (%v)", tr, again, err)
		}
	})
}

// FuzzUvarint holds the string reader's varint to encoding/binary's.
func FuzzUvarint(f *testing.F) {
	for _, b := range [][]byte{{0}, {0x80, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2}, {0x80}, {}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, n := binary.Uvarint(b)
		r := reader{s: string(b)}
		got := r.uvarint()
		if n <= 0 {
			if r.err == nil {
				t.Fatalf("% x: read %d, binary.Uvarint fails (%d)", b, got, n)
			}
			return
		}
		if r.err != nil || got != want || r.left() != len(b)-n {
			t.Fatalf("% x: read %d leaving %d (%v), binary.Uvarint reads %d in %d bytes", b, got, r.left(), r.err, want, n)
		}
		sr := reader{s: string(b)}
		if v, _ := binary.Varint(b); sr.varint() != v {
			t.Fatalf("% x: varint differs", b)
		}
	})
}
