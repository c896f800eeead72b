//go:build unix

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// BenchmarkBacktestRun100 times POST /v1/backtest-ai/run over 100 resolved
// BTC 15m markets at the real 300 ms cadence (3,000 snapshots each, 10-level
// books), through the real router, a real redis-server and worker.Server
// instances of one slot each in this process: first one worker, then two.
// It reports the wall time of each, the speed-up the second worker brings
// beside the most it could bring (x_speedup-amdahl: the shards are all it
// can share), and how far a run is above its floor: the summed time of the 100
// replay.RunPerformance calls (what a shard runs) on tapes already in
// memory.
func BenchmarkBacktestRun100(b *testing.B) {
	const markets = 100
	// The newest market ends at end; an hour later every one is resolved.
	end := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	cfg := gen.DefaultConfig(end.Add(time.Hour))
	cfg.MaxSnapshotsPerMarket = 0 // every market at 300 ms
	cfg.Outage = 0                // every market has data
	g, err := gen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	st := memory.New()
	ctx := context.Background()
	type loaded struct {
		m     store.Market
		snaps []store.Snapshot
	}
	var all []loaded
	for i := 1; i <= markets; i++ {
		m, snaps, err := g.WriteMarket(ctx, st, store.BTC, store.M15, end.Add(-time.Duration(i)*15*time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, loaded{m, snaps})
	}
	c, err := st.CreateCustomer(ctx, store.Customer{Email: "bench@example.com", Tier: store.Enterprise})
	if err != nil {
		b.Fatal(err)
	}
	key, rec := api.NewKey(c.ID)
	if _, err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}

	rdb := redistest.Client(b)
	client, err := worker.NewClient(ctx, worker.ClientConfig{Redis: rdb, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	srv, err := api.New(api.Config{Store: st, Logger: quiet(), Now: func() time.Time { return end.Add(time.Hour) }, Jobs: client,
		JobWait: 5 * time.Minute, AI: api.AIConfig{TokenSecret: testSecret}})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptestServer(b, srv)

	tokenReq, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/auth/token", nil)
	tokenReq.Header.Set("X-API-Key", key)
	var tb struct {
		AccessToken string `json:"access_token"`
	}
	if r := send(b, tokenReq); r.status != http.StatusOK || json.Unmarshal(r.body, &tb) != nil {
		b.Fatalf("token: %d %s", r.status, r.body)
	}
	tok := tb.AccessToken

	// Each run has its own position size: identical runs would share one
	// task and its retained result.
	size := 0
	code := func() string {
		size++
		return fmt.Sprintf("coin=BTC type=15m side=UP entry: price_up < 0.45 and time_remaining_pct > 20 exit: price_up > 0.55 or time_remaining_pct < 5 size=%d", size)
	}
	run := func() time.Duration {
		body := `{"strategy_code":"` + code() + `","marketCount":100}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/backtest-ai/run", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("run: %d", res.StatusCode)
		}
		return time.Since(start)
	}
	// Each worker keeps its replay cache across the rounds, as a worker
	// process does across requests: the rounds stop and start servers in
	// this process, but a real worker's cache lives as long as it runs.
	var caches [2]*worker.Cache
	cacheMetrics := prometheus.NewRegistry()
	for i := range caches {
		reg := prometheus.WrapRegistererWith(prometheus.Labels{"worker": strconv.Itoa(i)}, cacheMetrics)
		if caches[i], err = worker.NewCache(worker.DefaultCacheBytes, reg); err != nil {
			b.Fatal(err)
		}
	}
	// Each round's workers time their tasks, as a worker process does for
	// /metrics: the shard tasks' time is what a second worker can share.
	var taskMetrics *prometheus.Registry
	workers := func(n int) (stop func()) {
		cctx, cancel := context.WithCancel(ctx)
		var done []chan struct{}
		taskMetrics = prometheus.NewRegistry()
		for i := range n {
			reg := prometheus.WrapRegistererWith(prometheus.Labels{"worker": strconv.Itoa(i)}, taskMetrics)
			w, err := worker.NewServer(worker.Config{Redis: rdb, Store: st, Logger: quiet(), Concurrency: 1, Cache: caches[i], Metrics: reg})
			if err != nil {
				b.Fatal(err)
			}
			d := make(chan struct{})
			go func() { _ = w.Run(cctx); close(d) }()
			done = append(done, d)
		}
		return func() {
			cancel()
			for _, d := range done {
				<-d
			}
		}
	}
	median := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2].Seconds()
	}

	// The floor: the engine alone on every market, best of 5.
	rules, err := strategy.ParseCode(code())
	if err != nil {
		b.Fatal(err)
	}
	tapes := make([]*store.Tape, len(all))
	for i, l := range all {
		if tapes[i], err = store.TapeOf(l.snaps, rules.Strategy.Outcome()); err != nil {
			b.Fatal(err)
		}
	}
	// A shard replays for the performance alone (RunPerformance); the
	// whole result, trades and equity curve rendered, is reported beside
	// it (ms_floor-full).
	floor, floorFull := math.Inf(1), math.Inf(1)
	for range 5 {
		start := time.Now()
		for i, l := range all {
			if _, err := replay.RunPerformance(l.m, tapes[i], rules.Strategy); err != nil {
				b.Fatal(err)
			}
		}
		floor = min(floor, time.Since(start).Seconds())
		start = time.Now()
		for i, l := range all {
			if _, err := replay.RunTape(l.m, tapes[i], rules.Strategy); err != nil {
				b.Fatal(err)
			}
		}
		floorFull = min(floorFull, time.Since(start).Seconds())
	}

	// One and two workers, round by round, so that a change in what else
	// the machine runs weighs on both alike. Each run also records the
	// CPU the process used per second of wall time: on a machine shared
	// with other work, the speed-up is bounded by the cores it can get.
	// machine is the same for the whole machine (every process: this
	// one, redis-server, anything else running). With one worker it
	// bounds the speed-up a second can bring: a run costs the machine
	// machine1 x w1 seconds of CPU, and NumCPU cores can do that in no
	// less than that over NumCPU, so the speed-up is at most
	// NumCPU / machine1 (x_speedup-bound). With two it tells whether the
	// cores were all busy.
	//
	// With one worker, the time its shard tasks took (shards1) is all a
	// second worker can take a share of: the rest of a run (the api, the
	// batch task's round trips, fanning out and gathering) happens once
	// whatever the workers. So a second worker can at best halve the
	// shards, and the speed-up is at most w1 / (w1 - shards1/2)
	// (x_speedup-amdahl), however many cores the machine has.
	//
	// A round is runsPerRound runs one after the other: the kernel counts
	// the machine's CPU time in 10 ms ticks, as long as a run, so the CPU
	// figures are over a round and the wall times each run's median.
	const rounds, runsPerRound = 5, 20
	var one, two []time.Duration
	var cores1, cores2, machine1, machine2, amdahl, shards1 []float64
	timed := func(n int, walls *[]time.Duration, cores, machine *[]float64) (wall, shards float64) {
		stop := workers(n)
		defer stop()
		run() // warm up: connections, first subscriptions
		start, cpu, busy, sh := time.Now(), processCPU(), machineBusy(), shardSeconds(b, taskMetrics)
		for range runsPerRound {
			*walls = append(*walls, run())
		}
		wall = time.Since(start).Seconds()
		*cores = append(*cores, (processCPU()-cpu).Seconds()/wall)
		*machine = append(*machine, (machineBusy()-busy).Seconds()/wall)
		return wall, shardSeconds(b, taskMetrics) - sh
	}
	for range rounds {
		w1, sh1 := timed(1, &one, &cores1, &machine1)
		amdahl = append(amdahl, w1/(w1-sh1/2))
		shards1 = append(shards1, sh1/runsPerRound)
		timed(2, &two, &cores2, &machine2)
	}

	stop := workers(2)
	defer stop()
	run()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.StopTimer()
	w1, w2 := median(one), median(two)
	// The replay caches: every market is read from the store once a
	// worker, after which every replay of the timed runs is a hit.
	if mfs, err := cacheMetrics.Gather(); err == nil {
		for _, mf := range mfs {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			switch mf.GetName() {
			case "updown_replay_cache_hits_total":
				b.ReportMetric(sum, "cache-hits")
			case "updown_replay_cache_misses_total":
				b.ReportMetric(sum, "cache-misses")
			}
		}
	}
	b.ReportMetric(w1*1000, "ms/run-1worker")
	b.ReportMetric(w2*1000, "ms/run-2workers")
	b.ReportMetric(w1/w2, "x_speedup")
	b.ReportMetric(floor*1000, "ms_floor")
	b.ReportMetric(floorFull*1000, "ms_floor-full")
	b.ReportMetric(w2/floorFull, "x_floor-full-2workers")
	b.ReportMetric(w2/floor, "x_floor-2workers")
	b.ReportMetric(medianF(cores1), "cores-1worker")
	b.ReportMetric(medianF(cores2), "cores-2workers")
	b.ReportMetric(medianF(machine1), "machine-cores-1worker")
	b.ReportMetric(medianF(machine2), "machine-cores-2workers")
	b.ReportMetric(float64(runtime.NumCPU())/medianF(machine1), "x_speedup-bound")
	b.ReportMetric(medianF(shards1)*1000, "ms_shards-1worker")
	b.ReportMetric(medianF(amdahl), "x_speedup-amdahl")
	// The process holds the store, the api and both workers: its peak
	// resident memory bounds what the workers used.
	b.ReportMetric(peakRSSMiB(), "process-peak-MiB")
}

// shardSeconds is the time the workers of reg have spent on backtest shard
// tasks, on the queue or taken by their batch (task_duration_seconds).
func shardSeconds(b *testing.B, reg *prometheus.Registry) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "updown_task_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" && l.GetValue() == backtest.GroupType {
					sum += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return sum
}

// peakRSSMiB is this process's peak resident memory (VmHWM), in MiB.
func peakRSSMiB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// machineBusy is the CPU time every core of the machine has spent busy
// (all but idle and iowait in /proc/stat), at the kernel's 100 Hz clock.
func machineBusy() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are within user
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
