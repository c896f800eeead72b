package worker_test

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/worker"
)

// TestQueueMetricsRedisHung: with Redis accepting connections but not
// answering, a scrape of the queue metrics answers within a few seconds,
// with updown_queue_scrape_ok 0, rather than taking as long as
// Prometheus's default scrape timeout (10 s) and failing whole.
func TestQueueMetricsRedisHung(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	// As the processes make it (cmd/updown openRedis).
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: 1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(worker.NewQueueCollector(rdb, slog.New(slog.NewTextHandler(io.Discard, nil))))

	start := time.Now()
	families, err := reg.Gather()
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 4*time.Second {
		t.Errorf("the scrape took %v with Redis hung, want a few seconds", took)
	}
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
}
