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
//
// rested are the orders' resting spans (resting.rested), every order's
// whether the orders list shows it or not; one still open rests on. The
// time between one order's end and the next one's placement rests
// nothing, so a gap there misses no fill.
func tradeGapWarning(gaps []store.Gap, rested []restSpan) string {
	n, lost := 0, time.Duration(0)
	for _, g := range gaps {
		if g.Kind != store.GapTrades {
			continue
		}
		hit := false
		for _, s := range rested {
			begin, end := max(g.From.UnixNano(), s.from), min(g.To.UnixNano(), s.to)
			if end > begin {
				hit = true
				lost += time.Duration(end - begin)
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
