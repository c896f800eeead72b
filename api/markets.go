package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/updown/updown/jobs/jsonenc"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// marketJSON is SPEC 2.1's market object, with what the upstream records
// beside SPEC's fields (DESIGN 9) after them.
type marketJSON struct {
	Slug           string   `json:"slug" example:"btc-updown-15m-1777467600"`
	MarketID       string   `json:"market_id"`
	EventID        string   `json:"event_id"`
	MarketType     string   `json:"market_type" enum:"5m,15m,1hr,4hr,24hr"`
	StartTime      string   `json:"start_time" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market: JSON, the export's CSV, JSON Lines and Parquet."`
	EndTime        string   `json:"end_time" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market."`
	CoinPriceStart *float64 `json:"coin_price_start" nullable:"true"`
	CoinPriceEnd   *float64 `json:"coin_price_end" nullable:"true"`
	ConditionID    string   `json:"condition_id"`
	ClobTokenUp    string   `json:"clob_token_up"`
	ClobTokenDown  string   `json:"clob_token_down"`
	Winner         *string  `json:"winner" nullable:"true" enum:"Up,Down,50-50" doc:"Up, Down, or 50-50 for a tie (each share settles at 0.5); null while unresolved."`
	FinalVolume    *float64 `json:"final_volume" nullable:"true"`
	FinalLiquidity *float64 `json:"final_liquidity" nullable:"true"`
	ResolvedAt     *string  `json:"resolved_at" nullable:"true" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market; null while unresolved."`
	CreatedAt      string   `json:"created_at" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market."`
	UpdatedAt      string   `json:"updated_at" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market."`

	UpstreamSlug     *string              `json:"upstream_slug" nullable:"true" doc:"Polymarket's own slug of the market." example:"bitcoin-up-or-down-november-24-2026-1am-et"`
	TakerFeeRate     *float64             `json:"taker_fee_rate" nullable:"true" doc:"Taker fee schedule: fee = shares × taker_fee_rate × (p × (1 − p))^fee_exponent per fill at price p (times p once more where fee_type is crypto_fees); null where the market has none."`
	FeeExponent      *int                 `json:"fee_exponent" nullable:"true" doc:"Exponent of the taker fee schedule; null where the market has none."`
	FeeType          *string              `json:"fee_type" nullable:"true" doc:"The curve of the fee schedule, as Polymarket's Gamma names it: crypto_fees_v2 (the formula of taker_fee_rate), or crypto_fees, Polymarket's first crypto fees (early 2026), whose fee is that formula times p once more (0.25 × p × (p × (1 − p))²); null where unknown." example:"crypto_fees_v2"`
	MakerRebateRate  *float64             `json:"maker_rebate_rate" nullable:"true" doc:"Maker rebate of the fee schedule (Polymarket's feeSchedule.rebateRate, 0.2 on crypto markets): a maker fill at price p earns shares × taker_fee_rate × (p × (1 − p))^fee_exponent × maker_rebate_rate; null where the market has none."`
	TickSize         *float64             `json:"tick_size" nullable:"true" doc:"The market's latest minimum price increment."`
	TickSizeChanges  []tickSizeChangeJSON `json:"tick_size_changes" doc:"Changes of the tick size seen while recording, oldest first."`
	MinOrderSize     *float64             `json:"min_order_size" nullable:"true" doc:"Smallest order, in shares."`
	ResolutionSource *string              `json:"resolution_source" nullable:"true" doc:"Where the winner and the reference prices came from: chainlink, binance-1h, binance-1m-noon-et (Polymarket's sources) or recorded (our recorded prices, until Polymarket publishes); null while unresolved."`
	PriceToBeat      *float64             `json:"price_to_beat" nullable:"true" doc:"The start reference price as Polymarket published it."`
	FinalPrice       *float64             `json:"final_price" nullable:"true" doc:"The end reference price as Polymarket published it."`
	DataSources      []string             `json:"data_sources" doc:"Where the market's snapshots and trades came from: recorder (updown's collector) and the archive formats imported into it (ws-jsonl, pmxt-v2; updown import events), e.g. [\"recorder\", \"pmxt-v2\"]." example:"[\"recorder\",\"pmxt-v2\"]"`
}

// tickSizeChangeJSON is one change of a market's tick size.
type tickSizeChangeJSON struct {
	Time     string  `json:"time" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the market."`
	TickSize float64 `json:"tick_size"`
}

