package archive_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// discard is an archive.Store that keeps nothing but counts: the importer
// alone is measured, its memory not hidden by a store's.
type discard struct{ snaps, trades int64 }

func (d *discard) BeginImport(context.Context) (store.ImportTx, error) { return d, nil }
func (d *discard) ListImports(context.Context) ([]store.Import, error) { return nil, nil }
func (d *discard) MarketsByCondition(context.Context, []string) ([]store.Market, error) {
	return nil, nil
}
func (d *discard) AddMarket(context.Context, store.Market, string) (bool, error) { return true, nil }
func (d *discard) AppendSnapshots(_ context.Context, _ string, s []store.Snapshot) (int, error) {
	d.snaps += int64(len(s))
	return len(s), nil
}
func (d *discard) AppendMarketTrades(_ context.Context, _ string, t []store.MarketTrade) (int, error) {
	d.trades += int64(len(t))
	return len(t), nil
}
func (d *discard) ReplaceGaps(context.Context, string, time.Time, time.Time, []store.Gap) error {
	return nil
}
func (d *discard) Commit(_ context.Context, imp store.Import) (store.Import, bool, error) {
	return imp, true, nil
}
func (d *discard) Rollback(context.Context) error { return nil }
func (d *discard) ListSnapshots(context.Context, string, store.SnapshotQuery) ([]store.Snapshot, int, error) {
	return nil, 0, nil
}
func (d *discard) ListGaps(context.Context, string) ([]store.Gap, error) {
	return nil, nil
}
func (d *discard) ListMarketTrades(context.Context, string, store.MarketTradeQuery) ([]store.MarketTrade, int, error) {
	return nil, 0, nil
}

