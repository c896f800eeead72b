package replay

import (
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// time_remaining_pct is 100·(end_time − t)/(end_time − start_time)
// (DESIGN 6), computed as written: on a 5-minute market the snapshot 300 ms
// after the start has exactly 99.9 left (299.7 s of 300 s), which is not
// below 99.9, so `time_remaining_pct < 99.9` first holds at 600 ms (99.8).
// Multiplying by a rounded 100/span instead gave 99.89999999999999 there and
// entered a snapshot early, for MARKET and GTC orders alike; a quarter of a
// 5-minute market's 300 ms grid is off by such a last bit.
func TestHandTimeRemainingPctExact(t *testing.T) {
	t.Parallel()
	m := market("Up")
	m.EndTime = t0.Add(5 * time.Minute)
	var snaps []store.Snapshot
	for _, ms := range []int{0, 300, 600, 900} {
		snaps = append(snaps, withUp(snapMs(ms, 0.50, 0.51), book(levels(lv(0.49, 100)), levels(lv(0.50, 100)))))
	}
	for _, tc := range []struct {
		order string
		op    string
	}{{OrderMarket, OpLess}, {OrderLimit, OpLess}, {OrderGTC, OpLess}, {OrderMarket, OpCrossesBelow}} {
		s := strategy(SideUp, 10, conds(cond(FieldTimeRemainingPct, tc.op, 99.9)), never())
		s.OrderType = tc.order
		r, err := runFull(t, m, snaps, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		want := formatTime(qaAt(600))
		switch {
		case tc.order == OrderGTC:
			if len(r.Orders) == 0 || r.Orders[0].Time != want {
				t.Errorf("%s %s: orders %+v, want the first PLACED at %s", tc.order, tc.op, r.Orders, want)
			}
		case len(r.Trades) == 0 || r.Trades[0].Time != want:
			t.Errorf("%s %s: trades %+v, want the entry at %s", tc.order, tc.op, r.Trades, want)
		}
	}
}
