package strategy

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
)

// TestBuiltinCosts: the built-in generator reads fees and latency.
func TestBuiltinCosts(t *testing.T) {
	const rules = "side=UP entry: price_up < 0.35 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET"
	cases := []struct{ prompt, code string }{
		{"buy UP when price_up drops below 0.35, exit above 0.6, with fees", rules + " fees=market"},
		{"buy UP when price_up drops below 0.35, exit above 0.6 including Polymarket fees and 250 ms latency", rules + " fees=market latency=250"},
		{"buy UP when price_up drops below 0.35, exit above 0.6; fee rate 7%", rules + " fees=custom feerate=0.07 feeexp=1"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, fee rate of 0.02 and fee exponent 2, latency of 1 s", rules + " fees=custom feerate=0.02 feeexp=2 latency=1000"},
		{"buy UP when price_up drops below 0.35, exit above 0.6 with 15ms delay and no fees", rules + " fees=none latency=15"},
		{"buy UP when price_up drops below 0.35, exit above 0.6 with 2% fees", rules + " fees=custom feerate=0.02 feeexp=1"},
		{"buy UP when price_up drops below 0.35, exit above 0.6 with no latency", rules},
		{"buy UP when price_up drops below 0.35, exit above 0.6 without delay, with fees", rules + " fees=market"},
		// Latency switched off as fees are: refused as an unread word, it
		// failed prompts that asked for the default.
		{"buy UP when price_up drops below 0.35, exit above 0.6, no fees or latency", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, no fees and latency", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, no latency or fees", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, ignoring fees and latency", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, ignore latency", rules},
		{"buy UP when price_up drops below 0.35, exit above 0.6, latency off, with fees", rules + " fees=market"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, fees and latency off", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, fees off, 250 ms latency", rules + " fees=none latency=250"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, no fees and latency of 250 ms", rules + " fees=none latency=250"},
		// A latency of 0 needs no unit: "could not use \"0\"" refused the
		// default.
		{"buy UP when price_up drops below 0.35 with 0 latency, exit above 0.6", rules},
		{"buy UP when price_up drops below 0.35, exit above 0.6, zero latency", rules},
		{"buy UP when price_up drops below 0.35, exit above 0.6, latency: 0, with fees", rules + " fees=market"},
		{"buy UP when price_up drops below 0.35, exit above 0.6, latency of 0 and no fees", rules + " fees=none"},
		{"buy UP when price_up drops below 0.35, exit above 0.6 with 0 order delay", rules},
	}
	for _, tc := range cases {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code+" cooldown=30000" {
			t.Errorf("%q\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
	}
	// Refused honestly, by name.
	for prompt, want := range map[string]string{
		"buy UP below 0.35, exit above 0.6, latency 90 s":               "60000",
		"buy UP below 0.35, exit above 0.6, fee rate 7":                 "more than 1",
		"buy UP below 0.35, exit above 0.6, fee exponent 2":             "feeExponent applies only with feeModel CUSTOM",
		"buy UP below 0.35, exit above 0.6, latency 2.5 ms":             "whole number",
		"buy UP below 0.35, exit above 0.6, fee rate 5% fee exponent 9": "a fee exponent of 9 is not allowed",
		// Costs the grammar cannot read are refused, not dropped: read
		// without them, the backtest left out the fees, rebates or delay
		// the prompt asked for.
		"buy UP below 0.35, exit above 0.6, with 250 ms latency and fees": `what the prompt says of "fees"`,
		"buy UP below 0.35, exit above 0.6, fees included":                `what the prompt says of "fees"`,
		"buy UP below 0.35, exit above 0.6, net of fee":                   `what the prompt says of "fee"`,
		"rest a bid below 0.35, exit above 0.6, with fees and rebates":    `what the prompt says of "rebates"`,
		"buy UP below 0.35, exit above 0.6, with latency":                 `what the prompt says of "latency"`,
		"buy UP below 0.35, exit above 0.6, market fees":                  `what the prompt says of "fees"`,
		"buy UP below 0.35, exit above 0.6, using market fees":            `what the prompt says of "fees"`,
		"buy UP below 0.35, exit above 0.6, 0.07 taker fee":               `could not use "0.07"`,
		"buy UP below 0.35, exit above 0.6, with realistic latency":       `what the prompt says of "latency"`,
		"buy UP below 0.35, exit above 0.6, some delay":                   `what the prompt says of "delay"`,
		"rest a bid below 0.35, exit above 0.6, rebates included":         `what the prompt says of "rebates"`,
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want a refusal saying %q", prompt, err, want)
		}
	}
}

// TestRequestCosts: the four settings are checked as /v1/replay checks
// them, and win over the prompt.
func TestRequestCosts(t *testing.T) {
	bad := []struct {
		req   Request
		field string
	}{
		{Request{Prompt: "x", FeeModel: "FREE"}, "feeModel"},
		{Request{Prompt: "x", FeeModel: "MARKET", FeeRate: ptr(0.1)}, "feeRate"},
		{Request{Prompt: "x", FeeModel: "CUSTOM"}, "feeRate"},
		{Request{Prompt: "x", FeeModel: "CUSTOM", FeeRate: ptr(0.1), FeeExponent: ptr(1.5)}, "feeExponent"},
		{Request{Prompt: "x", LatencyMs: ptr(60001.0)}, "latencyMs"},
		{Request{Prompt: "x", LatencyMs: ptr(-1.0)}, "latencyMs"},
	}
	for _, tc := range bad {
		req := tc.req
		var e *Error
		if err := req.Normalize(); !errors.As(err, &e) || e.Code != CodeValidation || e.Field != tc.field {
			t.Errorf("%+v: %v, want VALIDATION_ERROR on %s", tc.req, err, tc.field)
		}
	}
	req := normalized(t, Request{Prompt: "buy UP below 0.4 exit above 0.6 with fees and 100 ms latency",
		FeeModel: "CUSTOM", FeeRate: ptr(0.03)})
	spec, err := Builtin{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Strategy
	if s.FeeModel != "CUSTOM" || *s.FeeRate != 0.03 || s.FeeExponent != 1 || s.LatencyMs != 100 {
		t.Errorf("request's model or prompt's latency lost: %+v", s)
	}
	req = normalized(t, Request{Prompt: "buy UP below 0.4 exit above 0.6 fee rate 9% and 100 ms latency",
		FeeModel: "MARKET", LatencyMs: ptr(0.0)})
	if spec, err = (Builtin{}).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if s := spec.Strategy; s.FeeModel != "MARKET" || s.FeeRate != nil || s.FeeExponent != 0 || s.LatencyMs != 0 {
		t.Errorf("request's costs lost: %+v", s)
	}
	// A preset alone needs no prompt (issue 16, item 20).
	spec, err = Builtin{}.Generate(context.Background(), normalized(t, Request{Preset: "dip_buying"}))
	if err != nil || spec.Strategy.EntryConditions[0].Operator != replay.OpCrossesBelow {
		t.Errorf("preset alone: %+v, %v", spec, err)
	}
}

// TestSpecCostsJSON: generated_strategy carries the costs when set, reads
// them back, and refuses keys it does not have.
func TestSpecCostsJSON(t *testing.T) {
	r, err := ParseCode("coin=BTC type=15m side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 fees=custom feerate=0.07 feeexp=2 latency=250")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Spec{Rules: r, Explanation: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"orderType":"MARKET","feeModel":"CUSTOM","feeRate":0.07,"feeExponent":2,"latencyMs":250,"coin":"BTC"`) {
		t.Errorf("encoded %s", b)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Normalize(); err != nil || !reflect.DeepEqual(back.Rules, r) {
		t.Errorf("round trip %+v (%v), want %+v", back.Rules, err, r)
	}
	var re *replay.Error
	if err := json.Unmarshal([]byte(`{"side":"UP","coin":"BTC","feeModle":"MARKET"}`), &back); !errors.As(err, &re) || re.Field != "feeModle" {
		t.Errorf("unknown key: %v", err)
	}
}

// TestParseCodeCosts pins the cost words' errors.
func TestParseCodeCosts(t *testing.T) {
	const base = "side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 "
	for code, want := range map[string]string{
		base + "fees=free":                        `fees "free" is not one of none, market, custom`,
		base + "fees=market feerate=0.1":          "feerate applies only with fees CUSTOM",
		base + "fees=custom":                      "feerate is missing",
		base + "fees=custom feerate=0.1 feeexp=7": "feeexp 7 is not allowed",
		base + "latency=1e6":                      "latency 1000000 is not allowed",
		base + "latency=fast":                     "expected a number after latency=",
		base + "latency=5 fees=market":            `unexpected "fees=market"`,
	} {
		_, err := ParseCode(code)
		var e *Error
		if !errors.As(err, &e) || e.Field != "strategy_code" || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want %q", code, err, want)
		}
	}
}

// TestPromptOfNoWordsIsMissing: a prompt without a letter or a digit (a
// NUL, spaces of other kinds, punctuation) is refused as missing, where it
// passed the check and, with a model, spent a generation on nothing.
func TestPromptOfNoWordsIsMissing(t *testing.T) {
	t.Parallel()
	for _, prompt := range []string{"", " \t", "\u0000", "\u00a0\u200b\u0000", "...", "!?"} {
		req := Request{Prompt: prompt}
		var e *Error
		if err := req.Normalize(); !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, "prompt is missing") {
			t.Errorf("prompt %q: %v, want VALIDATION_ERROR: prompt is missing", prompt, err)
		}
	}
	// A preset needs no prompt; a prompt of words in any script is one.
	for _, req := range []Request{{Preset: Presets()[0]}, {Prompt: "acheter UP sous 0,35"}, {Prompt: "买入"}} {
		var e *Error
		if err := req.Normalize(); errors.As(err, &e) && strings.Contains(e.Message, "prompt is missing") {
			t.Errorf("%+v: %v", req, err)
		}
	}
}
