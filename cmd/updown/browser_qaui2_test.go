package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestDashboardQAUI2: what a user of the dashboard met in the second QA
// pass on it, each checked in a real browser against `updown dev`.
func TestDashboardQAUI2(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")

	t.Run("a page a plan lacks names the feature as its heading does", func(t *testing.T) {
		// STARTER was told it "does not include the backtest ai agent",
		// and that "Parameter sweeps is not in your plan".
		st := open(t, base)
		st.signIn("ud_dev_starter")
		for _, c := range []struct{ hash, page, head, body string }{
			{"#/agent", "agent", "The Backtest AI agent is not in your plan",
				"Your plan, STARTER, does not include the Backtest AI agent. It needs PRO or ENTERPRISE."},
			{"#/sweeps", "sweeps", "Parameter sweeps are not in your plan",
				"Your plan, STARTER, does not include parameter sweeps. They need PRO or ENTERPRISE."},
			{"#/replay", "replay", "Strategy replay is not in your plan",
				"Your plan, STARTER, does not include strategy replay. It needs PRO, PRO_TRIAL or ENTERPRISE."},
		} {
			st.in(t).visit(c.hash, c.page)
			if got := st.in(t).text(byID("plan-denied") + " h2"); got != c.head {
				t.Errorf("%s: heading %q, want %q", c.hash, got, c.head)
			}
			if got := st.in(t).text(byID("plan-denied") + " p"); got != c.body {
				t.Errorf("%s: says %q, want %q", c.hash, got, c.body)
			}
		}
	})

	t.Run("a session that ends while a job is followed shows the sign-in page", func(t *testing.T) {
		// After a 504 JOB_TIMEOUT the page polls GET /v1/jobs/{id}; a poll
		// answered 401 (the session expired or was signed out meanwhile)
		// showed its message in the banner over the replay form, where
		// every other 401 shows the sign-in page.
		slug := marketWithData(t, base, "15m")
		b := open(t, base)
		b.signIn("ud_dev_pro")
		b.visit("#/replay?market="+url.QueryEscape(slug), "replay")
		timeout := []byte(`{"success":false,"error":{"code":"JOB_TIMEOUT","message":"the replay is still running; it goes on: fetch its result with GET /v1/jobs/replay-x","details":{"job_id":"replay-x"}},"timestamp":"2026-11-29T00:00:00Z"}`)
		expired := []byte(`{"success":false,"error":{"code":"UNAUTHORIZED","message":"the session has expired or was signed out: sign in again"},"timestamp":"2026-11-29T00:00:00Z"}`)
		defer b.answerStatus("*/v1/replay", "/v1/replay", 504, timeout)()
		defer b.answerStatus("*/v1/jobs/*", "/v1/jobs/", 401, expired)()
		var outcome string
		b.run("run the replay", chromedp.Click(byID("replay-submit")), chromedp.Poll(`(() => {
			if (document.querySelector('main[data-ready="signin"]')) return 'signin: ' + document.querySelector('[data-testid=error-banner]').textContent;
			const e = (document.querySelector('[data-testid=error-banner]') || {}).textContent || '';
			return e ? 'error banner over ' + document.querySelector('main').dataset.ready + ': ' + e : null })()`, &outcome))
		if outcome != "signin: the session has expired or was signed out: sign in again" {
			t.Errorf("a job's poll answered 401 shows %q; want the sign-in page saying the session ended", outcome)
		}
	})

	t.Run("a backtest under way says so on its button", func(t *testing.T) {
		// A backtest (or a generation) followed for minutes after the
		// server's wait showed only a greyed button over an empty page.
		b := open(t, base)
		b.signIn("ud_dev_pro")
		b.forgetDrafts()
		b.visit("#/agent", "agent")
		b.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100")
		held, release := b.hold("*/v1/backtest-ai/run", "/v1/backtest-ai/run")
		b.run("backtest", chromedp.Click(byID("agent-backtest")))
		id := held()
		var during struct {
			Text     string `json:"text"`
			Disabled bool   `json:"disabled"`
		}
		b.eval(`(() => { const x = document.querySelector('[data-testid=agent-backtest]'); return {text: x.textContent, disabled: x.disabled} })()`, &during)
		if during.Text != "Backtesting…" || !during.Disabled {
			t.Errorf("while the backtest runs its button is %+v; want disabled, saying Backtesting…", during)
		}
		b.run("let it through", fetch.ContinueRequest(id))
		release()
		b.run("the results", chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		if got := b.text(byID("agent-backtest")); got != "Backtest this code" {
			t.Errorf("after the backtest its button says %q", got)
		}
	})

	t.Run("a backtest's drawdowns say whose they are", func(t *testing.T) {
		// The aggregate's max_drawdown is the largest single market's
		// (DESIGN 8), shown as "Max drawdown" beside the total of every
		// market: $253 beside a total of −$413 read as the portfolio's,
		// whose own fall (portfolio_max_drawdown) was not shown.
		code := "coin=BTC type=15m side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100"
		var want struct {
			Data struct {
				Aggregate struct {
					MaxDrawdown          float64 `json:"max_drawdown"`
					PortfolioMaxDrawdown float64 `json:"portfolio_max_drawdown"`
				}
			}
		}
		status, tok := post(t, base+"/v1/auth/token", "ud_dev_pro", "")
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		apiPost(t, base, "/v1/backtest-ai/run", "Authorization: Bearer "+tok["access_token"].(string),
			`{"strategy_code":"`+code+`","coin":"BTC","marketType":"15m","marketCount":10}`, &want)
		b := open(t, base)
		b.signIn("ud_dev_pro")
		b.forgetDrafts()
		b.visit("#/agent", "agent")
		b.setValue(byID("agent-code"), code)
		b.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var figs map[string]string
		b.eval(`Object.fromEntries([...document.querySelectorAll('[data-testid=agent-results] dl.figures > div')].map(d => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]))`, &figs)
		if _, ok := figs["Max drawdown"]; ok {
			t.Errorf("a figure is still called Max drawdown: %v", figs)
		}
		moneyShown(t, "Largest market drawdown", figs["Largest market drawdown"], want.Data.Aggregate.MaxDrawdown)
		moneyShown(t, "Portfolio drawdown", figs["Portfolio drawdown"], want.Data.Aggregate.PortfolioMaxDrawdown)
	})

	t.Run("an exchange series with nothing recorded yet leaves the rest of the page", func(t *testing.T) {
		// A series whose latest depth the collector has not written yet
		// (404 "no depth recorded yet") blanked the whole page: its recent
		// trades and BTC's depth history were never asked for, and the
		// error stood in the banner. A series without trades showed an
		// empty table.
		b := open(t, base)
		b.signIn("ud_dev_pro")
		stop := b.answerStatus("*/v1/sol/future/latest", "/v1/sol/future/latest", 404,
			[]byte(`{"success":false,"error":{"code":"RESOURCE_NOT_FOUND","message":"no depth recorded yet for sol futures"},"timestamp":"2026-11-29T00:00:00Z"}`))
		b.visit("#/exchange?coin=sol&kind=future", "exchange")
		if got := b.text(byID("depth-chart")); !strings.Contains(got, "no depth recorded yet for sol futures") {
			t.Errorf("the depth chart's place says %q", got)
		}
		var rows int
		b.eval(`document.querySelectorAll('[data-testid=exchange-trades-table] tbody tr[data-id]').length`, &rows)
		if rows == 0 {
			t.Error("the recent trades are not shown beside a series without depth")
		}
		b.run("BTC's depth history drawn", chromedp.WaitVisible(byID("depth-history-chart")+`[data-points]`))
		var banner bool
		b.eval(`document.querySelector('[data-testid=error-banner]').hidden`, &banner)
		if !banner {
			t.Errorf("nothing recorded yet is told in the banner: %q", b.text(byID("error-banner")))
		}
		stop()

		stop = b.answerJSON("*/v1/eth/spot/trades*", "/v1/eth/spot/trades", []byte(`{"data":[],"total":0,"limit":50}`))
		defer stop()
		b.visit("#/exchange?coin=eth&kind=spot", "exchange")
		if got := b.text(byID("exchange-trades-table") + " tbody"); got != "No trades recorded yet." {
			t.Errorf("a series without trades shows %q", got)
		}
	})

	t.Run("a market's way to a replay says what stands in its way", func(t *testing.T) {
		// Every market page linked to "Replay a strategy on this market":
		// for an active market the replay could only answer
		// MARKET_NOT_RESOLVED, and a plan without replay met its denial a
		// page later.
		var list struct {
			Markets []struct {
				Slug    string
				EndTime string `json:"end_time"`
			}
		}
		apiGet(t, base, "/v1/markets?coin=BTC&resolved=false&market_type=24hr&limit=1", "ud_dev_pro", &list)
		if len(list.Markets) != 1 {
			t.Fatalf("no active 24hr market: %+v", list)
		}
		active := list.Markets[0].Slug
		resolved := marketWithData(t, base, "24hr")
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.visit("#/market/"+url.PathEscape(active), "market")
		if got := pro.text(byID("market-replay")); !strings.Contains(got, "once it resolves") {
			t.Errorf("an active market's way to a replay says %q", got)
		}
		var links int
		pro.eval(`document.querySelectorAll('main a[href^="#/replay?"]').length`, &links)
		if links != 0 {
			t.Errorf("an active market links to a replay on it")
		}
		pro.visit("#/market/"+url.PathEscape(resolved), "market")
		var href string
		pro.eval(`(document.querySelector('a[data-testid=market-replay]') || {}).getAttribute?.('href') || ''`, &href)
		if href != "#/replay?market="+url.QueryEscape(resolved) {
			t.Errorf("a resolved market's replay link is %q", href)
		}
		st := open(t, base)
		st.signIn("ud_dev_starter")
		st.visit("#/market/"+url.PathEscape(resolved), "market")
		if got := st.text(byID("market-replay")); !strings.Contains(got, "needs PRO, PRO_TRIAL or ENTERPRISE") || !strings.Contains(got, "See the plans and upgrade") {
			t.Errorf("STARTER's way to a replay says %q", got)
		}
	})

	t.Run("the agent's and sweeps' market types are the coin's", func(t *testing.T) {
		// ETH and SOL have no 4hr or 24hr markets (SPEC 2.1), as the markets
		// page's type box knows; the Backtest AI and sweeps pages offered
		// them with every coin, and BTC's 24hr kept on a change to ETH was
		// sent and refused.
		b := open(t, base)
		b.signIn("ud_dev_pro")
		b.forgetDrafts()
		for _, p := range []struct{ hash, page, coin, typ string }{
			{"#/agent", "agent", "agent-coin", "agent-type"}, {"#/sweeps", "sweeps", "sweep-coin", "sweep-type"},
		} {
			b.visit(p.hash, p.page)
			b.setValue(byID(p.typ), "24hr")
			b.setValue(byID(p.coin), "ETH")
			var box struct {
				Value    string   `json:"value"`
				Disabled []string `json:"disabled"`
			}
			b.eval(`(() => { const s = document.querySelector('[data-testid=`+p.typ+`]'); return {value: s.value, disabled: [...s.options].filter(o => o.disabled).map(o => o.value)} })()`, &box)
			if box.Value != "1hr" || strings.Join(box.Disabled, " ") != "4hr 24hr" {
				t.Errorf("%s: after BTC 24hr, ETH shows type %q with %v disabled; want 1hr, with 4hr and 24hr disabled", p.hash, box.Value, box.Disabled)
			}
			b.setValue(byID(p.coin), "BTC")
			b.eval(`[...document.querySelector('[data-testid=`+p.typ+`]').options].filter(o => o.disabled).map(o => o.value)`, &box.Disabled)
			if len(box.Disabled) != 0 {
				t.Errorf("%s: BTC has %v disabled", p.hash, box.Disabled)
			}
		}
	})

	t.Run("the futures market is called futures", func(t *testing.T) {
		// The box says "futures"; the price, the trades' caption and the
		// depth history's heading said "ETH future: $3,514.40", "ETH future
		// trades" and "BTC future depth history" (the API's path word).
		b := open(t, base)
		b.signIn("ud_dev_pro")
		b.visit("#/exchange?coin=eth&kind=future", "exchange")
		if got := b.text(byID("exchange-price")); !strings.HasPrefix(got, "ETH futures: $") {
			t.Errorf("the price says %q", got)
		}
		if got := b.text(byID("exchange-trades-table") + " caption"); got != "ETH futures trades, newest first" {
			t.Errorf("the trades' caption says %q", got)
		}
		var heads []string
		b.eval(`[...document.querySelectorAll('main h2')].map(h => h.textContent)`, &heads)
		if strings.Join(heads, "|") != "Latest depth|Recent trades|BTC futures depth history" {
			t.Errorf("the headings are %q", heads)
		}
	})
}
