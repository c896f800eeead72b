package replay

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/updown/updown/store"
)

// plainQueueAt is queueAt's rule (DESIGN 6) walked level by level in one
// loop for both sides, as the engine did before it shared depthAt: the
// oracle the engine's walks are checked against.
func plainQueueAt(o *restOrder, tk *store.Tick, t *store.Tape) float64 {
	levels := t.Side(tk.Bids)
	if !o.buy {
		levels = t.Side(tk.Asks)
	}
	var q float64
	seen, at := false, false
	for _, l := range levels {
		if !isLevel(l) {
			continue
		}
		d := l.Price - o.limit // > 0: better than the limit
		if !o.buy {
			d = -d
		}
		switch {
		case d < -tolerance:
			if !seen {
				return 0 // the limit improves on the best level
			}
			return q // past the limit
		case d <= tolerance:
			q, at = q+l.Size, true
		}
		seen = true
	}
	switch {
	case !seen:
		return 0
	case at:
		return q
	}
	return math.Inf(1)
}

// queueByTicks is showQueue's rule read plainly: plainQueueAt of every tick
// with a book from o.shown to i−1, each shortening the queue (a queue of 0
// stays so), the oracle showQueue's shortcuts must agree with.
func queueByTicks(e *engine, i int) {
	o := &e.rest.o
	if e.rest.front {
		return
	}
walk:
	for j := o.shown; j < i && o.queue > 0; j++ {
		tk := &e.ticks[j]
		if !e.tape.HasBook(j) {
			continue
		}
		best, size := tk.BestBid, tk.BestBidSize
		if !o.buy {
			best, size = tk.BestAsk, tk.BestAskSize
		}
		d := best - o.limit
		if !o.buy {
			d = -d
		}
		switch {
		case best != best || d < -tolerance:
			o.queue = 0
			break walk
		case d <= tolerance && o.queue <= size:
			continue
		}
		o.queue = min(o.queue, plainQueueAt(o, tk, e.tape))
	}
	o.shown = max(o.shown, i)
}

// TestShowQueueAgreesWithQueueAt checks showQueue against queueByTicks,
// bit for bit, on random tapes: sides repeated from one or two ticks
// before, empty sides, levels out of order, at the limit give or take the
// tolerance, NaN and infinite prices of both signs, zero sizes, queues of 0, unknown
// (+Inf) and in between.
func TestShowQueueAgreesWithQueueAt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	eps := []float64{0, 0, 0, 0.5e-9, -0.5e-9, 1e-9, -1e-9, 2e-9, -2e-9}
	for trial := range 100_000 {
		buy := rng.IntN(2) == 0
		limit := float64(40+rng.IntN(20)) / 100
		var block []store.Level
		side := func() store.Span {
			n := rng.IntN(6)
			off := len(block)
			p := float64(40+rng.IntN(20)) / 100
			for range n {
				l := store.Level{Price: p + eps[rng.IntN(len(eps))], Size: float64(1 + rng.IntN(60))}
				switch rng.IntN(12) {
				case 0:
					l.Size = 0
				case 1:
					l.Price = math.NaN()
				case 2:
					l.Price = math.Inf(1)
				case 3:
					l.Price = math.Inf(-1)
				}
				block = append(block, l)
				step := float64(rng.IntN(3)) / 100
				if rng.IntN(10) == 0 {
					step = -step
				}
				if buy {
					p -= step
				} else {
					p += step
				}
			}
			return store.Span{Off: uint32(off), Len: uint16(n)}
		}
		nt := 1 + rng.IntN(12)
		ticks := make([]store.Tick, nt)
		spans := make([][2]store.Span, 0, nt)
		books := make([]bool, 0, nt) // a book recorded (its sides may list no level)
		for j := range ticks {
			var b, a store.Span
			book := true
			switch {
			case j > 0 && rng.IntN(3) == 0:
				b, a, book = spans[j-1][0], spans[j-1][1], books[j-1]
			case j > 1 && rng.IntN(6) == 0:
				b, a, book = spans[j-2][0], spans[j-2][1], books[j-2]
			case rng.IntN(10) == 0:
				book = false
			default:
				b, a = side(), side()
			}
			spans = append(spans, [2]store.Span{b, a})
			books = append(books, book)
		}
		tape := &store.Tape{Ticks: ticks, Blocks: [][]store.Level{block}}
		for j := range ticks {
			ticks[j].Bids, ticks[j].Asks = spans[j][0], spans[j][1]
			if !books[j] {
				tape.NoBook.Add(j)
			}
			ticks[j].SetBest(tape.Side(spans[j][0]), tape.Side(spans[j][1]))
		}
		q0 := []float64{math.Inf(1), 0, 5, 30, 100, float64(rng.IntN(200))}[rng.IntN(6)]
		shown := rng.IntN(nt)
		i := shown + rng.IntN(nt-shown+1)
		mk := func() *engine {
			e := &engine{tape: tape, ticks: ticks}
			e.rest.o = restOrder{buy: buy, limit: limit, queue: q0, shown: shown}
			return e
		}
		a, b := mk(), mk()
		queueByTicks(a, i)
		b.showQueue(i)
		if math.Float64bits(a.rest.o.queue) != math.Float64bits(b.rest.o.queue) || a.rest.o.shown != b.rest.o.shown {
			t.Fatalf("trial %d (buy %v, limit %v, queue %v, ticks %d-%d): showQueue %v, queueAt tick by tick %v", trial, buy, limit, q0, shown, i, b.rest.o.queue, a.rest.o.queue)
		}
	}
}

