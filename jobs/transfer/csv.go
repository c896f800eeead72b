package transfer

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/updown/updown/store"
)

// Columns of the kinds of CSV file, in the order written.
var (
	marketColumns = []string{"slug", "market_id", "event_id", "coin", "market_type", "start_time", "end_time",
		"coin_price_start", "coin_price_end", "condition_id", "clob_token_up", "clob_token_down", "winner",
		"final_volume", "final_liquidity", "resolved_at", "created_at", "updated_at",
		"upstream_slug", "taker_fee_rate", "fee_exponent", "fee_type", "maker_rebate_rate", "tick_size", "tick_size_changes",
		"min_order_size", "resolution_source", "price_to_beat", "final_price", "data_sources"}
	snapshotColumns = []string{"slug", "time", "coin_price", "price_up", "price_down", "orderbook_up", "orderbook_down"}
	tradeColumns    = []string{"slug", "time", "outcome", "price", "size", "side", "fee_rate_bps", "tx_hash"}
	gapColumns      = []string{"slug", "from", "to", "kind"}
)

// Columns a CSV file must have; the others may be left out (empty).
var (
	marketRequired   = []string{"slug", "coin", "market_type", "start_time", "end_time"}
	snapshotRequired = []string{"slug", "time", "coin_price", "price_up", "price_down"}
	tradeRequired    = []string{"slug", "time", "outcome", "price", "size", "side"}
	gapRequired      = []string{"slug", "from", "to"}
)

// csvEncoder writes CSV rows by appending into one buffer, quoting as
// encoding/csv does (which reads them back): numbers, times and book cells
// never need quotes, and building rows of strings for csv.Writer would
// cost an allocation a cell.
type csvEncoder struct {
	w      *bufio.Writer
	what   What
	header bool
	b      []byte
	errs   []error
}

func newCSVEncoder(w io.Writer, what What) *csvEncoder {
	return &csvEncoder{w: bufio.NewWriterSize(w, 1<<16), what: what}
}

func (e *csvEncoder) Flush() error {
	if err := e.writeHeader(); err != nil {
		return err
	}
	return e.w.Flush()
}

// writeHeader writes the header once, so that an empty export is still a
// file that imports.
func (e *csvEncoder) writeHeader() error {
	if e.header {
		return nil
	}
	e.header = true
	cols := map[What][]string{Markets: marketColumns, Snapshots: snapshotColumns, Trades: tradeColumns, Gaps: gapColumns}[e.what]
	_, err := e.w.WriteString(strings.Join(cols, ",") + "\n")
	return err
}

func (e *csvEncoder) Encode(r Record) error {
	if err := checkFinite(r); err != nil {
		return err
	}
	if err := e.writeHeader(); err != nil {
		return err
	}
	e.b, e.errs = e.b[:0], e.errs[:0]
	switch {
	case r.Market != nil && e.what == Markets:
		e.market(r.Market)
	case r.Snapshot != nil && e.what == Snapshots:
		e.snapshot(r.Slug, r.Snapshot)
	case r.Trade != nil && e.what == Trades:
		e.trade(r.Slug, r.Trade)
	case r.Gap != nil && e.what == Gaps:
		e.text(r.Slug)
		e.time(r.Gap.From)
		e.time(r.Gap.To)
		e.text(r.Gap.Kind.Name())
	default:
		return fmt.Errorf("transfer: a CSV file of %s holds no other record", e.what)
	}
	if err := errors.Join(e.errs...); err != nil {
		return fmt.Errorf("transfer: encode: %w", err)
	}
	e.b[len(e.b)-1] = '\n' // the last cell's separator ends the row
	_, err := e.w.Write(e.b)
	return err
}

// text appends a cell of free text, quoted where encoding/csv would.
func (e *csvEncoder) text(s string) {
	if csvNeedsQuotes(s) {
		e.b = append(e.b, '"')
		for i := 0; i < len(s); i++ {
			if s[i] == '"' {
				e.b = append(e.b, '"')
			}
			e.b = append(e.b, s[i])
		}
		e.b = append(e.b, '"')
	} else {
		e.b = append(e.b, s...)
	}
	e.b = append(e.b, ',')
}

// csvNeedsQuotes is encoding/csv's rule for a comma-separated field.
func csvNeedsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || strings.ContainsAny(s, "\",\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func (e *csvEncoder) num(v float64) {
	var err error
	e.b, err = appendNum(e.b, v)
	if err != nil {
		e.errs = append(e.errs, err)
	}
	e.b = append(e.b, ',')
}

