package postgres_test

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// shifted returns snaps moved later by d.
func shifted(snaps []store.Snapshot, d time.Duration) []store.Snapshot {
	out := make([]store.Snapshot, len(snaps))
	for i, s := range snaps {
		s.Time = s.Time.Add(d)
		out[i] = s
	}
	return out
}

// BenchmarkCopySnapshots measures bulk loading: each operation appends a
// 15-minute market's worth of snapshots (3000, with two ten-level books
// each) to a market, after what it holds, through AppendSnapshots.
func BenchmarkCopySnapshots(b *testing.B) {
	const perOp = 3000
	series := newMarketSim(1, t0).series(perOp)
	span := series[perOp-1].Time.Sub(series[0].Time) + time.Second

	b.Run("serial", func(b *testing.B) {
		s := pgtest.NewStore(b)
		slugs := markets(b, s, 16)
		round := 0
		for b.Loop() {
			slug := slugs[round%len(slugs)]
			batch := shifted(series, time.Duration(round/len(slugs))*span)
			if _, err := s.AppendSnapshots(context.Background(), slug, batch); err != nil {
				b.Fatal(err)
			}
			round++
		}
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "snapshots/s")
	})
	b.Run("parallel", func(b *testing.B) {
		s := pgtest.NewStore(b)
		slugs := markets(b, s, 64)
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				round := int(next.Add(1) - 1)
				slug := slugs[round%len(slugs)]
				// Rounds of one market may finish out of order; that is the
				// merge path, still correct, and rare here.
				batch := shifted(series, time.Duration(round/len(slugs))*span)
				if _, err := s.AppendSnapshots(context.Background(), slug, batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "snapshots/s")
	})
}

// markets stores n markets and returns their slugs.
func markets(t testing.TB, s store.Store, n int) []string {
	t.Helper()
	slugs := make([]string, n)
	for i := range slugs {
		slugs[i] = newMarket(t, s, t0.Add(time.Duration(i)*15*time.Minute))
	}
	return slugs
}

// BenchmarkListSnapshots measures reading an API page (1000 snapshots)
// of a 3000-snapshot market.
func BenchmarkListSnapshots(b *testing.B) {
	s := pgtest.NewStore(b)
	slug := newMarket(b, s, t0)
	if _, err := s.AppendSnapshots(context.Background(), slug, newMarketSim(2, t0).series(3000)); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    store.SnapshotQuery
	}{
		{"newest_with_books", store.SnapshotQuery{Limit: 1000, WithBooks: true}},
		{"middle_with_books", store.SnapshotQuery{Limit: 1000, Offset: 1000, WithBooks: true}},
		{"newest_without_books", store.SnapshotQuery{Limit: 1000}},
		{"all_ascending_with_books", store.SnapshotQuery{Ascending: true, WithBooks: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snaps, _, err := s.ListSnapshots(context.Background(), slug, tc.q)
				if err != nil || len(snaps) == 0 {
					b.Fatal(len(snaps), err)
				}
			}
		})
	}
}

// BenchmarkReadTape reads a 24hr market (288,000 snapshots) as a replay
// does: straight into a tape with one outcome's books (tape); as snapshots
// with both outcomes' books, as a listing reads it (snapshots); and, as the
// floor, the very rows fetched with their bytes untouched (fetch). x_fetch
// is a read's time over the fetch's, each the median of its runs. The books
// move as Polymarket's do (books=moving), or are drawn afresh every tick,
// the codec's worst case (books=redrawn), whose fetch bounds the first
// replay of such a market.
func BenchmarkReadTape(b *testing.B) {
	ctx := context.Background()
	s := pgtest.NewStore(b)
	moving := newMarket(b, s, t0)
	sim := newMarketSim(24, t0)
	for range 288_000 / 32_000 {
		if _, err := s.AppendSnapshots(ctx, moving, sim.series(32_000)); err != nil {
			b.Fatal(err)
		}
	}
	redrawn := newMarket(b, s, t0.Add(48*time.Hour))
	noisy := noisySeries(24, t0.Add(48*time.Hour), 288_000)
	for part := range slices.Chunk(noisy, 32_000) {
		if _, err := s.AppendSnapshots(ctx, redrawn, part); err != nil {
			b.Fatal(err)
		}
	}
	// A resolved market is read long after autovacuum has been by.
	if _, err := s.Pool().Exec(ctx, "vacuum analyze"); err != nil {
		b.Fatal(err)
	}
	for _, market := range []struct{ name, slug string }{{"books=moving", moving}, {"books=redrawn", redrawn}} {
		b.Run(market.name, func(b *testing.B) { benchReadTape(b, s, market.slug) })
	}
}