// TestDepthAtSkipsWhatIsNoLevel holds depthAt to its own rule where its
// callers never reach: a side whose only levels are not levels (an
// infinite or NaN price, no size) shows 0, not an unknown queue.
func TestDepthAtSkipsWhatIsNoLevel(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name   string
		levels []store.Level
		buy    bool
		want   float64
	}{
		{"bid at +Inf", []store.Level{{Price: inf, Size: 5}}, true, 0},
		{"ask at -Inf", []store.Level{{Price: -inf, Size: 5}}, false, 0},
		{"NaN bid", []store.Level{{Price: nan, Size: 5}}, true, 0},
		{"empty better bid", []store.Level{{Price: 0.6, Size: 0}}, true, 0},
		{"better bids only", []store.Level{{Price: inf, Size: 5}, {Price: 0.6, Size: 5}}, true, inf},
		{"at the limit", []store.Level{{Price: 0.6, Size: 5}, {Price: 0.5, Size: 7}, {Price: 0.4, Size: 9}}, true, 7},
		{"past without the limit", []store.Level{{Price: 0.4, Size: 5}, {Price: 0.6, Size: 7}}, false, 0},
		{"asks at the limit twice", []store.Level{{Price: 0.4, Size: 1}, {Price: 0.5, Size: 2}, {Price: 0.5, Size: 3}}, false, 5},
	} {
		if got := depthAt(tc.levels, 0.5, tc.buy); got != tc.want {
			t.Errorf("%s: depthAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// runTickByTick is RunWindow (the whole list) for a GTC strategy with the
// resting runs off: every tick through replayResting's loop.
func runTickByTick(in Input, s Strategy) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	s.applyDefaults()
	e := newEngine(in, s, keepAll)
	defer e.release()
	e.rest.tickByTick = true
	if err := e.replayResting(); err != nil {
		return Result{}, err
	}
	return e.result(in.Market, s, fullWindow), nil
}

// TestRestingRunsAgreeTickByTick: the runs of ticks a resting order
// passes over (restingBuyRun, restingSellRun) answer byte for byte what
// the loop answers tick by tick (drawdown and curve included), on random
// markets, trades and GTC strategies of the basic fields (the runs are
// off with extended fields), stop losses and cancels included.
func TestRestingRunsAgreeTickByTick(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 31))
	runs := 0
	for c := range 400 {
		n := 2 + rng.IntN(300)
		m, snaps := randomMarket(rng, n)
		if rng.IntN(2) == 0 {
			repeatBooks(rng, snaps)
		}
		// Few trades, so that orders rest through runs of ticks.
		var trades []store.MarketTrade
		keep := []int{0, 4, 8, 16}[rng.IntN(4)]
		for _, tr := range randomTrades(rng, snaps) {
			if keep > 0 && rng.IntN(keep) == 0 {
				trades = append(trades, tr)
			}
		}
		// Some at a snapshot's very instant, where a trade comes first.
		for k := range trades {
			if rng.IntN(3) == 0 {
				if j := sort.Search(len(snaps), func(j int) bool { return !snaps[j].Time.Before(trades[k].Time) }); j < len(snaps) {
					trades[k].Time = snaps[j].Time
				}
			}
		}
		s := drawStrategy(rng, snaps[0].CoinPrice, false)
		s.OrderType = OrderGTC
		s.LimitOffsetTicks = []int{0, 0, 1, 2}[rng.IntN(4)]
		if rng.IntN(3) == 0 {
			s.CancelAfterMs = []int{1, 500, 2000, 10_000}[rng.IntN(4)]
		}
		if rng.IntN(2) == 0 {
			s.MaxLossPercent = float64(1 + rng.IntN(30))
		}
		s.QueueModel = []string{"", QueueFront}[rng.IntN(2)]
		if rng.IntN(4) == 0 {
			s.LatencyMs = 300
		}
		in := inputOf(t, m, snaps, trades, s)
		want, err := runTickByTick(in, s)
		if err != nil {
			continue // a strategy the validation refuses: both refuse it
		}
		got, err := RunWindow(in, s, fullWindow)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
			t.Fatalf("case %d (n=%d): with runs\n%s\ntick by tick\n%s", c, n, g, w)
		}
		runs++
	}
	if runs < 300 {
		t.Errorf("only %d of 400 cases replayed", runs)
	}
}
