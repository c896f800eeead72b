package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// seeded is a memory store with generated data: every series, a live
// market per series, a collector gap, books of ten levels, at most
// perMarket snapshots a market (a 5m market has 1,000 at 300 ms).
func seeded(t testing.TB, perSeries, perMarket int) (*memory.Store, gen.Stats) {
	t.Helper()
	cfg := gen.DefaultConfig(time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC))
	for mt := range cfg.Markets {
		cfg.Markets[mt] = perSeries
	}
	cfg.MaxSnapshotsPerMarket = perMarket
	cfg.DepthHistory = 0
	st := memory.New()
	stats, err := gen.Seed(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, stats
}

func export(t testing.TB, st transfer.Source, opt transfer.ExportOptions) ([]byte, transfer.Stats) {
	t.Helper()
	var buf bytes.Buffer
	stats, err := transfer.Export(context.Background(), st, &buf, opt)
	if err != nil {
		t.Fatalf("export %+v: %v", opt, err)
	}
	return buf.Bytes(), stats
}

func importInto(t testing.TB, st transfer.Sink, data []byte, opt transfer.ImportOptions) transfer.Stats {
	t.Helper()
	stats, err := transfer.Import(context.Background(), st, bytes.NewReader(data), opt)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return stats
}

// TestRoundTrip exports a store, imports the export into an empty store
// and exports that: the two exports must be the same bytes, in each
// format, with and without books, in small pages and batches (so that
// paging and batching are crossed many times).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	src, seed := seeded(t, 3, 200)
	small := func(o transfer.ExportOptions) transfer.ExportOptions {
		o.MarketPage, o.SnapshotPage = 7, 50
		return o
	}
	for _, tc := range []struct {
		name string
		opts []transfer.ExportOptions // files imported one after another
	}{
		{"jsonl", []transfer.ExportOptions{{Format: transfer.JSONL, Books: true}}},
		{"jsonl-small-pages", []transfer.ExportOptions{small(transfer.ExportOptions{Format: transfer.JSONL, Books: true})}},
		{"jsonl-without-books", []transfer.ExportOptions{{Format: transfer.JSONL}}},
		{"csv", []transfer.ExportOptions{{Format: transfer.CSV, What: transfer.Markets}, small(transfer.ExportOptions{Format: transfer.CSV, What: transfer.Snapshots, Books: true})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := memory.New()
			var first [][]byte
			for _, o := range tc.opts {
				data, stats := export(t, src, o)
				if o.What != transfer.Snapshots && stats.Markets != seed.Markets {
					t.Errorf("exported %d markets, the store has %d", stats.Markets, seed.Markets)
				}
				if o.What != transfer.Markets && stats.Snapshots != seed.Snapshots {
					t.Errorf("exported %d snapshots, the store has %d", stats.Snapshots, seed.Snapshots)
				}
				in := importInto(t, dst, data, transfer.ImportOptions{MarketBatch: 5, SnapshotBatch: 64})
				if in.Markets != stats.Markets || in.Snapshots != stats.Snapshots {
					t.Errorf("imported %+v of an export of %+v", in, stats)
				}
				first = append(first, data)
			}
			for i, o := range tc.opts {
				again, _ := export(t, dst, o)
				if !bytes.Equal(first[i], again) {
					t.Fatalf("export → import → export differs (%d vs %d bytes), first difference at byte %d:\n%s",
						len(first[i]), len(again), diffAt(first[i], again), around(again, diffAt(first[i], again)))
				}
			}
		})
	}
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func around(b []byte, i int) string {
	return string(b[max(0, i-200):min(len(b), i+200)])
}

