package transfer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/updown/updown/store"
)

// jsonlEncoder writes JSON Lines by appending into one buffer: an export is
// millions of snapshots, and encoding/json's reflection would cost more
// than reading them from the store.
type jsonlEncoder struct {
	w   *bufio.Writer
	buf []byte
}

func newJSONLEncoder(w io.Writer) *jsonlEncoder {
	return &jsonlEncoder{w: bufio.NewWriterSize(w, 1<<16)}
}

func (e *jsonlEncoder) Flush() error { return e.w.Flush() }

func (e *jsonlEncoder) Encode(r Record) error {
	if err := checkFinite(r); err != nil {
		return err
	}
	b := e.buf[:0]
	var err error
	switch {
	case r.Market != nil:
		b, err = appendMarketJSON(b, r.Market)
	case r.Snapshot != nil:
		b, err = appendSnapshotJSON(b, r.Slug, r.Snapshot)
	case r.Trade != nil:
		b, err = appendTradeJSON(b, r.Slug, r.Trade)
	case r.Gap != nil:
		b = appendGapJSON(b, r.Slug, r.Gap)
	default:
		return errors.New("transfer: empty record")
	}
	if err != nil {
		return fmt.Errorf("transfer: encode: %w", err)
	}
	b = append(b, '\n')
	e.buf = b
	_, err = e.w.Write(b)
	return err
}

// jsonObj appends the fields of one JSON object, keeping the first error.
type jsonObj struct {
	b   []byte
	err error
	n   int
}

func (o *jsonObj) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObj) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObj) num(k string, v float64) {
	o.key(k)
	var err error
	o.b, err = appendNum(o.b, v)
	if err != nil && o.err == nil {
		o.err = fmt.Errorf("%s: %w", k, err)
	}
}

// null writes the field k as null.
func (o *jsonObj) null(k string) {
	o.key(k)
	o.b = append(o.b, "null"...)
}

func (o *jsonObj) optNum(k string, v *float64) {
	if v == nil {
		o.null(k)
		return
	}
	o.num(k, *v)
}

func (o *jsonObj) optStr(k string, v *string) {
	if v == nil {
		o.null(k)
		return
	}
	o.str(k, *v)
}

// optText writes "" as null: a text field the upstream did not give.
func (o *jsonObj) optText(k, v string) {
	if v == "" {
		o.null(k)
		return
	}
	o.str(k, v)
}

func (o *jsonObj) optInt(k string, v *int) {
	if v == nil {
		o.null(k)
		return
	}
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(*v), 10)
}

// array writes the field k as an array of n elements, the ith written by
// elem.
func (o *jsonObj) array(k string, n int, elem func(i int)) {
	o.key(k)
	o.b = append(o.b, '[')
	for i := range n {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		elem(i)
	}
	o.b = append(o.b, ']')
}

func (o *jsonObj) time(k string, t time.Time) {
	o.key(k)
	o.b = append(o.b, '"')
	o.b = AppendTime(o.b, t)
	o.b = append(o.b, '"')
}

func (o *jsonObj) optTime(k string, t *time.Time) {
	if t == nil {
		o.null(k)
		return
	}
	o.time(k, *t)
}