func (e *csvEncoder) optNum(v *float64) {
	if v == nil {
		e.b = append(e.b, ',')
		return
	}
	e.num(*v)
}

func (e *csvEncoder) time(t time.Time) {
	e.b = AppendTime(e.b, t)
	e.b = append(e.b, ',')
}

func (e *csvEncoder) market(m *store.Market) {
	for _, s := range []string{m.Slug, m.MarketID, m.EventID, string(m.Coin), string(m.MarketType)} {
		e.text(s)
	}
	e.time(m.StartTime)
	e.time(m.EndTime)
	e.optNum(m.CoinPriceStart)
	e.optNum(m.CoinPriceEnd)
	for _, s := range []string{m.ConditionID, m.ClobTokenUp, m.ClobTokenDown, TextOf(m.Winner)} {
		e.text(s)
	}
	e.optNum(m.FinalVolume)
	e.optNum(m.FinalLiquidity)
	if m.ResolvedAt != nil {
		e.time(*m.ResolvedAt)
	} else {
		e.b = append(e.b, ',')
	}
	e.time(m.CreatedAt)
	e.time(m.UpdatedAt)
	e.text(m.UpstreamSlug)
	e.optNum(m.TakerFeeRate)
	if m.FeeExponent != nil {
		e.b = strconv.AppendInt(e.b, int64(*m.FeeExponent), 10)
	}
	e.b = append(e.b, ',')
	e.text(m.FeeType)
	e.optNum(m.MakerRebateRate)
	e.optNum(m.TickSize)
	for i, c := range m.TickSizeChanges {
		if i > 0 {
			e.b = append(e.b, ' ')
		}
		e.b = AppendTime(e.b, c.Time)
		e.b = append(e.b, '=')
		var err error
		if e.b, err = appendNum(e.b, c.TickSize); err != nil {
			e.errs = append(e.errs, fmt.Errorf("tick_size_changes: %w", err))
		}
	}
	e.b = append(e.b, ',')
	e.optNum(m.MinOrderSize)
	e.text(m.ResolutionSource)
	e.optNum(m.PriceToBeat)
	e.optNum(m.FinalPrice)
	e.text(strings.Join(m.DataSources, " "))
}

func (e *csvEncoder) trade(slug string, t *store.MarketTrade) {
	e.text(slug)
	e.time(t.Time)
	e.text(t.Outcome)
	e.num(t.Price)
	e.num(t.Size)
	e.text(t.Side)
	e.num(t.FeeRateBps)
	e.text(t.TxHash)
}

// parseTickChanges reads a tick_size_changes cell: space-separated
// time=size pairs.
func parseTickChanges(s string) ([]store.TickSizeChange, error) {
	var out []store.TickSizeChange
	for _, f := range strings.Fields(s) {
		ts, size, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("change %q is not time=size", f)
		}
		t, err := parseTime(ts)
		if err != nil {
			return nil, fmt.Errorf("change %q: %w", f, err)
		}
		x, err := parseNum(size)
		if err != nil {
			return nil, fmt.Errorf("change %q: %w", f, err)
		}
		out = append(out, store.TickSizeChange{Time: t, TickSize: x})
	}
	return out, nil
}

func (e *csvEncoder) snapshot(slug string, s *store.Snapshot) {
	e.text(slug)
	e.time(s.Time)
	e.num(s.CoinPrice)
	e.num(s.PriceUp)
	e.num(s.PriceDown)
	e.book(s.BookUp)
	e.book(s.BookDown)
}

// book appends a book cell, empty for no book.
func (e *csvEncoder) book(b *store.Book) {
	if b != nil {
		var err error
		if e.b, err = appendBookCell(e.b, b); err != nil {
			e.errs = append(e.errs, err)
		}
	}
	e.b = append(e.b, ',')
}

// appendBookCell writes a book as "bids|asks", each side space-separated
// price:size levels.
func appendBookCell(b []byte, book *store.Book) ([]byte, error) {
	var err error
	side := func(ls []store.Level) {
		for i, l := range ls {
			if i > 0 {
				b = append(b, ' ')
			}
			var e1, e2 error
			b, e1 = appendNum(b, l.Price)
			b = append(b, ':')
			b, e2 = appendNum(b, l.Size)
			if e := errors.Join(e1, e2); e != nil && err == nil {
				err = fmt.Errorf("book level: %w", e)
			}
		}
	}
	side(book.Bids)
	b = append(b, '|')
	side(book.Asks)
	return b, err
}

