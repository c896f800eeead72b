package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// Trades by time (DESIGN 13): time ranges, both orders, keyset positions
// that are whole trade keys (several trades share an instant), and the
// count of a range.

func tradeRangeTests() []test {
	return []test{
		{"TimeRange", testTradesTimeRange},
		{"CursorWalk", testTradesCursorWalk},
		{"CursorStableUnderInserts", testTradesCursorInserts},
	}
}

// tiedTrades returns n trades oldest first (CompareMarketTrades) in which
// every instant holds three trades: tradeAt(i) and two that differ from it
// in side or outcome and price only.
func tiedTrades(n int) []store.MarketTrade {
	var out []store.MarketTrade
	for i := range n {
		a := tradeAt(i)
		b, c := a, a
		b.Price += 0.001
		c.Outcome = store.OutcomeUp
		if a.Outcome == store.OutcomeUp {
			c.Outcome = store.OutcomeDown
		}
		out = append(out, a, b, c)
	}
	slices.SortFunc(out, store.CompareMarketTrades)
	return out
}

// tradesIn returns the trades of asc (sorted) in [from, to).
func tradesIn(asc []store.MarketTrade, from, to *time.Time) []store.MarketTrade {
	var out []store.MarketTrade
	for _, tr := range asc {
		if (from == nil || !tr.Time.Before(*from)) && (to == nil || tr.Time.Before(*to)) {
			out = append(out, tr)
		}
	}
	return out
}

func tradeInstant(i int) time.Time { return tradeAt(i).Time }

func checkTradeCount(t *testing.T, s store.Store, slug string, q store.MarketTradeQuery, want int) {
	t.Helper()
	got, err := s.CountMarketTrades(t.Context(), slug, q)
	mustOK(t, err, "CountMarketTrades")
	if got != want {
		t.Errorf("CountMarketTrades %+v = %d, want %d", q, got, want)
	}
}

func testTradesTimeRange(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	all := tiedTrades(40)
	appendTrades(t, s, slug, shuffled(all))
	tp := func(i int) *time.Time { return ptr(tradeInstant(i)) }
	ranges := []struct {
		name     string
		from, to *time.Time
	}{
		{"none", nil, nil},
		{"from (inclusive, all three at the instant)", tp(10), nil},
		{"to (exclusive, none of the three at the instant)", nil, tp(10)},
		{"inside", tp(5), tp(25)},
		{"one instant", tp(7), tp(8)},
		{"between instants", ptr(tradeInstant(3).Add(time.Millisecond)), ptr(tradeInstant(9).Add(-time.Millisecond))},
		{"a microsecond past an instant", ptr(tradeInstant(3).Add(time.Microsecond)), nil},
		{"from equals to", tp(7), tp(7)},
		{"from after to", tp(20), tp(2)},
		{"after the last", ptr(tradeInstant(40)), nil},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			want := tradesIn(all, r.from, r.to)
			q := store.MarketTradeQuery{From: r.from, To: r.to, Ascending: true}
			checkMarketTrades(t, s, slug, q, want, len(all))
			q.Ascending = false
			checkMarketTrades(t, s, slug, q, reversed(want), len(all))
			q.Limit, q.Offset = 4, 2
			checkMarketTrades(t, s, slug, q, reversed(want)[min(2, len(want)):min(6, len(want))], len(all))
			checkTradeCount(t, s, slug, q, len(want))
		})
	}
	_, err := s.CountMarketTrades(t.Context(), "no-such-market", store.MarketTradeQuery{})
	wantErr(t, err, store.ErrNotFound, "CountMarketTrades of an unknown slug")
}

// walkTrades pages through the market by keyset, limit trades a page,
// calling between(page) after each page, and returns what it read.
func walkTrades(t *testing.T, s store.Store, slug string, q store.MarketTradeQuery, between func(last store.MarketTrade)) []store.MarketTrade {
	t.Helper()
	var got []store.MarketTrade
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("walk of %+v does not end", q)
		}
		tr, _, err := s.ListMarketTrades(t.Context(), slug, q)
		mustOK(t, err, fmt.Sprintf("ListMarketTrades %+v", q))
		if len(tr) == 0 {
			return got
		}
		got = append(got, tr...)
		q.After = &tr[len(tr)-1]
		between(tr[len(tr)-1])
	}
}

// testTradesCursorWalk walks ranges in both orders with pages that end
// inside an instant's trades: every trade once, in order.
func testTradesCursorWalk(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	all := tiedTrades(30)
	appendTrades(t, s, slug, all)
	for _, limit := range []int{1, 2, 4, 7} {
		for _, asc := range []bool{true, false} {
			from, to := ptr(tradeInstant(4)), ptr(tradeInstant(22))
			want := tradesIn(all, from, to)
			if !asc {
				want = reversed(want)
			}
			q := store.MarketTradeQuery{Limit: limit, Ascending: asc, From: from, To: to}
			got := walkTrades(t, s, slug, q, func(store.MarketTrade) {})
			checkEach(t, fmt.Sprintf("walk limit %d asc %t", limit, asc), "trade", want, got, tradeTime, tradeDiff)
			// The keyset position does not change the count.
			q.After = &want[len(want)/2]
			checkTradeCount(t, s, slug, q, len(want))
		}
	}
}

// testTradesCursorInserts walks in both orders while trades arrive: newer
// than all, and at the instant of the page's last trade with a key just
// past it (so after it oldest first, before it newest first). Newest
// first the walk reads exactly the trades there were when it started,
// where an offset would read one twice each page; oldest first it reads
// those and every trade that arrived past its position.
func testTradesCursorInserts(t *testing.T, s store.Store) {
	all := tiedTrades(20)
	for i, asc := range []bool{false, true} {
		t.Run(fmt.Sprintf("asc=%t", asc), func(t *testing.T) {
			slug := seedSnapshotMarket(t, s, i)
			appendTrades(t, s, slug, all)
			want := slices.Clone(all)
			page := 0
			got := walkTrades(t, s, slug, store.MarketTradeQuery{Limit: 5, Ascending: asc}, func(last store.MarketTrade) {
				if page == 6 {
					return // oldest first, a walk that is always fed never ends
				}
				tie := last
				tie.TxHash += "z" // bytewise just past last, at its instant
				added := []store.MarketTrade{tradeAt(100 + page), tie}
				page++
				appendTrades(t, s, slug, added)
				if asc {
					want = append(want, added...)
				}
			})
			slices.SortFunc(want, store.CompareMarketTrades)
			if !asc {
				want = reversed(want)
			}
			checkEach(t, "walk under inserts", "trade", want, got, tradeTime, tradeDiff)
		})
	}
}
