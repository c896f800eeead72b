package gen

import (
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

var txHashRe = regexp.MustCompile(`^0x[0-9a-f]{64}$`)

// tradeStats summarises the trades of many markets, as checkTradesOnBooks
// finds them.
type tradeStats struct {
	trades, orders  int
	atTouch, walked int // orders printing at the touch alone, and walking past it
	twins           int // orders also reported on the other token
	byOutcomeSide   map[[2]string]int
	small, hundreds int // orders under 50 shares; from 50 to 1,000
	thousands       int // orders over 1,000 shares
	first, last     int // trades in the first and in the last fifth of their windows
	minutes         float64
	perMarket       map[store.MarketType][]int
}

func newTradeStats() *tradeStats {
	return &tradeStats{byOutcomeSide: map[[2]string]int{}, perMarket: map[store.MarketType][]int{}}
}

// bookOf returns the book a trade at t meets: that of the last snapshot
// strictly before t.
func bookOf(snaps []store.Snapshot, t time.Time, outcome string) (*store.Book, bool) {
	i := lastBefore(snaps, t)
	if i < 0 {
		return nil, false
	}
	if outcome == store.OutcomeUp {
		return snaps[i].BookUp, true
	}
	return snaps[i].BookDown, true
}

// lastBefore returns the index of the last snapshot before t, or -1.
func lastBefore(snaps []store.Snapshot, t time.Time) int {
	i, _ := slices.BinarySearchFunc(snaps, t, func(s store.Snapshot, t time.Time) int { return s.Time.Compare(t) })
	return i - 1
}

func sameCents(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// checkTradesOnBooks checks that every trade of m prints against the book
// of the snapshot before it: an order's prints, sharing its time and hash,
// start at the touch (the best ask for a taker buy, the best bid for a
// sell) and walk the book's levels in order, each level before the last
// taken whole; a twin on the other token sits at the complement price,
// with the same size, time and hash. It adds what it finds to st.
func checkTradesOnBooks(t *testing.T, m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, st *tradeStats) {
	t.Helper()
	st.trades += len(trades)
	st.perMarket[m.MarketType] = append(st.perMarket[m.MarketType], len(trades))
	length := m.EndTime.Sub(m.StartTime)
	hashes := map[string]bool{} // of the orders before
	for i := 0; i < len(trades); {
		// One order: the run of prints of one time, hash, outcome and side.
		o := trades[i]
		j := i + 1
		for j < len(trades) && trades[j].Time.Equal(o.Time) && trades[j].TxHash == o.TxHash &&
			trades[j].Outcome == o.Outcome && trades[j].Side == o.Side {
			j++
		}
		prints := trades[i:j]
		where := m.Slug + " order at " + o.Time.Format(time.RFC3339Nano)
		if !txHashRe.MatchString(o.TxHash) {
			t.Errorf("%s: tx hash %q is not 0x and 64 lower-case hex digits", where, o.TxHash)
		}
		if hashes[o.TxHash] {
			t.Errorf("%s: tx hash %s of an earlier order", where, o.TxHash)
		}
		hashes[o.TxHash] = true
		book, ok := bookOf(snaps, o.Time, o.Outcome)
		if !ok || book == nil {
			t.Fatalf("%s: no snapshot with books before it", where)
		}
		levels := book.Bids
		if o.Side == store.SideBuy {
			levels = book.Asks
		}
		if len(prints) > len(levels) {
			t.Fatalf("%s: %d prints on a side of %d levels", where, len(prints), len(levels))
		}
		size := 0.0
		for k, p := range prints {
			l := levels[k]
			if !sameCents(p.Price, l.Price) {
				t.Errorf("%s: print %d at %v, want level %d of the %s %s side at %v (%+v)", where, k, p.Price, k, o.Outcome, o.Side, l.Price, levels)
			}
			if k < len(prints)-1 && p.Size != l.Size || p.Size > l.Size {
				t.Errorf("%s: print %d of %v shares at a level of %v", where, k, p.Size, l.Size)
			}
			size += p.Size
		}
		st.orders++
		st.byOutcomeSide[[2]string{o.Outcome, o.Side}]++
		if len(prints) == 1 {
			st.atTouch++
		} else {
			st.walked++
		}
		switch {
		case size < 50:
			st.small++
		case size <= 1000:
			st.hundreds++
		default:
			st.thousands++
		}
		switch u := o.Time.Sub(m.StartTime).Seconds() / length.Seconds(); {
		case u < 0.2:
			st.first += len(prints)
		case u >= 0.8:
			st.last += len(prints)
		}
		// A twin: the next print shares time and hash on the other token.
		if j < len(trades) && trades[j].TxHash == o.TxHash {
			tw := trades[j]
			other, ok := bookOf(snaps, tw.Time, tw.Outcome)
			twLevels := other.Asks
			if tw.Side == store.SideSell {
				twLevels = other.Bids
			}
			switch {
			case tw.Outcome == o.Outcome || tw.Side == o.Side || !tw.Time.Equal(o.Time) || len(prints) != 1:
				t.Errorf("%s: %+v shares its hash with %+v", where, tw, prints)
			case !sameCents(tw.Price, 1-o.Price) || tw.Size != o.Size:
				t.Errorf("%s: twin %+v of %+v is not at 1 − p for the same size", where, tw, o)
			case !ok || len(twLevels) == 0 || !sameCents(twLevels[0].Price, tw.Price) || tw.Size > twLevels[0].Size:
				t.Errorf("%s: twin %+v is not at the touch of its book %+v", where, tw, other)
			}
			st.twins++
			j++
		}
		i = j
	}
}

// TestMarketTradesMeetTheBooks generates markets with books of several
// depths, fresh and churning, and checks every trade against the book it
// met, then what the trades look like together: both outcomes and both
// taker sides, prints at and through the touch, heavy-tailed sizes, twins,
// a realistic rate that rises towards the end of the window.
func TestMarketTradesMeetTheBooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		levels, churn int
	}{{"10 levels", 10, 0}, {"3 levels", 3, 0}, {"churning books", 10, 6}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := smallConfig(testNow())
			cfg.BookLevels, cfg.BookChurn = tc.levels, tc.churn
			g := mustNew(t, cfg)
			st := newTradeStats()
			for _, m := range g.Markets() {
				trades, err := g.MarketTrades(m)
				if err != nil {
					t.Fatal(err)
				}
				checkMarketTrades(t, g, m, trades)
				checkTradesOnBooks(t, m, mustSnapshots(t, g, m), trades, st)
				end := minTime(m.EndTime, cfg.Now)
				if from, to, ok := g.Outage(); ok && to.After(m.StartTime) && from.Before(end) {
					end = end.Add(-(minTime(to, end).Sub(maxTime(from, m.StartTime))))
				}
				st.minutes += end.Sub(m.StartTime).Minutes()
			}
			t.Logf("%d trades of %d orders over %.0f market-minutes (%.1f a minute): %d at the touch, %d walking; %d twins; sizes %d < 50, %d to 1,000, %d over; first fifth %d, last fifth %d; by outcome and side %v",
				st.trades, st.orders, st.minutes, float64(st.trades)/st.minutes, st.atTouch, st.walked, st.twins,
				st.small, st.hundreds, st.thousands, st.first, st.last, st.byOutcomeSide)
			for _, k := range [][2]string{{store.OutcomeUp, store.SideBuy}, {store.OutcomeUp, store.SideSell},
				{store.OutcomeDown, store.SideBuy}, {store.OutcomeDown, store.SideSell}} {
				if n := st.byOutcomeSide[k]; n < st.orders/8 {
					t.Errorf("%d of %d orders are %s taker %ss", n, st.orders, k[0], k[1])
				}
			}
			if rate := float64(st.trades) / st.minutes; rate < 2 || rate > 40 {
				t.Errorf("%.1f trades a market-minute, want a few to tens", rate)
			}
			if st.walked < st.orders/50 || st.walked > st.orders/4 {
				t.Errorf("%d of %d orders walk past the touch, want some, not most", st.walked, st.orders)
			}
			if st.twins < st.orders/50 || st.twins > st.orders/4 {
				t.Errorf("%d twins of %d orders, want now and then", st.twins, st.orders)
			}
			if st.small < st.orders/2 || st.hundreds < st.orders/20 || st.thousands == 0 || st.thousands > st.orders/10 {
				t.Errorf("order sizes: %d under 50, %d to 1,000, %d over, of %d: want many small, some hundreds, rare thousands",
					st.small, st.hundreds, st.thousands, st.orders)
			}
			if st.last < 2*st.first {
				t.Errorf("%d trades in windows' last fifth against %d in their first: want more near the end", st.last, st.first)
			}
		})
	}
}

