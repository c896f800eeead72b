package strategy

import (
	"encoding/json"
	"errors"
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

// TestCodeOrderRules pins the strategy code of re-entry control and
// resting orders: what it writes, what it reads back, and its defaults.
func TestCodeOrderRules(t *testing.T) {
	const want = "coin=BTC type=15m side=UP entry: coin_move_pct >= 0.1 and imbalance_up > 0.3 exit: display_up >= 0.6 or time_remaining_s <= 120 " +
		"size=100 maxloss=50 order=GTC postonly=true offset=1 cancel=60000 queue=front rebates=true cooldown=30000 maxentries=3"
	r := gtcRules(t)
	if got := FormatCode(r); got != want {
		t.Fatalf("format = %q\nwant     %q", got, want)
	}
	back, err := ParseCode(want)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("parse: %+v (%v)\nwant   %+v", back, err, r)
	}
	cases := []struct{ in, out string }{
		// Defaults are left out; queue and booleans are read in any case.
		{"side=UP entry: bid_up < 0.4 exit: mid_up > 0.6 size=1 order=GTC postonly=FALSE offset=0 queue=RISK_AVERSE rebates=False cooldown=0",
			"side=UP entry: bid_up < 0.4 exit: mid_up > 0.6 size=1 maxloss=50 order=GTC"},
		{"side=DOWN entry: coin_return_60s < -0.2 exit: imbalance_down <= -0.5 size=1 order=GTC queue=Front latency=100 maxentries=1",
			"side=DOWN entry: coin_return_60s < -0.2 exit: imbalance_down <= -0.5 size=1 maxloss=50 order=GTC queue=front latency=100 maxentries=1"},
		// Re-entry control and rebates need no resting order.
		{"side=UP entry: display_down < 0.5 exit: bid_down > 0.5 size=1 order=LIMIT rebates=true cooldown=86400000 maxentries=10000",
			"side=UP entry: display_down < 0.5 exit: bid_down > 0.5 size=1 maxloss=50 order=LIMIT rebates=true cooldown=86400000 maxentries=10000"},
	}
	for _, tc := range cases {
		r, err := ParseCode(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := FormatCode(r); got != tc.out {
			t.Errorf("%q\n formats as %q\n want       %q", tc.in, got, tc.out)
		}
	}
}

// TestParseCodeOrderRulesErrors: each new word's mistakes are refused
// naming the word.
func TestParseCodeOrderRulesErrors(t *testing.T) {
	const base = "side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 "
	for code, want := range map[string]string{
		base + "order=gtc":                            `order "gtc" is not one of MARKET, LIMIT, GTC (values are case-sensitive: use "GTC")`,
		base + "order=GTC postonly=yes":               `word 12 ("postonly=yes"): expected true or false after postonly=`,
		base + "postonly=false":                       `word 11 ("postonly=false"): postonly applies only with order=GTC`,
		base + "order=LIMIT postonly=true":            "postonly applies only with order=GTC",
		base + "order=MARKET offset=1":                "offset applies only with order GTC (a resting order); this request's order is MARKET",
		base + "cancel=1000":                          "cancel applies only with order GTC (a resting order); this request's order is MARKET (the default)",
		base + "queue=front":                          "queue applies only with order GTC",
		base + "order=GTC queue=back":                 `queue "back" is not one of risk_averse, front`,
		base + "order=GTC offset=51":                  "offset 51 is not allowed: it must be a whole number of ticks from 0 to 50",
		base + "order=GTC offset=1.5":                 "offset 1.5 is not allowed",
		base + "order=GTC cancel=0":                   "cancel 0 is not allowed",
		base + "order=GTC offset=one":                 "expected a number after offset=",
		base + "order=GTC rebates=1":                  "expected true or false after rebates=",
		base + "cooldown=-1":                          "cooldown -1 is not allowed: it must be a whole number of milliseconds from 0 to 86400000",
		base + "cooldown=2.5":                         "cooldown 2.5 is not allowed",
		base + "maxentries=0":                         "maxentries 0 is not allowed: it must be a whole number from 1 to 10000",
		base + "maxentries=10001":                     "maxentries 10001 is not allowed",
		base + "cooldown=5 latency=5":                 `unexpected "latency=5"`,
		base + "order=GTC rebates=true postonly=true": `unexpected "postonly=true"`,
	} {
		_, err := ParseCode(code)
		var e *Error
		if !errors.As(err, &e) || e.Field != "strategy_code" || e.Code != CodeValidation && !strings.HasPrefix(want, "order ") || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want %q", code, err, want)
		}
	}
}
