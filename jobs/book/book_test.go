package book

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func feed(t *testing.T, bs *Books, msgs ...string) (outOfStep []string) {
	t.Helper()
	for _, m := range msgs {
		evs, err := Decode([]byte(m))
		if err != nil {
			t.Fatalf("decode %s: %v", m, err)
		}
		for i := range evs {
			_, oos := bs.Apply(&evs[i])
			outOfStep = append(outOfStep, oos...)
		}
	}
	return outOfStep
}

// TestBooksRules checks each rule of the package documentation.
func TestBooksRules(t *testing.T) {
	t.Parallel()
	const bookA = `{"event_type":"book","asset_id":"A","market":"0xc","timestamp":"1000","bids":[{"price":"0.48","size":"30"},{"price":"0.47","size":"10"}],"asks":[{"price":"0.52","size":"25"},{"price":"0.53","size":"5"}]}`
	tests := []struct {
		name      string
		msgs      []string
		wantBids  []store.Level
		wantAsks  []store.Level
		wantPrice float64
		noBook    bool
		outOfStep []string
	}{
		{name: "book replaces", msgs: []string{bookA},
			wantBids: []store.Level{{Price: 0.48, Size: 30}, {Price: 0.47, Size: 10}}, wantAsks: []store.Level{{Price: 0.52, Size: 25}, {Price: 0.53, Size: 5}}, wantPrice: 0.52},
		{name: "price_change sets a level", msgs: []string{bookA, `{"event_type":"price_change","market":"0xc","price_changes":[{"asset_id":"A","price":"0.51","size":"7","side":"SELL","best_bid":"0.48","best_ask":"0.51"}]}`},
			wantBids: []store.Level{{Price: 0.48, Size: 30}, {Price: 0.47, Size: 10}}, wantAsks: []store.Level{{Price: 0.51, Size: 7}, {Price: 0.52, Size: 25}, {Price: 0.53, Size: 5}}, wantPrice: 0.51},
		{name: "size 0 removes", msgs: []string{bookA, `{"event_type":"price_change","asset_id":"A","changes":[{"price":"0.52","size":"0","side":"SELL"}]}`},
			wantBids: []store.Level{{Price: 0.48, Size: 30}, {Price: 0.47, Size: 10}}, wantAsks: []store.Level{{Price: 0.53, Size: 5}}, wantPrice: 0.53},
		{name: "change before any book waits", msgs: []string{`{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"0.51","size":"7","side":"SELL"}]}`}, noBook: true},
		{name: "out of step drops the book", msgs: []string{bookA, `{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"0.49","size":"1","side":"BUY","best_bid":"0.50","best_ask":"0.52"}]}`},
			noBook: true, outOfStep: []string{"A"}},
		{name: "no asks: last trade prices", msgs: []string{`{"event_type":"book","asset_id":"A","bids":[{"price":"0.4","size":"1"}],"asks":[]}`, `{"event_type":"last_trade_price","asset_id":"A","price":"0.45","size":"3","side":"BUY"}`},
			wantBids: []store.Level{{Price: 0.4, Size: 1}}, wantAsks: []store.Level{}, wantPrice: 0.45},
		{name: "tick change keeps levels", msgs: []string{bookA, `{"event_type":"tick_size_change","asset_id":"A","old_tick_size":"0.01","new_tick_size":"0.001"}`},
			wantBids: []store.Level{{Price: 0.48, Size: 30}, {Price: 0.47, Size: 10}}, wantAsks: []store.Level{{Price: 0.52, Size: 25}, {Price: 0.53, Size: 5}}, wantPrice: 0.52},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bs := NewBooks()
			oos := feed(t, bs, tc.msgs...)
			if !slices.Equal(oos, tc.outOfStep) {
				t.Errorf("out of step %v, want %v", oos, tc.outOfStep)
			}
			b := bs.Get("A")
			if tc.noBook {
				if b != nil {
					t.Fatalf("book kept: %+v", b)
				}
				return
			}
			if b == nil {
				t.Fatal("no book")
			}
			sb, p, err := b.Store(10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sb.Bids, tc.wantBids) || !slices.Equal(sb.Asks, tc.wantAsks) || p != tc.wantPrice {
				t.Errorf("book %+v price %v, want bids %v asks %v price %v", sb, p, tc.wantBids, tc.wantAsks, tc.wantPrice)
			}
		})
	}
}

