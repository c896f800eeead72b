package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func snapshotTests() []test {
	return []test{
		{"UnknownMarket", testSnapshotsUnknownMarket},
		{"MarketWithoutSnapshots", testSnapshotsNone},
		{"Order", testSnapshotsOrder},
		{"Paging", testSnapshotsPaging},
		{"Books", testSnapshotsBooks},
		{"RepeatedWrites", testSnapshotsRepeated},
		{"DuplicatesInOneBatch", testSnapshotsDuplicatesInBatch},
		{"SeparateMarkets", testSnapshotsSeparateMarkets},
		{"MarketSeries", testMarketSeries},
		{"CallersCannotMutateStoredData", testSnapshotsCopies},
		{"TimeRange", testSnapshotsTimeRange},
		{"Cursor", testSnapshotsCursor},
		{"CursorStableUnderInserts", testSnapshotsCursorStable},
		{"NotFinite", testSnapshotsNotFinite},
	}
}

// newSnapshot is the i-th snapshot of a series from start: 300 ms apart,
// with sub-microsecond digits the store drops, and two 10-level books.
func newSnapshot(start time.Time, i int) store.Snapshot {
	up := int64(100_000 + (i*7919)%800_000) // millionths
	return store.Snapshot{
		Time:      start.Add(time.Duration(i)*300*time.Millisecond + 789*time.Nanosecond).In(elsewhere()),
		CoinPrice: micros(97_000_000000 + int64(i)*250_000 + int64(i%7)),
		PriceUp:   micros(up),
		PriceDown: micros(1_000_000 - up),
		BookUp:    newBook(i, 10, 10),
		BookDown:  newBook(i+1000, 10, 10),
	}
}

// newSnapshots is snapshots first..last (inclusive) of a series from start.
func newSnapshots(start time.Time, first, last int) []store.Snapshot {
	var out []store.Snapshot
	for i := first; i <= last; i++ {
		out = append(out, newSnapshot(start, i))
	}
	return out
}

// newBook returns a book with the given depths, bids best (highest) first
// and asks best (lowest) first, prices to 0.001 and sizes to six decimals.
func newBook(seed, bids, asks int) *store.Book {
	mid := int64(400_000+(seed*3701)%200_000) / 1000 * 1000
	level := func(price int64, n int) store.Level {
		size := int64(seed+1) * int64(n+3) * 1_234_567 % 250_000_000000
		return store.Level{Price: micros(price), Size: micros(size)}
	}
	b := &store.Book{Bids: make([]store.Level, bids), Asks: make([]store.Level, asks)}
	for l := range b.Bids {
		b.Bids[l] = level(mid-int64(l+1)*1000, l)
	}
	for l := range b.Asks {
		b.Asks[l] = level(mid+int64(l+1)*1000, bids+l)
	}
	return b
}

// seedSnapshotMarket stores a market for snapshots and returns its slug.
func seedSnapshotMarket(t *testing.T, s store.Store, minutes int) string {
	t.Helper()
	m := newMarket(store.BTC, store.M5, at(minutes), "")
	mustOK(t, s.UpsertMarkets(t.Context(), []store.Market{m}), "UpsertMarkets")
	return m.Slug
}

func appendSnapshots(t *testing.T, s store.Store, slug string, snaps []store.Snapshot) {
	t.Helper()
	mustOK(t, errOf(s.AppendSnapshots(t.Context(), slug, snaps)), "AppendSnapshots")
}

func listSnapshots(t *testing.T, s store.Store, slug string, q store.SnapshotQuery) ([]store.Snapshot, int) {
	t.Helper()
	snaps, total, err := s.ListSnapshots(t.Context(), slug, q)
	mustOK(t, err, fmt.Sprintf("ListSnapshots(%+v)", q))
	return snaps, total
}

