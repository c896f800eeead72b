package archive

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/updown/updown/jobs/book"
)

// PMXTColumns are the PMXT archive v2's 16 columns (REFERENCE.md).
var PMXTColumns = []string{"timestamp_received", "timestamp", "market", "event_type", "asset_id", "bids", "asks",
	"price", "size", "side", "best_bid", "best_ask", "fee_rate_bps", "transaction_hash", "old_tick_size", "new_tick_size"}

const (
	colReceived = iota
	colTimestamp
	colMarket
	colEventType
	colAssetID
	colBids
	colAsks
	colPrice
	colSize
	colSide
	colBestBid
	colBestAsk
	colFee
	colTxHash
	colOldTick
	colNewTick
)

// pmxtFile is an open PMXT hourly file.
type pmxtFile struct {
	name string
	f    *os.File
	pf   *parquet.File
	cols [16]int // PMXTColumns[i]'s column index in the file
	// scales are the scales of PMXTColumns[i] when it is a DECIMAL (the
	// archive's prices, sizes and ticks), -1 when it is not.
	scales [16]int
	// hour is the UTC hour the file holds (its first row's).
	hour time.Time
	// names interns the texts that repeat from row to row (markets,
	// tokens, event types, sides): a row costs no copy of them.
	names map[string]string
}

// intern returns b as a string, interned.
func (p *pmxtFile) intern(b []byte) string {
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	if p.names == nil || len(p.names) >= 1<<14 {
		p.names = map[string]string{}
	}
	s := string(b)
	p.names[s] = s
	return s
}

func openPMXT(name string) (*pmxtFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("not a readable Parquet file: %w", err)}
	}
	if k := parquetKindOf(pf); k != "" && k != ParquetPMXT {
		f.Close()
		return nil, &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("an `updown export` Parquet file of %s, not a PMXT archive hour: import it with `updown import --in %s`", k, name)}
	}
	p := &pmxtFile{name: name, f: f, pf: pf}
	for i, c := range PMXTColumns {
		leaf, ok := pf.Schema().Lookup(c)
		if !ok || leaf.Node == nil {
			f.Close()
			return nil, &InputError{Pos: Pos{File: name}, Field: c, Err: fmt.Errorf("the Parquet file has no column %q: pmxt-v2 files have the 16 columns %v", c, PMXTColumns)}
		}
		p.cols[i] = leaf.ColumnIndex
		p.scales[i] = -1
		if lt := leaf.Node.Type().LogicalType(); lt != nil {
			if d, ok := lt.Value.(*format.DecimalType); ok {
				p.scales[i] = int(d.Scale)
			}
		}
	}
	return p, nil
}

func (p *pmxtFile) Close() error { return p.f.Close() }

// firstHour reads the first row's timestamp_received, the file's hour.
func (p *pmxtFile) firstHour() (time.Time, error) {
	for _, rg := range p.pf.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 1)
		n, err := rows.ReadRows(buf)
		rows.Close()
		if n == 1 {
			var vals [16]parquet.Value
			p.pick(buf[0], &vals)
			ms, err := intOf(vals[colReceived])
			if err != nil {
				return time.Time{}, &InputError{Pos: Pos{File: p.name, Row: 1}, Field: "timestamp_received", Err: err}
			}
			return time.UnixMilli(ms).UTC().Truncate(time.Hour), nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return time.Time{}, &InputError{Pos: Pos{File: p.name, Row: 1}, Err: err}
		}
	}
	return time.Time{}, nil
}

// pick spreads a row's values over the 16 columns.
func (p *pmxtFile) pick(row parquet.Row, vals *[16]parquet.Value) {
	for i := range vals {
		vals[i] = parquet.Value{}
	}
	for _, v := range row {
		c := v.Column()
		for i, ci := range p.cols {
			if ci == c {
				vals[i] = v
				break
			}
		}
	}
}