func appendMarketJSON(b []byte, m *store.Market) ([]byte, error) {
	o := jsonObj{b: append(b, '{')}
	o.str("type", "market")
	o.str("slug", m.Slug)
	o.str("market_id", m.MarketID)
	o.str("event_id", m.EventID)
	o.str("coin", string(m.Coin))
	o.str("market_type", string(m.MarketType))
	o.time("start_time", m.StartTime)
	o.time("end_time", m.EndTime)
	o.optNum("coin_price_start", m.CoinPriceStart)
	o.optNum("coin_price_end", m.CoinPriceEnd)
	o.str("condition_id", m.ConditionID)
	o.str("clob_token_up", m.ClobTokenUp)
	o.str("clob_token_down", m.ClobTokenDown)
	o.optStr("winner", m.Winner)
	o.optNum("final_volume", m.FinalVolume)
	o.optNum("final_liquidity", m.FinalLiquidity)
	o.optTime("resolved_at", m.ResolvedAt)
	o.time("created_at", m.CreatedAt)
	o.time("updated_at", m.UpdatedAt)
	o.optText("upstream_slug", m.UpstreamSlug)
	o.optNum("taker_fee_rate", m.TakerFeeRate)
	o.optInt("fee_exponent", m.FeeExponent)
	o.optText("fee_type", m.FeeType)
	o.optNum("maker_rebate_rate", m.MakerRebateRate)
	o.optNum("tick_size", m.TickSize)
	o.array("tick_size_changes", len(m.TickSizeChanges), func(i int) {
		c := m.TickSizeChanges[i]
		o.b = append(o.b, `{"time":"`...)
		o.b = AppendTime(o.b, c.Time)
		o.b = append(o.b, `","tick_size":`...)
		var err error
		if o.b, err = appendNum(o.b, c.TickSize); err != nil && o.err == nil {
			o.err = fmt.Errorf("tick_size_changes: %w", err)
		}
		o.b = append(o.b, '}')
	})
	o.optNum("min_order_size", m.MinOrderSize)
	o.optText("resolution_source", m.ResolutionSource)
	o.optNum("price_to_beat", m.PriceToBeat)
	o.optNum("final_price", m.FinalPrice)
	o.array("data_sources", len(m.DataSources), func(i int) {
		o.b = appendJSONString(o.b, m.DataSources[i])
	})
	return append(o.b, '}'), o.err
}

func appendTradeJSON(b []byte, slug string, t *store.MarketTrade) ([]byte, error) {
	o := jsonObj{b: append(b, '{')}
	o.str("type", "trade")
	o.str("slug", slug)
	o.time("time", t.Time)
	o.str("outcome", t.Outcome)
	o.num("price", t.Price)
	o.num("size", t.Size)
	o.str("side", t.Side)
	o.num("fee_rate_bps", t.FeeRateBps)
	o.str("tx_hash", t.TxHash)
	return append(o.b, '}'), o.err
}

func appendGapJSON(b []byte, slug string, g *store.Gap) []byte {
	o := jsonObj{b: append(b, '{')}
	o.str("type", "gap")
	o.str("slug", slug)
	o.time("from", g.From)
	o.time("to", g.To)
	o.str("kind", g.Kind.Name())
	return append(o.b, '}')
}

func appendSnapshotJSON(b []byte, slug string, s *store.Snapshot) ([]byte, error) {
	o := jsonObj{b: append(b, '{')}
	o.str("type", "snapshot")
	o.str("slug", slug)
	o.time("time", s.Time)
	o.num("coin_price", s.CoinPrice)
	o.num("price_up", s.PriceUp)
	o.num("price_down", s.PriceDown)
	for _, side := range []struct {
		name string
		book *store.Book
	}{{"orderbook_up", s.BookUp}, {"orderbook_down", s.BookDown}} {
		if side.book == nil {
			continue
		}
		o.key(side.name)
		o.b = append(o.b, `{"bids":`...)
		o.levels(side.book.Bids)
		o.b = append(o.b, `,"asks":`...)
		o.levels(side.book.Asks)
		o.b = append(o.b, '}')
	}
	return append(o.b, '}'), o.err
}

func (o *jsonObj) levels(ls []store.Level) {
	o.b = append(o.b, '[')
	for i, l := range ls {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, `{"price":`...)
		var e1, e2 error
		o.b, e1 = appendNum(o.b, l.Price)
		o.b = append(o.b, `,"size":`...)
		o.b, e2 = appendNum(o.b, l.Size)
		o.b = append(o.b, '}')
		if err := errors.Join(e1, e2); err != nil && o.err == nil {
			o.err = fmt.Errorf("book level: %w", err)
		}
	}
	o.b = append(o.b, ']')
}

// appendJSONString appends s quoted as JSON: the escapes JSON requires,
// invalid UTF-8 as U+FFFD (as encoding/json does), the rest as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// jsonlDecoder reads JSON Lines one line at a time.
type jsonlDecoder struct {
	sc   *bufio.Scanner
	line int
}

