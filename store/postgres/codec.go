package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// A chunk packs a run of one market's snapshots (sorted by time, times
// distinct) into two byte strings that decode independently, so that a
// listing without order books never reads the book bytes:
//
//	head:  version, n, times, coin prices, up prices, down prices
//	books: version, n, price column, size column, level count,
//	       n flag bytes, the byte length of each outcome's section and
//	       the levels of the up outcome's, then the up outcome's section
//	       and the down outcome's: the levels of every side that changed
//
// Each outcome's sides are a section of their own (books version 2), so a
// replay, which reads one outcome's books, never steps over the other's.
// Books of version 1, which wrote the four sides of a snapshot one after
// the other, are still read.
//
// Every number is turned into an int64 "unit" of its column before it is
// written as a zigzag varint of its difference from a prediction:
//
//   - A column whose values are all exact multiples of 1e-6 (every number
//     with at most six decimals, below 2^53 millionths) is "scaled": a unit
//     is the value in millionths divided by the column's greatest common
//     divisor g, so prices on a 0.01 tick become small integers whose
//     differences fit in a byte. Decoding computes units*g/1e6, which is
//     the float64 nearest the decimal: the value written, bit for bit.
//   - Any other column is "raw": a unit is the value's IEEE 754 bits. It
//     costs more bytes but round-trips every float64, NaN and -0 included.
//
// A column header is uvarint(g), g = 0 meaning raw.
//
// Times are microseconds since the Unix epoch: the first absolute, then the
// gaps between neighbours divided by their gcd, each written as its
// difference from the previous gap (snapshots come at a steady cadence).
//
// Books: a flag byte per snapshot says which books are present and which of
// the four sides (up bids, up asks, down bids, down asks) equal the same
// side as last written, which are then not written again. A side that is
// written starts with uvarint(0) for a nil slice or uvarint(len+1). Its
// prices are predicted from the previous snapshot's side (same first price,
// same gaps between levels) and its sizes from the size the previous side
// had at the same price, so a book that barely moves costs a few bytes.
const codecVersion = 1

// booksVersion is the version of the books section written; booksVersion1
// sections, one stream for both outcomes, are still read.
const (
	booksVersion  = 2
	booksVersion1 = 1
)

// Flag bits of a snapshot in the books section.
const (
	flagUp     = 1 << 0 // BookUp is not nil
	flagDown   = 1 << 1 // BookDown is not nil
	flagSame   = 1 << 2 // first of four bits: side s is unchanged when flagSame<<s is set
	flagsKnown = 1<<6 - 1
)

// Book sides in the order they are written: up bids, up asks, down bids, down asks.
const numSides = 4

// maxLevels bounds the levels of one chunk's books (a sanity check on input).
const maxLevels = 1 << 28

// maxExact bounds the millionths of a scaled value: integers up to 2^53
// convert to float64 exactly.
const maxExact = 1 << 53

var errCorrupt = errors.New("corrupt snapshot chunk")

// micros returns v in millionths and true when v is exactly the float64
// nearest to a decimal with at most six decimals, so that the millionths
// convert back to v bit for bit. -0 is not (it would come back as +0).
func micros(v float64) (int64, bool) {
	x := v * 1e6
	if !(math.Abs(x) < maxExact) { // NaN fails too
		return 0, false
	}
	// Round half away from zero; exact below 2^52, and a wrong neighbour
	// above that only fails the check below (the value is then raw).
	var m int64
	if x >= 0 {
		m = int64(x + 0.5)
	} else {
		m = int64(x - 0.5)
	}
	if float64(m)/1e6 != v || (m == 0 && math.Signbit(v)) {
		return 0, false
	}
	return m, true
}

// scale is how a column's numbers map to units: g > 0 millionths per unit,
// or 0 for raw bits. It is also the column's header.
type scale uint64

const raw scale = 0

// unit maps v to its unit; v must be representable in the scale (it was
// added to the scaler that chose the scale).
func (s scale) unit(v float64) int64 {
	if s == raw {
		return int64(math.Float64bits(v))
	}
	m, _ := micros(v)
	return m / int64(s)
}

// value maps a unit back to its number.
func (s scale) value(u int64) float64 {
	if s == raw {
		return math.Float64frombits(uint64(u))
	}
	return float64(u*int64(s)) / 1e6
}

// scaler finds the scale of a column, one value at a time.
type scaler struct {
	g   uint64 // gcd of the millionths so far
	raw bool   // a value was not six-decimal
}

func (sc *scaler) add(v float64) {
	if sc.raw {
		return
	}
	m, ok := micros(v)
	if !ok {
		sc.raw = true
		return
	}
	if sc.g == 0 || m%int64(sc.g) != 0 { // most values are multiples already
		sc.g = gcd(sc.g, uint64(abs(m)))
	}
}

