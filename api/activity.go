package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// A market's Polymarket trades and recording gaps (DESIGN 9), by slug and
// by external market id, under the same plan rules as its snapshots.

// marketTradePageParams are the paging parameters of both trade routes.
type marketTradePageParams struct {
	Limit, Offset int
	CSV           bool         // Accept: text/csv
	Rows          bool         // Accept: text/csv or Parquet (s.rowsForm)
	Series        seriesParams // time range, order and cursor (DESIGN 13)
}

// MarketTradesQuery holds the page parameters both trade routes share.
// Huma reads the parameters of an embedded struct only when its type is
// exported, hence the exported name.
type MarketTradesQuery struct {
	Limit     int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Page size."`
	Offset    int    `query:"offset" default:"0" minimum:"0" doc:"Trades to skip, in the chosen order."`
	Accept    string `header:"Accept" hidden:"true"`
	Order     string `query:"order" enum:"asc,desc" default:"desc" doc:"desc: newest first; asc: oldest first (case-insensitive)."`
	StartTime string `query:"start_time" doc:"Trades at or after this time: epoch milliseconds or ISO 8601."`
	EndTime   string `query:"end_time" doc:"Trades before this time (exclusive): epoch milliseconds or ISO 8601."`
	Cursor    string `query:"cursor" doc:"A next_cursor of the same path, start_time, end_time and order: the page after it. Not with offset."`
}

// page is the query as the handler reads it, the format negotiated by s.
func (q *MarketTradesQuery) page(s *Server) marketTradePageParams {
	csv, parquet := s.rowsForm(q.Accept)
	return marketTradePageParams{q.Limit, q.Offset, csv, csv || parquet,
		seriesParams{q.StartTime, q.EndTime, q.Order, q.Cursor, q.Offset}}
}

type marketTradesBySlugInput struct {
	Slug string `path:"slug" doc:"Market slug." example:"btc-updown-15m-1777467600"`
	MarketTradesQuery
}

type marketTradesByMarketIDInput struct {
	MarketID string `path:"marketId" doc:"External (prediction-market) market id."`
	MarketTradesQuery
}

type marketTradesOutput struct {
	PageHeaders
	Body *marketTradePageBody
}

// marketTradePageBody is the trades response.
type marketTradePageBody struct {
	Market  marketJSON        `json:"market"`
	Trades  []marketTradeJSON `json:"trades" doc:"Trades, newest first (oldest first with order=asc)."`
	Total   int               `json:"total" doc:"All trades the market has."`
	Matched int               `json:"matched" doc:"Trades in the start_time/end_time range (total when neither is given)."`
	Limit   int               `json:"limit"`
	Offset  int               `json:"offset"`
	// NextCursor continues the walk; nil after the last page.
	NextCursor *string `json:"next_cursor" nullable:"true" doc:"Pass as cursor for the next page; null after the last."`

	trades []store.MarketTrade // the page as stored, for the CSV form
}

// marketTradeJSON is one Polymarket trade (a last_trade_price event).
type marketTradeJSON struct {
	Time       string  `json:"time" format:"date-time" doc:"Polymarket's timestamp of the trade: UTC with microseconds (six fraction digits), as in every format of the trade (JSON, CSV, Parquet)."`
	Outcome    string  `json:"outcome" enum:"Up,Down" doc:"The outcome token traded."`
	Price      float64 `json:"price" minimum:"0" maximum:"1"`
	Size       float64 `json:"size" doc:"Shares."`
	Side       string  `json:"side" enum:"BUY,SELL" doc:"The taker's side."`
	FeeRateBps float64 `json:"fee_rate_bps" doc:"The fee rate Polymarket reported for the trade, in basis points."`
	TxHash     string  `json:"tx_hash" doc:"The trade's settlement transaction hash; empty when Polymarket did not name it. The CSV and Parquet forms carry the same fields, with the market's slug on every row."`
}

type gapsBySlugInput struct {
	Slug string `path:"slug" doc:"Market slug." example:"btc-updown-15m-1777467600"`
}

type gapsByMarketIDInput struct {
	MarketID string `path:"marketId" doc:"External (prediction-market) market id."`
}

type gapsOutput struct{ Body gapsBody }

type gapsBody struct {
	Market marketJSON `json:"market"`
	Gaps   []gapJSON  `json:"gaps" doc:"Stretches of over 3 s in which the recorder lacked data of the live market, oldest first: of kind snapshots, no snapshot was stored (outside them a missing change means a flat market, not missing data); of kind trades, snapshots went on but Polymarket's trade feed was down, so trades may be missing (resting orders fill on trades). Gaps of different kinds may overlap."`
}

type gapJSON struct {
	From string `json:"from" format:"date-time" doc:"The last snapshot before the gap (or the window's start); UTC with microseconds, as snapshots' times."`
	To   string `json:"to" format:"date-time" doc:"The first snapshot after it (or the window's end); UTC with microseconds."`
	Kind string `json:"kind" enum:"snapshots,trades" doc:"What is missing: snapshots (no snapshot stored; every gap recorded before gaps had kinds) or trades (snapshots went on, trades may be missing). An addition to SPEC's {from, to}."`
}

