package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func tapeTests() []test {
	return []test{
		{"UnknownMarket", testTapeUnknownMarket},
		{"MarketWithoutSnapshots", testTapeNone},
		{"UnknownOutcome", testTapeUnknownOutcome},
		{"Books", testTapeBooks},
		{"LongSeriesWithRestingBooks", testTapeLong},
	}
}

func readTape(t *testing.T, s store.Store, slug, outcome string) *store.Tape {
	t.Helper()
	tape, err := s.ReadTape(t.Context(), slug, outcome)
	mustOK(t, err, fmt.Sprintf("ReadTape(%s)", outcome))
	if tape.Outcome != outcome {
		t.Errorf("ReadTape(%s): the tape carries the books of %q", outcome, tape.Outcome)
	}
	return tape
}

// checkTape fails the test unless got holds what store.TapeOf makes of
// want, the snapshots as written, at the stores' precision.
func checkTape(t *testing.T, what string, want []store.Snapshot, outcome string, got *store.Tape) {
	t.Helper()
	stored := slices.Clone(want)
	for i := range stored {
		stored[i].Time = stored[i].Time.Truncate(time.Microsecond)
	}
	exp, err := store.TapeOf(stored, outcome)
	mustOK(t, err, "TapeOf")
	if msg := TapeDiff(exp, got); msg != "" {
		t.Fatalf("%s: %s", what, msg)
	}
}

// TapeDiff describes how got differs from want ("" when it does not): the
// same outcome and ticks, bit for bit, and the same levels on each side,
// wherever in Levels they are.
func TapeDiff(want, got *store.Tape) string {
	if got.Outcome != want.Outcome {
		return fmt.Sprintf("the books of %q, want %q", got.Outcome, want.Outcome)
	}
	if got.Len() != want.Len() {
		return fmt.Sprintf("%d ticks, want %d", got.Len(), want.Len())
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for i := range want.Ticks {
		w, g := &want.Ticks[i], &got.Ticks[i]
		if g.Nanos != w.Nanos || !same(g.CoinPrice, w.CoinPrice) || !same(g.PriceUp, w.PriceUp) || !same(g.PriceDown, w.PriceDown) {
			return fmt.Sprintf("tick %d = %+v, want %+v", i, *g, *w)
		}
		if got.HasBook(i) != want.HasBook(i) {
			return fmt.Sprintf("tick %d: a book recorded %v, want %v (a missing book and an empty one differ)", i, got.HasBook(i), want.HasBook(i))
		}
		var own store.Tick
		own.SetBest(got.Side(g.Bids), got.Side(g.Asks))
		for _, b := range []struct{ g, w, own float64 }{{g.BestBid, w.BestBid, own.BestBid}, {g.BestAsk, w.BestAsk, own.BestAsk},
			{g.BestBidSize, w.BestBidSize, own.BestBidSize}, {g.BestAskSize, w.BestAskSize, own.BestAskSize}} {
			if !same(b.g, b.w) || !same(b.g, b.own) {
				return fmt.Sprintf("tick %d best bid %v×%v and ask %v×%v, want %v×%v and %v×%v (its levels': %v×%v and %v×%v)", i,
					g.BestBid, g.BestBidSize, g.BestAsk, g.BestAskSize, w.BestBid, w.BestBidSize, w.BestAsk, w.BestAskSize,
					own.BestBid, own.BestBidSize, own.BestAsk, own.BestAskSize)
			}
		}
		for _, side := range []struct {
			name string
			w, g store.Span
		}{{"bids", w.Bids, g.Bids}, {"asks", w.Asks, g.Asks}} {
			if sp := side.g; int(sp.Block) >= len(got.Blocks) || int(sp.Off)+int(sp.Len) > len(got.Blocks[sp.Block]) {
				return fmt.Sprintf("tick %d %s span %+v beyond the tape's %d blocks", i, side.name, sp, len(got.Blocks))
			}
			wl, gl := want.Side(side.w), got.Side(side.g)
			if len(gl) != len(wl) {
				return fmt.Sprintf("tick %d has %d %s, want %d", i, len(gl), side.name, len(wl))
			}
			for k := range wl {
				if !same(gl[k].Price, wl[k].Price) || !same(gl[k].Size, wl[k].Size) {
					return fmt.Sprintf("tick %d %s level %d = %+v, want %+v", i, side.name, k, gl[k], wl[k])
				}
			}
		}
	}
	return ""
}

func testTapeUnknownMarket(t *testing.T, s store.Store) {
	_, err := s.ReadTape(t.Context(), "btc-updown-5m-1", store.OutcomeUp)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReadTape of an unknown market: %v, want ErrNotFound", err)
	}
}

func testTapeNone(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	if tape := readTape(t, s, slug, store.OutcomeDown); tape.Len() != 0 || tape.Bytes() > 1<<10 {
		t.Fatalf("a market without snapshots: %d ticks, %d bytes", tape.Len(), tape.Bytes())
	}
}

func testTapeUnknownOutcome(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	appendSnapshots(t, s, slug, newSnapshots(t0(), 0, 2))
	for _, outcome := range []string{"", "UP", "Yes"} {
		if _, err := s.ReadTape(t.Context(), slug, outcome); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("ReadTape(%q) = %v, want an error that is not ErrNotFound", outcome, err)
		}
	}
}

func testTapeBooks(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	_, want := bookCases()
	appendSnapshots(t, s, slug, want)
	for _, outcome := range []string{store.OutcomeUp, store.OutcomeDown} {
		checkTape(t, outcome, want, outcome, readTape(t, s, slug, outcome))
	}
}

// testTapeLong reads a series longer than a store's unit of storage,
// written in bulk, out of order and one snapshot at a time, whose books
// rest: each side keeps its levels for a few snapshots, as a real
// book does between trades, and some snapshots have no book or an empty
// one.
func testTapeLong(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	const n = 1500
	want := make([]store.Snapshot, n)
	var up, down *store.Book
	for i := range want {
		want[i] = newSnapshot(t0(), i)
		if i%3 == 0 || up == nil {
			up = newBook(i, 1+i%12, 1+i%7)
		}
		if i%5 == 0 || down == nil {
			asks := newBook(i+9, 0, 1+i%4).Asks
			if down != nil && i%2 == 0 {
				asks = down.Asks // one side moves, the other rests
			}
			down = &store.Book{Bids: newBook(i+7, 1+i%9, 0).Bids, Asks: asks}
		}
		want[i].BookUp, want[i].BookDown = up, down
		if i%97 == 0 {
			want[i].BookUp = nil
		}
		if i%89 == 0 || i%89 == 1 {
			want[i].BookDown = &store.Book{} // recorded, empty: not the same as none
		}
	}
	appendSnapshots(t, s, slug, want[n/2:n-100])
	appendSnapshots(t, s, slug, want[:n/2]) // older ones later: stores merge
	for i := n - 100; i < n; i++ {          // then one at a time, as recorded live
		appendSnapshots(t, s, slug, want[i:i+1])
	}
	for _, outcome := range []string{store.OutcomeUp, store.OutcomeDown} {
		checkTape(t, outcome, want, outcome, readTape(t, s, slug, outcome))
	}
}
