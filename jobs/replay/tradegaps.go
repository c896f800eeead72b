package replay

import (
	"fmt"
	"math"
	"time"

	"github.com/updown/updown/store"
)

// tradeGapWarning is the warning a replay with resting orders carries when
// the recorder lacked the market's trades (a gap of kind trades, see
// store.GapTrades) while an order rested: resting orders fill on trades
// (DESIGN 6), so fills in those stretches may be missed. "" when none.
//
// An order rests from its PLACED action to the action that ends it; one
// whose end the list lacks (a truncated list) rests on. The time between
// one order's end and the next one's placement rests nothing, so a gap
// there misses no fill.
func tradeGapWarning(gaps []store.Gap, orders []OrderEvent) string {
	type span struct{ from, to time.Time }
	var rested []span
	open := false
	for _, o := range orders {
		t, err := time.Parse(timeLayout, o.Time)
		if err != nil {
			return ""
		}
		switch {
		case o.Action == OrderPlaced:
			rested, open = append(rested, span{from: t}), true
		case open:
			rested[len(rested)-1].to, open = t, false
		}
	}
	if open {
		rested[len(rested)-1].to = time.Unix(0, math.MaxInt64)
	}
	n, lost := 0, time.Duration(0)
	for _, g := range gaps {
		if g.Kind != store.GapTrades {
			continue
		}
		hit := false
		for _, s := range rested {
			begin, end := g.From, g.To
			if s.from.After(begin) {
				begin = s.from
			}
			if s.to.Before(end) {
				end = s.to
			}
			if end.After(begin) {
				hit = true
				lost += end.Sub(begin)
			}
		}
		if hit {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the recorder lacked this market's trades for %s while orders rested (%d trades gap(s), see /gaps): resting orders there filled only where the book crossed them, so maker fills may be undercounted",
		lost.Round(time.Millisecond), n)
}
