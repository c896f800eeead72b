package main

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// focused is the data-testid of the element that has the keyboard ("" for
// none, "BODY" when it fell to the page).
func (b *browserSession) focused() string {
	b.t.Helper()
	var id string
	b.eval(`document.activeElement === document.body ? 'BODY' : (document.activeElement && document.activeElement.dataset.testid) || ''`, &id)
	return id
}

// TestBrowserQA22: the dashboard's defects found in the twenty-second
// session's QA, each checked in a real browser against `updown dev`.
func TestBrowserQA22(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")

	t.Run("the last generation of the month leaves the keyboard on the code", func(t *testing.T) {
		// The generate button is disabled when the quota runs out: the
		// keyboard it held goes to the code box, which the generation filled,
		// not to the page's top.
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		const code = "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100 coin=BTC type=15m"
		body, _ := json.Marshal(map[string]any{"success": true, "data": map[string]any{
			"strategy_code":      code,
			"generated_strategy": map[string]any{"explanation": "Buys UP below 0.45."},
			"quota":              map[string]any{"used": 5, "limit": 5, "remaining": 0, "resets_at": "2026-12-01T00:00:00Z"},
		}, "timestamp": "2026-11-30T00:00:00Z"})
		defer pro.answerJSON("*/v1/backtest-ai/generate*", "/v1/backtest-ai/generate", body)()
		pro.run("generate by keyboard", chromedp.Focus(byID("agent-generate")), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(byID("agent-quota")+`[data-used="5"]`), chromedp.WaitVisible(byID("agent-generate")+`:not([aria-busy])`))
		var disabled bool
		pro.eval(`document.querySelector('[data-testid=agent-generate]').disabled`, &disabled)
		if !disabled {
			t.Error("with no generation left the generate button is enabled")
		}
		if got := pro.focused(); got != "agent-code" {
			t.Errorf("after the month's last generation the keyboard is on %q; want the code box (agent-code)", got)
		}
	})

}
