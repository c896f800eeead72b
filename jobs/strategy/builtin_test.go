package strategy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

func normalized(t *testing.T, req Request) Request {
	t.Helper()
	if err := req.Normalize(); err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	return req
}

func ptr[T any](v T) *T { return &v }

// TestBuiltinPhrases pins what the grammar makes of plain phrases, as the
// strategy code of the result (BTC 15m markets unless the case says).
func TestBuiltinPhrases(t *testing.T) {
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000" // DefaultReentryCooldownMs
	cases := []struct{ prompt, code string }{
		// DESIGN 8's phrase.
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 20% left",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_pct <= 20" + tail},
		{"Buy DOWN when price_down falls below 0.3 with more than 25% left, take profit at 0.55 and stop loss of 20%",
			"side=DOWN entry: price_down < 0.3 and time_remaining_pct > 25 exit: price_down >= 0.55 size=100 maxloss=20 order=MARKET cooldown=30000"},
		{"buy up under 40% with at least 30% of the market left. Take profit at 20%. Stop loss at 0.2. 250 shares, limit orders",
			"side=UP entry: price_up < 0.4 and time_remaining_pct >= 30 exit: price_up >= 0.48 or price_up <= 0.2 size=250 maxloss=50 order=LIMIT cooldown=30000"},
		{"buy up when BTC price crosses above 95,000 on 15m markets, sell when time remaining < 10",
			"side=UP entry: coin_price crosses_above 95000 exit: time_remaining_pct < 10" + tail},
		{"go long when up is below 0.4; exit when up rises above 0.5",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.5" + tail},
		{"buy UP when price_up drops below 0.35, exit with 3 minutes left",
			"side=UP entry: price_up < 0.35 exit: time_remaining_s <= 180" + tail},
		{"buy when price_down is at most 0.45 in the first 50%, get out when price_down reaches 0.6",
			"side=DOWN entry: price_down <= 0.45 and time_remaining_pct >= 50 exit: price_down >= 0.6" + tail},
		{"buy the DOWN side when spread is over 0.2; close in the last 10%",
			"side=DOWN entry: spread > 0.2 exit: time_remaining_pct <= 10" + tail},
		{"BUY UP WHEN PRICE_UP CROSSES BELOW 0.5 AND TIME_REMAINING_PCT > 60, EXIT WHEN PRICE_UP CROSSES ABOVE 0.55",
			"side=UP entry: price_up crosses_below 0.5 and time_remaining_pct > 60 exit: price_up crosses_above 0.55" + tail},
		{"buy up < 0.3 take profit at 0.5 5% stop loss",
			"side=UP entry: price_up < 0.3 exit: price_up >= 0.5 size=100 maxloss=5 order=MARKET cooldown=30000"},
		// Time left said with "time" and "remains" ("remain"), where
		// "less than 10%" was read as the side's price (price_up < 0.1)
		// and "more than 50%" as price_up > 0.5.
		{"buy UP under 0.35, exit above 0.6 or when less than 10% time remains",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_pct < 10" + tail},
		{"buy UP when price_up < 0.35 and more than 50% of time remains, exit at price_up > 0.6",
			"side=UP entry: price_up < 0.35 and time_remaining_pct > 50 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 while at least 30% of the time is left, sell above 0.6 or when only 3 minutes remain",
			"side=UP entry: price_up < 0.4 and time_remaining_pct >= 30 exit: price_up > 0.6 or time_remaining_s <= 180" + tail},
		// "time left" and "remaining time" name time_remaining_pct as
		// "time remaining" does, where the comparison went to the side's
		// price (price_up < 0.1).
		{"buy UP below 0.35, exit above 0.6 or when time left is under 10%",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_pct < 10" + tail},
		{"buy UP below 0.35 while the remaining time is more than 50%, exit above 0.6 or when remaining time is less than 10%",
			"side=UP entry: price_up < 0.35 and time_remaining_pct > 50 exit: price_up > 0.6 or time_remaining_pct < 10" + tail},
		// "cut losses" starts the exit conditions as "stop loss" does,
		// where before the exit word its comparison was an entry
		// condition (price_up < 0.35 and price_up < 0.2) and no exit.
		{"buy UP below 0.35, cut losses below 0.2, take profit at 0.6",
			"side=UP entry: price_up < 0.35 exit: price_up < 0.2 or price_up >= 0.6" + tail},
		{"buy UP below 0.35, cut your losses below 0.2, exit above 0.6",
			"side=UP entry: price_up < 0.35 exit: price_up < 0.2 or price_up > 0.6" + tail},
		// No side named, and the conditions read DOWN's price by its
		// bare name: DOWN is bought, as with "price_down", where UP was
		// (bought when DOWN is cheap, UP is dear).
		{"buy when down is below 0.3, exit above 0.5",
			"side=DOWN entry: price_down < 0.3 exit: price_down > 0.5" + tail},
		// The entry chooses the side, not an exit on DOWN's price: UP is
		// bought when UP is cheap, and sold when DOWN is dear.
		{"buy when up is below 0.4, exit when down is above 0.7",
			"side=UP entry: price_up < 0.4 exit: price_down > 0.7" + tail},
		{"buy when up is below 0.4, exit when price_down is above 0.7",
			"side=UP entry: price_up < 0.4 exit: price_down > 0.7" + tail},
		// "returns" and "gains" after "it" or "the price" are verbs, not
		// the position's profit (refused: TestBuiltinRefuses).
		{"buy UP when it returns above 0.5, exit when the price gains over 0.8",
			"side=UP entry: price_up > 0.5 exit: price_up > 0.8" + tail},
		// A buy after the exit with no condition of its own says what a
		// strategy does anyway (a buy with one is refused: TestBuiltinRefuses).
		{"buy UP below 0.4, sell above 0.6, then buy UP again after a 10 s cooldown",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET cooldown=10000"},
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
		if spec.Coin != store.BTC || spec.MarketType != store.M15 || !strings.HasPrefix(spec.Explanation, "Buy "+spec.Strategy.Side+" when ") {
			t.Errorf("%q: coin %s type %s explanation %q", tc.prompt, spec.Coin, spec.MarketType, spec.Explanation)
		}
	}
}

// TestBuiltinRefuses: what the grammar cannot read fully is refused with
// a reason, as a VALIDATION_ERROR of the prompt.
func TestBuiltinRefuses(t *testing.T) {
	cases := []struct{ prompt, msg string }{
		// Numbers in words are numbers the grammar does not read: they were
		// dropped without a word (a stop loss of ten percent left 50).
		{"buy UP when price_up < 0.4, exit above 0.6, stop loss of ten percent", `could not use "ten"`},
		{"buy UP when price_up < 0.4, exit above 0.6, two hundred shares", `could not use "two"`},
		{"buy UP when price_up < 0.4, exit above 0.6, at most two entries per market", `could not use "two"`}, // "one entry per market" is read: TestBuiltinNoReentryIsOneEntry
		{"buy UP when price_up < 0.4 with more than half left, exit above 0.6", `could not use "half"`},
		{"buy UP when price_up < 0.4 in the last quarter, exit above 0.6", `could not use "quarter,"`},
		{"buy UP when price_up < 0.4, exit above 0.6, double the size", `could not use "double"`},
		{"buy UP when price_up < 0.4, exit above 0.6, cooldown of a minute", `could not use "a minute"`},
		{"buy UP when price_up < 0.4, exit above 0.6 with an hour left", `could not use "an hour"`},
		// A side chosen market by market is no side the strategy names:
		// UP was bought without a word.
		{"buy the favorite when it is below 0.7, exit above 0.9", `cannot choose the side market by market ("favorite")`},
		{"buy the underdog below 0.2, exit above 0.4", `cannot choose the side market by market ("underdog")`},
		{"buy whichever side is below 0.2, exit above 0.4", `cannot choose the side market by market ("whichever side")`},
		{"buy either side below 0.2, exit above 0.4", `cannot choose the side market by market ("either side")`},
		{"buy the cheaper side below 0.2, exit above 0.4", `cannot choose the side market by market ("the cheaper side")`},
		// A comparison of the position's profit or loss is no field's:
		// its number went to the side's price ("profit reaches 20%" was
		// price_up >= 0.2, an exit at once after an entry below 0.35).
		{"buy UP below 0.35, exit when profit reaches 20%", `compares the position's "profit"`},
		{"buy UP below 0.35, exit when loss exceeds 20%", `compares the position's "loss"`},
		{"buy UP below 0.35, exit when my gains are above 10%", `compares the position's "gains"`},
		{"buy UP below 0.35, sell when the pnl is over 5", `compares the position's "pnl"`},
		// A field named but read by no condition: its number went to the
		// side's price ("spread widens above 0.1" was price_up > 0.1).
		{"buy UP when the spread widens above 0.1, exit above 0.6", `names "spread" but no condition reads it`},
		{"buy UP when price_up is more than 0.1 below price_down, exit above 0.6", `names "price_down" but no condition reads it`},
		// Entry conditions that can never hold together: the strategy
		// would never trade ("more than 0.5 left" read as price_up > 0.5).
		{"buy UP when price_up < 0.4 with more than 0.5 left, exit above 0.6", "price_up < 0.4 and price_up > 0.5 can never hold at once"},
		{"buy UP when price_up < 0.4 and price_up >= 0.4, exit above 0.6", "price_up < 0.4 and price_up >= 0.4 can never hold at once"},
		{"buy DOWN when spread > 0.2 and spread < 0.1, exit above 0.6", "spread > 0.2 and spread < 0.1 can never hold at once"},
		// An exit "with more than 20% left" exits at once after any entry
		// made earlier than that: it was read as time_remaining_pct > 20.
		{"buy UP when price_up < 0.4, exit when price_up is above 0.6 with more than 20% left", "exits as soon as"},
		{"buy UP when price_up < 0.4, exit above 0.6 with at least 5 minutes left", "exits as soon as"},
		// Two order types named: one was kept without a word.
		{"buy UP when price_up < 0.4, exit above 0.6, use market orders for entry and limit orders for exit", "names MARKET and LIMIT orders"},
		{"buy UP when price_up < 0.4, exit above 0.6, post a maker order, limit orders", "names GTC and LIMIT orders"},
		{"buy UP when the RSI is below 30, exit above 70", `cannot use "rsi"`},
		{"buy UP when price_up drops below 0.35 and volume spikes, exit above 0.6", `cannot use "volume"`},
		{"short UP when it is above 0.7", "strategies only buy"},
		{"buy UP and buy DOWN when price_up < 0.5, exit above 0.6", "names both sides"},
		{"buy UP and DOWN when price_up < 0.5, exit above 0.6", "names both sides"},
		{"buy both sides when price_up < 0.5, exit above 0.6", "names both sides"},
		{"buy UP when price_up is below 35, exit above 0.6", "for 35 cents write 0.35 (or 35%)"},
		{"buy UP below 0.3, exit at 7", `the prompt's 7 is more than 1`}, // "exit at" a price: TestBuiltinReadsBuyAtSellAt
		// A number with a magnitude suffix: "$100k" was read as 100, the
		// "k" dropped without a word (coin_price > 100, always true).
		{"buy UP when BTC price above $100k, exit above 0.6", `could not use "$100k,"`},
		{"buy UP when BTC price is above 95.5K, exit above 0.6", `could not use "95.5K,"`},
		{"something vague about making money", "does not say when to enter"},
		{"buy UP when price_up drops below 0.35", "does not say when to exit"},
		{"buy UP below 0.3, take profit at 60", "prices are between 0 and 1"},
		{"buy UP when coin price rises above 5%, exit above 0.6", "cannot be expressed"},
		{"buy UP when coin price is 5% above its start, exit above 0.6", `could not use "5%"`},
		{"buy UP when time remaining is above 0.5, take profit at 20%", "needs an entry price"},
		// 50% above 0.9 is 1.35, which no price reaches: it was the exit
		// price 0.99, explained as "50% above the entry threshold 0.9".
		{"buy UP below 0.9, exit above 0.6, take profit at 50%", "1.35"},
		// A buy after the exit word: its comparison was read as an exit
		// (price_up < 0.3, which exits at once after most entries).
		{"buy UP below 0.4, exit above 0.6. buy UP below 0.3", "buy after"},
		{"buy UP when price_up < 0.4, sell above 0.6, then buy UP again when price_up < 0.4", "buy after"},
		{"buy UP below 0.3, stop loss of 150%", "out of range"},
		{"buy UP below 0.3, exit with 20 minutes left", "longer than a 15m market"},
	}
	for _, tc := range cases {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.msg)
		}
	}
}

func TestBuiltinPresets(t *testing.T) {
	for _, p := range presets() {
		req := normalized(t, Request{Prompt: "use the preset", Preset: p.name, Coin: "eth", MarketType: "1h"})
		spec, err := Builtin{}.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		want := Rules{Coin: store.ETH, MarketType: store.H1, Strategy: replay.Strategy{Side: p.side, EntryConditions: p.entry,
			ExitConditions: p.exit, PositionSize: DefaultPositionSize, MaxLossPercent: p.maxLoss, OrderType: replay.OrderMarket,
			ReentryCooldownMs: DefaultReentryCooldownMs}}
		if !reflect.DeepEqual(spec.Rules, want) {
			t.Errorf("%s: %+v\nwant %+v", p.name, spec.Rules, want)
		}
		if !strings.Contains(spec.Explanation, "Built from the "+p.name+" preset") {
			t.Errorf("%s: explanation %q", p.name, spec.Explanation)
		}
	}
	// The prompt's exit replaces the preset's; the preset's entry and
	// stop loss stay; explicit request values win over both.
	req := normalized(t, Request{Prompt: "exit above 0.7", Preset: "mean_reversion", PositionSize: ptr(7.0), OrderType: "LIMIT"})
	spec, err := Builtin{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	const want = "coin=BTC type=15m side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up > 0.7 size=7 maxloss=25 order=LIMIT cooldown=30000"
	if got := FormatCode(spec.Rules); got != want {
		t.Errorf("mixed:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(spec.Explanation, "entry conditions come from the mean_reversion preset") {
		t.Errorf("explanation %q", spec.Explanation)
	}
	// The presets are written for UP: on the DOWN side their conditions
	// are read of DOWN's price, so the idea stays the preset's. Read of
	// UP's price they made another strategy (mean_reversion's take profit
	// at price_up >= 0.5 a loss for DOWN; dip_buying's exits, beside a
	// DOWN entry of the prompt's, held at the entry and exited at once).
	for _, tc := range []struct{ preset, prompt, code string }{
		{"mean_reversion", "buy DOWN",
			"side=DOWN entry: price_down < 0.35 and time_remaining_pct > 20 exit: price_down >= 0.5 or time_remaining_pct <= 10 size=100 maxloss=25"},
		{"dip_buying", "buy DOWN when price_down < 0.3",
			"side=DOWN entry: price_down < 0.3 exit: price_down >= 0.55 or price_down <= 0.25 size=100 maxloss=30"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt, Preset: tc.preset}))
		if err != nil {
			t.Fatalf("%s %q: %v", tc.preset, tc.prompt, err)
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); !strings.HasPrefix(got, tc.code) {
			t.Errorf("%s %q:\n got %s\nwant %s ...", tc.preset, tc.prompt, got, tc.code)
		}
		if !strings.Contains(spec.Explanation, "DOWN") {
			t.Errorf("%s %q: explanation %q says nothing of the DOWN side", tc.preset, tc.prompt, spec.Explanation)
		}
	}
}

func TestBuiltinRequestWins(t *testing.T) {
	req := normalized(t, Request{Prompt: "buy UP below 0.4 exit above 0.6, 500 shares, stop loss of 10%, market orders",
		PositionSize: ptr(20.0), MaxLossPercent: ptr(30.0), OrderType: "LIMIT"})
	spec, err := Builtin{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Strategy
	if s.PositionSize != 20 || s.MaxLossPercent != 30 || s.OrderType != "LIMIT" {
		t.Errorf("request values lost: %+v", s)
	}
	again, _ := Builtin{}.Generate(context.Background(), req)
	if !reflect.DeepEqual(spec, again) {
		t.Error("the built-in generator is not deterministic")
	}
}

func TestRequestNormalize(t *testing.T) {
	cases := []struct {
		req          Request
		code, field  string
		wantCoin     store.Coin
		wantType     store.MarketType
		wantMarketsN int
	}{
		{req: Request{Prompt: "x"}, wantCoin: store.BTC, wantType: store.M15, wantMarketsN: 10},
		{req: Request{Prompt: " x ", Coin: "sol", MarketType: "1h", MarketCount: ptr(100)}, wantCoin: store.SOL, wantType: store.H1, wantMarketsN: 100},
		{req: Request{Prompt: "x", MarketType: "24hr"}, wantCoin: store.BTC, wantType: store.H24, wantMarketsN: 10},
		{req: Request{Prompt: "   "}, code: CodeValidation, field: "prompt"},
		{req: Request{Prompt: strings.Repeat("é", MaxPromptLength+1)}, code: CodeValidation, field: "prompt"},
		{req: Request{Prompt: "x", Preset: "yolo"}, code: CodeValidation, field: "preset"},
		{req: Request{Prompt: "x", Coin: "DOGE"}, code: CodeValidation, field: "coin"},
		{req: Request{Prompt: "x", MarketType: "2h"}, code: CodeValidation, field: "marketType"},
		{req: Request{Prompt: "x", Coin: "ETH", MarketType: "4h"}, code: CodeValidation, field: "marketType"},
		{req: Request{Prompt: "x", MarketCount: ptr(0)}, code: CodeValidation, field: "marketCount"},
		{req: Request{Prompt: "x", MarketCount: ptr(101)}, code: CodeValidation, field: "marketCount"},
		{req: Request{Prompt: "x", PositionSize: ptr(0.5)}, code: CodeValidation, field: "positionSize"},
		{req: Request{Prompt: "x", PositionSize: ptr(10001.0)}, code: CodeValidation, field: "positionSize"},
		{req: Request{Prompt: "x", MaxLossPercent: ptr(0.0)}, code: CodeValidation, field: "maxLossPercent"},
		{req: Request{Prompt: "x", MaxLossPercent: ptr(100.5)}, code: CodeValidation, field: "maxLossPercent"},
		// The specific code first, whatever else is wrong.
		{req: Request{Prompt: "", OrderType: "market"}, code: "INVALID_ORDER_TYPE", field: "orderType"},
	}
	for _, tc := range cases {
		req := tc.req
		err := req.Normalize()
		if tc.code == "" {
			if err != nil || req.Coin != tc.wantCoin || req.MarketType != tc.wantType || req.Count() != tc.wantMarketsN {
				t.Errorf("%+v: %v, %s %s %d", tc.req, err, req.Coin, req.MarketType, req.Count())
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Field != tc.field || e.Message == "" {
			t.Errorf("%+v: %v, want %s on %s", tc.req, err, tc.code, tc.field)
		}
	}
}

// TestBuiltinTimeLeftOfAMarketsLength: an amount of time left that reads
// like a market type ("5 minutes", "15 minutes", "1 hour", "4 hours") is
// time left, not the market phrase "on 15m markets" that the request
// settles: it used to be blanked as such, so "exit with 5 minutes left"
// lost its time exit without a word while "with 3 minutes left" kept it.
// A bare duration the grammar has no phrase for ("after 5 minutes") is
// refused, not dropped.
func TestBuiltinTimeLeftOfAMarketsLength(t *testing.T) {
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	cases := []struct{ prompt, marketType, code string }{
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 5 minutes left", "",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 300" + tail},
		{"buy UP when price_up drops below 0.35, exit above 0.6 or in the last 5 minutes", "",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 300" + tail},
		{"buy UP when price_up drops below 0.35 with more than 5 min left, exit above 0.6", "",
			"side=UP entry: price_up < 0.35 and time_remaining_s > 300 exit: price_up > 0.6" + tail},
		{"buy UP when price_up drops below 0.35 in the first 5 minutes, exit above 0.6", "",
			"side=UP entry: price_up < 0.35 and time_remaining_s >= 600 exit: price_up > 0.6" + tail},
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 15 minutes left", "1h",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 900" + tail},
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 1 hour left", "4h",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 3600" + tail},
		{"buy UP when price_up drops below 0.35, exit above 0.6 or in the last 4 hours", "24h",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 14400" + tail},
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 1.5 minutes left", "",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 or time_remaining_s <= 90" + tail},
		// The market phrases themselves are still read (they choose the
		// request's markets: TestPromptChoosesItsMarkets).
		{"buy UP on 5m markets when price_up drops below 0.35, exit above 0.6", "",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail},
		{"buy UP when price_up drops below 0.35 on 15-minute markets, exit above 0.6 on 15m windows", "",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6" + tail},
	}
	for _, tc := range cases {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt, MarketType: store.MarketType(tc.marketType)}))
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code {
			t.Errorf("%q\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
	}
	for prompt, want := range map[string]string{
		// A time after nothing named: what it counts from is said.
		"buy UP when price_up drops below 0.35, exit above 0.6 or after 5 minutes": `cannot tell what "after 5 minutes" counts from`,
		"buy UP when price_up drops below 0.35 for 15 minutes, exit above 0.6":     "could not use",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", prompt, err, want)
		}
	}
}

// TestBuiltinRefusesWhatItWouldTurnAround: a negation, or "or" between
// entry conditions (which must all hold), has no phrase in the grammar;
// reading the comparisons without it made the opposite strategy ("not
// above 0.35" became price_up > 0.35, "don't use limit orders" LIMIT
// orders, "below 0.35 or price_down above 0.7" both at once). They are
// refused; "or" between exit conditions, which any one triggers, is read.
func TestBuiltinRefusesWhatItWouldTurnAround(t *testing.T) {
	cases := []struct{ prompt, msg string }{
		{"buy UP when price_up is not above 0.35, exit above 0.6", `cannot read "not"`},
		{"buy UP when price_up drops below 0.35, don't exit above 0.6, exit below 0.1", `cannot read "don't"`},
		{"buy UP when price_up drops below 0.35, exit above 0.6, don't use limit orders", `cannot read "don't"`},
		{"buy UP when price_up drops below 0.35, exit above 0.6, never with fees", `cannot read "never"`},
		{"buy UP when price_up drops below 0.35 or price_down rises above 0.7, exit above 0.6", `"or" between entry conditions`},
		{"buy UP when price_up < 0.35, or when spread > 0.2, exit above 0.6", `"or" between entry conditions`},
		// "unless" and "except" negate what follows: read without them,
		// "unless price_up is above 0.4" was price_up > 0.4.
		{"buy UP unless price_up is above 0.4, exit above 0.6", `cannot read "unless`},
		{"buy UP except when price_up is above 0.4, exit above 0.6", `cannot read "except`},
		// "and" between exit comparisons asks for both at once, which exit
		// conditions (any one exits) cannot say: it was read as "or".
		{"buy UP when price_up < 0.4, exit when price_up > 0.6 and time_remaining_pct < 50", `"and" between exit conditions`},
		{"buy UP when price_up < 0.4, exit above 0.6 and when spread > 0.1", `"and" between exit conditions`},
	}
	for _, tc := range cases {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.msg)
		}
	}
	// Still read: "or" among exits, and between entry and exit phrases.
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP when price_up drops below 0.35 and spread < 0.1, exit above 0.6 or below 0.2 or with 20% left",
			"side=UP entry: price_up < 0.35 and spread < 0.1 exit: price_up > 0.6 or price_up < 0.2 or time_remaining_pct <= 20" + tail},
		{"buy UP under 0.4, take profit at 0.6 or stop loss at 0.2",
			"side=UP entry: price_up < 0.4 exit: price_up >= 0.6 or price_up <= 0.2" + tail},
		// "and" between separate exit rules lists them: any one exits.
		{"buy UP under 0.4, take profit at 0.6 and stop loss at 0.2",
			"side=UP entry: price_up < 0.4 exit: price_up >= 0.6 or price_up <= 0.2" + tail},
		{"buy UP under 0.4, exit above 0.6 and stop loss at 0.2",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 or price_up <= 0.2" + tail},
		{"buy UP under 0.4, exit above 0.6 and below 0.2",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 or price_up < 0.2" + tail},
		// "stop loss when" and "take profit when" start exits as "exit"
		// does: the stop was an entry condition (price_up < 0.4 and
		// price_up < 0.2).
		{"buy UP when price_up < 0.4, stop loss when price_up falls below 0.2, exit above 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up < 0.2 or price_up > 0.6" + tail},
		{"buy UP when price_up < 0.4, take profit when price_up reaches 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up >= 0.6" + tail},
		{"buy UP when price_up < 0.4 and cash out above 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"with no stop loss, buy UP when price_up < 0.4, exit above 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		// "is left" reads as "left": "more than 20% is left" was
		// price_up > 0.2.
		{"buy UP when price_up < 0.4 and more than 20% is left, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct > 20 exit: price_up > 0.6" + tail},
		{"buy UP when price_up < 0.4, exit above 0.6 or when 40% of the market is left",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 40" + tail},
		{"buy UP when price_up < 0.4, exit above 0.6 or with less than 20% left",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct < 20" + tail},
		{"buy UP when price_up < 0.4, exit above 0.6, limit orders, and place limit orders",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=LIMIT cooldown=30000"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, no cooldown, without fees",
			"side=UP entry: price_up < 0.35 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET fees=none"},
	})
}

// TestBuiltinRefusesImpossibleValues: a price below 0 (or a share of the
// market outside 0-100) makes a condition that can never hold; it was
// read as written ("drops below -0.2": price_up < -0.2, a strategy that
// never trades) while 1.5 was refused.
func TestBuiltinRefusesImpossibleValues(t *testing.T) {
	for _, tc := range []struct{ prompt, msg string }{
		{"buy UP when price_up drops below -0.2, exit above 0.6", "price_up is a price between 0 and 1: -0.2 is below 0"},
		{"buy DOWN when price_down < -5%, exit above 0.6", "price_down is a price between 0 and 1: -5% is below 0"},
		{"buy UP when spread > -0.1, exit above 0.6", "spread is a price between 0 and 1"},
		{"buy UP when time_remaining_pct > -10 and price_up < 0.4, exit above 0.6", "time_remaining_pct is a percentage from 0 to 100: -10 is outside"},
		{"buy UP when time_remaining_pct < 150 and price_up < 0.4, exit above 0.6", "time_remaining_pct is a percentage from 0 to 100: 150 is outside"},
		// Sizes and fee exponents out of range are said as the user wrote
		// them, not as the validator names its fields ("the prompt gives
		// positionSize 0.5 is out of range").
		{"buy UP when price_up < 0.35, exit above 0.6, 0 shares", "0 shares is out of range: a trade must be between 1 and 10000 shares"},
		{"buy UP when price_up < 0.35, exit above 0.6, 0.5 shares", "0.5 shares is out of range: a trade must be between 1 and 10000 shares"},
		{"buy UP when price_up < 0.35, exit above 0.6, 20000 shares", "20000 shares is out of range: a trade must be between 1 and 10000 shares"},
		{"buy UP when price_up < 0.35, exit above 0.6, fee rate 7%, fee exponent 9", "a fee exponent of 9 is not allowed: it must be a whole number from 1 to 4"},
		{"buy UP when price_up < 0.35, exit above 0.6, fee rate 7%, fee exponent 1.5", "a fee exponent of 1.5 is not allowed: it must be a whole number from 1 to 4"},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.msg)
		}
	}
	// Negative values stay where they mean something.
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP when coin_return_60s < -0.2 and imbalance_up > -0.5, exit above 0.6"}))
	if err != nil || FormatCode(Rules{Strategy: spec.Strategy}) != "side=UP entry: coin_return_60s < -0.2 and imbalance_up > -0.5 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET cooldown=30000" {
		t.Errorf("negative returns and imbalances: %v %s", err, FormatCode(Rules{Strategy: spec.Strategy}))
	}
}

