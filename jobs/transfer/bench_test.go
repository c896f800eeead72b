package transfer_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// Export and import throughput, in snapshots (with two books of ten
// levels) per second. The reference is what the collector records of all
// series together, about 100 snapshots/s, 260 million a month:
// months/hour says how many months of recordings move in an hour.
const realRate = 100.0

func reportRate(b *testing.B, snapshots int) {
	rate := float64(snapshots) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "snapshots/s")
	b.ReportMetric(rate*3600/(realRate*86400*30), "months/hour")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkExport(b *testing.B) {
	src, seed := seeded(b, 4, 1000)
	for _, f := range []transfer.Format{transfer.JSONL, transfer.CSV} {
		b.Run(string(f)+"/memory", func(b *testing.B) {
			opt := transfer.ExportOptions{Format: f, Books: true}
			if f == transfer.CSV {
				opt.What = transfer.Snapshots
			}
			var bytes int64
			for b.Loop() {
				w := &countingWriter{}
				if _, err := transfer.Export(context.Background(), src, w, opt); err != nil {
					b.Fatal(err)
				}
				bytes = w.n
			}
			b.ReportMetric(float64(bytes)/float64(seed.Snapshots), "bytes/snapshot")
			reportRate(b, b.N*seed.Snapshots)
		})
	}
	b.Run("jsonl/postgres", func(b *testing.B) {
		pg := pgtest.NewStore(b)
		data, _ := export(b, src, transfer.ExportOptions{Books: true})
		importInto(b, pg, data, transfer.ImportOptions{})
		for b.Loop() {
			if _, err := transfer.Export(context.Background(), pg, io.Discard, transfer.ExportOptions{Books: true}); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, b.N*seed.Snapshots)
	})
}

func BenchmarkImport(b *testing.B) {
	src, seed := seeded(b, 4, 1000)
	for _, f := range []transfer.Format{transfer.JSONL, transfer.CSV} {
		opt := transfer.ExportOptions{Format: f, Books: true}
		if f == transfer.CSV {
			opt.What = transfer.Snapshots
		}
		data, _ := export(b, src, opt)
		markets, _ := export(b, src, transfer.ExportOptions{Format: transfer.JSONL, What: transfer.Markets})
		b.Run(string(f)+"/memory", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dst := memory.New()
				importInto(b, dst, markets, transfer.ImportOptions{})
				b.StartTimer()
				importInto(b, dst, data, transfer.ImportOptions{})
			}
			reportRate(b, b.N*seed.Snapshots)
		})
	}
	data, _ := export(b, src, transfer.ExportOptions{Books: true})
	b.Run("jsonl/postgres", func(b *testing.B) {
		pgtest.NewStore(b) // skip early without Postgres
		for b.Loop() {
			b.StopTimer()
			dst := pgtest.NewStore(b)
			b.StartTimer()
			importInto(b, dst, data, transfer.ImportOptions{})
		}
		reportRate(b, b.N*seed.Snapshots)
	})
}

// BenchmarkDecode measures the parsers alone, without a store.
func BenchmarkDecode(b *testing.B) {
	src, seed := seeded(b, 4, 1000)
	for _, f := range []transfer.Format{transfer.JSONL, transfer.CSV} {
		opt := transfer.ExportOptions{Format: f, Books: true}
		if f == transfer.CSV {
			opt.What = transfer.Snapshots
		}
		data, _ := export(b, src, opt)
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				dec, err := transfer.NewDecoder(bytes.NewReader(data), f)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := dec.Decode(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(int64(len(data)))
			reportRate(b, b.N*seed.Snapshots)
		})
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

var _ store.Store = (*memory.Store)(nil)