func TestPriceWithoutAsksOrTrade(t *testing.T) {
	t.Parallel()
	if _, err := Price(store.Book{Bids: []store.Level{{Price: 0.4, Size: 1}}}, Num{}); !errors.Is(err, ErrNoPrice) {
		t.Fatalf("err %v, want ErrNoPrice", err)
	}
}

func TestGrid(t *testing.T) {
	t.Parallel()
	base := time.UnixMilli(1_778_584_200_000).UTC()
	for _, tc := range []struct {
		in   time.Duration
		want time.Duration
	}{{0, 300 * time.Millisecond}, {1, 300 * time.Millisecond}, {299 * time.Millisecond, 300 * time.Millisecond}, {300 * time.Millisecond, 600 * time.Millisecond}} {
		if got := Next(base.Add(tc.in), Interval); !got.Equal(base.Add(tc.want)) {
			t.Errorf("Next(+%v) = %v, want +%v", tc.in, got.Sub(base), tc.want)
		}
	}
	if !OnGrid(base.Add(900*time.Millisecond), Interval) || OnGrid(base.Add(901*time.Millisecond), Interval) {
		t.Error("OnGrid")
	}
}

// FuzzDecode checks that whatever Decode accepts folds into books that
// only hold levels in (0, 1) × (0, ∞) and price as the rules say.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`[{"event_type":"book","asset_id":"A","bids":[{"price":".48","size":"30"}],"asks":[{"price":".52","size":"25"}]}]`,
		`{"event_type":"price_change","market":"0x1","price_changes":[{"asset_id":"A","price":"0.5","size":"0","side":"BUY","best_bid":"0","best_ask":"1"}]}`,
		`{"event_type":"last_trade_price","asset_id":"A","price":"0.51","size":"1","side":"SELL","transaction_hash":"0x"}`,
		`{"event_type":"tick_size_change","asset_id":"A","old_tick_size":"0.01","new_tick_size":"0.001"}`,
		`PONG`, `[]`, `[{}]`, `{"event_type":"book"}`, `not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		evs, err := Decode(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		bs := NewBooks()
		feed(t, bs, `{"event_type":"book","asset_id":"A","bids":[{"price":".48","size":"30"}],"asks":[{"price":".52","size":"25"}]}`)
		for i := range evs {
			bs.Apply(&evs[i])
		}
		for _, tok := range bs.Tokens() {
			sb, p, err := bs.Get(tok).Store(1000)
			for _, l := range slices.Concat(sb.Bids, sb.Asks) {
				if !(l.Price > 0 && l.Price < 1 && l.Size > 0) {
					t.Fatalf("kept level %+v after %q", l, msg)
				}
			}
			if err == nil && !(p > 0 && p <= 1) {
				t.Fatalf("price %v after %q", p, msg)
			}
		}
	})
}

// FuzzFastDecode checks the fast path of frames against encoding/json:
// where the fast path accepts a frame, the general way reads the same.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		`[{"event_type":"book","asset_id":"A","market":"0x1","timestamp":"1","bids":[{"price":".48","size":"30"}],"asks":[],"hash":"x"}]`,
		`{"event_type":"price_change","market":"0x1","timestamp":1703875201000,"price_changes":[{"asset_id":"7","price":"0.5","size":"0","side":"BUY","hash":"h","best_bid":"0","best_ask":"1"}]}`,
		`{"event_type":"last_trade_price","asset_id":7,"price":0.51,"size":"1","side":"SELL","fee_rate_bps":"0","transaction_hash":"0x"}`,
		`{"event_type":"tick_size_change","asset_id":"A","old_tick_size":"0.01","new_tick_size":"0.001"}`,
		`{"event_type":"book","asset_id":"A","buys":null,"sells":[{"size":1,"price":0.2}]}`,
		`{"event_type":"book","asset_id":"A","timestamp":"01"}`, `{"timestamp":" 5"}`, `{"timestamp":-5}`, `{"timestamp":"99999999999999999999"}`,
		`{"Event_Type":"book"}`, `{"price":"1","price":"2"}`, `{"x":{"y":1}}`, `[]`, `{}`, `{"price":" 0.5 "}`, `{"side":"\u0042UY"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b) // as Decode does
		if len(b) == 0 {
			return
		}
		fast, ok := fastDecode(b)
		if !ok {
			return
		}
		slow, err := slowDecode(b)
		if err != nil {
			t.Fatalf("fast path read %q, encoding/json refuses it: %v", b, err)
		}
		// The events Check makes of them are the same, and the wires but
		// for a timestamp the fast path read as a number (in the form
		// upstream writes it, the one FormatInt gives back).
		for i := range fast {
			fe, ferr := fast[i].Check()
			se, serr := slow[i].Check()
			if !reflect.DeepEqual(fe, se) || (ferr == nil) != (serr == nil) {
				t.Fatalf("%q: event %d: fast %+v (%v), encoding/json %+v (%v)", b, i, fe, ferr, se, serr)
			}
		}
		fast = asText(fast)
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", b, fast, slow)
		}
		// A Decoder's: its memory reused (a frame's wires and their
		// changes, another frame's first) and its names interned.
		d := Decoder{names: map[string]string{}, wires: make([]Wire, 3)}
		for _, frame := range [][]byte{b, b, []byte(`[{"price_changes":[{"price":"0.5"},{"price":"0.6"}]},{"changes":[{"side":"BUY"}]}]`), b} {
			got, ok := d.fastDecode(frame)
			if !bytes.Equal(frame, b) {
				continue
			}
			got = asText(got)
			if !ok || !reflect.DeepEqual(got, slow) {
				t.Fatalf("%q: fast with a Decoder's memory %+v (%v), encoding/json %+v", b, got, ok, slow)
			}
		}
	})
}

