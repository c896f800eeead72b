// Package transfer moves markets and their snapshots (with their books),
// trades and recording gaps out of a store and into one, as JSON Lines or
// CSV, streaming: months of data pass through a page at a time, never whole.
//
// Formats:
//
//   - JSON Lines: one object per line, "type" "market", "snapshot",
//     "trade" or "gap". A market line carries SPEC's market fields (and
//     coin) and the upstream's (upstream_slug, taker_fee_rate,
//     fee_exponent, fee_type, maker_rebate_rate, tick_size, tick_size_changes
//     [{time, tick_size}], min_order_size, resolution_source,
//     price_to_beat, final_price) and data_sources (where its data came
//     from: ["recorder", "pmxt-v2"]); a
//     snapshot line the market's slug and SPEC's snapshot fields, with
//     orderbook_up and orderbook_down ({"bids":[{"price","size"}],"asks":[…]})
//     when books were recorded; a trade line the slug and time, outcome,
//     price, size, side, fee_rate_bps, tx_hash; a gap line the slug, from,
//     to and kind ("snapshots", or "trades" when only the trade feed was
//     down; an older export without it is snapshots). An export lists each
//     market followed by its snapshots, trades and gaps, so one file
//     restores a store.
//   - CSV: one kind of record per file, markets, snapshots, trades or gaps,
//     told apart by the header; columns may come in any order. Empty cells
//     are nulls. A book is one cell, "bids|asks", each side space-separated
//     price:size levels best first ("0.51:100 0.5:20|0.52:75"); an empty
//     cell is no book. A side imported in another order (Polymarket's REST
//     book lists sides worst first), in either format, is stored best
//     first. A market's tick size changes are one cell of
//     space-separated time=size pairs, oldest first, and its data sources
//     one cell of space-separated names.
//
// Times are UTC with microseconds (what stores keep) and numbers are
// written in the shortest form that reads back to the same float64, so an
// export imported into an empty store exports again byte for byte.
package transfer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/updown/updown/store"
)

// Format is an encoding of records.
type Format string

// Formats.
const (
	JSONL   Format = "jsonl"
	CSV     Format = "csv"
	Parquet Format = "parquet" // export only: see NewParquetEncoder
)

// What says which records an export holds.
type What string

// What an export holds.
const (
	All       What = "all" // each market, then its snapshots, trades and gaps (JSON Lines only)
	Markets   What = "markets"
	Snapshots What = "snapshots"
	Trades    What = "trades"
	Gaps      What = "gaps"
)

// valid reports whether w is one of the Whats.
func (w What) valid() bool {
	switch w {
	case All, Markets, Snapshots, Trades, Gaps:
		return true
	}
	return false
}

// Record is one line of an export: a market, or one snapshot, trade or gap
// of the market named by Slug. Exactly one of the pointers is set.
type Record struct {
	Market   *store.Market
	Slug     string
	Snapshot *store.Snapshot
	Trade    *store.MarketTrade
	Gap      *store.Gap
}

// What is the kind of record r is.
func (r Record) What() What {
	switch {
	case r.Market != nil:
		return Markets
	case r.Snapshot != nil:
		return Snapshots
	case r.Trade != nil:
		return Trades
	case r.Gap != nil:
		return Gaps
	}
	return ""
}

// Encoder writes records.
type Encoder interface {
	Encode(r Record) error
	// Flush writes what is buffered.
	Flush() error
}

// Decoder reads records; Decode returns io.EOF after the last.
type Decoder interface {
	Decode() (Record, error)
}

// NewEncoder returns an encoder of the format for records of what.
func NewEncoder(w io.Writer, f Format, what What) (Encoder, error) {
	switch f {
	case JSONL:
		return newJSONLEncoder(w), nil
	case CSV:
		if what == All || !what.valid() {
			return nil, errors.New("transfer: a CSV file holds one kind of record: export markets, snapshots, trades or gaps")
		}
		return newCSVEncoder(w, what), nil
	}
	return nil, fmt.Errorf("transfer: unknown format %q (want jsonl or csv)", f)
}

// NewDecoder returns a decoder of the format, or of the format the input
// starts like when f is empty: JSON Lines start with '{'.
func NewDecoder(r io.Reader, f Format) (Decoder, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if f == "" {
		f = CSV
		for {
			b, err := br.Peek(1)
			if err != nil {
				f = JSONL // empty input: no records either way
				break
			}
			if b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n' {
				_, _ = br.ReadByte()
				continue
			}
			if b[0] == '{' {
				f = JSONL
			}
			break
		}
	}
	switch f {
	case JSONL:
		return newJSONLDecoder(br), nil
	case CSV:
		return newCSVDecoder(br)
	}
	return nil, fmt.Errorf("transfer: unknown format %q (want jsonl or csv)", f)
}

