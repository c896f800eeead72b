package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func depthTests() []test {
	return []test{
		{"RoundTrip", testDepthRoundTrip},
		{"Filters", testDepthFilters},
		{"RepeatedWrites", testDepthRepeated},
		{"Empty", testDepthEmpty},
		{"Invalid", testDepthInvalid},
		{"CallersCannotMutateStoredData", testDepthCopies},
	}
}

const (
	btcusdt = "BTCUSDT"
	ethusdt = "ETHUSDT"
)

// depthAt is the time of the i-th depth snapshot: a second apart, to the
// millisecond.
func depthAt(i int) time.Time {
	return t0().Add(time.Duration(i)*time.Second + 123*time.Millisecond).In(elsewhere())
}

// newDepth is the i-th depth snapshot of a series with 20 levels a side.
// Spot and futures, and different symbols, differ in every number.
func newDepth(symbol string, kind store.ExchangeKind, i int) store.DepthSnapshot {
	price := int64(105_000_000000 + i*1_250000)
	seed := int64(i + 1)
	if kind == store.Future {
		price += 31_500000
		seed += 100
	}
	if symbol != btcusdt {
		price /= 30
		seed += 1000
	}
	d := store.DepthSnapshot{
		Symbol:       symbol,
		Kind:         kind,
		Time:         depthAt(i),
		CoinPrice:    micros(price + 5000),
		LastUpdateID: 73_829_374_829 + seed*17,
	}
	qty := func(l int) float64 { return micros(seed * int64(l+7) * 13_579 % 50_000_000) }
	for l := range 20 {
		d.Bids = append(d.Bids, store.DepthLevel{Price: micros(price - int64(l)*10_000), Quantity: qty(l)})
		d.Asks = append(d.Asks, store.DepthLevel{Price: micros(price + int64(l+1)*10_000), Quantity: qty(l + 20)})
	}
	return d
}

func newDepths(symbol string, kind store.ExchangeKind, first, last int) []store.DepthSnapshot {
	var out []store.DepthSnapshot
	for i := first; i <= last; i++ {
		out = append(out, newDepth(symbol, kind, i))
	}
	return out
}

func appendDepth(t *testing.T, s store.Store, snaps []store.DepthSnapshot) {
	t.Helper()
	mustOK(t, s.AppendDepth(t.Context(), snaps), "AppendDepth")
}

// checkDepthList fails the test unless ListDepth(f) returns want and total.
func checkDepthList(t *testing.T, s store.Store, f store.DepthFilter, want []store.DepthSnapshot, total int) {
	t.Helper()
	got, gotTotal, err := s.ListDepth(t.Context(), f)
	mustOK(t, err, "ListDepth")
	checkDepth(t, "ListDepth", want, got)
	if gotTotal != total {
		t.Errorf("ListDepth total = %d, want %d", gotTotal, total)
	}
}

func testDepthRoundTrip(t *testing.T, s store.Store) {
	full := newDepth(btcusdt, store.Spot, 0)
	noBids := newDepth(btcusdt, store.Spot, 1)
	noBids.Bids = nil
	noAsks := newDepth(btcusdt, store.Spot, 2)
	noAsks.Asks = []store.DepthLevel{}
	empty := newDepth(btcusdt, store.Spot, 3)
	empty.Bids, empty.Asks = nil, nil
	deep := newDepth(btcusdt, store.Spot, 4)
	for range 5 {
		deep.Bids = append(deep.Bids, deep.Bids...)
		deep.Asks = append(deep.Asks, deep.Asks...)
	}
	deep.LastUpdateID = 1<<62 + 12345
	want := []store.DepthSnapshot{full, noBids, noAsks, empty, deep}
	appendDepth(t, s, want)
	checkDepthList(t, s, store.DepthFilter{Symbol: btcusdt, Kind: store.Spot}, reversed(want), len(want))
}