// restingBuyFills reports whether a resting BUY of size shares of the
// outcome, placed at its best bid at snapshot i and live for life, fills
// by DESIGN 6's rules (RISK_AVERSE queue, no latency): from taker sales of
// the outcome at or below the bid once the queue ahead is gone, from taker
// buys of the other outcome at 1 − p (a hash counted once), and, with
// crossing, from asks that cross it.
func restingBuyFills(snaps []store.Snapshot, trades []store.MarketTrade, outcome string, i int, size float64, life time.Duration, crossing bool) (filled, placed bool) {
	book := func(s store.Snapshot) *store.Book {
		if outcome == store.OutcomeUp {
			return s.BookUp
		}
		return s.BookDown
	}
	b := book(snaps[i])
	if b == nil || len(b.Bids) == 0 {
		return false, false
	}
	L, q := b.Bids[0].Price, b.Bids[0].Size
	from, until := snaps[i].Time, snaps[i].Time.Add(life)
	const eps = 1e-9
	counted, seen := 0.0, map[string]bool{}
	sale := func(p, n float64) {
		switch {
		case p < L-eps:
			counted += n
		case math.Abs(p-L) <= eps:
			r := min(q, n)
			q -= r
			counted += n - r
		}
	}
	// Trades of an instant: this outcome's first; each before the
	// snapshot at its instant.
	k, s := 0, i+1
	for k < len(trades) || s < len(snaps) {
		if k < len(trades) && (s >= len(snaps) || !trades[k].Time.After(snaps[s].Time)) {
			t0 := trades[k].Time
			e := k
			for e < len(trades) && trades[e].Time.Equal(t0) {
				e++
			}
			if t0.After(from) && !t0.After(until) {
				for _, tr := range trades[k:e] {
					if tr.Outcome == outcome && tr.Side == store.SideSell {
						sale(tr.Price, tr.Size)
						seen[tr.TxHash] = true
					}
				}
				for _, tr := range trades[k:e] {
					if tr.Outcome != outcome && tr.Side == store.SideBuy && !seen[tr.TxHash] {
						sale(1-tr.Price, tr.Size)
						seen[tr.TxHash] = true
					}
				}
				if counted >= size {
					return true, true
				}
			}
			k = e
			continue
		}
		sn := snaps[s]
		s++
		if sn.Time.After(until) {
			break
		}
		b := book(sn)
		if b == nil {
			continue
		}
		shown, within := 0.0, false
		for _, l := range b.Bids {
			if math.Abs(l.Price-L) <= eps {
				shown = l.Size
			}
			if l.Price <= L+eps {
				within = true
			}
		}
		if within || shown > 0 {
			q = min(q, shown)
		}
		cross := 0.0
		for _, l := range b.Asks {
			if crossing && l.Price < L-eps {
				cross += l.Size
			}
		}
		if counted+cross >= size {
			return true, true
		}
	}
	return false, true
}

