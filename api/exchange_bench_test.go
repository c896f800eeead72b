package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkExchangeLive measures the hot exchange endpoints through the
// real stack: concurrent keep-alive clients over HTTP, the real router
// with authentication, and the Redis LiveExchange on a throwaway
// redis-server holding the dev data set (20-level books, 1,000 trades per
// coin and kind). In the same run it measures the floor: a bare net/http
// server answering the very same bytes, pre-encoded, to the same clients.
// It reports requests per second of each and their ratio.
//
// Clients are benchClients goroutines per CPU: with one per CPU, as
// RunParallel defaults to, the real stack would wait on its Redis round
// trip with nothing else to do, and the figure would be latency, not
// throughput.
func BenchmarkExchangeLive(b *testing.B) {
	ctx := context.Background()
	live := redislive.New(redistest.Client(b), "")
	if _, err := gen.LoadLive(ctx, gen.DefaultConfig(now), live); err != nil {
		b.Fatal(err)
	}
	st := memory.New()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "bench@example.com", Tier: store.Enterprise})
	if err != nil {
		b.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}
	srv, err := api.New(api.Config{Store: st, Live: live, Logger: quiet(), Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	stack := httptest.NewServer(srv)
	defer stack.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}}
	defer client.CloseIdleConnections()

	for _, tc := range []struct{ name, path string }{
		{"latest_depth", "/v1/btc/spot/latest"},
		{"recent_trades_100", "/v1/btc/spot/trades?limit=100"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := fetchExchange(b, client, stack.URL+tc.path, key)
			floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			defer floor.Close()
			b.SetBytes(int64(len(body)))
			b.SetParallelism(benchClients)
			b.ReportAllocs()

			// The floor runs before and after the real stack, so that a
			// change in the machine's load during the run weighs on both.
			b.ResetTimer()
			b.StopTimer()
			start := time.Now()
			getConcurrently(b, client, floor.URL+tc.path, key)
			floorTook := time.Since(start)

			b.StartTimer()
			start = time.Now()
			getConcurrently(b, client, stack.URL+tc.path, key)
			realTook := time.Since(start)
			b.StopTimer()

			start = time.Now()
			getConcurrently(b, client, floor.URL+tc.path, key)
			floorTook = (floorTook + time.Since(start)) / 2

			realRate := float64(b.N) / realTook.Seconds()
			floorRate := float64(b.N) / floorTook.Seconds()
			b.ReportMetric(realRate, "req/s")
			b.ReportMetric(floorRate, "floor-req/s")
			b.ReportMetric(realRate/floorRate, "ratio-to-floor")
		})
	}
}

// benchClients is the number of concurrent clients per CPU.
const benchClients = 16

// fetchExchange GETs url once and returns the body, failing unless it is 200.
func fetchExchange(b *testing.B, client *http.Client, url, key string) []byte {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-API-Key", key)
	res, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v\n%s", url, res.StatusCode, err, body)
	}
	return body
}

// getConcurrently sends b.N GETs of url from b.RunParallel's goroutines, each
// reusing its keep-alive connections.
func getConcurrently(b *testing.B, client *http.Client, url, key string) {
	var failed atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("X-API-Key", key)
		for pb.Next() {
			res, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests to %s failed", n, b.N, url)
	}
}