// maxLine bounds one line: a snapshot with two books of a hundred levels
// a side is under 20 KB.
const maxLine = 16 << 20

func newJSONLDecoder(r io.Reader) *jsonlDecoder {
	rr := &readErr{r: r}
	sc := bufio.NewScanner(rr)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if atEOF && rr.err != nil && len(data) > 0 && bytes.IndexByte(data, '\n') < 0 {
			// The input broke off in this line (a truncated gzip, say):
			// it is not a line of the file, and its JSON error would
			// blame a line that is not there.
			return 0, nil, rr.err
		}
		return bufio.ScanLines(data, atEOF)
	})
	return &jsonlDecoder{sc: sc}
}

// readErr keeps the error reading stopped at, other than io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// jsonLine is any line; which fields matter depends on Type. Pointers tell
// a missing field from a zero one.
type jsonLine struct {
	Type string `json:"type"`
	Slug string `json:"slug"`

	MarketID       string   `json:"market_id"`
	EventID        string   `json:"event_id"`
	Coin           string   `json:"coin"`
	MarketType     string   `json:"market_type"`
	StartTime      string   `json:"start_time"`
	EndTime        string   `json:"end_time"`
	CoinPriceStart *float64 `json:"coin_price_start"`
	CoinPriceEnd   *float64 `json:"coin_price_end"`
	ConditionID    string   `json:"condition_id"`
	ClobTokenUp    string   `json:"clob_token_up"`
	ClobTokenDown  string   `json:"clob_token_down"`
	Winner         *string  `json:"winner"`
	FinalVolume    *float64 `json:"final_volume"`
	FinalLiquidity *float64 `json:"final_liquidity"`
	ResolvedAt     *string  `json:"resolved_at"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`

	UpstreamSlug     string           `json:"upstream_slug"`
	TakerFeeRate     *float64         `json:"taker_fee_rate"`
	FeeExponent      *int             `json:"fee_exponent"`
	FeeType          string           `json:"fee_type"`
	MakerRebateRate  *float64         `json:"maker_rebate_rate"`
	TickSize         *float64         `json:"tick_size"`
	TickSizeChanges  []jsonTickChange `json:"tick_size_changes"`
	MinOrderSize     *float64         `json:"min_order_size"`
	ResolutionSource string           `json:"resolution_source"`
	PriceToBeat      *float64         `json:"price_to_beat"`
	FinalPrice       *float64         `json:"final_price"`
	DataSources      []string         `json:"data_sources"`

	// A trade's; Time, Price and Size are shared with the snapshot's and the
	// trade's fields.
	Outcome    string   `json:"outcome"`
	Price      *float64 `json:"price"`
	Size       *float64 `json:"size"`
	Side       string   `json:"side"`
	FeeRateBps *float64 `json:"fee_rate_bps"`
	TxHash     string   `json:"tx_hash"`

	// A gap's.
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"` // absent in exports made before gaps had kinds: snapshots

	Time          string    `json:"time"`
	CoinPrice     *float64  `json:"coin_price"`
	PriceUp       *float64  `json:"price_up"`
	PriceDown     *float64  `json:"price_down"`
	OrderbookUp   *jsonBook `json:"orderbook_up"`
	OrderbookDown *jsonBook `json:"orderbook_down"`

	// fast is set by fastSnapshotLine, which reads books into fastUp and
	// fastDown instead of the Orderbook fields.
	fast             bool
	fastUp, fastDown *store.Book
}

type jsonTickChange struct {
	Time     string   `json:"time"`
	TickSize *float64 `json:"tick_size"`
}

type jsonBook struct {
	Bids []jsonLevel `json:"bids"`
	Asks []jsonLevel `json:"asks"`
}

type jsonLevel struct {
	Price *float64 `json:"price"`
	Size  *float64 `json:"size"`
}