// scale returns the column's scale: raw, or the gcd of its values in
// millionths (1 when they are all zero or there are none).
func (sc *scaler) scale() scale {
	if sc.raw {
		return raw
	}
	return scale(max(sc.g, 1))
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// encodeChunk packs snaps, which must be sorted by time with distinct times
// (after truncation to the microsecond), into a chunk's head and books, the
// books in the given version (booksVersion or booksVersion1).
func encodeChunk(snaps []store.Snapshot, version byte) (head, books []byte) {
	return appendHead(nil, snaps), appendBooks(nil, snaps, version)
}

func appendHead(b []byte, snaps []store.Snapshot) []byte {
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(snaps)))
	if len(snaps) == 0 {
		return b
	}
	b = appendTimes(b, snaps)
	for _, field := range [...]func(*store.Snapshot) float64{
		func(s *store.Snapshot) float64 { return s.CoinPrice },
		func(s *store.Snapshot) float64 { return s.PriceUp },
		func(s *store.Snapshot) float64 { return s.PriceDown },
	} {
		var sc scaler
		for i := range snaps {
			sc.add(field(&snaps[i]))
		}
		s := sc.scale()
		b = binary.AppendUvarint(b, uint64(s))
		var prev int64
		for i := range snaps {
			u := s.unit(field(&snaps[i]))
			b = binary.AppendVarint(b, u-prev)
			prev = u
		}
	}
	return b
}

func appendTimes(b []byte, snaps []store.Snapshot) []byte {
	first := snaps[0].Time.UnixMicro()
	b = binary.AppendVarint(b, first)
	if len(snaps) == 1 {
		return b
	}
	var g uint64
	prev := first
	for _, s := range snaps[1:] {
		t := s.Time.UnixMicro()
		g = gcd(g, uint64(t-prev))
		prev = t
	}
	b = binary.AppendUvarint(b, g)
	prev, prevGap := first, int64(0)
	for _, s := range snaps[1:] {
		t := s.Time.UnixMicro()
		gap := int64(uint64(t-prev) / g)
		b = binary.AppendVarint(b, gap-prevGap)
		prev, prevGap = t, gap
	}
	return b
}

// sides returns the four sides of a snapshot's books, nil for absent books,
// and the snapshot's presence flags.
func sides(s *store.Snapshot) (sd [numSides][]store.Level, flags byte) {
	if s.BookUp != nil {
		flags |= flagUp
		sd[0], sd[1] = s.BookUp.Bids, s.BookUp.Asks
	}
	if s.BookDown != nil {
		flags |= flagDown
		sd[2], sd[3] = s.BookDown.Bids, s.BookDown.Asks
	}
	return sd, flags
}

// present reports whether side i exists under flags.
func present(flags byte, i int) bool {
	if i < 2 {
		return flags&flagUp != 0
	}
	return flags&flagDown != 0
}

// sameLevels reports whether a and b are the same side, bit for bit,
// nil-ness included.
func sameLevels(a, b []store.Level) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i].Price) != math.Float64bits(b[i].Price) ||
			math.Float64bits(a[i].Size) != math.Float64bits(b[i].Size) {
			return false
		}
	}
	return true
}

// sideRef is the side last written at one position, in units: the
// reference the next snapshot's side is predicted from.
type sideRef struct {
	price, size []int64
}

func (r *sideRef) set(levels []store.Level, ps, ss scale) {
	r.price, r.size = r.price[:0], r.size[:0]
	for _, l := range levels {
		r.price = append(r.price, ps.unit(l.Price))
		r.size = append(r.size, ss.unit(l.Size))
	}
}

// predictor predicts the levels of one side from its reference.
type predictor struct {
	ref      *sideRef
	bids     bool // bids are sorted high to low, asks low to high
	prev     int64
	gap      int64
	matchPos int
}

// price predicts the price unit of level j given the level before it.
func (p *predictor) price(j int) int64 {
	r := p.ref.price
	switch {
	case j == 0 && len(r) > 0:
		return r[0]
	case j == 0:
		return 0
	case j < len(r):
		return p.prev + (r[j] - r[j-1])
	default:
		return p.prev + p.gap
	}
}

// observe records level j's actual price unit.
func (p *predictor) observe(j int, price int64) {
	if j > 0 {
		p.gap = price - p.prev
	}
	p.prev = price
}

// size predicts the size unit at price: the reference's size at the same
// price, found by walking the reference in book order, else 0.
func (p *predictor) size(price int64) int64 {
	r := p.ref.price
	for p.matchPos < len(r) && p.ahead(r[p.matchPos], price) {
		p.matchPos++
	}
	if p.matchPos < len(r) && r[p.matchPos] == price {
		return p.ref.size[p.matchPos]
	}
	return 0
}

// ahead reports whether reference price a comes before price b in book order.
func (p *predictor) ahead(a, b int64) bool {
	if p.bids {
		return a > b
	}
	return a < b
}