// Source is what Export reads: every store.Store is one.
type Source interface {
	ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error)
	ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error)
	ListMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) ([]store.MarketTrade, int, error)
	ListGaps(ctx context.Context, slug string) ([]store.Gap, error)
}

// Sink is what Import writes: every store.Store is one.
type Sink interface {
	UpsertMarketsNewer(ctx context.Context, markets []store.Market) (int, error)
	AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error)
	AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error)
	RecordGaps(ctx context.Context, slug string, gaps []store.Gap) (int, error)
}

var (
	_ Source = store.Store(nil)
	_ Sink   = store.Store(nil)
)

// ExportOptions configure Export. Zero fields take the defaults noted.
type ExportOptions struct {
	Format Format // JSONL
	What   What   // All for JSON Lines; CSV needs Markets, Snapshots, Trades or Gaps
	// Filter selects the markets (and so the snapshots) exported: Coin,
	// MarketType, Resolved, StartAfter, StartBefore. Limit, Offset and
	// Window are ignored.
	Filter store.MarketFilter
	// Books exports the snapshots' order books.
	Books bool
	// MarketPage and SnapshotPage are how many records one store read
	// returns (500 and 5,000; SnapshotPage also pages trades): what Export
	// holds in memory at once.
	MarketPage   int
	SnapshotPage int
}

// Stats counts the records moved: those Export wrote, or those Import
// stored (a market written new or over an older one; a snapshot, trade
// or gap the store did not have).
type Stats struct {
	Markets   int `json:"markets"`
	Snapshots int `json:"snapshots"`
	Trades    int `json:"trades"`
	Gaps      int `json:"gaps"`
	// Kept counts, on import, the records of the input the store held
	// already and kept as they were: a market stored with a later
	// updated_at, a snapshot or trade it had, a gap its gaps covered.
	// With the counts above, every record read.
	Kept Kept `json:"kept,omitzero"`
}

// Kept counts the records of an import the store had already (Stats.Kept).
type Kept struct {
	Markets   int `json:"markets"`
	Snapshots int `json:"snapshots"`
	Trades    int `json:"trades"`
	Gaps      int `json:"gaps"`
}

// Export writes the markets Filter selects, oldest start first, and their
// snapshots, trades and gaps, each oldest first, to w. Snapshots are paged
// oldest first, where new ones only append.
func Export(ctx context.Context, src Source, w io.Writer, opt ExportOptions) (Stats, error) {
	opt = exportDefaults(opt)
	if !opt.What.valid() {
		return Stats{}, fmt.Errorf("transfer: unknown export %q (want all, markets, snapshots, trades or gaps)", opt.What)
	}
	var enc Encoder
	var err error
	if opt.Format == Parquet {
		enc, err = NewParquetEncoder(w, opt.What, opt.Books)
	} else {
		enc, err = NewEncoder(w, opt.Format, opt.What)
	}
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	err = eachMarket(ctx, src, opt, func(m *store.Market) error {
		return exportMarket(ctx, src, enc, m, opt, &st)
	})
	if err != nil {
		return st, err
	}
	return st, enc.Flush()
}

// exportDefaults fills in opt's zero fields.
func exportDefaults(opt ExportOptions) ExportOptions {
	if opt.Format == "" {
		opt.Format = JSONL
	}
	if opt.What == "" {
		opt.What = All
	}
	if opt.MarketPage <= 0 {
		opt.MarketPage = 500
	}
	if opt.SnapshotPage <= 0 {
		opt.SnapshotPage = 5000
	}
	return opt
}

// eachMarket calls fn with each market opt.Filter selects, oldest start
// first, a page of opt.MarketPage at a time.
//
// Markets are paged from the oldest, by position: each page is the oldest
// markets that start at or after the last one written, less those written
// already. Markets the collector adds meanwhile (the newest) come in their
// turn, and a market that joins or leaves the filter behind the position
// (a market that resolves under --resolved) neither repeats a market nor
// skips one, as a count from the end of the listing did.
func eachMarket(ctx context.Context, src Source, opt ExportOptions, fn func(*store.Market) error) error {
	f := opt.Filter
	f.Window, f.Limit, f.Offset = nil, 0, 0
	var last *time.Time         // start_time of the last market written
	atLast := map[string]bool{} // the markets written that start at last
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		g := f
		if last != nil {
			// StartAfter is strict: from the instant before last on
			// (stores keep microseconds).
			from := last.Add(-time.Microsecond)
			if g.StartAfter == nil || from.After(*g.StartAfter) {
				g.StartAfter = &from
			}
		}
		total, err := countMarkets(ctx, src, g)
		if err != nil {
			return err
		}
		// Enough to reach past the markets written at last, which are
		// the oldest of g.
		n := min(total, opt.MarketPage+len(atLast))
		if n <= 0 {
			return nil
		}
		g.Offset, g.Limit = total-n, n
		page, _, err := src.ListMarkets(ctx, g)
		if err != nil {
			return fmt.Errorf("transfer: list markets: %w", err)
		}
		slices.Reverse(page)
		wrote := false
		for i := range page {
			m := &page[i]
			if last != nil && m.StartTime.Equal(*last) && atLast[m.Slug] {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
			wrote = true
			if last == nil || !m.StartTime.Equal(*last) {
				t := m.StartTime
				last, atLast = &t, map[string]bool{}
			}
			atLast[m.Slug] = true
		}
		if !wrote {
			return nil
		}
	}
}

