package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store"
)

// withFeeSchedules gives every market Polymarket's crypto fee schedule.
func withFeeSchedules(t *testing.T, st store.Store) {
	t.Helper()
	ms, _, err := st.ListMarkets(t.Context(), store.MarketFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].TakerFeeRate, ms[i].FeeExponent = ptr(0.07), ptr(1)
	}
	if err := st.UpsertMarkets(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
}

// TestAgentCosts: fees and latency from the prompt or the settings reach
// generated_strategy, strategy_code and every market's replay; the
// aggregate sums the fees.
func TestAgentCosts(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	withFeeSchedules(t, b.store)
	tok := "Bearer " + b.token(store.Enterprise)

	var g generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok,
		`{"prompt":"buy UP below 0.48 with more than 30% left, exit above 0.52, with fees and 250 ms latency"}`), &g)
	if s := g.GeneratedStrategy.Strategy; s.FeeModel != "MARKET" || s.LatencyMs != 250 || !strings.HasSuffix(g.StrategyCode, " fees=market latency=250 cooldown=30000") {
		t.Fatalf("generated %+v, code %s", s, g.StrategyCode)
	}
	// The settings win over the prompt.
	var custom generateAnswer
	data(t, b.ai(http.MethodPost, "/v1/backtest-ai/generate", tok,
		`{"prompt":"buy UP below 0.48, exit above 0.52, with fees","feeModel":"CUSTOM","feeRate":0.02,"feeExponent":2,"latencyMs":300}`), &custom)
	if !strings.HasSuffix(custom.StrategyCode, " fees=custom feerate=0.02 feeexp=2 latency=300 cooldown=30000") {
		t.Errorf("settings lost: %s", custom.StrategyCode)
	}

	run := func(body string) backtestAnswer {
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, body), &rep)
		return rep
	}
	code, _ := json.Marshal(map[string]any{"strategy_code": g.StrategyCode, "marketCount": 5})
	withCosts := run(string(code))
	want := directReport(t, b.store, backtest.Request{Strategy: withCosts.GeneratedStrategy, Markets: newestResolved(t, b.store, store.BTC, store.M15, 5)})
	a := withCosts.Aggregate
	if a.TotalFees <= 0 || a.TotalTrades == 0 || want.Aggregate.TotalFees != a.TotalFees {
		t.Fatalf("aggregate %+v, direct %+v", a, want.Aggregate)
	}
	var sum float64
	for _, r := range withCosts.Results {
		if r.Performance != nil {
			sum += r.Performance.TotalFees
		}
	}
	if d := sum - a.TotalFees; d > 1e-6 || d < -1e-6 {
		t.Errorf("total_fees %v, markets' fees sum to %v", a.TotalFees, sum)
	}

	// The same rules without costs: /run's settings replace the code's.
	plainBody, _ := json.Marshal(map[string]any{"generatedStrategy": withCosts.GeneratedStrategy, "marketCount": 5, "feeModel": "NONE", "latencyMs": 0})
	plain := run(string(plainBody))
	if plain.Aggregate.TotalFees != 0 || plain.GeneratedStrategy.Strategy.LatencyMs != 0 ||
		!strings.HasSuffix(plain.StrategyCode, " fees=none cooldown=30000") || plain.Aggregate.TotalPnL == a.TotalPnL {
		t.Errorf("NONE with latency 0: %+v, code %s", plain.Aggregate, plain.StrategyCode)
	}
}