// appendBooks writes the books section of snaps in the given version:
// booksVersion, or booksVersion1 (what chunks written before it hold, and
// what a writer keeping older builds able to read writes).
func appendBooks(b []byte, snaps []store.Snapshot, version byte) []byte {
	var ps, ss scaler
	total, upLevels := 0, 0
	for i := range snaps {
		sd, _ := sides(&snaps[i])
		for k, levels := range sd {
			for _, l := range levels {
				ps.add(l.Price)
				ss.add(l.Size)
			}
			total += len(levels)
			if k < 2 {
				upLevels += len(levels)
			}
		}
	}
	pScale, sScale := ps.scale(), ss.scale()
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(len(snaps)))
	b = binary.AppendUvarint(b, uint64(pScale))
	b = binary.AppendUvarint(b, uint64(sScale))
	b = binary.AppendUvarint(b, uint64(total))
	flagsAt := len(b)
	b = append(b, make([]byte, len(snaps))...)

	// Version 1 writes every side into b; version 2 each outcome's into a
	// section of its own, appended once all are written.
	var sections [2][]byte
	stream := func(k int) *[]byte {
		if version == booksVersion1 {
			return &b
		}
		return &sections[k/2]
	}
	var last [numSides][]store.Level // sides as last written
	var refs [numSides]sideRef
	for i := range snaps {
		sd, flags := sides(&snaps[i])
		for k, levels := range sd {
			if !present(flags, k) {
				continue
			}
			if sameLevels(levels, last[k]) {
				flags |= flagSame << k
				continue
			}
			out := stream(k)
			*out = appendSide(*out, levels, &refs[k], k%2 == 0, pScale, sScale)
			last[k] = levels
			refs[k].set(levels, pScale, sScale)
		}
		b[flagsAt+i] = flags
	}
	if version == booksVersion1 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(sections[0])))
	b = binary.AppendUvarint(b, uint64(len(sections[1])))
	b = binary.AppendUvarint(b, uint64(upLevels))
	b = append(b, sections[0]...)
	return append(b, sections[1]...)
}

func appendSide(b []byte, levels []store.Level, ref *sideRef, bids bool, ps, ss scale) []byte {
	if levels == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(levels))+1)
	p := predictor{ref: ref, bids: bids}
	for j, l := range levels {
		pu, su := ps.unit(l.Price), ss.unit(l.Size)
		b = binary.AppendVarint(b, pu-p.price(j))
		p.observe(j, pu)
		b = binary.AppendVarint(b, su-p.size(pu))
	}
	return b
}

// reader decodes varints from a chunk section, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
	}
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// count reads a count of items that each take at least one byte of what is
// left, so corrupt input cannot ask for a huge allocation.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("count %d exceeds the %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

// side reads a side's length header: nil, or a length that the bytes left
// can hold (each level takes at least two).
func (r *reader) side() (n int, isNil bool) {
	c := r.uvarint()
	switch {
	case r.err != nil:
		return 0, true
	case c == 0:
		return 0, true
	case c-1 > uint64(len(r.b)/2):
		r.fail("side of %d levels exceeds the %d bytes left", c-1, len(r.b))
		return 0, true
	}
	return int(c - 1), false
}

// headCount is the number of snapshots a chunk's head announces (0 when
// it cannot be read: decodeHead then reports why).
func headCount(head []byte) int {
	if len(head) < 2 || head[0] != codecVersion {
		return 0
	}
	n, m := binary.Uvarint(head[1:])
	if m <= 0 || n > maxLevels {
		return 0
	}
	return int(n)
}

// decodeHead appends the chunk's snapshots, without books, to dst.
func decodeHead(dst []store.Snapshot, head []byte) ([]store.Snapshot, error) {
	return decodeHeadOf(dst, head, &snapshotHead)
}

// headFields says where the numbers of a head go in an element of the
// slice decoded into: a snapshot or a tick.
type headFields[T any] struct {
	time           func(*T, int64) // from microseconds since the epoch
	coin, up, down func(*T, float64)
}

var (
	snapshotHead = headFields[store.Snapshot]{
		time: func(s *store.Snapshot, us int64) { s.Time = time.UnixMicro(us).UTC() },
		coin: func(s *store.Snapshot, v float64) { s.CoinPrice = v },
		up:   func(s *store.Snapshot, v float64) { s.PriceUp = v },
		down: func(s *store.Snapshot, v float64) { s.PriceDown = v },
	}
)

// decodeHeadOf appends the chunk's snapshots to dst, setting what f names.
func decodeHeadOf[T any](dst []T, head []byte, f *headFields[T]) ([]T, error) {
	r := reader{b: head}
	start := len(dst)
	dst, err := growHead(&r, dst)
	if err != nil || len(dst) == start {
		return dst, err
	}
	out := dst[start:]
	decodeTimes(&r, out, f.time)
	// One loop per column: a column's values are decoded together.
	for _, set := range [...]func(*T, float64){f.coin, f.up, f.down} {
		if r.err == nil {
			r.b = decodeColumn(&r, r.b, out, set)
		}
	}
	return endHead(&r, dst, start)
}

// growHead reads the version and the count of the head r reads, and
// returns dst grown by that many elements for its times and columns,
// which the caller decodes from r and hands to endHead. An empty head
// leaves dst as it was; an unknown version or a count that cannot be read
// is an error.
func growHead[T any](r *reader, dst []T) ([]T, error) {
	if v := r.byte(); r.err == nil && v != codecVersion {
		return dst, fmt.Errorf("%w: head version %d", errCorrupt, v)
	}
	n := r.count()
	if r.err != nil {
		return dst, r.err
	}
	return slices.Grow(dst, n)[:len(dst)+n], nil
}

