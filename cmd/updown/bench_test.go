package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkReplayEndToEnd times POST /v1/replay over HTTP with `updown api`
// and `updown worker` running as separate processes of the real binary on
// Postgres and Redis: a 15m market (3,000 snapshots with books) and a 24hr
// market (288,000 snapshots with books). Each request differs (position
// size), so none is answered from a retained result.
func BenchmarkReplayEndToEnd(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "updown")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	dbURL := pgtest.NewDatabase(b)
	redisURL := redistest.New(b)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	now := time.Now().UTC()
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 0 // the real 300 ms cadence
	g, err := gen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	slugs := map[store.MarketType]string{}
	for _, mt := range []store.MarketType{store.M15, store.H24} {
		m, err := g.Market(store.BTC, mt, now.Add(-2*mt.Duration()).Truncate(mt.Duration()))
		if err != nil {
			b.Fatal(err)
		}
		snaps, err := g.Snapshots(m)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			b.Fatal(err)
		}
		if err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
			b.Fatal(err)
		}
		slugs[mt] = m.Slug
	}
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "bench@example.com", Tier: store.Enterprise})
	if err != nil {
		b.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}

	addr := freeAddr(b)
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "LOG_LEVEL=warn", "TOKEN_SECRET="+strings.Repeat("b", 32), "WEBHOOK_SECRET="+testWebhookSecret)
	for _, args := range [][]string{{"api", "--addr", addr}, {"worker"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	}
	base := "http://" + addr
	waitHealthy(b, base)

	run := func(slug string, size int) time.Duration {
		body := fmt.Sprintf(`{"marketSlug":%q,"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45},`+
			`{"field":"time_remaining_pct","operator":">","value":10}],"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":%d}`, slug, size)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/replay", strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("replay of %s: %d", slug, res.StatusCode)
		}
		return time.Since(start)
	}
	run(slugs[store.M15], 1) // warm the connections
	n := min(max(b.N, 30), 200)
	b.ResetTimer()
	var m15, h24 []time.Duration
	for i := 0; i < n; i++ {
		m15 = append(m15, run(slugs[store.M15], 10+i))
	}
	for i := 0; i < 5; i++ {
		h24 = append(h24, run(slugs[store.H24], 10+i))
	}
	b.StopTimer()
	for _, d := range [][]time.Duration{m15, h24} {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(m15[len(m15)/2]), "15m-p50-ms")
	b.ReportMetric(ms(m15[(len(m15)-1)*99/100]), "15m-p99-ms")
	b.ReportMetric(ms(h24[len(h24)/2]), "24hr-p50-ms")
	b.ReportMetric(ms(h24[len(h24)-1]), "24hr-max-ms")
}
