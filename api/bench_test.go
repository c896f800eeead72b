package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// benchMarket writes one resolved market of type mt at the real 300 ms
// cadence (3,000 snapshots for 15m, 10-level books on both sides) into st.
func benchMarket(b testing.TB, st store.Store, mt store.MarketType) store.Market {
	b.Helper()
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 0 // the real cadence
	cfg.BookLevels = 10
	g, err := gen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	m, _, err := g.WriteMarket(context.Background(), st, store.BTC, mt, now.Add(-2*mt.Duration()).Truncate(mt.Duration()))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// latencies runs n sequential GETs of url(i) and returns them sorted.
func latencies(b *testing.B, client *http.Client, url func(i int) string, key string, n int) []time.Duration {
	b.Helper()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest(http.MethodGet, url(i), nil)
		req.Header.Set("X-API-Key", key)
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func pct(d []time.Duration, p int) float64 {
	return float64(d[(len(d)-1)*p/100].Microseconds()) / 1000
}

// BenchmarkSnapshotPage serves a page of 1,000 snapshots with both order
// books from Postgres through the real router over HTTP, and, in the same
// run, the same bytes pre-encoded from a bare net/http handler (the floor).
// "cold" pages are read from Postgres and encoded (each request asks a
// different limit, 701-1000, so none is cached); "warm" repeats one page of
// a settled market, served from the page cache.
func BenchmarkSnapshotPage(b *testing.B) {
	st := pgtest.NewStore(b)
	m := benchMarket(b, st, store.M15)
	ctx := context.Background()
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "bench@example.com", Tier: store.Enterprise})
	if err != nil {
		b.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}
	srv, err := api.New(api.Config{Store: st, Logger: quiet(), Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	real := httptest.NewServer(srv)
	defer real.Close()
	path := "/v1/markets/" + m.Slug + "/snapshots?include_orderbook=true&limit=1000"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}

	// The floor serves the very bytes the real stack answered.
	req, _ := http.NewRequest(http.MethodGet, real.URL+path, nil)
	req.Header.Set("X-API-Key", key)
	res, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer floor.Close()

	n := min(max(b.N, 50), 300)
	fixed := func(base string) func(int) string { return func(int) string { return base + path } }
	b.ResetTimer()
	cold := latencies(b, client, func(i int) string {
		return real.URL + "/v1/markets/" + m.Slug + "/snapshots?include_orderbook=true&limit=" + strconv.Itoa(1000-i)
	}, key, n)
	warm := latencies(b, client, fixed(real.URL), key, n)
	floorLat := latencies(b, client, fixed(floor.URL), key, n)
	// What a cold page cannot do without: reading its snapshots from the
	// store, straight, with no HTTP, auth or encoding around it.
	reads := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if _, _, err := st.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{WithBooks: true, Limit: 1000 - i}); err != nil {
			b.Fatal(err)
		}
		reads = append(reads, time.Since(start))
	}
	slices.Sort(reads)
	b.StopTimer()
	b.ReportMetric(pct(cold, 50), "cold-p50-ms")
	b.ReportMetric(pct(cold, 99), "cold-p99-ms")
	b.ReportMetric(pct(warm, 50), "warm-p50-ms")
	b.ReportMetric(pct(warm, 99), "warm-p99-ms")
	b.ReportMetric(pct(floorLat, 50), "floor-p50-ms")
	b.ReportMetric(pct(floorLat, 99), "floor-p99-ms")
	b.ReportMetric(pct(cold, 50)/pct(floorLat, 50), "cold-x-floor")
	b.ReportMetric(pct(reads, 50), "store-read-p50-ms")
	// A cold page is at least the floor plus its store read.
	b.ReportMetric((pct(floorLat, 50)+pct(reads, 50))/pct(floorLat, 50), "cold-bound-x-floor")
	b.ReportMetric(pct(warm, 50)/pct(floorLat, 50), "warm-x-floor")
	b.ReportMetric(float64(len(body))/1024, "KiB/page")
}
