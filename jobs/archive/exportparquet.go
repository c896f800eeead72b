package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// ParquetKind is what a Parquet file holds, told by its columns.
type ParquetKind string

// Kinds of Parquet file: an `updown export` of one kind of record, or a
// PMXT archive hour.
const (
	ParquetMarkets   ParquetKind = "markets"
	ParquetSnapshots ParquetKind = "snapshots"
	ParquetTrades    ParquetKind = "trades"
	ParquetGaps      ParquetKind = "gaps"
	ParquetPMXT      ParquetKind = "pmxt-v2"
)

// KindOfParquet tells what the Parquet file holds.
func KindOfParquet(name string) (ParquetKind, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return "", &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("not a readable Parquet file: %w", err)}
	}
	if k := parquetKindOf(pf); k != "" {
		return k, nil
	}
	return "", &InputError{Pos: Pos{File: name}, Err: errors.New("neither an `updown export` Parquet file (markets, snapshots, trades or gaps) nor a PMXT archive hour")}
}

// parquetKindOf tells what the open Parquet file holds by its columns; ""
// when none of the kinds.
func parquetKindOf(pf *parquet.File) ParquetKind {
	has := func(c string) bool { _, ok := pf.Schema().Lookup(c); return ok }
	switch {
	case has("event_type") && has("asset_id"):
		return ParquetPMXT
	case has("market_id") && has("condition_id"):
		return ParquetMarkets
	case has("price_up"):
		return ParquetSnapshots
	case has("outcome") && has("tx_hash"):
		return ParquetTrades
	case has("from") && has("to") && has("slug"):
		return ParquetGaps
	}
	return ""
}

