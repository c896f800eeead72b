package collect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// Binance request weights (per IP, 6,000 a minute on spot, 2,400 on
// futures) decide the default cadences: the ticker for three symbols costs
// 4 every 300 ms (800/min), spot depth of 20 levels 5 a symbol every second
// (900/min), spot trades 25 a symbol every 2 s (2,250/min); futures depth 2
// and trades 5. That is about 4,000 of spot's 6,000 a minute: a second
// collector behind the same address keeps none (Config.ExchangeCoins, the
// command's --exchange), and asks only for the ticker.

// Symbol is the exchange pair of coin c against USDT, e.g. BTCUSDT.
func Symbol(c store.Coin) string { return strings.ToUpper(string(c)) + "USDT" }

// binanceDepth is a depth answer: spot's, or futures' with E and T too.
type binanceDepth struct {
	LastUpdateID int64           `json:"lastUpdateId"`
	Bids         [][2]flexString `json:"bids"`
	Asks         [][2]flexString `json:"asks"`
}

// snapshot converts a depth answer: bids best first, asks best first, at
// most levels a side; coin price the mid of the best bid and ask.
func (d binanceDepth) snapshot(c store.Coin, kind store.ExchangeKind, at time.Time, levels int) (store.DepthSnapshot, error) {
	bids, err := depthSide(d.Bids, levels, func(x, y store.DepthLevel) int { return cmp.Compare(y.Price, x.Price) })
	if err != nil {
		return store.DepthSnapshot{}, fmt.Errorf("bids: %w", err)
	}
	asks, err := depthSide(d.Asks, levels, func(x, y store.DepthLevel) int { return cmp.Compare(x.Price, y.Price) })
	if err != nil {
		return store.DepthSnapshot{}, fmt.Errorf("asks: %w", err)
	}
	if len(bids) == 0 || len(asks) == 0 {
		return store.DepthSnapshot{}, fmt.Errorf("%w: a book side is empty", errMalformed)
	}
	return store.DepthSnapshot{
		Symbol:       Symbol(c),
		Kind:         kind,
		Time:         at.UTC().Truncate(time.Millisecond),
		CoinPrice:    decimalMid(bids[0].Price, asks[0].Price),
		Bids:         bids,
		Asks:         asks,
		LastUpdateID: d.LastUpdateID,
	}, nil
}

// decimalMid is the mid of two prices Binance writes with at most 8
// decimals: a decimal of at most 9, returned as the float nearest it. The
// float sum halved is off by a unit in the last place as often as not
// (67124.03 and 67124.05 give 67124.04000000001), which history would
// serve as it is. Rounding at the ninth decimal and dividing the integer by
// an exact power of ten gives the nearest float, while the halved sum's
// error is under half a nanounit: for prices under a million (a float's
// unit in the last place there is 1.2e-10). Above, the halved sum is kept.
func decimalMid(a, b float64) float64 {
	mid := (a + b) / 2
	if math.Abs(mid) < 1e6 {
		return math.Round(mid*1e9) / 1e9
	}
	return mid
}

func depthSide(in [][2]flexString, levels int, order func(a, b store.DepthLevel) int) ([]store.DepthLevel, error) {
	out := make([]store.DepthLevel, 0, min(len(in), levels))
	for _, l := range in {
		p, err := parseNum(string(l[0]))
		if err != nil {
			return nil, fmt.Errorf("%w: price: %w", errMalformed, err)
		}
		q, err := parseNum(string(l[1]))
		if err != nil {
			return nil, fmt.Errorf("%w: quantity: %w", errMalformed, err)
		}
		if p <= 0 || q < 0 {
			return nil, fmt.Errorf("%w: level %v × %v", errMalformed, p, q)
		}
		if q > 0 {
			out = append(out, store.DepthLevel{Price: p, Quantity: q})
		}
	}
	slices.SortStableFunc(out, order)
	return out[:min(len(out), levels):min(len(out), levels)], nil
}

// binanceTrade is one trade as /api/v3/trades and /fapi/v1/trades answer
// it; futures trades have no isBestMatch.
type binanceTrade struct {
	ID           int64     `json:"id"`
	Price        flexFloat `json:"price"`
	Qty          flexFloat `json:"qty"`
	QuoteQty     flexFloat `json:"quoteQty"`
	Time         int64     `json:"time"`
	IsBuyerMaker bool      `json:"isBuyerMaker"`
	IsBestMatch  *bool     `json:"isBestMatch"`
}

