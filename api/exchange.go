package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/jsonenc"
	"github.com/updown/updown/store"
)

// Exchange spot and futures data (SPEC 4.3). History comes from the store
// (BTCUSDT only); the latest depth and the recent trades come from the
// LiveExchange (Redis in production), which the collector keeps current.
//
// These answers carry exactly SPEC's fields: `data` (and `total`, `limit`,
// `offset` on lists), without the `success`/`timestamp` wrapper of replay
// answers. Errors use the SPEC 7 envelope as everywhere.

// historySymbol is the one pair with depth history (SPEC 4.3).
const historySymbol = "BTCUSDT"

// historyCoin is the path segment of the history endpoints.
const historyCoin = "btc"

// kinds are the exchange markets, in path order.
var kinds = [...]store.ExchangeKind{store.Spot, store.Future}

// kindName is how messages name a market kind: "spot" or "futures".
func kindName(k store.ExchangeKind) string {
	if k == store.Future {
		return "futures"
	}
	return "spot"
}

// Rounding of SPEC 2.4 and 2.5, applied at the edge only: the stores keep
// what the exchange sent.
const (
	pricePlaces    = 2
	quantityPlaces = 5
)

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5}

// round rounds x to places decimals, halves away from zero. Dividing the
// rounded integer by an exact power of ten gives the float64 nearest the
// decimal, so 95123.456789 is written 95123.46, not 95123.46000000001 (and
// appendFloat writes such a value on its fixed-point fast path).
// Negative zero becomes 0; non-finite values pass through (appendFloat
// writes them as 0).
//
// A half is a half of the decimal x stands for (its shortest form, as
// written in JSON): 76600.025, the mid of a one-cent spread, is held as
// 76600.0249999…, which rounded as a float went down to the bid, where
// 76600.035 went up to the ask.
func round(x float64, places int) float64 {
	p := pow10[places]
	y := x * p
	r := math.Round(y)
	// x·p is within a few units in the last place of the decimal's, so
	// only a y that close to a half can be a decimal half.
	if f := math.Abs(y - math.Trunc(y)); math.Abs(f-0.5) <= 1e-12*math.Abs(y)+1e-9 && decimalHalf(x, places) {
		r = math.Trunc(y) + math.Copysign(1, y)
	}
	r /= p
	if r == 0 {
		return 0
	}
	return r
}

// decimalHalf reports whether x's shortest decimal form has exactly
// places+1 decimals, the last a 5: a half at that place.
func decimalHalf(x float64, places int) bool {
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], x, 'f', -1, 64)
	dot := bytes.IndexByte(s, '.')
	return dot >= 0 && len(s)-dot-1 == places+1 && s[len(s)-1] == '5'
}

// depthHistoryInput is the query of /v1/btc/{spot,future}/snapshots.
type depthHistoryInput struct {
	Limit     int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Page size."`
	Offset    int    `query:"offset" default:"0" minimum:"0" doc:"Snapshots to skip, in the chosen order."`
	StartTime string `query:"start_time" doc:"Snapshots at or after this time: UTC epoch milliseconds (ISO 8601 also accepted)." example:"1777467600000"`
	EndTime   string `query:"end_time" doc:"Snapshots at or before this time: UTC epoch milliseconds (ISO 8601 also accepted)." example:"1777471200000"`
	Order     string `query:"order" enum:"asc,desc" default:"desc" doc:"desc: newest first (SPEC's order); asc: oldest first (case-insensitive)."`
	Cursor    string `query:"cursor" doc:"The previous page's next_cursor, to go on where it ended; same start_time, end_time and order, no offset."`
	Accept    string `header:"Accept" hidden:"true"`
}

// coinInput is the path of the latest-data endpoints.
type coinInput struct {
	Coin string `path:"coin" doc:"btc, eth or sol (case-insensitive)." example:"btc"`
}

type tradesInput struct {
	Coin  string `path:"coin" doc:"btc, eth or sol (case-insensitive)." example:"btc"`
	Limit int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Number of trades, newest first."`
}

type depthHistoryOutput struct {
	PageHeaders
	Body *depthPageBody
}
type latestDepthOutput struct {
	LastModified string `header:"Last-Modified" doc:"When the collector took this depth from Binance: a collector that stopped hearing from Binance leaves the last one here, and this says how old it is."`
	Body         *latestDepthBody
}
type tradesOutput struct{ Body *tradesBody }
type tradeOutput struct {
	LastModified string `header:"Last-Modified" doc:"When the trade happened."`
	Body         *tradeBody
}