// endHead ends a head growHead began, which grew dst from start elements:
// it fails on bytes left after the columns, and on any failure of the
// decoding clears what was added and returns dst without it.
func endHead[T any](r *reader, dst []T, start int) ([]T, error) {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes in head", len(r.b))
	}
	if r.err != nil {
		clear(dst[start:])
		return dst[:start], r.err
	}
	return dst, nil
}

// decodeColumn decodes one price column of a head into out, storing each
// value through set.
func decodeColumn[T any](r *reader, b []byte, out []T, set func(*T, float64)) []byte {
	sc, n := binary.Uvarint(b)
	if n <= 0 {
		r.fail("bad uvarint")
		return nil
	}
	b = b[n:]
	s := scale(sc)
	var u int64
	for i := range out {
		d, rest, ok := varint(b)
		if !ok {
			r.fail("bad varint")
			return nil
		}
		b = rest
		u += d
		set(&out[i], s.value(u))
	}
	return b
}

// decodeTimes decodes the times of a head into out, storing each, in
// microseconds since the epoch, through set.
func decodeTimes[T any](r *reader, out []T, set func(*T, int64)) {
	t := r.varint()
	set(&out[0], t)
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
		d, rest, ok := varint(b)
		if !ok {
			r.fail("bad varint")
			return
		}
		b = rest
		gap += d
		if gap <= 0 {
			r.fail("times not increasing")
			return
		}
		t += gap * int64(g)
		set(&out[i], t)
	}
	r.b = b
}

// decodeBooks sets the books of snaps, the snapshots decodeHead returned
// for the same chunk.
//
// A side the chunk marks as unchanged is the very slice of the snapshot
// before, and a book whose two sides are both unchanged the very Book:
// nothing is copied or allocated for what did not change, so a chunk of
// books that barely move decodes in little more time and memory than its
// prices. Every slice handed out is capped at its length, so appending to
// one never writes into another; callers treat decoded books as read-only,
// as they do any store's answer.
func decodeBooks(snaps []store.Snapshot, books []byte) error {
	var d bookDecoder
	flags, err := d.open(books, len(snaps), flagUp|flagDown)
	if err != nil {
		return err
	}
	d.books = make([]store.Book, 0, booksToBuild(flags, flagUp|flagDown))
	var prevFlags byte
	var prevUp, prevDown *store.Book
	for i, f := range flags {
		sn := &snaps[i]
		sn.BookUp, sn.BookDown = nil, nil
		if f&flagUp != 0 {
			sn.BookUp = d.book(f, prevFlags, flagUp, 0, prevUp)
			prevUp = sn.BookUp
		}
		if f&flagDown != 0 {
			sn.BookDown = d.book(f, prevFlags, flagDown, 2, prevDown)
			prevDown = sn.BookDown
		}
		if d.err != nil {
			clearBooks(snaps)
			return d.err
		}
		prevFlags = f
	}
	if err := d.close(); err != nil {
		clearBooks(snaps)
		return err
	}
	return nil
}

// bookFlag returns the flag bit of outcome's book, the one book a tape
// carries; outcome is OutcomeUp or OutcomeDown (store.CheckOutcome).
func bookFlag(outcome string) byte {
	if outcome == store.OutcomeDown {
		return flagDown
	}
	return flagUp
}

// decodeTapeBooks sets the books of one outcome (keep: flagUp or flagDown)
// on ticks, the ticks decodeTicks returned for the same chunk, adds those
// without one to noBook (ticks[0] is its tick 0), and returns the levels
// their spans index, which are the tape's block number block. A side the
// chunk marks as unchanged is the span before, not a copy.
func decodeTapeBooks(ticks []store.Tick, noBook *store.TickSet, books []byte, keep byte, block int) ([]store.Level, error) {
	if block >= store.MaxTapeBlocks {
		return nil, fmt.Errorf("postgres: %d chunks: a tape holds at most %d blocks", block+1, store.MaxTapeBlocks)
	}
	var d bookDecoder
	flags, err := d.open(books, len(ticks), keep)
	if err != nil {
		return nil, err
	}
	if !d.v1 {
		return d.tapeSection(ticks, noBook, flags, block)
	}
	k := 0 // the kept book's first side
	if keep == flagDown {
		k = 2
	}
	// Every level decoded takes at least two bytes, so the arena never
	// needs a second block: the spans are offsets in one array.
	arena := levelBuffers.get(min(d.total[d.part(k)], len(*d.stream(k))/2))
	d.arena, d.oneBlock, d.block = arena, true, uint16(block)
	// The best prices of the sides last decoded: a repeated side keeps its.
	var bids, asks []store.Level
	for i, f := range flags {
		tk := &ticks[i]
		tk.Bids, tk.Asks = store.Span{}, store.Span{}
		// Version 1 interleaves the outcomes: the other one's sides are
		// stepped over (and counted) as they come.
		if d.v1 && keep == flagDown && f&flagUp != 0 {
			d.skipBook(f, 0)
		}
		if f&keep != 0 {
			bids, asks = d.side(k, f&(flagSame<<k) != 0), d.side(k+1, f&(flagSame<<(k+1)) != 0)
			tk.Bids, tk.Asks = d.span[k], d.span[k+1]
			tk.SetBest(bids, asks)
		} else {
			tk.SetBest(nil, nil)
			noBook.Add(i)
		}
		if d.v1 && keep == flagUp && f&flagDown != 0 {
			d.skipBook(f, 2)
		}
		if d.err != nil {
			break
		}
	}
	if err := d.close(); err != nil {
		levelBuffers.put(arena)
		return nil, err
	}
	// The arena was sized for the worst case: a tape that is kept gets the
	// levels alone, unless they fill it nearly.
	if len(d.arena) >= cap(d.arena)-cap(d.arena)/8 {
		return d.arena, nil
	}
	levels := slices.Clone(d.arena)
	levelBuffers.put(arena)
	return levels, nil
}

