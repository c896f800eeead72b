package postgres

import "github.com/updown/updown/store"

// Internals the external tests reach.
var (
	EncodeChunk = encodeChunk
	DecodeHead  = decodeHead
	DecodeBooks = decodeBooks
	// DecodeBooksOf decodes the books of one outcome (store.OutcomeUp or
	// store.OutcomeDown), or both for "".
	DecodeBooksOf = func(snaps []store.Snapshot, books []byte, outcome string) error {
		return decodeBooksOf(snaps, books, bookMask(outcome))
	}
	EncodeDepthBook = encodeDepthBook
	DecodeDepthBook = decodeDepthBook
	// TradePageSQL is the query of a page of ListMarketTrades.
	TradePageSQL = tradePageSQL
)

// ChunkSize is the most snapshots a chunk holds.
const ChunkSize = chunkSize
