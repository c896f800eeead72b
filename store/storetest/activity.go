package storetest

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func tradeTests() []test {
	return []test{
		{"RoundTrip", testTradesRoundTrip},
		{"Repeated", testTradesRepeated},
		{"SameInstant", testTradesSameInstant},
		{"Paging", testTradesPaging},
		{"OlderAfterNewer", testTradesOlderAfterNewer},
		{"Empty", testTradesEmpty},
		{"NotFound", testActivityNotFound},
		{"Invalid", testTradesInvalid},
		{"PerMarket", testActivityPerMarket},
		{"ConcurrentAppends", testTradesConcurrent},
	}
}

func gapTests() []test {
	return []test{
		{"Merge", testGapsMerge},
		{"Invalid", testGapsInvalid},
		{"Microseconds", testGapsMicroseconds},
		{"ConcurrentRecords", testGapsConcurrent},
		{"Kinds", testGapKinds},
		{"Remove", testGapsRemove},
		{"EndingAfter", testGapsEndingAfter},
	}
}

// tradeAt returns the i-th trade of the suite's series: i·1.5 s after t0
// (a millisecond timestamp, as the upstream sends), in another zone, with
// every field set and varying.
func tradeAt(i int) store.MarketTrade {
	outcome, side := store.OutcomeUp, store.SideBuy
	if i%2 == 1 {
		outcome = store.OutcomeDown
	}
	if i%3 == 0 {
		side = store.SideSell
	}
	return store.MarketTrade{
		Time:       t0().Add(time.Duration(i) * 1500 * time.Millisecond).In(elsewhere()),
		Outcome:    outcome,
		Price:      micros(int64(10000 + i*10000%980000)),
		Size:       micros(int64(5_000000 + i*1_250000)),
		Side:       side,
		FeeRateBps: micros(int64(i%2) * 1000_000000),
		TxHash:     fmt.Sprintf("0x%064x", i),
	}
}

// tradesFrom returns trades first..last (inclusive), oldest first.
func tradesFrom(first, last int) []store.MarketTrade {
	var out []store.MarketTrade
	for i := first; i <= last; i++ {
		out = append(out, tradeAt(i))
	}
	return out
}

func tradeTime(t store.MarketTrade) time.Time { return t.Time }

func tradeDiff(want, got store.MarketTrade) diff {
	var d diff
	eqTime(&d, "Time", want.Time, got.Time)
	eq(&d, "Outcome", want.Outcome, got.Outcome)
	eq(&d, "Price", want.Price, got.Price)
	eq(&d, "Size", want.Size, got.Size)
	eq(&d, "Side", want.Side, got.Side)
	eq(&d, "FeeRateBps", want.FeeRateBps, got.FeeRateBps)
	eq(&d, "TxHash", want.TxHash, got.TxHash)
	return d
}

func appendTrades(t *testing.T, s store.Store, slug string, trades []store.MarketTrade) {
	t.Helper()
	mustOK(t, errOf(s.AppendMarketTrades(t.Context(), slug, trades)), "AppendMarketTrades")
}

// checkMarketTrades lists the market's trades per q and fails the test unless
// they are want and the total is total.
func checkMarketTrades(t *testing.T, s store.Store, slug string, q store.MarketTradeQuery, want []store.MarketTrade, total int) {
	t.Helper()
	got, gotTotal, err := s.ListMarketTrades(t.Context(), slug, q)
	mustOK(t, err, "ListMarketTrades")
	op := fmt.Sprintf("ListMarketTrades %+v", q)
	if got == nil {
		t.Errorf("%s = nil, want an empty slice at least", op)
	}
	checkEach(t, op, "trade", want, got, tradeTime, tradeDiff)
	if gotTotal != total {
		t.Errorf("%s total = %d, want %d", op, gotTotal, total)
	}
}