func (d *jsonlDecoder) Decode() (Record, error) {
	for d.sc.Scan() {
		d.line++
		raw := d.sc.Bytes()
		if len(trimSpace(raw)) == 0 {
			continue
		}
		l, ok := fastSnapshotLine(raw)
		if !ok {
			l = jsonLine{}
			if err := json.Unmarshal(raw, &l); err != nil {
				return Record{}, d.fail(jsonError(raw, err))
			}
		}
		rec, err := l.record()
		if err != nil {
			return Record{}, d.fail(err)
		}
		return rec, nil
	}
	if err := d.sc.Err(); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, fmt.Errorf("transfer: line %d: the input breaks off (a truncated file?): %w", d.line+1, err)
		}
		return Record{}, fmt.Errorf("transfer: line %d: %w", d.line+1, err)
	}
	return Record{}, io.EOF
}

// jsonError says what is wrong with a line in the file's terms: a NaN or
// an infinity (which Python's json and pandas write, and JSON has not), or
// a number beyond a float's range, is not a finite number, where JSON's
// error said "invalid character 'N'" and Go's named a Go type.
func jsonError(raw []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(raw) {
		i := int(se.Offset) - 1
		if i > 0 && raw[i] == 'I' && raw[i-1] == '-' {
			i--
		}
		for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
			if bytes.HasPrefix(raw[i:], []byte(tok)) {
				return fmt.Errorf("%s at column %d: %w (JSON has no NaN or infinity)", tok, i+1, errNotFinite)
			}
		}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil && te.Type.Kind() == reflect.Float64 && strings.HasPrefix(te.Value, "number ") {
		return fmt.Errorf("%s: %s: %w", te.Field, strings.TrimPrefix(te.Value, "number "), errNotFinite)
	}
	return err
}

