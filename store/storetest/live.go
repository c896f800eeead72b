package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// RunLive runs the conformance suite of store.LiveExchange. newLive must
// return a fresh, empty LiveExchange each time it is called and register
// its cleanup with the t it is given; the suite calls it once per test,
// from parallel tests:
//
//	func TestLiveConformance(t *testing.T) {
//		storetest.RunLive(t, func(t *testing.T) store.LiveExchange { return memory.NewLive() })
//	}
//
// Besides the interface's doc comments it pins down what they leave open,
// so that the Redis and in-memory implementations agree:
//   - times are kept to the millisecond (Binance's precision) and read back
//     in UTC;
//   - a depth snapshot with the same time as the stored one replaces it
//     (only an older one is ignored);
//   - the Kind of a depth snapshot read back is the kind it was stored
//     under; writing a snapshot of the other kind is ErrInvalid;
//   - an unknown coin or kind is ErrInvalid, on reads and writes;
//   - trade ids lie in [0, 2^53] (exact as a Redis score); a batch with
//     another is ErrInvalid and stores nothing; of one id twice in a batch
//     the first is kept;
//   - RecentTrades with limit 0 returns every trade kept, a negative limit
//     is ErrInvalid, and "no trades" is an empty, non-nil slice;
//   - numbers come back exactly as written (no rounding: the api rounds at
//     its edge), and IsBestMatch keeps nil, true and false apart.
func RunLive(t *testing.T, newLive func(t *testing.T) store.LiveExchange) {
	groups := []struct {
		name  string
		tests []liveTest
	}{
		{"Depth", liveDepthTests()},
		{"Trades", liveTradeTests()},
		{"Live", []liveTest{{"CancelledContext", testLiveCancelledContext}}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, newLive(t))
				})
			}
		})
	}
}

// liveTest is one conformance test of a LiveExchange. It gets a fresh,
// empty one of its own.
type liveTest struct {
	name string
	run  func(t *testing.T, l store.LiveExchange)
}

func liveDepthTests() []liveTest {
	return []liveTest{
		{"NotRecorded", testLiveDepthNotRecorded},
		{"RoundTrip", testLiveDepthRoundTrip},
		{"OlderNeverReplacesNewer", testLiveDepthOrder},
		{"SeriesAreIndependent", testLiveDepthSeries},
		{"Invalid", testLiveDepthInvalid},
		{"ConcurrentWriters", testLiveDepthConcurrent},
		{"CallersCannotMutateStoredData", testLiveDepthCopies},
	}
}

func liveTradeTests() []liveTest {
	return []liveTest{
		{"NotRecorded", testLiveTradesNotRecorded},
		{"RoundTrip", testLiveTradesRoundTrip},
		{"NewestFirstAndLimit", testLiveTradesOrder},
		{"IdempotentOnID", testLiveTradesIdempotent},
		{"TrimmedToMaxRecentTrades", testLiveTradesTrimmed},
		{"SeriesAreIndependent", testLiveTradesSeries},
		{"Invalid", testLiveTradesInvalid},
		{"ConcurrentWriters", testLiveTradesConcurrent},
		{"CallersCannotMutateStoredData", testLiveTradesCopies},
	}
}

// series is every coin and kind a LiveExchange keeps.
type series struct {
	coin store.Coin
	kind store.ExchangeKind
}

func allSeries() []series {
	var out []series
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			out = append(out, series{c, k})
		}
	}
	return out
}

func (s series) String() string { return fmt.Sprintf("%s %s", s.coin, s.kind) }

// liveAt is the i-th instant of the live tests: a second apart, to the
// millisecond, written in another zone than UTC.
func liveAt(i int) time.Time {
	return t0().Add(time.Duration(i)*time.Second + 457*time.Millisecond).In(elsewhere())
}

