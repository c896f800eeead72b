package replay

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/gzjoin"
	"github.com/updown/updown/store"
)

// benchMarket is a 24hr BTC market at 300 ms: 288,000 snapshots, each with
// ten-level books on both sides of both tokens. price_up is a mean-reverting
// random walk (an Ornstein-Uhlenbeck step, deterministic for the seed) slow
// enough that benchStrategy trades a few dozen times, as a real one does.
func benchMarket() (store.Market, []store.Snapshot) {
	const (
		n      = 288_000
		depth  = 10
		step   = 300 * time.Millisecond
		theta  = 5e-4   // pull towards 0.5 per step
		sigma  = 0.0025 // noise per step: a spread of about 0.08 around 0.5
		coinVo = 2e-5   // coin price noise per step, relative
	)
	rng := rand.New(rand.NewPCG(24, 288))
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	winner := store.OutcomeUp
	m := store.Market{Slug: "btc-updown-24hr-1748736000", Coin: store.BTC, MarketType: store.H24,
		StartTime: start, EndTime: start.Add(24 * time.Hour), Winner: &winner}

	// One backing array for all levels and one for all books keep the data
	// compact, as a bulk decoder would lay it out.
	levels := make([]store.Level, n*4*depth)
	books := make([]store.Book, n*2)
	snaps := make([]store.Snapshot, n)
	up, coin := 0.5, 105_000.0
	fill := func(b *store.Book, mid float64) {
		bid := math.Floor(mid*100)/100 - 0.01
		lv := levels[: 2*depth : 2*depth]
		levels = levels[2*depth:]
		b.Bids, b.Asks = lv[:depth:depth], lv[depth:2*depth:2*depth]
		for k := range depth {
			b.Bids[k] = store.Level{Price: math.Max(0.01, bid-float64(k)/100), Size: float64(50 + rng.IntN(450))}
			b.Asks[k] = store.Level{Price: math.Min(0.99, bid+0.02+float64(k)/100), Size: float64(50 + rng.IntN(450))}
		}
	}
	for i := range snaps {
		up = min(0.99, max(0.01, up+theta*(0.5-up)+sigma*rng.NormFloat64()))
		coin *= 1 + coinVo*rng.NormFloat64()
		bu, bd := &books[2*i], &books[2*i+1]
		fill(bu, up)
		fill(bd, 1-up)
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * step), CoinPrice: coin,
			PriceUp: up, PriceDown: 1 - up + 0.01, BookUp: bu, BookDown: bd}
	}
	return m, snaps
}

// benchStrategy has three conditions: buy UP under 0.40 while more than 5%
// of the day is left, sell it above 0.55.
func benchStrategy() Strategy {
	return Strategy{
		Side:            SideUp,
		EntryConditions: conds(cond(FieldPriceUp, OpLess, 0.40), cond(FieldTimeRemainingPct, OpGreater, 5)),
		ExitConditions:  conds(cond(FieldPriceUp, OpGreater, 0.55)),
		PositionSize:    1000,
	}
}

// benchTape is benchMarket's tape with the books of outcome.
func benchTape(tb testing.TB, outcome string) (store.Market, *store.Tape) {
	m, snaps := benchMarket()
	t, err := store.TapeOf(snaps, outcome)
	if err != nil {
		tb.Fatal(err)
	}
	return m, t
}

// floor reads what the engine reads of every tick, its time and three
// prices, and does nothing else: the memory floor RunTape is measured
// against.
func floor(t *store.Tape) float64 {
	var acc float64
	var ns int64
	for i := range t.Ticks {
		tk := &t.Ticks[i]
		ns += tk.Nanos
		acc += tk.PriceUp + tk.PriceDown + tk.CoinPrice
	}
	return acc + float64(ns)
}

// floorBooks also reads the best bid of every tick, as the engine must on
// every tick it spends in position (to mark the position and test
// MAX_LOSS). Reaching into the levels is most of a replay's memory
// traffic.
func floorBooks(t *store.Tape) float64 {
	var acc float64
	var ns int64
	for i := range t.Ticks {
		tk := &t.Ticks[i]
		ns += tk.Nanos
		acc += tk.PriceUp + tk.PriceDown + tk.CoinPrice
		if tk.Bids.Len > 0 {
			acc += t.Blocks[tk.Bids.Block][tk.Bids.Off].Price
		}
	}
	return acc + float64(ns)
}