// formatRecordTime writes a stored record's time (a market's, snapshot's,
// trade's, gap's) as every format of the record writes it: UTC to the
// microsecond, the stores' precision (transfer.TimeLayout). Answers' own
// times (timestamp, resets_at) keep formatTime's milliseconds.
func formatRecordTime(t time.Time) string {
	var b [len(transfer.TimeLayout)]byte
	return string(transfer.AppendTime(b[:0], t))
}

func toMarketJSON(m store.Market) marketJSON {
	out := marketJSON{
		Slug: m.Slug, MarketID: m.MarketID, EventID: m.EventID, MarketType: string(m.MarketType),
		StartTime: formatRecordTime(m.StartTime), EndTime: formatRecordTime(m.EndTime),
		CoinPriceStart: m.CoinPriceStart, CoinPriceEnd: m.CoinPriceEnd,
		ConditionID: m.ConditionID, ClobTokenUp: m.ClobTokenUp, ClobTokenDown: m.ClobTokenDown,
		Winner: m.Winner, FinalVolume: m.FinalVolume, FinalLiquidity: m.FinalLiquidity,
		CreatedAt: formatRecordTime(m.CreatedAt), UpdatedAt: formatRecordTime(m.UpdatedAt),
	}
	if m.ResolvedAt != nil {
		s := formatRecordTime(*m.ResolvedAt)
		out.ResolvedAt = &s
	}
	out.UpstreamSlug, out.ResolutionSource = nonEmpty(m.UpstreamSlug), nonEmpty(m.ResolutionSource)
	out.TakerFeeRate, out.FeeExponent, out.MakerRebateRate = m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate
	out.FeeType = nonEmpty(m.FeeType)
	out.TickSize, out.MinOrderSize = m.TickSize, m.MinOrderSize
	out.PriceToBeat, out.FinalPrice = m.PriceToBeat, m.FinalPrice
	out.DataSources = m.DataSources
	if len(out.DataSources) == 0 {
		out.DataSources = []string{store.DataRecorder}
	}
	out.TickSizeChanges = make([]tickSizeChangeJSON, len(m.TickSizeChanges))
	for i, c := range m.TickSizeChanges {
		out.TickSizeChanges[i] = tickSizeChangeJSON{Time: formatRecordTime(c.Time), TickSize: c.TickSize}
	}
	return out
}

// nonEmpty is s, or nil (JSON null) when s is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optionalBool is a boolean query parameter that may be absent: Huma
// parses it (and documents it in /openapi.json) as a boolean, and
// OnParamSet records whether the request gave it.
type optionalBool struct {
	Value bool
	Set   bool
}

func (o *optionalBool) Receiver() reflect.Value { return reflect.ValueOf(o).Elem().Field(0) }

func (o *optionalBool) OnParamSet(isSet bool, _ any) { o.Set = isSet }

// Schema documents (and validates) the parameter as the boolean it is.
func (optionalBool) Schema(huma.Registry) *huma.Schema { return &huma.Schema{Type: huma.TypeBoolean} }

type listMarketsInput struct {
	Coin       string       `query:"coin" required:"true" doc:"BTC, ETH or SOL (case-insensitive)." example:"BTC"`
	Limit      int          `query:"limit" default:"100" minimum:"1" maximum:"100" doc:"Page size."`
	Offset     int          `query:"offset" default:"0" minimum:"0" doc:"Markets to skip."`
	MarketType string       `query:"market_type" doc:"5m, 15m or 1hr (all coins); 4hr or 24hr (BTC only); case-insensitive."`
	Resolved   optionalBool `query:"resolved" doc:"true: resolved markets only; false: active (unresolved) markets only. Also taken, as by include_orderbook: 1 or 0, t or f, True or False, TRUE or FALSE."`
	StartTime  string       `query:"start_time" doc:"Markets starting after this time: epoch milliseconds or ISO 8601."`
	EndTime    string       `query:"end_time" doc:"Markets starting before this time: epoch milliseconds or ISO 8601."`
}

type marketListBody struct {
	Markets []marketJSON `json:"markets" doc:"Markets, newest start_time first."`
	Total   int          `json:"total" doc:"Markets matching the filter inside the plan's data window."`
	Limit   int          `json:"limit"`
	Offset  int          `json:"offset"`
	Warning *string      `json:"warning" nullable:"true" doc:"Set when the plan's data window hid matching markets."`
}

type marketListOutput struct{ Body marketListBody }

type marketSlugInput struct {
	Slug string `path:"slug" doc:"Market slug, <coin>-updown-<market_type>-<epoch_seconds>." example:"btc-updown-15m-1777467600"`
}

