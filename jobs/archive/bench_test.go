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
// the 1 GB figure): rows (events) per second, MB per second, and the
// process's peak RSS, which stays flat as the stream grows (the importer
// holds one line and each market's books and unwritten snapshots).
func BenchmarkImportStream(b *testing.B) {
	mb := mbFromEnv(64)
	path, markets, cp := benchStream(b, mb)
	st, _ := os.Stat(path)
	rssBefore := peakRSSMB()
	var events, snaps int64
	b.ResetTimer()
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
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	b.ReportMetric(rssBefore, "RSS-before-MB")
}

// BenchmarkImportVsCopy imports a generated stream into Postgres and, in
// the same run, writes the same snapshots (and trades) into another
// database through the store's COPY path (AppendSnapshots, 2,048 a call);
// import-vs-copy is the ratio of their snapshots per second (1 or more:
// the import keeps up with COPY), each over all the run's iterations, so
// that one iteration slowed by a busy machine weighs as little on one
// side as on the other.
func BenchmarkImportVsCopy(b *testing.B) {
	ctx := context.Background()
	path, markets, cp := benchStream(b, mbFromEnv(8))
	var importSnaps, copySnaps int64
	var importTime, copyTime time.Duration
	for b.Loop() {
		b.StopTimer()
		st := pgtest.NewStore(b)
		other := pgtest.NewStore(b)
		b.StartTimer()
		began := time.Now()
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: markets, Prices: cp})
		if err != nil {
			b.Fatal(err)
		}
		importTime += time.Since(began)
		importSnaps += sum.Import.Snapshots
		b.StopTimer()
		var all [][]store.Snapshot
		var trades [][]store.MarketTrade
		var n int
		for _, m := range markets {
			s, _, err := st.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
			if err != nil {
				b.Fatal(err)
			}
			tr, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
			if err != nil {
				b.Fatal(err)
			}
			all, trades = append(all, s), append(trades, tr)
			n += len(s)
		}
		if err := other.UpsertMarkets(ctx, markets); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began = time.Now()
		for i, m := range markets {
			for chunk := range slices.Chunk(all[i], 2048) {
				if err := other.AppendSnapshots(ctx, m.Slug, chunk); err != nil {
					b.Fatal(err)
				}
			}
			if err := other.AppendMarketTrades(ctx, m.Slug, trades[i]); err != nil {
				b.Fatal(err)
			}
		}
		copyTime += time.Since(began)
		copySnaps += int64(n)
	}
	importRate, copyRate := float64(importSnaps)/importTime.Seconds(), float64(copySnaps)/copyTime.Seconds()
	b.ReportMetric(importRate, "import-snapshots/s")
	b.ReportMetric(copyRate, "copy-snapshots/s")
	b.ReportMetric(importRate/copyRate, "import-vs-copy")
}