// open reads the header and flags of a books section of n snapshots into
// d, which it positions at the first side of each outcome's section
// (version 1: at the first side of the one section), and returns the
// flags, each checked.
func (d *bookDecoder) open(books []byte, n int, keep byte) (flags []byte, err error) {
	r := reader{b: books}
	v := r.byte()
	switch {
	case r.err != nil, v == booksVersion, v == booksVersion1:
	case v == booksVersion+1:
		return nil, fmt.Errorf("%w: books version %d, perhaps written by a newer build: this one reads %d and %d", errCorrupt, v, booksVersion1, booksVersion)
	default:
		return nil, fmt.Errorf("%w: books version %d", errCorrupt, v)
	}
	if c := r.uvarint(); r.err == nil && c != uint64(n) {
		return nil, fmt.Errorf("%w: books of %d snapshots, head of %d", errCorrupt, c, n)
	}
	pScale, sScale := scale(r.uvarint()), scale(r.uvarint())
	total := r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) < n {
		return nil, fmt.Errorf("%w: books truncated", errCorrupt)
	}
	flags, r.b = r.b[:n], r.b[n:]
	if total > maxLevels {
		return nil, fmt.Errorf("%w: %d levels", errCorrupt, total)
	}
	if i := unknownFlags(flags); i >= 0 {
		return nil, fmt.Errorf("%w: flags %#x", errCorrupt, flags[i])
	}
	d.v1, d.keep, d.pScale, d.sScale = v == booksVersion1, keep, pScale, sScale
	if d.v1 {
		d.in[0], d.total[0] = r.b, int(total)
	} else {
		// Each outcome's section, and the levels of the up one's: a
		// section read alone is checked against its own count.
		upBytes, downBytes, upLevels := r.uvarint(), r.uvarint(), r.uvarint()
		switch {
		case r.err != nil:
			return nil, r.err
		case upBytes > uint64(len(r.b)) || downBytes != uint64(len(r.b))-upBytes:
			return nil, fmt.Errorf("%w: sections of %d and %d bytes in %d", errCorrupt, upBytes, downBytes, len(r.b))
		case upLevels > total:
			return nil, fmt.Errorf("%w: %d up levels of %d", errCorrupt, upLevels, total)
		}
		d.in = [2][]byte{r.b[:upBytes], r.b[upBytes:]}
		d.total = [2]int{int(upLevels), int(total - upLevels)}
	}
	return flags, nil
}

// unknownFlags returns the index of the first of flags with a bit no flag
// names, or -1 when there is none.
func unknownFlags(flags []byte) int {
	const unknown = ^uint64(0) / 0xff * (0xff &^ flagsKnown) // in each byte
	b := flags
	for len(b) >= 8 && binary.LittleEndian.Uint64(b)&unknown == 0 {
		b = b[8:]
	}
	for i, f := range b {
		if f&^flagsKnown != 0 {
			return len(flags) - len(b) + i
		}
	}
	return -1
}

// booksToBuild returns how many books of those keep names (flagUp,
// flagDown or both) a decode of flags builds: those that are not the
// previous snapshot's book.
func booksToBuild(flags []byte, keep byte) int {
	n := 0
	var prevFlags byte
	for _, f := range flags {
		for _, bk := range [2]byte{flagUp, flagDown} {
			if f&bk&keep != 0 && !reused(f, prevFlags, bk) {
				n++
			}
		}
		prevFlags = f
	}
	return n
}

// sectionName names section p in errors.
func (d *bookDecoder) sectionName(p int) string {
	switch {
	case d.v1:
		return "books"
	case p == 0:
		return "the up books"
	default:
		return "the down books"
	}
}

// close checks that the sections read were read to their end and held the
// levels the header announced for them.
func (d *bookDecoder) close() error {
	if d.err != nil {
		return d.err
	}
	for p, bk := range [2]byte{flagUp, flagDown} {
		if !d.v1 && d.keep&bk == 0 || d.v1 && p > 0 {
			continue // a section not read
		}
		switch {
		case len(d.in[p]) != 0:
			d.err = fmt.Errorf("%w: %d trailing bytes in %s", errCorrupt, len(d.in[p]), d.sectionName(p))
		case d.levels[p] != d.total[p]:
			d.err = fmt.Errorf("%w: %d levels in %s, header says %d", errCorrupt, d.levels[p], d.sectionName(p), d.total[p])
		}
		if d.err != nil {
			return d.err
		}
	}
	return nil
}

