package replay

import (
	"fmt"
	"time"

	"github.com/updown/updown/store"
)

// tradeGapWarning is the warning a replay with resting orders carries when
// the recorder lacked the market's trades (a gap of kind trades, see
// store.GapTrades) while an order rested: resting orders fill on trades
// (DESIGN 6), so fills in those stretches may be missed. "" when none.
func tradeGapWarning(gaps []store.Gap, orders []OrderEvent) string {
	if len(orders) == 0 {
		return ""
	}
	from, err1 := time.Parse(timeLayout, orders[0].Time)
	to, err2 := time.Parse(timeLayout, orders[len(orders)-1].Time)
	if err1 != nil || err2 != nil {
		return ""
	}
	n, lost := 0, time.Duration(0)
	for _, g := range gaps {
		if g.Kind != store.GapTrades || !g.To.After(from) || g.From.After(to) {
			continue
		}
		n++
		end, begin := g.To, g.From
		if to.Before(end) {
			end = to
		}
		if from.After(begin) {
			begin = from
		}
		lost += end.Sub(begin)
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the recorder lacked this market's trades for %s while orders rested (%d trades gap(s), see /gaps): resting orders there filled only where the book crossed them, so maker fills may be undercounted",
		lost.Round(time.Millisecond), n)
}