// marketTradesPattern is the market trades route as documented and as Huma
// registers it.
const marketTradesPattern = "GET /v1/markets/{slug}/trades"

// routeMux is the ServeMux Huma registers on. Go's ServeMux refuses
// /v1/markets/{slug}/trades beside the exchange's /v1/{coin}/spot/trades
// (both would match /v1/markets/spot/trades and neither is more specific),
// so the market trades route is registered under the more general
// /v1/{collection}/{slug}/trades, which the exchange's routes refine, and
// answers only for the collection "markets".
type routeMux struct {
	*http.ServeMux
	notFound http.HandlerFunc
}

func (m routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	if pattern != marketTradesPattern {
		m.ServeMux.HandleFunc(pattern, h)
		return
	}
	m.ServeMux.HandleFunc("GET /v1/{collection}/{slug}/trades", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("collection") != "markets" {
			m.notFound(w, r)
			return
		}
		r.Pattern = marketTradesPattern // the route metrics name
		h(w, r)
	})
}

func (s *Server) registerActivity() {
	security := []map[string][]string{{schemeAPIKey: {}}}
	errs := []int{400, 401, 403, 404, 429, 500, 503}
	bySlug := func(ctx context.Context, slug string) (store.Market, error) {
		return s.findMarket(ctx, slug, s.store.GetMarket, "market "+quoteID(slug))
	}
	byID := func(ctx context.Context, id string) (store.Market, error) {
		return s.findMarket(ctx, id, s.store.GetMarketByMarketID, "market with market_id "+quoteID(id))
	}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-trades",
		Method:      http.MethodGet,
		Path:        "/v1/markets/{slug}/trades",
		Summary:     "List a market's trades",
		Description: "Polymarket trades of the market (last_trade_price events), newest first (order=asc: oldest first). " +
			"start_time (inclusive) and end_time (exclusive) select a time range; `matched` counts its trades and `total` all the market's. " +
			"next_cursor continues a walk that new trades cannot shift (null after the last page).",
		Tags:     []string{"Markets"},
		Security: security,
		Errors:   errs,
	}, func(ctx context.Context, in *marketTradesBySlugInput) (*marketTradesOutput, error) {
		m, err := bySlug(ctx, in.Slug)
		if err != nil {
			return nil, err
		}
		return s.marketTrades(ctx, m, in.page(s))
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-trades-by-market-id",
		Method:      http.MethodGet,
		Path:        "/v1/markets/by-market-id/{marketId}/trades",
		Summary:     "List a market's trades by external market id",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      errs,
	}, func(ctx context.Context, in *marketTradesByMarketIDInput) (*marketTradesOutput, error) {
		m, err := byID(ctx, in.MarketID)
		if err != nil {
			return nil, err
		}
		return s.marketTrades(ctx, m, in.page(s))
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-gaps",
		Method:      http.MethodGet,
		Path:        "/v1/markets/{slug}/gaps",
		Summary:     "List a market's recording gaps",
		Description: "Stretches of over 3 s without a recorded snapshot while the market was live, so that no data can be told from a flat market.",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      errs,
	}, func(ctx context.Context, in *gapsBySlugInput) (*gapsOutput, error) {
		m, err := bySlug(ctx, in.Slug)
		if err != nil {
			return nil, err
		}
		return s.gaps(ctx, m)
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-gaps-by-market-id",
		Method:      http.MethodGet,
		Path:        "/v1/markets/by-market-id/{marketId}/gaps",
		Summary:     "List a market's recording gaps by external market id",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      errs,
	}, func(ctx context.Context, in *gapsByMarketIDInput) (*gapsOutput, error) {
		m, err := byID(ctx, in.MarketID)
		if err != nil {
			return nil, err
		}
		return s.gaps(ctx, m)
	})
}

