package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// A snapshot is packed as
//
//	flags byte: bookUpFlag, bookDownFlag for the books recorded
//	per recorded book: uvarint len(Bids), uvarint len(Asks)
//	num CoinPrice, num PriceUp, num PriceDown
//	per recorded book: Price and Size of each bid, then of each ask
//
// so that the level counts come first (a page is sized before it is
// decoded) and a read without books stops after the prices.
const (
	bookUpFlag   = 1 << 0
	bookDownFlag = 1 << 1
)

// AppendSnapshots stores the snapshots whose time (to the microsecond) the
// market does not have yet; of two in one call with the same time, the
// first is kept. It returns how many it stored.
func (s *Store) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	if err := live(ctx, "append snapshots"); err != nil {
		return 0, err
	}
	if err := store.CheckSnapshots(snaps); err != nil {
		return 0, fmt.Errorf("memory: append snapshots of %q: %w", slug, err)
	}
	tl, err := s.snapshotsOf(slug)
	if err != nil {
		return 0, fmt.Errorf("memory: append snapshots: %w", err)
	}
	return tl.insert(packSnapshots(snaps)), nil
}

// ListSnapshots returns a page of the market's snapshots and how many it
// has.
func (s *Store) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	if err := live(ctx, "list snapshots"); err != nil {
		return nil, 0, err
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		return nil, 0, fmt.Errorf("memory: list snapshots: %w", err)
	}
	tl, err := s.snapshotsOf(slug)
	if err != nil {
		return nil, 0, fmt.Errorf("memory: list snapshots: %w", err)
	}
	lo, hi := q.MicroRange(true)
	entries, _ := tl.page(lo, hi-1, q.Offset, q.Limit, q.Ascending)
	snaps, err := unpackSnapshots(entries, q.WithBooks)
	if err != nil {
		return nil, 0, fmt.Errorf("memory: list snapshots of %q: %w", slug, err)
	}
	return snaps, tl.count(minMicros, maxMicros), nil
}

// CountSnapshots returns how many of the market's snapshots q's time range
// holds.
func (s *Store) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	if err := live(ctx, "count snapshots"); err != nil {
		return 0, err
	}
	tl, err := s.snapshotsOf(slug)
	if err != nil {
		return 0, fmt.Errorf("memory: count snapshots: %w", err)
	}
	lo, hi := q.MicroRange(false)
	return tl.count(lo, hi-1), nil
}

// snapshotsOf returns the timeline of the market with the slug.
func (s *Store) snapshotsOf(slug string) (*timeline, error) {
	s.marketsMu.RLock()
	defer s.marketsMu.RUnlock()
	e, ok := s.markets[slug]
	if !ok {
		return nil, fmt.Errorf("market %q: %w", slug, store.ErrNotFound)
	}
	return e.snaps, nil
}

// packSnapshots packs snaps into entries sorted by time, keeping the first
// of entries with the same time. Packing copies, so the caller's books are
// not retained.
func packSnapshots(snaps []store.Snapshot) []entry {
	var buf []byte
	ends := make([]int, len(snaps))
	for i, snap := range snaps {
		buf = appendSnapshot(buf, snap)
		ends[i] = len(buf)
	}
	entries := make([]entry, len(snaps))
	start := 0
	for i, snap := range snaps {
		entries[i] = entry{snap.Time.UnixMicro(), buf[start:ends[i]:ends[i]]}
		start = ends[i]
	}
	return sortUnique(entries)
}

