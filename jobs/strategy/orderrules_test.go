package strategy

import (
	"context"
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
		// Re-entry control needs no resting order.
		{"side=UP entry: display_down < 0.5 exit: bid_down > 0.5 size=1 order=LIMIT rebates=false cooldown=86400000 maxentries=10000",
			"side=UP entry: display_down < 0.5 exit: bid_down > 0.5 size=1 maxloss=50 order=LIMIT cooldown=86400000 maxentries=10000"},
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
		base + "order=LIMIT rebates=true":             "rebates applies only with order GTC",
		base + "rebates=true":                         "rebates applies only with order GTC (a resting order: only maker fills earn rebates); this request's order is MARKET (the default)",
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

// TestBuiltinOrderRules: the built-in generator reads resting orders,
// re-entry control, the coin against the price to beat, time left in
// seconds and the new fields by name.
func TestBuiltinOrderRules(t *testing.T) {
	const tail = " size=100 maxloss=50 order="
	cases := []struct{ prompt, code string }{
		{"buy UP when price_up drops below 0.45, exit above 0.6; rest a bid 1 tick above, post only, cancel after 60 s, " +
			"queue at the front, include rebates, cool down 30 s, at most 3 entries",
			"side=UP entry: price_up < 0.45 exit: price_up > 0.6" + tail + "GTC postonly=true offset=1 cancel=60000 queue=front rebates=true cooldown=30000 maxentries=3"},
		{"Rest a bid at the best bid when BTC is 0.1% above the price to beat, exit when display_up above 0.6 or with 120 seconds left; " +
			"cooldown of 2 minutes, at most 3 trades",
			"side=UP entry: coin_move_pct >= 0.1 exit: display_up > 0.6 or time_remaining_s <= 120" + tail + "GTC cooldown=120000 maxentries=3"},
		{"buy DOWN when BTC is 0.2% below the price to beat and imbalance_down > 0.3, exit when price_down reaches 0.7; " +
			"post a maker order, optimistic queue, wait 30 seconds between trades",
			"side=DOWN entry: coin_move_pct <= -0.2 and imbalance_down > 0.3 exit: price_down >= 0.7" + tail + "GTC queue=front cooldown=30000"},
		{"buy UP when coin_return_60s < -0.2 with more than 60 seconds left, exit when bid_up >= 0.55; POST ONLY, no cooldown",
			"side=UP entry: coin_return_60s < -0.2 and time_remaining_s > 60 exit: bid_up >= 0.55" + tail + "GTC postonly=true"},
		{"buy UP when mid_up crosses below 0.4 in the first 300 s, exit in the last 30 seconds, once per market, GTC orders, risk-averse queue",
			"side=UP entry: mid_up crosses_below 0.4 and time_remaining_s >= 600 exit: time_remaining_s <= 30" + tail + "GTC cooldown=30000 maxentries=1"},
		{"buy when display_down is under 40%, exit when imbalance_down is below -50%, limit orders",
			"side=DOWN entry: display_down < 0.4 exit: imbalance_down < -0.5" + tail + "LIMIT cooldown=30000"},
		// "maker" where the order rests anyway is read, not refused.
		{"buy UP when price_up drops below 0.35, exit above 0.6 as a maker with GTC",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC cooldown=30000"},
		{"rest a bid below 0.35, exit above 0.6 as a maker", "side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC cooldown=30000"},
		{"rest a bid below 0.35, exit above 0.6 as makers", "side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC cooldown=30000"},
		{"rest a bid below 0.35, exit above 0.6, post-only maker", "side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC postonly=true cooldown=30000"},
		{"rest a bid below 0.35, exit above 0.6, maker only", "side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC cooldown=30000"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, GTC as a maker, post only",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail + "GTC postonly=true cooldown=30000"},
	}
	for _, tc := range cases {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code {
			t.Errorf("%q\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
	}
	// Refused honestly, saying why.
	for prompt, want := range map[string]string{
		"buy UP below 0.4, exit above 0.6, rest a bid 1.5 ticks above": "whole number of ticks from 0 to 50",
		"buy UP below 0.4, exit above 0.6, rest a bid 60 ticks above":  "whole number of ticks from 0 to 50",
		"buy UP below 0.4, exit above 0.6, cool down 2.5 ms":           "whole number of milliseconds from 0 to 86400000",
		"buy UP below 0.4, exit above 0.6, at most 0 entries":          "whole number from 1 to 10000",
		"buy UP below 0.4, exit above 0.6, cancel after 2 days":        `could not use "2"`,
		"buy UP below 0.4, exit above 0.6, post only, limit orders":    "postOnly applies only with orderType GTC",
		"buy UP below 0.4, exit above 0.6, cancel after 60 s":          "cancelAfterMs applies only with orderType GTC",
		"buy UP when BTC is 0.1% above its open, exit above 0.6":       `could not use "0.1%"`,
		"buy UP below 0.4, exit with 1000 seconds left":                "longer than a 15m market",
		"buy UP when imbalance_up > 2, exit above 0.6":                 "between -1 and 1",
		"buy UP when time_remaining_s > 50%, exit above 0.6":           "time_remaining_pct",
		// Order words the grammar cannot read are refused, not dropped:
		// read without them, "as a maker" took the book with MARKET orders.
		"buy UP below 0.4, exit above 0.6, as a maker":               `what the prompt says of "maker"`,
		"buy UP below 0.4, exit above 0.6, as makers":                `what the prompt says of "makers"`,
		"buy UP below 0.4, exit above 0.6, as a maker, limit orders": `what the prompt says of "maker"`,
		"rest a bid below 0.4, exit above 0.6, cancel unfilled bids": `what the prompt says of "cancel"`,
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want a refusal saying %q", prompt, err, want)
		}
	}
}

// TestBuiltinMakerWithRequestGTC: "as a maker" is read where the
// request's orderType makes the order rest.
func TestBuiltinMakerWithRequestGTC(t *testing.T) {
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP below 0.4, exit above 0.6, as a maker", OrderType: "GTC"}))
	if err != nil || spec.Strategy.OrderType != replay.OrderGTC {
		t.Errorf("%+v, %v; want a GTC strategy", spec.Strategy, err)
	}
}

// TestBuiltinRestingRuleNamesThePrompt: a rule of resting orders with an
// order type that does not rest is refused naming where the order type
// came from: "limit orders that cancel after 10 s" was told "this
// request's orderType is LIMIT", though the request gave none and the
// prompt said it. A request's own order type is still named as the
// request's.
func TestBuiltinRestingRuleNamesThePrompt(t *testing.T) {
	t.Parallel()
	const rest = `; for a resting order write "rest a bid" or "GTC orders"`
	for _, tc := range []struct{ prompt, order, msg string }{
		{"buy UP below 0.4 with limit orders that cancel after 10 s, exit above 0.6", "",
			`in the prompt: cancelAfterMs applies only with orderType GTC (a resting order); the prompt's "limit orders" is orderType LIMIT, which does not rest on the book` + rest},
		{"buy UP below 0.4 with limit orders, queue at the front, exit above 0.6", "",
			`in the prompt: queueModel applies only with orderType GTC (a resting order); the prompt's "limit orders" is orderType LIMIT, which does not rest on the book` + rest},
		{"buy UP below 0.4, market orders, post only, exit above 0.6", "",
			`in the prompt: postOnly applies only with orderType GTC (a resting order); the prompt's "market orders" is orderType MARKET, which does not rest on the book` + rest},
		{"buy UP below 0.4, cancel after 10 s, exit above 0.6", "",
			`in the prompt: cancelAfterMs applies only with orderType GTC (a resting order); the prompt names no order type, so it is MARKET (the default)` + rest},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt, OrderType: tc.order}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || e.Message != tc.msg {
			t.Errorf("%q:\n got %v\nwant VALIDATION_ERROR of prompt: %s", tc.prompt, err, tc.msg)
		}
	}
}

// TestBuiltinDefaultCooldown: a generated strategy waits 30 s after an
// exit unless the prompt or the request says otherwise, and "no cooldown"
// (or a request's 0) is 0, not the default.
func TestBuiltinDefaultCooldown(t *testing.T) {
	const prompt = "buy UP below 0.4, exit above 0.6"
	for _, tc := range []struct {
		prompt string
		want   int
	}{
		{prompt, DefaultReentryCooldownMs},
		{prompt + ", no cooldown", 0},
		{prompt + ", without a cool-down", 0},
		{prompt + ", cool down 10 s", 10_000},
		{prompt + ", cooldown of 0 seconds", 0},
		{prompt + " with a 1.5 minute cooldown", 90_000},
		{prompt + ", wait 1 hour after each trade", 3_600_000},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil || spec.Strategy.ReentryCooldownMs != tc.want {
			t.Errorf("%q: cooldown %d (%v), want %d", tc.prompt, spec.Strategy.ReentryCooldownMs, err, tc.want)
		}
	}
}

// TestRequestOrderSettings: the settings of re-entry control and resting
// orders are judged by the replay validator, naming the field; given,
// they win over the prompt, 0 cooldown included, and a MARKET or LIMIT
// order type drops the prompt's resting-order details.
func TestRequestOrderSettings(t *testing.T) {
	bad := []struct {
		req   Request
		code  string
		field string
	}{
		{Request{Prompt: "x", OrderType: "gtc"}, "INVALID_ORDER_TYPE", "orderType"},
		{Request{Prompt: "x", OrderSettings: OrderSettings{ReentryCooldownMs: ptr(1.5)}}, CodeValidation, "reentryCooldownMs"},
		{Request{Prompt: "x", OrderSettings: OrderSettings{ReentryCooldownMs: ptr(-1.0)}}, CodeValidation, "reentryCooldownMs"},
		{Request{Prompt: "x", OrderSettings: OrderSettings{MaxEntriesPerMarket: ptr(0.0)}}, CodeValidation, "maxEntriesPerMarket"},
		{Request{Prompt: "x", OrderSettings: OrderSettings{PostOnly: ptr(false)}}, CodeValidation, "postOnly"},
		{Request{Prompt: "x", OrderType: "LIMIT", OrderSettings: OrderSettings{LimitOffsetTicks: ptr(1.0)}}, CodeValidation, "limitOffsetTicks"},
		{Request{Prompt: "x", OrderType: "GTC", OrderSettings: OrderSettings{LimitOffsetTicks: ptr(51.0)}}, CodeValidation, "limitOffsetTicks"},
		{Request{Prompt: "x", OrderType: "GTC", OrderSettings: OrderSettings{CancelAfterMs: ptr(0.0)}}, CodeValidation, "cancelAfterMs"},
		{Request{Prompt: "x", OrderType: "GTC", OrderSettings: OrderSettings{QueueModel: "front"}}, CodeValidation, "queueModel"},
	}
	for _, tc := range bad {
		req := tc.req
		var e *Error
		if err := req.Normalize(); !errors.As(err, &e) || e.Code != tc.code || e.Field != tc.field {
			t.Errorf("%+v: %v, want %s on %s", tc.req, err, tc.code, tc.field)
		}
	}

	const prompt = "buy UP below 0.4, exit above 0.6, rest a bid 2 ticks above, post only, queue at the front, cool down 10 s, at most 5 trades"
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Prompt: prompt}, " order=GTC postonly=true offset=2 queue=front cooldown=10000 maxentries=5"},
		{Request{Prompt: prompt, OrderType: "GTC", OrderSettings: OrderSettings{ReentryCooldownMs: ptr(0.0), MaxEntriesPerMarket: ptr(1.0),
			PostOnly: ptr(false), LimitOffsetTicks: ptr(0.0), CancelAfterMs: ptr(5000.0), QueueModel: "RISK_AVERSE", IncludeRebates: ptr(true)}},
			" order=GTC cancel=5000 rebates=true maxentries=1"},
		{Request{Prompt: prompt, OrderType: "MARKET"}, " order=MARKET cooldown=10000 maxentries=5"},
		{Request{Prompt: "buy UP below 0.4, exit above 0.6", OrderType: "GTC", OrderSettings: OrderSettings{PostOnly: ptr(true)}},
			" order=GTC postonly=true cooldown=30000"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, tc.req))
		if err != nil {
			t.Errorf("%+v: %v", tc.req, err)
			continue
		}
		if got := FormatCode(spec.Rules); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%+v:\n got %s\nwant ...%s", tc.req, got, tc.want)
		}
	}
}