// read streams the file's rows a row group at a time. Rows of one market
// (the file is sorted by market, then asset and time) are gathered, put in
// time order across the market's two tokens, and handed to fn; want says
// whether a market's rows are worth decoding (a market not imported is
// skipped unread, its rows counted in skipped). A market's rows met again
// after other markets' are handed on as they come, as a file in time order
// has them; rows over behind earlier than the market's last event handed
// (a file in another order, by token for one) are an error: its events
// would be folded into its books out of time order.
func (p *pmxtFile) read(ctx context.Context, rowsRead *atomic.Int64, want func(conditionID string, pos Pos) (bool, error), fn func([]item) error, skipped *int64, behind time.Duration) error {
	var (
		cur     string
		keep    bool
		items   []item
		recv    []int64
		rowNum  int64
		vals    [16]parquet.Value
		started bool
		handed  = map[string]time.Time{} // the latest event time handed, by market
	)
	flush := func() error {
		if !keep || len(items) == 0 {
			items, recv = items[:0], recv[:0]
			return nil
		}
		idx := make([]int, len(items))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			return cmp.Or(items[a].ev.Time.Compare(items[b].ev.Time), cmp.Compare(recv[a], recv[b]))
		})
		sorted := make([]item, len(items))
		for i, j := range idx {
			sorted[i] = items[j]
		}
		items, recv = items[:0], recv[:0]
		if i := slices.IndexFunc(sorted, func(it item) bool { return !it.ev.Time.IsZero() }); i >= 0 {
			first, last := sorted[i], sorted[len(sorted)-1].ev.Time
			if prev, ok := handed[cur]; ok && prev.Sub(first.ev.Time) > behind {
				return &InputError{Pos: first.pos, Field: "timestamp", Err: fmt.Errorf("market %s's rows met again after other markets', %s before its event at %s read before: a PMXT hour is sorted by market, then asset and time received (sort the file so)",
					cur, prev.Sub(first.ev.Time), prev.UTC().Format(time.RFC3339Nano))}
			}
			if last.After(handed[cur]) {
				handed[cur] = last
			}
		}
		return fn(sorted)
	}
	buf := make([]parquet.Row, 512)
	for _, rg := range p.pf.RowGroups() {
		rows := rg.Rows()
		for {
			if ctx.Err() != nil {
				rows.Close()
				return ctx.Err()
			}
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				rowNum++
				p.pick(row, &vals)
				pos := Pos{File: p.name, Row: rowNum}
				market := vals[colMarket].ByteArray()
				if !started || string(market) != cur {
					if err := flush(); err != nil {
						rows.Close()
						return err
					}
					started, cur = true, p.intern(market)
					var werr error
					if keep, werr = want(cur, pos); werr != nil {
						rows.Close()
						return werr
					}
				}
				if !keep {
					*skipped++
					continue
				}
				ev, received, err := p.event(&vals, pos)
				if err != nil {
					rows.Close()
					return err
				}
				items = append(items, item{ev: ev, pos: pos})
				recv = append(recv, received)
			}
			rowsRead.Add(int64(n))
			if err != nil {
				rows.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return &InputError{Pos: Pos{File: p.name, Row: rowNum + 1}, Err: fmt.Errorf("reading Parquet: %w", err)}
			}
		}
	}
	return flush()
}

// event turns a row into the market channel's event, checked as a frame
// is (book.Wire.Check).
func (p *pmxtFile) event(vals *[16]parquet.Value, pos Pos) (book.Event, int64, error) {
	bad := func(field string, err error) (book.Event, int64, error) {
		return book.Event{}, 0, &InputError{Pos: pos, Field: field, Err: err}
	}
	received, err := intOf(vals[colReceived])
	if err != nil {
		return bad("timestamp_received", err)
	}
	ts, err := intOf(vals[colTimestamp])
	if err != nil {
		return bad("timestamp", err)
	}
	w := book.Wire{
		EventType: p.intern(vals[colEventType].ByteArray()),
		Market:    p.intern(vals[colMarket].ByteArray()),
		Millis:    ts,
		AssetID:   book.Text(p.intern(vals[colAssetID].ByteArray())),
		Side:      p.intern(vals[colSide].ByteArray()),
		TxHash:    string(vals[colTxHash].ByteArray()),
	}
	nums := []struct {
		col  int
		name string
		dst  *book.Num
	}{{colPrice, "price", &w.Price}, {colSize, "size", &w.Size}, {colBestBid, "best_bid", &w.BestBid}, {colBestAsk, "best_ask", &w.BestAsk},
		{colFee, "fee_rate_bps", &w.FeeRateBps}, {colOldTick, "old_tick_size", &w.OldTickSize}, {colNewTick, "new_tick_size", &w.NewTickSize}}
	for _, n := range nums {
		if *n.dst, err = numOf(vals[n.col], p.scales[n.col]); err != nil {
			return bad(n.name, err)
		}
	}
	switch w.EventType {
	case "book":
		for _, s := range []struct {
			col  int
			name string
			dst  *[]book.Level
		}{{colBids, "bids", &w.Bids}, {colAsks, "asks", &w.Asks}} {
			raw := vals[s.col].ByteArray()
			if len(raw) == 0 || vals[s.col].IsNull() {
				*s.dst = []book.Level{}
				continue
			}
			levels, err := pmxtLevels(raw)
			if err != nil {
				return bad(s.name, fmt.Errorf("not a JSON list of levels: %w", err))
			}
			*s.dst = levels
		}
	case "price_change":
		w.PriceChanges = []book.WireChange{{AssetID: w.AssetID, Price: w.Price, Size: w.Size, Side: w.Side, BestBid: w.BestBid, BestAsk: w.BestAsk}}
	case "":
		return bad("event_type", errors.New("missing: a row is one event of the market channel (book, price_change, last_trade_price, tick_size_change, ...)"))
	default:
		// last_trade_price and tick_size_change: their columns, read
		// above, are the whole event. best_bid_ask, new_market,
		// market_resolved, or a type the channel adds later: no book
		// change, counted and passed over as ws-jsonl's frames of those
		// types are (one importer, one event stream), not an error that
		// would refuse a whole hour for one row.
	}
	ev, err := w.Check()
	if err != nil {
		return book.Event{}, 0, frameError(pos, []byte("{}"), err)
	}
	return ev, received, nil
}