func benchReadTape(b *testing.B, s *postgres.Store, slug string) {
	ctx := context.Background()
	reads := []struct {
		name string
		read func() (int, error)
	}{
		{"fetch", func() (int, error) {
			rows, _ := s.Pool().Query(ctx, postgres.ListWithBooksSQL, slug, true, 0, math.MaxInt32)
			defer rows.Close()
			n := 0
			for rows.Next() {
				var total, before *int64
				var head, books pgtype.DriverBytes
				if err := rows.Scan(&total, &before, &head, &books); err != nil {
					return 0, err
				}
				n += len(head) + len(books)
			}
			return n, rows.Err()
		}},
		{"tape", func() (int, error) {
			t, err := s.ReadTape(ctx, slug, store.OutcomeUp)
			if err != nil {
				return 0, err
			}
			return t.Len(), nil
		}},
		{"snapshots", func() (int, error) {
			snaps, _, err := s.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
			return len(snaps), err
		}},
	}
	median := map[string]float64{}
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			var times []float64
			bytes := 0
			for b.Loop() {
				start := time.Now()
				n, err := r.read()
				if err != nil || n == 0 {
					b.Fatal(n, err)
				}
				times = append(times, time.Since(start).Seconds()*1000)
				bytes = n
			}
			slices.Sort(times)
			median[r.name] = times[len(times)/2]
			b.ReportMetric(median[r.name], "p50-ms")
			if r.name == "fetch" {
				b.ReportMetric(float64(bytes)/1e6, "MB")
			} else if median["fetch"] > 0 {
				b.ReportMetric(median[r.name]/median["fetch"], "x_fetch")
			}
		})
	}
}

// chunkBytes is the size on disk of the snapshot chunks, every partition
// with its indexes and TOAST.
func chunkBytes(t testing.TB, s *postgres.Store) int64 {
	t.Helper()
	var n int64
	err := s.Pool().QueryRow(context.Background(), `
		select coalesce(sum(pg_total_relation_size(relid)), 0)::bigint
		from pg_partition_tree('snapshot_chunks')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBytesPerSnapshot loads markets as the collector would and reports
// what a snapshot costs at rest (table, indexes and TOAST of every
// partition) beside its SPEC 2.2 JSON text with both books. The target is
// at most a quarter of the JSON.
func TestBytesPerSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a hundred thousand snapshots")
	}
	t.Parallel()
	cases := []struct {
		name    string
		markets int
		n       int // snapshots per market
		series  func(seed uint64, start time.Time, n int) []store.Snapshot
		batch   func(i int) int // snapshots per append
	}{
		{"realistic, bulk", 20, 3000, realistic, func(int) int { return 3000 }},
		{"realistic, live (1-5 per append, then VACUUM)", 1, 3000, realistic, func(i int) int { return 1 + i%5 }},
		{"noisy books, bulk", 5, 3000, noisySeries, func(int) int { return 3000 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := pgtest.NewStore(t)
			ctx := context.Background()
			slugs := markets(t, s, tc.markets)
			var js, n int
			for m, slug := range slugs {
				snaps := tc.series(uint64(m), t0.Add(time.Duration(m)*15*time.Minute), tc.n)
				js += jsonSize(snaps)
				n += len(snaps)
				for i, k := 0, 0; i < len(snaps); k++ {
					j := min(len(snaps), i+tc.batch(k))
					if _, err := s.AppendSnapshots(ctx, slug, snaps[i:j]); err != nil {
						t.Fatal(err)
					}
					i = j
				}
			}
			if _, err := s.Pool().Exec(ctx, "vacuum analyze snapshot_chunks"); err != nil {
				t.Fatal(err)
			}
			disk := chunkBytes(t, s)
			perSnap, perJSON := float64(disk)/float64(n), float64(js)/float64(n)
			ratio := perSnap / perJSON
			t.Logf("%d snapshots: %.1f bytes each at rest, JSON %.1f bytes: ratio %.3f (target ≤ 0.25)",
				n, perSnap, perJSON, ratio)
			if ratio > 0.25 {
				t.Errorf("ratio %.3f, want at most 0.25", ratio)
			}
		})
	}
}

// realistic is a marketSim series.
func realistic(seed uint64, start time.Time, n int) []store.Snapshot {
	return newMarketSim(seed, start).series(n)
}