func (s *Server) registerExchange() {
	security := []map[string][]string{{schemeAPIKey: {}}}
	reg := s.api.OpenAPI().Components.Schemas
	errs := []int{400, 401, 403, 404, 429, 500, 503}
	// op is an exchange operation: a GET behind an API key.
	op := func(id, path, summary, description string) huma.Operation {
		return huma.Operation{OperationID: id, Method: http.MethodGet, Path: path, Summary: summary, Description: description,
			Tags: []string{"Exchange"}, Security: security, Errors: errs}
	}
	for _, k := range kinds {
		name := kindName(k)
		huma.Register(s.api, op("list-btc-"+string(k)+"-snapshots", "/v1/"+historyCoin+"/"+string(k)+"/snapshots",
			"List BTCUSDT "+name+" depth snapshots",
			"Historical order-book depth of BTCUSDT "+name+", newest first, with numbers as recorded. "+
				"Only BTC has history: other coins answer 404 RESOURCE_NOT_FOUND. start_time and end_time are inclusive. "+
				"PRO and SUITE plans see the last 31 days: without start_time the history begins at the window's start; "+
				"a start_time (or end_time) before it is answered with the part inside the window (possibly none) "+
				"and a `warning` naming where the window begins. `warning` is absent otherwise. "+
				"STARTER and PRO_TRIAL plans get 403 TIER_ACCESS_DENIED."),
			func(ctx context.Context, in *depthHistoryInput) (*depthHistoryOutput, error) {
				return s.depthHistory(ctx, k, in)
			})
		huma.Register(s.api, op("get-"+string(k)+"-latest-depth", "/v1/{coin}/"+string(k)+"/latest",
			"Latest "+name+" depth",
			"The latest order-book depth of the coin's USDT "+name+" market: prices rounded to 2 decimals, "+
				"quantities to 5. 404 RESOURCE_NOT_FOUND when none is recorded yet or the coin is unknown."),
			func(ctx context.Context, in *coinInput) (*latestDepthOutput, error) {
				return s.latestDepth(ctx, k, in)
			})
		pageDoc, oneDoc := reflect.TypeFor[spotTradesDoc](), reflect.TypeFor[spotTradeDoc]()
		if k == store.Future {
			pageDoc, oneDoc = reflect.TypeFor[futureTradesDoc](), reflect.TypeFor[futureTradeDoc]()
		}
		o := op("list-"+string(k)+"-trades", "/v1/{coin}/"+string(k)+"/trades",
			"Recent "+name+" trades",
			"The most recent trades of the coin's USDT "+name+" market, newest first; an empty list when none are recorded yet. "+
				tradeDocNote(k))
		o.Responses = jsonResponse("Recent trades", reg.Schema(pageDoc, true, ""))
		huma.Register(s.api, o, func(ctx context.Context, in *tradesInput) (*tradesOutput, error) {
			return s.recentTrades(ctx, k, in)
		})
		o = op("get-"+string(k)+"-latest-trade", "/v1/{coin}/"+string(k)+"/trade/latest",
			"Latest "+name+" trade",
			"The most recent trade of the coin's USDT "+name+" market; 404 RESOURCE_NOT_FOUND when none is recorded yet. "+
				tradeDocNote(k))
		o.Responses = jsonResponse("Latest trade", reg.Schema(oneDoc, true, ""))
		huma.Register(s.api, o, func(ctx context.Context, in *coinInput) (*tradeOutput, error) {
			return s.latestTrade(ctx, k, in)
		})
	}
}

// tradeDocNote is what a trade endpoint's description says of the trade
// object.
func tradeDocNote(k store.ExchangeKind) string {
	const rounding = "price is rounded to 2 decimals, qty and quoteQty to 5"
	if k == store.Future {
		return "Trades are Binance's futures trades: " + rounding + "; there is no isBestMatch field."
	}
	return "Trades are Binance's spot trades: " + rounding + "; isBestMatch is present whenever the exchange reported it."
}

// exchangeAccess answers 403 TIER_ACCESS_DENIED for plans without exchange
// data (SPEC 5.3, DESIGN 4).
func exchangeAccess(p Plan) error {
	if p.Exchange {
		return nil
	}
	return tierDenied(p, store.Pro, "exchange spot and futures data needs the PRO, SUITE or ENTERPRISE plan; the %s plan does not include it", p.Tier)
}