// pmxtLevels reads a book row's side: [["price","size"],...] as the PMXT
// archive v2 writes it, or the market channel's [{"price","size"},...].
func pmxtLevels(raw []byte) ([]book.Level, error) {
	var pairs [][]book.Num
	if json.Unmarshal(raw, &pairs) == nil {
		out := make([]book.Level, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("level %d has %d values, want a price and a size", i+1, len(p))
			}
			out[i] = book.Level{Price: p[0], Size: p[1]}
		}
		return out, nil
	}
	var levels []book.Level
	if err := json.Unmarshal(raw, &levels); err != nil {
		return nil, err
	}
	return levels, nil
}

// decimalOf reads a DECIMAL column of the scale, as the PMXT archive v2
// types its prices, sizes and ticks: an integer, or (as pyarrow writes
// decimals) a big-endian two's complement integer of fixed length, times
// 10^-scale, read as the float nearest the decimal.
func decimalOf(v parquet.Value, scale int) (book.Num, error) {
	var n *big.Int
	switch v.Kind() {
	case parquet.Int32:
		n = big.NewInt(int64(v.Int32()))
	case parquet.Int64:
		n = big.NewInt(v.Int64())
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if len(b) == 0 {
			return book.Num{}, nil
		}
		n = new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 { // negative
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	default:
		return book.Num{}, fmt.Errorf("a %v is not a decimal", v.Kind())
	}
	f, _ := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).Float64()
	return book.Num{V: f, Set: true}, nil
}

// intOf reads an integer column written as an integer or as text.
func intOf(v parquet.Value) (int64, error) {
	if v.IsNull() {
		return 0, errors.New("missing")
	}
	switch v.Kind() {
	case parquet.Int64:
		return v.Int64(), nil
	case parquet.Int32:
		return int64(v.Int32()), nil
	case parquet.Double:
		return int64(v.Double()), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		n, err := strconv.ParseInt(string(v.ByteArray()), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", v.ByteArray())
		}
		return n, nil
	}
	return 0, fmt.Errorf("a %v is not an integer", v.Kind())
}

// numOf reads a decimal column written as a number or as text; null and
// "" are unset.
func numOf(v parquet.Value, scale int) (book.Num, error) {
	if v.IsNull() {
		return book.Num{}, nil
	}
	if scale >= 0 {
		return decimalOf(v, scale)
	}
	switch v.Kind() {
	case parquet.Double:
		return book.Num{V: v.Double(), Set: true}, nil
	case parquet.Float:
		return book.Num{V: float64(v.Float()), Set: true}, nil
	case parquet.Int64:
		return book.Num{V: float64(v.Int64()), Set: true}, nil
	case parquet.Int32:
		return book.Num{V: float64(v.Int32()), Set: true}, nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		s := v.ByteArray()
		if len(s) == 0 {
			return book.Num{}, nil
		}
		// Parsed without keeping the text (no allocation), which only
		// ParseNum's error, for the message, does.
		if f, err := strconv.ParseFloat(string(s), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return book.Num{V: f, Set: true}, nil
		}
		f, err := book.ParseNum(string(s))
		if err != nil {
			return book.Num{}, err
		}
		return book.Num{V: f, Set: true}, nil
	}
	return book.Num{}, fmt.Errorf("a %v is not a number", v.Kind())
}