func BenchmarkRun(b *testing.B) {
	m, snaps := benchTape(b, store.OutcomeUp)
	s := benchStrategy()
	var r Result
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if r, err = RunTape(m, snaps, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(snaps.Len())*float64(b.N)/b.Elapsed().Seconds(), "snapshots/s")
	b.ReportMetric(float64(r.Performance.TotalTrades), "trades")
	// DESIGN 10: print the ratio to the reference in the same run. Both
	// sides are the best of several passes, which shared machines disturb
	// least.
	var sink float64
	run := bestOf(20, func() { r, _ = RunTape(m, snaps, s) })
	fl := bestOf(20, func() { sink += floor(snaps) })
	fb := bestOf(20, func() { sink += floorBooks(snaps) })
	runtime.KeepAlive(sink)
	b.ReportMetric(run/fl, "x_floor")
	b.ReportMetric(run/fb, "x_floor_books")
}

func BenchmarkFloor(b *testing.B) { benchmarkFloor(b, floor) }

func BenchmarkFloorBooks(b *testing.B) { benchmarkFloor(b, floorBooks) }

func benchmarkFloor(b *testing.B, read func(*store.Tape) float64) {
	_, t := benchTape(b, store.OutcomeUp)
	var sink float64
	for b.Loop() {
		sink += read(t)
	}
	runtime.KeepAlive(sink)
	b.ReportMetric(float64(t.Len())*float64(b.N)/b.Elapsed().Seconds(), "snapshots/s")
}

// cpuBestOf is bestOf in CPU time of the calling thread (on Linux), which
// the other processes of a shared machine do not inflate.
func cpuBestOf(k int, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := math.Inf(1)
	for range k {
		t := threadTime()
		f()
		best = min(best, (threadTime() - t).Seconds())
	}
	return best
}

// bestOf returns the shortest of k timed calls of f, in seconds.
func bestOf(k int, f func()) float64 {
	best := math.Inf(1)
	for range k {
		t := time.Now()
		f()
		best = min(best, time.Since(t).Seconds())
	}
	return best
}

