package main

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkLoadMixed is a bounded load run on loopback (make bench, never
// make test): `updown api` and two `updown worker` processes on Postgres
// and Redis take mixed traffic (market lists, snapshot pages, replays,
// exchange history) from 8 concurrent clients for LOAD_DURATION (default
// 60 s) or 200,000 requests, whichever comes first. Any answer other than
// 2xx (or a deliberate 429, of which there are none here: the key is
// ENTERPRISE) fails the run. p50/p99 per endpoint are reported.
func BenchmarkLoadMixed(b *testing.B) {
	duration := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LOAD_DURATION")); err == nil && d > 0 {
		duration = d
	}
	const maxRequests, clients = 200_000, 8
	updownBinary(b)
	dbURL := pgtest.NewDatabase(b)
	rd := redistest.Start(b)
	b.Setenv("DATABASE_URL", dbURL)
	runCmd(b, "seed", "--snapshots-per-market", "300")
	slugs := seedMarkets(b, dbURL, store.M15)
	key := createKey(b, dbURL, "load@example.com", store.Enterprise)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	_, base := startAPI(b, s, "LOG_LEVEL=warn")
	startWorker(b, s, "worker-1")
	startWorker(b, s, "worker-2")

	list := do(nil, http.MethodGet, base+"/v1/markets?coin=BTC&market_type=5m&resolved=true&limit=20", key, "")
	var pageSlugs []string
	for _, m := range list.body["markets"].([]any) {
		pageSlugs = append(pageSlugs, m.(map[string]any)["slug"].(string))
	}
	type endpoint struct {
		name string
		req  func(i int) answer
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2}}
	endpoints := []endpoint{
		{"markets list", func(i int) answer {
			coin := []string{"BTC", "ETH", "SOL"}[i%3]
			return do(client, http.MethodGet, fmt.Sprintf("%s/v1/markets?coin=%s&limit=50&offset=%d", base, coin, i%100), key, "")
		}},
		{"snapshots page", func(i int) answer {
			return do(client, http.MethodGet, base+"/v1/markets/"+pageSlugs[i%len(pageSlugs)]+"/snapshots?limit=100&include_orderbook=true", key, "")
		}},
		{"replay 15m", func(i int) answer {
			return do(client, http.MethodPost, base+"/v1/replay", key, replayBody(slugs[store.M15], 1+i%500))
		}},
		{"exchange history", func(i int) answer {
			return do(client, http.MethodGet, base+"/v1/btc/spot/snapshots?limit=50", key, "")
		}},
	}
	lat := make([][]time.Duration, len(endpoints))
	var mu sync.Mutex
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(duration)
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([][]time.Duration, len(endpoints))
			for n := c; time.Now().Before(deadline); n++ {
				i := sent.Add(1)
				if i > maxRequests {
					break
				}
				e := n % len(endpoints)
				start := time.Now()
				a := endpoints[e].req(int(i))
				local[e] = append(local[e], time.Since(start))
				if a.err != nil || (a.status/100 != 2 && a.status != http.StatusTooManyRequests) {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, endpoints[e].name+": "+a.String())
				}
			}
			mu.Lock()
			for e := range local {
				lat[e] = append(lat[e], local[e]...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	elapsed := duration
	total := 0
	var report strings.Builder
	fmt.Fprintf(&report, "%-18s %8s %10s %10s\n", "endpoint", "requests", "p50 ms", "p99 ms")
	for e, d := range lat {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		total += len(d)
		if len(d) == 0 {
			continue
		}
		p50, p99 := ms(d[len(d)/2]), ms(d[(len(d)-1)*99/100])
		fmt.Fprintf(&report, "%-18s %8d %10.2f %10.2f\n", endpoints[e].name, len(d), p50, p99)
		short := strings.ReplaceAll(endpoints[e].name, " ", "-")
		b.ReportMetric(p50, short+"-p50-ms")
		b.ReportMetric(p99, short+"-p99-ms")
	}
	fmt.Fprintf(&report, "%d requests in %s (%.0f/s), %d failed", total, elapsed, float64(total)/elapsed.Seconds(), failed.Load())
	b.Log("\n" + report.String())
	b.ReportMetric(float64(total)/elapsed.Seconds(), "req/s")
	if failed.Load() > 0 {
		b.Fatalf("%d requests failed; first: %v", failed.Load(), firstErr.Load())
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