func clearBooks(snaps []store.Snapshot) {
	for i := range snaps {
		snaps[i].BookUp, snaps[i].BookDown = nil, nil
	}
}

// reused reports whether the book bk (flagUp or flagDown) of a snapshot
// with flags f is the previous snapshot's book: both its sides unchanged,
// and the previous snapshot had the book too.
func reused(f, prev, bk byte) bool {
	k := 0
	if bk == flagDown {
		k = 2
	}
	both := byte(flagSame<<k | flagSame<<(k+1))
	return f&both == both && prev&bk != 0
}

// bookDecoder decodes the sides of a books section.
type bookDecoder struct {
	in             [2][]byte // what is left of each outcome's section (version 1: in[0], both outcomes')
	v1             bool      // a books section of version 1
	keep           byte      // the books read: flagUp, flagDown or both
	err            error
	pScale, sScale scale
	total          [2]int        // levels the header announces for each section, repeats included
	levels         [2]int        // levels decoded, repeated or stepped over so far in each section
	arena          []store.Level // the block decoded levels are cut from
	oneBlock       bool          // the arena was made large enough for the section: no second block
	block          uint16        // with oneBlock, the arena's block in the tape
	books          []store.Book
	last           [numSides][]store.Level // each position's side as last decoded
	span           [numSides]store.Span    // where in the arena each position's last side is
	skipped        [numSides]int           // each position's length as last stepped over (skipBook)
	refs           [numSides]sideRef
	next           sideRef // scratch for the side being decoded
	pv, sv         valueTable
}

// book returns the book of a snapshot with flags f whose sides are at
// positions k and k+1: the previous snapshot's (prev) when neither side
// changed, else a new one.
func (d *bookDecoder) book(f, prevFlags, bk byte, k int, prev *store.Book) *store.Book {
	if reused(f, prevFlags, bk) && prev != nil {
		d.count(k, len(prev.Bids)+len(prev.Asks))
		return prev
	}
	bids := d.side(k, f&(flagSame<<k) != 0)
	asks := d.side(k+1, f&(flagSame<<(k+1)) != 0)
	if len(d.books) == cap(d.books) {
		d.fail("more books than the flags announce")
		return nil
	}
	d.books = append(d.books, store.Book{Bids: bids, Asks: asks})
	return &d.books[len(d.books)-1]
}

func (d *bookDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
	}
	d.in = [2][]byte{}
}

// part is the section side position k is read from: its outcome's in
// version 2, the one section of version 1.
func (d *bookDecoder) part(k int) int {
	if d.v1 {
		return 0
	}
	return k / 2
}

// stream is what is left of the section side position k is read from.
func (d *bookDecoder) stream(k int) *[]byte { return &d.in[d.part(k)] }

// count adds n levels to the section of side position k, and fails when
// that is more than the header announced.
func (d *bookDecoder) count(k, n int) bool {
	p := d.part(k)
	if n > d.total[p]-d.levels[p] {
		d.fail("more levels than the %d announced", d.total[p])
		return false
	}
	d.levels[p] += n
	return true
}

// side decodes (or repeats, when same) the next side at position k.
func (d *bookDecoder) side(k int, same bool) []store.Level {
	if d.err != nil {
		return nil
	}
	if same {
		prev := d.last[k]
		if !d.count(k, len(prev)) {
			return nil
		}
		return prev
	}
	bs := d.stream(k)
	c, m := binary.Uvarint(*bs)
	switch {
	case m <= 0:
		d.fail("bad uvarint")
		return nil
	case c == 0:
		*bs = (*bs)[m:]
		d.last[k], d.span[k] = nil, store.Span{}
		d.refs[k].price, d.refs[k].size = d.refs[k].price[:0], d.refs[k].size[:0]
		return nil
	case c-1 > uint64(len(*bs)/2):
		d.fail("side of %d levels exceeds the %d bytes left", c-1, len(*bs))
		return nil
	}
	*bs = (*bs)[m:]
	n := int(c - 1)
	p := d.part(k)
	if n > d.total[p]-d.levels[p] {
		d.fail("more levels than the %d announced", d.total[p])
		return nil
	}
	if d.arena == nil || n > cap(d.arena)-len(d.arena) { // (an empty side is not nil)
		if d.oneBlock {
			d.fail("more levels than the section can hold")
			return nil
		}
		// A new block; the sides decoded so far keep theirs. Blocks are
		// bounded by what can still come (every level written takes at
		// least two bytes), so a chunk whose sides mostly repeat
		// allocates little.
		d.arena = make([]store.Level, 0, max(n, min(arenaBlock, d.total[p]-d.levels[p], len(*bs)/2)))
	}
	d.levels[p] += n
	off := len(d.arena)
	d.arena = d.arena[:off+n]
	out := d.arena[off : off+n : off+n]
	d.next.price = grow(d.next.price, n)
	d.next.size = grow(d.next.size, n)
	rest, ok := decodeLevels(*bs, out, d.next.price, d.next.size, &d.refs[k], d.last[k], k%2 == 0, &d.pv, &d.sv, d.pScale, d.sScale)
	if !ok {
		d.fail("bad varint")
		return nil
	}
	*bs = rest
	d.refs[k], d.next = d.next, d.refs[k]
	d.last[k] = out
	if d.oneBlock {
		sp, err := store.SideSpan(int(d.block), off, n)
		if err != nil {
			d.err, d.in = err, [2][]byte{}
			return nil
		}
		d.span[k] = sp
	}
	return out
}