func testDepthFilters(t *testing.T, s store.Store) {
	spot := newDepths(btcusdt, store.Spot, 0, 9)
	future := newDepths(btcusdt, store.Future, 0, 9)
	eth := newDepths(ethusdt, store.Spot, 0, 4)
	// Interleave the series in the writes, out of time order.
	var batch []store.DepthSnapshot
	for i := 9; i >= 0; i-- {
		batch = append(batch, future[i], spot[(i+3)%10])
		if i < len(eth) {
			batch = append(batch, eth[i])
		}
	}
	appendDepth(t, s, batch[:13])
	appendDepth(t, s, batch[13:])

	// idx picks snapshots of a series, newest first, from..to inclusive.
	idx := func(series []store.DepthSnapshot, from, to int) []store.DepthSnapshot {
		if from > to {
			return nil
		}
		return reversed(series[from : to+1])
	}
	tp := func(i int) *time.Time { return ptr(depthAt(i)) }
	cases := []struct {
		name  string
		f     store.DepthFilter
		want  []store.DepthSnapshot
		total int
	}{
		{"spot", store.DepthFilter{}, idx(spot, 0, 9), 10},
		{"future", store.DepthFilter{Kind: store.Future}, idx(future, 0, 9), 10},
		{"other symbol", store.DepthFilter{Symbol: ethusdt}, idx(eth, 0, 4), 5},
		{"other symbol, no futures", store.DepthFilter{Symbol: ethusdt, Kind: store.Future}, nil, 0},
		{"unknown symbol", store.DepthFilter{Symbol: "SOLUSDT"}, nil, 0},
		{"from (inclusive)", store.DepthFilter{From: tp(3)}, idx(spot, 3, 9), 7},
		{"to (inclusive)", store.DepthFilter{To: tp(6)}, idx(spot, 0, 6), 7},
		{"from and to", store.DepthFilter{From: tp(3), To: tp(6)}, idx(spot, 3, 6), 4},
		{"from equals to", store.DepthFilter{From: tp(5), To: tp(5)}, idx(spot, 5, 5), 1},
		{"from between snapshots", store.DepthFilter{From: ptr(depthAt(3).Add(500 * time.Millisecond))}, idx(spot, 4, 9), 6},
		{"to between snapshots", store.DepthFilter{To: ptr(depthAt(3).Add(-time.Millisecond))}, idx(spot, 0, 2), 3},
		{"from after to", store.DepthFilter{From: tp(6), To: tp(3)}, nil, 0},
		{"min time (inclusive)", store.DepthFilter{MinTime: depthAt(4)}, idx(spot, 4, 9), 6},
		{"min time after from", store.DepthFilter{MinTime: depthAt(4), From: tp(2)}, idx(spot, 4, 9), 6},
		{"min time before from", store.DepthFilter{MinTime: depthAt(2), From: tp(4)}, idx(spot, 4, 9), 6},
		{"min time after to", store.DepthFilter{MinTime: depthAt(7), To: tp(5)}, nil, 0},
		{"limit", store.DepthFilter{Limit: 3}, idx(spot, 7, 9), 10},
		{"limit and offset", store.DepthFilter{Limit: 3, Offset: 8}, idx(spot, 0, 1), 10},
		{"offset only", store.DepthFilter{Offset: 4}, idx(spot, 0, 5), 10},
		{"offset at the end", store.DepthFilter{Limit: 3, Offset: 10}, nil, 10},
		{"offset past the end", store.DepthFilter{Offset: 50}, nil, 10},
		{"from with paging", store.DepthFilter{From: tp(2), Limit: 2, Offset: 1}, idx(spot, 7, 8), 8},
		{"future with everything", store.DepthFilter{Kind: store.Future, From: tp(1), To: tp(8), MinTime: depthAt(2), Limit: 4, Offset: 2}, idx(future, 3, 6), 7},
		{"ascending", store.DepthFilter{Ascending: true, Limit: 3, Offset: 1}, spot[1:4], 10},
		{"ascending in a range", store.DepthFilter{Ascending: true, From: tp(2), To: tp(7)}, spot[2:8], 6},
		// A keyset position narrows the page, not the count.
		{"after, newest first", store.DepthFilter{After: tp(6), Limit: 3}, idx(spot, 3, 5), 10},
		{"after between snapshots", store.DepthFilter{After: ptr(depthAt(6).Add(time.Millisecond))}, idx(spot, 0, 6), 10},
		{"after, ascending", store.DepthFilter{After: tp(6), Ascending: true}, spot[7:10], 10},
		{"after in a range", store.DepthFilter{After: tp(4), Ascending: true, From: tp(2), To: tp(7), Limit: 2}, spot[5:7], 6},
		{"after the last", store.DepthFilter{After: tp(9), Ascending: true}, nil, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			if f.Symbol == "" {
				f.Symbol = btcusdt
			}
			if f.Kind == "" {
				f.Kind = store.Spot
			}
			checkDepthList(t, s, f, tc.want, tc.total)
		})
	}
}

