package worker_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestQueueMetricsRedisHung: with Redis accepting connections but not
// answering, a scrape of the queue metrics answers, with
// updown_queue_scrape_ok 0, rather than failing whole. How soon is
// BenchmarkQueueMetricsRedisHung's figure.
func TestQueueMetricsRedisHung(t *testing.T) {
	t.Parallel()
	families, took := scrapeRedisHung(t)
	var ok *float64
	for _, f := range families {
		if f.GetName() == "updown_queue_scrape_ok" && len(f.GetMetric()) == 1 {
			v := f.GetMetric()[0].GetGauge().GetValue()
			ok = &v
		}
	}
	if ok == nil || *ok != 0 {
		t.Errorf("updown_queue_scrape_ok = %v, want 0", ok)
	}
	t.Logf("the scrape took %v with Redis hung", took.Round(time.Millisecond))
}

// BenchmarkQueueMetricsRedisHung reports how long a scrape of the queue
// metrics takes with Redis hung (ms_scrape): under Prometheus's default
// scrape timeout of 10 s, which the code before the 2 s bound took.
func BenchmarkQueueMetricsRedisHung(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		_, took := scrapeRedisHung(b)
		total += took
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms_scrape")
}

// scrapeRedisHung gathers the queue metrics of a Redis that stopped
// answering (its connections open: stuck, or cut off) and returns them
// and how long the gathering took.
func scrapeRedisHung(tb testing.TB) ([]*dto.MetricFamily, time.Duration) {
	rd := redistest.Start(tb)
	opt, err := redis.ParseURL(rd.URL)
	if err != nil {
		tb.Fatal(err)
	}
	// As the processes make it (cmd/updown openRedis).
	opt.MaxRetries, opt.ContextTimeoutEnabled = 1, true
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(worker.NewQueueCollector(rdb, slog.New(slog.NewTextHandler(io.Discard, nil))))
	rd.Pause()
	defer rd.Resume()
	start := time.Now()
	families, err := reg.Gather()
	took := time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	return families, took
}