// skipBook steps over the book at positions k and k+1 of a snapshot with
// flags f, counting its levels.
func (d *bookDecoder) skipBook(f byte, k int) {
	for j := k; j < k+2 && d.err == nil; j++ {
		if f&(flagSame<<j) == 0 {
			d.skipSide(j)
		}
		d.count(j, d.skipped[j])
	}
}

// skipSide steps over the side written at position j: its count, then two
// varints a level.
func (d *bookDecoder) skipSide(j int) {
	bs := d.stream(j)
	c, m := binary.Uvarint(*bs)
	switch {
	case m <= 0:
		d.fail("bad uvarint")
		return
	case c == 0:
		*bs, d.skipped[j] = (*bs)[m:], 0
		return
	case c-1 > uint64(len(*bs)/2):
		d.fail("side of %d levels exceeds the %d bytes left", c-1, len(*bs))
		return
	}
	b := (*bs)[m:]
	n := int(c - 1)
	// A varint ends at its first byte below 0x80, and is at most
	// binary.MaxVarintLen64 bytes long, the last of them 0 or 1 (as
	// binary.Varint, which decodeLevels uses, requires).
	i, run := 0, 0
	for ends := 2 * n; ends > 0; i++ {
		if i == len(b) || run == binary.MaxVarintLen64 || run == binary.MaxVarintLen64-1 && b[i] > 1 {
			d.fail("bad varint")
			return
		}
		if b[i] < 0x80 {
			ends--
			run = 0
		} else {
			run++
		}
	}
	*bs, d.skipped[j] = b[i:], n
}

// arenaBlock is the levels of one block of a chunk's decoded sides.
const arenaBlock = 2048

// grow returns s with length n, reusing its array when it is large enough.
func grow(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n, max(n, 2*cap(s)))
	}
	return s[:n]
}

