package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
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

	t.Run("the agent's pnl chart numbers its markets as the table does", func(t *testing.T) {
		pro := pro.in(t)
		// Three markets, newest first as the API lists them; the middle one
		// had no data: market 2 of the table, and of the chart, with no bar.
		res := func(slug string, pnl float64, trades int) map[string]any {
			return map[string]any{"slug": slug, "performance": map[string]any{"total_pnl": pnl, "total_trades": trades, "win_rate": 100 * float64(trades)}}
		}
		slugs := []string{"btc-updown-15m-1764500400", "btc-updown-15m-1764499500", "btc-updown-15m-1764498600"}
		answer, _ := json.Marshal(map[string]any{"data": map[string]any{
			"strategy_code": "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10",
			"aggregate":     map[string]any{"total_pnl": 1.5, "markets_tested": 3, "markets_traded": 2, "total_trades": 2, "win_rate": 50, "avg_market_pnl": 0.5, "max_drawdown": 1},
			"results":       []any{res(slugs[0], 2.5, 1), map[string]any{"slug": slugs[1], "error": map[string]any{"code": "NO_DATA", "message": "no snapshots"}}, res(slugs[2], -1, 1)},
		}})
		defer pro.answerJSON("*/v1/backtest-ai/run", "/v1/backtest-ai/run", answer)()
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`),
			chromedp.WaitVisible(byID("agent-pnl-chart")+`[data-x-ticks]`))
		var got struct {
			Table  map[string]string // the row's market number (its "#" cell) by slug
			Ticks  []string
			Points string
			Slugs  []string
		}
		pro.eval(`(() => {
			const chart = document.querySelector('[data-testid=agent-pnl-chart]');
			const table = {};
			const heads = [...document.querySelectorAll('[data-testid=agent-results-table] thead th')].map(th => th.textContent);
			const col = heads.indexOf('#');
			for (const r of document.querySelectorAll('[data-testid=agent-results-table] tbody tr')) table[r.dataset.slug] = col < 0 ? '' : r.cells[col].textContent;
			return {Table: table, Ticks: JSON.parse(chart.dataset.xTicks || '[]'), Points: chart.dataset.points || '', Slugs: JSON.parse(chart.dataset.slugs || '[]')} })()`, &got)
		// Market 1 is the oldest, the last the API lists.
		for i, slug := range slugs {
			if want := []string{"3", "2", "1"}[i]; got.Table[slug] != want {
				t.Errorf("the table numbers %s %q, want %s (1 = oldest): %q", slug, got.Table[slug], want, got.Table)
			}
		}
		if strings.Join(got.Ticks, " ") != "1 2 3" || got.Points != "3" {
			t.Errorf("the chart's markets are %q (%s points): want 1 2 3, the table's, the one without data among them", got.Ticks, got.Points)
		}
		if want := []string{slugs[2], slugs[1], slugs[0]}; strings.Join(got.Slugs, " ") != strings.Join(want, " ") {
			t.Errorf("the chart's markets 1, 2, 3 are %q, want %q", got.Slugs, want)
		}
	})

	t.Run("the fee hint shows only where a fee model applies", func(t *testing.T) {
		pro := pro.in(t)
		for _, page := range []string{"agent", "replay"} {
			pro.visit("#/"+page, page)
			models := []string{"NONE", "MARKET", "CUSTOM"}
			if page == "agent" {
				models = append([]string{""}, models...) // from the prompt or code
			}
			for _, model := range models {
				pro.setValue(byID(page+"-fee-model"), model)
				var hint string
				pro.eval(`(() => { const f = document.querySelector('[data-testid=`+page+`-fee-model]').closest('.field');
					return [...f.querySelectorAll('small')].filter(s => s.getClientRects().length > 0).map(s => s.textContent).join(' ') })()`, &hint)
				applies := model == "MARKET" || model == "CUSTOM"
				if applies && hint != "Taker fees; makers pay none." || !applies && hint != "" {
					t.Errorf("%s page, fee model %q: the hint under Fees is %q", page, model, hint)
				}
			}
		}
	})

	t.Run("the heatmaps' captions say what the cells are and on which markets", func(t *testing.T) {
		pro := pro.in(t)
		sweepShown(pro)
		var captions []string
		pro.eval(`[...document.querySelectorAll('[data-testid^=heatmap-] caption')].map(c => c.textContent)`, &captions)
		want := []string{"Train: each trial’s total pnl on the train markets, where the best trial is picked", "Test: each trial’s total pnl on the test markets, which it never saw"}
		if strings.Join(captions, "|") != strings.Join(want, "|") {
			t.Errorf("the heatmaps' captions %q, want %q", captions, want)
		}
	})
}
