package collect_test

import (
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// Snapshot write rates the benchmark is compared with: what the collector
// records of all series together at 300 ms (11 series, about 37
// snapshots/s; REFERENCE.md's ~100/s counts the next markets and slack),
// and the target of twenty times that.
const (
	realRate   = 100.0
	targetRate = 20 * realRate
)

// BenchmarkCollectorSnapshots measures the snapshots per second the
// collector sustains into a store against fast fake upstreams: every
// series live, a 1 ms cadence, exchange depth and trades polled as usual
// beside it. One op is one snapshot written.
func BenchmarkCollectorSnapshots(b *testing.B) {
	for _, tc := range []struct {
		name string
		mk   func(testing.TB) store.Store
	}{
		{"memory", func(testing.TB) store.Store { return memory.New() }},
		{"postgres", func(tb testing.TB) store.Store { return pgtest.NewStore(tb) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			scheme := hourScheme()
			r := newRig(b, tc.mk(b), scheme)
			series := collect.AllSeries()
			now := time.Now()
			r.poly.AddRange(series, now, now)
			cfg := r.config(scheme, series)
			cfg.Interval = time.Millisecond
			cfg.MaxInFlight = 8
			cfg.DepthInterval, cfg.TradesInterval = time.Second, 2*time.Second // the production cadences
			c, stop := start(b, cfg)
			eventually(b, 10*time.Second, "first snapshots", func() bool { return c.Stats().Snapshots > 0 })

			base := c.Stats().Snapshots
			b.ResetTimer()
			for c.Stats().Snapshots-base < int64(b.N) {
				time.Sleep(2 * time.Millisecond)
			}
			b.StopTimer()
			rate := float64(c.Stats().Snapshots-base) / b.Elapsed().Seconds()
			stop()
			b.ReportMetric(rate, "snapshots/s")
			b.ReportMetric(rate/realRate, "x_real_rate")
			b.ReportMetric(rate/targetRate, "x_target")
		})
	}
}
