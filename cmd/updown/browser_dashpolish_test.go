package main

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardPolish: what a pass over the dashboard's figures and words
// left uneven. Fees are written to the 5 decimals Polymarket rounds them
// to on every page, where the replay wrote 5, the agent's backtest and the
// sweeps 3.
func TestDashboardPolish(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	// A small sweep with the market's fees, started first: it runs while
	// the other subtests do.
	status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100,"feeModel":"MARKET"},
		"parameters":[{"path":"/entryConditions/0/value","values":[0.4,0.5]}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":6},"split":{"kind":"HOLDOUT","testFraction":0.3}}`)
	data, _ := m["data"].(map[string]any)
	sweepID, _ := data["sweep_id"].(string)
	if status != http.StatusAccepted || sweepID == "" {
		t.Fatalf("start a sweep: %d %v", status, m)
	}
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	// sweepShown opens the sweep's page once it is done.
	sweepShown := func(pro *browserSession) {
		pro.t.Helper()
		pro.visit("#/sweeps/"+sweepID, "sweeps")
		pro.runUntil("the sweep finishes", 3*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(byID("heatmap-train")))
	}
	feeForm := regexp.MustCompile(`^\$\d{1,3}(,\d{3})*\.\d{5}$`)

	t.Run("fees have 5 decimals on every page", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10 fees=market")
		pro.setValue(byID("agent-count"), "3")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var agent string
		pro.eval(`(document.querySelector('[data-testid=agent-total-fees]') || [...document.querySelectorAll('#app dt, main dt')]
			.find(d => d.textContent === 'Fees paid')?.nextElementSibling || {}).textContent || ''`, &agent)

		pro.visit("#/replay?market="+url.QueryEscape(marketWithData(t, base, "15m")), "replay")
		pro.run("replay", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="1"]`))
		replay := pro.text(byID("replay-total-fees"))

		sweepShown(pro)
		var sweep string
		pro.eval(`(document.querySelector('[data-testid=stat-row][data-stat=total_fees] [data-testid=stat-train]') || {}).textContent || ''`, &sweep)
		for _, c := range []struct{ where, shown string }{{"the agent's Fees paid", agent}, {"the replay's Total fees", replay}, {"the sweep's train Fees", sweep}} {
			if !feeForm.MatchString(c.shown) {
				t.Errorf("%s shows %q: want dollars with 5 decimals, as Polymarket rounds fees", c.where, c.shown)
			}
		}
	})
}
