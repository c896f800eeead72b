// Package transfer moves markets and snapshots (with their books) out of a
// store and into one, as JSON Lines or CSV, streaming: months of data pass
// through a page at a time, never whole.
//
// Formats:
//
//   - JSON Lines: one object per line, "type" "market" or "snapshot". A
//     market line carries SPEC's market fields (and coin); a snapshot line
//     the market's slug and SPEC's snapshot fields, with orderbook_up and
//     orderbook_down ({"bids":[{"price","size"}],"asks":[…]}) when books
//     were recorded. An export lists each market followed by its snapshots,
//     so one file restores a store.
//   - CSV: one kind of record per file, markets or snapshots, told apart by
//     the header; columns may come in any order. Empty cells are nulls. A
//     book is one cell, "bids|asks", each side space-separated price:size
//     levels best first ("0.51:100 0.5:20|0.52:75"); an empty cell is no
//     book.
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
	All       What = "all" // each market, then its snapshots (JSON Lines only)
	Markets   What = "markets"
	Snapshots What = "snapshots"
)

// Record is one line of an export: a market, or one snapshot of the market
// named by Slug.
type Record struct {
	Market   *store.Market
	Slug     string
	Snapshot *store.Snapshot
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
		if what != Markets && what != Snapshots {
			return nil, errors.New("transfer: a CSV file holds one kind of record: export markets or snapshots")
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
}

// Sink is what Import writes: every store.Store is one.
type Sink interface {
	UpsertMarkets(ctx context.Context, markets []store.Market) error
	AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) error
}

var (
	_ Source = store.Store(nil)
	_ Sink   = store.Store(nil)
)

// ExportOptions configure Export. Zero fields take the defaults noted.
type ExportOptions struct {
	Format Format // JSONL
	What   What   // All for JSON Lines; CSV needs Markets or Snapshots
	// Filter selects the markets (and so the snapshots) exported: Coin,
	// MarketType, Resolved, StartAfter, StartBefore. Limit, Offset and
	// Window are ignored.
	Filter store.MarketFilter
	// Books exports the snapshots' order books.
	Books bool
	// MarketPage and SnapshotPage are how many records one store read
	// returns (500 and 5,000): what Export holds in memory at once.
	MarketPage   int
	SnapshotPage int
}

// Stats counts the records moved.
type Stats struct {
	Markets   int `json:"markets"`
	Snapshots int `json:"snapshots"`
}

// Export writes the markets Filter selects, oldest start first, and their
// snapshots, oldest first, to w. Snapshots are paged oldest first, where
// new ones only append.
func Export(ctx context.Context, src Source, w io.Writer, opt ExportOptions) (Stats, error) {
	opt = exportDefaults(opt)
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
		if opt.What != Snapshots {
			if err := enc.Encode(Record{Market: m}); err != nil {
				return err
			}
			st.Markets++
		}
		if opt.What != Markets {
			n, err := exportSnapshots(ctx, src, enc, m.Slug, opt)
			st.Snapshots += n
			if err != nil {
				return err
			}
		}
		return nil
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
// Markets are paged from the oldest, whose place counted from the end of
// the newest-first listing does not move when a collector adds new markets
// meanwhile.
func eachMarket(ctx context.Context, src Source, opt ExportOptions, fn func(*store.Market) error) error {
	f := opt.Filter
	f.Window, f.Limit, f.Offset = nil, 0, 0
	for done := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		total, err := countMarkets(ctx, src, f)
		if err != nil {
			return err
		}
		left := total - done
		if left <= 0 {
			return nil
		}
		n := min(left, opt.MarketPage)
		f.Offset, f.Limit = left-n, n
		page, _, err := src.ListMarkets(ctx, f)
		if err != nil {
			return fmt.Errorf("transfer: list markets: %w", err)
		}
		if len(page) == 0 {
			return nil
		}
		slices.Reverse(page)
		for i := range page {
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		done += len(page)
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

func exportSnapshots(ctx context.Context, src Source, enc Encoder, slug string, opt ExportOptions) (int, error) {
	n := 0
	for off := 0; ; off += opt.SnapshotPage {
		page, _, err := src.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: opt.Books, Limit: opt.SnapshotPage, Offset: off})
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
	}
}

// ImportOptions configure Import. Zero fields take the defaults noted.
type ImportOptions struct {
	// Format of the input; empty tells it from the first byte.
	Format Format
	// MarketBatch and SnapshotBatch are how many records one store write
	// takes (500 and 5,000).
	MarketBatch   int
	SnapshotBatch int
}

// Import reads records from r and writes them into dst in batches:
// markets upserted, snapshots appended (a snapshot whose time the market
// has already is ignored, so importing twice stores nothing twice). A
// snapshot's market must come earlier in the input or be in dst already.
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
	var (
		st      Stats
		markets []store.Market
		slug    string
		snaps   []store.Snapshot
	)
	flushMarkets := func() error {
		if len(markets) == 0 {
			return nil
		}
		if err := dst.UpsertMarkets(ctx, markets); err != nil {
			return fmt.Errorf("transfer: store %d markets: %w", len(markets), err)
		}
		st.Markets += len(markets)
		markets = markets[:0]
		return nil
	}
	flushSnapshots := func() error {
		if len(snaps) == 0 {
			return nil
		}
		if err := flushMarkets(); err != nil { // a snapshot's market first
			return err
		}
		if err := dst.AppendSnapshots(ctx, slug, snaps); err != nil {
			return fmt.Errorf("transfer: store %d snapshots of %s: %w", len(snaps), slug, err)
		}
		st.Snapshots += len(snaps)
		snaps = snaps[:0]
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		rec, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		switch {
		case rec.Market != nil:
			markets = append(markets, *rec.Market)
			if len(markets) >= opt.MarketBatch {
				if err := flushMarkets(); err != nil {
					return st, err
				}
			}
		case rec.Snapshot != nil:
			if rec.Slug != slug || len(snaps) >= opt.SnapshotBatch {
				if err := flushSnapshots(); err != nil {
					return st, err
				}
				slug = rec.Slug
			}
			snaps = append(snaps, *rec.Snapshot)
		}
	}
	if err := flushSnapshots(); err != nil {
		return st, err
	}
	return st, flushMarkets()
}