// parseBookCell reads what appendBookCell writes; "" is no book.
func parseBookCell(s string) (*store.Book, error) {
	if s == "" {
		return nil, nil
	}
	bids, asks, ok := strings.Cut(s, "|")
	if !ok || strings.Contains(asks, "|") {
		return nil, fmt.Errorf("book %q is not bids|asks", s)
	}
	b := &store.Book{}
	var err error
	if b.Bids, err = parseSide(bids); err != nil {
		return nil, fmt.Errorf("bids: %w", err)
	}
	if b.Asks, err = parseSide(asks); err != nil {
		return nil, fmt.Errorf("asks: %w", err)
	}
	return b, nil
}

func parseSide(s string) ([]store.Level, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, nil
	}
	out := make([]store.Level, len(fields))
	for i, f := range fields {
		p, sz, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("level %q is not price:size", f)
		}
		var err error
		if out[i].Price, err = parseNum(p); err != nil {
			return nil, fmt.Errorf("level %q: price: %w", f, err)
		}
		if out[i].Size, err = parseNum(sz); err != nil {
			return nil, fmt.Errorf("level %q: size: %w", f, err)
		}
	}
	return out, nil
}

// csvDecoder reads a CSV file of markets or of snapshots, which its header
// tells.
type csvDecoder struct {
	r    *csv.Reader
	what What
	col  map[string]int // column name → index
}

func newCSVDecoder(r io.Reader) (*csvDecoder, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("transfer: empty CSV input: no header")
	}
	if err != nil {
		return nil, fmt.Errorf("transfer: CSV header: %w", err)
	}
	d := &csvDecoder{r: cr, col: make(map[string]int, len(header))}
	for i, name := range header {
		name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")) // a spreadsheet's byte order mark
		if _, dup := d.col[name]; dup {
			return nil, fmt.Errorf("transfer: CSV header names %q twice", name)
		}
		d.col[name] = i
	}
	has := func(cols []string) bool {
		return !slices.ContainsFunc(cols, func(c string) bool { _, ok := d.col[c]; return !ok })
	}
	switch {
	case has(snapshotRequired):
		d.what = Snapshots
	case has(tradeRequired):
		d.what = Trades
	case has(gapRequired):
		d.what = Gaps
	case has(marketRequired):
		d.what = Markets
	default:
		return nil, fmt.Errorf("transfer: CSV header %q has neither the market columns %q nor the snapshot columns %q nor the trade columns %q nor the gap columns %q",
			header, marketRequired, snapshotRequired, tradeRequired, gapRequired)
	}
	return d, nil
}