// shuffled returns xs in a fixed, scrambled order.
func shuffled[T any](xs []T) []T {
	out := slices.Clone(xs)
	for i := range out {
		j := (i*7 + 3) % len(out)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func testTradesRoundTrip(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	trades := tradesFrom(0, 9)
	// Sub-millisecond digits and nanoseconds on one: kept to the microsecond.
	trades[4].Time = trades[4].Time.Add(123456789 * time.Nanosecond % time.Millisecond)
	appendTrades(t, s, slug, shuffled(trades))

	checkMarketTrades(t, s, slug, store.MarketTradeQuery{}, reversed(trades), 10)
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, trades, 10)
}

// testTradesRepeated writes trades twice, and in a call with a trade twice:
// each is kept once; a trade that differs only below the microsecond is the
// same trade.
func testTradesRepeated(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	appendTrades(t, s, slug, tradesFrom(0, 4))
	again := append(tradesFrom(2, 6), tradeAt(6), tradeAt(0))
	sub := tradeAt(3)
	sub.Time = sub.Time.Add(400 * time.Nanosecond)
	again = append(again, sub)
	appendTrades(t, s, slug, again)
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 6), 7)
}

// testTradesSameInstant stores trades at one instant that differ in one
// field each: all are kept, in MarketTradeQuery's order.
func testTradesSameInstant(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	base := tradeAt(2)
	base.Outcome, base.Side = store.OutcomeDown, store.SideBuy
	variants := []func(*store.MarketTrade){
		func(*store.MarketTrade) {},
		func(x *store.MarketTrade) { x.Outcome = store.OutcomeUp },
		func(x *store.MarketTrade) { x.Side = store.SideSell },
		func(x *store.MarketTrade) { x.Price += 0.01 },
		func(x *store.MarketTrade) { x.Size += 1 },
		func(x *store.MarketTrade) { x.FeeRateBps += 1 },
		func(x *store.MarketTrade) { x.TxHash = "" },
		func(x *store.MarketTrade) { x.TxHash = "0xA" }, // bytewise after "0x0…"
	}
	var all []store.MarketTrade
	for _, v := range variants {
		x := base
		v(&x)
		all = append(all, x)
	}
	appendTrades(t, s, slug, all)
	want := slices.Clone(all)
	slices.SortFunc(want, store.CompareMarketTrades)
	// The order spelled out, so that CompareMarketTrades itself is pinned.
	// Down BUY by price, size, fee, then hash ("" < "0x0…" < "0xA"); then
	// Down SELL; then Up.
	wantOrder := []int{6, 0, 7, 5, 4, 3, 2, 1}
	for i, k := range wantOrder {
		if store.CompareMarketTrades(want[i], all[k]) != 0 {
			t.Fatalf("CompareMarketTrades order: position %d holds %+v, want variant %d (%+v)", i, want[i], k, all[k])
		}
	}
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, want, len(all))
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{}, reversed(want), len(all))
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Limit: 3, Offset: 2}, reversed(want)[2:5], len(all))
}

func testTradesPaging(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	trades := tradesFrom(0, 24)
	appendTrades(t, s, slug, trades)
	newest := reversed(trades)
	cases := []struct {
		q    store.MarketTradeQuery
		want []store.MarketTrade
	}{
		{store.MarketTradeQuery{Limit: 10}, newest[:10]},
		{store.MarketTradeQuery{Limit: 10, Offset: 10}, newest[10:20]},
		{store.MarketTradeQuery{Limit: 10, Offset: 20}, newest[20:]},
		{store.MarketTradeQuery{Limit: 10, Offset: 25}, nil},
		{store.MarketTradeQuery{Limit: 10, Offset: 1000}, nil},
		{store.MarketTradeQuery{Offset: 22}, newest[22:]},
		{store.MarketTradeQuery{Limit: 3, Ascending: true}, trades[:3]},
		{store.MarketTradeQuery{Limit: 3, Offset: 23, Ascending: true}, trades[23:]},
	}
	for _, tc := range cases {
		checkMarketTrades(t, s, slug, tc.q, tc.want, 25)
	}
	for _, q := range []store.MarketTradeQuery{{Limit: -1}, {Offset: -1}} {
		_, _, err := s.ListMarketTrades(t.Context(), slug, q)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ListMarketTrades %+v", q))
	}
}