func (d *jsonlDecoder) fail(err error) error {
	return fmt.Errorf("transfer: line %d: %w", d.line, err)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (l *jsonLine) record() (Record, error) {
	switch l.Type {
	case "market":
		m, err := l.market()
		if err != nil {
			return Record{}, err
		}
		return Record{Market: m}, nil
	case "snapshot":
		s, err := l.snapshot()
		if err != nil {
			return Record{}, err
		}
		return Record{Slug: l.Slug, Snapshot: s}, nil
	case "trade":
		t, err := l.trade()
		if err != nil {
			return Record{}, err
		}
		return Record{Slug: l.Slug, Trade: t}, nil
	case "gap":
		g, err := l.gap()
		if err != nil {
			return Record{}, err
		}
		return Record{Slug: l.Slug, Gap: g}, nil
	}
	return Record{}, fmt.Errorf("type %q is not market, snapshot, trade or gap", l.Type)
}

func (l *jsonLine) trade() (*store.MarketTrade, error) {
	t, err := parseTime(l.Time)
	if err != nil {
		return nil, fmt.Errorf("trade of %s: time: %w", l.Slug, err)
	}
	if l.Price == nil || l.Size == nil {
		return nil, fmt.Errorf("trade of %s at %s: price and size are required", l.Slug, l.Time)
	}
	tr := &store.MarketTrade{Time: t, Outcome: l.Outcome, Price: *l.Price, Size: *l.Size, Side: l.Side, TxHash: l.TxHash}
	if l.FeeRateBps != nil {
		tr.FeeRateBps = *l.FeeRateBps
	}
	return tr, checkTrade(l.Slug, tr)
}

func (l *jsonLine) gap() (*store.Gap, error) {
	from, err := parseTime(l.From)
	if err != nil {
		return nil, fmt.Errorf("gap of %s: from: %w", l.Slug, err)
	}
	to, err := parseTime(l.To)
	if err != nil {
		return nil, fmt.Errorf("gap of %s: to: %w", l.Slug, err)
	}
	kind, err := store.ParseGapKind(l.Kind)
	if err != nil {
		return nil, fmt.Errorf("gap of %s: kind: %w", l.Slug, err)
	}
	g := &store.Gap{From: from, To: to, Kind: kind}
	return g, checkGap(l.Slug, g)
}

func (l *jsonLine) market() (*store.Market, error) {
	m := &store.Market{
		Slug: l.Slug, MarketID: l.MarketID, EventID: l.EventID,
		Coin: store.Coin(l.Coin), MarketType: store.MarketType(l.MarketType),
		CoinPriceStart: l.CoinPriceStart, CoinPriceEnd: l.CoinPriceEnd,
		ConditionID: l.ConditionID, ClobTokenUp: l.ClobTokenUp, ClobTokenDown: l.ClobTokenDown,
		Winner: l.Winner, FinalVolume: l.FinalVolume, FinalLiquidity: l.FinalLiquidity,
		UpstreamSlug: l.UpstreamSlug, TakerFeeRate: l.TakerFeeRate, FeeExponent: l.FeeExponent, MakerRebateRate: l.MakerRebateRate,
		FeeType:      l.FeeType,
		TickSize:     l.TickSize,
		MinOrderSize: l.MinOrderSize, ResolutionSource: l.ResolutionSource, PriceToBeat: l.PriceToBeat, FinalPrice: l.FinalPrice,
		DataSources: l.DataSources,
	}
	for _, c := range l.TickSizeChanges {
		t, err := parseTime(c.Time)
		if err != nil {
			return nil, fmt.Errorf("market %s: tick_size_changes: %w", l.Slug, err)
		}
		if c.TickSize == nil {
			return nil, fmt.Errorf("market %s: tick_size_changes: a change needs time and tick_size", l.Slug)
		}
		m.TickSizeChanges = append(m.TickSizeChanges, store.TickSizeChange{Time: t, TickSize: *c.TickSize})
	}
	var err error
	for _, f := range []struct {
		name     string
		v        string
		dst      *time.Time
		optional bool
	}{
		{"start_time", l.StartTime, &m.StartTime, false},
		{"end_time", l.EndTime, &m.EndTime, false},
		{"created_at", l.CreatedAt, &m.CreatedAt, true},
		{"updated_at", l.UpdatedAt, &m.UpdatedAt, true},
	} {
		if f.v == "" && f.optional {
			continue
		}
		if *f.dst, err = parseTime(f.v); err != nil {
			return nil, fmt.Errorf("market %s: %s: %w", l.Slug, f.name, err)
		}
	}
	if l.ResolvedAt != nil {
		t, err := parseTime(*l.ResolvedAt)
		if err != nil {
			return nil, fmt.Errorf("market %s: resolved_at: %w", l.Slug, err)
		}
		m.ResolvedAt = &t
	}
	return m, checkMarket(m)
}

func (l *jsonLine) snapshot() (*store.Snapshot, error) {
	t, err := parseTime(l.Time)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: time: %w", l.Slug, err)
	}
	if l.CoinPrice == nil || l.PriceUp == nil || l.PriceDown == nil {
		return nil, fmt.Errorf("snapshot of %s at %s: coin_price, price_up and price_down are required", l.Slug, l.Time)
	}
	s := &store.Snapshot{Time: t, CoinPrice: *l.CoinPrice, PriceUp: *l.PriceUp, PriceDown: *l.PriceDown}
	if l.fast {
		s.BookUp, s.BookDown = l.fastUp, l.fastDown
		return s, checkSnapshot(l.Slug, s)
	}
	if s.BookUp, err = l.OrderbookUp.book(); err != nil {
		return nil, fmt.Errorf("snapshot of %s at %s: orderbook_up: %w", l.Slug, l.Time, err)
	}
	if s.BookDown, err = l.OrderbookDown.book(); err != nil {
		return nil, fmt.Errorf("snapshot of %s at %s: orderbook_down: %w", l.Slug, l.Time, err)
	}
	return s, checkSnapshot(l.Slug, s)
}

func (b *jsonBook) book() (*store.Book, error) {
	if b == nil {
		return nil, nil
	}
	bids, err := jsonLevels(b.Bids)
	if err != nil {
		return nil, fmt.Errorf("bids: %w", err)
	}
	asks, err := jsonLevels(b.Asks)
	if err != nil {
		return nil, fmt.Errorf("asks: %w", err)
	}
	return &store.Book{Bids: bids, Asks: asks}, nil
}

func jsonLevels(in []jsonLevel) ([]store.Level, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]store.Level, len(in))
	for i, l := range in {
		if l.Price == nil || l.Size == nil {
			return nil, errors.New("a level needs price and size")
		}
		out[i] = store.Level{Price: *l.Price, Size: *l.Size}
	}
	return out, nil
}
