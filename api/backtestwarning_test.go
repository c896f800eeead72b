package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestBacktestWarnsOfFewerMarkets: /run and /strategy asked for more
// markets than the plan's window holds say so in warning, naming both
// counts, instead of passing the smaller sample off as the one asked for;
// with enough markets warning is null (issue 25).
func TestBacktestWarnsOfFewerMarkets(t *testing.T) {
	t.Parallel()
	b := aiSetup(t, func(o *aiOpts) { o.workers = 2 })
	tok, ent := "Bearer "+b.token(store.Pro), "Bearer "+b.token(store.Enterprise)
	available := len(newestResolved(t, b.store, store.BTC, store.M15, 100))
	if available == 0 || available >= 100 {
		t.Fatalf("%d resolved BTC 15m markets: the test needs between 1 and 99", available)
	}
	const code = "side=UP entry: price_up < 0.45 exit: price_up > 0.55 size=5"
	for _, tc := range []struct {
		tok, path, body string
		want            string // "" for null
	}{
		{tok, "/v1/backtest-ai/run", `{"strategy_code":"` + code + `","marketCount":100}`,
			fmt.Sprintf("marketCount asked for 100 markets, but only %d resolved BTC 15m markets are in the last 31 days", available)},
		{tok, "/v1/backtest-ai/strategy", `{"prompt":"buy UP below 0.45, exit above 0.55","marketCount":100}`,
			fmt.Sprintf("only %d resolved BTC 15m markets", available)},
		{tok, "/v1/backtest-ai/run", `{"strategy_code":"` + code + `","marketCount":3}`, ""},
		// A plan without a data window has every market recorded: the
		// warning names no window it does not have.
		{ent, "/v1/backtest-ai/run", `{"strategy_code":"` + code + `","marketCount":100}`,
			fmt.Sprintf("but only %d resolved BTC 15m markets are recorded: the backtest ran on those", available)},
	} {
		r := b.ai(http.MethodPost, tc.path, tc.tok, tc.body)
		var answer struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &answer) != nil {
			t.Fatalf("%s %s: %d %.300s", tc.path, tc.body, r.status, r.body)
		}
		raw, ok := answer.Data["warning"]
		if !ok {
			t.Errorf("%s %s: no warning field", tc.path, tc.body)
			continue
		}
		var warning *string
		if err := json.Unmarshal(raw, &warning); err != nil {
			t.Fatalf("warning %s: %v", raw, err)
		}
		var results []json.RawMessage
		_ = json.Unmarshal(answer.Data["results"], &results)
		switch {
		case tc.want == "" && warning != nil:
			t.Errorf("%s %s: warning %q, want null", tc.path, tc.body, *warning)
		case tc.want != "" && (warning == nil || !strings.Contains(*warning, tc.want)):
			t.Errorf("%s %s: warning %v, want one containing %q", tc.path, tc.body, raw, tc.want)
		case tc.want != "" && len(results) != available:
			t.Errorf("%s: %d results, want the %d markets available", tc.path, len(results), available)
		}
	}
}