// parseCoin reads a coin path segment, which withFoldedCase has
// lower-cased when it is a coin in any case. An unknown coin is 404: the
// path names a resource that does not exist.
func parseCoin(v string) (store.Coin, error) {
	c, ok := store.ParseCoin(v)
	if !ok {
		return "", Errorf(http.StatusNotFound, CodeNotFound, "unknown coin %s: exchange data exists for btc, eth and sol", quoteID(v))
	}
	return c, nil
}

// liveSeries checks the plan, the coin and that live data is configured,
// in that order, and returns the coin.
func (s *Server) liveSeries(ctx context.Context, coin string) (store.Coin, error) {
	if err := exchangeAccess(principalFrom(ctx).Plan); err != nil {
		return "", err
	}
	c, err := parseCoin(coin)
	if err != nil {
		return "", err
	}
	if s.cfg.Live == nil {
		// A deployment without Redis: say so rather than pretend nothing
		// was recorded.
		return "", Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"live exchange data (latest depth and trades) is not configured on this server (request id %s)", RequestID(ctx))
	}
	return c, nil
}

// DefaultLiveTimeout is Config.LiveTimeout's default. A read of the live
// data is one Redis command that answers in a millisecond or so; a second
// is room for a busy server, and short enough that a stalled one is a
// prompt 503.
const DefaultLiveTimeout = time.Second

// liveRead bounds one read of the live data with Config.LiveTimeout.
func (s *Server) liveRead(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.LiveTimeout)
}

// series names a coin and kind for messages: "eth futures".
func series(c store.Coin, k store.ExchangeKind) string {
	return strings.ToLower(string(c)) + " " + kindName(k)
}

func (s *Server) latestDepth(ctx context.Context, k store.ExchangeKind, in *coinInput) (*latestDepthOutput, error) {
	c, err := s.liveSeries(ctx, in.Coin)
	if err != nil {
		return nil, err
	}
	rctx, cancel := s.liveRead(ctx)
	defer cancel()
	d, err := s.cfg.Live.LatestDepth(rctx, c, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "no depth recorded yet for %s", series(c, k))
	}
	if err != nil {
		return nil, s.storeFailure(ctx, "read latest depth", err)
	}
	return &latestDepthOutput{LastModified: httpDate(d.Time), Body: &latestDepthBody{d: d}}, nil
}

// httpDate is t as an HTTP date (Last-Modified), "" for no time.
func httpDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(http.TimeFormat)
}

func (s *Server) recentTrades(ctx context.Context, k store.ExchangeKind, in *tradesInput) (*tradesOutput, error) {
	c, err := s.liveSeries(ctx, in.Coin)
	if err != nil {
		return nil, err
	}
	rctx, cancel := s.liveRead(ctx)
	defer cancel()
	trades, err := s.cfg.Live.RecentTrades(rctx, c, k, in.Limit)
	if err != nil {
		return nil, s.storeFailure(ctx, "read recent trades", err)
	}
	return &tradesOutput{Body: &tradesBody{trades: trades, limit: in.Limit, spot: k == store.Spot}}, nil
}

func (s *Server) latestTrade(ctx context.Context, k store.ExchangeKind, in *coinInput) (*tradeOutput, error) {
	c, err := s.liveSeries(ctx, in.Coin)
	if err != nil {
		return nil, err
	}
	rctx, cancel := s.liveRead(ctx)
	defer cancel()
	trades, err := s.cfg.Live.RecentTrades(rctx, c, k, 1)
	if err != nil {
		return nil, s.storeFailure(ctx, "read latest trade", err)
	}
	if len(trades) == 0 {
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "no trades recorded yet for %s", series(c, k))
	}
	return &tradeOutput{LastModified: httpDate(trades[0].Time), Body: &tradeBody{trade: trades[0], spot: k == store.Spot}}, nil
}

