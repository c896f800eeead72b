package gen

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// checkingWriter is a Writer that checks every snapshot as Seed writes it
// and keeps only a summary, so that the full dev data set can be checked
// without holding it.
type checkingWriter struct {
	t *testing.T
	g *Generator

	mu       sync.Mutex
	markets  map[string]store.Market
	checkers map[string]*snapshotChecker
	trades   map[string]int
	gaps     map[string][]store.Gap
	depth    []store.DepthSnapshot
}

func newCheckingWriter(t *testing.T, g *Generator) *checkingWriter {
	return &checkingWriter{t: t, g: g, markets: map[string]store.Market{}, checkers: map[string]*snapshotChecker{},
		trades: map[string]int{}, gaps: map[string][]store.Gap{}}
}

func (w *checkingWriter) UpsertMarkets(_ context.Context, ms []store.Market) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range ms {
		w.markets[m.Slug] = m
		w.checkers[m.Slug] = &snapshotChecker{g: w.g, m: m, levels: w.g.Config().BookLevels}
	}
	return nil
}

func (w *checkingWriter) AppendSnapshots(_ context.Context, slug string, s []store.Snapshot) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.checkers[slug]
	if !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	if len(s) == 0 || len(s) > w.g.Config().BatchSize || cap(s) != len(s) {
		w.t.Errorf("%s: batch of %d (cap %d), want 1 to %d, clipped", slug, len(s), cap(s), w.g.Config().BatchSize)
	}
	c.check(w.t, s)
	return len(s), nil
}

func (w *checkingWriter) AppendMarketTrades(_ context.Context, slug string, tr []store.MarketTrade) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.markets[slug]
	if !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	checkMarketTrades(w.t, w.g, m, tr)
	w.trades[slug] += len(tr)
	return len(tr), nil
}

func (w *checkingWriter) RecordGaps(_ context.Context, slug string, gaps []store.Gap) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.markets[slug]
	if !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	checkGaps(w.t, w.g, m, gaps)
	w.gaps[slug] = append(w.gaps[slug], gaps...)
	return len(gaps), nil
}

func (w *checkingWriter) AppendDepth(_ context.Context, d []store.DepthSnapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.depth = append(w.depth, d...)
	return nil
}