type marketOutput struct{ Body marketJSON }

// snapshotPageParams are the paging parameters of both snapshot routes.
type snapshotPageParams struct {
	Limit, Offset    int
	IncludeOrderbook bool
	CSV              bool // the negotiated answer is CSV (s.rowsForm); CSV pages are not cached
	Parquet          bool // the negotiated answer is Parquet (s.rowsForm); not cached either
	Series           seriesParams
}

// MarketSnapshotsQuery holds the page parameters both snapshot routes
// share. Huma reads the parameters of an embedded struct only when its
// type is exported, hence the exported name (as MarketTradesQuery).
type MarketSnapshotsQuery struct {
	Limit            int    `query:"limit" default:"1000" minimum:"1" maximum:"1000" doc:"Page size."`
	Offset           int    `query:"offset" default:"0" minimum:"0" doc:"Snapshots to skip, in the chosen order."`
	IncludeOrderbook bool   `query:"include_orderbook" default:"false" doc:"Include both order books (larger, slower responses)."`
	StartTime        string `query:"start_time" doc:"Snapshots at or after this time: epoch milliseconds or ISO 8601."`
	EndTime          string `query:"end_time" doc:"Snapshots before this time (exclusive): epoch milliseconds or ISO 8601."`
	Order            string `query:"order" enum:"asc,desc" default:"desc" doc:"desc: newest first (SPEC's order); asc: oldest first (case-insensitive)."`
	Cursor           string `query:"cursor" doc:"The previous page's next_cursor, to go on where it ended; same start_time, end_time and order, no offset."`
	Accept           string `header:"Accept" hidden:"true"`
}

// page is the query as the handler reads it, the format negotiated by s.
func (q *MarketSnapshotsQuery) page(s *Server) snapshotPageParams {
	csv, parquet := s.rowsForm(q.Accept)
	return snapshotPageParams{q.Limit, q.Offset, q.IncludeOrderbook, csv, parquet,
		seriesParams{q.StartTime, q.EndTime, q.Order, q.Cursor, q.Offset}}
}

type snapshotsBySlugInput struct {
	Slug string `path:"slug" doc:"Market slug." example:"btc-updown-15m-1777467600"`
	MarketSnapshotsQuery
}

type snapshotsByMarketIDInput struct {
	MarketID string `path:"marketId" doc:"External (prediction-market) market id."`
	MarketSnapshotsQuery
}

type snapshotsOutput struct {
	PageHeaders
	Body *snapshotPageBody
}

// Snapshot pages of markets resolved this long ago are final and may be
// served from the page cache.
const (
	pageCacheBytes = 64 << 20
	pageCacheTTL   = 5 * time.Minute
	settledAfter   = time.Minute
)

func (s *Server) registerMarkets() {
	security := []map[string][]string{{schemeAPIKey: {}}}
	pages := newPageCache(pageCacheBytes, pageCacheTTL, time.Now)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-markets",
		Method:      http.MethodGet,
		Path:        "/v1/markets",
		Summary:     "List markets",
		Description: "Markets of one coin, newest start_time first, within the plan's data window.",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      []int{400, 401, 403, 429, 500, 503},
	}, s.listMarkets)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-market",
		Method:      http.MethodGet,
		Path:        "/v1/markets/{slug}",
		Summary:     "Get a market",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      []int{400, 401, 403, 404, 429, 500, 503},
	}, s.getMarket)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-snapshots",
		Method:      http.MethodGet,
		Path:        "/v1/markets/{slug}/snapshots",
		Summary:     "List a market's snapshots",
		Description: "Snapshots newest first (order=asc: oldest first); order books only with include_orderbook=true. " +
			"start_time (inclusive) and end_time (exclusive) select a time range; `matched` counts its snapshots and `total` all the market's. " +
			"next_cursor continues a walk that new snapshots cannot shift (null after the last page).",
		Tags:     []string{"Markets"},
		Security: security,
		Errors:   []int{400, 401, 403, 404, 429, 500, 503},
	}, func(ctx context.Context, in *snapshotsBySlugInput) (*snapshotsOutput, error) {
		// The market and its snapshots' counts in one round trip where the
		// store can (store.MarketSeriesCounter): the counts key a settled
		// page.
		sc := store.SeriesCount{N: -1}
		m, err := s.findMarket(ctx, in.Slug, func(ctx context.Context, slug string) (store.Market, error) {
			m, c, err := store.GetMarketSeries(ctx, s.cfg.Store, slug)
			sc = c
			return m, err
		}, "market "+quoteID(in.Slug))
		if err != nil {
			return nil, err
		}
		return s.snapshots(ctx, m, sc, in.page(s), pages)
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-snapshots-by-market-id",
		Method:      http.MethodGet,
		Path:        "/v1/markets/by-market-id/{marketId}/snapshots",
		Summary:     "List a market's snapshots by external market id",
		Tags:        []string{"Markets"},
		Security:    security,
		Errors:      []int{400, 401, 403, 404, 429, 500, 503},
	}, func(ctx context.Context, in *snapshotsByMarketIDInput) (*snapshotsOutput, error) {
		m, err := s.findMarket(ctx, in.MarketID, s.store.GetMarketByMarketID, "market with market_id "+quoteID(in.MarketID))
		if err != nil {
			return nil, err
		}
		return s.snapshots(ctx, m, store.SeriesCount{N: -1}, in.page(s), pages)
	})
}