func (s *Server) depthHistory(ctx context.Context, k store.ExchangeKind, in *depthHistoryInput) (*depthHistoryOutput, error) {
	p := principalFrom(ctx).Plan
	if err := exchangeAccess(p); err != nil {
		return nil, err
	}
	sq, err := parseSeriesQuery("depth\x00"+string(k), seriesParams{in.StartTime, in.EndTime, in.Order, in.Cursor, in.Offset}, true)
	if err != nil {
		return nil, err
	}
	from, to := sq.From, sq.To
	f := store.DepthFilter{Symbol: historySymbol, Kind: k, From: from, To: to, Limit: in.Limit, Offset: in.Offset,
		Ascending: sq.Ascending, After: sq.After}
	f.Limit = sq.readLimit(in.Limit)
	var warning string
	if p.WindowDays > 0 {
		f.MinTime = s.now().Add(-time.Duration(p.WindowDays) * 24 * time.Hour).Truncate(time.Millisecond)
		warning = historyWindowWarning(p, f.MinTime, from, to)
	}
	snaps, total, err := s.store.ListDepth(ctx, f)
	if err != nil {
		return nil, s.storeFailure(ctx, "list depth history", err)
	}
	snaps, more := page(sq, snaps, in.Limit, in.Offset, total)
	body := &depthPageBody{Data: snaps, Total: total, Limit: in.Limit, Offset: in.Offset, Warning: warning}
	if more && len(snaps) > 0 {
		body.NextCursor = sq.cursor(snaps[len(snaps)-1].Time)
	}
	out := &depthHistoryOutput{Body: body}
	if s.wantsRows(in.Accept) {
		out.PageHeaders = rowsPageHeaders(body.NextCursor, body.Total, -1, warning)
	}
	return out, nil
}

// historyWindowWarning says what the plan's window cut from a request whose
// range reaches before it ("" when it does not). It depends on the request
// alone, so it costs no query.
func historyWindowWarning(p Plan, minTime time.Time, from, to *time.Time) string {
	switch {
	case to != nil && to.Before(minTime):
		return fmt.Sprintf("end_time is before the %s plan's %d-day window of exchange history, which begins at %s: no snapshots are served; upgrade at %s",
			p.Tier, p.WindowDays, formatTime(minTime), upgradeURL)
	case from != nil && from.Before(minTime):
		return fmt.Sprintf("start_time is before the %s plan's %d-day window of exchange history: snapshots from %s on are served; upgrade at %s",
			p.Tier, p.WindowDays, formatTime(minTime), upgradeURL)
	}
	return ""
}

// exchangeHistoryNotFound answers GET /v1/{coin}/{spot,future}/snapshots
// for coins without history, which the mux cannot route beside
// /v1/markets/{slug}/snapshots: 404 saying which coin has history. It
// returns nil for every other path. A coin in another case has been
// lower-cased before the mux (withFoldedCase): /v1/BTC/spot/snapshots is
// the history's route, not this.
func exchangeHistoryNotFound(path string) *Error {
	parts := strings.Split(strings.TrimPrefix(path, "/v1/"), "/")
	if !strings.HasPrefix(path, "/v1/") || len(parts) != 3 || parts[2] != "snapshots" || !store.ExchangeKind(parts[1]).Valid() {
		return nil
	}
	coin, kind := parts[0], parts[1]
	if coin == historyCoin {
		return nil // the router's own
	}
	hist := "/v1/" + historyCoin + "/" + kind + "/snapshots"
	switch _, ok := store.ParseCoin(coin); {
	case ok:
		live := "/v1/" + coin + "/" + kind
		return Errorf(http.StatusNotFound, CodeNotFound,
			"depth history is kept for btc only (%s); %s has latest depth and recent trades at %s/latest and %s/trades",
			hist, coin, live, live)
	default:
		return Errorf(http.StatusNotFound, CodeNotFound,
			"unknown coin %s: exchange data exists for btc, eth and sol, depth history for btc only (%s)", quoteID(coin), hist)
	}
}

// Documented shapes (SPEC 2.3-2.5). The bodies below write the same JSON
// by hand; TestExchangeBodiesMatchDocs holds them to these types.

type depthLevelJSON struct {
	Price    float64 `json:"price"`
	Quantity float64 `json:"quantity"`
}

type depthSnapshotJSON struct {
	Symbol       string           `json:"symbol" example:"BTCUSDT"`
	TimeEpochMs  int64            `json:"time_epoch_ms" doc:"UTC epoch milliseconds."`
	CoinPrice    float64          `json:"coin_price"`
	Bids         []depthLevelJSON `json:"bids" doc:"Best (highest) first."`
	Asks         []depthLevelJSON `json:"asks" doc:"Best (lowest) first."`
	LastUpdateID int64            `json:"last_update_id"`
}

type depthPage struct {
	Data       []depthSnapshotJSON `json:"data" doc:"Depth snapshots, newest first (oldest first with order=asc)."`
	Total      int                 `json:"total" doc:"Snapshots matching the filters inside the plan's data window."`
	Limit      int                 `json:"limit"`
	Offset     int                 `json:"offset"`
	NextCursor *string             `json:"next_cursor" nullable:"true" doc:"Pass as cursor for the next page; null after the last."`
	Warning    string              `json:"warning,omitempty" doc:"Present only when start_time or end_time reached before the plan's 31-day window."`
}