// BenchmarkRunCosts replays benchStrategy with MARKET fees (rate 0.07,
// exponent 1) and 250 ms of latency on the 24hr market, and reports its
// time over the same replay without costs, measured side by side in this
// run (x_no_costs; the issue asks for at most 1.15).
func BenchmarkRunCosts(b *testing.B) {
	m, snaps := benchTape(b, store.OutcomeUp)
	m.TakerFeeRate, m.FeeExponent = new(0.07), new(1)
	plain := benchStrategy()
	s := plain
	s.FeeModel, s.LatencyMs = FeeMarket, 250
	var r Result
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if r, err = RunTape(m, snaps, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(snaps.Len())*float64(b.N)/b.Elapsed().Seconds(), "snapshots/s")
	b.ReportMetric(float64(r.Performance.TotalTrades), "trades")
	b.ReportMetric(r.Performance.TotalFees, "fees_$")
	// Pairs run back to back, so that a disturbance of the shared machine
	// hits both sides of a pair; the median of the pairs' ratios ignores
	// the pairs it hit unevenly.
	ratios := make([]float64, 25)
	for k := range ratios {
		costs := bestOf(1, func() { r, _ = RunTape(m, snaps, s) })
		none := bestOf(1, func() { r, _ = RunTape(m, snaps, plain) })
		ratios[k] = costs / none
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x_no_costs")
}

// benchTrades is a trade every ~2 s of benchMarket (about 43,000): either
// outcome, a taker sale at the best bid or a purchase at the best ask,
// now and then through it, 5 to 200 shares.
func benchTrades(snaps []store.Snapshot) []store.MarketTrade {
	rng := rand.New(rand.NewPCG(43, 200))
	var out []store.MarketTrade
	for i := 0; i < len(snaps); i += 5 + rng.IntN(3) {
		sn := &snaps[i]
		o, b := store.OutcomeUp, sn.BookUp
		if rng.IntN(2) == 0 {
			o, b = store.OutcomeDown, sn.BookDown
		}
		side, p := store.SideSell, b.Bids[0].Price
		if rng.IntN(2) == 0 {
			side, p = store.SideBuy, b.Asks[0].Price
		}
		if rng.IntN(5) == 0 { // through the touch
			if side == store.SideSell {
				p = b.Bids[1].Price
			} else {
				p = b.Asks[1].Price
			}
		}
		out = append(out, store.MarketTrade{Time: sn.Time.Add(100 * time.Millisecond), Outcome: o, Side: side,
			Price: p, Size: float64(5 + rng.IntN(196))})
	}
	return out
}

// BenchmarkRunGTC replays benchStrategy as resting GTC orders on the 24hr
// market with its recorded trades, packed once (Input.Packed, as a worker's
// cache and a sweep shard hold them), and reports its engine time over the
// same strategy with MARKET orders, measured side by side in this run
// (x_market, wall clock; x_market_cpu the same in the thread's CPU time,
// which a loaded machine disturbs less; the issue asks for at most 1.3).
// x_market_unpacked is the
// same with the trades packed by each replay (RunTrades, a replay of a
// market no one packed), and x_pack the packing alone over the MARKET
// replay.
func BenchmarkRunGTC(b *testing.B) {
	m, snaps := benchMarket()
	trades := benchTrades(snaps)
	tape, err := store.TapeOf(snaps, store.OutcomeUp)
	if err != nil {
		b.Fatal(err)
	}
	gtc := benchStrategy()
	gtc.OrderType = OrderGTC
	in := Input{Market: m, Tape: tape, Trades: trades, Packed: PackTrades(trades)}
	unpacked := Input{Market: m, Tape: tape, Trades: trades}
	var r Result
	b.ReportAllocs()
	for b.Loop() {
		if r, err = RunInput(in, gtc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tape.Len())*float64(b.N)/b.Elapsed().Seconds(), "snapshots/s")
	b.ReportMetric(float64(r.Performance.TotalTrades), "trades")
	b.ReportMetric(float64(len(trades)), "recorded_trades")
	b.ReportMetric(float64(*r.Performance.OrdersFilled), "orders_filled")
	// Every call is timed on its own, and each pair alternates which
	// strategy runs first: what ran just before a call (a collection under
	// way, the caches another replay left) moves its time by a third, and
	// best-of-k series of one strategy after the other gave the two
	// strategies different conditions (x_market 1.05 in wall time beside
	// 1.4 in CPU time, on the same calls' code). No collection is forced
	// between calls: a worker's replays run on a heap in its steady state,
	// and a forced one before each call left the next to fault its pages
	// back in. The figures are ratios of the medians.
	const pairs = 40
	var gw, gc, mw, mc, uw, pw, uc []float64
	timeOf := func(f func(), wall, cpu *[]float64) {
		w, c := timed(f)
		*wall, *cpu = append(*wall, w), append(*cpu, c)
	}
	market := benchStrategy()
	for k := range pairs {
		g := func() { timeOf(func() { r, _ = RunInput(in, gtc) }, &gw, &gc) }
		mk := func() { timeOf(func() { r, _ = RunInput(in, market) }, &mw, &mc) }
		if k%2 == 0 {
			g()
			mk()
		} else {
			mk()
			g()
		}
	}
	// The unpacked replay and the packing allocate megabytes a call: timed
	// after the pairs, so that their collections fall on none of them.
	var scratch []float64
	for range pairs / 4 {
		timeOf(func() { r, _ = RunInput(unpacked, gtc) }, &uw, &uc)
		timeOf(func() { PackTrades(trades).viewsOf(store.OutcomeUp) }, &pw, &scratch)
	}
	mkWall, mkCPU := median(mw), median(mc)
	b.ReportMetric(median(gw)/mkWall, "x_market")
	b.ReportMetric(median(gc)/mkCPU, "x_market_cpu")
	b.ReportMetric(median(uw)/mkWall, "x_market_unpacked")
	b.ReportMetric(median(pw)/mkWall, "x_pack")
}

// timed runs f once and returns its wall time and the CPU time of its
// thread, in seconds.
func timed(f func()) (wall, cpu float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t, c := time.Now(), threadTime()
	f()
	return time.Since(t).Seconds(), (threadTime() - c).Seconds()
}

// median is the middle of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// heavyStrategy trades on almost every other snapshot of benchMarket: it
// buys UP whenever its price is under 0.5 and sells on the next snapshot.
func heavyStrategy() Strategy {
	return Strategy{
		Side:            SideUp,
		EntryConditions: conds(cond(FieldPriceUp, OpLess, 0.5)),
		ExitConditions:  conds(cond(FieldTimeRemainingPct, OpGreaterOrEqual, 0)),
		PositionSize:    100,
	}
}

// BenchmarkRunHeavy replays a strategy of tens of thousands of trades on a
// 24hr market and reports, stage by stage, its time over a strategy of a
// few dozen trades on the same snapshots, so per snapshot, measured side
// by side in this run: the engine alone (x_few_engine: the performance,
// as a backtest shard computes it), the Result (x_few_result: the trade
// events listed and the equity curve), its JSON (x_few_json) and the JSON
// deflated as a worker sends it (x_few_deflate, the whole answer; the
// issue asks for at most 3).
//
// market=bench is benchMarket, heavyStrategy against benchStrategy;
// market=gen the generator's 24hr market, a strategy that enters and
// exits whenever price_up >= 0 (a trade every snapshot) against
// benchStrategy held to a dozen entries (on that market it would trade
// thousands of times).
func BenchmarkRunHeavy(b *testing.B) {
	b.Run("market=bench", func(b *testing.B) {
		m, tape := benchTape(b, store.OutcomeUp)
		runHeavy(b, Input{Market: m, Tape: tape}, heavyStrategy(), benchStrategy())
	})
	b.Run("market=gen", func(b *testing.B) {
		now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		cfg := gen.DefaultConfig(now)
		cfg.MaxSnapshotsPerMarket = 0
		g, err := gen.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		m, err := g.Market(store.BTC, store.H24, now.Add(-2*store.H24.Duration()).Truncate(store.H24.Duration()))
		if err != nil {
			b.Fatal(err)
		}
		snaps, err := g.Snapshots(m)
		if err != nil {
			b.Fatal(err)
		}
		tape, err := store.TapeOf(snaps, store.OutcomeUp)
		if err != nil {
			b.Fatal(err)
		}
		every := Strategy{
			Side:            SideUp,
			EntryConditions: conds(cond(FieldPriceUp, OpGreaterOrEqual, 0)),
			ExitConditions:  conds(cond(FieldPriceUp, OpGreaterOrEqual, 0)),
			PositionSize:    100,
		}
		few := benchStrategy()
		few.MaxEntriesPerMarket = 12
		runHeavy(b, Input{Market: m, Tape: tape}, every, few)
	})
}

func runHeavy(b *testing.B, in Input, heavy, few Strategy) {
	var buf []byte
	stages := []struct {
		unit string
		run  func(s Strategy)
	}{
		{"x_few_engine", func(s Strategy) { _, _ = PerformanceOf(in, s) }},
		{"x_few_result", func(s Strategy) { _, _ = RunInput(in, s) }},
		{"x_few_json", func(s Strategy) {
			r, _ := RunInput(in, s)
			buf, _ = r.AppendJSON(buf[:0])
		}},
		{"x_few_deflate", func(s Strategy) {
			r, _ := RunInput(in, s)
			buf, _ = r.AppendJSON(buf[:0])
			if _, err := gzjoin.Deflate(buf); err != nil {
				b.Fatal(err)
			}
		}},
	}
	b.ReportAllocs()
	for b.Loop() {
		stages[len(stages)-1].run(heavy)
	}
	r, err := RunInput(in, heavy)
	if err != nil {
		b.Fatal(err)
	}
	rf, err := RunInput(in, few)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(in.Tape.Len())*float64(b.N)/b.Elapsed().Seconds(), "snapshots/s")
	b.ReportMetric(float64(r.Performance.TotalTrades), "trades")
	b.ReportMetric(float64(rf.Performance.TotalTrades), "few_trades")
	b.ReportMetric(float64(len(buf))/1000, "answer_KB")
	for _, st := range stages {
		var ratios [9]float64
		for k := range ratios {
			ratios[k] = cpuBestOf(3, func() { st.run(heavy) }) / cpuBestOf(3, func() { st.run(few) })
		}
		slices.Sort(ratios[:])
		b.ReportMetric(ratios[len(ratios)/2], st.unit)
	}
}