func (s *Server) listMarkets(ctx context.Context, in *listMarketsInput) (*marketListOutput, error) {
	f, err := parseMarketFilter(in)
	if err != nil {
		return nil, err
	}
	p := principalFrom(ctx).Plan
	w, err := s.marketWindow(ctx, p, f.Coin, f.MarketType)
	if err != nil {
		return nil, err
	}
	f.Window = w
	markets, total, err := s.store.ListMarkets(ctx, f)
	if err != nil {
		return nil, s.storeFailure(ctx, "list markets", err)
	}
	out := &marketListOutput{Body: marketListBody{Markets: make([]marketJSON, len(markets)), Total: total, Limit: f.Limit, Offset: f.Offset}}
	for i, m := range markets {
		out.Body.Markets[i] = toMarketJSON(m)
	}
	if w != nil {
		unwindowed := f
		unwindowed.Window = nil
		all, err := s.store.CountMarkets(ctx, unwindowed)
		if err != nil {
			return nil, s.storeFailure(ctx, "count markets", err)
		}
		if hidden := all - total; hidden > 0 {
			msg := windowWarning(p, hidden)
			out.Body.Warning = &msg
		}
	}
	return out, nil
}

func parseMarketFilter(in *listMarketsInput) (store.MarketFilter, error) {
	f := store.MarketFilter{Limit: in.Limit, Offset: in.Offset}
	var ok bool
	if f.Coin, ok = store.ParseCoin(strings.TrimSpace(in.Coin)); !ok {
		return f, invalidParam("query.coin", in.Coin, "coin must be one of BTC, ETH, SOL")
	}
	if in.MarketType != "" {
		f.MarketType = store.MarketType(in.MarketType)
		if !f.MarketType.Valid() {
			return f, invalidParam("query.market_type", in.MarketType, "market_type must be one of 5m, 15m, 1hr, 4hr, 24hr")
		}
		if !f.MarketType.AvailableFor(f.Coin) {
			return f, invalidParam("query.market_type", in.MarketType, "4hr and 24hr markets exist for BTC only")
		}
	}
	if in.Resolved.Set {
		// Huma read it as it reads include_orderbook (strconv.ParseBool),
		// and refused anything else with invalidBoolean's message.
		v := in.Resolved.Value
		f.Resolved = &v
	}
	var err error
	if f.StartAfter, err = parseTimeParam("query.start_time", in.StartTime); err != nil {
		return f, err
	}
	if f.StartBefore, err = parseTimeParam("query.end_time", in.EndTime); err != nil {
		return f, err
	}
	if f.StartAfter != nil && f.StartBefore != nil && !f.StartAfter.Before(*f.StartBefore) {
		return f, invalidParam("query.end_time", in.EndTime, "end_time must be later than start_time")
	}
	f.StartBefore = ceilMicro(f.StartBefore) // "before" a time finer than the stores' (ceilMicro)
	return f, nil
}

// isoLayouts are the ISO 8601 forms parseTimeParam takes: RFC 3339, and
// to the minute (as `date -Iminutes` and Python's isoformat(timespec=
// "minutes") write), each with a zone or without one, which then means UTC;
// and a bare date. A zone offset may also lack its colon (+0200, as
// `date +%FT%T%z` and Python's strftime("%z") write it) or its minutes
// (+02, as Postgres writes a timestamptz), as ISO 8601 allows. (Go reads
// a fraction of a second after the seconds whether or not a layout has one.)
var isoLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04Z07:00", "2006-01-02T15:04",
	"2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05Z07", "2006-01-02T15:04Z0700", "2006-01-02T15:04Z07", "2006-01-02"}