// checkSeries fails the test unless the market's snapshots are want (in
// time order), read both ways with books.
func checkSeries(t *testing.T, s store.Store, slug string, want []store.Snapshot) {
	t.Helper()
	got, total := listSnapshots(t, s, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	checkSnapshots(t, "ascending", want, got, true)
	if total != len(want) {
		t.Errorf("total = %d, want %d", total, len(want))
	}
	got, _ = listSnapshots(t, s, slug, store.SnapshotQuery{WithBooks: true})
	checkSnapshots(t, "newest first", reversed(want), got, true)
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func testSnapshotsUnknownMarket(t *testing.T, s store.Store) {
	ctx := t.Context()
	seedSnapshotMarket(t, s, 0)
	_, err := s.AppendSnapshots(ctx, "btc-updown-5m-0", newSnapshots(t0(), 0, 1))
	wantErr(t, err, store.ErrNotFound, "AppendSnapshots to an unknown market")
	_, _, err = s.ListSnapshots(ctx, "btc-updown-5m-0", store.SnapshotQuery{})
	wantErr(t, err, store.ErrNotFound, "ListSnapshots of an unknown market")
	_, _, err = s.ListSnapshots(ctx, "btc-updown-5m-0", store.SnapshotQuery{From: ptr(t0())})
	wantErr(t, err, store.ErrNotFound, "ListSnapshots of an unknown market in a time range")
	_, err = s.CountSnapshots(ctx, "btc-updown-5m-0", store.SnapshotQuery{})
	wantErr(t, err, store.ErrNotFound, "CountSnapshots of an unknown market")
	_, err = s.CountSnapshots(ctx, "btc-updown-5m-0", store.SnapshotQuery{To: ptr(t0())})
	wantErr(t, err, store.ErrNotFound, "CountSnapshots of an unknown market in a time range")
}

func testSnapshotsNone(t *testing.T, s store.Store) {
	busy := seedSnapshotMarket(t, s, 0)
	idle := seedSnapshotMarket(t, s, 5)
	appendSnapshots(t, s, busy, newSnapshots(at(5), 0, 4))
	for _, q := range []store.SnapshotQuery{
		{},
		{Limit: 10, WithBooks: true},
		{Ascending: true, Offset: 1},
	} {
		snaps, total := listSnapshots(t, s, idle, q)
		if len(snaps) != 0 || total != 0 {
			t.Errorf("ListSnapshots(%+v) of a market without snapshots = %d snapshots, total %d; want none, 0", q, len(snaps), total)
		}
	}
}

func testSnapshotsOrder(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	sorted := newSnapshots(t0(), 0, 19)
	shuffled := make([]store.Snapshot, len(sorted))
	for i := range sorted {
		shuffled[i] = sorted[i*7%len(sorted)]
	}
	appendSnapshots(t, s, slug, shuffled[:12])
	appendSnapshots(t, s, slug, shuffled[12:])

	checkSeries(t, s, slug, sorted)
	got, total := listSnapshots(t, s, slug, store.SnapshotQuery{})
	checkSnapshots(t, "default query (newest first, no books)", reversed(sorted), got, false)
	if total != len(sorted) {
		t.Errorf("total = %d, want %d", total, len(sorted))
	}
}

func testSnapshotsPaging(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	asc := newSnapshots(t0(), 0, 19)
	appendSnapshots(t, s, slug, asc)
	desc := reversed(asc)

	for _, q := range []store.SnapshotQuery{
		{Limit: 0, Offset: 0},
		{Limit: 5, Offset: 0},
		{Limit: 5, Offset: 5},
		{Limit: 5, Offset: 18},
		{Limit: 0, Offset: 7},
		{Limit: 1, Offset: 19},
		{Limit: 5, Offset: 20},
		{Limit: 5, Offset: 25},
		{Limit: 0, Offset: 20},
		{Limit: 100, Offset: 3},
		// Offsets far past any market (a client's paging bug, or a probe)
		// are pages past the end, in any order.
		{Limit: 1000, Offset: math.MaxInt64},
		{Limit: 1000, Offset: math.MaxInt64 - 500},
		{Limit: 0, Offset: math.MaxInt64},
	} {
		for _, ascending := range []bool{false, true} {
			q.Ascending, q.WithBooks = ascending, true
			t.Run(fmt.Sprintf("%+v", q), func(t *testing.T) {
				all := desc
				if ascending {
					all = asc
				}
				lo := min(q.Offset, len(all))
				hi := len(all)
				if q.Limit > 0 {
					hi = min(lo+q.Limit, hi)
				}
				got, total := listSnapshots(t, s, slug, q)
				checkSnapshots(t, "page", all[lo:hi], got, true)
				if total != len(all) {
					t.Errorf("total = %d, want %d", total, len(all))
				}
			})
		}
	}
}

// bookCase is a pair of books a snapshot may carry, named.
type bookCase struct {
	name     string
	up, down *store.Book
}

// bookCases are the shapes of books a store must keep as they are, and
// snapshots that carry them, one a case.
func bookCases() ([]bookCase, []store.Snapshot) {
	cases := []bookCase{
		{"ten levels a side", newBook(1, 10, 10), newBook(2, 10, 10)},
		{"no books", nil, nil},
		{"up book only", newBook(3, 10, 10), nil},
		{"down book only", nil, newBook(4, 10, 10)},
		{"empty bid side as nil", &store.Book{Asks: newBook(5, 0, 3).Asks}, newBook(6, 1, 1)},
		{"empty ask side as empty slice", newBook(7, 4, 0), &store.Book{Bids: newBook(8, 2, 0).Bids, Asks: []store.Level{}}},
		{"both sides empty", &store.Book{}, &store.Book{Bids: []store.Level{}, Asks: []store.Level{}}},
		{"one level a side", newBook(9, 1, 1), newBook(10, 1, 1)},
		{"deep books", newBook(11, 50, 60), newBook(12, 75, 40)},
		{"uneven sides", newBook(13, 10, 3), newBook(14, 2, 9)},
	}
	snaps := make([]store.Snapshot, len(cases))
	for i, tc := range cases {
		snaps[i] = newSnapshot(t0(), i)
		snaps[i].BookUp, snaps[i].BookDown = tc.up, tc.down
	}
	return cases, snaps
}

func testSnapshotsBooks(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	cases, want := bookCases()
	appendSnapshots(t, s, slug, want)

	checkSeries(t, s, slug, want)
	for _, ascending := range []bool{false, true} {
		got, _ := listSnapshots(t, s, slug, store.SnapshotQuery{Ascending: ascending})
		for i, snap := range got {
			if snap.BookUp != nil || snap.BookDown != nil {
				t.Errorf("snapshot %d read without books has books: up %v, down %v", i, snap.BookUp, snap.BookDown)
			}
		}
	}
	// Name the failing case, not just its index.
	got, _ := listSnapshots(t, s, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	for i, tc := range cases {
		if i < len(got) {
			snapshotDiff(want[i], got[i], true).check(t, tc.name)
		}
	}
}

func testSnapshotsRepeated(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	first := newSnapshots(t0(), 0, 9)
	appendSnapshots(t, s, slug, first)

	// A second write overlapping the first: the stored five stay as they
	// were, the new five are added.
	second := newSnapshots(t0(), 5, 14)
	for i := range second[:5] {
		second[i].CoinPrice += 1
		second[i].PriceUp, second[i].PriceDown = second[i].PriceDown, second[i].PriceUp
		second[i].BookUp = newBook(500+i, 3, 3)
		second[i].BookDown = nil
	}
	appendSnapshots(t, s, slug, second)
	want := append(slices.Clone(first), second[5:]...)
	checkSeries(t, s, slug, want)

	// The same write again stores nothing.
	appendSnapshots(t, s, slug, second)
	appendSnapshots(t, s, slug, first)
	checkSeries(t, s, slug, want)
}

func testSnapshotsDuplicatesInBatch(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	a, b := newSnapshot(t0(), 0), newSnapshot(t0(), 1)
	aAgain := a
	aAgain.CoinPrice += 1
	bSameMicro := b // differs below the microsecond: the same instant to a store
	bSameMicro.Time = b.Time.Add(200 * time.Nanosecond)
	appendSnapshots(t, s, slug, []store.Snapshot{a, b, aAgain, bSameMicro})

	got, total := listSnapshots(t, s, slug, store.SnapshotQuery{Ascending: true})
	if total != 2 {
		t.Errorf("total = %d after writing two instants twice each, want 2", total)
	}
	// Which of two snapshots with one time wins is not specified; only
	// that one is kept.
	if len(got) == 2 {
		var d diff
		eqTime(&d, "first time", a.Time, got[0].Time)
		eqTime(&d, "second time", b.Time, got[1].Time)
		d.check(t, "snapshots")
	} else {
		t.Errorf("got %d snapshots, want 2", len(got))
	}
}

func testSnapshotsSeparateMarkets(t *testing.T, s store.Store) {
	one := seedSnapshotMarket(t, s, 0)
	two := seedSnapshotMarket(t, s, 5)
	idle := seedSnapshotMarket(t, s, 10)
	var ones, twos []store.Snapshot
	for i := range 20 {
		snap := newSnapshot(t0(), i)
		if i%2 == 0 {
			ones = append(ones, snap)
			continue
		}
		snap.BookUp = newBook(100+i, 2, 3)
		twos = append(twos, snap)
	}
	// Same instants in both markets too: distinct rows.
	shared := newSnapshot(t0(), 100)
	ones = append(ones, shared)
	shared.CoinPrice = 1
	twos = append(twos, shared)

	appendSnapshots(t, s, one, ones)
	appendSnapshots(t, s, two, twos)

	checkSeries(t, s, one, ones)
	checkSeries(t, s, two, twos)
	checkSeries(t, s, idle, nil)
}

func testSnapshotsCopies(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	written := newSnapshots(t0(), 0, 2)
	appendSnapshots(t, s, slug, written)

	// Mutating what was written does not reach the store.
	written[0].BookUp.Bids[0].Price = 0.999
	written[0].BookDown.Asks = written[0].BookDown.Asks[:1]
	written[1].BookUp = nil
	checkSeries(t, s, slug, newSnapshots(t0(), 0, 2))

	// Nor does mutating what was read, and growing one side of a book that
	// was read does not overwrite another.
	got, _ := listSnapshots(t, s, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if len(got) != 3 || got[0].BookUp == nil || got[0].BookDown == nil {
		t.Fatalf("ListSnapshots returned %d snapshots without the books written", len(got))
	}
	asks := slices.Clone(got[0].BookUp.Asks)
	downBids := slices.Clone(got[0].BookDown.Bids)
	got[0].BookUp.Bids = append(got[0].BookUp.Bids, store.Level{Price: 0.001, Size: 1})
	got[0].BookUp.Asks = append(got[0].BookUp.Asks, store.Level{Price: 0.999, Size: 1})
	if !slices.Equal(got[0].BookUp.Asks[:len(asks)], asks) || !slices.Equal(got[0].BookDown.Bids, downBids) {
		t.Error("appending to one side of a book read from the store overwrote another side")
	}
	got[1].BookDown.Bids[0].Size = 123
	got[2].BookUp = nil
	checkSeries(t, s, slug, newSnapshots(t0(), 0, 2))
}

// testMarketSeries: store.GetMarketSeries answers what GetMarket and
// store.CountSeries answer (one query where the store is a
// store.MarketSeriesCounter), for a market with snapshots, one without,
// and an unknown slug.
func testMarketSeries(t *testing.T, s store.Store) {
	ctx := t.Context()
	busy := seedSnapshotMarket(t, s, 0)
	idle := seedSnapshotMarket(t, s, 5)
	appendSnapshots(t, s, busy, newSnapshots(at(5), 0, 6))
	for slug, want := range map[string]int{busy: 7, idle: 0} {
		m, sc, err := store.GetMarketSeries(ctx, s, slug)
		if err != nil {
			t.Fatalf("GetMarketSeries(%s): %v", slug, err)
		}
		wantM, err := s.GetMarket(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		checkMarket(t, "GetMarketSeries beside GetMarket", wantM, m)
		if sc != (store.SeriesCount{N: want}) {
			t.Errorf("GetMarketSeries(%s) = %+v, want %d snapshots, none dropped", slug, sc, want)
		}
		if c, err := store.CountSeries(ctx, s, slug); err != nil || c != sc {
			t.Errorf("CountSeries(%s) = %+v, %v; GetMarketSeries counted %+v", slug, c, err, sc)
		}
	}
	_, _, err := store.GetMarketSeries(ctx, s, "btc-updown-5m-0")
	wantErr(t, err, store.ErrNotFound, "GetMarketSeries of an unknown slug")
}

// testSnapshotsNotFinite: a snapshot with a price (the coin's, a side's,
// or a book level's price or size) that is NaN or infinite is refused,
// ErrInvalid, and nothing of its batch is stored: every store refuses it
// alike, where the memory store kept what Postgres refused, and an
// export of it then failed.
func testSnapshotsNotFinite(t *testing.T, s store.Store) {
	ctx := t.Context()
	m := newMarket(store.BTC, store.M5, t0(), "")
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{m}), "UpsertMarkets")
	appendSnapshots(t, s, m.Slug, newSnapshots(t0(), 0, 1))
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, tc := range []struct {
			field string
			set   func(*store.Snapshot)
		}{
			{"CoinPrice", func(sn *store.Snapshot) { sn.CoinPrice = bad }},
			{"PriceUp", func(sn *store.Snapshot) { sn.PriceUp = bad }},
			{"PriceDown", func(sn *store.Snapshot) { sn.PriceDown = bad }},
			{"BookUp bid price", func(sn *store.Snapshot) { sn.BookUp.Bids[0].Price = bad }},
			{"BookDown ask size", func(sn *store.Snapshot) { sn.BookDown.Asks[1].Size = bad }},
		} {
			batch := newSnapshots(t0(), 2, 4)
			tc.set(&batch[1])
			_, err := s.AppendSnapshots(ctx, m.Slug, batch)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("AppendSnapshots with %s %v: %v, want ErrInvalid", tc.field, bad, err)
			}
		}
	}
	checkSeries(t, s, m.Slug, newSnapshots(t0(), 0, 1))
}