// TestRestingOrdersFillSometimes: resting maker BUYs at the touch, placed
// through resolved markets' windows, fill from the recorded trades alone
// some of the time, not never and not always.
func TestRestingOrdersFillSometimes(t *testing.T) {
	t.Parallel()
	g := mustNew(t, smallConfig(testNow()))
	for _, life := range []time.Duration{30 * time.Second, 10 * time.Minute} {
		placed, filled, crossed := 0, 0, 0
		for _, m := range g.Markets() {
			if !m.Resolved() {
				continue
			}
			snaps := mustSnapshots(t, g, m)
			trades, err := g.MarketTrades(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) < 10 {
				continue
			}
			for _, at := range []int{len(snaps) / 5, len(snaps) / 2, len(snaps) * 4 / 5} {
				for _, outcome := range []string{store.OutcomeUp, store.OutcomeDown} {
					f, ok := restingBuyFills(snaps, trades, outcome, at, 100, life, false)
					if !ok {
						continue
					}
					placed++
					if f {
						filled++
					}
					if f, _ := restingBuyFills(snaps, trades, outcome, at, 100, life, true); f {
						crossed++
					}
				}
			}
		}
		t.Logf("resting BUYs of 100 shares at the touch, live %v: %d placed, %d filled by trades (%d counting crossing books)", life, placed, filled, crossed)
		if placed < 50 || filled < placed/10 || filled > placed*9/10 {
			t.Errorf("live %v: %d of %d resting orders filled by trades: want some, not all", life, filled, placed)
		}
	}
}

// TestMarketTradesContinue: a generator with a later Now only adds trades;
// those it had are kept as they were.
func TestMarketTradesContinue(t *testing.T) {
	t.Parallel()
	cfg := smallConfig(testNow())
	cfg.Outage = 0 // the outage moves with Now
	g1 := mustNew(t, cfg)
	cfg.Now = cfg.Now.Add(7*time.Minute + 300*time.Millisecond)
	g2 := mustNew(t, cfg)
	extended := 0
	for _, m := range g1.Markets() {
		t1, err := g1.MarketTrades(m)
		if err != nil {
			t.Fatal(err)
		}
		t2, err := g2.MarketTrades(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(t2) < len(t1) || !slices.Equal(t1, t2[:len(t1)]) {
			t.Errorf("%s: the %d trades at Now are not a prefix of the %d later", m.Slug, len(t1), len(t2))
		}
		if len(t2) > len(t1) {
			extended++
		}
	}
	if extended == 0 {
		t.Error("no market gained trades")
	}
}