func countMarkets(ctx context.Context, src Source, f store.MarketFilter) (int, error) {
	f.Limit, f.Offset = 1, 0
	_, total, err := src.ListMarkets(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("transfer: count markets: %w", err)
	}
	return total, nil
}

// exportMarket writes the market and its records that opt.What asks for.
func exportMarket(ctx context.Context, src Source, enc Encoder, m *store.Market, opt ExportOptions, st *Stats) error {
	want := func(w What) bool { return opt.What == All || opt.What == w }
	if want(Markets) {
		if err := enc.Encode(Record{Market: m}); err != nil {
			return err
		}
		st.Markets++
	}
	if want(Snapshots) {
		n, err := exportSnapshots(ctx, src, enc, m.Slug, opt)
		st.Snapshots += n
		if err != nil {
			return err
		}
	}
	if want(Trades) {
		n, err := exportTrades(ctx, src, enc, m.Slug, opt)
		st.Trades += n
		if err != nil {
			return err
		}
	}
	if want(Gaps) {
		n, err := exportGaps(ctx, src, enc, m.Slug)
		st.Gaps += n
		if err != nil {
			return err
		}
	}
	return nil
}

func exportGaps(ctx context.Context, src Source, enc Encoder, slug string) (int, error) {
	gaps, err := src.ListGaps(ctx, slug)
	if err != nil {
		return 0, fmt.Errorf("transfer: gaps of %s: %w", slug, err)
	}
	for i := range gaps {
		if err := enc.Encode(Record{Slug: slug, Gap: &gaps[i]}); err != nil {
			return i, err
		}
	}
	return len(gaps), nil
}

