package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardQADash2: what a person met reading results on a phone and
// the fee schedules of markets and replays, each checked in a real
// browser against `updown dev` (answers the test shapes are put in the
// browser's way).
func TestDashboardQADash2(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	// One listener answers every replay with the answer under test.
	var answer atomic.Value
	answer.Store(feeReplayAnswer(slug15, map[string]any{"feeModel": "NONE"}, 1))
	defer pro.answerBy("*/v1/replay", "/v1/replay", func(string) (int64, []byte, bool) { return 200, answer.Load().([]byte), true })()
	runs := 0
	replay := func(pro *browserSession) {
		runs++
		pro.run("replay", chromedp.Click(byID("replay-submit")),
			chromedp.WaitVisible(byID("replay-results")+fmt.Sprintf(`[data-run="%d"]`, runs)))
	}

	t.Run("a result's cards keep their values inside a phone's screen", func(t *testing.T) {
		pro := pro.in(t)
		// At phone width a table's rows are cards of two columns, each
		// cell its label and value on one line: "Cumulative pnl" beside
		// −$12,345.67 is wider than half a 375 px screen, and the value
		// ran out of its card and the page sideways.
		pro.run("phone", chromedp.EmulateViewport(375, 800))
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		runs = 0
		answer.Store(feeReplayAnswer(slug15, map[string]any{"feeModel": "NONE"}, 12345.67))
		replay(pro)
		var spill []string
		pro.eval(`[...document.querySelectorAll('[data-testid=trades-table] td')].filter(c => c.scrollWidth > c.clientWidth + 1)
			.map(c => (c.dataset.label || '') + ' ' + c.textContent + ': ' + c.scrollWidth + ' px in ' + c.clientWidth)`, &spill)
		if len(spill) > 0 {
			t.Errorf("trade cells wider than their place in the card at 375 px: %q", spill)
		}
		var overflow float64
		pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
		if overflow > 0 {
			t.Errorf("the replay's result is %v px wider than a 375 px screen", overflow)
		}
		var shown bool
		pro.eval(`[...document.querySelectorAll('[data-testid=trades-table] td')].some(c => c.textContent.includes('12,345.67'))`, &shown)
		if !shown {
			t.Errorf("no cell shows the cumulative pnl −$12,345.67: nothing was checked")
		}
	})

	t.Run("a replay and a market say the fee schedule, a crypto_fees market's times p", func(t *testing.T) {
		pro := pro.in(t)
		// The result showed the fees paid and never the schedule they
		// were charged on: a crypto_fees market (Polymarket's first
		// crypto curve) charges the schedule's fee times p once more,
		// which the screen must say for its figures to be read.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		runs = 0
		shown := func() string {
			var s string
			pro.eval(`(document.querySelector('[data-testid=replay-fee-schedule]') || {}).textContent || ''`, &s)
			return s
		}
		for _, c := range []struct {
			fees      map[string]any
			want, not []string
		}{
			{map[string]any{"feeModel": "MARKET", "feeRate": 0.25, "feeExponent": 2, "feeType": "crypto_fees"}, []string{"market", "crypto_fees", "shares × 0.25 × p × (p(1−p))²"}, []string{"v2"}},
			{map[string]any{"feeModel": "MARKET", "feeRate": 0.07, "feeExponent": 1, "feeType": "crypto_fees_v2"}, []string{"market", "crypto_fees_v2", "shares × 0.07 × p(1−p)"}, []string{"p × p"}},
			{map[string]any{"feeModel": "MARKET", "feeRate": 0, "feeExponent": 1}, []string{"market", "none"}, []string{"×"}},
			{map[string]any{"feeModel": "CUSTOM", "feeRate": 0.05, "feeExponent": 2}, []string{"custom", "shares × 0.05 × (p(1−p))²"}, []string{"crypto", "p × ("}},
			{map[string]any{"feeModel": "NONE"}, []string{"none"}, []string{"×"}},
		} {
			answer.Store(feeReplayAnswer(slug15, c.fees, 10))
			replay(pro)
			got := shown()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("fees %v: the result says its fees were %q; want it to say %q", c.fees, got, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(got, w) {
					t.Errorf("fees %v: the result says its fees were %q, with %q", c.fees, got, w)
				}
			}
		}

		// The market page: its own schedule, as the API answers it, and
		// a crypto_fees market's (the series' market answered so).
		var m struct {
			TakerFeeRate float64 `json:"taker_fee_rate"`
			FeeExponent  int     `json:"fee_exponent"`
			FeeType      string  `json:"fee_type"`
		}
		apiGet(t, base, "/v1/markets/"+url.PathEscape(slug15), "ud_dev_pro", &m)
		if m.FeeType != "crypto_fees_v2" || m.TakerFeeRate != 0.07 || m.FeeExponent != 1 {
			t.Fatalf("dev's market has the fee schedule %+v: the test expects 0.07, 1, crypto_fees_v2", m)
		}
		marketFee := func() string {
			var s string
			pro.eval(`(document.querySelector('[data-testid=market-fee]') || {}).textContent || ''`, &s)
			return s
		}
		pro.visit("#/market/"+url.PathEscape(slug15), "market")
		if got := marketFee(); !strings.Contains(got, "shares × 0.07 × p(1−p) (crypto_fees_v2)") || !strings.Contains(got, "20%") {
			t.Errorf("the market page says its taker fee is %q; want shares × 0.07 × p(1−p) (crypto_fees_v2) and the makers' 20%%", got)
		}
		var series map[string]any
		apiGet(t, base, "/v1/markets/"+url.PathEscape(slug15)+"/series?points=2000", "ud_dev_pro", &series)
		data, _ := series["data"].(map[string]any)
		market, _ := data["market"].(map[string]any)
		if market == nil {
			t.Fatalf("the series answer has no market: %v", series)
		}
		market["fee_type"], market["taker_fee_rate"], market["fee_exponent"] = "crypto_fees", 0.25, 2
		crypto, _ := json.Marshal(series)
		stop := pro.answerBy("*/series*", "/series", func(string) (int64, []byte, bool) { return 200, crypto, true })
		pro.visit("#/market/"+url.PathEscape(slug15), "market")
		stop()
		if got := marketFee(); !strings.Contains(got, "shares × 0.25 × p × (p(1−p))² (crypto_fees)") {
			t.Errorf("a crypto_fees market's page says its taker fee is %q; want shares × 0.25 × p × (p(1−p))² (crypto_fees)", got)
		}
	})

	t.Run("a replay without a trade says so, with no trade figures", func(t *testing.T) {
		pro := pro.in(t)
		// A strategy that never entered: the API answers its per-trade
		// figures 0, which read as a trade that broke even ("Best trade
		// $0.00"), and the trades table was a header over nothing.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		runs = 0
		var none map[string]any
		if err := json.Unmarshal(feeReplayAnswer(slug15, map[string]any{"feeModel": "NONE"}, 0), &none); err != nil {
			t.Fatal(err)
		}
		data := none["data"].(map[string]any)
		data["trades"] = []any{}
		perf := data["performance"].(map[string]any)
		for _, k := range []string{"total_trades", "losing_trades", "avg_trade_pnl", "best_trade", "worst_trade", "total_fees", "time_in_position_pct", "total_pnl_percent", "max_drawdown_percent"} {
			perf[k] = 0
		}
		b, _ := json.Marshal(none)
		answer.Store(b)
		replay(pro)
		var figs map[string]string
		pro.eval(`Object.fromEntries([...document.querySelectorAll('[data-testid=replay-results] dl.figures > div')].map(d => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]))`, &figs)
		for _, k := range []string{"Win rate", "Average trade", "Best trade", "Worst trade"} {
			if figs[k] != "—" {
				t.Errorf("without a trade the result's %s is %q; want — (figures %q)", k, figs[k], figs)
			}
		}
		if figs["Trades"] != "0" || figs["Total pnl"] != "$0.00" {
			t.Errorf("without a trade the result says Trades %q, Total pnl %q; want 0 and $0.00", figs["Trades"], figs["Total pnl"])
		}
		var body string
		pro.eval(`(document.querySelector('[data-testid=trades-table] tbody') || {}).textContent || ''`, &body)
		if !strings.Contains(body, "No trade") {
			t.Errorf("the trades table of a replay without a trade holds %q; want it to say there was none", body)
		}
	})

	t.Run("an error quoting a long value keeps to the screen", func(t *testing.T) {
		pro := pro.in(t)
		// The API quotes what it was given: a market address of 200
		// digits, unbroken, pushed the error banner (and the page) 1,400
		// px wide, at phone width and at 1280 px alike.
		long := "btc-updown-15m-" + strings.Repeat("9", 200)
		for _, width := range []int64{1280, 375} {
			pro.run("viewport", chromedp.EmulateViewport(width, 800))
			pro.visit("#/markets", "markets")
			pro.visit("#/market/"+long, "market")
			pro.run("the error", chromedp.WaitVisible(byID("error-banner")))
			if got := pro.text(byID("error-banner")); !strings.Contains(got, "NOT_FOUND") {
				t.Fatalf("the banner says %q; want a NOT_FOUND error", got)
			}
			var overflow float64
			pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
			if overflow > 0 {
				t.Errorf("at %d px the page with the error of a long market address is %v px wider than the screen", width, overflow)
			}
		}
		pro.run("wide again", chromedp.EmulateViewport(1280, 800))
	})

	t.Run("a refused key gives the keyboard back to the key box", func(t *testing.T) {
		// A mistyped key: the banner says it was refused, and the keyboard
		// stayed on Sign in, where a keyboard user had to find the box
		// again (and a screen reader heard nothing of which box was wrong).
		b := open(t, base)
		b.run("load the sign-in page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(byID("signin-key")))
		b.run("sign in with a wrong key", chromedp.SendKeys(byID("signin-key"), "ud_dev_nosuchkey"), chromedp.Click(byID("signin-submit")),
			chromedp.WaitVisible(byID("error-banner")))
		if got := b.text(byID("error-banner")); !strings.Contains(got, "UNAUTHORIZED") {
			t.Fatalf("the banner says %q; want UNAUTHORIZED", got)
		}
		var state struct {
			Focus, Invalid string
			Selected       bool
		}
		b.eval(`(() => { const k = document.querySelector('[data-testid=signin-key]');
			return {Focus: document.activeElement.dataset.testid || document.activeElement.tagName, Invalid: k.getAttribute('aria-invalid') || '',
				Selected: k.selectionStart === 0 && k.selectionEnd === k.value.length && k.value.length > 0} })()`, &state)
		if state.Focus != "signin-key" || state.Invalid != "true" || !state.Selected {
			t.Errorf("after a refused key the keyboard is on %q, the key box aria-invalid=%q, its key selected %v; want the box, marked invalid, its key selected to type over",
				state.Focus, state.Invalid, state.Selected)
		}
		// Typed over where the keyboard is, the right key signs in.
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.KeyEvent("ud_dev_pro"), chromedp.KeyEvent("\r"), chromedp.WaitVisible(`main[data-ready="markets"]`)); err != nil {
			var typed string
			b.eval(`document.querySelector('[data-testid=signin-key]') ? document.querySelector('[data-testid=signin-key]').value : ''`, &typed)
			t.Errorf("the right key typed at once after the refused one did not sign in (%v): the box holds %q", err, typed)
		}
	})
}

