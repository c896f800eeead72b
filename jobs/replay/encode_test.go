package replay

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendJSONEdges: AppendJSON writes what json.Marshal writes where the
// engine's answers do not go (nil lists, characters json.Marshal escapes).
func TestAppendJSONEdges(t *testing.T) {
	t.Parallel()
	fee, rate, exp, lat := 0.25, 0.07, 1, 250
	for name, r := range map[string]Result{
		"zero": {},
		"escapes": {
			Market:   MarketSummary{Slug: `a<b&c>"d"`, Winner: "Up"},
			Strategy: StrategySummary{Side: "UP", FeeModel: FeeCustom, FeeRate: &rate, FeeExponent: &exp, LatencyMs: &lat},
			Trades: []TradeEvent{{Type: TradeEntry, Reason: "ü\n", Time: "t", Price: 1e-7, Fee: &fee, CoinPrice: 1e21},
				{Type: TradeExit, Price: -0.5, Shares: 123456789.123456}},
			PnLCurve:       []EquityPoint{{Time: "t", InPosition: true, PnL: -1e-9}, {}},
			TotalSnapshots: 2,
		},
		"empty lists": {Trades: []TradeEvent{}, PnLCurve: []EquityPoint{}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("%s: AppendJSON writes\n%s\njson.Marshal\n%s", name, got, want)
		}
	}
}
