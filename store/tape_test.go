package store_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/updown/updown/store"
)

// A replay streams a market's ticks (a 24hr market is 288,000 of them),
// so a Tick's size is what every replay pays in memory and bandwidth:
// whatever is read of a tick rarely (whether its snapshot recorded a book:
// Tape.NoBook) is kept apart from it.
func TestTickIs80Bytes(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(store.Tick{}); n != 80 {
		t.Errorf("store.Tick takes %d bytes, want 80: keep what a replay seldom reads out of the ticks it streams", n)
	}
}

// TapeOf tells a snapshot without the outcome's book from one with an
// empty book, and the sets of parts added at any place (a store joining
// the chunks it decoded) keep each tick where it was.
func TestTapeNoBook(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	snaps := make([]store.Snapshot, 200)
	for i := range snaps {
		snaps[i].Time = at.Add(time.Duration(i) * time.Second)
		switch i % 3 {
		case 0:
			snaps[i].BookUp = &store.Book{Bids: []store.Level{{Price: 0.4, Size: 1}}}
		case 1:
			snaps[i].BookUp = &store.Book{} // recorded, empty
		}
	}
	tape, err := store.TapeOf(snaps, store.OutcomeUp)
	if err != nil {
		t.Fatal(err)
	}
	for i := range snaps {
		if got, want := tape.HasBook(i), i%3 != 2; got != want {
			t.Errorf("HasBook(%d) = %v, want %v", i, got, want)
		}
	}
	down, err := store.TapeOf(snaps, store.OutcomeDown)
	if err != nil {
		t.Fatal(err)
	}
	for i := range snaps {
		if down.HasBook(i) {
			t.Errorf("the down tape's HasBook(%d) = true, want false: no snapshot has a down book", i)
		}
	}

	// Parts of 70, 1, 64 and 65 ticks, joined: every tick lands at its
	// place, none beyond.
	var whole store.TickSet
	at0 := 0
	for _, n := range []int{70, 1, 64, 65} {
		var part store.TickSet
		for j := range n {
			if tape.NoBook.Has(at0 + j) {
				part.Add(j)
			}
		}
		whole.AddAt(at0, part)
		at0 += n
	}
	for i := range 300 {
		if whole.Has(i) != tape.NoBook.Has(i) {
			t.Errorf("joined: tick %d in the set %v, want %v", i, whole.Has(i), tape.NoBook.Has(i))
		}
	}
	all := &store.Tape{Ticks: make([]store.Tick, 3)}
	if !all.HasBook(0) || !all.HasBook(2) || len(all.NoBook) != 0 {
		t.Errorf("a tape without a set: HasBook(0), HasBook(2) = %v, %v, want true (every snapshot has its book)", all.HasBook(0), all.HasBook(2))
	}
}