// parseTimeParam reads epoch milliseconds or ISO 8601 (isoLayouts). The
// date and time may be parted by a space (as Python's str(datetime) and
// Postgres write them) or a small t, and UTC be a small z, as RFC 3339
// allows.
//
// Epoch seconds of this century (ten or eleven digits) are refused, with
// the milliseconds they likely meant: read as milliseconds they would be
// days of January 1970, before any market, and the answer the whole
// history as if no time had been given.
func parseTimeParam(loc, v string) (*time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 || ms > 253402300799999 { // year 9999
			return nil, invalidParam(loc, v, "time out of range: use epoch milliseconds between 0 and 253402300799999")
		}
		if ms >= 1e9 && ms < 1e11 {
			return nil, invalidParam(loc, v, fmt.Sprintf("%s looks like epoch seconds (%s): times are epoch milliseconds, %s000, or ISO 8601",
				v, time.Unix(ms, 0).UTC().Format(time.RFC3339), v))
		}
		t := time.UnixMilli(ms).UTC()
		return &t, nil
	}
	sent := v
	if len(v) > 10 && (v[10] == ' ' || v[10] == 't') {
		v = v[:10] + "T" + v[11:]
	}
	if strings.HasSuffix(v, "z") {
		v = v[:len(v)-1] + "Z"
	}
	if t, ok := parseISO(v); ok {
		return &t, nil
	}
	if i := strings.LastIndexByte(v, ' '); i > 0 {
		if _, ok := parseISO(v[:i] + "+" + v[i+1:]); ok {
			// A query string's + means a space: the offset's sign was
			// sent unescaped.
			return nil, invalidParam(loc, sent, plusReadAsSpace+": send the zone offset's + as %2B (e.g. 2026-04-29T15:00:00%2B02:00), or the time in UTC with Z")
		}
	}
	return nil, invalidParam(loc, sent, "expected epoch milliseconds (e.g. 1777467600000) or ISO 8601 (e.g. 2026-04-29T13:00:00Z)")
}

// parseISO reads v in one of isoLayouts, as UTC.
func parseISO(v string) (time.Time, bool) {
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// invalidParam is 400 VALIDATION_ERROR for one parameter, in the same shape
// as Huma's own validation errors.
func invalidParam(loc string, value any, msg string) *Error {
	name := loc[strings.IndexByte(loc, '.')+1:]
	return &Error{Status: http.StatusBadRequest, Code: CodeValidation, Message: "invalid request: " + name + ": " + msg,
		Details: map[string]any{"errors": []map[string]any{{"location": loc, "message": msg, "value": clipValue(value)}}}}
}

// rejectMalformedQuery answers 400 VALIDATION_ERROR, after the caller is
// authenticated as for every other bad parameter, to a query string with
// a malformed percent-escape. Go's query parser drops such a pair without
// a word, so ?start_time=2026-04-29T12:00%zz was answered as if no
// start_time had been given: the whole series instead of an error.
func (s *Server) rejectMalformedQuery(ctx huma.Context, next func(huma.Context)) {
	// Only a % escapes: a query without one (most) needs no look.
	if raw := ctx.URL().RawQuery; strings.IndexByte(raw, '%') < 0 {
		next(ctx)
		return
	}
	if err := checkQueryEscapes(ctx.URL().RawQuery); err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	next(ctx)
}

// rejectRepeatedQuery answers 400 VALIDATION_ERROR, after the caller is
// authenticated as for every other bad parameter, to a query that gives a
// scalar parameter of the operation more than once. Huma reads the first
// value alone, so ?coin=BTC&coin=ETH was answered as BTC without a word.
// Parameters the operation takes as lists, and names it does not take at
// all (ignored, as when sent once), are left alone.
func (s *Server) rejectRepeatedQuery(ctx huma.Context, next func(huma.Context)) {
	// A query without & has one parameter at most: most need no look.
	if raw := ctx.URL().RawQuery; strings.IndexByte(raw, '&') >= 0 {
		if err := checkRepeatedQuery(s.scalarQuery(ctx.Operation()), raw); err != nil {
			r, w := humago.Unwrap(ctx)
			writeError(w, r, s.log, err)
			return
		}
	}
	next(ctx)
}

// scalarQuery returns the names of op's scalar query parameters
// (scalarQueryOf), found once per operation and kept.
func (s *Server) scalarQuery(op *huma.Operation) []string {
	if names, ok := s.scalarQueries.Load(op); ok {
		return names.([]string)
	}
	names, _ := s.scalarQueries.LoadOrStore(op, scalarQueryOf(op))
	return names.([]string)
}

// scalarQueryOf returns the names of op's query parameters that it does
// not take as lists, in its order.
func scalarQueryOf(op *huma.Operation) []string {
	var names []string
	for _, p := range op.Parameters {
		if p.In == "query" && (p.Schema == nil || p.Schema.Type != "array") {
			names = append(names, p.Name)
		}
	}
	return names
}

// checkRepeatedQuery returns the VALIDATION_ERROR of the first of the
// scalar query parameters (an operation's scalarQuery) that the raw query
// gives more than once. It reads the raw query itself: url.ParseQuery
// answers nothing at all past 10,000 parameters, which padding would use
// to slip a repeat through.
func checkRepeatedQuery(scalar []string, raw string) *Error {
	if len(scalar) == 0 {
		return nil
	}
	var values [][]string // scalar's, once one is given
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(key)
		if err != nil {
			continue // rejectMalformedQuery's
		}
		i := slices.Index(scalar, name)
		if i < 0 {
			continue
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		if values == nil {
			values = make([][]string, len(scalar))
		}
		values[i] = append(values[i], value)
	}
	for i, vs := range values {
		if len(vs) > 1 {
			return invalidParam("query."+scalar[i], vs,
				"given "+strconv.Itoa(len(vs))+" times; send it once")
		}
	}
	return nil
}

// checkQueryEscapes returns the VALIDATION_ERROR of the first parameter of
// the raw query whose name or value is not valid percent-encoding.
func checkQueryEscapes(raw string) *Error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(key)
		if err == nil {
			_, err = url.QueryUnescape(value)
		} else {
			name = key
		}
		if err != nil {
			return invalidParam("query."+name, value,
				"not valid URL encoding ("+err.Error()+"): send a literal % as %25")
		}
	}
	return nil
}