// decodeLevels decodes len(out) levels from b into out, and their units
// into prices and sizes (of the same length), predicting them from ref as
// appendSide did; prev is the side ref holds the units of, whose numbers
// a level at a price ref has (most of them, in a book that moves) takes
// instead of computing them again: the price always, the size when it did
// not change. The loop keeps its state in locals.
func decodeLevels(b []byte, out []store.Level, prices, sizes []int64, ref *sideRef, prev []store.Level, bids bool,
	pv, sv *valueTable, ps, ss scale) ([]byte, bool) {
	rp, rs := ref.price, ref.size
	rs = rs[:len(rp)]
	if len(prev) != len(rp) {
		prev = nil // (a caller without the side's numbers)
	}
	prices, sizes = prices[:len(out)], sizes[:len(out)]
	// ahead(a, b) is a > b for bids, a < b for asks: a*dir < b*dir.
	dir := int64(1)
	if bids {
		dir = -1
	}
	pv.fill(ps)
	sv.fill(ss)
	var prev1, gap int64
	match := 0
	for j := range out {
		// Most levels of a side that changed are the side before's at the
		// next price of its order, written as two zero bytes: once the
		// level before was the side before's too, and that side is in
		// strict book order there, they take its numbers, as the steps
		// below would.
		if len(b) >= 2 && b[0]|b[1] == 0 && j < len(prev) &&
			(j == 0 || match == j-1 && rp[j-1] == prev1 && rp[j-1]*dir < rp[j]*dir) {
			pu := rp[j]
			if j > 0 {
				gap = pu - prev1
			}
			prev1, match = pu, j
			prices[j], sizes[j] = pu, rs[j]
			out[j] = prev[j]
			b = b[2:]
			continue
		}
		var dp, ds int64
		switch {
		case len(b) > 0 && b[0] < 0x80:
			u := int64(b[0])
			dp, b = u>>1^-(u&1), b[1:]
		case len(b) >= 8 && ^binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0:
			var n int
			dp, n = shortVarint(b)
			b = b[n:]
		default:
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
			pred = prev1 + (rp[j] - rp[j-1])
		default:
			pred = prev1 + gap
		}
		pu := dp + pred
		if j > 0 {
			gap = pu - prev1
		}
		prev1 = pu

		switch {
		case len(b) > 0 && b[0] < 0x80:
			u := int64(b[0])
			ds, b = u>>1^-(u&1), b[1:]
		case len(b) >= 8 && ^binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0:
			var n int
			ds, n = shortVarint(b)
			b = b[n:]
		default:
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
		var l store.Level
		if match < len(rp) && rp[match] == pu {
			su += rs[match]
			if match < len(prev) {
				l.Price = prev[match].Price
				if ds == 0 {
					l.Size = prev[match].Size
				} else {
					l.Size = sv.value(su, ss)
				}
				prices[j], sizes[j] = pu, su
				out[j] = l
				continue
			}
		}
		prices[j], sizes[j] = pu, su
		l.Price = pv.value(pu, ps)
		l.Size = sv.value(su, ss)
		out[j] = l
	}
	return b, true
}

// shortVarint decodes the zigzag varint at the front of b, which must hold
// at least eight bytes and the varint's end among them, and returns it and
// its length. It reads it from one load, with no branch on its length:
// the sizes of a book drawn afresh take two or three bytes at random,
// which a branch on each byte, as binary.Varint takes, mispredicts.
func shortVarint(b []byte) (int64, int) {
	x := binary.LittleEndian.Uint64(b)
	ends := ^x & 0x8080808080808080
	u := varintBits(x & (ends ^ (ends - 1)))
	return int64(u>>1) ^ -int64(u&1), (bits.TrailingZeros64(ends) + 1) >> 3
}

// varintBits returns the number an unsigned varint of at most eight bytes
// holds, given its bytes little-endian in x and zeros after them: the low
// seven bits of each byte, gathered.
func varintBits(x uint64) uint64 {
	x = x&0x007f007f007f007f | (x&0x7f007f007f007f00)>>1
	x = x&0x00003fff00003fff | (x&0x3fff00003fff0000)>>2
	return x&0x000000000fffffff | (x&0x0fffffff00000000)>>4
}

// valueTable holds scale.value of the units below tableSize, which are
// most of a books column (prices on a tick, small sizes): a lookup instead
// of a division, giving the very float64 that scale.value computes.
// decodeLevels fills it (fill) before its loop; the table of numbers in
// cents, most columns' scale, is computed once and copied.
type valueTable struct {
	s   scale
	set bool
	v   [tableSize]float64
}

// centScale is the scale of numbers in cents (1e4 millionths), whose
// table centValues is.
const centScale scale = 10_000

var centValues = func() (v [tableSize]float64) {
	for u := range v {
		v[u] = centScale.value(int64(u))
	}
	return v
}()

const tableSize = 256

// value returns s.value(u), for the scale t is filled for.
func (t *valueTable) value(u int64, s scale) float64 {
	if uint64(u) < tableSize {
		return t.v[u]
	}
	return s.value(u)
}

// fill makes t the table of s, unless it is already.
func (t *valueTable) fill(s scale) {
	switch {
	case t.set && t.s == s:
		return
	case s == centScale:
		t.v = centValues
	default:
		for u := range t.v {
			t.v[u] = s.value(int64(u))
		}
	}
	t.s, t.set = s, true
}

// encodeDepthBook packs an exchange order book: version, the price and
// quantity column headers, then bids and asks, each as uvarint(0) for nil
// or uvarint(len+1) followed by its levels (a price as its difference from
// the level before, a quantity as is).
func encodeDepthBook(bids, asks []store.DepthLevel) []byte {
	var ps, qs scaler
	for _, side := range [...][]store.DepthLevel{bids, asks} {
		for _, l := range side {
			ps.add(l.Price)
			qs.add(l.Quantity)
		}
	}
	pScale, qScale := ps.scale(), qs.scale()
	b := []byte{codecVersion}
	b = binary.AppendUvarint(b, uint64(pScale))
	b = binary.AppendUvarint(b, uint64(qScale))
	for _, side := range [...][]store.DepthLevel{bids, asks} {
		if side == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(side))+1)
		var prev int64
		for _, l := range side {
			pu := pScale.unit(l.Price)
			b = binary.AppendVarint(b, pu-prev)
			b = binary.AppendVarint(b, qScale.unit(l.Quantity))
			prev = pu
		}
	}
	return b
}

// decodeDepthBook unpacks what encodeDepthBook packed.
func decodeDepthBook(b []byte) (bids, asks []store.DepthLevel, err error) {
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != codecVersion {
		return nil, nil, fmt.Errorf("%w: depth book version %d", errCorrupt, v)
	}
	pScale, qScale := scale(r.uvarint()), scale(r.uvarint())
	var sides [2][]store.DepthLevel
	for i := range sides {
		n, isNil := r.side()
		if isNil {
			continue
		}
		side := make([]store.DepthLevel, n)
		var prev int64
		for j := range side {
			prev += r.varint()
			side[j] = store.DepthLevel{Price: pScale.value(prev), Quantity: qScale.value(r.varint())}
		}
		sides[i] = side
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes in depth book", len(r.b))
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return sides[0], sides[1], nil
}

// varint decodes a zigzag varint from the front of b, with a fast path for
// the one-byte values that dominate chunk data.
func varint(b []byte) (v int64, rest []byte, ok bool) {
	if len(b) > 0 && b[0] < 0x80 {
		u := int64(b[0])
		return u>>1 ^ -(u & 1), b[1:], true
	}
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}
