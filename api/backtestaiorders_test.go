package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store"
)

// TestAgentOrderRules: resting orders and re-entry control from the prompt
// or the settings reach generated_strategy, strategy_code and every
// market's replay, through real HTTP and the workers.
func TestAgentOrderRules(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)

	var g generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok,
		`{"prompt":"buy UP below 0.48 with more than 30% left, exit above 0.52; rest a bid 1 tick above, cool down 10 s, at most 3 trades"}`), &g)
	if s := g.GeneratedStrategy.Strategy; s.OrderType != "GTC" || s.LimitOffsetTicks != 1 || s.ReentryCooldownMs != 10_000 || s.MaxEntriesPerMarket != 3 ||
		!strings.HasSuffix(g.StrategyCode, " order=GTC offset=1 cooldown=10000 maxentries=3") {
		t.Fatalf("generated %+v, code %s", s, g.StrategyCode)
	}
	// The settings win over the prompt; an explicit 0 is no cooldown,
	// not the default.
	var set generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok,
		`{"prompt":"buy UP below 0.48, exit above 0.52, cool down 10 s","orderType":"GTC","postOnly":true,"limitOffsetTicks":2,`+
			`"cancelAfterMs":60000,"queueModel":"FRONT","includeRebates":true,"reentryCooldownMs":0,"maxEntriesPerMarket":4}`), &set)
	if !strings.HasSuffix(set.StrategyCode, " order=GTC postonly=true offset=2 cancel=60000 queue=front rebates=true maxentries=4") {
		t.Errorf("settings lost: %s", set.StrategyCode)
	}

	markets := newestResolved(t, b.store, store.BTC, store.M15, 5)
	for name, body := range map[string]map[string]any{
		"code":              {"strategy_code": g.StrategyCode, "marketCount": 5},
		"object":            {"generatedStrategy": g.GeneratedStrategy, "marketCount": 5},
		"code and settings": {"strategy_code": g.StrategyCode, "marketCount": 5, "postOnly": true, "queueModel": "FRONT", "reentryCooldownMs": 0},
	} {
		raw, _ := json.Marshal(body)
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(raw)), &rep)
		s := rep.GeneratedStrategy.Strategy
		if s.OrderType != "GTC" || s.LimitOffsetTicks != 1 || s.MaxEntriesPerMarket != 3 || len(rep.Results) != 5 {
			t.Errorf("%s: %+v, %d results", name, s, len(rep.Results))
		}
		if _, ok := body["postOnly"]; ok && (!s.PostOnly || s.QueueModel != "FRONT" || s.ReentryCooldownMs != 0) {
			t.Errorf("%s: settings lost: %s", name, rep.StrategyCode)
		}
		want := directReport(t, b.store, backtest.Request{Strategy: rep.GeneratedStrategy, Markets: markets})
		if !reflect.DeepEqual(rep.Aggregate, want.Aggregate) || !reflect.DeepEqual(rep.Results, want.Results) {
			t.Errorf("%s: the run is not the direct replay:\n%+v\n%+v", name, rep.Aggregate, want.Aggregate)
		}
	}
	// A MARKET order type in the settings drops the strategy's resting
	// order; the cooldown stays.
	raw, _ := json.Marshal(map[string]any{"strategy_code": g.StrategyCode, "marketCount": 5, "orderType": "MARKET"})
	var market backtestAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(raw)), &market)
	if !strings.HasSuffix(market.StrategyCode, " order=MARKET cooldown=10000 maxentries=3") {
		t.Errorf("MARKET settings: %s", market.StrategyCode)
	}
}