// TestDescribeOrderRules: the explanation says how orders rest and how the
// strategy re-enters.
func TestDescribeOrderRules(t *testing.T) {
	got := Describe(gtcRules(t))
	for _, want := range []string{"Orders rest on the book 1 tick above the best bid to buy and below the best ask to sell, post-only, cancelled after 1 min; queue model FRONT.",
		"Estimated maker rebates count in the pnl.", "After an exit it waits 30 s before entering again.", "At most 3 entries a market."} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe: %s\nlacks %q", got, want)
		}
	}
}

// TestDescribeDurations: the explanation writes a duration of whole
// seconds, minutes or hours in those units ("waits 30 s", where it wrote
// "waits 30000 ms"), and any other in ms; the generated strategy's
// default cooldown reads 30 s.
func TestDescribeDurations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		latency, cancel, cooldown int
		want                      []string
	}{
		{250, 1500, 30_000, []string{"execute 250 ms after", "cancelled after 1500 ms;", "waits 30 s before"}},
		{2000, 90_000, 120_000, []string{"execute 2 s after", "cancelled after 90 s;", "waits 2 min before"}},
		{60_000, 3_600_000, 86_400_000, []string{"execute 1 min after", "cancelled after 1 h;", "waits 24 h before"}},
	} {
		r := gtcRules(t)
		r.Strategy.LatencyMs = c.latency
		r.Strategy.CancelAfterMs = c.cancel
		r.Strategy.ReentryCooldownMs = c.cooldown
		got := Describe(r)
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("latency %d, cancel %d, cooldown %d ms: %s\nlacks %q", c.latency, c.cancel, c.cooldown, got, want)
			}
		}
	}
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP below 0.4, exit above 0.6"}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(spec.Explanation, "After an exit it waits 30 s before entering again.") {
		t.Errorf("the default cooldown explained: %s", spec.Explanation)
	}
}