func testDepthRepeated(t *testing.T, s store.Store) {
	first := newDepths(btcusdt, store.Spot, 0, 4)
	appendDepth(t, s, first)
	second := newDepths(btcusdt, store.Spot, 3, 7)
	for i := range second[:2] {
		second[i].CoinPrice += 1
		second[i].LastUpdateID++
		second[i].Bids = second[i].Bids[:1]
	}
	appendDepth(t, s, second)
	want := append(slices.Clone(first), second[2:]...)
	f := store.DepthFilter{Symbol: btcusdt, Kind: store.Spot}
	checkDepthList(t, s, f, reversed(want), len(want))

	appendDepth(t, s, second)
	appendDepth(t, s, first)
	checkDepthList(t, s, f, reversed(want), len(want))

	// One instant twice in a batch is stored once; the same instant of the
	// other kind is a snapshot of its own.
	again := newDepth(btcusdt, store.Spot, 10)
	other := again
	other.CoinPrice++
	fut := newDepth(btcusdt, store.Future, 10)
	appendDepth(t, s, []store.DepthSnapshot{again, fut, other})
	got, total, err := s.ListDepth(t.Context(), store.DepthFilter{Symbol: btcusdt, Kind: store.Spot, Limit: 1})
	mustOK(t, err, "ListDepth")
	if total != len(want)+1 || len(got) != 1 || !got[0].Time.Equal(again.Time) {
		t.Errorf("ListDepth after writing one instant twice: total %d, newest %v; want total %d, newest at %v",
			total, timesOf(got, depthTime), len(want)+1, again.Time.UTC())
	}
	checkDepthList(t, s, store.DepthFilter{Symbol: btcusdt, Kind: store.Future}, []store.DepthSnapshot{fut}, 1)
}

func testDepthEmpty(t *testing.T, s store.Store) {
	mustOK(t, s.AppendDepth(t.Context(), nil), "AppendDepth of nothing")
	for _, kind := range []store.ExchangeKind{store.Spot, store.Future} {
		checkDepthList(t, s, store.DepthFilter{Symbol: btcusdt, Kind: kind, Limit: 10}, nil, 0)
	}
}

func testDepthCopies(t *testing.T, s store.Store) {
	f := store.DepthFilter{Symbol: btcusdt, Kind: store.Spot}
	written := newDepths(btcusdt, store.Spot, 0, 1)
	appendDepth(t, s, written)
	written[0].Bids[0].Price = 1
	written[1].Asks = written[1].Asks[:2]
	pristine := reversed(newDepths(btcusdt, store.Spot, 0, 1))
	checkDepthList(t, s, f, pristine, 2)

	got, _, err := s.ListDepth(t.Context(), f)
	mustOK(t, err, "ListDepth")
	if len(got) != 2 {
		t.Fatalf("ListDepth returned %d snapshots, want 2", len(got))
	}
	asks := slices.Clone(got[0].Asks)
	got[0].Bids = append(got[0].Bids, store.DepthLevel{Price: 1, Quantity: 1})
	if !slices.Equal(got[0].Asks, asks) {
		t.Error("appending to the bids of a depth snapshot read from the store overwrote its asks")
	}
	got[1].Asks[0].Quantity = 99
	checkDepthList(t, s, f, pristine, 2)
}

// testDepthInvalid: a batch with one snapshot that names no series (no
// symbol, or a kind other than spot and future) is ErrInvalid and stores
// none of its snapshots; a negative limit or offset is ErrInvalid too. A
// store that kept such a snapshot would hold rows no query of the api
// reaches, where the other store refused them.
func testDepthInvalid(t *testing.T, s store.Store) {
	appendDepth(t, s, newDepths(btcusdt, store.Spot, 0, 1))
	for name, mod := range map[string]func(*store.DepthSnapshot){
		"no symbol":    func(d *store.DepthSnapshot) { d.Symbol = "" },
		"no kind":      func(d *store.DepthSnapshot) { d.Kind = "" },
		"unknown kind": func(d *store.DepthSnapshot) { d.Kind = "futures" },
	} {
		bad := newDepth(btcusdt, store.Spot, 5)
		mod(&bad)
		err := s.AppendDepth(t.Context(), []store.DepthSnapshot{newDepth(btcusdt, store.Spot, 3), bad, newDepth(btcusdt, store.Spot, 4)})
		wantErr(t, err, store.ErrInvalid, "AppendDepth with a snapshot with "+name)
	}
	checkDepthList(t, s, store.DepthFilter{Symbol: btcusdt, Kind: store.Spot}, reversed(newDepths(btcusdt, store.Spot, 0, 1)), 2)
	for _, f := range []store.DepthFilter{{Limit: -1}, {Offset: -1}} {
		f.Symbol, f.Kind = btcusdt, store.Spot
		_, _, err := s.ListDepth(t.Context(), f)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ListDepth with limit %d, offset %d", f.Limit, f.Offset))
	}
}