type latestDepthJSON struct {
	CoinPrice float64          `json:"coin_price" doc:"Rounded to 2 decimals."`
	Bids      []depthLevelJSON `json:"bids" doc:"Best (highest) first; price rounded to 2 decimals, quantity to 5."`
	Asks      []depthLevelJSON `json:"asks" doc:"Best (lowest) first; price rounded to 2 decimals, quantity to 5."`
}

type latestDepthDoc struct {
	Data latestDepthJSON `json:"data"`
}

type spotTradeJSON struct {
	ID           int64   `json:"id" doc:"Exchange trade id."`
	Price        float64 `json:"price" doc:"Rounded to 2 decimals."`
	Qty          float64 `json:"qty" doc:"Base quantity, rounded to 5 decimals."`
	QuoteQty     float64 `json:"quoteQty" doc:"Rounded to 5 decimals."`
	Time         int64   `json:"time" doc:"UTC epoch milliseconds."`
	IsBuyerMaker bool    `json:"isBuyerMaker"`
	IsBestMatch  *bool   `json:"isBestMatch,omitempty" doc:"Spot only; present whenever the exchange reported it (Binance always does)."`
}

type futureTradeJSON struct {
	ID           int64   `json:"id" doc:"Exchange trade id."`
	Price        float64 `json:"price" doc:"Rounded to 2 decimals."`
	Qty          float64 `json:"qty" doc:"Base quantity, rounded to 5 decimals."`
	QuoteQty     float64 `json:"quoteQty" doc:"Rounded to 5 decimals."`
	Time         int64   `json:"time" doc:"UTC epoch milliseconds."`
	IsBuyerMaker bool    `json:"isBuyerMaker"`
}

type spotTradesDoc struct {
	Data  []spotTradeJSON `json:"data" doc:"Trades, newest (highest id) first."`
	Total int             `json:"total" doc:"Number of trades returned."`
	Limit int             `json:"limit"`
}

type futureTradesDoc struct {
	Data  []futureTradeJSON `json:"data" doc:"Trades, newest (highest id) first."`
	Total int               `json:"total" doc:"Number of trades returned."`
	Limit int               `json:"limit"`
}

type spotTradeDoc struct {
	Data spotTradeJSON `json:"data"`
}

type futureTradeDoc struct {
	Data futureTradeJSON `json:"data"`
}

// depthPageBody is the history response.
type depthPageBody struct {
	Data                 []store.DepthSnapshot
	Total, Limit, Offset int
	Warning              string
	NextCursor           *string // nil after the last page
}

// Schema documents the page.
func (*depthPageBody) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeFor[depthPage](), true, "DepthSnapshotPage")
}

// MarshalJSON keeps encoding/json callers on the same bytes as the fast
// path.
func (p *depthPageBody) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// AppendJSON writes the page without reflection: 1,000 snapshots of 20
// levels a side are 40,000 levels.
func (p *depthPageBody) AppendJSON(b []byte) []byte {
	levels := 0
	for i := range p.Data {
		levels += len(p.Data[i].Bids) + len(p.Data[i].Asks)
	}
	b = slices.Grow(b, 64+len(p.Warning)+snapshotBytes*len(p.Data)+levelBytes*levels)
	b = append(b, `{"data":[`...)
	for i := range p.Data {
		if i > 0 {
			b = append(b, ',')
		}
		d := &p.Data[i]
		b = append(b, `{"symbol":`...)
		b = jsonenc.AppendString(b, d.Symbol)
		b = append(b, `,"time_epoch_ms":`...)
		b = strconv.AppendInt(b, d.Time.UnixMilli(), 10)
		b = append(b, `,"coin_price":`...)
		b = jsonenc.AppendFloat(b, d.CoinPrice)
		b = append(b, `,"bids":`...)
		b = appendDepthLevels(b, d.Bids, false)
		b = append(b, `,"asks":`...)
		b = appendDepthLevels(b, d.Asks, false)
		b = append(b, `,"last_update_id":`...)
		b = strconv.AppendInt(b, d.LastUpdateID, 10)
		b = append(b, '}')
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(p.Offset), 10)
	b = appendCursor(b, p.NextCursor)
	if p.Warning != "" {
		b = append(b, `,"warning":`...)
		b = jsonenc.AppendString(b, p.Warning)
	}
	return append(b, '}')
}

