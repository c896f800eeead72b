package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestCollectProcess runs `updown collect` as the Procfile does, against
// the fake upstreams (given by flag and by environment), real Postgres and
// a real redis-server, and checks what lands where: markets and snapshots
// in Postgres, latest depth and trades in Redis, resolution tasks queued.
func TestCollectProcess(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	redisURL := redistest.New(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("REDIS_URL", redisURL)
	poly := polytest.New(t, polytest.Options{})
	bin := binancetest.New(t, binancetest.Options{})
	series := collect.AllSeries()
	now := time.Now()
	poly.AddAround(series, now)
	poly.AddRange(series, now, now.Add(time.Minute))
	t.Setenv(collect.EnvBinanceSpotURL, bin.URL)
	t.Setenv(collect.EnvBinanceFuturesURL, bin.URL)
	t.Setenv(collect.EnvPolymarketWSURL, poly.WSURL)
	t.Setenv(collect.EnvPolymarketDataURL, poly.URL)

	// No --health-addr or COLLECT_HEALTH_ADDR: the ops address is PORT's,
	// as a Procfile runner gives it (DESIGN 3: every process serves them).
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	t.Setenv("PORT", port)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"collect", "--gamma-url", poly.URL, "--clob-url", poly.URL,
			"--interval", "100ms", "--series", "btc:5m,eth:15m,sol:1hr,btc:24hr"}, io.Discard, io.Discard)
	}()
	waitHealthy(t, "http://"+addr)
	if res, err := http.Get("http://" + addr + "/healthz"); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", res, err)
	}
	if res, err := http.Get("http://" + addr + "/metrics"); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %v %v", res, err)
	} else {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(body), "updown_queue_scrape_ok 1") {
			t.Errorf("collector /metrics lacks the queue metrics")
		}
	}

	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chosen := []collect.Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.ETH, MarketType: store.M15},
		{Coin: store.SOL, MarketType: store.H1}, {Coin: store.BTC, MarketType: store.H24}}
	scheme := collect.NewPolymarketScheme()
	deadline := time.Now().Add(patience)
	for _, sr := range chosen {
		start, _ := scheme.Window(sr.Coin, sr.MarketType, time.Now())
		slug := collect.Slug(sr.Coin, sr.MarketType, start)
		for {
			_, n, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Limit: 1})
			if err == nil && n >= 5 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d snapshots in Postgres (%v)", slug, n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if ws := poly.WSStats(); ws.Connections == 0 || ws.Subscribes == 0 {
		t.Errorf("websocket %+v: the collector never subscribed to the market channel", ws)
	}
	if _, n, _ := st.ListMarkets(ctx, store.MarketFilter{Coin: store.ETH, MarketType: store.M5}); n != 0 {
		t.Errorf("%d ETH 5m markets recorded; --series left them out", n)
	}

	opt, _ := redis.ParseURL(redisURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	live := redislive.New(rdb, "")
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			for {
				d, derr := live.LatestDepth(ctx, c, k)
				trades, terr := live.RecentTrades(ctx, c, k, 10)
				if derr == nil && terr == nil && len(d.Bids) > 0 && len(trades) == 10 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s %s in Redis: depth %v, %d trades (%v)", c, k, derr, len(trades), terr)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	start, _ := scheme.Window(store.BTC, store.M5, time.Now())
	ti, err := insp.GetTaskInfo(jobs.QueueCollect, worker.ResolutionTaskID(collect.Slug(store.BTC, store.M5, start)))
	if err != nil || ti.Type != jobs.TypeResolve || ti.State != asynq.TaskStateScheduled {
		t.Errorf("resolution task of the live BTC 5m market: %+v %v", ti, err)
	}

	cancel()
	if err := ended(t, "collect's stop", done); err != nil {
		t.Fatalf("collect exited with %v", err)
	}
}

// TestCollectNeedsItsConfig checks the collector refuses to start without
// its stores or with a series SPEC does not have, and says why.
func TestCollectNeedsItsConfig(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("REDIS_URL", "")
	err := run(context.Background(), []string{"collect"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("collect without config: %v", err)
	}
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/x")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1")
	for _, s := range []string{"eth:4hr", "btc", "doge:5m"} {
		err := run(context.Background(), []string{"collect", "--series", s}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--series") {
			t.Errorf("--series %s: %v", s, err)
		}
	}
	for _, s := range []string{"doge", "btc,", "all,eth", "none,btc"} {
		err := run(context.Background(), []string{"collect", "--exchange", s}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--exchange") {
			t.Errorf("--exchange %q: %v", s, err)
		}
	}
}

// TestCollectUnreachableUpstreams runs `updown collect` with every upstream
// unreachable and checks that it says so: /readyz fails naming the
// upstreams, /metrics counts each upstream's errors with no last success,
// and the log does not repeat itself (warnings are rate-limited; durations
// are written as durations).
func TestCollectUnreachableUpstreams(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	redisURL := redistest.New(t)
	dead := "http://" + freeAddr(t) // nothing listens there
	addr := freeAddr(t)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"collect", "--database-url", dbURL, "--redis-url", redisURL, "--gamma-url", dead, "--clob-url", dead, "--ws-url", "ws" + strings.TrimPrefix(dead, "http") + "/ws", "--data-url", dead,
			"--binance-spot-url", dead, "--binance-futures-url", dead, "--health-addr", addr, "--unhealthy-after", "2s"}, io.Discard, logs)
	}()
	waitHealthy(t, "http://"+addr)
	const runFor = 8 * time.Second
	time.Sleep(runFor)

	res, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The body names the upstreams failing (the README's promise), not
	// their errors, which hold addresses.
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"upstreams":"unavailable: `) ||
		!strings.Contains(string(body), "binance-futures") || !strings.Contains(string(body), "gamma") || strings.Contains(string(body), dead) {
		t.Errorf("/readyz with every upstream down: %d %s", res.StatusCode, body)
	}
	res, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, up := range []string{"gamma", "binance-spot", "binance-futures"} {
		for _, want := range []string{
			`updown_collector_upstream_up{upstream="` + up + `"} 0`,
			`updown_collector_upstream_last_success_timestamp_seconds{upstream="` + up + `"} 0`,
		} {
			if !strings.Contains(string(metrics), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if !regexp.MustCompile(`updown_collector_upstream_errors_total\{upstream="` + up + `"\} [1-9]`).Match(metrics) {
			t.Errorf("/metrics counts no errors of %s", up)
		}
	}
	for _, reason := range []string{"stalled", "partial"} {
		if !strings.Contains(string(metrics), `updown_collector_instants_dropped_total{reason="`+reason+`"} 0`) {
			t.Errorf("/metrics does not count dropped instants of reason %s", reason)
		}
	}
	if !strings.Contains(string(metrics), `updown_collector_backfilled_total{kind="gaps"} 0`) {
		t.Errorf("/metrics does not count backfilled trades gaps")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Each kind of warning at most a few times, not once per request.
	perMsg := map[string]int{}
	warns := 0
	for line := range strings.SplitSeq(logs.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["level"] != "WARN" {
			continue
		}
		warns++
		perMsg[fmt.Sprint(e["msg"], e["feed"], e["upstream"])]++
		for k, v := range e {
			if f, ok := v.(float64); ok && (k == "retry_in" || k == "lasted" || k == "lag") {
				t.Errorf("duration %s logged as the number %v", k, f)
			}
		}
	}
	for msg, n := range perMsg {
		if n > 2 {
			t.Errorf("warned %d times in %v: %s", n, runFor, msg)
		}
	}
	t.Logf("%d warnings in %v with every upstream down (%.0f a minute)", warns, runFor, float64(warns)/runFor.Minutes())
}

// TestCollectHealthAddrTaken: a --health-addr (COLLECT_HEALTH_ADDR) that
// cannot be listened on stops `updown collect` before it starts
// recording, with an error naming the setting; it used to start the
// collector, log a spurious failure to load its markets, and stop.
func TestCollectHealthAddrTaken(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	redisURL := redistest.New(t)
	dead := "http://" + freeAddr(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs := &syncBuffer{}
	err = run(t.Context(), []string{"collect", "--database-url", dbURL, "--redis-url", redisURL, "--gamma-url", dead, "--clob-url", dead,
		"--ws-url", "", "--data-url", "", "--binance-spot-url", dead, "--binance-futures-url", dead,
		"--health-addr", taken.Addr().String()}, io.Discard, logs)
	if err == nil || !strings.Contains(err.Error(), "COLLECT_HEALTH_ADDR") {
		t.Errorf("collect on a taken --health-addr: %v, want an error naming COLLECT_HEALTH_ADDR", err)
	}
	if strings.Contains(logs.String(), "collector starting") {
		t.Errorf("collect on a taken --health-addr started recording first:\n%s", logs)
	}
}

// TestCollectRefusesNonPositiveFlags: a duration or level count given as 0
// or less is refused, naming the flag, before anything starts; the
// collector's library would have taken it for its default in silence.
func TestCollectRefusesNonPositiveFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--interval", "0s"}, {"--interval", "-300ms"}, {"--unhealthy-after", "0s"},
		{"--discovery-interval", "-1s"}, {"--resolve-delay", "-5s"}, {"--book-levels", "0"},
		{"--quick-windows", "-1m"},
	} {
		err := run(context.Background(), append([]string{"collect"}, args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("collect %v: %v, want a refusal naming %s", args, err, args[0])
		}
	}
}

// TestCollectRefusesCoarseInterval: a snapshot cadence over 3 s, the
// gap threshold, is refused at start, naming the flag or the variable: the
// collector recorded every stretch between its snapshots as a gap, and
// served a market recorded throughout as one gap from start to end.
func TestCollectRefusesCoarseInterval(t *testing.T) {
	dead := []string{"collect", "--database-url", "postgres://127.0.0.1:1/none", "--redis-url", "redis://127.0.0.1:1/0", "--health-addr", "off"}
	err := run(context.Background(), append(dead, "--interval", "4s"), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--interval") || !strings.Contains(err.Error(), "gap") {
		t.Errorf("collect --interval 4s: %v; want a refusal naming --interval and the gaps", err)
	}
	t.Setenv("COLLECT_INTERVAL", "5s")
	err = run(context.Background(), dead, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "COLLECT_INTERVAL") {
		t.Errorf("collect with COLLECT_INTERVAL=5s: %v; want a refusal naming COLLECT_INTERVAL", err)
	}
	st := memory.New()
	if _, err := collect.New(collect.Config{Store: st, Live: memory.NewLive(), Scheduler: nopScheduler{}, Interval: 4 * time.Second}); err == nil {
		t.Error("collect.New with Interval 4s, over GapAfter's 3s: no error")
	}
}

// nopScheduler schedules nothing.
type nopScheduler struct{}

func (nopScheduler) ScheduleResolution(context.Context, string, time.Duration) error { return nil }

// TestCollectServesOpsWhileWaitingForSchema: a collector started before
// the schema is migrated waits for it, and meanwhile is alive: its health
// address answers /healthz 200 and /readyz 503, rather than refusing
// connections as a dead process would; once migrated, it serves the
// collector's own checks (the upstreams among them).
func TestCollectServesOpsWhileWaitingForSchema(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	redisURL := redistest.New(t)
	dead := "http://" + freeAddr(t) // nothing listens there
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"collect", "--database-url", dbURL, "--redis-url", redisURL, "--gamma-url", dead, "--clob-url", dead, "--ws-url", "", "--data-url", "",
			"--binance-spot-url", dead, "--binance-futures-url", dead, "--health-addr", addr}, io.Discard, io.Discard)
	}()
	base := "http://" + addr
	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			return 0, ""
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(body)
	}
	deadline := time.Now().Add(patience)
	for {
		if status, _ := get("/healthz"); status == http.StatusOK {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("collector exited while waiting for the schema: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector waiting for the schema never answered /healthz (gave up after %v)", patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, body := get("/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a collector waiting for the schema: %d %s, want 503", status, body)
	}
	runCmd(t, "migrate", "--database-url", dbURL)
	for {
		if _, body := get("/readyz"); strings.Contains(body, `"upstreams"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector never served its own checks after the migration (gave up after %v)", patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := ended(t, "collector", done); err != nil {
		t.Errorf("collector exited with %v", err)
	}
}

// TestParseSeriesOnce: a series named twice in --series (in any case) is
// collected once, where the collector looked each of its windows up twice.
func TestParseSeriesOnce(t *testing.T) {
	t.Parallel()
	got, err := parseSeries("btc:5m, BTC:5M,eth:15m,btc:5m")
	if err != nil {
		t.Fatal(err)
	}
	want := []collect.Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.ETH, MarketType: store.M15}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseSeries: %v, want %v", got, want)
	}
}

// TestCollectExchangeCoins: --exchange chooses the coins whose Binance
// depth and trades a collector keeps, none included. Every collector
// polled Binance for all three coins on spot and futures, about 3,950 of
// the 6,000 request weight Binance allows an address a minute on spot, so
// that two collectors split by --series behind one address exceeded it
// and were refused (429, then banned with 418), and with them the spot
// ticker every snapshot's coin price comes from.
func TestCollectExchangeCoins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exchange string
		kept     []store.Coin
	}{{"none", nil}, {"eth, SOL", []store.Coin{store.ETH, store.SOL}}} {
		t.Run(tc.exchange, func(t *testing.T) {
			t.Parallel()
			dbURL := pgtest.NewDatabase(t)
			redisURL := redistest.New(t)
			poly := polytest.New(t, polytest.Options{})
			bin := binancetest.New(t, binancetest.Options{})
			sr := collect.Series{Coin: store.BTC, MarketType: store.M5}
			now := time.Now()
			poly.AddAround([]collect.Series{sr}, now)
			poly.AddRange([]collect.Series{sr}, now, now.Add(time.Minute))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"collect", "--database-url", dbURL, "--redis-url", redisURL, "--health-addr", "off",
					"--gamma-url", poly.URL, "--clob-url", poly.URL, "--ws-url", "", "--binance-spot-url", bin.URL, "--binance-futures-url", bin.URL,
					"--interval", "100ms", "--series", "btc:5m", "--exchange", tc.exchange}, io.Discard, io.Discard)
			}()
			st, err := postgres.Open(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			opt, _ := redis.ParseURL(redisURL)
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			live := redislive.New(rdb, "")

			// Record for a few seconds of snapshots (the exchange is polled
			// every second), and until every coin kept has its data. The
			// market is the window's of the moment: one that ends a second
			// into the test holds too few, and its successor is recorded.
			deadline := time.Now().Add(patience)
			for {
				select {
				case err := <-done:
					t.Fatalf("collect --exchange %q exited: %v", tc.exchange, err)
				default:
				}
				start, _ := collect.NewPolymarketScheme().Window(sr.Coin, sr.MarketType, time.Now())
				slug := collect.Slug(sr.Coin, sr.MarketType, start)
				snaps, _, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Limit: 1000})
				recorded := err == nil && len(snaps) > 1 && snaps[0].Time.Sub(snaps[len(snaps)-1].Time) >= 4*time.Second
				for _, c := range tc.kept {
					for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
						trades, terr := live.RecentTrades(ctx, c, k, 1)
						if _, derr := live.LatestDepth(ctx, c, k); derr != nil || terr != nil || len(trades) == 0 {
							recorded = false
						}
					}
				}
				if recorded {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d snapshots (%v), or the exchange data of %v is missing", slug, len(snaps), err, tc.kept)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, c := range store.Coins {
				for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
					_, derr := live.LatestDepth(ctx, c, k)
					trades, _ := live.RecentTrades(ctx, c, k, 1)
					if kept := slices.Contains(tc.kept, c); kept != (derr == nil) || kept != (len(trades) > 0) {
						t.Errorf("--exchange %q: %s %s latest depth %v, %d trades", tc.exchange, c, k, derr, len(trades))
					}
				}
			}
			if _, n, _ := st.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: store.Spot}); n != 0 {
				t.Errorf("--exchange %q: %d BTCUSDT depth snapshots recorded", tc.exchange, n)
			}
			if tc.kept == nil {
				for _, route := range []string{binancetest.RouteSpotDepth, binancetest.RouteFuturesDepth, binancetest.RouteSpotTrades, binancetest.RouteFuturesTrades} {
					if n := bin.Hits(route); n != 0 {
						t.Errorf("--exchange none: Binance asked %d times for %s", n, route)
					}
				}
			}
			if bin.Hits(binancetest.RouteTicker) == 0 {
				t.Error("the spot ticker (the snapshots' coin price) was never asked")
			}
			cancel()
			if err := ended(t, "collect", done); err != nil {
				t.Errorf("collect exited with %v", err)
			}
		})
	}
}