// marketTrades answers one page of the market's trades: with a cursor, one
// trade more than the page tells whether another page follows; without,
// the counts do.
func (s *Server) marketTrades(ctx context.Context, m store.Market, p marketTradePageParams) (*marketTradesOutput, error) {
	sq, err := parseSeriesQuery("trades\x00"+m.Slug, p.Series, false)
	if err != nil {
		return nil, err
	}
	q := store.MarketTradeQuery{Limit: sq.readLimit(p.Limit), Offset: p.Offset, Ascending: sq.Ascending, From: sq.From, To: sq.To}
	if sq.After != nil {
		after, ok := decodeTradeKey(*sq.After, sq.AfterKey)
		if !ok {
			return nil, invalidParam("query.cursor", p.Series.Cursor, "cursor is not a next_cursor of this market's trades")
		}
		q.After = &after
	}
	trades, total, err := s.store.ListMarketTrades(ctx, m.Slug, q)
	if err != nil {
		return nil, s.storeFailure(ctx, "list trades", err)
	}
	matched := total
	if sq.ranged() {
		if matched, err = s.store.CountMarketTrades(ctx, m.Slug, q); err != nil {
			return nil, s.storeFailure(ctx, "count trades", err)
		}
	}
	trades, more := page(sq, trades, p.Limit, p.Offset, matched)
	body := &marketTradePageBody{Market: toMarketJSON(m), Total: total, Matched: matched, Limit: p.Limit, Offset: p.Offset, trades: trades}
	if more && len(trades) > 0 {
		last := trades[len(trades)-1]
		body.NextCursor = sq.cursorAt(last.Time, appendTradeKey(nil, last))
	}
	if !p.CSV {
		body.Trades = make([]marketTradeJSON, len(trades))
		for i, t := range trades {
			body.Trades[i] = marketTradeJSON{Time: formatRecordTime(t.Time), Outcome: t.Outcome, Price: t.Price, Size: t.Size,
				Side: t.Side, FeeRateBps: t.FeeRateBps, TxHash: t.TxHash}
		}
	}
	out := &marketTradesOutput{Body: body}
	if p.Rows {
		out.PageHeaders = rowsPageHeaders(body.NextCursor, body.Total, body.Matched, "")
	}
	return out, nil
}

// appendTradeKey appends the key of t past its time (the rest of
// store.CompareMarketTrades' order) to b: outcome and side as a byte each,
// price, size and fee rate as float64 bits, then the transaction hash
// after its length (so that a cut cursor is refused, not read as another
// hash).
func appendTradeKey(b []byte, t store.MarketTrade) []byte {
	b = append(b, boolByte(t.Outcome == store.OutcomeDown), boolByte(t.Side == store.SideSell))
	for _, x := range []float64{t.Price, t.Size, t.FeeRateBps} {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	}
	b = binary.AppendUvarint(b, uint64(len(t.TxHash)))
	return append(b, t.TxHash...)
}

// decodeTradeKey returns the trade at the instant at with the key
// appendTradeKey wrote, if key is one that a store can compare: finite
// numbers and a hash of valid UTF-8 without NUL (a cursor can be crafted,
// and Postgres refuses a NUL in text: issue 28, item 7).
func decodeTradeKey(at time.Time, key []byte) (store.MarketTrade, bool) {
	const fixed = 2 + 3*8
	if len(key) < fixed || key[0] > 1 || key[1] > 1 {
		return store.MarketTrade{}, false
	}
	n, w := binary.Uvarint(key[fixed:])
	hash := key[min(len(key), fixed+max(w, 0)):]
	if w <= 0 || n != uint64(len(hash)) || !utf8.Valid(hash) || bytes.IndexByte(hash, 0) >= 0 {
		return store.MarketTrade{}, false
	}
	t := store.MarketTrade{Time: at, Outcome: store.OutcomeUp, Side: store.SideBuy, TxHash: string(hash)}
	if key[0] == 1 {
		t.Outcome = store.OutcomeDown
	}
	if key[1] == 1 {
		t.Side = store.SideSell
	}
	for i, x := range []*float64{&t.Price, &t.Size, &t.FeeRateBps} {
		*x = math.Float64frombits(binary.BigEndian.Uint64(key[2+8*i:]))
		if math.IsNaN(*x) || math.IsInf(*x, 0) {
			return store.MarketTrade{}, false
		}
	}
	return t, true
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// WriteCSV writes the page in the export's CSV form (updown export
// --format csv --what trades): one trade a line, newest first.
func (p *marketTradePageBody) WriteCSV(w io.Writer) error {
	enc, err := transfer.NewEncoder(w, transfer.CSV, transfer.Trades)
	if err != nil {
		return err
	}
	for i := range p.trades {
		if err := enc.Encode(transfer.Record{Slug: p.Market.Slug, Trade: &p.trades[i]}); err != nil {
			return err
		}
	}
	return enc.Flush()
}

// WriteParquet writes the page as one Parquet file (DESIGN 13).
func (p *marketTradePageBody) WriteParquet(w io.Writer) error {
	pw := transfer.NewParquetWriter[transfer.ParquetTrade](w)
	for i := range p.trades {
		if err := pw.Write(transfer.ParquetTradeRow(p.Market.Slug, &p.trades[i])); err != nil {
			return err
		}
	}
	return pw.Close()
}

// gaps answers the market's recording gaps.
func (s *Server) gaps(ctx context.Context, m store.Market) (*gapsOutput, error) {
	gaps, err := s.store.ListGaps(ctx, m.Slug)
	if err != nil {
		return nil, s.storeFailure(ctx, "list gaps", err)
	}
	out := &gapsOutput{Body: gapsBody{Market: toMarketJSON(m), Gaps: make([]gapJSON, len(gaps))}}
	for i, g := range gaps {
		out.Body.Gaps[i] = gapJSON{From: formatRecordTime(g.From), To: formatRecordTime(g.To), Kind: g.Kind.Name()}
	}
	return out, nil
}