// asText spells the timestamps the fast path read as numbers as text, as
// encoding/json reads them.
func asText(ws []Wire) []Wire {
	for i := range ws {
		if ws[i].Millis > 0 {
			ws[i].Timestamp, ws[i].Millis = Text(strconv.FormatInt(ws[i].Millis, 10)), 0
		}
	}
	return ws
}

// TestDecoderNumbers checks that a Decoder reads a price_change frame
// without allocating, however many changes it has: its numbers and
// timestamp take no text, the frame's list of changes is the Decoder's
// memory and the event's is carved from arrays of hundreds (an import
// reads millions of them), which no later frame writes.
func TestDecoderNumbers(t *testing.T) {
	frame := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"event_type":"price_change","market":"0x1","timestamp":"1703875201000","price_changes":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"asset_id":"7","price":"0.%02d","size":"%d.5","side":"BUY","best_bid":"0.%02d","best_ask":0.99}`, 10+i, 100+i, 10+i)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	var d Decoder
	var out []Event
	allocs := func(b []byte) float64 {
		return testing.AllocsPerRun(50, func() {
			var err error
			if out, err = d.DecodeAppend(out[:0], b); err != nil || len(out) != 1 {
				t.Fatalf("%s: %v", b, err)
			}
		})
	}
	first, err := d.DecodeAppend(nil, bytes.ReplaceAll(frame(3), []byte(`"7"`), []byte(`"8"`)))
	if err != nil {
		t.Fatal(err)
	}
	kept := slices.Clone(first[0].Changes)
	if one, many := allocs(frame(1)), allocs(frame(20)); one > 0 || many > 0 {
		t.Errorf("a frame of 1 change takes %v allocations, of 20 changes %v: want none", one, many)
	}
	// The events' changes are theirs: the Decoder's memory for them is
	// never written again.
	if !slices.Equal(first[0].Changes, kept) || cap(first[0].Changes) != len(kept) {
		t.Errorf("an event's changes became %v (capacity %d) as more frames were decoded, were %v", first[0].Changes, cap(first[0].Changes), kept)
	}
}

// TestLadderAsMap checks a Ladder against the plain way of holding a
// side, a map of size by price (a size of 0 deleting its price), whose
// best price is searched for and whose best levels are all sorted and
// cut: random runs of sets (sizes of 0 and below among them, prices met
// again), each followed by Best, the n best levels (n from 0 to past the
// side's levels) of the side alone and of a book with it, and Levels.
func TestLadderAsMap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 5_000 {
		m := map[float64]float64{}
		var l Ladder
		for range rng.IntN(200) {
			price, size := float64(1+rng.IntN(199))/200, float64(rng.IntN(500))-50
			if rng.IntN(4) == 0 {
				size = 0
			}
			if size == 0 {
				delete(m, price)
			} else {
				m[price] = size
			}
			l.Set(price, size)
			if !slices.IsSortedFunc(l, func(x, y store.Level) int { return cmp.Compare(x.Price, y.Price) }) || len(l) != len(m) {
				t.Fatalf("trial %d: ladder %v after setting %v to %v, map of %d levels", trial, l, price, size, len(m))
			}
		}
		got := l.Levels()
		for _, x := range got {
			if s, ok := m[x.Price.V]; !ok || s != x.Size.V || !x.Price.Set || !x.Size.Set {
				t.Fatalf("trial %d: ladder level %+v, map %v (%v)", trial, x, s, ok)
			}
		}
		for _, bids := range []bool{true, false} {
			var sorted []store.Level
			best, first := 0.0, true
			for p, s := range m {
				if first || bids && p > best || !bids && p < best {
					best, first = p, false
				}
				if s > 0 {
					sorted = append(sorted, store.Level{Price: p, Size: s})
				}
			}
			if got := l.Best(bids); got != best {
				t.Fatalf("trial %d: best (bids %v) %v, want %v", trial, bids, got, best)
			}
			slices.SortFunc(sorted, func(x, y store.Level) int {
				if bids {
					return cmp.Compare(y.Price, x.Price)
				}
				return cmp.Compare(x.Price, y.Price)
			})
			n := rng.IntN(len(m) + 3)
			want := sorted[:min(len(sorted), n)]
			before := []store.Level{{Price: 2, Size: 2}}
			got := l.appendTop(before, n, bids)
			if !slices.Equal(got[1:], want) || got[0] != before[0] {
				t.Fatalf("trial %d (bids %v, n %d, %d levels): top %v, sorted %v", trial, bids, n, len(m), got[1:], want)
			}
			bk := Book{Last: Num{V: 0.5, Set: true}}
			if bids {
				bk.Bids = l
			} else {
				bk.Asks = l
			}
			sb, _, _ := bk.Store(n)
			side, other := sb.Bids, sb.Asks
			if !bids {
				side, other = other, side
			}
			if len(side) != len(want) || len(want) > 0 && !slices.Equal(side, want) || other == nil || len(other) != 0 {
				t.Fatalf("trial %d (bids %v, n %d, %d levels): stored %v and %v, sorted %v", trial, bids, n, len(m), side, other, want)
			}
			if len(side) > 0 && (&side[0] == &l[0] || &side[0] == &l[len(l)-1]) {
				t.Fatalf("trial %d: a stored side shares the ladder's memory", trial)
			}
		}
	}
}

// BenchmarkStore takes the 10 best levels of each side of a book of 80
// levels a side, as a real Polymarket book has (realdata: 24-86 a side).
func BenchmarkStore(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 80))
	var bk Book
	for len(bk.Bids) < 80 {
		bk.Bids.Set(float64(1+rng.IntN(499))/1000, float64(1+rng.IntN(500)))
	}
	for len(bk.Asks) < 80 {
		bk.Asks.Set(float64(501+rng.IntN(499))/1000, float64(1+rng.IntN(500)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := bk.Store(10); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLadderFillAsSet: a `book` event's levels make the side Set would
// make of them one by one, in any order (upstream lists asks worst first),
// a price listed twice taking its last size and size 0 none.
func TestLadderFillAsSet(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 11))
	for trial := range 5_000 {
		var levels []Level
		for range rng.IntN(120) {
			price, size := float64(1+rng.IntN(99))/100, float64(rng.IntN(300))
			if rng.IntN(5) == 0 {
				size = 0
			}
			levels = append(levels, Level{Price: Num{V: price, Set: true}, Size: Num{V: size, Set: true}})
		}
		if trial%3 == 0 { // worst first, as upstream lists asks
			slices.SortFunc(levels, func(a, b Level) int { return cmp.Compare(b.Price.V, a.Price.V) })
		}
		var want, got Ladder
		for _, l := range levels {
			want.Set(l.Price.V, l.Size.V)
		}
		got.fill(levels)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: filled %v, set one by one %v, from %v", trial, got, want, levels)
		}
	}
}

// TestDecodeAllocatesAFramesOwn: the package's Decode, a Decoder of one
// frame, gives the frame's changes memory of their own size, not a
// Decoder's slab of hundreds (a collector decoding every frame so paid
// tens of kilobytes a frame).
func TestDecodeAllocatesAFramesOwn(t *testing.T) {
	frame := []byte(`{"market":"0xabc","price_changes":[{"asset_id":"123","price":"0.5","size":"200","side":"BUY","hash":"h","best_bid":"0.5","best_ask":"0.51"},` +
		`{"asset_id":"456","price":"0.49","size":"0","side":"SELL","hash":"h","best_bid":"0.48","best_ask":"0.49"}],"timestamp":"1757908892351","event_type":"price_change"}`)
	if evs, err := Decode(frame); err != nil || len(evs) != 1 || len(evs[0].Changes) != 2 {
		t.Fatalf("Decode = %+v, %v", evs, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 200
	for range n {
		if _, err := Decode(frame); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("Decode of a frame of 2 changes allocates %d bytes, want a few kilobytes at most", per)
	}
}

// TestDecodeReadsTheTimestampOrRefusesIt checks an event's timestamp: a
// count of milliseconds (a string or a number) is its time, none leaves
// it without one, and anything else is malformed, never read as none
// (the event would take the time of the one before it).
func TestDecodeReadsTheTimestampOrRefusesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ts   string
		want time.Time // zero: no time
		bad  bool
	}{
		{ts: `"1703875201000"`, want: time.UnixMilli(1703875201000).UTC()},
		{ts: `1703875201000`, want: time.UnixMilli(1703875201000).UTC()},
		{ts: `" 1703875201000 "`, want: time.UnixMilli(1703875201000).UTC()},
		{ts: `""`},
		{ts: `null`},
		{ts: `"abc"`, bad: true},
		{ts: `"-5"`, bad: true},
		{ts: `"0"`, bad: true},
		{ts: `"1703875201.5"`, bad: true},
		{ts: `"1e400"`, bad: true},
		{ts: `1.7e12`, want: time.UnixMilli(1_700_000_000_000).UTC()},
		{ts: `"1703875201000.0"`, want: time.UnixMilli(1703875201000).UTC()},
	} {
		frame := `{"event_type":"last_trade_price","asset_id":"A","timestamp":` + c.ts + `,"price":"0.51","size":"1","side":"SELL","transaction_hash":"0x1"}`
		for name, decode := range map[string]func([]byte) ([]Event, error){
			"Decode":  Decode,
			"Decoder": func(b []byte) ([]Event, error) { var d Decoder; return d.DecodeAppend(nil, b) },
		} {
			evs, err := decode([]byte(frame))
			switch {
			case c.bad && !errors.Is(err, ErrMalformed):
				t.Errorf("%s of timestamp %s: %v, want ErrMalformed", name, c.ts, err)
			case c.bad && !strings.Contains(err.Error(), "timestamp"):
				t.Errorf("%s of timestamp %s: %v, want the error to name the timestamp", name, c.ts, err)
			case !c.bad && err != nil:
				t.Errorf("%s of timestamp %s: %v", name, c.ts, err)
			case !c.bad && (len(evs) != 1 || !evs[0].Time.Equal(c.want)):
				t.Errorf("%s of timestamp %s: %+v, want one event at %v", name, c.ts, evs, c.want)
			}
			// An event that places nothing is let be with a time it
			// spells otherwise: the collector reads it off the same
			// socket, and an error there drops the connection.
			other := `{"event_type":"best_bid_ask","asset_id":"A","timestamp":` + c.ts + `,"best_bid":"0.5","best_ask":"0.52"}`
			if _, err := decode([]byte(other)); err != nil {
				t.Errorf("%s of a best_bid_ask with timestamp %s: %v, want it read", name, c.ts, err)
			}
		}
	}
}
