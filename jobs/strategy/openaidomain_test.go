package strategy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/strategy/openaitest"
)

// TestOpenAIRefusesValuesOutsideTheirField: a model's condition whose
// value lies outside what its field can be (price_up < 1.5, always true;
// time_remaining_pct > 150, never) is no strategy the user asked for: it
// gets the repair round, and twice is a generation failure. It was
// accepted, a generation spent on a backtest that entered at once on
// every market (or never).
func TestOpenAIRefusesValuesOutsideTheirField(t *testing.T) {
	t.Parallel()
	cond := func(field, op string, v float64) []map[string]any {
		return []map[string]any{{"field": field, "operator": op, "value": v}}
	}
	for _, tc := range []struct {
		name, key string
		conds     []map[string]any
		told      string
	}{
		{"price above 1", "entryConditions", cond("price_up", "<", 1.5), "entryConditions[0].value 1.5 is outside price_up's range, 0 to 1"},
		{"price in cents", "exitConditions", cond("price_up", ">=", 60), "exitConditions[0].value 60 is outside price_up's range, 0 to 1"},
		{"negative bid", "entryConditions", cond("bid_down", ">", -0.2), "bid_down's range, 0 to 1"},
		{"spread above 1", "entryConditions", cond("spread", ">", 2), "spread's range, 0 to 1"},
		{"percent above 100", "entryConditions", cond("time_remaining_pct", ">", 150), "time_remaining_pct's range, 0 to 100"},
		{"imbalance", "exitConditions", cond("imbalance_up", "<", -3), "imbalance_up's range, -1 to 1"},
		{"seconds beyond the market", "exitConditions", cond("time_remaining_s", "<=", 900), "time_remaining_s's range, 0 to 300 (a 5m market)"},
		{"negative coin price", "entryConditions", cond("coin_price", ">", -1), "coin_price's range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := openaitest.JSON(with(good(), tc.key, tc.conds))
			fake := openaitest.New(t, bad, bad)
			_, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t))
			var e *strategy.Error
			if !errors.As(err, &e) || e.Code != strategy.CodeGenerationFailed || !strings.Contains(e.Message, tc.told) {
				t.Fatalf("%v, want AI_STRATEGY_GENERATION_FAILED saying %q", err, tc.told)
			}
			if calls := fake.Calls(); len(calls) != 2 || !strings.Contains(calls[1].Request.Messages[3].Content, tc.told) {
				t.Errorf("%d calls, want 2, the repair saying %q", len(calls), tc.told)
			}
		})
	}
	// Repaired, it generates; a value at its field's bounds is a value.
	fake := openaitest.New(t, openaitest.JSON(with(good(), "entryConditions", cond("price_up", "<", 1.5))),
		openaitest.JSON(with(good(), "exitConditions", cond("time_remaining_s", "<=", 300))))
	spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t))
	if err != nil || strategy.FormatCode(spec.Rules) != "coin=ETH type=5m side=UP entry: price_up < 0.35 exit: time_remaining_s <= 300 size=50 maxloss=25 order=MARKET cooldown=30000" {
		t.Errorf("repaired: %s, %v", strategy.FormatCode(spec.Rules), err)
	}
}