// sortUnique sorts entries by time, stably, and drops all but the first of
// each time.
func sortUnique(entries []entry) []entry {
	slices.SortStableFunc(entries, func(a, b entry) int {
		switch {
		case a.micros < b.micros:
			return -1
		case a.micros > b.micros:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(entries, func(a, b entry) bool { return a.micros == b.micros })
}

func appendSnapshot(dst []byte, snap store.Snapshot) []byte {
	var flags byte
	if snap.BookUp != nil {
		flags |= bookUpFlag
	}
	if snap.BookDown != nil {
		flags |= bookDownFlag
	}
	dst = append(dst, flags)
	for _, b := range []*store.Book{snap.BookUp, snap.BookDown} {
		if b != nil {
			dst = appendCounts(dst, len(b.Bids), len(b.Asks))
		}
	}
	dst = appendNum(dst, snap.CoinPrice)
	dst = appendNum(dst, snap.PriceUp)
	dst = appendNum(dst, snap.PriceDown)
	for _, b := range []*store.Book{snap.BookUp, snap.BookDown} {
		if b != nil {
			dst = appendLevels(dst, b.Bids)
			dst = appendLevels(dst, b.Asks)
		}
	}
	return dst
}

func appendCounts(dst []byte, bids, asks int) []byte {
	dst = binary.AppendUvarint(dst, uint64(bids))
	return binary.AppendUvarint(dst, uint64(asks))
}

func appendLevels(dst []byte, levels []store.Level) []byte {
	for _, l := range levels {
		dst = appendNum(dst, l.Price)
		dst = appendNum(dst, l.Size)
	}
	return dst
}

// snapshotHeader is the part of a packed snapshot that sizes it.
type snapshotHeader struct {
	flags  byte
	counts [4]int // up bids, up asks, down bids, down asks
}

func (h *snapshotHeader) read(r *reader) {
	h.flags = r.byte()
	if h.flags&^(bookUpFlag|bookDownFlag) != 0 {
		r.fail()
	}
	for i, flag := range []byte{bookUpFlag, bookDownFlag} {
		if h.flags&flag != 0 {
			h.counts[2*i] = r.count()
			h.counts[2*i+1] = r.count()
		}
	}
}

// books counts the snapshot's books of those keep names.
func (h *snapshotHeader) books(keep byte) int {
	return bits.OnesCount8(h.flags & keep)
}

// levels counts the levels of the snapshot's books of those keep names.
func (h *snapshotHeader) levels(keep byte) int {
	n := 0
	if h.flags&keep&bookUpFlag != 0 {
		n += h.counts[0] + h.counts[1]
	}
	if h.flags&keep&bookDownFlag != 0 {
		n += h.counts[2] + h.counts[3]
	}
	return n
}

// bookFlag returns the flag bit of outcome's book, the one book a tape
// carries; outcome is OutcomeUp or OutcomeDown (store.CheckOutcome).
func bookFlag(outcome string) byte {
	if outcome == store.OutcomeDown {
		return bookDownFlag
	}
	return bookUpFlag
}

// countBooks counts the books of those keep names that entries hold, and
// their levels, from the entries' headers.
func countBooks(entries []entry, keep byte) (books, levels int, err error) {
	for _, e := range entries {
		var h snapshotHeader
		r := reader{b: e.data}
		h.read(&r)
		if r.err != nil {
			return 0, 0, r.err
		}
		books += h.books(keep)
		levels += h.levels(keep)
	}
	return books, levels, nil
}

// unpackSnapshots decodes a page. With books, every level of the page
// shares one allocation and every book another; each side is capped so
// that appending to it cannot overwrite its neighbour.
func unpackSnapshots(entries []entry, withBooks bool) ([]store.Snapshot, error) {
	out := make([]store.Snapshot, len(entries))
	var pool bookPool
	if withBooks {
		books, levels, err := countBooks(entries, bookUpFlag|bookDownFlag)
		if err != nil {
			return nil, err
		}
		pool = bookPool{books: make([]store.Book, books), levels: make([]store.Level, levels)}
	}
	for i, e := range entries {
		if err := unpackSnapshot(&out[i], e, withBooks, &pool); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func unpackSnapshot(snap *store.Snapshot, e entry, withBooks bool, pool *bookPool) error {
	r := reader{b: e.data}
	var h snapshotHeader
	h.read(&r)
	snap.Time = time.UnixMicro(e.micros).UTC()
	snap.CoinPrice = r.num()
	snap.PriceUp = r.num()
	snap.PriceDown = r.num()
	if !withBooks {
		return r.err
	}
	if h.flags&bookUpFlag != 0 {
		snap.BookUp = pool.take(&r, h.counts[0], h.counts[1])
	}
	if h.flags&bookDownFlag != 0 {
		snap.BookDown = pool.take(&r, h.counts[2], h.counts[3])
	}
	return r.err
}

// bookPool hands out a page's books and levels from shared allocations.
type bookPool struct {
	books  []store.Book
	levels []store.Level
}

// take decodes a book with the given side lengths.
func (p *bookPool) take(r *reader, bids, asks int) *store.Book {
	if len(p.books) == 0 || len(p.levels) < bids+asks {
		r.fail()
		return nil
	}
	b := &p.books[0]
	p.books = p.books[1:]
	b.Bids = p.levels[:bids:bids]
	b.Asks = p.levels[bids : bids+asks : bids+asks]
	p.levels = p.levels[bids+asks:]
	for _, side := range [][]store.Level{b.Bids, b.Asks} {
		for i := range side {
			side[i].Price = r.num()
			side[i].Size = r.num()
		}
	}
	return b
}

// ReadTape returns all the market's snapshots, oldest first, with the books
// of outcome, decoded straight into a tape.
func (s *Store) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	if err := live(ctx, "read tape"); err != nil {
		return nil, err
	}
	if err := store.CheckOutcome(outcome); err != nil {
		return nil, fmt.Errorf("memory: read tape: %w", err)
	}
	tl, err := s.snapshotsOf(slug)
	if err != nil {
		return nil, fmt.Errorf("memory: read tape: %w", err)
	}
	entries, _ := tl.page(minMicros, maxMicros, 0, 0, true)
	t, err := unpackTape(entries, outcome)
	if err != nil {
		return nil, fmt.Errorf("memory: read tape of %q: %w", slug, err)
	}
	return t, nil
}

// unpackTape decodes entries, oldest first, with the books of outcome. The
// levels are counted first, so that they take one allocation.
func unpackTape(entries []entry, outcome string) (*store.Tape, error) {
	keep := bookFlag(outcome)
	_, levels, err := countBooks(entries, keep)
	if err != nil {
		return nil, err
	}
	if uint64(levels) > store.MaxBlockLevels {
		return nil, fmt.Errorf("%d levels: a tape holds at most %d a block", levels, uint64(store.MaxBlockLevels))
	}
	block := make([]store.Level, levels)
	t := &store.Tape{Outcome: outcome, Ticks: make([]store.Tick, len(entries)), Blocks: [][]store.Level{block}}
	k := 0 // the kept book's first count: up bids, or down bids at 2
	if keep == bookDownFlag {
		k = 2
	}
	off := 0
	for i, e := range entries {
		r := reader{b: e.data}
		var h snapshotHeader
		h.read(&r)
		tk := &t.Ticks[i]
		tk.Nanos = e.micros * 1000
		tk.CoinPrice, tk.PriceUp, tk.PriceDown = r.num(), r.num(), r.num()
		if k == 2 && h.flags&bookUpFlag != 0 {
			for range 2 * (h.counts[0] + h.counts[1]) { // step over the up book
				r.num()
			}
		}
		if h.flags&keep != 0 {
			nb, na := h.counts[k], h.counts[k+1]
			if tk.Bids, err = store.SideSpan(0, off, nb); err != nil {
				return nil, err
			}
			if tk.Asks, err = store.SideSpan(0, off+nb, na); err != nil {
				return nil, err
			}
			for j := off; j < off+nb+na; j++ {
				block[j].Price = r.num()
				block[j].Size = r.num()
			}
			tk.SetBest(block[off:off+nb], block[off+nb:off+nb+na])
			off += nb + na
		} else {
			tk.SetBest(nil, nil)
			t.NoBook.Add(i)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return t, nil
}
