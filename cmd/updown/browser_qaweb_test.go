package main

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardQAWeb: what a person using the dashboard met that the pages
// got wrong, each checked in a real browser against `updown dev`.
func TestDashboardQAWeb(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a backtest without a trade has no win rate", func(t *testing.T) {
		pro := pro.in(t)
		// The API's aggregate says win_rate 0 beside total_trades 0; with no
		// trade there is no rate, as the replay page and the per-market rows
		// show it (—), not 0.0%.
		code := "side=UP entry: price_up < 0.001 exit: price_up >= 0.6 size=10"
		var want struct {
			Data struct {
				Aggregate struct {
					TotalTrades int     `json:"total_trades"`
					WinRate     float64 `json:"win_rate"`
				}
			}
		}
		status, tok := post(t, base+"/v1/auth/token", "ud_dev_pro", "")
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		apiPost(t, base, "/v1/backtest-ai/run", "Authorization: Bearer "+tok["access_token"].(string),
			`{"strategy_code":"`+code+`","coin":"BTC","marketType":"15m","marketCount":2}`, &want)
		if want.Data.Aggregate.TotalTrades != 0 {
			t.Fatalf("the code traded %d times on dev data; the test needs one that never trades", want.Data.Aggregate.TotalTrades)
		}
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), code)
		pro.setValue(byID("agent-type"), "15m")
		pro.setValue(byID("agent-count"), "2")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		if got := pro.text(byID("agent-total-trades")); got != "0" {
			t.Errorf("trades %q, want 0", got)
		}
		var got string
		pro.eval(`(document.querySelector('[data-testid=agent-win-rate]')||{}).textContent||''`, &got)
		if got != "—" {
			t.Errorf("a backtest without a trade shows the win rate %q; want —", got)
		}
	})

	t.Run("a resting order's options fit a phone", func(t *testing.T) {
		pro := pro.in(t)
		// A fieldset is as wide as its widest content unless told
		// otherwise: the GTC options' long queue-model choices pushed the
		// replay and sweeps pages sideways on a 390 px screen.
		pro.run("phone", chromedp.EmulateViewport(390, 844))
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		for _, p := range []struct{ hash, page, order string }{
			{"#/replay", "replay", byID("order-type")},
			{"#/sweeps", "sweeps", byID("sweep-form") + " " + byID("order-type")},
		} {
			pro.visit(p.hash, p.page)
			pro.setValue(p.order, "GTC")
			pro.setValue(byID("gtc-queue"), "RISK_AVERSE")
			var wide []string
			pro.eval(`[...document.querySelectorAll('fieldset, select')].filter(e => e.offsetParent && e.getBoundingClientRect().right > window.innerWidth + 0.5)
				.map(e => e.tagName.toLowerCase() + (e.dataset.testid ? '[' + e.dataset.testid + ']' : ''))`, &wide)
			var overflow float64
			pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
			if overflow > 0 {
				t.Errorf("%s with a GTC order is %v px wider than a 390 px screen: %v reach past it", p.hash, overflow, wide)
			}
		}
	})
}
