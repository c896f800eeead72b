package postgres

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/updown/updown/store"
)

// TestDecodeLevelsShortcuts: decodeLevels, which takes a level's numbers
// from the side before where it can, decodes every input as the plain
// prediction steps do (levelsByPrediction), bit for bit: valid sides and
// corrupt ones, sides before that are unsorted or repeat a price, and
// bytes that are mostly zero, where the shortcuts apply.
func TestDecodeLevelsShortcuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 10))
	scales := []scale{raw, 1, 10_000, 7}
	for trial := range 20_000 {
		ps, ss := scales[rng.IntN(len(scales))], scales[rng.IntN(len(scales))]
		// The side before: its units, sorted or not, and its numbers.
		var ref sideRef
		nref := rng.IntN(8)
		p := int64(rng.IntN(300))
		for range nref {
			switch rng.IntN(4) {
			case 0:
				p += int64(rng.IntN(5)) - 2 // unsorted or repeated
			default:
				p += 1 + int64(rng.IntN(3))
			}
			ref.price = append(ref.price, p)
			ref.size = append(ref.size, int64(rng.IntN(400)))
		}
		bids := rng.IntN(2) == 0
		if bids {
			for i, j := 0, len(ref.price)-1; i < j; i, j = i+1, j-1 {
				ref.price[i], ref.price[j] = ref.price[j], ref.price[i]
			}
		}
		prev := make([]store.Level, nref)
		for i := range prev {
			prev[i] = store.Level{Price: ps.value(ref.price[i]), Size: ss.value(ref.size[i])}
		}
		// The bytes: zigzag varints, mostly zero, some long, some cut.
		var b []byte
		n := rng.IntN(10)
		for range 2 * n {
			switch rng.IntN(6) {
			case 0, 1, 2:
				b = append(b, 0)
			case 3:
				b = binary.AppendVarint(b, int64(rng.IntN(7))-3)
			case 4:
				b = binary.AppendVarint(b, rng.Int64N(1<<40)-1<<39)
			default:
				b = append(b, 0x80|byte(rng.IntN(128)))
			}
		}
		if rng.IntN(8) == 0 && len(b) > 0 {
			b = b[:rng.IntN(len(b))]
		}
		var pv, sv, pv2, sv2 valueTable
		pv2.fill(ps) // (the plain steps read tables filled beforehand)
		sv2.fill(ss)
		out, want := make([]store.Level, n), make([]store.Level, n)
		prices, sizes := make([]int64, n), make([]int64, n)
		wantPrices, wantSizes := make([]int64, n), make([]int64, n)
		rest, ok := decodeLevels(b, out, prices, sizes, &ref, prev, bids, &pv, &sv, ps, ss)
		wantRest, wantOK := levelsByPrediction(b, want, wantPrices, wantSizes, &ref, bids, &pv2, &sv2, ps, ss)
		if ok != wantOK || len(rest) != len(wantRest) {
			t.Fatalf("trial %d: ok %v, %d bytes left; the plain steps: %v, %d", trial, ok, len(rest), wantOK, len(wantRest))
		}
		if !ok {
			continue
		}
		for j := range n {
			if math.Float64bits(out[j].Price) != math.Float64bits(want[j].Price) ||
				math.Float64bits(out[j].Size) != math.Float64bits(want[j].Size) ||
				prices[j] != wantPrices[j] || sizes[j] != wantSizes[j] {
				t.Fatalf("trial %d, level %d: %v (%d, %d), the plain steps %v (%d, %d); side before %v, bytes %x",
					trial, j, out[j], prices[j], sizes[j], want[j], wantPrices[j], wantSizes[j], ref, b)
			}
		}
	}
}

// levelsByPrediction is decodeLevels as the books section defines it: each
// level predicted from the side before and its numbers computed from its
// units, with no shortcut.
func levelsByPrediction(b []byte, out []store.Level, prices, sizes []int64, ref *sideRef, bids bool,
	pv, sv *valueTable, ps, ss scale) ([]byte, bool) {
	rp, rs := ref.price, ref.size
	rs = rs[:len(rp)]
	prices, sizes = prices[:len(out)], sizes[:len(out)]
	// ahead(a, b) is a > b for bids, a < b for asks: a*dir < b*dir.
	dir := int64(1)
	if bids {
		dir = -1
	}
	var prev, gap int64
	match := 0
	for j := range out {
		var dp, ds int64
		if len(b) > 0 && b[0] < 0x80 {
			u := int64(b[0])
			dp, b = u>>1^-(u&1), b[1:]
		} else {
			v, n := binary.Varint(b)
			if n <= 0 {
				return nil, false
			}
			dp, b = v, b[n:]
		}
		var pred int64
		switch {
		case j == 0:
			if len(rp) > 0 {
				pred = rp[0]
			}
		case j < len(rp):
			pred = prev + (rp[j] - rp[j-1])
		default:
			pred = prev + gap
		}
		pu := dp + pred
		if j > 0 {
			gap = pu - prev
		}
		prev = pu

		if len(b) > 0 && b[0] < 0x80 {
			u := int64(b[0])
			ds, b = u>>1^-(u&1), b[1:]
		} else {
			v, n := binary.Varint(b)
			if n <= 0 {
				return nil, false
			}
			ds, b = v, b[n:]
		}
		for match < len(rp) && rp[match]*dir < pu*dir {
			match++
		}
		su := ds
		if match < len(rp) && rp[match] == pu {
			su += rs[match]
		}
		prices[j], sizes[j] = pu, su
		var l store.Level
		if uint64(pu) < tableSize {
			l.Price = pv.v[pu]
		} else {
			l.Price = ps.value(pu)
		}
		if uint64(su) < tableSize {
			l.Size = sv.v[su]
		} else {
			l.Size = ss.value(su)
		}
		out[j] = l
	}
	return b, true
}

// TestShortVarint: shortVarint reads every varint that ends within eight
// bytes as binary.Varint does, whatever the bytes after it, and
// decodeLevels takes it only for those.
func TestShortVarint(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 11))
	for trial := range 200_000 {
		var b []byte
		switch trial % 3 {
		case 0: // a varint of a value of up to 56 bits, then noise
			v := rng.Int64N(1<<uint(1+rng.IntN(56))) - 1<<uint(rng.IntN(55))
			b = binary.AppendVarint(b, v)
		default: // random bytes, most with the high bit set
			for range 1 + rng.IntN(8) {
				b = append(b, byte(rng.IntN(256))|byte(rng.IntN(2))<<7)
			}
		}
		for len(b) < 8+rng.IntN(4) {
			b = append(b, byte(rng.IntN(256)))
		}
		want, wantN := binary.Varint(b)
		if wantN <= 0 || wantN > 8 {
			continue // not a varint that ends within eight bytes
		}
		if ^binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			t.Fatalf("trial %d: % x: decodeLevels would not take shortVarint for a varint of %d bytes", trial, b, wantN)
		}
		if got, n := shortVarint(b); got != want || n != wantN {
			t.Fatalf("trial %d: % x: shortVarint %d (%d bytes), binary.Varint %d (%d bytes)", trial, b, got, n, want, wantN)
		}
	}
}
