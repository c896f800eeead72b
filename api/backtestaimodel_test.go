package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/strategy/openaitest"
	"github.com/updown/updown/store"
)

// TestStrategyModelAnswersItCannotUse: POST /v1/backtest-ai/strategy with
// a model that answers malformed, partial or out-of-range strategies, twice
// (the repair round included), answers 502 AI_STRATEGY_GENERATION_FAILED in
// the error envelope, saying what was wrong, with no generation spent and no
// backtest run; /generate likewise. An out-of-range condition (price_up <
// 1.5, always true) was accepted: a generation spent on a backtest that
// entered at once on every market.
func TestStrategyModelAnswersItCannotUse(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t)
	b := aiSetup(t, func(o *aiOpts) {
		o.generator = strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: fake.URL, Model: "m", Timeout: 5 * time.Second})
	})
	good := func() map[string]any {
		return map[string]any{
			"side": "UP", "positionSize": 10, "maxLossPercent": 30, "orderType": "MARKET", "explanation": "Buys UP cheap.",
			"entryConditions": []map[string]any{{"field": "price_up", "operator": "<", "value": 0.45}},
			"exitConditions":  []map[string]any{{"field": "price_up", "operator": ">", "value": 0.55}},
		}
	}
	with := func(k string, v any) openaitest.Answer {
		m := good()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return openaitest.JSON(m)
	}
	cases := []struct {
		name   string
		answer openaitest.Answer
		says   string
	}{
		{"malformed", openaitest.Content(`{"side": "UP", "entryConditions": [`), "not the JSON object of the schema"},
		{"partial", with("exitConditions", nil), "exitConditions is empty"},
		{"out of range size", with("positionSize", 50000), "positionSize 50000 is out of range"},
		{"out of range price", with("entryConditions", []map[string]any{{"field": "price_up", "operator": "<", "value": 1.5}}),
			"entryConditions[0].value 1.5 is outside price_up's range, 0 to 1"},
		{"out of range time", with("exitConditions", []map[string]any{{"field": "time_remaining_pct", "operator": "<", "value": 150}}),
			"exitConditions[0].value 150 is outside time_remaining_pct's range, 0 to 100"},
	}
	for _, path := range []string{"/v1/backtest-ai/strategy", "/v1/backtest-ai/generate"} {
		for i, tc := range cases {
			fake.Push(tc.answer, tc.answer)
			r := b.post(store.Pro, path, fmt.Sprintf(`{"prompt":"buy UP when cheap, case %d","marketCount":3}`, i))
			e := wantError(t, r, http.StatusBadGateway, "AI_STRATEGY_GENERATION_FAILED")
			if msg, _ := e["message"].(string); !strings.Contains(msg, tc.says) {
				t.Errorf("%s %s: message %q, want it to say %q", path, tc.name, msg, tc.says)
			}
			if m := r.json(t); m["data"] != nil {
				t.Errorf("%s %s: an error with data %v", path, tc.name, m["data"])
			}
			if n := b.used(store.Pro); n != 0 {
				t.Fatalf("%s %s: %d generations spent, want 0", path, tc.name, n)
			}
		}
	}
	// Repaired, the same answer is generated and backtested.
	fake.Push(with("entryConditions", []map[string]any{{"field": "price_up", "operator": "<", "value": 1.5}}), openaitest.JSON(good()))
	var rep backtestAnswer
	data(t, b.post(store.Pro, "/v1/backtest-ai/strategy", `{"prompt":"buy UP when cheap","marketCount":3}`), &rep)
	if len(rep.Results) != 3 || rep.Quota == nil || rep.Quota.Used != 1 || rep.GeneratedStrategy.Strategy.EntryConditions[0].Value != 0.45 {
		t.Errorf("repaired: %d results, quota %+v, strategy %+v", len(rep.Results), rep.Quota, rep.GeneratedStrategy.Strategy)
	}
}
