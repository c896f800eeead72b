package replay

import (
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestTradeGapsWarn: a resting (GTC) order fills on recorded trades, so a
// replay whose orders rested while the recorder lacked the market's trades
// (a trades gap) says so; gaps elsewhere, of snapshots, or a strategy
// without resting orders, say nothing.
func TestTradeGapsWarn(t *testing.T) {
	t.Parallel()
	entry := conds(cond(FieldPriceUp, OpLessOrEqual, 0.5))
	gtcStrat := gtc(strategy(SideUp, 100, entry, never()))
	gtcStrat.CancelAfterMs = 5000 // a BUY rests from 0 s to 5 s, another from 20 s to 25 s
	snaps := []store.Snapshot{withUp(snap(0, 0.50, 0.50), restBook()),
		withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100)))),
		withUp(snap(20, 0.50, 0.50), restBook())}
	trades := []store.MarketTrade{mtrade(7000, "Up", "SELL", 0.47, 100, "0x1")}
	tradesGap := func(from, to int) store.Gap { return store.Gap{From: at(from), To: at(to), Kind: store.GapTrades} }
	tests := []struct {
		name  string
		strat Strategy
		gaps  []store.Gap
		want  bool
		lost  string // the time the warning says was lost, when it matters
	}{
		{"a trades gap while the order rests", gtcStrat, []store.Gap{tradesGap(1, 4)}, true, "for 3s while"},
		{"a trades gap overlapping the order's end", gtcStrat, []store.Gap{tradesGap(4, 40)}, true, "for 6s while"},
		{"a trades gap after the orders", gtcStrat, []store.Gap{tradesGap(50, 60)}, false, ""},
		// No order rests from 5 s to 20 s: a gap there misses no fill.
		{"a trades gap between two orders", gtcStrat, []store.Gap{tradesGap(6, 19)}, false, ""},
		// Of 1 s to 22 s, orders rested 4 s (1 s to 5 s) and 2 s (20 s to 22 s).
		{"a trades gap spanning two orders", gtcStrat, []store.Gap{tradesGap(1, 22)}, true, "for 6s while orders rested"},
		{"a snapshots gap while the order rests", gtcStrat, []store.Gap{{From: at(1), To: at(4)}}, false, ""},
		{"no resting order", strategy(SideUp, 100, entry, never()), []store.Gap{tradesGap(0, 90)}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Market: market(store.OutcomeUp), Trades: trades, Gaps: tt.gaps}
			var err error
			if in.Tape, err = store.TapeOf(snaps, tt.strat.Outcome()); err != nil {
				t.Fatal(err)
			}
			r, err := RunInput(in, tt.strat)
			if err != nil {
				t.Fatal(err)
			}
			got, lost := false, false
			for _, w := range r.Warnings {
				got = got || strings.Contains(w, "trades gap")
				lost = lost || strings.Contains(w, tt.lost)
			}
			if got != tt.want || tt.lost != "" && !lost {
				t.Errorf("warnings %q, want a trades gap warning: %v %q", r.Warnings, tt.want, tt.lost)
			}
		})
	}
}