// testTradesOlderAfterNewer writes trades that interleave with stored ones.
func testTradesOlderAfterNewer(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	var even, odd []store.MarketTrade
	for i := range 12 {
		if i%2 == 0 {
			even = append(even, tradeAt(i))
		} else {
			odd = append(odd, tradeAt(i))
		}
	}
	appendTrades(t, s, slug, tradesFrom(20, 22))
	appendTrades(t, s, slug, even)
	appendTrades(t, s, slug, odd)
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, append(tradesFrom(0, 11), tradesFrom(20, 22)...), 15)
}

func testTradesEmpty(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{}, nil, 0)
	appendTrades(t, s, slug, nil)
	appendTrades(t, s, slug, []store.MarketTrade{})
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Limit: 5}, nil, 0)
	gaps, err := s.ListGaps(t.Context(), slug)
	mustOK(t, err, "ListGaps")
	if len(gaps) != 0 {
		t.Errorf("ListGaps of a new market = %v, want none", gaps)
	}
	mustOK(t, errOf(s.RecordGaps(t.Context(), slug, nil)), "RecordGaps of no gaps")
}

// testActivityNotFound: every method on an unknown slug is ErrNotFound,
// also with nothing to write.
func testActivityNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	seedSnapshotMarket(t, s, 0)
	for _, slug := range []string{"btc-updown-5m-0", "", "bad\x00slug", "\xff"} {
		wantErr(t, errOf(s.AppendMarketTrades(ctx, slug, tradesFrom(0, 1))), store.ErrNotFound, "AppendMarketTrades of "+slug)
		wantErr(t, errOf(s.AppendMarketTrades(ctx, slug, nil)), store.ErrNotFound, "AppendMarketTrades of nothing to "+slug)
		_, _, err := s.ListMarketTrades(ctx, slug, store.MarketTradeQuery{})
		wantErr(t, err, store.ErrNotFound, "ListMarketTrades of "+slug)
		wantErr(t, errOf(s.RecordGaps(ctx, slug, []store.Gap{{From: at(0), To: at(1)}})), store.ErrNotFound, "RecordGaps of "+slug)
		wantErr(t, errOf(s.RecordGaps(ctx, slug, nil)), store.ErrNotFound, "RecordGaps of nothing to "+slug)
		wantErr(t, s.RemoveGaps(ctx, slug, []store.Gap{{From: at(0), To: at(1)}}), store.ErrNotFound, "RemoveGaps of "+slug)
		wantErr(t, s.RemoveGaps(ctx, slug, nil), store.ErrNotFound, "RemoveGaps of nothing from "+slug)
		_, err = s.ListGaps(ctx, slug)
		wantErr(t, err, store.ErrNotFound, "ListGaps of "+slug)
		// The snapshots' methods too, with a range and without.
		_, err = s.AppendSnapshots(ctx, slug, newSnapshots(at(0), 0, 1))
		wantErr(t, err, store.ErrNotFound, "AppendSnapshots of "+slug)
		_, err = s.AppendSnapshots(ctx, slug, nil)
		wantErr(t, err, store.ErrNotFound, "AppendSnapshots of nothing to "+slug)
		for _, q := range []store.SnapshotQuery{{}, {WithBooks: true}, {From: ptr(at(0))}} {
			_, _, err = s.ListSnapshots(ctx, slug, q)
			wantErr(t, err, store.ErrNotFound, fmt.Sprintf("ListSnapshots %+v of %q", q, slug))
			_, err = s.CountSnapshots(ctx, slug, q)
			wantErr(t, err, store.ErrNotFound, fmt.Sprintf("CountSnapshots %+v of %q", q, slug))
		}
		_, err = s.ReadTape(ctx, slug, store.OutcomeUp)
		wantErr(t, err, store.ErrNotFound, "ReadTape of "+slug)
	}
}

