package collect

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

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
}

type clobLevel struct {
	Price flexFloat `json:"price"`
	Size  flexFloat `json:"size"`
}

// UnmarshalJSON reads the CLOB's level, {"price":"0.48","size":"30"}, on
// a fast path: a snapshot decodes some forty levels, and encoding/json's
// per-field work would be most of the collector's time. Any other form
// goes the general way.
func (l *clobLevel) UnmarshalJSON(b []byte) error {
	if price, size, ok := fastLevel(b); ok {
		*l = clobLevel{Price: price, Size: size}
		return nil
	}
	type plain clobLevel
	return json.Unmarshal(b, (*plain)(l))
}

// fastLevel parses an object of exactly the keys price and size, in
// either order, whose values are numbers or strings without escapes.
func fastLevel(b []byte) (price, size flexFloat, ok bool) {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	// str returns the text of a string without escapes at i.
	str := func() ([]byte, bool) {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 || bytes.IndexByte(b[i+1:i+1+j], '\\') >= 0 {
			return nil, false
		}
		s := b[i+1 : i+1+j]
		i += j + 2
		return s, true
	}
	ws()
	if i >= len(b) || b[i] != '{' {
		return price, size, false
	}
	i++
	for n := 0; n < 2; n++ {
		ws()
		key, ok := str()
		if !ok {
			return price, size, false
		}
		ws()
		if i >= len(b) || b[i] != ':' {
			return price, size, false
		}
		i++
		ws()
		var raw []byte
		if i < len(b) && b[i] == '"' {
			if raw, ok = str(); !ok {
				return price, size, false
			}
		} else {
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			raw, i = b[i:j], j
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return price, size, false
		}
		switch string(key) {
		case "price":
			if price.Set {
				return price, size, false
			}
			price = flexFloat{V: v, Set: true}
		case "size":
			if size.Set {
				return price, size, false
			}
			size = flexFloat{V: v, Set: true}
		default:
			return price, size, false
		}
		ws()
		if n == 0 {
			if i >= len(b) || b[i] != ',' {
				return price, size, false
			}
			i++
		}
	}
	if i >= len(b) || b[i] != '}' {
		return price, size, false
	}
	i++
	ws()
	return price, size, i == len(b)
}

// book converts a CLOB book to the store's form: bids best (highest) first,
// asks best (lowest) first, at most levels a side, levels of size zero
// dropped (the CLOB lists emptied levels in price_change events; a book
// should not carry them, but costs nothing to check).
func (b clobBook) book(levels int) (store.Book, error) {
	bids, err := side(b.Bids, levels, func(x, y store.Level) int { return cmp.Compare(y.Price, x.Price) })
	if err != nil {
		return store.Book{}, fmt.Errorf("book of %s: bids: %w", b.AssetID, err)
	}
	asks, err := side(b.Asks, levels, func(x, y store.Level) int { return cmp.Compare(x.Price, y.Price) })
	if err != nil {
		return store.Book{}, fmt.Errorf("book of %s: asks: %w", b.AssetID, err)
	}
	return store.Book{Bids: bids, Asks: asks}, nil
}

func side(in []clobLevel, levels int, order func(a, b store.Level) int) ([]store.Level, error) {
	out := make([]store.Level, 0, len(in))
	for _, l := range in {
		if !l.Price.Set || !l.Size.Set {
			return nil, fmt.Errorf("%w: a level without price or size", errMalformed)
		}
		if l.Price.V <= 0 || l.Price.V >= 1 || l.Size.V < 0 {
			return nil, fmt.Errorf("%w: level %v × %v is outside (0, 1) × [0, ∞)", errMalformed, l.Price.V, l.Size.V)
		}
		if l.Size.V > 0 {
			out = append(out, store.Level{Price: l.Price.V, Size: l.Size.V})
		}
	}
	slices.SortStableFunc(out, order)
	if len(out) > levels {
		out = out[:levels:levels]
	}
	return out, nil
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