// TestBuiltinReadsCents: traders write prices in cents ("below 40c",
// "under 40 cents", "40¢"), and an amount with its cents unit on a price
// is unambiguous: it was refused ("for 40c write 0.4"), and is read as the
// price it is. The unit of a range's upper bound is its lower bound's too
// ("between 40 and 60 cents"). A bare number on a price stays refused, and
// cents are never the coin's price, a fee rate or a field of another unit.
func TestBuiltinReadsCents(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP below 40c, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP under 40 cents, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP below 40¢, exit above 60¢", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP when price_up drops below 95 Cents, exit above 0.99", "side=UP entry: price_up < 0.95 exit: price_up > 0.99" + tail},
		{"buy UP between 40 and 60 cents, exit above 0.75", "side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy UP when price_up is between 40c and 60c, exit above 0.75", "side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy DOWN when price_down drops below 35¢ and bid_down > 30c and spread < 5c, exit above 60¢",
			"side=DOWN entry: price_down < 0.35 and bid_down > 0.3 and spread < 0.05 exit: price_down > 0.6" + tail},
		{"buy UP when price_up < 40.5c, exit above 0.6", "side=UP entry: price_up < 0.405 exit: price_up > 0.6" + tail},
		{"buy UP below 0.3, stop loss at 20c, take profit at 60 cents", "side=UP entry: price_up < 0.3 exit: price_up <= 0.2 or price_up >= 0.6" + tail},
		{"buy UP on BTC at 40c, exit at 60c or at 20c", "side=UP entry: price_up <= 0.4 exit: price_up >= 0.6 or price_up <= 0.2" + tail},
		// A coin named elsewhere in the sentence is not what is compared:
		// the side's price is.
		{"buy UP on BTC when it drops below 40c, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy BTC UP when it's under 40 cents, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP on BTC below 40c, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP when BTC price is above 95000 and price_up < 40c, exit above 0.6", "side=UP entry: coin_price > 95000 and price_up < 0.4 exit: price_up > 0.6" + tail},
	})
	for _, tc := range []struct{ prompt, msg string }{
		// A bare number on a price is no price: it says what to write.
		{"buy UP below 40, exit above 0.6", "price_up is a price between 0 and 1, and the prompt's 40 is more than 1: for 40 cents write 0.4 (or 40%)"},
		// Never the coin's price, even by a verb of its own.
		{"buy UP when BTC drops below 40c, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "40c"`},
		{"buy UP when ETH is above 95c, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "95c"`},
		// A range in two units says which is meant nowhere.
		{"buy UP between 40% and 60 cents, exit above 0.75", `"between 40% and 60 cents" writes its bounds in different units: write both the same way ("between 40c and 60c", "between 40% and 60%")`},
		{"buy UP between $0.4 and 60 cents, exit above 0.75", `"between $0.4 and 60 cents" writes one bound in dollars and the other in cents: write both the same way ("between 0.4 and 0.6", "between 40c and 60c")`},
		{"buy UP between 0.4 and 60 cents, exit above 0.75", `the built-in generator reads prices in dollars, between 0 and 1, not in cents (0.35 for 35 cents): "0.4 cents" is not an amount of cents it can read; write the price in dollars`},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || e.Message != tc.msg {
			t.Errorf("%q:\n got %v\nwant VALIDATION_ERROR of prompt: %s", tc.prompt, err, tc.msg)
		}
	}
}

// TestBuiltinRefusalHints pins what a refusal of a number says: what the
// field takes and what the prompt wrote, and a number to write instead
// only when the prompt evidently meant it. A price above 1 was answered
// "did you mean" its hundredth whatever it was (950 "did you mean 9.5",
// itself no price; $95 "0.95"), a price in cents was refused as if the
// unit were not there ("95c": "did you mean 0.95 (or 95%)?") or read
// without it ("0.95c" as 0.95, "BTC price above 95c" as 95 dollars), a
// take profit was told to be given "as a stop loss", and 150% was said as
// 150 or 1.5. 100 was suggested as 100 cents ("stop loss at 1" exits at
// once), and a fee rate or imbalance in cents was told the price to write.
func TestBuiltinRefusalHints(t *testing.T) {
	t.Parallel()
	const (
		entry = "buy UP when price_up drops below "
		exit  = ", exit above 0.99"
	)
	for _, tc := range []struct{ prompt, msg string }{
		// Amounts in cents that are no price anyone writes so
		// (TestBuiltinReadsCents reads those that are).
		{"buy UP below 0.3, stop loss at 100c", `the built-in generator reads prices in dollars, between 0 and 1, not in cents (0.35 for 35 cents): "100c" is a whole dollar, where prices end`},
		// A fee rate or a field that is no price, in cents: what it
		// takes, not a price to write.
		{"buy UP when price_up < 0.4, exit above 0.6, fee rate 2c", `a fee rate is a rate, not an amount in cents: the built-in generator cannot use "2c"; ` +
			`write it as a percentage ("fee rate 7%") or a fraction ("fee rate 0.07")`},
		{"buy UP when price_up < 0.4, exit above 0.6, with a 2 cents taker fee", `a fee rate is a rate, not an amount in cents: the built-in generator cannot use "2 cents"; ` +
			`write it as a percentage ("fee rate 7%") or a fraction ("fee rate 0.07")`},
		{"buy UP when price_up < 0.4 and imbalance_up > 40c, exit above 0.6", `imbalance_up is a number from -1 to 1 (all asks to all bids), not an amount in cents: the built-in generator cannot use "40c"`},
		{entry + "0.95c" + exit, `the built-in generator reads prices in dollars, between 0 and 1, not in cents (0.35 for 35 cents): "0.95c" is not an amount of cents it can read; write the price in dollars`},
		{entry + "950c" + exit, `the built-in generator reads prices in dollars, between 0 and 1, not in cents (0.35 for 35 cents): "950c" is more than a dollar, and prices end at 1`},
		{"buy UP when BTC price is above 95c, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "95c"`},
		{"buy UP when the price of bitcoin > 95c, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "95c"`},
		{"buy UP when coin_price drops below 95 cents, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "95 cents"`},
		{"buy UP when ETH is above 95c, exit above 0.6", `the built-in generator reads the coin's price in dollars ("BTC price above 95000"), not in cents: it cannot use "95c"`},
		// A bare number above 1: cents (or a percentage) only when it is
		// a whole number of them.
		{entry + "35" + exit, "price_up is a price between 0 and 1, and the prompt's 35 is more than 1: for 35 cents write 0.35 (or 35%)"},
		{"buy UP when spread > 5, exit above 0.6", "spread is a price between 0 and 1, and the prompt's 5 is more than 1: for 5 cents write 0.05 (or 5%)"},
		{entry + "950" + exit, "price_up is a price between 0 and 1 (0.35 for 35 cents, or 35%), and the prompt's 950 is more than 1"},
		{entry + "1.5" + exit, "price_up is a price between 0 and 1 (0.35 for 35 cents, or 35%), and the prompt's 1.5 is more than 1"},
		{entry + "$95" + exit, "price_up is a price between 0 and 1 (0.35 for 35 cents, or 35%), and the prompt's $95 is more than $1"},
		{entry + "0.35, exit above 150%", "price_up is a price between 0 and 1 (0% to 100%), and the prompt's 150% is more than 100%"},
		// Stop losses and take profits at a price.
		{"buy UP below 0.3, take profit at 60", `a take profit at 60 is a price, and prices are between 0 and 1: for 60 cents write "take profit at 0.6"; ` +
			`for a gain over the entry's price write a percentage ("take profit at 60%")`},
		{"buy UP below 0.3, stop loss at 20", `a stop loss at 20 is a price, and prices are between 0 and 1: for 20 cents write "stop loss at 0.2"; ` +
			`for a loss of the entry cost write a percentage ("stop loss of 20%")`},
		// 100 is no price in cents anyone means: at 1 a stop loss exits at
		// once, and a take profit never.
		{"buy UP below 0.3, stop loss at 100", `a stop loss at 100 is a price, and prices are between 0 and 1 (0.35 for 35 cents): 100 is more than 1; ` +
			`for a loss of the entry cost write a percentage ("stop loss of 100%")`},
		{"buy UP below 0.3, take profit at 100", `a take profit at 100 is a price, and prices are between 0 and 1 (0.35 for 35 cents): 100 is more than 1; ` +
			`for a gain over the entry's price write a percentage ("take profit at 100%")`},
		{entry + "100" + exit, "price_up is a price between 0 and 1 (0.35 for 35 cents, or 35%), and the prompt's 100 is more than 1"},
		{"buy UP below 0.3, stop loss at 99", `a stop loss at 99 is a price, and prices are between 0 and 1: for 99 cents write "stop loss at 0.99"; ` +
			`for a loss of the entry cost write a percentage ("stop loss of 99%")`},
		{"buy UP below 0.3, stop loss at 150", `a stop loss at 150 is a price, and prices are between 0 and 1 (0.35 for 35 cents): 150 is more than 1; ` +
			`for a loss of the entry cost write a percentage ("stop loss of 25%")`},
		{"buy UP below 0.3, take profit at $95", `a take profit at $95 is a price, and prices are between 0 and 1 (0.35 for 35 cents): $95 is more than $1; ` +
			`for a gain over the entry's price write a percentage ("take profit at 20%")`},
		// Other fields, as written.
		{"buy UP when price_up < 0.4 and imbalance_up > 150%, exit above 0.6", "imbalance_up is between -1 and 1 (all asks to all bids): 150% is outside"},
		{"buy UP when price_up < 0.4, exit above 0.6, fee rate 150%", `a fee rate of 150% is more than 100%: write it as a percentage ("fee rate 7%") or a fraction ("fee rate 0.07")`},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || e.Message != tc.msg {
			t.Errorf("%q:\n got %v\nwant VALIDATION_ERROR of prompt: %s", tc.prompt, err, tc.msg)
		}
	}
	// What it reads stays read: prices as fractions, dollars or
	// percentages.
	for _, p := range []string{entry + "0.95" + exit, entry + "$0.95" + exit, entry + "95%" + exit, entry + "95 percent" + exit} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err != nil || len(spec.Strategy.EntryConditions) != 1 || spec.Strategy.EntryConditions[0].Value != 0.95 {
			t.Errorf("%q: %v %+v", p, err, spec.Strategy.EntryConditions)
		}
	}
}

// TestPromptChoosesItsMarkets: the markets a prompt names are the ones
// tested where the request names none, and a prompt that names others
// than the request's, or several, is refused on the prompt: read as the
// defaults (BTC 15m), a backtest ran on markets the user did not mean.
func TestPromptChoosesItsMarkets(t *testing.T) {
	t.Parallel()
	const rules = " when price_up < 0.3, exit above 0.6"
	for _, tc := range []struct {
		prompt     string
		coin, mt   string // the request's
		wantCoin   store.Coin
		wantType   store.MarketType
		refusedFor string // a word of the refusal; "" when accepted
	}{
		{prompt: "buy UP" + rules, wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP on ETH 5m markets" + rules, wantCoin: store.ETH, wantType: store.M5},
		{prompt: "buy UP on ethereum 15-minute markets" + rules, wantCoin: store.ETH, wantType: store.M15},
		{prompt: "on 4h markets buy UP" + rules, wantCoin: store.BTC, wantType: store.H4},
		// Words for the hourly and daily markets name them as "1h" and
		// "24h" do: read as nothing, the backtest ran on 15m markets.
		{prompt: "buy UP on ETH hourly markets" + rules, wantCoin: store.ETH, wantType: store.H1},
		{prompt: "buy UP on the daily markets" + rules, wantCoin: store.BTC, wantType: store.H24},
		{prompt: "buy UP on 1-day markets" + rules, wantCoin: store.BTC, wantType: store.H24},
		{prompt: "buy UP on intra-day markets" + rules, wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP on hourly windows" + rules, mt: "15m", refusedFor: "marketType is 15m"},
		// A time phrase's "5m" or "1h" is time, not markets: read as the
		// market type, "with 5m left" moved the backtest to 5m markets,
		// where it is the whole market (time_remaining_pct <= 100).
		{prompt: "buy UP" + rules + " or with 5m left", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP" + rules + " or with 5m left", mt: "15m", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "on 4h markets buy UP" + rules + " or with 1h to go", wantCoin: store.BTC, wantType: store.H4},
		{prompt: "buy UP in the last 5m" + rules, wantCoin: store.BTC, wantType: store.M15},
		// So is a wait's or a resting order's.
		{prompt: "buy UP" + rules + ", cool down 5m", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP" + rules + ", wait 5m after an exit", mt: "1h", wantCoin: store.BTC, wantType: store.H1},
		{prompt: "rest a bid" + rules + ", cancel after 1h", coin: "ETH", wantCoin: store.ETH, wantType: store.M15},
		// So is a wait between trades: read as the market type, "5m
		// between trades" moved the backtest to 5m markets and dropped
		// the wait (TestBuiltinCooldownIsNotMarkets).
		{prompt: "buy UP" + rules + ", 5m between trades", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP" + rules + ", 1h between trades", mt: "5m", wantCoin: store.BTC, wantType: store.M5},
		// A gap, pause or break between no trades leaves the markets named:
		// read as a duration, these moved to 15m markets and were refused.
		{prompt: "for 5m gaps: buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		{prompt: "trade 5m breaks: buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		{prompt: "in 5m breaks below 0.3 buy UP, exit above 0.6", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "on 5m markets buy UP" + rules + ", 15m between entries", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP on ETH 1h" + rules + ", wait 15m between each entry", wantCoin: store.ETH, wantType: store.H1},
		// A compact type still names markets where it stands alone.
		{prompt: "on the 5m buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP on BTC 1h" + rules, wantCoin: store.BTC, wantType: store.H1},
		{prompt: "buy UP in the 4h" + rules, wantCoin: store.BTC, wantType: store.H4},
		// Right after "on" or a coin it names them whatever follows:
		// read as a duration there, these were refused by the built-in
		// generator and tested on 15m markets by a model.
		{prompt: "buy UP on 15m in the last 5 minutes when price_up is below 0.35, exit above 0.6", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP on 5m in the last 2 minutes when price_up is below 0.35, exit above 0.6", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP on ETH 1h after a dip below 0.35, exit above 0.6", wantCoin: store.ETH, wantType: store.H1},
		{prompt: "buy UP on 1h in ETH" + rules, wantCoin: store.ETH, wantType: store.H1},
		{prompt: "buy UP on the 1h of ETH" + rules, wantCoin: store.ETH, wantType: store.H1},
		{prompt: "on ETH 1h from the start, buy UP" + rules, wantCoin: store.ETH, wantType: store.H1},
		{prompt: "on 5m before the end: buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		// So it does after "for", "in", "every" or "only" alone: read as
		// a duration there, these were refused, or tested on 15m markets.
		{prompt: "for 5m BTC: buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		{prompt: "Strategy for 1h ETH: buy UP" + rules, wantCoin: store.ETH, wantType: store.H1},
		{prompt: "every 5m: buy UP" + rules, wantCoin: store.BTC, wantType: store.M5},
		{prompt: "every 15m: buy UP" + rules, wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP in 15m BTC when price_up is below 0.35, exit above 0.6", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP in 5m BTC when price_up is below 0.35, exit above 0.6", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP" + rules + ", only 5m", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP when BTC is 0.1% above the price to beat, exit above 0.6", wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP on SOL markets" + rules, coin: "SOL", mt: "5m", wantCoin: store.SOL, wantType: store.M5},
		{prompt: "buy UP on ETH markets" + rules, coin: "BTC", refusedFor: "coin is BTC"},
		{prompt: "buy UP on 5m markets" + rules, mt: "1h", refusedFor: "marketType is 1hr"},
		{prompt: "buy UP on BTC or ETH markets" + rules, refusedFor: "one coin"},
		{prompt: "buy UP on 5m and 15m markets" + rules, refusedFor: "one market type"},
		// Markets the service has none of are refused, where they ran on
		// BTC 15m markets without a word; beside a coin or type it has,
		// or the request's, the other names are the prompt's context.
		{prompt: "buy UP on DOGE markets" + rules, refusedFor: "names DOGE"},
		{prompt: "buy UP on xrp 5m markets" + rules, refusedFor: "names xrp"},
		{prompt: "buy UP on weekly markets" + rules, refusedFor: `names "weekly markets"`},
		{prompt: "buy UP on 30m windows" + rules, refusedFor: `names "30m windows"`},
		{prompt: "buy UP on BTC markets like DOGE" + rules, wantCoin: store.BTC, wantType: store.M15},
		{prompt: "buy UP on DOGE markets" + rules, coin: "ETH", wantCoin: store.ETH, wantType: store.M15},
		{prompt: "buy UP on weekly markets" + rules, mt: "5m", wantCoin: store.BTC, wantType: store.M5},
		{prompt: "buy UP on chainlink-settled markets" + rules, wantCoin: store.BTC, wantType: store.M15},
	} {
		req := Request{Prompt: tc.prompt, Coin: store.Coin(tc.coin), MarketType: store.MarketType(tc.mt)}
		err := req.Normalize()
		if tc.refusedFor != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.refusedFor) {
				t.Errorf("%q (coin %q, marketType %q): %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, tc.coin, tc.mt, err, tc.refusedFor)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		spec, err := Builtin{}.Generate(context.Background(), req)
		if err != nil || spec.Rules.Coin != tc.wantCoin || spec.Rules.MarketType != tc.wantType {
			t.Errorf("%q (coin %q, marketType %q): %s %s, %v; want %s %s", tc.prompt, tc.coin, tc.mt, spec.Rules.Coin, spec.Rules.MarketType, err, tc.wantCoin, tc.wantType)
		}
	}
	// Words that name no market type are not dropped as if they did: the
	// built-in generator refuses them. Nor is a duration the grammar cannot read: read as the market type,
	// its words were dropped ("hold for 5m" held for nothing) and the
	// backtest ran on 5m markets.
	for _, p := range []string{"buy UP on 2-day markets" + rules, "buy UP on 2 daily markets" + rules,
		"buy UP" + rules + " or after 5m", "buy UP" + rules + ", hold for 5m", "buy UP during the first 15m" + rules,
		"buy UP if BTC rose in the past 1h" + rules, "buy UP" + rules + ", 5m before the end",
		"buy UP" + rules + ", hold up to 5m", "buy UP" + rules + ", wait 5m", "buy UP" + rules + ", hold 1h",
		"buy UP" + rules + ", hold it for 5m", "buy UP" + rules + " or exit in 5m", "buy UP" + rules + ", wait for 5m"} {
		req := normalized(t, Request{Prompt: p})
		if req.MarketType != store.M15 {
			t.Errorf("%q: %s markets, want 15m (the default)", p, req.MarketType)
		}
		_, err := Builtin{}.Generate(context.Background(), req)
		if e, ok := errors.AsType[*Error](err); !ok || e.Code != CodeValidation || e.Field != "prompt" {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt", p, err)
		}
	}
	// Its refusal says it read the type as a duration, and how to write
	// the markets: "could not use \"15m\"" read as if 15m markets were
	// not supported.
	for p, typ := range map[string]string{"buy UP" + rules + ", hold for 5m": "5m", "buy UP during the first 15m" + rules: "15m",
		"buy UP" + rules + " or exit in 1h": "1h", "buy UP" + rules + ", 15min before the end": "15min", "buy UP" + rules + ", hold 4hr": "4hr"} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		e, ok := errors.AsType[*Error](err)
		if want := `reads "` + typ + `" there as a duration`; !ok || !strings.Contains(e.Message, want) || !strings.Contains(e.Message, `"on `+typ+` markets"`) {
			t.Errorf("%q: %v, want a refusal saying %s and \"on %s markets\"", p, err, want, typ)
		}
	}
}

// TestBuiltinTimeLeftIsExact: "with 2 minutes left" holds at the snapshot
// recorded at exactly 2:00 before the end. Converted to a percentage of a
// 15m market and rounded (time_remaining_pct <= 13.333333), it missed that
// snapshot, whose percentage is 13.33333333..., and acted at the next.
func TestBuiltinTimeLeftIsExact(t *testing.T) {
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	end := start.Add(15 * time.Minute)
	up := store.OutcomeUp
	m := store.Market{Slug: "btc-updown-15m-exact", Coin: store.BTC, MarketType: store.M15, StartTime: start, EndTime: end, Winner: &up}
	var snaps []store.Snapshot
	for at := start; at.Before(end); at = at.Add(30 * time.Second) {
		snaps = append(snaps, store.Snapshot{Time: at, CoinPrice: 95_000, PriceUp: 0.3, PriceDown: 0.7})
	}
	twoLeft := end.Add(-2 * time.Minute)
	for _, tc := range []struct {
		prompt, event string // the first event of that type is at twoLeft
	}{
		{"buy UP when price_up drops below 0.35, exit above 0.6 or with 2 minutes left", "EXIT"},
		{"buy UP when price_up drops below 0.35, exit in the last 2 minutes", "EXIT"},
		{"buy UP when price_up drops below 0.35 in the last 2 minutes, sell above 0.6", "ENTRY"},
		{"buy UP when price_up drops below 0.35 with at most 2 min left, sell above 0.6", "ENTRY"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil {
			t.Fatalf("%q: %v", tc.prompt, err)
		}
		res, err := replay.Run(m, snaps, spec.Strategy)
		if err != nil {
			t.Fatalf("%q: %v", tc.prompt, err)
		}
		got := "none"
		for _, e := range res.Trades {
			if e.Type == tc.event {
				got = e.Time + " " + e.Reason
				break
			}
		}
		if at, err := time.Parse(time.RFC3339Nano, strings.Fields(got)[0]); err != nil || !at.Equal(twoLeft) || !strings.HasSuffix(got, "SIGNAL") {
			t.Errorf("%q (%s): first %s %s, want one at %s (2:00 left) on its SIGNAL", tc.prompt, FormatCode(spec.Rules), tc.event, got, twoLeft.Format(time.RFC3339))
		}
	}
}

// TestBuiltinCooldownIsNotMarkets: a wait between trades said with a
// compact duration ("5m between trades", "wait 15m between entries", "1h
// cooldown") is the cooldown, not the 5m, 15m or 1h markets. Read as a
// market phrase, "5m between trades" moved the backtest to 5m markets
// and its wait was dropped (the default 30 s applied); beside a market
// phrase of another type the prompt was refused as naming two. The
// market phrases beside them still choose the markets.
func TestBuiltinCooldownIsNotMarkets(t *testing.T) {
	t.Parallel()
	const rules = "buy UP below 0.4, exit above 0.6"
	for _, tc := range []struct {
		prompt, mt string // mt: the request's marketType
		wantType   store.MarketType
		cooldownMs int
	}{
		{rules + ", 5m between trades", "", store.M15, 300_000},
		{rules + ", 1h between trades", "", store.M15, 3_600_000},
		{rules + ", 15m between entries", "5m", store.M5, 900_000},
		{rules + ", 5m between trades", "1h", store.H1, 300_000},
		{rules + " with 5m between each trade", "", store.M15, 300_000},
		{rules + ", at least 5m between trades", "", store.M15, 300_000},
		{rules + ", a 5m gap between trades", "", store.M15, 300_000},
		{rules + ", a 5-minute pause between entries", "", store.M15, 300_000},
		{rules + ", trades 5m apart", "", store.M15, 300_000},
		{rules + ", space trades by 1h", "", store.M15, 3_600_000},
		{rules + ", re-enter only after 5m", "", store.M15, 300_000},
		{rules + ", wait 15m between entries", "", store.M15, 900_000},
		{rules + ", wait 15m between each entry", "", store.M15, 900_000},
		{rules + ", pause 1h between trades", "", store.M15, 3_600_000},
		{rules + ", 1h cooldown", "", store.M15, 3_600_000},
		{rules + ", 1h cooldown", "5m", store.M5, 3_600_000},
		{rules + ", cooldown: 5m", "", store.M15, 300_000},
		{rules + ", cooldown period of 1h", "", store.M15, 3_600_000},
		// Beside the market phrases, which still choose the markets.
		{"on 5m markets " + rules + ", 15m between trades", "", store.M5, 900_000},
		{rules + " on 5m BTC markets, 1h cooldown", "", store.M5, 3_600_000},
		{"buy UP on 5m BTC below 0.4, exit above 0.6, 1h between trades", "", store.M5, 3_600_000},
		{"trade the 1h market: " + rules + ", wait 5m between trades", "", store.H1, 300_000},
		{rules + " on the 1h market, 5m between trades", "", store.H1, 300_000},
		{"on 4h markets " + rules + ", 15m between entries", "4h", store.H4, 900_000},
	} {
		req := Request{Prompt: tc.prompt, MarketType: store.MarketType(tc.mt)}
		if err := req.Normalize(); err != nil {
			t.Errorf("%q (marketType %q): %v", tc.prompt, tc.mt, err)
			continue
		}
		spec, err := Builtin{}.Generate(context.Background(), req)
		if err != nil {
			t.Errorf("%q (marketType %q): %v", tc.prompt, tc.mt, err)
			continue
		}
		if spec.MarketType != tc.wantType || spec.Strategy.ReentryCooldownMs != tc.cooldownMs {
			t.Errorf("%q (marketType %q): %s markets, cooldown %d ms; want %s markets, cooldown %d ms", tc.prompt, tc.mt,
				spec.MarketType, spec.Strategy.ReentryCooldownMs, tc.wantType, tc.cooldownMs)
		}
	}
	// A time in the market read as a wait lost its rule without a word:
	// "in the last 5 minutes between trades" became a cooldown of 5
	// minutes and no time condition. It reads both ways: refused.
	for _, p := range []string{"buy UP when price_up < 0.3 in the last 5 minutes between trades, exit above 0.6",
		rules + " in the first 2m between entries"} {
		_, err := (Builtin{}).Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "reads both as a time in the market and as a wait") {
			t.Errorf("%q: %v, want a refusal saying it reads two ways", p, err)
		}
	}
	spec, err := (Builtin{}).Generate(context.Background(), normalized(t, Request{Prompt: rules + ", with 5m between trades"}))
	if err != nil || spec.Strategy.ReentryCooldownMs != 300_000 {
		t.Errorf("%q: %+v, %v; want a cooldown of 300000 ms", rules+", with 5m between trades", spec, err)
	}
	// A wait the grammar cannot read is refused as a duration, not taken
	// for the markets.
	for _, p := range []string{rules + ", 5m spacing between trades", rules + ", trades come 5m apart", rules + ", hold 1h between entry and exit"} {
		req := normalized(t, Request{Prompt: p})
		if req.MarketType != store.M15 {
			t.Errorf("%q: %s markets, want 15m (the default)", p, req.MarketType)
		}
		if _, err := (Builtin{}).Generate(context.Background(), req); err == nil {
			t.Errorf("%q: generated, want a refusal", p)
		}
	}
}

// TestBuiltinReadsShareCounts: a trade's size in the words a user writes
// it. "200 shares" was read, but "1 share", "1 contract" and "position
// size 50" were refused ("could not use "1" in the prompt"), so a
// one-share strategy could not be asked for in words at all. Money is no
// share count, and is refused saying so.
func TestBuiltinReadsShareCounts(t *testing.T) {
	t.Parallel()
	const head = "side=UP entry: price_up < 0.3 exit: price_up > 0.5 size="
	const tail = " maxloss=50 order=MARKET cooldown=30000"
	for _, tc := range []struct{ prompt, code, refusal string }{
		{prompt: "buy 1 share of UP when price_up < 0.3, sell above 0.5", code: head + "1" + tail},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, 1 contract", code: head + "1" + tail},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, 200 shares", code: head + "200" + tail},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 50", code: head + "50" + tail},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, trade size of 20 shares", code: head + "20" + tail},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 20000", refusal: "20000 shares is out of range: a trade must be between 1 and 10000 shares"},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size $50", refusal: `"position size $50" is an amount of money`},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 50 dollars", refusal: `"position size 50 dollars" is an amount of money`},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 50 usdc", refusal: "is an amount of money"},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 10%", refusal: "cannot use \"position size 10%\" as a trade's size"},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, trade size 20 percent", refusal: "as a trade's size"},
		{prompt: "buy UP when price_up < 0.3, sell above 0.5, position size 100k", refusal: "as a trade's size"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if tc.refusal != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.refusal) {
				t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.refusal)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code {
			t.Errorf("%q:\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
		// The explanation counts them in words a reader expects.
		want := fmt.Sprintf(" %s shares a trade ", replay.FormatNum(spec.Strategy.PositionSize))
		if spec.Strategy.PositionSize == 1 {
			want = " 1 share a trade "
		}
		if got := Describe(Rules{Strategy: spec.Strategy}); !strings.Contains(got, want) {
			t.Errorf("%q: the explanation %q does not say %q", tc.prompt, got, want)
		}
	}
}

// TestBuiltinReadsBookWords: the book's figures by their words alone
// ("the bid", "the best bid", "the mid price", "the book imbalance",
// "the displayed price") are the fields of that name of the side bought,
// or of the side the words name. They were read as the side's price (the
// best ask) without a word: "the book imbalance is above 0.3" became
// price_up > 0.3.
func TestBuiltinReadsBookWords(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	for _, tc := range []struct{ prompt, code string }{
		{"buy UP when the bid is above 0.3, exit above 0.6", "side=UP entry: bid_up > 0.3 exit: price_up > 0.6"},
		{"buy UP when the best bid is above 30c, exit above 0.6", "side=UP entry: bid_up > 0.3 exit: price_up > 0.6"},
		{"buy DOWN when the bid is above 0.3, exit above 0.6", "side=DOWN entry: bid_down > 0.3 exit: price_down > 0.6"},
		{"buy DOWN when the UP bid is above 0.6, exit above 0.6", "side=DOWN entry: bid_up > 0.6 exit: price_down > 0.6"},
		{"buy UP when the mid price is below 0.3, exit above 0.6", "side=UP entry: mid_up < 0.3 exit: price_up > 0.6"},
		{"buy UP when the mid-point is below 0.4 and above 0.2, exit above 0.8", "side=UP entry: mid_up < 0.4 and mid_up > 0.2 exit: price_up > 0.8"},
		{"buy UP when the book imbalance is above 0.3, exit above 0.6", "side=UP entry: imbalance_up > 0.3 exit: price_up > 0.6"},
		{"buy UP when the displayed price is below 0.3, exit above 0.6", "side=UP entry: display_up < 0.3 exit: price_up > 0.6"},
		{"buy UP when the bid is between 0.3 and 0.4, exit above 0.6", "side=UP entry: bid_up >= 0.3 and bid_up <= 0.4 exit: price_up > 0.6"},
		{"buy UP when price_up < 0.4, sell when the best bid reaches 0.6", "side=UP entry: price_up < 0.4 exit: bid_up >= 0.6"},
		// The ask is the side's price; a resting bid is an order, not a field.
		{"buy UP when the ask is below 0.4, exit above 0.6", "side=UP entry: price_up < 0.4 exit: price_up > 0.6"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code+tail {
			t.Errorf("%q:\n got %s\nwant %s", tc.prompt, got, tc.code+tail)
		}
	}
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "rest a bid 1 tick above when price_up is below 0.4, exit above 0.8"}))
	if got := FormatCode(Rules{Strategy: spec.Strategy}); err != nil || got != "side=UP entry: price_up < 0.4 exit: price_up > 0.8 size=100 maxloss=50 order=GTC offset=1 cooldown=30000" {
		t.Errorf("resting bid: %v %s", err, got)
	}
	// A bid the strategy places is its price, what it pays at most: the
	// side's price (the ask), not the book's best bid.
	for _, prompt := range []string{
		"buy UP with a limit bid below 0.4, exit above 0.6",
		"buy UP: place a bid under 0.35, exit above 0.6",
		"buy UP with a bid below 0.4, exit above 0.6",
		"buy UP at the bid below 0.4, exit above 0.6",
		"buy UP post only bid below 0.4, exit above 0.6",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: prompt}))
		if err != nil {
			t.Errorf("%q: %v", prompt, err)
			continue
		}
		if c := spec.Strategy.EntryConditions; len(c) != 1 || c[0].Field != replay.FieldPriceUp {
			t.Errorf("%q: entry %s, want price_up (the order's bid is what it pays)", prompt, FormatCode(Rules{Strategy: spec.Strategy}))
		}
	}
}

// TestBuiltinRefusesLastTrade: no field holds the last trade's price, and
// a comparison of it was read as the side's price (the best ask) without
// a word. It is refused, naming the fields there are.
func TestBuiltinRefusesLastTrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, msg string }{
		{"buy UP when the last trade is below 0.4, exit above 0.6", `cannot compare "the last trade": no field holds the last trade's price`},
		{"buy UP when the last traded price is below 0.4, exit above 0.6", `cannot compare "the last traded price"`},
		{"buy UP when price_up < 0.4, exit when the last trade price is above 0.6", `cannot compare "the last trade price"`},
		{"buy UP when the last trade is between 0.3 and 0.4, exit above 0.6", `cannot compare "the last trade"`},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.msg)
		}
	}
}