// exportTrades writes the market's trades oldest first, a page at a time,
// each page after the last one's trade (a keyset walk: the store seeks,
// where an offset would skip what came before).
func exportTrades(ctx context.Context, src Source, enc Encoder, slug string, opt ExportOptions) (int, error) {
	n := 0
	q := store.MarketTradeQuery{Ascending: true, Limit: opt.SnapshotPage}
	for {
		page, _, err := src.ListMarketTrades(ctx, slug, q)
		if err != nil {
			return n, fmt.Errorf("transfer: trades of %s: %w", slug, err)
		}
		for i := range page {
			if err := enc.Encode(Record{Slug: slug, Trade: &page[i]}); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < opt.SnapshotPage {
			return n, nil
		}
		q.After = &page[len(page)-1]
	}
}

// exportSnapshots writes the market's snapshots oldest first, a page at a
// time, each page after the last one's time (a keyset walk, as trades':
// a snapshot written meanwhile among those passed, as an archive import
// fills a gap, moves no offset, so none is written twice).
func exportSnapshots(ctx context.Context, src Source, enc Encoder, slug string, opt ExportOptions) (int, error) {
	n := 0
	q := store.SnapshotQuery{Ascending: true, WithBooks: opt.Books, Limit: opt.SnapshotPage}
	for {
		page, _, err := src.ListSnapshots(ctx, slug, q)
		if err != nil {
			return n, fmt.Errorf("transfer: snapshots of %s: %w", slug, err)
		}
		for i := range page {
			if err := enc.Encode(Record{Slug: slug, Snapshot: &page[i]}); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < opt.SnapshotPage {
			return n, nil
		}
		q.After = &page[len(page)-1].Time
	}
}

// ImportOptions configure Import. Zero fields take the defaults noted.
type ImportOptions struct {
	// Format of the input; empty tells it from the first byte.
	Format Format
	// MarketBatch and SnapshotBatch are how many records one store write
	// takes (500 and 5,000; SnapshotBatch also batches trades and gaps).
	MarketBatch   int
	SnapshotBatch int
}

// Import reads records from r and writes them into dst in batches:
// markets upserted, snapshots and trades appended (one the market has
// already is ignored), gaps merged, so importing twice stores nothing
// twice. A record's market must come earlier in the input or be in dst
// already. The Stats count what dst stored, and apart (Stats.Kept) what
// it had already, as its writes report them.
func Import(ctx context.Context, dst Sink, r io.Reader, opt ImportOptions) (Stats, error) {
	if opt.MarketBatch <= 0 {
		opt.MarketBatch = 500
	}
	if opt.SnapshotBatch <= 0 {
		opt.SnapshotBatch = 5000
	}
	dec, err := NewDecoder(r, opt.Format)
	if err != nil {
		return Stats{}, err
	}
	im := importer{ctx: ctx, dst: dst, batch: opt.SnapshotBatch}
	for {
		if err := ctx.Err(); err != nil {
			return im.st, err
		}
		rec, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A bad line stops the import, and what came before it is
			// written: a run again once it is mended writes nothing twice.
			if ferr := im.finish(); ferr != nil {
				return im.st, fmt.Errorf("%w; storing the records before it: %w", err, ferr)
			}
			return im.st, err
		}
		if rec.Market != nil {
			im.markets = append(im.markets, *rec.Market)
			if len(im.markets) >= opt.MarketBatch {
				if err := im.flushMarkets(); err != nil {
					return im.st, err
				}
			}
			continue
		}
		if err := im.add(rec); err != nil {
			return im.st, err
		}
	}
	return im.st, im.finish()
}

// importer batches records for Import: markets, and the records of one
// market of one kind at a time (an export's order), written when the
// market or kind changes or the batch is full.
type importer struct {
	ctx   context.Context
	dst   Sink
	batch int
	st    Stats

	markets []store.Market
	slug    string
	what    What
	snaps   []store.Snapshot
	trades  []store.MarketTrade
	gaps    []store.Gap
}

// finish writes every batched record: the markets, and the records of
// im.slug.
func (im *importer) finish() error {
	if err := im.flush(); err != nil {
		return err
	}
	return im.flushMarkets()
}

func (im *importer) flushMarkets() error {
	if len(im.markets) == 0 {
		return nil
	}
	// A market stored with a later updated_at is left as it is: an export
	// taken earlier (before its markets resolved, say) does not take back
	// what was recorded since, and an import of an export is idempotent.
	n, err := im.dst.UpsertMarketsNewer(im.ctx, im.markets)
	if err != nil {
		return fmt.Errorf("transfer: store %d markets: %w", len(im.markets), err)
	}
	im.st.Markets += n
	im.st.Kept.Markets += len(im.markets) - n
	im.markets = im.markets[:0]
	return nil
}

// add batches a snapshot, trade or gap.
func (im *importer) add(rec Record) error {
	what := rec.What()
	if rec.Slug != im.slug || what != im.what || im.pending() >= im.batch {
		if err := im.flush(); err != nil {
			return err
		}
		im.slug, im.what = rec.Slug, what
	}
	switch what {
	case Snapshots:
		im.snaps = append(im.snaps, *rec.Snapshot)
	case Trades:
		im.trades = append(im.trades, *rec.Trade)
	case Gaps:
		im.gaps = append(im.gaps, *rec.Gap)
	}
	return nil
}

func (im *importer) pending() int { return len(im.snaps) + len(im.trades) + len(im.gaps) }

// flush writes the batched records of im.slug, after the markets batched
// before them (their market may be among those).
func (im *importer) flush() error {
	n := im.pending()
	if n == 0 {
		return nil
	}
	if err := im.flushMarkets(); err != nil {
		return err
	}
	var err error
	var stored int
	var count, kept *int
	switch im.what {
	case Snapshots:
		stored, err = im.dst.AppendSnapshots(im.ctx, im.slug, im.snaps)
		count, kept = &im.st.Snapshots, &im.st.Kept.Snapshots
	case Trades:
		stored, err = im.dst.AppendMarketTrades(im.ctx, im.slug, im.trades)
		count, kept = &im.st.Trades, &im.st.Kept.Trades
	case Gaps:
		stored, err = im.dst.RecordGaps(im.ctx, im.slug, im.gaps)
		count, kept = &im.st.Gaps, &im.st.Kept.Gaps
	}
	if err != nil {
		return fmt.Errorf("transfer: store %d %s of %s: %w", n, im.what, im.slug, NoMarketHint(im.slug, err))
	}
	*count += stored
	*kept += n - stored
	im.snaps, im.trades, im.gaps = im.snaps[:0], im.trades[:0], im.gaps[:0]
	return nil
}

// NoMarketHint says what to do when err is the store not knowing the
// market of records being imported (a snapshots, trades or gaps file of
// an --split export imported before its markets file): the store's own
// error says only "not found".
func NoMarketHint(slug string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("market %s is not stored: import its market first (the markets file of an --split export, or `updown export --what markets`), then this file: %w", slug, err)
}