// benchStream writes a ws-jsonl stream of hourly markets (each its own
// hour of events, markets one after the other) until it holds about mb
// megabytes, and returns the file, its markets and the klines covering
// them.
func benchStream(b testing.TB, mb int) (string, []store.Market, *archive.CoinPrices) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var markets []store.Market
	written := 0
	start := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	for i := 0; written < mb<<20; i++ {
		m := fxMarket(store.BTC, start.Add(time.Duration(i)*time.Hour), 100+i)
		m.MarketType, m.EndTime = store.H1, m.StartTime.Add(time.Hour)
		m.Slug = "btc-updown-1hr-" + strconv.FormatInt(m.StartTime.Unix(), 10)
		markets = append(markets, m)
		evs := fxStream(m, m.StartTime, m.EndTime, uint64(i+1), 0)
		slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
		for _, e := range evs {
			fr := e.frame()
			w.Write(fr)
			w.WriteByte('\n')
			written += len(fr) + 1
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	cp := archive.NewCoinPrices()
	kl := filepath.Join(b.TempDir(), "BTCUSDT-1s.csv")
	kf, _ := os.Create(kl)
	kw := bufio.NewWriter(kf)
	for at := start; at.Before(markets[len(markets)-1].EndTime); at = at.Add(time.Second) {
		fmt.Fprintf(kw, "%d,95000,95001,94999,95000.5,1,%d,1,1,1,1,0\n", at.UnixMilli(), at.UnixMilli()+999)
	}
	kw.Flush()
	kf.Close()
	r, _ := os.Open(kl)
	defer r.Close()
	if err := cp.AddKlines(store.BTC, kl, r); err != nil {
		b.Fatal(err)
	}
	return path, markets, cp
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

func mbFromEnv(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ARCHIVE_BENCH_MB")); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkImportStream measures the importer (parse, rebuild, sample) on
// a generated ws-jsonl stream, 64 MB by default (ARCHIVE_BENCH_MB=1024 for
// the 1 GB figure): rows (events) per second, MB per second, the CPU time
// an import takes (on a busy machine a steadier figure than the rates),
// and the process's peak RSS, which stays flat as the stream grows (the importer
// holds one line and each market's books and unwritten snapshots).
func BenchmarkImportStream(b *testing.B) {
	mb := mbFromEnv(64)
	path, markets, cp := benchStream(b, mb)
	st, _ := os.Stat(path)
	rssBefore := peakRSSMB()
	var events, snaps int64
	cpu := processCPU()
	for b.Loop() {
		d := &discard{}
		sum, err := archive.Import(context.Background(), d, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: markets, Prices: cp})
		if err != nil {
			b.Fatal(err)
		}
		events, snaps = sum.Events, d.snaps
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(events)/sec, "rows/s")
	b.ReportMetric(float64(snaps)/sec, "snapshots/s")
	b.ReportMetric(float64(st.Size())/(1<<20)/sec, "MB/s")
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	b.ReportMetric(rssBefore, "RSS-before-MB")
}

// BenchmarkImportVsCopy compares, on the same Postgres server and in the
// same run, an import of a generated ws-jsonl stream (ARCHIVE_BENCH_MB, 32
// MB by default) with the store's COPY path writing the same rows: the
// snapshots and trades that import stored, read back before the timing,
// written into markets stored beforehand through AppendSnapshots (2,048 a
// call, a transaction each, its chunks by COPY) and AppendMarketTrades.
// The import's time holds all of its work besides: reading, decoding and
// digesting the file, rebuilding the books, sampling the grid, the
// markets' rows, the gaps and the import's record, in one transaction.
// Each side writes into a new database every time, twice an iteration,
// in the order import, copy, copy, import, so that neither always finds
// the server (or the machine) as the other left it.
//
// import-vs-copy is the ratio of their snapshots per second (1 or more:
// the import keeps up with COPY), each over all the run's iterations.
// The import spreads its work over goroutines (decoding, rebuilding,
// writing) while the COPY path waits for the server in turn, so the ratio
// rests on idle cores: on a machine whose cores are all busy it tends to
// the ratio of CPU time, hence the CPU time each side takes in this
// process (the server's is not counted) and the load average beside it.
func BenchmarkImportVsCopy(b *testing.B) {
	ctx := context.Background()
	path, markets, cp := benchStream(b, mbFromEnv(32))
	opt := archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: markets, Prices: cp}
	src := pgtest.NewStore(b)
	first, err := archive.Import(ctx, src, opt)
	if err != nil {
		b.Fatal(err)
	}
	var snaps [][]store.Snapshot
	var trades [][]store.MarketTrade
	var nSnaps, nTrades int64
	for _, m := range markets {
		s, _, err := src.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		if err != nil {
			b.Fatal(err)
		}
		tr, _, err := src.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			b.Fatal(err)
		}
		snaps, trades = append(snaps, s), append(trades, tr)
		nSnaps, nTrades = nSnaps+int64(len(s)), nTrades+int64(len(tr))
	}
	if nSnaps != first.Import.Snapshots || nTrades != first.Import.Trades {
		b.Fatalf("read back %d snapshots and %d trades, the import wrote %d and %d", nSnaps, nTrades, first.Import.Snapshots, first.Import.Trades)
	}
	// A side's preparation (a new database, and the markets for COPY) is
	// not timed; what it returns is.
	type side struct {
		wall, cpu time.Duration
	}
	var imp, cpy side
	measure := func(sd *side, prepare func() func()) {
		b.StopTimer()
		run := prepare()
		b.StartTimer()
		cpu, began := processCPU(), time.Now()
		run()
		sd.wall += time.Since(began)
		sd.cpu += processCPU() - cpu
	}
	importSide := func() {
		measure(&imp, func() func() {
			st := pgtest.NewStore(b)
			return func() {
				sum, err := archive.Import(ctx, st, opt)
				if err != nil {
					b.Fatal(err)
				}
				if sum.Import.Snapshots != nSnaps || sum.Import.Trades != nTrades {
					b.Fatalf("the import wrote %d snapshots and %d trades, want %d and %d", sum.Import.Snapshots, sum.Import.Trades, nSnaps, nTrades)
				}
			}
		})
	}
	copySide := func() {
		measure(&cpy, func() func() {
			other := pgtest.NewStore(b)
			if err := other.UpsertMarkets(ctx, markets); err != nil {
				b.Fatal(err)
			}
			return func() {
				for i, m := range markets {
					for chunk := range slices.Chunk(snaps[i], 2048) {
						if _, err := other.AppendSnapshots(ctx, m.Slug, chunk); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := other.AppendMarketTrades(ctx, m.Slug, trades[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	n := 0
	for b.Loop() { // each side first once
		importSide()
		copySide()
		copySide()
		importSide()
		n += 2
	}
	importRate, copyRate := float64(nSnaps*int64(n))/imp.wall.Seconds(), float64(nSnaps*int64(n))/cpy.wall.Seconds()
	b.ReportMetric(importRate, "import-snapshots/s")
	b.ReportMetric(copyRate, "copy-snapshots/s")
	b.ReportMetric(importRate/copyRate, "import-vs-copy")
	b.ReportMetric(float64(first.Events*int64(n))/imp.wall.Seconds(), "import-rows/s")
	b.ReportMetric(float64(imp.cpu.Milliseconds())/float64(n), "import-cpu-ms")
	b.ReportMetric(float64(cpy.cpu.Milliseconds())/float64(n), "copy-cpu-ms")
	b.ReportMetric(loadAverage(), "load-1m")
	b.Logf("the same %d snapshots and %d trades of %d markets, each side %d times; import: %d events read from %d MB, "+
		"decoded, rebuilt, sampled and written with markets, gaps and its record in one transaction; "+
		"copy: written alone into markets stored untimed (AppendSnapshots 2,048 a call, AppendMarketTrades); "+
		"CPU is this process's, the server's not counted", nSnaps, nTrades, len(markets), n, first.Events, mbFromEnv(32))
}

// processCPU is the CPU time this process has taken, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's load average over the last minute (0 where
// /proc/loadavg is not).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

// BenchmarkImportPMXT measures the importer on an hour of pmxt-v2 (36
// five-minute markets of three coins), into a store that keeps nothing:
// rows per second, the CPU time an import takes, and the process's peak
// RSS.
func BenchmarkImportPMXT(b *testing.B) {
	var markets []store.Market
	var events []fxEvent
	cp := archive.NewCoinPrices()
	for i := range 36 {
		c := []store.Coin{store.BTC, store.ETH, store.SOL}[i%3]
		m := fxMarket(c, fxHour.Add(time.Duration(5*(i/3))*time.Minute), 100+i)
		markets = append(markets, m)
		events = append(events, fxStream(m, m.StartTime.Add(-10*time.Second), m.EndTime, uint64(100+i), 0)...)
	}
	for _, c := range []store.Coin{store.BTC, store.ETH, store.SOL} {
		kl := filepath.Join(b.TempDir(), string(c)+"USDT-1s.csv")
		var buf []byte
		for at := fxHour; at.Before(fxHour.Add(time.Hour)); at = at.Add(time.Second) {
			buf = fmt.Appendf(buf, "%d,95000,95001,94999,95000.5,1,%d,1,1,1,1,0\n", at.UnixMilli(), at.UnixMilli()+999)
		}
		if err := os.WriteFile(kl, buf, 0o644); err != nil {
			b.Fatal(err)
		}
		r, _ := os.Open(kl)
		if err := cp.AddKlines(c, kl, r); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	path := filepath.Join(b.TempDir(), "2026-05-12T13.parquet")
	writePMXT(b, path, pmxtRows(events))
	rssBefore := peakRSSMB()
	var rows int64
	cpu := processCPU()
	for b.Loop() {
		sum, err := archive.Import(context.Background(), &discard{}, archive.Options{Format: archive.PMXTv2, Files: []string{path}, Markets: markets, Prices: cp})
		if err != nil {
			b.Fatal(err)
		}
		rows = sum.Events
	}
	b.ReportMetric(float64(rows)/(b.Elapsed().Seconds()/float64(b.N)), "rows/s")
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	b.ReportMetric(rssBefore, "RSS-before-MB")
}