// liveDepth is the i-th latest depth of s: every number differs by series
// and by i, and none is a round decimal.
func liveDepth(s series, i int) store.DepthSnapshot {
	base := map[store.Coin]float64{store.BTC: 95_123.456789, store.ETH: 3_412.987654, store.SOL: 181.123456}[s.coin]
	if s.kind == store.Future {
		base += 7.7
	}
	base += float64(i) * 0.37
	d := store.DepthSnapshot{
		Symbol:       string(s.coin) + "USDT",
		Time:         liveAt(i),
		CoinPrice:    base + 0.005,
		LastUpdateID: 73_829_374_829 + int64(i)*17,
	}
	for l := range 20 {
		d.Bids = append(d.Bids, store.DepthLevel{Price: base - float64(l)*0.01, Quantity: 0.123456789 * float64(l+1+i)})
		d.Asks = append(d.Asks, store.DepthLevel{Price: base + float64(l+1)*0.01, Quantity: 1.000001 * float64(l+2+i)})
	}
	return d
}

// wantLiveDepth is d as a LiveExchange returns it from series s.
func wantLiveDepth(s series, d store.DepthSnapshot) store.DepthSnapshot {
	d.Kind = s.kind
	d.Time = time.UnixMilli(d.Time.UnixMilli()).UTC()
	return d
}

func checkLiveDepth(t *testing.T, l store.LiveExchange, s series, want store.DepthSnapshot) {
	t.Helper()
	got, err := l.LatestDepth(t.Context(), s.coin, s.kind)
	mustOK(t, err, "LatestDepth "+s.String())
	var d diff
	eq(&d, "Symbol", want.Symbol, got.Symbol)
	eq(&d, "Kind", want.Kind, got.Kind)
	if !got.Time.Equal(want.Time) || got.Time.Location() != time.UTC {
		d.add("Time", want.Time, got.Time)
	}
	eq(&d, "CoinPrice", want.CoinPrice, got.CoinPrice)
	eqSlice(&d, "Bids", want.Bids, got.Bids)
	eqSlice(&d, "Asks", want.Asks, got.Asks)
	eq(&d, "LastUpdateID", want.LastUpdateID, got.LastUpdateID)
	d.check(t, "LatestDepth "+s.String())
}

func setDepth(t *testing.T, l store.LiveExchange, s series, d store.DepthSnapshot) {
	t.Helper()
	mustOK(t, l.SetLatestDepth(t.Context(), s.coin, s.kind, d), "SetLatestDepth "+s.String())
}

func testLiveDepthNotRecorded(t *testing.T, l store.LiveExchange) {
	for _, s := range allSeries() {
		_, err := l.LatestDepth(t.Context(), s.coin, s.kind)
		wantErr(t, err, store.ErrNotFound, "LatestDepth of an empty "+s.String())
	}
}

func testLiveDepthRoundTrip(t *testing.T, l store.LiveExchange) {
	// Every series at once, each with its own numbers.
	for i, s := range allSeries() {
		d := liveDepth(s, i)
		if i%2 == 0 {
			d.Kind = s.kind // the kind may also be given in the snapshot
		}
		setDepth(t, l, s, d)
	}
	for i, s := range allSeries() {
		checkLiveDepth(t, l, s, wantLiveDepth(s, liveDepth(s, i)))
	}

	// Sub-millisecond digits are dropped; a side may be empty; ids and books
	// may be large.
	s := series{store.BTC, store.Spot}
	odd := liveDepth(s, 100)
	odd.Time = odd.Time.Add(999 * time.Microsecond)
	odd.Bids = nil
	odd.LastUpdateID = 1<<62 + 12345
	setDepth(t, l, s, odd)
	want := wantLiveDepth(s, odd)
	want.Time = liveAt(100).UTC()
	checkLiveDepth(t, l, s, want)

	deep := liveDepth(s, 101)
	for range 5 {
		deep.Bids = append(deep.Bids, deep.Bids...)
	}
	deep.Asks = []store.DepthLevel{}
	setDepth(t, l, s, deep)
	checkLiveDepth(t, l, s, wantLiveDepth(s, deep))
}