// TestBuiltinNotesDroppedResting: a request's MARKET or LIMIT orderType
// wins over the prompt's resting order, and the explanation says which of
// the prompt's details went with it (they were dropped without a word).
func TestBuiltinNotesDroppedResting(t *testing.T) {
	t.Parallel()
	const prompt = "buy UP below 0.4, exit above 0.6; rest a bid 1 tick above, post only, cancel after 10 s, queue at the front"
	for _, order := range []string{replay.OrderLimit, replay.OrderMarket} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: prompt, OrderType: order}))
		if err != nil {
			t.Fatalf("%s: %v", order, err)
		}
		if st := spec.Strategy; st.OrderType != order || st.PostOnly || st.QueueModel != "" || st.CancelAfterMs != 0 || st.LimitOffsetTicks != 0 {
			t.Errorf("%s: strategy %+v keeps resting details", order, st)
		}
		for _, want := range []string{"a resting (GTC) order", "1 tick above the best bid", "post only", "cancel after 10 s", "queue at the front",
			"orderType " + order + " wins over the prompt"} {
			if !strings.Contains(spec.Explanation, want) {
				t.Errorf("%s: explanation %q does not say %q", order, spec.Explanation, want)
			}
		}
	}
	// Nothing dropped, nothing said: GTC keeps them, and a prompt
	// without them loses none.
	for _, tc := range []struct{ prompt, order string }{{prompt, replay.OrderGTC}, {"buy UP below 0.4, exit above 0.6", replay.OrderLimit}} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt, OrderType: tc.order}))
		if err != nil || strings.Contains(spec.Explanation, "dropped") {
			t.Errorf("%q with %s: %q, %v", tc.prompt, tc.order, spec.Explanation, err)
		}
	}
}