// TestDefaultConfigCoverage seeds the dev data set and checks DESIGN 3's
// list item by item, and every invariant on every snapshot on the way.
func TestDefaultConfigCoverage(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	g := mustNew(t, cfg)
	now := g.Config().Now
	if !now.Equal(testNow().Truncate(time.Millisecond)) {
		t.Fatalf("Now = %v, want %v truncated to the millisecond", now, testNow())
	}
	w := newCheckingWriter(t, g)
	st, err := g.Seed(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	ms := g.Markets()
	checkMarkets(t, g, ms)
	if len(w.markets) != len(ms) {
		t.Fatalf("wrote %d markets, generated %d", len(w.markets), len(ms))
	}

	type series struct {
		coin store.Coin
		mt   store.MarketType
	}
	bySeries := map[series][]store.Market{}
	for _, m := range ms {
		k := series{m.Coin, m.MarketType}
		bySeries[k] = append(bySeries[k], m)
	}
	from, to, ok := g.Outage()
	if !ok {
		t.Fatal("no outage in the default config")
	}
	var unresolved, noData, snapshots int
	newest := time.Time{}
	for _, c := range store.Coins {
		for _, mt := range store.MarketTypes {
			got := bySeries[series{c, mt}]
			t.Run(fmt.Sprintf("%s/%s", c, mt), func(t *testing.T) {
				if !mt.AvailableFor(c) {
					if len(got) != 0 {
						t.Errorf("%d markets of a type SPEC does not allow", len(got))
					}
					return
				}
				// Every coin and type, a few more than the Starter window.
				if len(got) != cfg.Markets[mt] {
					t.Fatalf("%d markets, want %d", len(got), cfg.Markets[mt])
				}
				if starter := map[store.MarketType]int{store.M5: 50, store.M15: 50, store.H1: 24, store.H4: 24, store.H24: 5}[mt]; len(got) <= starter {
					t.Errorf("%d markets do not reach past the Starter window of %d", len(got), starter)
				}
				// Newest first, back to back, the first live at Now with
				// snapshots up to Now.
				for k, m := range got[1:] {
					if !m.EndTime.Equal(got[k].StartTime) {
						t.Errorf("market %d ends %v, want the start of the next, %v", k+1, m.EndTime, got[k].StartTime)
					}
				}
				live := got[0]
				if live.StartTime.After(now) || !live.EndTime.After(now) || live.Resolved() {
					t.Errorf("newest market %s (%v–%v, resolved %v) is not live at %v", live.Slug, live.StartTime, live.EndTime, live.Resolved(), now)
				}
				lc := w.checkers[live.Slug]
				if lc.n == 0 || now.Sub(lc.last) > g.cadence(mt)*5/4 {
					t.Errorf("live market has %d snapshots, the last at %v, want one within a cadence of %v", lc.n, lc.last, now)
				}
				for _, m := range got[1:] {
					c := w.checkers[m.Slug]
					inOutage := !m.StartTime.Before(from) && !m.EndTime.After(to)
					touched := m.StartTime.Before(to) && m.EndTime.After(from)
					switch {
					case inOutage && c.n != 0:
						t.Errorf("%s lies in the outage %v–%v but has %d snapshots", m.Slug, from, to, c.n)
					case !touched && m.Resolved() && c.n != 1000:
						t.Errorf("%s has %d snapshots, want 1,000", m.Slug, c.n)
					}
				}
			})
			for _, m := range got {
				n := w.checkers[m.Slug].n
				snapshots += n
				if !m.Resolved() {
					unresolved++
				}
				if m.Resolved() && n == 0 {
					noData++
				}
				if l := w.checkers[m.Slug].last; l.After(newest) {
					newest = l
				}
			}
		}
	}
	// A short collector gap: a few resolved markets of each coin with no
	// snapshots.
	for _, c := range store.Coins {
		var empty []string
		for _, m := range ms {
			if m.Coin == c && m.Resolved() && w.checkers[m.Slug].n == 0 {
				empty = append(empty, m.Slug)
			}
		}
		if len(empty) < 2 || len(empty) > 5 {
			t.Errorf("%s: %d resolved markets without snapshots (%v), want a few", c, len(empty), empty)
		}
	}
	// Data ends at the present.
	if now.Sub(newest) > cfg.Interval*5/4 {
		t.Errorf("newest snapshot %v, want one within %v of Now %v", newest, cfg.Interval, now)
	}
	// What real markets carry (DESIGN 3): trades, a gap where the outage
	// fell, tick changes on a few markets, a few daily ties.
	var trades, gaps, tickChanges, ties int
	for _, m := range ms {
		trades += w.trades[m.Slug]
		gaps += len(w.gaps[m.Slug])
		tickChanges += len(m.TickSizeChanges)
		if m.Winner != nil && *m.Winner == store.OutcomeFiftyFifty {
			ties++
		}
		inOutage := !m.StartTime.Before(from) && !m.EndTime.After(to)
		if inOutage && (len(w.gaps[m.Slug]) != 1 || !w.gaps[m.Slug][0].From.Equal(m.StartTime) || !w.gaps[m.Slug][0].To.Equal(m.EndTime)) {
			t.Errorf("%s lies in the outage; gaps %v, want its whole window", m.Slug, w.gaps[m.Slug])
		}
		if !inOutage && m.Resolved() && w.trades[m.Slug] == 0 {
			t.Errorf("%s: no trades", m.Slug)
		}
	}
	if gaps == 0 || tickChanges < 3 || ties < 1 || ties > 3 {
		t.Errorf("%d gaps, %d tick changes, %d daily ties: want a gap, a few tick changes, one to three ties", gaps, tickChanges, ties)
	}
	want := Stats{Markets: len(ms), Unresolved: unresolved, NoData: noData, Snapshots: snapshots, Trades: trades, Gaps: gaps, Depth: len(w.depth)}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	t.Logf("default config: %+v", st)

	// Exchange data for all coins: depth history for BTC spot and futures,
	// latest depth and recent trades for all.
	checkDepthHistory(t, g, w.depth)
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			d, err := g.LatestDepth(c, k)
			if err != nil {
				t.Fatal(err)
			}
			checkDepth(t, d, c, k, cfg.DepthLevels)
			if !d.Time.Equal(now) {
				t.Errorf("latest %s %s depth at %v, want Now", c, k, d.Time)
			}
			trades, err := g.Trades(c, k, 1000)
			if err != nil {
				t.Fatal(err)
			}
			checkTrades(t, g, c, k, trades, 1000)
		}
	}
}