func testLiveDepthOrder(t *testing.T, l store.LiveExchange) {
	s := series{store.ETH, store.Future}
	setDepth(t, l, s, liveDepth(s, 5))
	setDepth(t, l, s, liveDepth(s, 3))
	checkLiveDepth(t, l, s, wantLiveDepth(s, liveDepth(s, 5)))

	// A millisecond older is older.
	late := liveDepth(s, 9)
	late.Time = liveAt(5).Add(-time.Millisecond)
	setDepth(t, l, s, late)
	checkLiveDepth(t, l, s, wantLiveDepth(s, liveDepth(s, 5)))

	setDepth(t, l, s, liveDepth(s, 7))
	checkLiveDepth(t, l, s, wantLiveDepth(s, liveDepth(s, 7)))

	// The same instant again replaces: it is not older.
	same := liveDepth(s, 8)
	same.Time = liveAt(7)
	setDepth(t, l, s, same)
	checkLiveDepth(t, l, s, wantLiveDepth(s, same))
}

func testLiveDepthSeries(t *testing.T, l store.LiveExchange) {
	btcSpot, btcFut := series{store.BTC, store.Spot}, series{store.BTC, store.Future}
	setDepth(t, l, btcSpot, liveDepth(btcSpot, 10))
	// An older snapshot of another series is that series' latest.
	setDepth(t, l, btcFut, liveDepth(btcFut, 2))
	checkLiveDepth(t, l, btcSpot, wantLiveDepth(btcSpot, liveDepth(btcSpot, 10)))
	checkLiveDepth(t, l, btcFut, wantLiveDepth(btcFut, liveDepth(btcFut, 2)))
	for _, s := range allSeries()[2:] {
		_, err := l.LatestDepth(t.Context(), s.coin, s.kind)
		wantErr(t, err, store.ErrNotFound, "LatestDepth of "+s.String())
	}
}

func testLiveDepthInvalid(t *testing.T, l store.LiveExchange) {
	ctx := t.Context()
	s := series{store.SOL, store.Spot}
	d := liveDepth(s, 1)
	wantErr(t, l.SetLatestDepth(ctx, "DOGE", store.Spot, d), store.ErrInvalid, "SetLatestDepth of coin DOGE")
	wantErr(t, l.SetLatestDepth(ctx, "btc", store.Spot, d), store.ErrInvalid, "SetLatestDepth of coin btc (coins are upper case)")
	wantErr(t, l.SetLatestDepth(ctx, store.SOL, "swap", d), store.ErrInvalid, "SetLatestDepth of kind swap")
	d.Kind = store.Future
	wantErr(t, l.SetLatestDepth(ctx, store.SOL, store.Spot, d), store.ErrInvalid, "SetLatestDepth of a futures snapshot as spot")
	_, err := l.LatestDepth(ctx, "DOGE", store.Spot)
	wantErr(t, err, store.ErrInvalid, "LatestDepth of coin DOGE")
	_, err = l.LatestDepth(ctx, store.SOL, "")
	wantErr(t, err, store.ErrInvalid, "LatestDepth of kind \"\"")
	_, err = l.LatestDepth(ctx, store.SOL, store.Spot)
	wantErr(t, err, store.ErrNotFound, "LatestDepth after invalid writes")
}