func (s *Server) getMarket(ctx context.Context, in *marketSlugInput) (*marketOutput, error) {
	m, err := s.findMarket(ctx, in.Slug, s.store.GetMarket, "market "+quoteID(in.Slug))
	if err != nil {
		return nil, err
	}
	return &marketOutput{Body: toMarketJSON(m)}, nil
}

// findMarket loads a market and checks the caller's plan may see it.
func (s *Server) findMarket(ctx context.Context, key string, get func(context.Context, string) (store.Market, error), what string) (store.Market, error) {
	m, err := get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return m, Errorf(http.StatusNotFound, CodeNotFound, "%s not found", what)
	}
	if err != nil {
		return m, s.storeFailure(ctx, "get market", err)
	}
	if err := s.checkMarketAccess(ctx, principalFrom(ctx).Plan, m); err != nil {
		return m, err
	}
	return m, nil
}

// snapshots answers a page of m's snapshots; sc is m's snapshot counts
// when they were read with m, else N is -1 (counted here when a settled
// page's cache key needs them).
func (s *Server) snapshots(ctx context.Context, m store.Market, sc store.SeriesCount, p snapshotPageParams, pages *pageCache) (*snapshotsOutput, error) {
	sq, err := parseSeriesQuery("snapshots\x00"+m.Slug, p.Series, false)
	if err != nil {
		return nil, err
	}
	settled := !p.CSV && !p.Parquet && m.ResolvedAt != nil && s.now().Sub(*m.ResolvedAt) > settledAfter
	var key string
	if settled {
		// Keyed by the record and by the numbers of snapshots and of
		// snapshots dropped (store.SeriesCount): stores only add
		// snapshots but for a drop of old months, which counts what it
		// takes, so a late one, a snapshots file imported into the market
		// (which leaves its record as it was), or a drop of its month and
		// as many imported again, shows on the next request rather than
		// after the TTL. The counts are one small read (none when they
		// came with the market); the page is not.
		if sc.N < 0 {
			if sc, err = store.CountSeries(ctx, s.cfg.Store, m.Slug); err != nil {
				return nil, s.storeFailure(ctx, "count snapshots", err)
			}
		}
		key = pageKey(m, p, sc, sq)
		if body, ok := pages.get(key); ok {
			return &snapshotsOutput{Body: &snapshotPageBody{encoded: body}}, nil
		}
	}
	body, err := s.snapshotPage(ctx, m, p, sq)
	if err != nil {
		return nil, err
	}
	// Kept only when the page holds what the key counted: a snapshot that
	// arrived between the count and the read is in the page, not the key.
	if settled && key == pageKey(m, p, store.SeriesCount{N: body.Total, Dropped: sc.Dropped}, sq) && pages.admit(key) {
		body.encoded = body.AppendJSON(nil)
		pages.put(key, body.encoded)
	}
	out := &snapshotsOutput{Body: body}
	if p.CSV || p.Parquet {
		out.PageHeaders = rowsPageHeaders(body.NextCursor, body.Total, body.Matched, "")
	}
	return out, nil
}

