package replay

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
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
			Trades: []TradeEvent{{Type: TradeEntry, Reason: "ü\n", Time: "t", Price: 1e-7, Fee: fee, CoinPrice: 1e21},
				{Type: TradeExit, Price: -0.5, Shares: 123456789.123456, Liquidity: LiquidityMaker, MakerRebate: &fee}},
			Orders:         []OrderEvent{{Time: "t", Action: OrderPlaced, Side: OrderBuy, Price: 0.5, Shares: 10, Reason: "<"}},
			Warnings:       []string{"a<b"},
			PnLCurve:       []EquityPoint{{Time: "t", InPosition: true, PnL: -1e-9}, {}},
			TotalSnapshots: 2,
		},
		"empty lists": {Trades: []TradeEvent{}, PnLCurve: []EquityPoint{}},
		"no orders":   {Trades: []TradeEvent{}, PnLCurve: []EquityPoint{}, Orders: []OrderEvent{}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.AppendJSON(nil); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: AppendJSON writes\n%s\njson.Marshal\n%s", name, got, want)
		}
	}
}

// FuzzFormatTime pins formatTime to time.Format with timeLayout.
func FuzzFormatTime(f *testing.F) {
	for _, ns := range []int64{0, 1, -1, 1777467600123456789, -62135596800000000, 253402300799999999} {
		f.Add(ns, int64(0))
	}
	f.Add(int64(1777467600000000000), int64(7200))
	f.Fuzz(func(t *testing.T, ns, zoneSec int64) {
		at := time.Unix(0, ns).In(time.FixedZone("z", int(zoneSec%86400)))
		if got, want := formatTime(at), at.UTC().Format(timeLayout); got != want {
			t.Fatalf("formatTime(%v) = %s, time.Format %s", at, got, want)
		}
	})
}

func TestFormatTimeYears(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 12, 0, 0, 1000, time.UTC),
	} {
		if got, want := formatTime(at), at.Format(timeLayout); got != want {
			t.Errorf("formatTime(%v) = %s, time.Format %s", at, got, want)
		}
	}
}