// TestDeterminism: the same Seed and Now give the same bytes however the work
// is scheduled; another Seed gives other data.
func TestDeterminism(t *testing.T) {
	t.Parallel()
	cfg := smallConfig(testNow())
	a, sa := seedAll(t, cfg)
	b, sb := seedAll(t, cfg)
	if da, db := a.digest(t), b.digest(t); da != db || sa != sb {
		t.Errorf("two runs differ: %s %+v vs %s %+v", da, sa, db, sb)
	}
	if sa.Snapshots == 0 || sa.Depth == 0 || sa.NoData == 0 || sa.Unresolved < 11 || sa.Markets != len(a.markets) {
		t.Errorf("stats %+v", sa)
	}
	if a.calls < len(a.markets) {
		t.Errorf("%d AppendSnapshots calls for %d markets", a.calls, len(a.markets))
	}

	// One goroutine, market by market, in reverse order, through the
	// public methods: the same data again.
	g := mustNew(t, cfg)
	c := newRecorder()
	ms := g.Markets()
	_ = c.UpsertMarkets(context.Background(), ms)
	for i := len(ms) - 1; i >= 0; i-- {
		if s := mustSnapshots(t, g, ms[i]); len(s) > 0 {
			_, _ = c.AppendSnapshots(context.Background(), ms[i].Slug, s)
		}
		tr, err := g.MarketTrades(ms[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) > 0 {
			_, _ = c.AppendMarketTrades(context.Background(), ms[i].Slug, tr)
		}
		gaps, err := g.Gaps(ms[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(gaps) > 0 {
			_, _ = c.RecordGaps(context.Background(), ms[i].Slug, gaps)
		}
	}
	c.depth = g.DepthHistory()
	if a.digest(t) != c.digest(t) {
		t.Error("sequential generation differs from Seed's")
	}

	cfg.Seed++
	d, _ := seedAll(t, cfg)
	if a.digest(t) == d.digest(t) {
		t.Error("another seed gives the same data")
	}
	// Identities belong to the market, not the seed.
	for slug, m := range a.markets {
		o := d.markets[slug]
		if m.MarketID != o.MarketID || m.ConditionID != o.ConditionID || m.ClobTokenUp != o.ClobTokenUp {
			t.Errorf("%s: ids change with the seed", slug)
		}
		if *m.CoinPriceStart == *o.CoinPriceStart {
			t.Errorf("%s: the same start price %v under another seed", slug, *m.CoinPriceStart)
		}
	}
}

// TestContinuation: a generator with a later Now continues the same
// history: markets resolved at both instants are identical, and the
// snapshots of every market are extended, never rewritten.
func TestContinuation(t *testing.T) {
	t.Parallel()
	cfg := smallConfig(testNow())
	cfg.Outage = 0 // the outage moves with Now
	g1 := mustNew(t, cfg)
	cfg.Now = cfg.Now.Add(7*time.Minute + 300*time.Millisecond)
	g2 := mustNew(t, cfg)

	later := map[string]store.Market{}
	for _, m := range g2.Markets() {
		later[m.Slug] = m
	}
	var compared, extended int
	for _, m1 := range g1.Markets() {
		m2, ok := later[m1.Slug]
		if !ok {
			continue // dropped off the back of the series
		}
		if m1.Resolved() && !sameJSON(t, m1, m2) {
			t.Errorf("%s changed after resolution:\n%+v\n%+v", m1.Slug, m1, m2)
		}
		s1, s2 := mustSnapshots(t, g1, m1), mustSnapshots(t, g2, m2)
		if len(s2) < len(s1) || !sameJSON(t, s1, s2[:len(s1)]) {
			t.Errorf("%s: %d snapshots at Now are not a prefix of the %d later", m1.Slug, len(s1), len(s2))
		}
		compared++
		if len(s2) > len(s1) {
			extended++
		}
	}
	if compared == 0 || extended == 0 {
		t.Errorf("compared %d markets, %d extended", compared, extended)
	}
	for _, c := range store.Coins {
		t1, _ := g1.Trades(c, store.Spot, 50)
		t2, _ := g2.Trades(c, store.Spot, 20_000)
		byID := map[int64]store.Trade{}
		for _, tr := range t2 {
			byID[tr.ID] = tr
		}
		for _, tr := range t1 {
			if !sameJSON(t, tr, byID[tr.ID]) {
				t.Errorf("%s trade %d differs later: %+v vs %+v", c, tr.ID, tr, byID[tr.ID])
			}
		}
	}
}

// TestPriceUpTracksTheCoin: price_up starts near even odds and ends on the
// side that wins, as a fair probability would.
func TestPriceUpTracksTheCoin(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.Markets = map[store.MarketType]int{store.M5: 150, store.H1: 20}
	cfg.BookLevels = 0
	cfg.Outage = 0
	g := mustNew(t, cfg)
	var resolved, agree int
	var first float64
	for _, m := range g.Markets() {
		if !m.Resolved() {
			continue
		}
		s := mustSnapshots(t, g, m)
		resolved++
		first += (s[0].PriceUp + 1 - s[0].PriceDown) / 2
		if last := s[len(s)-1]; (last.PriceUp > last.PriceDown) == (*m.Winner == store.OutcomeUp) {
			agree++
		}
	}
	if mean := first / float64(resolved); math.Abs(mean-0.5) > 0.02 {
		t.Errorf("mean opening probability %.3f, want 0.5", mean)
	}
	if share := float64(agree) / float64(resolved); share < 0.9 {
		t.Errorf("the last snapshot favours the winner in %.0f%% of %d markets, want ≥ 90%%", 100*share, resolved)
	}
}

// TestVolatility: the realized volatility of each path matches its model,
// and levels stay realistic in any year.
func TestVolatility(t *testing.T) {
	t.Parallel()
	g := mustNew(t, DefaultConfig(testNow()))
	for _, cm := range DefaultCoins() {
		// One-minute returns over 14 days: about 20,000 of them, so the
		// estimate's own error is under 1%.
		var sum, sumSq float64
		var n int
		end := testNow()
		prev, _ := g.CoinPrice(cm.Coin, end.Add(-14*24*time.Hour))
		for at := end.Add(-14*24*time.Hour + time.Minute); !at.After(end); at = at.Add(time.Minute) {
			p, _ := g.CoinPrice(cm.Coin, at)
			r := math.Log(p / prev)
			sum, sumSq, n, prev = sum+r, sumSq+r*r, n+1, p
		}
		mean := sum / float64(n)
		vol := math.Sqrt((sumSq/float64(n) - mean*mean) * 365 * 24 * 60)
		if math.Abs(vol/cm.Vol-1) > 0.08 {
			t.Errorf("%s: realized volatility %.3f, model %.2f", cm.Coin, vol, cm.Vol)
		}
		// Within one second, where interpolation rules, prices stay
		// continuous.
		a, _ := g.CoinPrice(cm.Coin, end)
		b, _ := g.CoinPrice(cm.Coin, end.Add(300*time.Millisecond))
		if math.Abs(math.Log(b/a)) > 10*cm.Vol/math.Sqrt(secondsPerYear) {
			t.Errorf("%s: jump from %v to %v in 300ms", cm.Coin, a, b)
		}
		for _, year := range []int{2000, 2005, 2020, 2026, 2040} {
			p, _ := g.CoinPrice(cm.Coin, time.Date(year, 7, 1, 0, 0, 0, 0, time.UTC))
			if p < cm.Price/2 || p > cm.Price*2 {
				t.Errorf("%s: price %v in %d, model level %v", cm.Coin, p, year, cm.Price)
			}
		}
		t.Logf("%s: realized volatility %.3f (model %.2f), price at Now %.2f", cm.Coin, vol, cm.Vol, a)
	}
	if _, ok := g.CoinPrice("DOGE", testNow()); ok {
		t.Error("CoinPrice of an unknown coin succeeded")
	}
}

// TestRealCadence: with no cap, a 24hr market has the reference's 288,000
// snapshots, 300 ms apart.
func TestRealCadence(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.MaxSnapshotsPerMarket = 0
	cfg.BookLevels = 0
	g := mustNew(t, cfg)
	for mt, want := range map[store.MarketType]int{store.M5: 1000, store.M15: 3000, store.H1: 12_000, store.H4: 48_000, store.H24: 288_000} {
		m, err := g.Market(store.BTC, mt, testNow().Add(-50*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		s := mustSnapshots(t, g, m)
		if len(s) != want || !m.Resolved() {
			t.Errorf("%s: %d snapshots (resolved %v), want %d", mt, len(s), m.Resolved(), want)
		}
		for i := 1; i < len(s); i++ {
			if gap := s[i].Time.Sub(s[i-1].Time); gap < 225*time.Millisecond || gap > 375*time.Millisecond {
				t.Fatalf("%s: snapshots %d and %d are %v apart", mt, i-1, i, gap)
			}
		}
	}
}

// TestOneMarket: Market and Snapshots for a market that is not in the
// config's series, with ten-level books, pass the same checks.
func TestOneMarket(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.BookLevels = 10
	g := mustNew(t, cfg)
	m, err := g.Market(store.SOL, store.H1, time.Date(2026, 2, 1, 10, 42, 0, 0, time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC); !m.StartTime.Equal(want) || m.Slug != "sol-updown-1hr-1769936400" {
		t.Errorf("market %s starts %v, want %v", m.Slug, m.StartTime, want)
	}
	checkMarkets(t, g, []store.Market{m})
	c := &snapshotChecker{g: g, m: m, levels: 10}
	s := mustSnapshots(t, g, m)
	c.check(t, s)
	if len(s) != 1000 {
		t.Errorf("%d snapshots, want 1,000", len(s))
	}
	full := 0
	for _, x := range s {
		if len(x.BookUp.Bids) == 10 && len(x.BookUp.Asks) == 10 {
			full++
		}
	}
	if full < len(s)/2 {
		t.Errorf("only %d of %d books have ten levels a side", full, len(s))
	}
}

// TestBookLevelsOnlyDeepen: BookLevels changes the books alone, and a book
// of fewer levels is the top of one of more, with BookChurn or without.
func TestBookLevelsOnlyDeepen(t *testing.T) {
	t.Parallel()
	for _, churn := range []int{0, 2} {
		bookLevelsOnlyDeepen(t, churn)
	}
}

func bookLevelsOnlyDeepen(t *testing.T, churn int) {
	cfg := smallConfig(testNow())
	cfg.BookChurn = churn
	cfg.BookLevels = 10
	deep := mustNew(t, cfg)
	cfg.BookLevels = 3
	shallow := mustNew(t, cfg)
	cfg.BookLevels = 0
	none := mustNew(t, cfg)
	for _, m := range deep.Markets() {
		d, s, n := mustSnapshots(t, deep, m), mustSnapshots(t, shallow, m), mustSnapshots(t, none, m)
		if len(d) != len(s) || len(d) != len(n) {
			t.Fatalf("%s: %d, %d and %d snapshots", m.Slug, len(d), len(s), len(n))
		}
		for i := range d {
			if d[i].Time != n[i].Time || d[i].CoinPrice != n[i].CoinPrice || d[i].PriceUp != n[i].PriceUp || d[i].PriceDown != n[i].PriceDown {
				t.Fatalf("%s snapshot %d: %+v with books, %+v without", m.Slug, i, d[i], n[i])
			}
			for _, pair := range [][2][]store.Level{
				{d[i].BookUp.Bids, s[i].BookUp.Bids}, {d[i].BookUp.Asks, s[i].BookUp.Asks},
				{d[i].BookDown.Bids, s[i].BookDown.Bids}, {d[i].BookDown.Asks, s[i].BookDown.Asks},
			} {
				if !sameJSON(t, pair[0][:len(pair[1])], pair[1]) {
					t.Fatalf("churn %d, %s snapshot %d: %v is not the top of %v", churn, m.Slug, i, pair[1], pair[0])
				}
			}
		}
	}
}

// TestBookChurn: with BookChurn, books pass the same checks, change a few
// levels at a time (most sides are the previous snapshot's, as on
// Polymarket), and everything else is what it is without churn, the same
// for the same seed.
func TestBookChurn(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.MaxSnapshotsPerMarket = 0 // 300 ms, where books move little
	fresh := mustNew(t, cfg)
	cfg.BookChurn = 2
	churned, again := mustNew(t, cfg), mustNew(t, cfg)
	m, err := churned.Market(store.BTC, store.M15, testNow().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	s, f := mustSnapshots(t, churned, m), mustSnapshots(t, fresh, m)
	(&snapshotChecker{g: churned, m: m, levels: cfg.BookLevels}).check(t, s)
	if !sameJSON(t, s, mustSnapshots(t, again, m)) {
		t.Error("the same seed gave other books")
	}
	if len(s) != len(f) {
		t.Fatalf("%d snapshots with churn, %d without", len(s), len(f))
	}
	same := func(snaps []store.Snapshot) (n int) {
		for i := 1; i < len(snaps); i++ {
			for _, pair := range [][2][]store.Level{
				{snaps[i].BookUp.Bids, snaps[i-1].BookUp.Bids}, {snaps[i].BookUp.Asks, snaps[i-1].BookUp.Asks},
				{snaps[i].BookDown.Bids, snaps[i-1].BookDown.Bids}, {snaps[i].BookDown.Asks, snaps[i-1].BookDown.Asks},
			} {
				if slices.Equal(pair[0], pair[1]) {
					n++
				}
			}
		}
		return n
	}
	sides := 4 * (len(s) - 1)
	t.Logf("sides as the previous snapshot's: %d of %d with churn, %d without", same(s), sides, same(f))
	if n := same(s); n < sides/2 {
		t.Errorf("with churn %d of %d sides are the previous snapshot's, want most", n, sides)
	}
	if n := same(f); n > sides/100 {
		t.Errorf("without churn %d of %d sides are the previous snapshot's, want almost none", n, sides)
	}
	for i := range s {
		if s[i].Time != f[i].Time || s[i].CoinPrice != f[i].CoinPrice || s[i].PriceUp != f[i].PriceUp || s[i].PriceDown != f[i].PriceDown {
			t.Fatalf("snapshot %d: %+v with churn, %+v without", i, s[i], f[i])
		}
	}
}

func TestMarketErrors(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(testNow())
	cfg.Coins = DefaultCoins()[:2] // no SOL
	g := mustNew(t, cfg)
	for _, tc := range []struct {
		coin  store.Coin
		mt    store.MarketType
		start time.Time
		want  string
	}{
		{store.ETH, store.H4, testNow().Add(-24 * time.Hour), "no 4hr markets"},
		{store.SOL, store.M5, testNow().Add(-24 * time.Hour), "not in the config"},
		{store.BTC, "2m", testNow(), "unknown market type"},
		{store.BTC, store.M5, testNow().Add(time.Hour), "after Now"},
		{store.BTC, store.M5, time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), "before"},
	} {
		if _, err := g.Market(tc.coin, tc.mt, tc.start); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Market(%s, %s, %v) = %v, want an error saying %q", tc.coin, tc.mt, tc.start, err, tc.want)
		}
	}
	m := g.Markets()[0]
	m.StartTime = m.StartTime.Add(time.Second)
	if _, err := g.Snapshots(m); err == nil {
		t.Error("Snapshots of an unaligned market succeeded")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"zero Now":        {func(c *Config) { c.Now = time.Time{} }, "Now"},
		"no coins":        {func(c *Config) { c.Coins = nil }, "no Coins"},
		"unknown coin":    {func(c *Config) { c.Coins[0].Coin = "DOGE" }, "DOGE"},
		"coin twice":      {func(c *Config) { c.Coins[1].Coin = store.BTC }, "twice"},
		"zero price":      {func(c *Config) { c.Coins[0].Price = 0 }, "price"},
		"NaN vol":         {func(c *Config) { c.Coins[0].Vol = math.NaN() }, "volatility"},
		"bad type":        {func(c *Config) { c.Markets["2m"] = 1 }, "2m"},
		"negative count":  {func(c *Config) { c.Markets[store.M5] = -1 }, "negative"},
		"zero interval":   {func(c *Config) { c.Interval = 0 }, "Interval"},
		"too many levels": {func(c *Config) { c.BookLevels = 100 }, "BookLevels"},
		"negative churn":  {func(c *Config) { c.BookChurn = -1 }, "BookChurn"},
		"outage too late": {func(c *Config) { c.OutageAgo = c.Outage }, "OutageAgo"},
		"no depth levels": {func(c *Config) { c.DepthLevels = 0 }, "DepthLevels"},
		"zero batch":      {func(c *Config) { c.BatchSize = 0 }, "BatchSize"},
		"before epoch":    {func(c *Config) { c.Markets[store.H24] = 10_000 }, "before"},
	} {
		cfg := DefaultConfig(testNow())
		tc.change(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error mentioning %q", name, err, tc.want)
		}
	}
	// Errors are reported together.
	cfg := DefaultConfig(testNow())
	cfg.BatchSize, cfg.DepthLevels = 0, 0
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "BatchSize") || !strings.Contains(err.Error(), "DepthLevels") {
		t.Errorf("New = %v, want both problems", err)
	}
	// The generator keeps its own copy of the config.
	cfg = DefaultConfig(testNow())
	g := mustNew(t, cfg)
	cfg.Markets[store.M5] = 1
	cfg.Coins[0].Price = 1
	if len(g.Markets()) != 487 || g.Config().Coins[0].Price != 95_000 {
		t.Error("changing the caller's Config changed the generator")
	}
}

// TestOutageWithinAnHourlyMarket: at whatever minute the data is made, the
// default outage lies inside a resolved hourly market, with recorded time
// on both sides of it: a recording gap within a market, which a market's
// chart and its gaps list show. Ending on the hour (made in the last
// quarter of an hour) or beginning on it (the second), it ended or began
// the hourly market holding it, and, at most such times, the 4hr and daily
// markets around it were not resolved yet or ended with it.
func TestOutageWithinAnHourlyMarket(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for m := range 24 * 60 {
		now := day.Add(time.Duration(m) * time.Minute)
		g, err := New(DefaultConfig(now))
		if err != nil {
			t.Fatal(err)
		}
		from, to, ok := g.Outage()
		if !ok {
			t.Fatal("no outage in the default config")
		}
		hour := from.Truncate(time.Hour)
		if !from.After(hour) || !to.Before(hour.Add(time.Hour)) || hour.Add(time.Hour).After(g.Config().Now) {
			t.Fatalf("made at %s: outage %s to %s, not strictly inside a resolved hourly market", now.Format("15:04"), from.Format("15:04"), to.Format("15:04"))
		}
	}
}