// pageKey is the page cache key of a snapshot page of m, which has sc.N
// snapshots and had sc.Dropped dropped.
func pageKey(m store.Market, p snapshotPageParams, sc store.SeriesCount, sq seriesQuery) string {
	return fmt.Sprintf("%s|%d|%d|%t|%d|%d|%d|%s", m.Slug, p.Limit, p.Offset, p.IncludeOrderbook, m.UpdatedAt.UnixMicro(), sc.N, sc.Dropped, sq.cacheKey())
}

// snapshotPage reads a page of the market's snapshots: with a cursor, one
// snapshot more than the page tells whether another page follows; without,
// the counts do.
func (s *Server) snapshotPage(ctx context.Context, m store.Market, p snapshotPageParams, sq seriesQuery) (*snapshotPageBody, error) {
	q := store.SnapshotQuery{Limit: p.Limit, Offset: p.Offset, WithBooks: p.IncludeOrderbook,
		Ascending: sq.Ascending, From: sq.From, To: sq.To, After: sq.After}
	q.Limit = sq.readLimit(p.Limit)
	snaps, total, err := s.store.ListSnapshots(ctx, m.Slug, q)
	if err != nil {
		return nil, s.storeFailure(ctx, "list snapshots", err)
	}
	matched := total
	if sq.ranged() {
		if matched, err = s.store.CountSnapshots(ctx, m.Slug, q); err != nil {
			return nil, s.storeFailure(ctx, "count snapshots", err)
		}
	}
	snaps, more := page(sq, snaps, p.Limit, p.Offset, matched)
	body := &snapshotPageBody{Market: toMarketJSON(m), Snapshots: snaps, Total: total, Matched: matched,
		Limit: p.Limit, Offset: p.Offset, books: p.IncludeOrderbook, market: m}
	if more && len(snaps) > 0 {
		body.NextCursor = sq.cursor(snaps[len(snaps)-1].Time)
	}
	return body, nil
}

// snapshotPageBody is the snapshots response. It writes its own JSON (see
// AppendJSON); the exported fields and tags document the shape.
type snapshotPageBody struct {
	Market    marketJSON       `json:"market"`
	Snapshots []store.Snapshot `json:"-"`
	Total     int              `json:"total" doc:"All snapshots the market has."`
	Matched   int              `json:"matched"`
	Limit     int              `json:"limit"`
	Offset    int              `json:"offset"`
	// NextCursor continues the walk; nil after the last page.
	NextCursor *string `json:"next_cursor"`
	books      bool
	market     store.Market // for the Parquet form
	// encoded, when set, is the page already written (from the cache).
	encoded []byte
}

// snapshotJSON documents SPEC 2.2's snapshot in the OpenAPI schema.
type snapshotJSON struct {
	Time          string    `json:"time" format:"date-time" doc:"UTC with microseconds (six fraction digits), as in every format of the snapshot: JSON, CSV (Accept: text/csv) and Parquet (a microsecond timestamp)." example:"2026-04-29T13:00:00.300000Z"`
	CoinPrice     float64   `json:"coin_price"`
	PriceUp       float64   `json:"price_up" minimum:"0" maximum:"1"`
	PriceDown     float64   `json:"price_down" minimum:"0" maximum:"1"`
	OrderbookUp   *bookJSON `json:"orderbook_up,omitempty" doc:"Only with include_orderbook=true."`
	OrderbookDown *bookJSON `json:"orderbook_down,omitempty" doc:"Only with include_orderbook=true."`
}

type bookJSON struct {
	Asks []levelJSON `json:"asks"`
	Bids []levelJSON `json:"bids"`
}

type levelJSON struct {
	Size  float64 `json:"size"`
	Price float64 `json:"price"`
}

// Schema documents the page with its snapshots array.
func (p *snapshotPageBody) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflectTypeOf[snapshotPage](), true, "SnapshotPage")
}