// Typical encoded sizes, to size a body's buffer once instead of growing
// it through several copies: a 100-trade page is about 13 KB.
const (
	tradeBytes    = 136 // {"id":4123456789,"price":95123.46,...,"isBestMatch":true}
	levelBytes    = 44  // {"price":95123.45,"quantity":0.12346}
	snapshotBytes = 140 // a history snapshot without its levels
)

// appendDepthLevels writes levels as [{price, quantity}], rounded per
// SPEC 2.4 when rounded is set.
func appendDepthLevels(b []byte, ls []store.DepthLevel, rounded bool) []byte {
	b = append(b, '[')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		price, qty := l.Price, l.Quantity
		if rounded {
			price, qty = round(price, pricePlaces), round(qty, quantityPlaces)
		}
		b = append(b, `{"price":`...)
		b = jsonenc.AppendFloat(b, price)
		b = append(b, `,"quantity":`...)
		b = jsonenc.AppendFloat(b, qty)
		b = append(b, '}')
	}
	return append(b, ']')
}

// latestDepthBody is the latest-depth response.
type latestDepthBody struct{ d store.DepthSnapshot }

// Schema documents the response.
func (*latestDepthBody) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeFor[latestDepthDoc](), true, "LatestDepth")
}

func (l *latestDepthBody) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }

// AppendJSON writes SPEC 2.4's object under data.
func (l *latestDepthBody) AppendJSON(b []byte) []byte {
	b = slices.Grow(b, 64+levelBytes*(len(l.d.Bids)+len(l.d.Asks)))
	b = append(b, `{"data":{"coin_price":`...)
	b = jsonenc.AppendFloat(b, round(l.d.CoinPrice, pricePlaces))
	b = append(b, `,"bids":`...)
	b = appendDepthLevels(b, l.d.Bids, true)
	b = append(b, `,"asks":`...)
	b = appendDepthLevels(b, l.d.Asks, true)
	return append(b, `}}`...)
}

// tradesBody is the recent-trades response. Its schema, which differs
// between spot and futures, is given on the operation.
type tradesBody struct {
	trades []store.Trade
	limit  int
	spot   bool
}

// Schema is a placeholder: the operation documents the kind's own shape.
func (*tradesBody) Schema(huma.Registry) *huma.Schema { return &huma.Schema{Type: huma.TypeObject} }

func (t *tradesBody) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON writes {data, total, limit}; total is the number returned.
func (t *tradesBody) AppendJSON(b []byte) []byte {
	b = slices.Grow(b, 64+tradeBytes*len(t.trades))
	b = append(b, `{"data":[`...)
	for i := range t.trades {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTrade(b, &t.trades[i], t.spot)
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(len(t.trades)), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(t.limit), 10)
	return append(b, '}')
}

// tradeBody is the latest-trade response; its schema is on the operation.
type tradeBody struct {
	trade store.Trade
	spot  bool
}

// Schema is a placeholder: the operation documents the kind's own shape.
func (*tradeBody) Schema(huma.Registry) *huma.Schema { return &huma.Schema{Type: huma.TypeObject} }

func (t *tradeBody) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON writes {data: trade}.
func (t *tradeBody) AppendJSON(b []byte) []byte {
	b = append(b, `{"data":`...)
	b = appendTrade(b, &t.trade, t.spot)
	return append(b, '}')
}

// appendTrade writes SPEC 2.5's trade object. isBestMatch is written for
// spot trades only, and only when the exchange reported it: futures trades
// never have the field (absent, not null or false).
func appendTrade(b []byte, t *store.Trade, spot bool) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, t.ID, 10)
	b = append(b, `,"price":`...)
	b = jsonenc.AppendFloat(b, round(t.Price, pricePlaces))
	b = append(b, `,"qty":`...)
	b = jsonenc.AppendFloat(b, round(t.Qty, quantityPlaces))
	b = append(b, `,"quoteQty":`...)
	b = jsonenc.AppendFloat(b, round(t.QuoteQty, quantityPlaces))
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, t.Time.UnixMilli(), 10)
	b = append(b, `,"isBuyerMaker":`...)
	b = strconv.AppendBool(b, t.IsBuyerMaker)
	if spot && t.IsBestMatch != nil {
		b = append(b, `,"isBestMatch":`...)
		b = strconv.AppendBool(b, *t.IsBestMatch)
	}
	return append(b, '}')
}