// TestAgentBodiesStrict: unknown keys, conditions without values and bad
// costs are 400 VALIDATION_ERROR naming the field, in every agent body; a
// preset alone is a request.
func TestAgentBodiesStrict(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Pro)
	strat := `{"side":"UP","positionSize":10,"entryConditions":[{"field":"price_up","operator":"<","value":0.4}],"exitConditions":[{"field":"price_up","operator":">"%s}]%s}`
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/backtest-ai/generate", `{"prompt":"buy UP below 0.4, exit above 0.6","foo":1}`, "foo"},
		{"/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.4, exit above 0.6","positionSise":5}`, "positionSise"},
		{"/v1/backtest-ai/generate", `{"prompt":"buy UP below 0.4, exit above 0.6","feeModel":"CUSTOM"}`, "feeRate"},
		{"/v1/backtest-ai/generate", `{"prompt":"buy UP below 0.4, exit above 0.6","latencyMs":60001}`, "latencyMs"},
		{"/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1","count":3}`, "count"},
		{"/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1","feeModel":"MARKET","feeExponent":2}`, "feeExponent"},
		{"/v1/backtest-ai/run", `{"generatedStrategy":` + fmt.Sprintf(strat, `,"value":0.6`, `,"maxLossPct":5`) + `}`, "generatedStrategy.maxLossPct"},
		{"/v1/backtest-ai/run", `{"generatedStrategy":` + fmt.Sprintf(strat, `,"val":0.6`, ``) + `}`, "generatedStrategy.exitConditions[0].val"},
		{"/v1/backtest-ai/run", `{"generatedStrategy":` + fmt.Sprintf(strat, ``, ``) + `}`, "generatedStrategy.exitConditions[0].value"},
		{"/v1/backtest-ai/run", `{"generatedStrategy":` + fmt.Sprintf(strat, `,"value":null`, ``) + `}`, "generatedStrategy.exitConditions[0].value"},
		{"/v1/backtest-ai/run", `{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=1 fees=custom"}`, "strategy_code"},
	} {
		e := wantError(t, b.ai(http.MethodPost, tc.path, tok, tc.body), http.StatusBadRequest, "VALIDATION_ERROR")
		if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
			t.Errorf("%s %s: %v, want field %s", tc.path, tc.body, e, tc.field)
		}
	}
	// A prompt the generator refuses (a completed task on the worker, not
	// a failed one) is still the user's 400.
	e := wantError(t, b.post(store.Pro, "/v1/backtest-ai/generate", `{"prompt":"buy UP when the RSI is low"}`), http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "prompt" || !strings.Contains(e["message"].(string), "rsi") {
		t.Errorf("refused prompt: %v", e)
	}
	if n := b.used(store.Pro); n != 0 {
		t.Errorf("refused requests used %d generations", n)
	}
	// A preset alone (issue 16, item 20).
	var g generateAnswer
	data(t, b.post(store.Pro, "/v1/backtest-ai/generate", `{"preset":"dip_buying"}`), &g)
	if !strings.Contains(g.StrategyCode, "price_up crosses_below 0.4") || g.Quota.Used != 1 {
		t.Errorf("preset alone: %s, quota %+v", g.StrategyCode, g.Quota)
	}
}

// TestAgentOpenAPICosts: the agent's bodies document the four settings.
func TestAgentOpenAPICosts(t *testing.T) {
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
		if !strings.Contains(string(props["feeModel"]), `"CUSTOM"`) || !strings.Contains(string(props["latencyMs"]), `"maximum":60000`) ||
			!strings.Contains(string(props["feeRate"]), `"maximum":1`) || !strings.Contains(string(props["feeExponent"]), `"maximum":4`) {
			t.Errorf("%s: %s", name, props)
		}
	}
}

// TestRunTunesCustomFees: /run's feeRate or feeExponent alone replaces
// that part of a CUSTOM strategy's fees, as its latencyMs alone replaces
// the latency; on a strategy without CUSTOM fees it is refused by name.
func TestRunTunesCustomFees(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Pro)
	const custom = "side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=10 maxloss=50 order=MARKET fees=custom feerate=0.1 feeexp=2"
	for _, tc := range []struct{ settings, code string }{
		{`"feeRate":0.05`, "fees=custom feerate=0.05 feeexp=2"},
		{`"feeExponent":3`, "fees=custom feerate=0.1 feeexp=3"},
		{`"feeRate":0.05,"feeExponent":1,"latencyMs":200`, "fees=custom feerate=0.05 feeexp=1 latency=200"},
	} {
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, `{"strategy_code":"`+custom+`","marketCount":2,`+tc.settings+`}`), &rep)
		if !strings.HasSuffix(rep.StrategyCode, "order=MARKET "+tc.code) || len(rep.Results) != 2 {
			t.Errorf("%s: code %s, %d results; want it ending %q", tc.settings, rep.StrategyCode, len(rep.Results), tc.code)
		}
	}
	e := wantError(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok,
		`{"strategy_code":"side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=10 fees=market","feeRate":0.05}`), http.StatusBadRequest, "VALIDATION_ERROR")
	if d, _ := e["details"].(map[string]any); d["field"] != "feeRate" {
		t.Errorf("feeRate on a MARKET-fee strategy: %v, want field feeRate", e)
	}
}
