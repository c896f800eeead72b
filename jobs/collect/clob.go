package collect

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
)

// clobBook is an order book as the CLOB's /book and /books answer it, with
// string numbers and levels in no order the collector relies on (the CLOB
// lists them worst first).
type clobBook struct {
	Market    string      `json:"market"`
	AssetID   flexString  `json:"asset_id"`
	Timestamp flexString  `json:"timestamp"`
	Bids      []clobLevel `json:"bids"`
	Asks      []clobLevel `json:"asks"`
	// LastTradePrice prices an outcome whose book has no asks.
	LastTradePrice flexFloat `json:"last_trade_price"`
	// TickSize is the market's tick when the book was taken (REST only:
	// the market channel's books carry none).
	TickSize flexFloat `json:"tick_size"`
}

// clobLevel is a level as the CLOB and the market channel send it.
type clobLevel = book.Level

// book converts a CLOB book to the store's form: bids best (highest) first,
// asks best (lowest) first, at most levels a side, levels of size zero
// dropped (the CLOB lists emptied levels in price_change events; a book
// should not carry them, but costs nothing to check).
func (b clobBook) book(levels int) (store.Book, error) {
	sb, err := book.Convert(b.Bids, b.Asks, levels)
	if err != nil {
		return store.Book{}, fmt.Errorf("book of %s: %w", b.AssetID, err)
	}
	return sb, nil
}

// clob is Polymarket's order book API.
type clob struct {
	u       *upstream
	timeout time.Duration
}

// maxBooksPerRequest bounds the tokens asked for in one POST /books.
const maxBooksPerRequest = 100

type bookParam struct {
	TokenID string `json:"token_id"`
}

// books fetches the books of the tokens, keyed by token id. A token the
// CLOB leaves out is absent from the map. It sends each request once: the
// snapshot loop's next tick is the retry.
func (c *clob) books(ctx context.Context, tokens []string) (map[string]clobBook, error) {
	out := make(map[string]clobBook, len(tokens))
	for chunk := range slices.Chunk(tokens, maxBooksPerRequest) {
		params := make([]bookParam, len(chunk))
		for i, t := range chunk {
			params[i] = bookParam{TokenID: t}
		}
		var books []clobBook
		err := c.u.do(ctx, request{method: http.MethodPost, path: "/books", body: params, timeout: c.timeout, attempts: 1}, &books)
		if err != nil {
			return nil, err
		}
		for _, b := range books {
			out[string(b.AssetID)] = b
		}
	}
	return out, nil
}
