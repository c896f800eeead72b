package worker_test

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// BenchmarkQueueOverhead measures enqueue-to-result of a no-op task through
// a real redis-server with the api's Client: the completion signal and the
// worker's default check interval (1 ns: the gate waits, not Asynq's
// sleep), beside a short sleep, the 1 ms interval of the first sessions and
// Asynq's stock 1 s, in one run.
func BenchmarkQueueOverhead(b *testing.B) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
	}{{"check=1ns(default)", time.Nanosecond}, {"check=20us", 20 * time.Microsecond}, {"check=1ms", time.Millisecond}, {"check=1s(stock)", time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			rdb := redistest.Client(b)
			w, err := worker.NewServer(worker.Config{Redis: rdb, Store: memory.New(), Logger: quietLog(), TaskCheckInterval: tc.interval})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = w.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			c, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()

			n := max(b.N, 200)
			if tc.interval >= time.Second {
				n = 10 // each costs up to a second; 10 samples tell the story
			}
			lat := make([]time.Duration, 0, n)
			b.ResetTimer()
			for i := 0; i < n; i++ {
				// A distinct payload each time: identical jobs would coalesce.
				j := worker.Job{Type: jobs.TypePing, Queue: jobs.QueueReplay, Payload: []byte(strconv.Itoa(i) + "-" + b.Name())}
				start := time.Now()
				if _, _, err := c.Run(ctx, j, "bench", 10*time.Second); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