func (t binanceTrade) trade(kind store.ExchangeKind) (store.Trade, error) {
	if !t.Price.Set || !t.Qty.Set || t.Time <= 0 || t.ID < 0 {
		return store.Trade{}, fmt.Errorf("%w: trade %d lacks price, qty or time", errMalformed, t.ID)
	}
	quote := t.QuoteQty.V
	if !t.QuoteQty.Set {
		quote = t.Price.V * t.Qty.V
	}
	out := store.Trade{
		ID:           t.ID,
		Price:        t.Price.V,
		Qty:          t.Qty.V,
		QuoteQty:     quote,
		Time:         time.UnixMilli(t.Time).UTC(),
		IsBuyerMaker: t.IsBuyerMaker,
	}
	if kind == store.Spot && t.IsBestMatch != nil {
		// Binance sets it on every spot trade; SPEC serves it on spot only.
		// One it left out stays unknown (nil), which the stores keep and
		// the api leaves out, rather than a true Binance never said.
		best := *t.IsBestMatch
		out.IsBestMatch = &best
	}
	return out, nil
}

// binanceTicker is one entry of /api/v3/ticker/price.
type binanceTicker struct {
	Symbol string    `json:"symbol"`
	Price  flexFloat `json:"price"`
}

// binance is one Binance market (spot or futures).
type binance struct {
	u       *upstream
	kind    store.ExchangeKind
	timeout time.Duration
	backoff Backoff
}

func (b *binance) prefix() string {
	if b.kind == store.Future {
		return "/fapi/v1"
	}
	return "/api/v3"
}

// futuresDepthLimits are the limits /fapi/v1/depth accepts; spot takes any
// up to 5,000.
var futuresDepthLimits = [...]int{5, 10, 20, 50, 100, 500, 1000}

// depth fetches the book of coin c, once, with at least levels a side.
func (b *binance) depth(ctx context.Context, c store.Coin, levels int) (binanceDepth, error) {
	limit := min(levels, 5000)
	if b.kind == store.Future {
		limit = futuresDepthLimits[len(futuresDepthLimits)-1]
		for _, l := range futuresDepthLimits {
			if l >= levels {
				limit = l
				break
			}
		}
	}
	var d binanceDepth
	q := url.Values{"symbol": {Symbol(c)}, "limit": {strconv.Itoa(limit)}}
	err := b.u.do(ctx, request{method: http.MethodGet, path: b.prefix() + "/depth", query: q, timeout: b.timeout, attempts: 1}, &d)
	return d, err
}