// feeReplayAnswer is a replay's answer on slug with the strategy echo's
// fee fields given and two trades, the exit's cumulative pnl −cum.
func feeReplayAnswer(slug string, fees map[string]any, cum float64) []byte {
	const start = "2026-11-27T10:00:00.000000Z"
	strategy := map[string]any{"side": "UP", "positionSize": 100, "orderType": "MARKET", "entryConditionCount": 1, "exitConditionCount": 1, "latencyMs": 0}
	for k, v := range fees {
		strategy[k] = v
	}
	trade := func(typ, at string, price, fee, pos float64) map[string]any {
		return map[string]any{"type": typ, "reason": "SIGNAL", "time": at, "price": price, "fill_price": price, "shares": 100, "slippage": 0,
			"fee": fee, "position_pnl": pos, "cumulative_pnl": pos, "coin_price": 90000}
	}
	curve := []map[string]any{}
	for i := 0; i <= 10; i++ {
		curve = append(curve, map[string]any{"time": fmt.Sprintf("2026-11-27T10:%02d:00.000000Z", i), "pnl": -cum * float64(i) / 10,
			"unrealized_pnl": 0, "price": 0.5, "coin_price": 90000, "in_position": i > 0 && i < 10})
	}
	b, _ := json.Marshal(map[string]any{"success": true, "timestamp": start, "data": map[string]any{
		"market":   map[string]any{"slug": slug, "market_type": "15m", "winner": "Down", "start_time": start, "end_time": "2026-11-27T10:15:00.000000Z"},
		"strategy": strategy,
		"performance": map[string]any{"total_pnl": -cum, "total_pnl_percent": -50, "max_drawdown": cum, "max_drawdown_percent": 100, "total_trades": 1,
			"winning_trades": 0, "losing_trades": 1, "win_rate": 0, "avg_trade_pnl": -cum, "best_trade": -cum, "worst_trade": -cum, "time_in_position_pct": 80,
			"final_market_outcome": "Down", "total_fees": 1.75},
		"trades":    []any{trade("ENTRY", "2026-11-27T10:01:00.000000Z", 0.5, 1.75, 0), trade("EXIT", "2026-11-27T10:09:00.000000Z", 0.01, 0, -cum)},
		"pnl_curve": curve, "total_snapshots": 11}})
	return b
}
