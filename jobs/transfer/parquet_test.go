package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// memFiles is a split export's directory in memory.
type memFiles map[string]*bytes.Buffer

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (fs memFiles) create(name string) (io.WriteCloser, error) {
	if _, ok := fs[name]; ok {
		return nil, errors.New("file written twice: " + name)
	}
	b := &bytes.Buffer{}
	fs[name] = b
	return nopCloser{b}, nil
}

func readParquet[T any](t *testing.T, fs memFiles, name string) []T {
	t.Helper()
	b, ok := fs[name]
	if !ok {
		t.Fatalf("no file %s", name)
	}
	rows, err := parquet.Read[T](bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rows
}

func eqFloat(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// checkParquetMarket compares a row of the markets file with the stored
// market, field by field (the upstream's fields of DESIGN 9 included).
func checkParquetMarket(t *testing.T, got transfer.ParquetMarket, m store.Market) {
	t.Helper()
	exp := func(e *int) *int64 {
		if e == nil {
			return nil
		}
		v := int64(*e)
		return &v
	}(m.FeeExponent)
	ok := got.Slug == m.Slug && got.MarketID == m.MarketID && transfer.TextOf(got.UpstreamSlug) == m.UpstreamSlug && transfer.TextOf(got.FeeType) == m.FeeType &&
		eqFloat(got.TakerFeeRate, m.TakerFeeRate) && eqFloat(got.MakerRebateRate, m.MakerRebateRate) && (got.FeeExponent == nil) == (exp == nil) &&
		(exp == nil || *got.FeeExponent == *exp) && eqFloat(got.TickSize, m.TickSize) &&
		eqFloat(got.MinOrderSize, m.MinOrderSize) && transfer.TextOf(got.ResolutionSource) == m.ResolutionSource &&
		eqFloat(got.PriceToBeat, m.PriceToBeat) && eqFloat(got.FinalPrice, m.FinalPrice) &&
		len(got.TickSizeChanges) == len(m.TickSizeChanges) && got.StartTime.Equal(m.StartTime)
	for i := 0; ok && i < len(m.TickSizeChanges); i++ {
		c := got.TickSizeChanges[i]
		ok = c.Time.Equal(m.TickSizeChanges[i].Time) && c.TickSize == m.TickSizeChanges[i].TickSize
	}
	if !ok {
		t.Errorf("markets row %+v\ndoes not carry market %+v", got, m)
	}
}

// TestParquetSplit: `export --format parquet --split market|day` writes
// markets with every field, and each market's snapshots, trades and gaps
// beside one another; the Go Parquet reader reads back what the store
// holds, trades in the store's order (paged across instants by keyset).
func TestParquetSplit(t *testing.T) {
	t.Parallel()
	st, _ := seeded(t, 2, 40)
	enrich(t, st)
	// Ties: two more trades at the instant of a market's first.
	ctx := context.Background()
	all, _, err := st.ListMarkets(ctx, store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := st.ListMarketTrades(ctx, all[0].Slug, store.MarketTradeQuery{Ascending: true, Limit: 1})
	if err != nil || len(first) != 1 {
		t.Fatalf("the first market's trades: %v %v", first, err)
	}
	m := all[0]
	m.MinOrderSize, m.PriceToBeat, m.FinalPrice = ptrTo(5.0), ptrTo(84000.5), ptrTo(84100.25)
	m.MakerRebateRate = ptrTo(0.2)
	m.UpstreamSlug, m.TickSizeChanges = "up-"+m.Slug, []store.TickSizeChange{{Time: m.StartTime.Add(time.Second), TickSize: 0.001}}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	tie1, tie2 := first[0], first[0]
	tie1.Size, tie2.TxHash = tie1.Size+1, tie2.TxHash+"f"
	if _, err := st.AppendMarketTrades(ctx, all[0].Slug, []store.MarketTrade{tie1, tie2}); err != nil {
		t.Fatal(err)
	}
	wantTrades, wantGaps := activity(t, st)
	if wantTrades == 0 || wantGaps == 0 {
		t.Fatal("the fixture has no trades or gaps")
	}

	for _, split := range []transfer.Split{transfer.SplitMarket, transfer.SplitDay} {
		t.Run(string(split), func(t *testing.T) {
			fs := memFiles{}
			stats, err := transfer.ExportSplit(ctx, st, fs.create, split,
				transfer.ExportOptions{Format: transfer.Parquet, Books: true, SnapshotPage: 7})
			if err != nil {
				t.Fatal(err)
			}
			if stats.Trades != wantTrades || stats.Gaps != wantGaps {
				t.Errorf("stats %+v, want %d trades and %d gaps", stats, wantTrades, wantGaps)
			}
			markets := readParquet[transfer.ParquetMarket](t, fs, "markets")
			if len(markets) != len(all) {
				t.Fatalf("%d markets rows, want %d", len(markets), len(all))
			}
			upstream, full := 0, 0
			rowsOf := map[string][]transfer.ParquetTrade{}
			gapsOf := map[string][]transfer.ParquetGap{}
			for name := range fs {
				kind, key, _ := strings.Cut(name, "/")
				switch kind {
				case "trades":
					for _, r := range readParquet[transfer.ParquetTrade](t, fs, name) {
						if split == transfer.SplitMarket && r.Slug != key {
							t.Fatalf("%s holds a trade of %s", name, r.Slug)
						}
						rowsOf[r.Slug] = append(rowsOf[r.Slug], r)
					}
				case "gaps":
					for _, r := range readParquet[transfer.ParquetGap](t, fs, name) {
						gapsOf[r.Slug] = append(gapsOf[r.Slug], r)
					}
				}
			}
			for _, row := range markets {
				m, err := st.GetMarket(ctx, row.Slug)
				if err != nil {
					t.Fatal(err)
				}
				checkParquetMarket(t, row, m)
				if m.UpstreamSlug != "" && len(m.TickSizeChanges) > 0 {
					upstream++
				}
				if m.MinOrderSize != nil && m.PriceToBeat != nil && m.FinalPrice != nil && m.MakerRebateRate != nil {
					full++
				}
				trades, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
				if err != nil {
					t.Fatal(err)
				}
				got := rowsOf[m.Slug]
				if len(got) != len(trades) {
					t.Fatalf("%s: %d trade rows, want %d", m.Slug, len(got), len(trades))
				}
				for i, tr := range trades {
					g := got[i]
					if !g.Time.Equal(tr.Time) || g.Outcome != tr.Outcome || g.Side != tr.Side || g.Price != tr.Price ||
						g.Size != tr.Size || g.FeeRateBps != tr.FeeRateBps || g.TxHash != tr.TxHash {
						t.Fatalf("%s trade %d: row %+v, stored %+v", m.Slug, i, g, tr)
					}
				}
				gaps, err := st.ListGaps(ctx, m.Slug)
				if err != nil {
					t.Fatal(err)
				}
				if len(gapsOf[m.Slug]) != len(gaps) {
					t.Fatalf("%s: %d gap rows, want %d", m.Slug, len(gapsOf[m.Slug]), len(gaps))
				}
				for i, g := range gaps {
					if r := gapsOf[m.Slug][i]; !r.From.Equal(g.From) || !r.To.Equal(g.To) {
						t.Errorf("%s gap %d: row %+v, stored %+v", m.Slug, i, r, g)
					}
				}
			}
			if upstream == 0 || full == 0 {
				t.Error("no market with the upstream's fields: the check of them checked nothing")
			}
			if split == transfer.SplitDay {
				for name := range fs {
					if kind, key, _ := strings.Cut(name, "/"); kind != "markets" {
						if _, err := time.Parse(time.DateOnly, key); err != nil {
							t.Errorf("%s: not a day's file", name)
						}
					}
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestSplitWhat: --what limits a split export to one kind of record,
// beside the markets' file an import reads first.
func TestSplitWhat(t *testing.T) {
	t.Parallel()
	st, _ := seeded(t, 2, 40)
	enrich(t, st)
	ctx := context.Background()
	for _, what := range []transfer.What{transfer.Markets, transfer.Snapshots, transfer.Trades, transfer.Gaps} {
		t.Run(string(what), func(t *testing.T) {
			fs := memFiles{}
			stats, err := transfer.ExportSplit(ctx, st, fs.create, transfer.SplitMarket,
				transfer.ExportOptions{Format: transfer.JSONL, What: what, Books: true})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for name := range fs {
				kind, _, _ := strings.Cut(name, "/")
				kinds[kind]++
			}
			if kinds["markets"] != 1 || len(kinds) > 2 || what != transfer.Markets && kinds[string(what)] == 0 {
				t.Errorf("files by kind %v, want markets and %s alone", kinds, what)
			}
			counted := map[transfer.What]int{transfer.Snapshots: stats.Snapshots, transfer.Trades: stats.Trades, transfer.Gaps: stats.Gaps}
			for k, n := range counted {
				if k != what && n != 0 {
					t.Errorf("%d %s exported with --what %s", n, k, what)
				}
			}
		})
	}
}

// TestSplitByMarketStaysInItsDirectory: --split market names files by
// slug, and a slug that is not a plain file name (an imported market's
// "../../x") is refused, not followed out of the export's directory;
// --split day names files by date and exports it.
func TestSplitByMarketStaysInItsDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, slug := range []string{"../../evil", "..", `..\..\evil`, "a/b"} {
		st := memory.New()
		start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
		m := store.Market{Slug: slug, MarketID: "1", Coin: store.BTC, MarketType: store.M5, StartTime: start, EndTime: start.Add(5 * time.Minute)}
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: start.Add(time.Second), CoinPrice: 1, PriceUp: 0.5, PriceDown: 0.5}}); err != nil {
			t.Fatal(err)
		}
		for _, split := range []transfer.Split{transfer.SplitMarket, transfer.SplitDay} {
			fs := memFiles{}
			_, err := transfer.ExportSplit(ctx, st, fs.create, split, transfer.ExportOptions{Format: transfer.CSV})
			for name := range fs {
				if kind, file, ok := strings.Cut(name, "/"); name != "markets" && (!ok || file == "." || file == ".." ||
					strings.ContainsAny(file, `/\`) || kind != "snapshots" && kind != "trades" && kind != "gaps") {
					t.Errorf("--split %s of market %q created %q: not a file of the export's directory", split, slug, name)
				}
			}
			switch {
			case split == transfer.SplitDay && err != nil:
				t.Errorf("--split day of market %q: %v", slug, err)
			case split == transfer.SplitMarket && (err == nil || !strings.Contains(err.Error(), strconv.Quote(slug))):
				t.Errorf("--split market of market %q: %v, want an error naming the slug", slug, err)
			}
		}
	}
}
