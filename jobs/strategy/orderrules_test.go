package strategy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// gtcRules are normalized rules using every field of re-entry control and
// resting orders.
func gtcRules(t *testing.T) Rules {
	t.Helper()
	r := Rules{Coin: store.BTC, MarketType: store.M15, Strategy: replay.Strategy{Side: replay.SideUp,
		EntryConditions: []replay.Condition{cond(replay.FieldCoinMovePct, ">=", 0.1), cond(replay.FieldImbalanceUp, ">", 0.3)},
		ExitConditions:  []replay.Condition{cond(replay.FieldDisplayUp, ">=", 0.6), cond(replay.FieldTimeRemaining, "<=", 120)},
		PositionSize:    100, OrderType: replay.OrderGTC, PostOnly: true, QueueModel: replay.QueueFront, IncludeRebates: true}}
	r.Strategy.SetOrderRules(ptr(30000.0), ptr(3.0), ptr(1.0), ptr(60000.0))
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSpecOrderRulesJSON: generated_strategy carries re-entry control and
// the resting-order fields when set, leaves them out when not, and reads
// them back.
func TestSpecOrderRulesJSON(t *testing.T) {
	r := gtcRules(t)
	b, err := json.Marshal(Spec{Rules: r, Explanation: "e"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `"orderType":"GTC","reentryCooldownMs":30000,"maxEntriesPerMarket":3,"postOnly":true,"limitOffsetTicks":1,` +
		`"cancelAfterMs":60000,"queueModel":"FRONT","includeRebates":true,"coin":"BTC"`
	if !strings.Contains(string(b), want) {
		t.Errorf("encoded %s\nwant ...%s...", b, want)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Normalize(); err != nil || !reflect.DeepEqual(back.Rules, r) {
		t.Errorf("round trip %+v (%v)\nwant %+v", back.Rules, err, r)
	}

	plain, err := ParseCode("side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100")
	if err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(Spec{Rules: plain})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reentryCooldownMs", "maxEntriesPerMarket", "postOnly", "limitOffsetTicks", "cancelAfterMs", "queueModel", "includeRebates"} {
		if strings.Contains(string(b), k) {
			t.Errorf("%s in a strategy without it: %s", k, b)
		}
	}
}