type snapshotPage struct {
	Market     marketJSON     `json:"market"`
	Snapshots  []snapshotJSON `json:"snapshots" doc:"Snapshots, newest first (oldest first with order=asc)."`
	Total      int            `json:"total" doc:"All snapshots the market has."`
	Matched    int            `json:"matched" doc:"Snapshots in the start_time/end_time range (total when neither is given)."`
	Limit      int            `json:"limit"`
	Offset     int            `json:"offset"`
	NextCursor *string        `json:"next_cursor" nullable:"true" doc:"Pass as cursor for the next page; null after the last."`
}

// MarshalJSON keeps encoding/json callers (tests, the job results) on the
// same bytes as the fast path.
func (p *snapshotPageBody) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// WriteTo writes the page: its encoded bytes as they are when the cache
// had them, else as AppendJSON writes it.
func (p *snapshotPageBody) WriteTo(w io.Writer) (int64, error) {
	if p.encoded != nil {
		n, err := w.Write(p.encoded)
		return int64(n), err
	}
	// A page nobody keeps (a live market's) is written in a buffer used
	// again by the next one: a megabyte of fresh memory a request costs
	// more in page faults than the encoding (BenchmarkSnapshotPage).
	buf := pageBuffers.Get().(*[]byte)
	*buf = p.AppendJSON((*buf)[:0])
	n, err := w.Write(*buf)
	if cap(*buf) <= maxPooledPage {
		pageBuffers.Put(buf)
	}
	return int64(n), err
}

// pageBuffers holds the buffers of pages written and not kept; one larger
// than maxPooledPage (a page with deep books) is left to the collector.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledPage = 4 << 20

// AppendJSON writes the page without reflection: a page of 1,000 snapshots
// with books is ~40,000 levels.
func (p *snapshotPageBody) AppendJSON(b []byte) []byte {
	if p.encoded != nil {
		return append(b, p.encoded...)
	}
	// Size the buffer once: regrowing a megabyte page costs more than
	// writing it.
	per := 110
	if p.books {
		per = 1500
	}
	b = slices.Grow(b, 1024+per*len(p.Snapshots))
	mk, _ := marshalJSON(p.Market) // a flat struct of strings and numbers: cannot fail
	b = append(b, `{"market":`...)
	b = append(b, mk...)
	b = append(b, `,"snapshots":[`...)
	for i := range p.Snapshots {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSnapshot(b, &p.Snapshots[i], p.books)
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, `,"matched":`...)
	b = strconv.AppendInt(b, int64(p.Matched), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(p.Offset), 10)
	return append(appendCursor(b, p.NextCursor), '}')
}

// appendCursor writes the next_cursor field (a cursor is URL-safe base64:
// nothing to escape).
func appendCursor(b []byte, c *string) []byte {
	b = append(b, `,"next_cursor":`...)
	if c == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = append(b, *c...)
	return append(b, '"')
}

func appendSnapshot(b []byte, s *store.Snapshot, books bool) []byte {
	b = append(b, `{"time":"`...)
	b = transfer.AppendTime(b, s.Time)
	b = append(b, `","coin_price":`...)
	b = jsonenc.AppendFloat(b, s.CoinPrice)
	b = append(b, `,"price_up":`...)
	b = jsonenc.AppendFloat(b, s.PriceUp)
	b = append(b, `,"price_down":`...)
	b = jsonenc.AppendFloat(b, s.PriceDown)
	if books {
		b = append(b, `,"orderbook_up":`...)
		b = appendBook(b, s.BookUp)
		b = append(b, `,"orderbook_down":`...)
		b = appendBook(b, s.BookDown)
	}
	return append(b, '}')
}

// appendBook writes a book; a snapshot without a recorded book gets empty
// sides, so the field is always an object when asked for.
func appendBook(b []byte, bk *store.Book) []byte {
	var asks, bids []store.Level
	if bk != nil {
		asks, bids = bk.Asks, bk.Bids
	}
	b = append(b, `{"asks":`...)
	b = appendLevels(b, asks)
	b = append(b, `,"bids":`...)
	b = appendLevels(b, bids)
	return append(b, '}')
}

func appendLevels(b []byte, ls []store.Level) []byte {
	b = append(b, '[')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"size":`...)
		b = jsonenc.AppendFloat(b, l.Size)
		b = append(b, `,"price":`...)
		b = jsonenc.AppendFloat(b, l.Price)
		b = append(b, '}')
	}
	return append(b, ']')
}