// TestAgentOrderRulesRejected: bad settings of re-entry control and
// resting orders are 400 naming the field, on every agent body.
func TestAgentOrderRulesRejected(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Pro)
	const prompt = `"prompt":"buy UP below 0.4, exit above 0.6",`
	const code = `"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1",`
	obj := `"generatedStrategy":{"side":"UP","positionSize":10,"entryConditions":[{"field":"price_up","operator":"<","value":0.4}],` +
		`"exitConditions":[{"field":"price_up","operator":">","value":0.6}]%s},`
	for _, tc := range []struct {
		path, body, code, field string
	}{
		{"/v1/backtest-ai/generate", prompt + `"reentryCooldownMs":1.5`, "VALIDATION_ERROR", "reentryCooldownMs"},
		{"/v1/backtest-ai/generate", prompt + `"reentryCooldownMs":86400001`, "VALIDATION_ERROR", "reentryCooldownMs"},
		{"/v1/backtest-ai/strategy", prompt + `"maxEntriesPerMarket":0`, "VALIDATION_ERROR", "maxEntriesPerMarket"},
		{"/v1/backtest-ai/generate", prompt + `"postOnly":true`, "VALIDATION_ERROR", "postOnly"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"LIMIT","postOnly":false`, "VALIDATION_ERROR", "postOnly"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"GTC","limitOffsetTicks":51`, "VALIDATION_ERROR", "limitOffsetTicks"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"GTC","cancelAfterMs":0`, "VALIDATION_ERROR", "cancelAfterMs"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"GTC","queueModel":"BACK"`, "VALIDATION_ERROR", "queueModel"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"GTC","postOnly":"yes"`, "VALIDATION_ERROR", "postOnly"},
		{"/v1/backtest-ai/generate", prompt + `"orderType":"FOK"`, "INVALID_ORDER_TYPE", "orderType"},
		{"/v1/backtest-ai/run", code + `"reentryCooldownMs":-1`, "VALIDATION_ERROR", "reentryCooldownMs"},
		{"/v1/backtest-ai/run", code + `"maxEntriesPerMarket":2.5`, "VALIDATION_ERROR", "maxEntriesPerMarket"},
		{"/v1/backtest-ai/run", code + `"limitOffsetTicks":1`, "VALIDATION_ERROR", "limitOffsetTicks"},
		{"/v1/backtest-ai/run", code + `"orderType":"GTC","cancelAfterMs":1e12`, "VALIDATION_ERROR", "cancelAfterMs"},
		{"/v1/backtest-ai/run", code + `"orderType":"GTC","queueModel":"front"`, "VALIDATION_ERROR", "queueModel"},
		{"/v1/backtest-ai/run", code + `"orderType":"gtc"`, "INVALID_ORDER_TYPE", "orderType"},
		{"/v1/backtest-ai/run", code + `"includeRebates":1`, "VALIDATION_ERROR", "includeRebates"},
		{"/v1/backtest-ai/run", fmt.Sprintf(obj, `,"orderType":"GTC","limitOffsetTicks":1.5`) + `"reentryCooldownMs":0`, "VALIDATION_ERROR", "generatedStrategy.limitOffsetTicks"},
		{"/v1/backtest-ai/run", fmt.Sprintf(obj, `,"maxEntriesPerMarket":0`) + `"reentryCooldownMs":0`, "VALIDATION_ERROR", "generatedStrategy.maxEntriesPerMarket"},
		{"/v1/backtest-ai/run", fmt.Sprintf(obj, `,"queueModel":"FRONT"`) + `"reentryCooldownMs":0`, "VALIDATION_ERROR", "generatedStrategy.queueModel"},
		// Only a resting order's maker fills earn rebates.
		{"/v1/backtest-ai/generate", prompt + `"includeRebates":true`, "VALIDATION_ERROR", "includeRebates"},
		{"/v1/backtest-ai/run", code + `"orderType":"LIMIT","includeRebates":true`, "VALIDATION_ERROR", "includeRebates"},
		{"/v1/backtest-ai/run", fmt.Sprintf(obj, `,"includeRebates":true`) + `"reentryCooldownMs":0`, "VALIDATION_ERROR", "generatedStrategy.includeRebates"},
	} {
		body := "{" + strings.TrimSuffix(tc.body, ",") + "}"
		e := wantError(t, b.ai(http.MethodPost, tc.path, tok, body), http.StatusBadRequest, tc.code)
		if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
			t.Errorf("%s %s: %v, want field %s", tc.path, body, e, tc.field)
		}
	}
	if n := b.used(store.Pro); n != 0 {
		t.Errorf("refused requests used %d generations", n)
	}
}

// TestAgentOpenAPIOrderRules: the agent's bodies document the settings of
// re-entry control and resting orders, and GTC.
func TestAgentOpenAPIOrderRules(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.noWorkers = true })
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"BacktestAIGenerateRequest", "BacktestAIRunRequest", "GeneratedStrategy"} {
		props := doc.Components.Schemas[name].Properties
		for k, want := range map[string]string{
			"orderType": `"GTC"`, "reentryCooldownMs": `"maximum":86400000`, "maxEntriesPerMarket": `"maximum":10000`,
			"postOnly": `"boolean"`, "limitOffsetTicks": `"maximum":50`, "cancelAfterMs": `"minimum":1`,
			"queueModel": `"FRONT"`, "includeRebates": `"boolean"`,
		} {
			if !strings.Contains(string(props[k]), want) {
				t.Errorf("%s.%s: %s, want %s", name, k, props[k], want)
			}
		}
	}
}