func TestExportShapes(t *testing.T) {
	t.Parallel()
	st := memory.New()
	ctx := context.Background()
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	up, p := store.OutcomeUp, 95000.5
	resolved := start.Add(5*time.Minute + 12345*time.Microsecond)
	m := store.Market{Slug: "btc-updown-5m-1777467600", MarketID: "1043567", EventID: "98765", Coin: store.BTC, MarketType: store.M5,
		StartTime: start, EndTime: start.Add(5 * time.Minute), CoinPriceStart: &p, ConditionID: "0xab\"c", ClobTokenUp: "1", ClobTokenDown: "2",
		Winner: &up, ResolvedAt: &resolved, CreatedAt: start.Add(-time.Minute), UpdatedAt: resolved}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	snaps := []store.Snapshot{
		{Time: start, CoinPrice: 95000.5, PriceUp: 0.52, PriceDown: 0.49,
			BookUp:   &store.Book{Bids: []store.Level{{Price: 0.51, Size: 100}}, Asks: []store.Level{{Price: 0.52, Size: 12.5}, {Price: 0.53, Size: 1}}},
			BookDown: &store.Book{}},
		{Time: start.Add(300 * time.Millisecond), CoinPrice: 95001, PriceUp: 0.5, PriceDown: 0.51},
	}
	if err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
		t.Fatal(err)
	}
	data, _ := export(t, st, transfer.ExportOptions{Books: true})
	want := `{"type":"market","slug":"btc-updown-5m-1777467600","market_id":"1043567","event_id":"98765","coin":"BTC","market_type":"5m",` +
		`"start_time":"2026-04-29T13:00:00.000000Z","end_time":"2026-04-29T13:05:00.000000Z","coin_price_start":95000.5,"coin_price_end":null,` +
		`"condition_id":"0xab\"c","clob_token_up":"1","clob_token_down":"2","winner":"Up","final_volume":null,"final_liquidity":null,` +
		`"resolved_at":"2026-04-29T13:05:00.012345Z","created_at":"2026-04-29T12:59:00.000000Z","updated_at":"2026-04-29T13:05:00.012345Z"}` + "\n" +
		`{"type":"snapshot","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:00.000000Z","coin_price":95000.5,"price_up":0.52,"price_down":0.49,` +
		`"orderbook_up":{"bids":[{"price":0.51,"size":100}],"asks":[{"price":0.52,"size":12.5},{"price":0.53,"size":1}]},"orderbook_down":{"bids":[],"asks":[]}}` + "\n" +
		`{"type":"snapshot","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:00.300000Z","coin_price":95001,"price_up":0.5,"price_down":0.51}` + "\n"
	if string(data) != want {
		t.Errorf("JSON Lines export:\n%s\nwant:\n%s", data, want)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Snapshots, Books: true})
	want = "slug,time,coin_price,price_up,price_down,orderbook_up,orderbook_down\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:00.000000Z,95000.5,0.52,0.49,0.51:100|0.52:12.5 0.53:1,|\n" +
		"btc-updown-5m-1777467600,2026-04-29T13:00:00.300000Z,95001,0.5,0.51,,\n"
	if string(data) != want {
		t.Errorf("CSV snapshots export:\n%s\nwant:\n%s", data, want)
	}
	data, _ = export(t, st, transfer.ExportOptions{Format: transfer.CSV, What: transfer.Markets})
	if !strings.Contains(string(data), `"0xab""c"`) || !strings.HasPrefix(string(data), "slug,market_id,event_id,coin,market_type,") {
		t.Errorf("CSV markets export:\n%s", data)
	}
	if _, err := transfer.Export(ctx, st, io.Discard, transfer.ExportOptions{Format: transfer.CSV}); err == nil {
		t.Errorf("a CSV export of markets and snapshots together was accepted")
	}
	// Filters select markets.
	data, stats := export(t, st, transfer.ExportOptions{Filter: store.MarketFilter{Coin: store.ETH}})
	if stats.Markets != 0 || len(data) != 0 {
		t.Errorf("ETH export of a BTC store: %+v %q", stats, data)
	}
}

func TestImportRejectsBadInput(t *testing.T) {
	t.Parallel()
	const market = `{"type":"market","slug":"btc-updown-5m-1","coin":"BTC","market_type":"5m","start_time":"2026-01-01T00:00:00Z","end_time":"2026-01-01T00:05:00Z"}`
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "{nope\n", "line 1"},
		{"unknown type", `{"type":"trade"}`, "neither market nor snapshot"},
		{"bad coin", strings.Replace(market, `"BTC"`, `"DOGE"`, 1), "DOGE"},
		{"bad type", strings.Replace(market, `"5m"`, `"7m"`, 1), "7m"},
		{"end before start", strings.Replace(market, `00:05:00Z`, `00:00:00Z`, 1), "not after"},
		{"bad time", strings.Replace(market, `2026-01-01T00:00:00Z`, `yesterday`, 1), "RFC 3339"},
		{"bad winner", strings.Replace(market, `"coin"`, `"winner":"Sideways","coin"`, 1), "Sideways"},
		{"snapshot without price", market + "\n" + `{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5}`, "line 2"},
		{"level without size", market + "\n" + `{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5,"price_down":0.5,"orderbook_up":{"bids":[{"price":0.5}]}}`, "price and size"},
		{"snapshot of no market", `{"type":"snapshot","slug":"btc-updown-5m-9","time":"2026-01-01T00:00:00Z","coin_price":1,"price_up":0.5,"price_down":0.5}`, "not found"},
		{"csv unknown header", "a,b,c\n1,2,3\n", "neither the market columns"},
		{"csv NaN", "slug,time,coin_price,price_up,price_down\nx,2026-01-01T00:00:00Z,NaN,0.5,0.5\n", "not a finite number"},
		{"csv bad book", "slug,time,coin_price,price_up,price_down,orderbook_up\nx,2026-01-01T00:00:00Z,1,0.5,0.5,0.5:1\n", "bids|asks"},
		{"csv ragged", "slug,time,coin_price,price_up,price_down\nx,2026-01-01T00:00:00Z,1\n", "wrong number of fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := transfer.Import(context.Background(), memory.New(), strings.NewReader(tc.in), transfer.ImportOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import of %s: %v, want an error mentioning %q", tc.name, err, tc.want)
			}
		})
	}
}

// TestImportIsIdempotent imports one export twice: nothing is stored twice.
func TestImportIsIdempotent(t *testing.T) {
	t.Parallel()
	src, seed := seeded(t, 1, 200)
	data, _ := export(t, src, transfer.ExportOptions{Books: true})
	dst := memory.New()
	importInto(t, dst, data, transfer.ImportOptions{})
	importInto(t, dst, data, transfer.ImportOptions{})
	again, stats := export(t, dst, transfer.ExportOptions{Books: true})
	if stats.Snapshots != seed.Snapshots || !bytes.Equal(data, again) {
		t.Errorf("after importing twice: %d snapshots (want %d), export equal: %v", stats.Snapshots, seed.Snapshots, bytes.Equal(data, again))
	}
}

// TestImportStopsOnCancel checks a cancelled import returns at once.
func TestImportStopsOnCancel(t *testing.T) {
	t.Parallel()
	src, _ := seeded(t, 1, 200)
	data, _ := export(t, src, transfer.ExportOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := transfer.Import(ctx, memory.New(), bytes.NewReader(data), transfer.ImportOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled import: %v", err)
	}
}
