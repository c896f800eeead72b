package postgres

// Internals the external tests reach.
var (
	EncodeChunk     = encodeChunk
	DecodeHead      = decodeHead
	DecodeBooks     = decodeBooks
	EncodeDepthBook = encodeDepthBook
	DecodeDepthBook = decodeDepthBook
	// TradePageSQL is the query of a page of ListMarketTrades.
	TradePageSQL = tradePageSQL
)

// ChunkSize is the most snapshots a chunk holds.
const ChunkSize = chunkSize
