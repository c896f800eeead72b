package replay

import (
	"fmt"
	"testing"

	"github.com/updown/updown/store"
)

// A spread is the decimal difference of the recorded prices: a 5-cent
// spread meets spread <= 0.05 and spread >= 0.05 and neither < nor >,
// whichever prices make it, where the float subtraction put 0.53 − 0.48
// (0.050000000000000044) above 0.05 and 0.12 − 0.07
// (0.04999999999999999) below it. The MARKET/LIMIT loop and the resting
// orders' loop read it alike.
func TestSpreadIsTheDecimalDifference(t *testing.T) {
	t.Parallel()
	pairs := [][2]float64{{0.53, 0.48}, {0.48, 0.53}, {0.12, 0.07}, {0.55, 0.50}, {0.06, 0.01}}
	tests := []struct {
		op   string
		want bool // whether a 5-cent spread meets spread <op> 0.05
	}{
		{OpLessOrEqual, true},
		{OpGreaterOrEqual, true},
		{OpEqual, true},
		{OpLess, false},
		{OpGreater, false},
	}
	for _, orderType := range []string{OrderMarket, OrderGTC} {
		for _, p := range pairs {
			for _, tt := range tests {
				name := fmt.Sprintf("%s %v−%v spread %s 0.05", orderType, p[0], p[1], tt.op)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					bk := book(levels(lv(p[0]-0.01, 100)), levels(lv(p[0], 100)))
					snaps := []store.Snapshot{withUp(snap(0, p[0], p[1]), bk), withUp(snap(10, p[0], p[1]), bk)}
					s := strategy(SideUp, 10, conds(cond(FieldSpread, tt.op, 0.05)), never())
					s.OrderType = orderType
					r, err := runFull(t, market(store.OutcomeUp), snaps, nil, s)
					if err != nil {
						t.Fatal(err)
					}
					// MARKET enters at 0 s; GTC places its BUY there.
					acted := len(r.Trades) > 0 && r.Trades[0].Time == ts(0)
					if orderType == OrderGTC {
						acted = len(r.Orders) > 0 && r.Orders[0].Time == ts(0) && r.Orders[0].Action == OrderPlaced
					}
					if acted != tt.want {
						t.Errorf("acted at 0 s: %v, want %v (trades %+v, orders %+v)", acted, tt.want, r.Trades, r.Orders)
					}
				})
			}
		}
	}
}

// mid_up (and display_up, the mid on a narrow book) is the decimal mid
// of the best bid and ask: the bid 0.01 and ask 0.05 make 0.03, which
// meets mid_up <= 0.03 and >= 0.03 and neither < nor >, where the float
// (0.01 + 0.05) / 2 was 0.030000000000000002.
func TestMidIsTheDecimalMid(t *testing.T) {
	t.Parallel()
	quotes := []struct{ bid, ask, mid float64 }{{0.01, 0.05, 0.03}, {0.01, 0.06, 0.035}, {0.01, 0.09, 0.05}}
	tests := []struct {
		op   string
		want bool
	}{
		{OpLessOrEqual, true},
		{OpGreaterOrEqual, true},
		{OpLess, false},
		{OpGreater, false},
	}
	for _, field := range []string{FieldMidUp, FieldDisplayUp} {
		for _, q := range quotes {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s of %v/%v %s %v", field, q.bid, q.ask, tt.op, q.mid), func(t *testing.T) {
					t.Parallel()
					bk := book(levels(lv(q.bid, 100)), levels(lv(q.ask, 100)))
					snaps := []store.Snapshot{withUp(snap(0, q.ask, 1-q.bid), bk), withUp(snap(10, q.ask, 1-q.bid), bk)}
					s := strategy(SideUp, 10, conds(cond(field, tt.op, q.mid)), never())
					r, err := runFull(t, market(store.OutcomeUp), snaps, nil, s)
					if err != nil {
						t.Fatal(err)
					}
					if entered := len(r.Trades) > 0 && r.Trades[0].Time == ts(0); entered != tt.want {
						t.Errorf("entered at 0 s: %v, want %v (trades %+v)", entered, tt.want, r.Trades)
					}
				})
			}
		}
	}
}