// trades fetches the most recent trades of coin c, once.
func (b *binance) trades(ctx context.Context, c store.Coin, limit int) ([]store.Trade, error) {
	var raw []binanceTrade
	q := url.Values{"symbol": {Symbol(c)}, "limit": {strconv.Itoa(limit)}}
	if err := b.u.do(ctx, request{method: http.MethodGet, path: b.prefix() + "/trades", query: q, timeout: b.timeout, attempts: 1}, &raw); err != nil {
		return nil, err
	}
	out := make([]store.Trade, 0, len(raw))
	for _, r := range raw {
		t, err := r.trade(b.kind)
		if err != nil {
			return nil, fmt.Errorf("binance %s trades of %s: %w", b.kind, c, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// prices fetches the last traded price of each coin in one request, once.
func (b *binance) prices(ctx context.Context, coins []store.Coin) (map[store.Coin]float64, error) {
	symbols := make([]string, len(coins))
	for i, c := range coins {
		symbols[i] = Symbol(c)
	}
	list, _ := json.Marshal(symbols) // strings marshal without error
	var raw []binanceTicker
	q := url.Values{"symbols": {string(list)}}
	if err := b.u.do(ctx, request{method: http.MethodGet, path: "/api/v3/ticker/price", query: q, timeout: b.timeout, attempts: 1}, &raw); err != nil {
		return nil, err
	}
	out := make(map[store.Coin]float64, len(coins))
	for _, c := range coins {
		for _, t := range raw {
			if t.Symbol == Symbol(c) && t.Price.Set && t.Price.V > 0 {
				out[c] = t.Price.V
			}
		}
	}
	return out, nil
}

// maxKlineLag is how far after the instant asked for the first 1 s candle
// may open and still price that instant: seconds without trades have no
// candle.
const maxKlineLag = time.Minute

// priceAt returns the price of coin c at instant at: the open of the first
// 1-second candle at or after it, which is the first trade at or after the
// instant. It retries temporary failures; ok is false when Binance has no
// candle near the instant yet.
func (b *binance) priceAt(ctx context.Context, c store.Coin, at time.Time) (price float64, ok bool, err error) {
	var rows [][]json.RawMessage
	q := url.Values{
		"symbol":    {Symbol(c)},
		"interval":  {"1s"},
		"startTime": {strconv.FormatInt(at.UnixMilli(), 10)},
		"limit":     {"1"},
	}
	err = b.u.do(ctx, request{method: http.MethodGet, path: "/api/v3/klines", query: q,
		timeout: b.timeout, attempts: lookupAttempts, backoff: b.backoff}, &rows)
	if err != nil {
		return 0, false, err
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	if len(rows[0]) < 2 {
		return 0, false, fmt.Errorf("%w: kline of %d fields", errMalformed, len(rows[0]))
	}
	var open int64
	var px flexFloat
	if err := json.Unmarshal(rows[0][0], &open); err != nil {
		return 0, false, fmt.Errorf("%w: kline open time: %w", errMalformed, err)
	}
	if err := json.Unmarshal(rows[0][1], &px); err != nil || !px.Set || px.V <= 0 {
		return 0, false, fmt.Errorf("%w: kline open price %s", errMalformed, rows[0][1])
	}
	if t := time.UnixMilli(open); t.Before(at.Truncate(time.Second)) || t.Sub(at) > maxKlineLag {
		return 0, false, nil
	}
	return px.V, true, nil
}

// candle returns the open and close of coin c's candle of the interval
// ("1m", "1h") that opens at open, once it has closed. ok is false while
// Binance has no such candle, or it is still open.
func (b *binance) candle(ctx context.Context, c store.Coin, interval string, open time.Time) (o, cl float64, ok bool, err error) {
	var rows [][]json.RawMessage
	q := url.Values{
		"symbol":    {Symbol(c)},
		"interval":  {interval},
		"startTime": {strconv.FormatInt(open.UnixMilli(), 10)},
		"limit":     {"1"},
	}
	err = b.u.do(ctx, request{method: http.MethodGet, path: "/api/v3/klines", query: q,
		timeout: b.timeout, attempts: lookupAttempts, backoff: b.backoff}, &rows)
	if err != nil {
		return 0, 0, false, err
	}
	if len(rows) == 0 {
		return 0, 0, false, nil
	}
	k, err := parseKline(rows[0])
	if err != nil {
		return 0, 0, false, fmt.Errorf("%s kline: %w", interval, err)
	}
	openMs, closeMs, op, cp := k.openTime.UnixMilli(), k.closeTime.UnixMilli(), k.open, k.close
	if !time.UnixMilli(openMs).Equal(open) || !b.u.now().After(time.UnixMilli(closeMs)) {
		return 0, 0, false, nil // not this candle, or not final yet
	}
	return op, cp, true, nil
}

// kline is one candle: [openTime, open, high, low, close, volume,
// closeTime, ...] with string numbers.
type kline struct {
	openTime, closeTime time.Time
	open, close         float64
}

func parseKline(row []json.RawMessage) (kline, error) {
	if len(row) < 7 {
		return kline{}, fmt.Errorf("%w: kline of %d fields", errMalformed, len(row))
	}
	var openMs, closeMs int64
	var op, cp flexFloat
	if json.Unmarshal(row[0], &openMs) != nil || json.Unmarshal(row[6], &closeMs) != nil ||
		json.Unmarshal(row[1], &op) != nil || json.Unmarshal(row[4], &cp) != nil || !op.Set || !cp.Set || op.V <= 0 || cp.V <= 0 {
		return kline{}, fmt.Errorf("%w: kline %s", errMalformed, snippetOf(row))
	}
	return kline{openTime: time.UnixMilli(openMs).UTC(), closeTime: time.UnixMilli(closeMs).UTC(), open: op.V, close: cp.V}, nil
}

func snippetOf(row []json.RawMessage) string {
	b, _ := json.Marshal(row)
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
