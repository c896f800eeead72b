package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// TestDashboardQAWebThirdPass: what a third pass over the dashboard, as a
// user comparing each screen with the API's answer, found the pages
// getting wrong, each checked in a real browser against `updown dev`.
func TestDashboardQAWebThirdPass(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	// A sweep over the newest 20 BTC 15m markets, started first: it runs
	// while the other subtests do.
	status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":10},
		"parameters":[{"path":"/entryConditions/0/value","values":[0.3,0.35,0.4,0.45,0.5,0.55,0.6]}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":20}}`)
	data, _ := m["data"].(map[string]any)
	sweepID, _ := data["sweep_id"].(string)
	if status != http.StatusAccepted || sweepID == "" {
		t.Fatalf("start a sweep: %d %v", status, m)
	}
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("the agent's backtest says how many of its markets failed", func(t *testing.T) {
		// Dev data's collector outage leaves a resolved 15m market without
		// snapshots among the newest ten: its replay fails (NO_DATA). The
		// answer counts it in markets_tested and in markets_failed, and
		// averages over the others; the page said "Markets tested 10" and
		// "Average per market" (the total over 9) without a word of it.
		const code = "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10"
		status, tok := call(t, http.MethodPost, base+"/v1/auth/token", "X-API-Key: ud_dev_pro", "")
		token, _ := tok["access_token"].(string)
		if status != http.StatusOK || token == "" {
			t.Fatalf("a token: %d %v", status, tok)
		}
		var res struct {
			Data struct {
				Aggregate struct {
					Tested int `json:"markets_tested"`
					Failed int `json:"markets_failed"`
				}
			}
		}
		apiPost(t, base, "/v1/backtest-ai/run", "Authorization: Bearer "+token,
			`{"strategy_code":"`+code+`","coin":"BTC","marketType":"15m","marketCount":10}`, &res)
		a := res.Data.Aggregate
		if a.Failed == 0 {
			t.Fatalf("no market of the newest ten failed (%+v): the dev data's outage moved", a)
		}
		pro := pro.in(t)
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), code)
		pro.setValue(byID("agent-coin"), "BTC")
		pro.setValue(byID("agent-type"), "15m")
		pro.setValue(byID("agent-count"), "10")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var shown string
		pro.eval(`([...document.querySelectorAll('[data-testid=agent-results] dt')].find(d => d.textContent === 'Markets tested')?.nextElementSibling || {}).textContent || ''`, &shown)
		if want := fmt.Sprintf("%d (%d failed)", a.Tested, a.Failed); shown != want {
			t.Errorf("Markets tested shows %q; want %q, as the answer's markets_tested and markets_failed", shown, want)
		}
	})

	t.Run("the sweep's chart draws no bar for a market without a result", func(t *testing.T) {
		// The same outage's market is among the sweep's: per_market gives
		// it pnl 0 with error NO_DATA. The best trial's chart drew it as a
		// train bar of $0.00, a market replayed that made nothing, where the
		// agent's chart draws no bar and the table says the error.
		pro := pro.in(t)
		pro.visit("#/sweeps/"+sweepID, "sweeps")
		pro.runUntil("the sweep finishes", 3*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(byID("sweep-best-chart")+`[data-x-ticks]`))
		var sw struct {
			Data struct {
				Results struct {
					Best struct {
						PerMarket []struct {
							Slug  string
							Error string
						} `json:"per_market"`
					}
				}
			}
		}
		apiGet(t, base, "/v1/sweeps/"+sweepID, "ud_dev_pro", &sw)
		k := -1
		for i, pm := range sw.Data.Results.Best.PerMarket {
			if pm.Error != "" {
				k = i
				break
			}
		}
		if k < 0 {
			t.Fatalf("no market of the sweep's 20 failed: the dev data's outage moved")
		}
		n := len(sw.Data.Results.Best.PerMarket)
		// The pointer over market k+1's place on the chart, as a user
		// reads a bar: the legend says what the chart has there.
		var box struct{ X, Y, W, H float64 }
		sel := byID("sweep-best-chart") + " .u-over"
		pro.run("the chart in view", chromedp.ScrollIntoView(sel))
		pro.eval(`(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height} })()`, &box)
		x := box.X + (float64(k)+0.5)/float64(n)*box.W
		pro.run("point at market "+fmt.Sprint(k+1), chromedp.MouseEvent(input.MouseMoved, x, box.Y+box.H/2))
		var legend []string
		pro.eval(`[...document.querySelectorAll('[data-testid=sweep-best-chart] .u-legend .u-series')].map(s => s.textContent.trim())`, &legend)
		if len(legend) != 4 || !strings.Contains(legend[0], sw.Data.Results.Best.PerMarket[k].Slug) {
			t.Fatalf("the legend at market %d: %q", k+1, legend)
		}
		for _, s := range legend[1:] {
			if strings.Contains(s, "$") {
				t.Errorf("market %d (%s, %s) shows %q: a market without a result has no pnl (legend %q)", k+1, sw.Data.Results.Best.PerMarket[k].Slug, sw.Data.Results.Best.PerMarket[k].Error, s, legend)
			}
		}
	})

	t.Run("removing a condition or a parameter by keyboard keeps the keyboard in the list", func(t *testing.T) {
		// Remove took its row, and the button with it, out of the page:
		// the keyboard fell to the document, and the focus ring with it.
		pro := pro.in(t)
		pro.forgetDrafts()
		// focused names the control with the keyboard: its data-testid, or
		// its row's and its own text.
		focused := func() string {
			var s string
			pro.eval(`(() => { const e = document.activeElement; if (!e || e === document.body) return 'the page';
				const row = e.closest('[data-testid=replay-exit], [data-testid=sweep-param], [data-testid=sweep-strategy-exit]');
				return e.dataset.testid || (row ? row.dataset.testid + ' ' + [...row.parentElement.children].indexOf(row) + ' ' + e.textContent : e.tagName) })()`, &s)
			return s
		}
		remove := func(sel string) {
			pro.run("remove "+sel, chromedp.Focus(sel), chromedp.KeyEvent("\r"))
		}
		pro.visit("#/replay", "replay")
		// The default strategy has two exits: removing the first leaves the
		// keyboard on the Remove of the one now first; removing that, on
		// "+ Exit condition".
		remove(byID("replay-exit") + ":nth-child(1) button")
		if got := focused(); got != "replay-exit 0 Remove" {
			t.Errorf("after removing the first exit the keyboard is on %q; want the next exit's Remove (replay-exit 0 Remove)", got)
		}
		remove(byID("replay-exit") + ":nth-child(1) button")
		if got := focused(); got != "replay-add-exit" {
			t.Errorf("after removing the last exit the keyboard is on %q; want replay-add-exit", got)
		}
		pro.visit("#/sweeps", "sweeps")
		// Two parameters by default: the last's Remove goes to the one before.
		remove(byID("sweep-param") + ":nth-child(2) button")
		if got := focused(); got != "sweep-param 0 Remove" {
			t.Errorf("after removing the last parameter the keyboard is on %q; want the one before's Remove (sweep-param 0 Remove)", got)
		}
		remove(byID("sweep-param") + ":nth-child(1) button")
		if got := focused(); got != "sweep-add-param" {
			t.Errorf("after removing the only parameter the keyboard is on %q; want sweep-add-param", got)
		}
	})

	t.Run("a market's chart breaks its lines where no snapshots were recorded", func(t *testing.T) {
		// The dev collector's outage is a recording gap inside a longer
		// market: the chart joined the last prices before it to the first
		// after it with straight lines, prices no one recorded.
		pro := pro.in(t)
		type gap struct{ From, To time.Time }
		var slug string
		var hole gap
		for _, mt := range []string{"1hr", "4hr", "24hr"} {
			var list struct{ Markets []struct{ Slug string } }
			apiGet(t, base, "/v1/markets?coin=BTC&resolved=true&limit=30&market_type="+mt, "ud_dev_pro", &list)
			for _, m := range list.Markets {
				var gaps struct {
					Gaps []struct {
						From, To time.Time
						Kind     string
					}
				}
				apiGet(t, base, "/v1/markets/"+m.Slug+"/gaps", "ud_dev_pro", &gaps)
				for _, g := range gaps.Gaps {
					if g.Kind != "" && g.Kind != "snapshots" {
						continue
					}
					var first, last struct{ Snapshots []struct{ Time time.Time } }
					apiGet(t, base, "/v1/markets/"+m.Slug+"/snapshots?order=asc&limit=1", "ud_dev_pro", &first)
					apiGet(t, base, "/v1/markets/"+m.Slug+"/snapshots?order=desc&limit=1", "ud_dev_pro", &last)
					if len(first.Snapshots) == 1 && len(last.Snapshots) == 1 && first.Snapshots[0].Time.Before(g.From) && last.Snapshots[0].Time.After(g.To) {
						slug, hole = m.Slug, gap{g.From, g.To}
					}
				}
				if slug != "" {
					break
				}
			}
			if slug != "" {
				break
			}
		}
		if slug == "" {
			t.Fatal("no BTC market with snapshots on both sides of a recording gap: the dev data's outage moved")
		}
		var series struct{ Data struct{ Time []int64 } }
		apiGet(t, base, "/v1/markets/"+slug+"/series?points=2000", "ud_dev_pro", &series)
		ts := series.Data.Time
		pro.visit("#/market/"+slug, "market")
		// The gaps listed under the chart: the page has its answer.
		pro.run("the gaps listed", chromedp.WaitVisible(byID("market-gaps")+" li"))
		// The columns of the plot over the gap's middle (the x scale runs
		// from the first point to the last), and in them any pixel of a
		// line's colour: strongly coloured, where the grid is grey and the
		// min-max shading pale.
		mid := float64(hole.From.UnixMilli()+hole.To.UnixMilli()) / 2
		frac := (mid - float64(ts[0])) / float64(ts[len(ts)-1]-ts[0])
		var coloured int
		pro.eval(fmt.Sprintf(`(() => {
			const chart = document.querySelector('[data-testid=market-chart]');
			const over = chart.querySelector('.u-over').getBoundingClientRect();
			const canvas = chart.querySelector('canvas');
			const c = canvas.getBoundingClientRect();
			const k = canvas.width / c.width;
			const x = Math.round((over.left + %f * over.width - c.left) * k);
			const img = canvas.getContext('2d').getImageData(x - 3, Math.round((over.top - c.top) * k), 7, Math.round(over.height * k));
			let n = 0;
			for (let i = 0; i < img.data.length; i += 4) {
				const [r, g, b] = img.data.slice(i, i + 3);
				if (Math.max(r, g, b) - Math.min(r, g, b) > 80) n++;
			}
			return n })()`, frac), &coloured)
		if coloured > 0 {
			t.Errorf("%s: %d pixels of a line in the middle of its recording gap %s → %s: the chart draws prices that were not recorded",
				slug, coloured, hole.From.Format(time.RFC3339), hole.To.Format(time.RFC3339))
		}
	})

	t.Run("a market's chart follows the window when it narrows", func(t *testing.T) {
		// Drawn at 1280 px, the chart kept that width when the window
		// narrowed to a phone's (turned, or resized): the page scrolled
		// sideways by 900 px. A page loaded at 390 px was fine.
		pro := pro.in(t)
		pro.run("desktop width", chromedp.EmulateViewport(1280, 800))
		slug := marketWithData(t, base, "15m")
		pro.visit("#/market/"+slug, "market")
		pro.run("the chart", chromedp.WaitVisible(byID("market-chart")+" canvas"))
		var wide float64
		pro.eval(`document.querySelector('[data-testid=market-chart] canvas').getBoundingClientRect().width`, &wide)
		if wide <= 390 {
			t.Fatalf("the chart is %v px wide at 1280 px: nothing to narrow", wide)
		}
		pro.run("phone width", chromedp.EmulateViewport(390, 844))
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		var overflow, chart float64
		for deadline := time.Now().Add(10 * time.Second); ; {
			pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
			pro.eval(`document.querySelector('[data-testid=market-chart] canvas').getBoundingClientRect().width`, &chart)
			if overflow <= 1 && chart <= 390 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if overflow > 1 || chart > 390 {
			t.Errorf("narrowed to 390 px, the chart is %v px wide and the page scrolls %v px sideways", chart, overflow)
		}
	})

	t.Run("a heatmap's caption stays readable on a phone", func(t *testing.T) {
		// Seven trials across: at 390 px the map is wider than the screen
		// and scrolls sideways in its box; its caption, as wide as the
		// map, was cut at the box's edge mid-word.
		pro := pro.in(t)
		pro.run("phone width", chromedp.EmulateViewport(390, 844))
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		pro.visit("#/sweeps/"+sweepID, "sweeps")
		pro.runUntil("the sweep finishes", 3*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(byID("heatmap-train")))
		var got struct {
			Table, Box, Caption, CaptionRight, BoxRight float64
		}
		pro.eval(`(() => { const t = document.querySelector('[data-testid=heatmap-train]'); const box = t.closest('.heatmap-box');
			const c = t.querySelector('caption').getBoundingClientRect(); const b = box.getBoundingClientRect();
			return {Table: t.getBoundingClientRect().width, Box: b.width, Caption: c.width, CaptionRight: c.right, BoxRight: b.right} })()`, &got)
		if got.Table <= got.Box {
			t.Fatalf("the map (%v px) fits its box (%v px) at 390 px: nothing to check", got.Table, got.Box)
		}
		if got.CaptionRight > got.BoxRight+0.5 {
			t.Errorf("the caption runs %v px past its box's edge at 390 px (caption %v px wide, box %v px)", got.CaptionRight-got.BoxRight, got.Caption, got.Box)
		}
	})

	t.Run("the replay page says when a pasted code was made for other markets", func(t *testing.T) {
		// The agent's code names its coin and market type, and its page
		// says to paste it into the replay page's box; the builder drops
		// both (a replay takes them from its market) and said "The builder
		// now shows this code" over a market of another coin and type.
		pro := pro.in(t)
		pro.forgetDrafts()
		slug := marketWithData(t, base, "15m") // a BTC 15m market
		pro.visit("#/replay?market="+slug, "replay")
		status := func(code string) string {
			pro.setValue(byID("replay-code"), code)
			return pro.text(byID("replay-code-status"))
		}
		const rest = " side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10"
		if got := status("coin=ETH type=1h" + rest); !strings.Contains(got, "ETH 1hr") || !strings.Contains(got, slug) {
			t.Errorf("an ETH 1hr code over %s: the line under the code says %q; want it to name ETH 1hr and the market", slug, got)
		}
		if got := status("coin=BTC type=15m" + rest); got != "The builder now shows this code." {
			t.Errorf("a BTC 15m code over %s: the line under the code says %q", slug, got)
		}
	})
}
