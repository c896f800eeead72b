package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkSmallReadDuringHeavyBurst (issue 28, item 3) measures, on
// Postgres and Redis through the real router, another customer's small
// snapshot page while a PRO customer keeps 64 heavy reads going at once
// (chart series of distinct sizes, which neither cache nor coalesce, and
// pages with books), retrying its 429s when Retry-After says. It reports the small
// page's p50 and p99 before and during the burst, and how many of the
// burst's reads were answered and refused. The correctness of the caps is
// TestBurst*'s; this is where their latency is compared:
//
//	go test -run '^$' -bench SmallReadDuringHeavyBurst ./api/
func BenchmarkSmallReadDuringHeavyBurst(b *testing.B) {
	st := pgtest.NewStore(b)
	heavy := benchMarket(b, st, store.H1)
	small := benchMarket(b, st, store.M15)
	ctx := context.Background()
	key := func(email string, tier store.Tier) string {
		c, err := st.CreateCustomer(ctx, store.Customer{Email: email, Tier: tier})
		if err != nil {
			b.Fatal(err)
		}
		plain, rec := api.NewKey(c.ID)
		if _, err := st.CreateAPIKey(ctx, rec); err != nil {
			b.Fatal(err)
		}
		return plain
	}
	proKey, entKey := key("burst-pro@example.com", store.Pro), key("burst-ent@example.com", store.Enterprise)
	srv, err := api.New(api.Config{Store: st, Logger: quiet(), Now: func() time.Time { return now }, Redis: redistest.Client(b),
		RateLimits: map[store.Tier]api.RateLimit{store.Pro: {}, store.Enterprise: {}}})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: time.Minute}
	smallURL := func(int) string { return ts.URL + "/v1/markets/" + small.Slug + "/snapshots?limit=10" }

	n := min(max(b.N, 50), 300)
	b.ResetTimer()
	quiet := latencies(b, client, smallURL, entKey, n)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var answered, refused, seq atomic.Int64
	for g := range 64 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				u := ts.URL + "/v1/markets/" + heavy.Slug + "/snapshots?include_orderbook=true&limit=1000"
				if g%2 == 0 {
					u = ts.URL + "/v1/markets/" + heavy.Slug + "/series?points=" + strconv.Itoa(100+int(seq.Add(1)%4900))
				}
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				req.Header.Set("X-API-Key", proKey)
				res, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusTooManyRequests {
					refused.Add(1)
					select { // as Retry-After says
					case <-stop:
					case <-time.After(time.Second):
					}
				} else {
					answered.Add(1)
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the burst under way
	n = max(n, 200)                    // long enough to see it
	during := latencies(b, client, smallURL, entKey, n)
	close(stop)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(pct(quiet, 50), "quiet-p50-ms")
	b.ReportMetric(pct(quiet, 99), "quiet-p99-ms")
	b.ReportMetric(pct(during, 50), "burst-p50-ms")
	b.ReportMetric(pct(during, 99), "burst-p99-ms")
	b.ReportMetric(float64(answered.Load()), "burst-answered")
	b.ReportMetric(float64(refused.Load()), "burst-429s")
}
