package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// benchTrades returns n trades from from, one every 100 ms.
func benchTrades(from time.Time, first, n int) []store.MarketTrade {
	out := make([]store.MarketTrade, n)
	for i := range out {
		k := first + i
		out[i] = store.MarketTrade{Time: from.Add(time.Duration(k) * 100 * time.Millisecond),
			Outcome: []string{store.OutcomeUp, store.OutcomeDown}[k%2], Price: float64(1+k%99) / 100, Size: 5 + float64(k%500),
			Side: []string{store.SideBuy, store.SideSell}[k/2%2], FeeRateBps: 0, TxHash: fmt.Sprintf("0x%064x", k)}
	}
	return out
}

// BenchmarkAppendMarketTrades appends 1,000 trades a call to one market,
// beside the floor: the same rows copied (COPY) into an unindexed table.
func BenchmarkAppendMarketTrades(b *testing.B) {
	const perOp = 1000
	s := pgtest.NewStore(b)
	slug := newMarket(b, s, t0)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `create table trades_floor (market bigint, time timestamptz, outcome text, side text,
		price float8, size float8, fee_rate_bps float8, tx_hash text)`); err != nil {
		b.Fatal(err)
	}
	var store_, floor time.Duration
	round := 0
	for b.Loop() {
		trades := benchTrades(t0, round*perOp, perOp)
		began := time.Now()
		if _, err := s.AppendMarketTrades(ctx, slug, trades); err != nil {
			b.Fatal(err)
		}
		store_ += time.Since(began)
		began = time.Now()
		_, err := s.Pool().CopyFrom(ctx, pgx.Identifier{"trades_floor"},
			[]string{"market", "time", "outcome", "side", "price", "size", "fee_rate_bps", "tx_hash"},
			pgx.CopyFromSlice(len(trades), func(i int) ([]any, error) {
				t := trades[i]
				return []any{int64(1), t.Time, t.Outcome, t.Side, t.Price, t.Size, t.FeeRateBps, t.TxHash}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		floor += time.Since(began)
		round++
	}
	b.ReportMetric(float64(round*perOp)/store_.Seconds(), "trades/s")
	b.ReportMetric(store_.Seconds()/floor.Seconds(), "x-copy-floor")
}

// BenchmarkListMarketTrades reads an API page (100 trades, newest first,
// with the total) of a market holding 20,000, beside the floor: the same
// rows by the key's range alone, without the total.
func BenchmarkListMarketTrades(b *testing.B) {
	const held = 20_000
	s := pgtest.NewStore(b)
	slug := newMarket(b, s, t0)
	ctx := context.Background()
	for i := 0; i < held; i += 5000 {
		if _, err := s.AppendMarketTrades(ctx, slug, benchTrades(t0, i, 5000)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `vacuum analyze market_trades`); err != nil {
		b.Fatal(err)
	}
	var store_, floor time.Duration
	n := 0
	for b.Loop() {
		offset := (n * 100) % held
		began := time.Now()
		page, total, err := s.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Limit: 100, Offset: offset})
		if err != nil || len(page) != 100 || total != held {
			b.Fatalf("page of %d, total %d: %v", len(page), total, err)
		}
		store_ += time.Since(began)
		began = time.Now()
		rows, _ := s.Pool().Query(ctx, `select time, outcome, side, price, size, fee_rate_bps, tx_hash from market_trades
			where market = (select id from markets where slug = $1)
			order by time desc, outcome desc, side desc, price desc, size desc, fee_rate_bps desc, tx_hash desc
			limit 100 offset $2`, slug, offset)
		got := 0
		for rows.Next() {
			got++
		}
		if rows.Err() != nil || got != 100 {
			b.Fatalf("floor: %d rows, %v", got, rows.Err())
		}
		floor += time.Since(began)
		n++
	}
	b.ReportMetric(float64(store_.Microseconds())/float64(n), "µs/page")
	b.ReportMetric(store_.Seconds()/floor.Seconds(), "x-range-floor")
}

// BenchmarkWalkMarketTrades walks a market of 20,000 trades newest first
// in pages of 1,000 by keyset position (what the API's cursor asks the
// store), beside the floor measured in the same run: the same walk by
// offset, which reads past every page before the one it answers.
func BenchmarkWalkMarketTrades(b *testing.B) {
	const held, size = 20_000, 1000
	s := pgtest.NewStore(b)
	slug := newMarket(b, s, t0)
	ctx := context.Background()
	for i := 0; i < held; i += 5000 {
		if _, err := s.AppendMarketTrades(ctx, slug, benchTrades(t0, i, 5000)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `vacuum analyze market_trades`); err != nil {
		b.Fatal(err)
	}
	walk := func(keyset bool) time.Duration {
		began := time.Now()
		q := store.MarketTradeQuery{Limit: size}
		read := 0
		for {
			page, _, err := s.ListMarketTrades(ctx, slug, q)
			if err != nil {
				b.Fatal(err)
			}
			read += len(page)
			if len(page) < size {
				break
			}
			if keyset {
				q.After = &page[len(page)-1]
			} else {
				q.Offset += size
			}
		}
		if read != held {
			b.Fatalf("walk read %d trades, want %d", read, held)
		}
		return time.Since(began)
	}
	var cursor, offset time.Duration
	n := 0
	for b.Loop() {
		cursor += walk(true)
		offset += walk(false)
		n++
	}
	b.ReportMetric(float64(cursor.Milliseconds())/float64(n), "ms/walk")
	b.ReportMetric(cursor.Seconds()/offset.Seconds(), "x-offset-walk")
}