// testLiveDepthConcurrent races writers of snapshots in shuffled order: the
// check-and-set must be atomic, so the newest wins whatever the schedule.
func testLiveDepthConcurrent(t *testing.T, l store.LiveExchange) {
	s := series{store.BTC, store.Future}
	const writers, each = 8, 25
	order := rand.New(rand.NewPCG(1, 2)).Perm(writers * each)
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for _, i := range order[w*each : (w+1)*each] {
				if err := l.SetLatestDepth(t.Context(), s.coin, s.kind, liveDepth(s, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent SetLatestDepth: %v", err)
	}
	checkLiveDepth(t, l, s, wantLiveDepth(s, liveDepth(s, writers*each-1)))
}

func testLiveDepthCopies(t *testing.T, l store.LiveExchange) {
	s := series{store.ETH, store.Spot}
	written := liveDepth(s, 1)
	setDepth(t, l, s, written)
	written.Bids[0].Price = 1
	written.Asks = written.Asks[:2]
	pristine := wantLiveDepth(s, liveDepth(s, 1))
	checkLiveDepth(t, l, s, pristine)

	got, err := l.LatestDepth(t.Context(), s.coin, s.kind)
	mustOK(t, err, "LatestDepth")
	asks := slices.Clone(got.Asks)
	got.Bids = append(got.Bids, store.DepthLevel{Price: 1, Quantity: 1})
	if !slices.Equal(got.Asks, asks) {
		t.Error("appending to the bids of a depth snapshot read back overwrote its asks")
	}
	got.Asks[0].Quantity = 99
	checkLiveDepth(t, l, s, pristine)
}

// liveTrade is the trade with id: its time follows the id, and spot trades
// alternate IsBestMatch between true, false and unknown.
func liveTrade(s series, id int64) store.Trade {
	t := store.Trade{
		ID:           id,
		Price:        95_123.456789 + float64(id%1000)*0.1,
		Qty:          0.123456789 * float64(id%7+1),
		Time:         liveAt(0).Add(time.Duration(id%1_000_000) * time.Millisecond),
		IsBuyerMaker: id%2 == 0,
	}
	t.QuoteQty = t.Price * t.Qty
	if s.kind == store.Spot {
		switch id % 3 {
		case 0:
			t.IsBestMatch = ptr(true)
		case 1:
			t.IsBestMatch = ptr(false)
		}
	}
	return t
}

func liveTrades(s series, ids ...int64) []store.Trade {
	out := make([]store.Trade, len(ids))
	for i, id := range ids {
		out[i] = liveTrade(s, id)
	}
	return out
}

// idRange returns the ids from..to inclusive, ascending.
func idRange(from, to int64) []int64 {
	var out []int64
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}

func addTrades(t *testing.T, l store.LiveExchange, s series, trades []store.Trade) {
	t.Helper()
	mustOK(t, l.AddTrades(t.Context(), s.coin, s.kind, trades), "AddTrades "+s.String())
}

// checkTrades fails the test unless RecentTrades(limit) returns want.
func checkTrades(t *testing.T, l store.LiveExchange, s series, limit int, want []store.Trade) {
	t.Helper()
	got, err := l.RecentTrades(t.Context(), s.coin, s.kind, limit)
	mustOK(t, err, "RecentTrades")
	op := fmt.Sprintf("RecentTrades(%s, %d)", s, limit)
	if got == nil {
		t.Errorf("%s returned nil, want a non-nil slice", op)
	}
	if len(got) != len(want) {
		t.Errorf("%s: got %d trades (ids %v), want %d (ids %v)", op, len(got), tradeIDs(got), len(want), tradeIDs(want))
		return
	}
	for i := range want {
		w := want[i]
		w.Time = time.UnixMilli(w.Time.UnixMilli()).UTC()
		g := got[i]
		var d diff
		eq(&d, "ID", w.ID, g.ID)
		eq(&d, "Price", w.Price, g.Price)
		eq(&d, "Qty", w.Qty, g.Qty)
		eq(&d, "QuoteQty", w.QuoteQty, g.QuoteQty)
		if !g.Time.Equal(w.Time) || g.Time.Location() != time.UTC {
			d.add("Time", w.Time, g.Time)
		}
		eq(&d, "IsBuyerMaker", w.IsBuyerMaker, g.IsBuyerMaker)
		eqPtr(&d, "IsBestMatch", w.IsBestMatch, g.IsBestMatch)
		d.check(t, fmt.Sprintf("%s: trade %d", op, i))
	}
}

func tradeIDs(trades []store.Trade) []int64 {
	out := make([]int64, len(trades))
	for i, t := range trades {
		out[i] = t.ID
	}
	return out
}

// newestFirst returns trades sorted by id, descending, in a new slice.
func newestFirst(trades []store.Trade) []store.Trade {
	out := slices.Clone(trades)
	slices.SortFunc(out, func(a, b store.Trade) int { return cmp.Compare(b.ID, a.ID) })
	return out
}

func testLiveTradesNotRecorded(t *testing.T, l store.LiveExchange) {
	for _, s := range allSeries() {
		for _, limit := range []int{0, 1, 100, store.MaxRecentTrades, store.MaxRecentTrades + 1} {
			checkTrades(t, l, s, limit, nil)
		}
	}
	mustOK(t, l.AddTrades(t.Context(), store.BTC, store.Spot, nil), "AddTrades of nothing")
	checkTrades(t, l, series{store.BTC, store.Spot}, 0, nil)
}

func testLiveTradesRoundTrip(t *testing.T, l store.LiveExchange) {
	for _, s := range []series{{store.BTC, store.Spot}, {store.SOL, store.Future}} {
		trades := liveTrades(s, 4_123_456_789, 4_123_456_790, 4_123_456_791)
		trades[1].Time = trades[1].Time.Add(999 * time.Microsecond) // kept to the millisecond
		trades[2].Price, trades[2].Qty, trades[2].QuoteQty = 0.01, 1e-8, 1e-10
		addTrades(t, l, s, trades)
		checkTrades(t, l, s, 0, newestFirst(trades))
	}
	// The largest id a score keeps exactly.
	s := series{store.ETH, store.Spot}
	top := liveTrade(s, 1<<53)
	addTrades(t, l, s, []store.Trade{top, liveTrade(s, 0)})
	checkTrades(t, l, s, 0, []store.Trade{top, liveTrade(s, 0)})
}

func testLiveTradesOrder(t *testing.T, l store.LiveExchange) {
	s := series{store.BTC, store.Future}
	ids := idRange(1001, 1300)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	addTrades(t, l, s, liveTrades(s, ids[:100]...))
	addTrades(t, l, s, liveTrades(s, ids[100:150]...))
	addTrades(t, l, s, liveTrades(s, ids[150:]...))
	all := newestFirst(liveTrades(s, idRange(1001, 1300)...))
	checkTrades(t, l, s, 0, all)
	checkTrades(t, l, s, 1, all[:1])
	checkTrades(t, l, s, 5, all[:5])
	checkTrades(t, l, s, 300, all)
	checkTrades(t, l, s, 1000, all)
}

func testLiveTradesIdempotent(t *testing.T, l store.LiveExchange) {
	s := series{store.ETH, store.Spot}
	first := liveTrades(s, idRange(10, 19)...)
	addTrades(t, l, s, first)
	again := liveTrades(s, idRange(15, 24)...)
	for i := range again {
		again[i].Price += 1000 // a redelivery never rewrites a kept trade
		again[i].IsBuyerMaker = !again[i].IsBuyerMaker
	}
	addTrades(t, l, s, again)
	want := append(slices.Clone(first), again[5:]...)
	checkTrades(t, l, s, 0, newestFirst(want))
	addTrades(t, l, s, first)
	addTrades(t, l, s, again)
	checkTrades(t, l, s, 0, newestFirst(want))

	// One id twice in a batch: the first is kept.
	dup := liveTrade(s, 30)
	other := dup
	other.Price = 1
	addTrades(t, l, s, []store.Trade{dup, other})
	checkTrades(t, l, s, 1, []store.Trade{dup})
}

func testLiveTradesTrimmed(t *testing.T, l store.LiveExchange) {
	keep := int64(store.MaxRecentTrades)
	s := series{store.SOL, store.Spot}
	addTrades(t, l, s, liveTrades(s, idRange(1, keep)...))
	addTrades(t, l, s, liveTrades(s, idRange(keep+1, keep+500)...))
	checkTrades(t, l, s, 0, newestFirst(liveTrades(s, idRange(501, keep+500)...)))

	// A trade older than every one kept is not kept once the set is full.
	addTrades(t, l, s, liveTrades(s, 7))
	checkTrades(t, l, s, 0, newestFirst(liveTrades(s, idRange(501, keep+500)...)))

	// One batch larger than the whole set, out of order: its newest are kept.
	f := series{store.SOL, store.Future}
	ids := idRange(1, 2*keep+500)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	addTrades(t, l, f, liveTrades(f, ids...))
	checkTrades(t, l, f, 0, newestFirst(liveTrades(f, idRange(keep+501, 2*keep+500)...)))
	checkTrades(t, l, f, int(keep)+1, newestFirst(liveTrades(f, idRange(keep+501, 2*keep+500)...)))
}

func testLiveTradesSeries(t *testing.T, l store.LiveExchange) {
	for i, s := range allSeries() {
		addTrades(t, l, s, liveTrades(s, idRange(int64(i*10), int64(i*10+4))...))
	}
	for i, s := range allSeries() {
		checkTrades(t, l, s, 0, newestFirst(liveTrades(s, idRange(int64(i*10), int64(i*10+4))...)))
	}
}

func testLiveTradesInvalid(t *testing.T, l store.LiveExchange) {
	ctx := t.Context()
	s := series{store.BTC, store.Spot}
	ok := liveTrades(s, 1, 2)
	for _, bad := range []int64{-1, 1<<53 + 1, -1 << 62} {
		batch := append(slices.Clone(ok), liveTrade(s, bad))
		wantErr(t, l.AddTrades(ctx, s.coin, s.kind, batch), store.ErrInvalid, fmt.Sprintf("AddTrades with id %d", bad))
	}
	checkTrades(t, l, s, 0, nil)
	wantErr(t, l.AddTrades(ctx, "DOGE", store.Spot, ok), store.ErrInvalid, "AddTrades of coin DOGE")
	wantErr(t, l.AddTrades(ctx, store.BTC, "margin", ok), store.ErrInvalid, "AddTrades of kind margin")
	_, err := l.RecentTrades(ctx, "DOGE", store.Spot, 10)
	wantErr(t, err, store.ErrInvalid, "RecentTrades of coin DOGE")
	_, err = l.RecentTrades(ctx, store.BTC, "margin", 10)
	wantErr(t, err, store.ErrInvalid, "RecentTrades of kind margin")
	_, err = l.RecentTrades(ctx, store.BTC, store.Spot, -1)
	wantErr(t, err, store.ErrInvalid, "RecentTrades with limit -1")
}

// testLiveTradesConcurrent races writers of overlapping batches: the kept
// trades are their union, each id once.
func testLiveTradesConcurrent(t *testing.T, l store.LiveExchange) {
	s := series{store.ETH, store.Future}
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range 5 {
				from := int64(w*40 + b*20)
				if err := l.AddTrades(t.Context(), s.coin, s.kind, liveTrades(s, idRange(from, from+59)...)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent AddTrades: %v", err)
	}
	last := int64((writers-1)*40 + 4*20 + 59)
	checkTrades(t, l, s, 0, newestFirst(liveTrades(s, idRange(0, last)...)))
}

func testLiveTradesCopies(t *testing.T, l store.LiveExchange) {
	s := series{store.BTC, store.Spot}
	written := liveTrades(s, 3, 4, 5) // 3 has IsBestMatch true, 4 false
	addTrades(t, l, s, written)
	*written[0].IsBestMatch = false
	written[1].Price = 1
	pristine := newestFirst(liveTrades(s, 3, 4, 5))
	checkTrades(t, l, s, 0, pristine)

	got, err := l.RecentTrades(t.Context(), s.coin, s.kind, 0)
	mustOK(t, err, "RecentTrades")
	for _, g := range got {
		if g.IsBestMatch != nil {
			*g.IsBestMatch = !*g.IsBestMatch
		}
	}
	checkTrades(t, l, s, 0, pristine)
}

// testLiveCancelledContext calls every method with a cancelled context:
// each fails with an error matching context.Canceled, and writes store
// nothing.
func testLiveCancelledContext(t *testing.T, l store.LiveExchange) {
	s := series{store.BTC, store.Spot}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"SetLatestDepth", func() error { return l.SetLatestDepth(ctx, s.coin, s.kind, liveDepth(s, 1)) }},
		{"LatestDepth", func() error { _, err := l.LatestDepth(ctx, s.coin, s.kind); return err }},
		{"AddTrades", func() error { return l.AddTrades(ctx, s.coin, s.kind, liveTrades(s, 1, 2)) }},
		{"AddTrades of nothing", func() error { return l.AddTrades(ctx, s.coin, s.kind, nil) }},
		{"RecentTrades", func() error { _, err := l.RecentTrades(ctx, s.coin, s.kind, 10); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want one matching context.Canceled", c.name, err)
		}
	}
	_, err := l.LatestDepth(t.Context(), s.coin, s.kind)
	wantErr(t, err, store.ErrNotFound, "LatestDepth after a cancelled SetLatestDepth")
	checkTrades(t, l, s, 0, nil)
}
