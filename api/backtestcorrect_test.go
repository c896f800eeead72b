package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/store"
)

// TestRunAfterCorrectionIsNotReused backtests a strategy that holds its
// position to the end, corrects the winner of one of its markets (as the
// resolver does when Polymarket's verdict differs from the series' rule),
// and sends the identical /run again: the answer is the corrected
// market's, as a replay's is (TestReplayAfterCorrectionIsNotReused), not
// the report, or the shards' results, kept from before the correction.
func TestRunAfterCorrectionIsNotReused(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	const code = "side=UP entry: time_remaining_pct > 50 exit: time_remaining_pct < 0 size=100 maxloss=100 order=MARKET"
	body, _ := json.Marshal(map[string]any{"strategy_code": code, "marketCount": 3})
	run := func() backtestAnswer {
		t.Helper()
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, string(body)), &rep)
		return rep
	}
	before := run()
	markets := newestResolved(t, b.store, store.BTC, store.M15, 3)
	corrected := correctWinner(t, b.store, markets[0])
	after := run()
	want := directReport(t, b.store, backtest.Request{Strategy: after.GeneratedStrategy, Markets: markets, Quota: after.Quota})
	g, _ := json.Marshal(after.Results)
	w, _ := json.Marshal(want.Results)
	if string(g) != string(w) {
		t.Errorf("after the winner of %s was corrected to %s, the identical /run answers the results of before:\n got %.600s\nwant %.600s",
			markets[0], corrected, g, w)
	}
	if gb, _ := json.Marshal(before.Results); string(gb) == string(w) {
		t.Errorf("the correction changed nothing the test can see: %.300s", gb)
	}
}
