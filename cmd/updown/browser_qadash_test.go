package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestDashboardQADash: what a person reading the dashboard's results met
// that the pages got wrong, each checked in a real browser against
// `updown dev` (answers the test shapes are put in the browser's way).
func TestDashboardQADash(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a chart's ticks are written with the decimals of their step", func(t *testing.T) {
		pro := pro.in(t)
		// uPlot steps its ticks by 1, 2, 2.5 and 5 times a power of ten:
		// ticks 2.5 apart written without a decimal read 0, 3, 5, 8.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		// One listener answers every replay with the answer of the span under test.
		var answer atomic.Value
		chromedp.ListenTarget(pro.ctx, func(ev any) {
			if e, ok := ev.(*fetch.EventRequestPaused); ok && strings.Contains(e.Request.URL, "/v1/replay") {
				body := answer.Load().([]byte)
				go func() {
					_ = chromedp.Run(pro.ctx, fetch.FulfillRequest(e.RequestID, 200).
						WithResponseHeaders([]*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}).WithBody(b64(body)))
				}()
			}
		})
		pro.run("answer replays", fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/v1/replay"}}))
		defer pro.run("stop answering replays", fetch.Disable())
		fractional := 0
		for run, span := range []float64{12, 14, 16, 18, 19, 20, 22, 25, 1.6, 1.9, 0.19} {
			answer.Store(replayAnswer(slug15, span))
			pro.run("replay", chromedp.Click(byID("replay-submit")),
				chromedp.WaitVisible(byID("replay-results")+fmt.Sprintf(`[data-run="%d"]`, run+1)), chromedp.WaitVisible(byID("equity-chart")+`[data-y-ticks]`))
			var raw string
			pro.eval(`document.querySelector('[data-testid=equity-chart]').dataset.yTicks`, &raw)
			var labels []string
			if err := json.Unmarshal([]byte(raw), &labels); err != nil || len(labels) < 3 {
				t.Fatalf("pnl from 0 to %v: the y axis's ticks %q", span, raw)
			}
			var vals []float64
			for _, l := range labels {
				v, err := strconv.ParseFloat(strings.NewReplacer("−", "-", ",", "").Replace(l), 64)
				if err != nil {
					t.Fatalf("pnl from 0 to %v: tick %q is not a number", span, l)
				}
				vals = append(vals, v)
			}
			// Steps that are not whole (2.5, 0.25) are the case to see.
			step := vals[1] - vals[0]
			if step != math.Trunc(step) || uneven(vals) {
				fractional++
			}
			if uneven(vals) {
				t.Errorf("pnl from 0 to %v: the ticks read %q, not evenly spaced: a tick is written with fewer decimals than its step has", span, labels)
			}
		}
		if fractional == 0 {
			t.Errorf("no span drew ticks a fraction apart: the test saw nothing to check")
		}
	})

}

// uneven says whether ticks are not evenly spaced.
func uneven(vals []float64) bool {
	for i := 2; i < len(vals); i++ {
		if math.Abs((vals[i]-vals[i-1])-(vals[1]-vals[0])) > 1e-9 {
			return true
		}
	}
	return false
}

// replayAnswer is a replay's answer whose equity runs from 0 to span.
func replayAnswer(slug string, span float64) []byte {
	const start = "2026-11-27T10:00:00.000000Z"
	curve := []map[string]any{}
	for i := 0; i <= 10; i++ {
		curve = append(curve, map[string]any{"time": fmt.Sprintf("2026-11-27T10:%02d:00.000000Z", i), "pnl": span * float64(i) / 10,
			"unrealized_pnl": 0, "price": 0.5, "coin_price": 90000, "in_position": false})
	}
	b, _ := json.Marshal(map[string]any{"success": true, "timestamp": start, "data": map[string]any{
		"market":   map[string]any{"slug": slug, "market_type": "15m", "winner": "UP", "start_time": start, "end_time": "2026-11-27T10:15:00.000000Z"},
		"strategy": map[string]any{"side": "UP", "positionSize": 100, "orderType": "MARKET", "entryConditionCount": 1, "exitConditionCount": 1, "feeModel": "NONE", "latencyMs": 0},
		"performance": map[string]any{"total_pnl": span, "total_pnl_percent": 1, "max_drawdown": 0, "max_drawdown_percent": 0, "total_trades": 0,
			"winning_trades": 0, "losing_trades": 0, "win_rate": 0, "avg_trade_pnl": 0, "best_trade": 0, "worst_trade": 0, "time_in_position_pct": 0,
			"final_market_outcome": "UP", "total_fees": 0},
		"trades": []any{}, "pnl_curve": curve, "total_snapshots": 11}})
	return b
}