// ImportExportParquet loads a Parquet file `updown export --format
// parquet` wrote (the round trip of DESIGN 9) into dst: markets upserted,
// snapshots, trades and gaps appended as `updown import` does (a row the
// store has is ignored). A file of snapshots, trades or gaps needs its
// markets stored first.
func ImportExportParquet(ctx context.Context, dst transfer.Sink, name string) (transfer.Stats, error) {
	kind, err := KindOfParquet(name)
	if err != nil {
		return transfer.Stats{}, err
	}
	f, err := os.Open(name)
	if err != nil {
		return transfer.Stats{}, err
	}
	defer f.Close()
	var st transfer.Stats
	switch kind {
	case ParquetPMXT:
		return st, &InputError{Pos: Pos{File: name}, Err: errors.New("this is a PMXT archive hour of raw events: import it with `updown import events --format pmxt-v2 " + name + "`")}
	case ParquetMarkets:
		err = readParquet(ctx, f, func(first int64, rows []transfer.ParquetMarket) error {
			ms := make([]store.Market, len(rows))
			for i := range rows {
				ms[i] = marketOfRow(&rows[i])
				if err := checkRow(first+int64(i), transfer.Record{Market: &ms[i]}); err != nil {
					return err
				}
			}
			n, err := dst.UpsertMarketsNewer(ctx, ms) // a market stored newer is kept
			if err != nil {
				return err
			}
			st.Markets += n // counted once stored
			st.Kept.Markets += len(ms) - n
			return nil
		})
	case ParquetSnapshots:
		err = readParquet(ctx, f, func(first int64, rows []transfer.ParquetBookSnapshot) error {
			return bySlug(first, rows, func(r *transfer.ParquetBookSnapshot) string { return r.Slug }, func(first int64, slug string, rs []transfer.ParquetBookSnapshot) error {
				snaps := make([]store.Snapshot, len(rs))
				for i, r := range rs {
					snaps[i] = store.Snapshot{Time: r.Time, CoinPrice: r.CoinPrice, PriceUp: r.PriceUp, PriceDown: r.PriceDown}
					snaps[i].BookUp = bookOfRow(r.BookUpRecorded, r.BookUpBids, r.BookUpAsks)
					snaps[i].BookDown = bookOfRow(r.BookDownRecorded, r.BookDownBids, r.BookDownAsks)
					if err := checkRow(first+int64(i), transfer.Record{Slug: slug, Snapshot: &snaps[i]}); err != nil {
						return err
					}
				}
				n, err := dst.AppendSnapshots(ctx, slug, snaps)
				if err != nil {
					return transfer.NoMarketHint(slug, err)
				}
				st.Snapshots += n
				st.Kept.Snapshots += len(snaps) - n
				return nil
			})
		})
	case ParquetTrades:
		err = readParquet(ctx, f, func(first int64, rows []transfer.ParquetTrade) error {
			return bySlug(first, rows, func(r *transfer.ParquetTrade) string { return r.Slug }, func(first int64, slug string, rs []transfer.ParquetTrade) error {
				ts := make([]store.MarketTrade, len(rs))
				for i, r := range rs {
					ts[i] = store.MarketTrade{Time: r.Time, Outcome: r.Outcome, Side: r.Side, Price: r.Price, Size: r.Size, FeeRateBps: r.FeeRateBps, TxHash: r.TxHash}
					if err := checkRow(first+int64(i), transfer.Record{Slug: slug, Trade: &ts[i]}); err != nil {
						return err
					}
				}
				n, err := dst.AppendMarketTrades(ctx, slug, ts)
				if err != nil {
					return transfer.NoMarketHint(slug, err)
				}
				st.Trades += n
				st.Kept.Trades += len(ts) - n
				return nil
			})
		})
	case ParquetGaps:
		err = readParquet(ctx, f, func(first int64, rows []transfer.ParquetGap) error {
			return bySlug(first, rows, func(r *transfer.ParquetGap) string { return r.Slug }, func(first int64, slug string, rs []transfer.ParquetGap) error {
				gs := make([]store.Gap, len(rs))
				for i, r := range rs {
					kind, err := store.ParseGapKind(r.Kind) // "" in files written before gaps had kinds: snapshots
					if err != nil {
						return fmt.Errorf("row %d: gap of %s from %s: kind: %w", first+int64(i)+1, slug, r.From.Format(time.RFC3339Nano), err)
					}
					gs[i] = store.Gap{From: r.From, To: r.To, Kind: kind}
					if err := checkRow(first+int64(i), transfer.Record{Slug: slug, Gap: &gs[i]}); err != nil {
						return err
					}
				}
				n, err := dst.RecordGaps(ctx, slug, gs)
				if err != nil {
					return transfer.NoMarketHint(slug, err)
				}
				st.Gaps += n
				st.Kept.Gaps += len(gs) - n
				return nil
			})
		})
	}
	if err != nil {
		return st, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
}

// checkRow refuses the record of the file's row at index i (from 0) as
// a JSON Lines or CSV import refuses it, naming the row (from 1).
func checkRow(i int64, r transfer.Record) error {
	if err := transfer.Check(&r); err != nil {
		return fmt.Errorf("row %d: %w", i+1, err)
	}
	return nil
}

// readParquet reads the file's rows as T a batch at a time, handing fn
// the index of the batch's first row in the file.
func readParquet[T any](ctx context.Context, f *os.File, fn func(int64, []T) error) error {
	r := parquet.NewGenericReader[T](f)
	defer r.Close()
	buf := make([]T, 2048)
	var first int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		if n > 0 {
			if ferr := fn(first, buf[:n]); ferr != nil {
				return ferr
			}
			first += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// bySlug hands runs of rows of one market to fn, with the index in the
// file of a run's first row (rows start at first).
func bySlug[T any](first int64, rows []T, slug func(*T) string, fn func(int64, string, []T) error) error {
	start := 0
	for i := 1; i <= len(rows); i++ {
		if i == len(rows) || slug(&rows[i]) != slug(&rows[start]) {
			if err := fn(first+int64(start), slug(&rows[start]), rows[start:i]); err != nil {
				return err
			}
			start = i
		}
	}
	return nil
}

// bookOfRow is the book of a snapshot row's side: nil when the row says
// the snapshot has none, and in a file written before rows said so
// (recorded is null), when the side has no levels.
func bookOfRow(recorded *bool, bids, asks []transfer.ParquetLevel) *store.Book {
	if recorded != nil && !*recorded || recorded == nil && len(bids)+len(asks) == 0 {
		return nil
	}
	return &store.Book{Bids: levelsOf(bids), Asks: levelsOf(asks)}
}

func levelsOf(ls []transfer.ParquetLevel) []store.Level {
	out := make([]store.Level, len(ls))
	for i, l := range ls {
		out[i] = store.Level{Price: l.Price, Size: l.Size}
	}
	return out
}

func marketOfRow(r *transfer.ParquetMarket) store.Market {
	m := store.Market{
		Slug: r.Slug, MarketID: r.MarketID, EventID: r.EventID, Coin: store.Coin(r.Coin), MarketType: store.MarketType(r.MarketType),
		StartTime: r.StartTime, EndTime: r.EndTime, CoinPriceStart: r.CoinPriceStart, CoinPriceEnd: r.CoinPriceEnd,
		ConditionID: r.ConditionID, ClobTokenUp: r.ClobTokenUp, ClobTokenDown: r.ClobTokenDown,
		Winner: r.Winner, FinalVolume: r.FinalVolume, FinalLiquidity: r.FinalLiquidity, ResolvedAt: r.ResolvedAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, UpstreamSlug: transfer.TextOf(r.UpstreamSlug), TakerFeeRate: r.TakerFeeRate,
		MakerRebateRate: r.MakerRebateRate, FeeType: transfer.TextOf(r.FeeType), TickSize: r.TickSize, MinOrderSize: r.MinOrderSize,
		ResolutionSource: transfer.TextOf(r.ResolutionSource), PriceToBeat: r.PriceToBeat, FinalPrice: r.FinalPrice,
		DataSources: slices.Clone(r.DataSources), // rows are read into a reused buffer
	}
	if r.FeeExponent != nil {
		e := int(*r.FeeExponent)
		m.FeeExponent = &e
	}
	for _, c := range r.TickSizeChanges {
		m.TickSizeChanges = append(m.TickSizeChanges, store.TickSizeChange{Time: c.Time, TickSize: c.TickSize})
	}
	return m
}