// testTradesInvalid: a batch with one trade that cannot be stored is
// ErrInvalid and stores none of its trades.
func testTradesInvalid(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	appendTrades(t, s, slug, tradesFrom(0, 1))
	bad := []struct {
		name string
		mod  func(*store.MarketTrade)
	}{
		{"no time", func(x *store.MarketTrade) { x.Time = time.Time{} }},
		{"outcome", func(x *store.MarketTrade) { x.Outcome = "up" }},
		{"no outcome", func(x *store.MarketTrade) { x.Outcome = "" }},
		{"50-50 outcome", func(x *store.MarketTrade) { x.Outcome = store.OutcomeFiftyFifty }},
		{"side", func(x *store.MarketTrade) { x.Side = "buy" }},
		{"NaN price", func(x *store.MarketTrade) { x.Price = math.NaN() }},
		{"infinite size", func(x *store.MarketTrade) { x.Size = math.Inf(1) }},
		{"NaN fee", func(x *store.MarketTrade) { x.FeeRateBps = math.NaN() }},
	}
	for _, tc := range bad {
		x := tradeAt(5)
		tc.mod(&x)
		_, err := s.AppendMarketTrades(t.Context(), slug, []store.MarketTrade{tradeAt(3), x, tradeAt(4)})
		wantErr(t, err, store.ErrInvalid, "AppendMarketTrades with a trade with bad "+tc.name)
	}
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 1), 2)
}

// testActivityPerMarket: trades and gaps belong to their market.
func testActivityPerMarket(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, b := seedSnapshotMarket(t, s, 0), seedSnapshotMarket(t, s, 5)
	appendTrades(t, s, a, tradesFrom(0, 3))
	appendTrades(t, s, b, tradesFrom(2, 8))
	mustOK(t, errOf(s.RecordGaps(ctx, a, []store.Gap{{From: at(0), To: at(1)}})), "RecordGaps")
	mustOK(t, errOf(s.RecordGaps(ctx, b, []store.Gap{{From: at(1), To: at(2)}, {From: at(3), To: at(4)}})), "RecordGaps")
	checkMarketTrades(t, s, a, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 3), 4)
	checkMarketTrades(t, s, b, store.MarketTradeQuery{Ascending: true}, tradesFrom(2, 8), 7)
	checkGaps(t, s, a, []store.Gap{{From: at(0), To: at(1)}})
	checkGaps(t, s, b, []store.Gap{{From: at(1), To: at(2)}, {From: at(3), To: at(4)}})

	// A market updated (resolved) keeps its trades and gaps.
	m := get(t, s, a)
	resolve(&m, store.OutcomeUp)
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{m}), "UpsertMarkets")
	checkMarketTrades(t, s, a, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 3), 4)
	checkGaps(t, s, a, []store.Gap{{From: at(0), To: at(1)}})
}

// testTradesConcurrent appends overlapping batches to one market from
// several writers at once: every trade is stored once.
func testTradesConcurrent(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 40; i += 10 {
				if _, err := s.AppendMarketTrades(t.Context(), slug, shuffled(tradesFrom(i+w*5, i+w*5+14))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("AppendMarketTrades: %v", err)
	}
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 59), 60)
}

func checkGaps(t *testing.T, s store.Store, slug string, want []store.Gap) {
	t.Helper()
	got, err := s.ListGaps(t.Context(), slug)
	mustOK(t, err, "ListGaps")
	checkEach(t, "ListGaps", "gap", want, got, func(g store.Gap) time.Time { return g.From }, func(w, g store.Gap) diff {
		var d diff
		eqTime(&d, "From", w.From, g.From)
		eqTime(&d, "To", w.To, g.To)
		eq(&d, "Kind", w.Kind, g.Kind)
		return d
	})
}

// sec is t0 plus some seconds, in another zone.
func sec(s int) time.Time { return t0().Add(time.Duration(s) * time.Second).In(elsewhere()) }

