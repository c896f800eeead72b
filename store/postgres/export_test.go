package postgres

import "github.com/updown/updown/store"

// Internals the external tests reach.
var (
	// Wrap names a failed operation and maps its error as every store
	// method does.
	Wrap = wrap
	// EncodeChunk packs snaps as the store writes them.
	EncodeChunk = func(snaps []store.Snapshot) (head, books []byte) { return encodeChunk(snaps, booksVersion) }
	// EncodeChunkV1 packs snaps as chunks written before books version 2
	// hold them.
	EncodeChunkV1 = func(snaps []store.Snapshot) (head, books []byte) { return encodeChunk(snaps, booksVersion1) }
	DecodeHead    = decodeHead
	DecodeBooks   = decodeBooks
	// DecodeTape decodes a chunk into a tape with the books of outcome,
	// as ReadTape decodes each chunk of a market.
	DecodeTape = func(head, books []byte, outcome string) (*store.Tape, error) {
		t := &store.Tape{Outcome: outcome, Ticks: make([]store.Tick, 0, headCount(head))}
		var err error
		if t.Ticks, err = decodeTicks(t.Ticks, head); err != nil {
			return nil, err
		}
		levels, err := decodeTapeBooks(t.Ticks, &t.NoBook, books, bookFlag(outcome), 0)
		if err != nil {
			return nil, err
		}
		t.Blocks = [][]store.Level{levels}
		return t, nil
	}
	// DecodeMarketTape decodes a market's chunks, oldest first, into one
	// tape with the books of outcome, as ReadTape does, on the caller's
	// goroutine.
	DecodeMarketTape = func(chunks []Chunk, outcome string) (*store.Tape, error) {
		n := 0
		for _, c := range chunks {
			n += headCount(c.Head)
		}
		t := &store.Tape{Outcome: outcome, Ticks: make([]store.Tick, n), Blocks: make([][]store.Level, len(chunks))}
		at := 0
		for i, c := range chunks {
			m := headCount(c.Head)
			var noBook store.TickSet
			var err error
			if t.Blocks[i], err = decodeTapeChunk(t.Ticks[at:at+m:at+m], &noBook, c.Head, c.Books, bookFlag(outcome), i); err != nil {
				return nil, err
			}
			t.NoBook.AddAt(at, noBook)
			at += m
		}
		return t, nil
	}
	EncodeDepthBook = encodeDepthBook
	DecodeDepthBook = decodeDepthBook
	// ListWithBooksSQL is the query of a listing with books.
	ListWithBooksSQL = listWithBooksSQL
	// TradePageSQL is the query of a page of ListMarketTrades.
	TradePageSQL = tradePageSQL
)

// SetBeforeImportLocks makes f run in every import's Commit between the
// merging of stored markets' snapshots and the locking of their rows.
func SetBeforeImportLocks(s *Store, f func()) { s.beforeImportLocks = f }

// ChunkSize is the most snapshots a chunk holds.
const ChunkSize = chunkSize

// Chunk is a chunk's head and books, as a row of the store holds them.
type Chunk struct{ Head, Books []byte }
