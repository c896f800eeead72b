package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestTradeGapWarningPastTheOrdersList: the warning reads every order's
// resting span, not the orders list, which stops at MaxOrders: a gap
// while an order placed past the list's end rested is warned of, and a
// gap after the last listed order ended, while none rested, is not.
func TestTradeGapWarningPastTheOrdersList(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(s int) int64 { return base.Add(time.Duration(s) * time.Second).UnixNano() }
	var r resting
	// MaxOrders+200 orders, each resting [10k, 10k+5) seconds.
	for k := range MaxOrders/2 + 100 {
		r.record(orderAction{ns: at(10 * k), action: OrderPlaced})
		r.record(orderAction{ns: at(10*k + 5), action: OrderCancelled})
	}
	if len(r.orders) != MaxOrders || len(r.rested) != MaxOrders/2+100 {
		t.Fatalf("%d orders listed, %d spans; want %d and %d", len(r.orders), len(r.rested), MaxOrders, MaxOrders/2+100)
	}
	gap := func(from, to int) []store.Gap {
		return []store.Gap{{From: time.Unix(0, at(from)), To: time.Unix(0, at(to)), Kind: store.GapTrades}}
	}
	past := 10 * (MaxOrders/2 + 50) // an order past the list's end rests [past, past+5)
	if w := tradeGapWarning(gap(past+1, past+3), r.rested); !strings.Contains(w, "for 2s") {
		t.Errorf("a gap while an unlisted order rested: warning %q, want 2s lost", w)
	}
	if w := tradeGapWarning(gap(past+6, past+9), r.rested); w != "" {
		t.Errorf("a gap between two orders, none resting: warning %q, want none", w)
	}
}