func gap(from, to int) store.Gap { return store.Gap{From: sec(from), To: sec(to)} }

// testGapsMerge records gaps step by step; each step lists the market's
// gaps as they must be after it.
func testGapsMerge(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	steps := []struct {
		name   string
		record []store.Gap
		want   []store.Gap
	}{
		{"first two, unsorted", []store.Gap{gap(50, 60), gap(10, 20)}, []store.Gap{gap(10, 20), gap(50, 60)}},
		{"the same again", []store.Gap{gap(10, 20)}, []store.Gap{gap(10, 20), gap(50, 60)}},
		{"inside one", []store.Gap{gap(12, 18)}, []store.Gap{gap(10, 20), gap(50, 60)}},
		{"touching the end of one", []store.Gap{gap(20, 25)}, []store.Gap{gap(10, 25), gap(50, 60)}},
		{"touching the start of one", []store.Gap{gap(45, 50)}, []store.Gap{gap(10, 25), gap(45, 60)}},
		{"apart", []store.Gap{gap(30, 34)}, []store.Gap{gap(10, 25), gap(30, 34), gap(45, 60)}},
		{"overlapping two", []store.Gap{gap(33, 46)}, []store.Gap{gap(10, 25), gap(30, 60)}},
		{"covering all", []store.Gap{gap(5, 70)}, []store.Gap{gap(5, 70)}},
		{"a batch that joins itself", []store.Gap{gap(80, 85), gap(90, 95), gap(84, 91)}, []store.Gap{gap(5, 70), gap(80, 95)}},
		{"just apart from one", []store.Gap{gap(96, 100)}, []store.Gap{gap(5, 70), gap(80, 95), gap(96, 100)}},
	}
	for _, st := range steps {
		mustOK(t, errOf(s.RecordGaps(t.Context(), slug, st.record)), "RecordGaps "+st.name)
		t.Run(st.name, func(t *testing.T) { checkGaps(t, s, slug, st.want) })
	}
}

// testGapsInvalid: a batch with a gap that does not end after it starts is
// ErrInvalid and stores none of its gaps.
func testGapsInvalid(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	mustOK(t, errOf(s.RecordGaps(t.Context(), slug, []store.Gap{gap(10, 20)})), "RecordGaps")
	for _, bad := range []store.Gap{gap(30, 30), gap(40, 35), {From: sec(50)}, {From: sec(50), To: sec(50).Add(999 * time.Nanosecond)}} {
		_, err := s.RecordGaps(t.Context(), slug, []store.Gap{gap(0, 15), bad, gap(60, 70)})
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("RecordGaps with %v", bad))
	}
	checkGaps(t, s, slug, []store.Gap{gap(10, 20)})
}

// testGapsMicroseconds: gap ends are kept to the microsecond, and gaps that
// touch after truncation are merged.
func testGapsMicroseconds(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	ns := func(s int, n time.Duration) time.Time { return sec(s).Add(n) }
	mustOK(t, errOf(s.RecordGaps(t.Context(), slug, []store.Gap{
		{From: ns(10, 1500), To: ns(20, 2_000_700)},
		{From: ns(20, 2_000_100), To: ns(25, 0)}, // touches the first once truncated
	})), "RecordGaps")
	checkGaps(t, s, slug, []store.Gap{{From: ns(10, 1000), To: ns(25, 0)}})
}

// testGapsConcurrent records overlapping gaps of one market from several
// writers at once: the result is their merge, whatever the interleaving.
func testGapsConcurrent(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				// Writer w records [100i+10w, 100i+10w+15): each overlaps
				// the next writer's, and rounds stay apart.
				from := 100*i + 10*w
				if _, err := s.RecordGaps(t.Context(), slug, []store.Gap{gap(from, from+15)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("RecordGaps: %v", err)
	}
	var want []store.Gap
	for i := range 5 {
		want = append(want, gap(100*i, 100*i+45))
	}
	checkGaps(t, s, slug, want)
}
