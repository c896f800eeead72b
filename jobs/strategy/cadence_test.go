package strategy

import (
	"context"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestBuiltinCadenceIsNotMarkets: "trade every 5m" or "check every 5
// minutes" is a cadence, not the 5m markets. Read as a market phrase,
// "trade every 5m" moved the backtest to 5m markets (or was refused beside
// the request's marketType) and its rhythm was dropped; "trade every hour"
// and "check every minute" were dropped without a word. A cadence of
// trades is the wait between them (reentryCooldownMs, as "trades 5m
// apart"); a cadence of checks is no rule the replay has (it checks every
// snapshot), said in the explanation.
func TestBuiltinCadenceIsNotMarkets(t *testing.T) {
	t.Parallel()
	const rules = "buy UP below 0.4, exit above 0.6"
	for _, tc := range []struct {
		prompt, mt string // mt: the request's marketType
		wantType   store.MarketType
		cooldownMs int
		note       string // a word of the explanation's note
	}{
		{rules + ", trade every 5m", "", store.M15, 300_000, `"trade every 5m" is read as a wait of 5 min`},
		{rules + ", trade every 5 minutes", "", store.M15, 300_000, "wait of 5 min"},
		{rules + ", trade every 5m", "1h", store.H1, 300_000, "wait of 5 min"},
		{"buy UP below 0.4 every 5m, exit above 0.6", "", store.M15, 300_000, "wait of 5 min"},
		{"every 5 minutes buy UP if price_up is below 0.4, sell above 0.6", "", store.M15, 300_000, "wait of 5 min"},
		{rules + ", once every 15m", "5m", store.M5, 900_000, "wait of 15 min"},
		{rules + ", at most one trade every 5m", "", store.M15, 300_000, "wait of 5 min"},
		{rules + ", trade every hour", "", store.M15, 3_600_000, "wait of 1 h"},
		{rules + ", enter every 30 s", "", store.M15, 30_000, "wait of 30 s"},
		{"on 5m markets " + rules + ", trade every 15m", "", store.M5, 900_000, "wait of 15 min"},
		{rules + ", check every 5 minutes", "", store.M15, DefaultReentryCooldownMs, `"check every 5 minutes" is no rule`},
		{"check every 5m: " + rules, "", store.M15, DefaultReentryCooldownMs, "every recorded snapshot"},
		{rules + ", evaluate every 30 s", "5m", store.M5, DefaultReentryCooldownMs, "every recorded snapshot"},
		{rules + ", check every minute", "", store.M15, DefaultReentryCooldownMs, "every recorded snapshot"},
		// The note quotes the clause, whose decimal point ends nothing.
		{"buy UP at 0.45 every 5 minutes, sell at 0.55", "", store.M15, 300_000, `"buy UP at 0.45 every 5 minutes" is read as a wait`},
		{rules + ", poll every 1h", "", store.M15, DefaultReentryCooldownMs, "every recorded snapshot"},
		// "every" before markets still names them.
		{rules + ", trade every 5m market", "", store.M5, DefaultReentryCooldownMs, ""},
		{rules + " on every 1h BTC market", "", store.H1, DefaultReentryCooldownMs, ""},
		{"every 5m: " + rules, "", store.M5, DefaultReentryCooldownMs, ""},
	} {
		req := Request{Prompt: tc.prompt, MarketType: store.MarketType(tc.mt)}
		if err := req.Normalize(); err != nil {
			t.Errorf("%q (marketType %q): %v", tc.prompt, tc.mt, err)
			continue
		}
		if req.MarketType != tc.wantType {
			t.Errorf("%q (marketType %q): the request reads %s markets, want %s", tc.prompt, tc.mt, req.MarketType, tc.wantType)
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
		if tc.note != "" && !strings.Contains(spec.Explanation, tc.note) {
			t.Errorf("%q: explanation %q, want it to say %q", tc.prompt, spec.Explanation, tc.note)
		}
		if tc.note == "" && strings.Contains(spec.Explanation, "every") {
			t.Errorf("%q: explanation %q notes a cadence the prompt does not have", tc.prompt, spec.Explanation)
		}
	}
	// The model is told so too (the markets it is asked for are read by
	// Normalize, above).
	if !strings.Contains(systemPrompt, `"trade every 5m" is 300000`) || !strings.Contains(systemPrompt, `"check every 5 minutes") is no field`) {
		t.Errorf("the system prompt does not say a rhythm of trades is the cooldown and one of checks no field")
	}
	// A cadence beside a cooldown of another length says two waits: one
	// would be kept without a word.
	_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: rules + ", cool down 1m, trade every 5m"}))
	if err == nil || !strings.Contains(err.Error(), "two waits") {
		t.Errorf("a cooldown and a cadence of trades: %v, want a refusal naming two waits", err)
	}
}
