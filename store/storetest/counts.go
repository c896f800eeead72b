package storetest

import (
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// appendCountTests: each append says how many of the records it was
// given it stored, the rest being held already (what `updown import`
// reports as written and as kept).
func appendCountTests() []test {
	return []test{
		{"Snapshots", testAppendCountSnapshots},
		{"Trades", testAppendCountTrades},
		{"Gaps", testAppendCountGaps},
	}
}

// countStep is one write and the count it must report.
type countStep struct {
	name  string
	write func() (int, error)
	want  int
}

func runCountSteps(t *testing.T, steps []countStep) {
	t.Helper()
	for _, st := range steps {
		n, err := st.write()
		mustOK(t, err, st.name)
		if n != st.want {
			t.Errorf("%s: reported %d stored, want %d", st.name, n, st.want)
		}
	}
}

func testAppendCountSnapshots(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	ctx := t.Context()
	write := func(snaps []store.Snapshot) func() (int, error) {
		return func() (int, error) { return s.AppendSnapshots(ctx, slug, snaps) }
	}
	dup := newSnapshot(t0(), 40)
	dup.Time = dup.Time.Add(100 * time.Nanosecond) // the same microsecond as 40
	runCountSteps(t, []countStep{
		{"a first batch", write(newSnapshots(t0(), 20, 29)), 10},
		{"the same batch again", write(newSnapshots(t0(), 20, 29)), 0},
		{"half of it stored, half newer", write(newSnapshots(t0(), 25, 34)), 5},
		{"half of it stored, half older", write(newSnapshots(t0(), 15, 24)), 5},
		{"stored ones around new ones", write(append(newSnapshots(t0(), 10, 16), newSnapshots(t0(), 33, 36)...)), 7},
		{"one instant twice in the batch", write(append(newSnapshots(t0(), 40, 41), dup)), 2},
		{"nothing", write(nil), 0},
	})
	_, total := listSnapshots(t, s, slug, store.SnapshotQuery{})
	if total != 10+5+5+7+2 {
		t.Errorf("the market holds %d snapshots, want the %d reported stored", total, 10+5+5+7+2)
	}
}

func testAppendCountTrades(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	ctx := t.Context()
	write := func(trades []store.MarketTrade) func() (int, error) {
		return func() (int, error) { return s.AppendMarketTrades(ctx, slug, trades) }
	}
	sub := tradeAt(31)
	sub.Time = sub.Time.Add(300 * time.Nanosecond) // the same trade to a store
	runCountSteps(t, []countStep{
		{"a first batch", write(tradesFrom(10, 19)), 10},
		{"the same batch again", write(tradesFrom(10, 19)), 0},
		{"half of it stored, half newer", write(tradesFrom(15, 24)), 5},
		{"half of it stored, half older", write(tradesFrom(5, 14)), 5},
		{"one trade twice in the batch", write(append(tradesFrom(30, 31), tradeAt(30), sub)), 2},
		{"nothing", write(nil), 0},
	})
	checkMarketTrades(t, s, slug, store.MarketTradeQuery{Ascending: true},
		append(tradesFrom(5, 24), tradesFrom(30, 31)...), 22)
}

func testAppendCountGaps(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	ctx := t.Context()
	write := func(gaps ...store.Gap) func() (int, error) {
		return func() (int, error) { return s.RecordGaps(ctx, slug, gaps) }
	}
	runCountSteps(t, []countStep{
		{"a first gap", write(gap(10, 20)), 1},
		{"the same gap again", write(gap(10, 20)), 0},
		{"one within a stored gap, one new", write(gap(12, 18), gap(30, 40)), 1},
		{"one widening a stored gap", write(gap(35, 45)), 1},
		{"a trades gap where a snapshots gap is", write(tgap(10, 20)), 1},
		{"one gap twice in the call", write(gap(50, 55), gap(50, 55)), 1},
		{"one within an earlier gap of the call", write(gap(60, 70), gap(62, 68)), 1},
		{"one within a stored gap and an earlier one of the call together", write(gap(70, 80), gap(65, 75)), 1},
		{"one the call widens a stored gap with, then within it", write(gap(45, 48), gap(40, 47)), 1},
		{"a trades gap within a snapshots gap of the call", write(gap(100, 110), tgap(102, 105)), 2},
		{"one within a later gap of the call", write(gap(122, 124), gap(120, 130)), 2},
		{"nothing", write(), 0},
	})
	gaps, err := s.ListGaps(ctx, slug)
	mustOK(t, err, "ListGaps")
	want := []store.Gap{gap(10, 20), tgap(10, 20), gap(30, 48), gap(50, 55), gap(60, 80), gap(100, 110), tgap(102, 105), gap(120, 130)}
	if len(gaps) != len(want) {
		t.Fatalf("gaps %v, want %v", gaps, want)
	}
	for i := range want {
		if !gaps[i].From.Equal(want[i].From) || !gaps[i].To.Equal(want[i].To) || gaps[i].Kind != want[i].Kind {
			t.Errorf("gap %d: %v, want %v", i, gaps[i], want[i])
		}
	}
}
