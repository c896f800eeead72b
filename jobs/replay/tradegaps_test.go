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
	gtcStrat.CancelAfterMs = 5000 // the BUY rests from 0 s to 5 s
	snaps := []store.Snapshot{withUp(snap(0, 0.50, 0.50), restBook()),
		withUp(snap(10, 0.55, 0.45), book(levels(lv(0.54, 100)), levels(lv(0.56, 100))))}
	trades := []store.MarketTrade{mtrade(7000, "Up", "SELL", 0.47, 100, "0x1")}
	tradesGap := func(from, to int) store.Gap { return store.Gap{From: at(from), To: at(to), Kind: store.GapTrades} }
	tests := []struct {
		name  string
		strat Strategy
		gaps  []store.Gap
		want  bool
	}{
		{"a trades gap while the order rests", gtcStrat, []store.Gap{tradesGap(1, 4)}, true},
		{"a trades gap overlapping the order's end", gtcStrat, []store.Gap{tradesGap(4, 40)}, true},
		{"a trades gap after the order", gtcStrat, []store.Gap{tradesGap(50, 60)}, false},
		{"a snapshots gap while the order rests", gtcStrat, []store.Gap{{From: at(1), To: at(4)}}, false},
		{"no resting order", strategy(SideUp, 100, entry, never()), []store.Gap{tradesGap(0, 90)}, false},
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
			got := false
			for _, w := range r.Warnings {
				got = got || strings.Contains(w, "trades gap")
			}
			if got != tt.want {
				t.Errorf("warnings %q, want a trades gap warning: %v", r.Warnings, tt.want)
			}
		})
	}
}