func (d *csvDecoder) Decode() (Record, error) {
	row, err := d.r.Read()
	if errors.Is(err, io.EOF) {
		return Record{}, io.EOF
	}
	if err != nil {
		return Record{}, fmt.Errorf("transfer: %w", err)
	}
	line, _ := d.r.FieldPos(0)
	get := func(name string) string {
		if i, ok := d.col[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	rec := Record{Slug: get("slug")}
	switch d.what {
	case Markets:
		rec.Slug = ""
		rec.Market, err = csvMarket(get)
	case Snapshots:
		rec.Snapshot, err = csvSnapshot(get)
	case Trades:
		rec.Trade, err = csvTrade(get)
	case Gaps:
		rec.Gap, err = csvGap(get)
	}
	if err != nil {
		return Record{}, fmt.Errorf("transfer: line %d: %w", line, err)
	}
	return rec, nil
}

func csvTrade(get func(string) string) (*store.MarketTrade, error) {
	slug := get("slug")
	t, err := parseTime(get("time"))
	if err != nil {
		return nil, fmt.Errorf("trade of %s: time: %w", slug, err)
	}
	tr := &store.MarketTrade{Time: t, Outcome: get("outcome"), Side: get("side"), TxHash: get("tx_hash")}
	for _, f := range []struct {
		name     string
		dst      *float64
		optional bool
	}{{"price", &tr.Price, false}, {"size", &tr.Size, false}, {"fee_rate_bps", &tr.FeeRateBps, true}} {
		v := get(f.name)
		if v == "" && f.optional {
			continue
		}
		if *f.dst, err = parseNum(v); err != nil {
			return nil, fmt.Errorf("trade of %s at %s: %s: %w", slug, get("time"), f.name, err)
		}
	}
	return tr, checkTrade(slug, tr)
}

func csvGap(get func(string) string) (*store.Gap, error) {
	slug := get("slug")
	from, err := parseTime(get("from"))
	if err != nil {
		return nil, fmt.Errorf("gap of %s: from: %w", slug, err)
	}
	to, err := parseTime(get("to"))
	if err != nil {
		return nil, fmt.Errorf("gap of %s: to: %w", slug, err)
	}
	kind, err := store.ParseGapKind(get("kind")) // no column (an older export): snapshots
	if err != nil {
		return nil, fmt.Errorf("gap of %s: kind: %w", slug, err)
	}
	g := &store.Gap{From: from, To: to, Kind: kind}
	return g, checkGap(slug, g)
}

func csvMarket(get func(string) string) (*store.Market, error) {
	m := &store.Market{
		Slug: get("slug"), MarketID: get("market_id"), EventID: get("event_id"),
		Coin: store.Coin(get("coin")), MarketType: store.MarketType(get("market_type")),
		ConditionID: get("condition_id"), ClobTokenUp: get("clob_token_up"), ClobTokenDown: get("clob_token_down"),
		UpstreamSlug: get("upstream_slug"), ResolutionSource: get("resolution_source"), FeeType: get("fee_type"),
		DataSources: strings.Fields(get("data_sources")),
	}
	if w := get("winner"); w != "" {
		m.Winner = &w
	}
	var err error
	if v := get("fee_exponent"); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("market %s: fee_exponent: not an integer: %q", m.Slug, v)
		}
		m.FeeExponent = &x
	}
	if m.TickSizeChanges, err = parseTickChanges(get("tick_size_changes")); err != nil {
		return nil, fmt.Errorf("market %s: tick_size_changes: %w", m.Slug, err)
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"coin_price_start", &m.CoinPriceStart}, {"coin_price_end", &m.CoinPriceEnd},
		{"final_volume", &m.FinalVolume}, {"final_liquidity", &m.FinalLiquidity},
		{"taker_fee_rate", &m.TakerFeeRate}, {"maker_rebate_rate", &m.MakerRebateRate},
		{"tick_size", &m.TickSize}, {"min_order_size", &m.MinOrderSize},
		{"price_to_beat", &m.PriceToBeat}, {"final_price", &m.FinalPrice}} {
		v := get(f.name)
		if v == "" {
			continue
		}
		x, err := parseNum(v)
		if err != nil {
			return nil, fmt.Errorf("market %s: %s: %w", m.Slug, f.name, err)
		}
		*f.dst = &x
	}
	for _, f := range []struct {
		name     string
		dst      *time.Time
		optional bool
	}{{"start_time", &m.StartTime, false}, {"end_time", &m.EndTime, false},
		{"created_at", &m.CreatedAt, true}, {"updated_at", &m.UpdatedAt, true}} {
		v := get(f.name)
		if v == "" && f.optional {
			continue
		}
		if *f.dst, err = parseTime(v); err != nil {
			return nil, fmt.Errorf("market %s: %s: %w", m.Slug, f.name, err)
		}
	}
	if v := get("resolved_at"); v != "" {
		t, err := parseTime(v)
		if err != nil {
			return nil, fmt.Errorf("market %s: resolved_at: %w", m.Slug, err)
		}
		m.ResolvedAt = &t
	}
	return m, checkMarket(m)
}

func csvSnapshot(get func(string) string) (*store.Snapshot, error) {
	slug := get("slug")
	t, err := parseTime(get("time"))
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: time: %w", slug, err)
	}
	s := &store.Snapshot{Time: t}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"coin_price", &s.CoinPrice}, {"price_up", &s.PriceUp}, {"price_down", &s.PriceDown}} {
		if *f.dst, err = parseNum(get(f.name)); err != nil {
			return nil, fmt.Errorf("snapshot of %s at %s: %s: %w", slug, get("time"), f.name, err)
		}
	}
	if s.BookUp, err = parseBookCell(get("orderbook_up")); err != nil {
		return nil, fmt.Errorf("snapshot of %s at %s: orderbook_up: %w", slug, get("time"), err)
	}
	if s.BookDown, err = parseBookCell(get("orderbook_down")); err != nil {
		return nil, fmt.Errorf("snapshot of %s at %s: orderbook_down: %w", slug, get("time"), err)
	}
	return s, checkSnapshot(slug, s)
}
