//go:build unix

package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkRateLimitCost serves one cheap authenticated endpoint (a market
// by slug) through the real router over HTTP, with 16 keep-alive clients
// in parallel, from two servers on one store: one with rate limiting on
// (every request checked and counted in a real Redis) and one with it off.
// Rounds alternate between them so both see the same machine. It reports:
//
//	req/s-off, req/s-limited  throughput of each
//	%cost                     throughput lost to limiting (median of the
//	                          rounds' ratios; target: under 15%)
//	cpu-µs/req-*, %cost-cpu   CPU per request, this process (clients
//	                          included) plus Redis's: steadier than
//	                          throughput on a busy machine
//	*-machine                 the same, of the whole machine: with
//	                          limiting off, each request looks its key up
//	                          in Postgres, whose CPU only this counts
//	unmetered                 limited requests let through because Redis
//	                          did not answer in time (should be 0)
//
// It runs on the memory store and on Postgres, the production store, whose
// key lookup costs a round trip of its own on both sides.
func BenchmarkRateLimitCost(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { benchRateLimitCost(b, memory.New()) })
	b.Run("store=postgres", func(b *testing.B) { benchRateLimitCost(b, pgtest.NewStore(b)) })
}

func benchRateLimitCost(b *testing.B, st store.Store) {
	const clients = 16
	rdb := redistest.Client(b)
	ctx := context.Background()
	start := now.Truncate(15 * time.Minute)
	m := store.Market{Slug: slugOf(store.BTC, store.M15, start), MarketID: "bench-1", EventID: "ev-1", Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "0xabc", ClobTokenUp: "1", ClobTokenDown: "2"}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		b.Fatal(err)
	}
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "bench@example.com", Tier: store.Pro})
	if err != nil {
		b.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}

	serve := func(cfg api.Config) string {
		cfg.Store, cfg.Logger, cfg.Now = st, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now }
		srv, err := api.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		b.Cleanup(ts.Close)
		return ts.URL + "/v1/markets/" + m.Slug
	}
	off := serve(api.Config{})
	on := serve(api.Config{Redis: rdb, RateLimits: map[store.Tier]api.RateLimit{store.Pro: {PerMinute: 1 << 40, PerDay: 1 << 40}}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * clients, MaxIdleConnsPerHost: 2 * clients}}
	b.Cleanup(client.CloseIdleConnections)

	var unmetered atomic.Int64 // limited requests let through when Redis was slow
	// run sends n GETs of url from the clients and returns how long they took.
	run := func(url string, n int, limited bool) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		begin := time.Now()
		for range clients {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					req.Header.Set("X-API-Key", key)
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if limited && res.Header.Get("X-RateLimit-Limit") == "" {
						unmetered.Add(1)
					}
					if res.StatusCode != http.StatusOK || (!limited && res.Header.Get("X-RateLimit-Limit") != "") {
						b.Errorf("status %d, X-RateLimit-Limit %q", res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(begin)
	}
	run(off, 500, false) // warm connections, pools and the script cache
	run(on, 500, true)

	// Paired rounds, in alternating order, and the median of the pairs'
	// ratios: other load on the machine comes and goes, and a pair sees
	// the same load on both sides. CPU time (this process's, clients
	// included, plus Redis's) is the steadier measure on a busy machine:
	// at saturation throughput is CPU over CPU per request.
	const rounds = 21
	per := max(b.N/rounds, 1) // b.N requests each way, about
	var tOff, tOn, cOff, cOn, mOff, mOn time.Duration
	ratios := make([]float64, 0, rounds)
	measure := func(url string, limited bool) (wall, cpu, machine time.Duration) {
		c0, m0 := benchCPU(b, rdb), machineBusy()
		wall = run(url, per, limited)
		return wall, benchCPU(b, rdb) - c0, machineBusy() - m0
	}
	b.ResetTimer()
	for r := range rounds {
		var wOff, wOn, cpuOff, cpuOn, machOff, machOn time.Duration
		if r%2 == 0 {
			wOff, cpuOff, machOff = measure(off, false)
			wOn, cpuOn, machOn = measure(on, true)
		} else {
			wOn, cpuOn, machOn = measure(on, true)
			wOff, cpuOff, machOff = measure(off, false)
		}
		tOff, tOn, cOff, cOn = tOff+wOff, tOn+wOn, cOff+cpuOff, cOn+cpuOn
		mOff, mOn = mOff+machOff, mOn+machOn
		ratios = append(ratios, float64(wOn)/float64(wOff))
	}
	b.StopTimer()
	slices.Sort(ratios)
	total := float64(per * rounds)
	b.ReportMetric(total/tOff.Seconds(), "req/s-off")
	b.ReportMetric(total/tOn.Seconds(), "req/s-limited")
	b.ReportMetric(100*(1-1/ratios[rounds/2]), "%cost")
	b.ReportMetric(float64(cOff.Microseconds())/total, "cpu-µs/req-off")
	b.ReportMetric(float64(cOn.Microseconds())/total, "cpu-µs/req-limited")
	b.ReportMetric(100*(1-float64(cOff)/float64(cOn)), "%cost-cpu")
	b.ReportMetric(float64(mOff.Microseconds())/total, "cpu-µs/req-off-machine")
	b.ReportMetric(float64(mOn.Microseconds())/total, "cpu-µs/req-limited-machine")
	b.ReportMetric(100*(1-float64(mOff)/float64(mOn)), "%cost-cpu-machine")
	b.ReportMetric(float64(unmetered.Load()), "unmetered")
	b.ReportMetric(0, "ns/op")
}

// benchCPU is the CPU time used so far by this process and by the Redis
// server (INFO cpu).
func benchCPU(b *testing.B, rdb *redis.Client) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var redisSec float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			redisSec += f
		}
	}
	return self + time.Duration(redisSec*float64(time.Second))
}
