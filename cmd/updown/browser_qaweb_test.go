package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardQAWeb: what a person using the dashboard met that the pages
// got wrong, each checked in a real browser against `updown dev`.
func TestDashboardQAWeb(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	value := func(b *browserSession, id string) string {
		var v string
		b.eval(`document.querySelector('[data-testid=`+id+`]').value`, &v)
		return v
	}

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

	t.Run("what a form holds outlives a visit to another page", func(t *testing.T) {
		pro := pro.in(t)
		// The replay: a strategy built, then a look at a market, whose
		// link back to the replay brings that market to the same strategy.
		pro.visit("#/replay", "replay")
		pro.setValue(byID("replay-code"), "side=DOWN entry: price_down <= 0.55 exit: price_down >= 0.7 size=25 maxloss=20 order=MARKET")
		built := value(pro, "replay-code")
		if !strings.Contains(built, "side=DOWN") {
			t.Fatalf("the builder did not take the code: %q", built)
		}
		pro.visit("#/markets", "markets")
		pro.visit("#/market/"+url.PathEscape(slug15), "market")
		pro.run("replay this market", chromedp.Click(`a[href^="#/replay?market="]`), chromedp.WaitVisible(`main[data-ready="replay"]`))
		if got := value(pro, "replay-code"); got != built {
			t.Errorf("back on the replay page from a market the strategy is %q; want the one built, %q", got, built)
		}
		if got := value(pro, "replay-market"); got != slug15 {
			t.Errorf("the market's link opened the replay on %q; want %q", got, slug15)
		}
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="1"]`))
		if got := value(pro, "replay-side"); got != "DOWN" {
			t.Errorf("the replay ran side %q", got)
		}

		// The agent: a prompt, settings and a code (a generated one cost a
		// generation) are there on coming back.
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-prompt"), "buy DOWN below 0.4")
		pro.setValue(byID("agent-count"), "7")
		pro.setValue(byID("agent-latency"), "250")
		code := "coin=BTC type=1hr side=UP entry: price_up < 0.3 exit: price_up >= 0.5 size=10"
		pro.setValue(byID("agent-code"), code)
		pro.visit("#/account", "account")
		pro.visit("#/agent", "agent")
		for id, want := range map[string]string{"agent-prompt": "buy DOWN below 0.4", "agent-count": "7", "agent-latency": "250", "agent-code": code, "agent-type": "1hr"} {
			if got := value(pro, id); got != want {
				t.Errorf("back on the agent page %s is %q; want %q", id, got, want)
			}
		}
		if got := value(pro, "agent-fee-model"); got != "" {
			t.Errorf("the agent's fees came back as %q; want the untouched \"from the prompt or code\"", got)
		}

		// A sweep being set up, likewise.
		pro.visit("#/sweeps", "sweeps")
		pro.setValue(byID("sweep-count"), "33")
		pro.setValue(byID("sweep-strategy-code"), "side=DOWN entry: price_down < 0.4 exit: price_down >= 0.6 size=20")
		sweepCode := value(pro, "sweep-strategy-code")
		pro.run("remove a parameter", chromedp.Click(byID("sweep-param")+":last-child button.link"))
		pro.visit("#/markets", "markets")
		pro.visit("#/sweeps", "sweeps")
		if got := value(pro, "sweep-count"); got != "33" {
			t.Errorf("back on the sweeps page the market count is %q; want 33", got)
		}
		if got := value(pro, "sweep-strategy-code"); got != sweepCode {
			t.Errorf("back on the sweeps page the strategy is %q; want %q", got, sweepCode)
		}
		var params int
		pro.eval(`document.querySelectorAll('[data-testid=sweep-param]').length`, &params)
		if params != 1 {
			t.Errorf("back on the sweeps page %d parameters; want the 1 left", params)
		}

		// Signing out forgets them: the next one to sign in here starts afresh.
		pro.run("sign out", chromedp.Click(byID("signout")), chromedp.WaitVisible(byID("signin-key")))
		pro.signIn("ud_dev_pro")
		pro.visit("#/replay", "replay")
		if got := value(pro, "replay-code"); strings.Contains(got, "side=DOWN") {
			t.Errorf("after signing out and in the replay still holds %q", got)
		}
		pro.visit("#/agent", "agent")
		if got := value(pro, "agent-code"); got != "" {
			t.Errorf("after signing out and in the agent still holds %q", got)
		}
		pro.visit("#/sweeps", "sweeps")
		if got := value(pro, "sweep-count"); got == "33" {
			t.Errorf("after signing out and in the sweeps page still holds the count %q", got)
		}
	})

	t.Run("an address naming a choice a box lacks shows the box's first choice", func(t *testing.T) {
		pro := pro.in(t)
		// A hand-edited or stale address: the page asked the API with an
		// empty coin ("no such endpoint: GET /v1//spot/latest", "coin:
		// required query parameter is missing") under a blank box.
		for _, c := range []struct{ hash, page, box, want string }{
			{"#/exchange?coin=doge&kind=spot", "exchange", "exchange-coin", "btc"},
			{"#/exchange?coin=eth&kind=perp", "exchange", "exchange-kind", "spot"},
			{"#/markets?coin=XRP", "markets", "markets-coin", "BTC"},
			{"#/markets?coin=BTC&resolved=maybe", "markets", "markets-resolved", ""},
		} {
			pro.visit(c.hash, c.page)
			var banner string
			pro.eval(`(document.querySelector('[data-testid=error-banner]')||{}).textContent||''`, &banner)
			if banner != "" {
				t.Errorf("%s: the banner says %q", c.hash, banner)
			}
			if got := value(pro, c.box); got != c.want {
				t.Errorf("%s: %s shows %q; want %q", c.hash, c.box, got, c.want)
			}
		}
	})

	t.Run("a rate limit's banner carries the upgrade link", func(t *testing.T) {
		// The 429 names the plan's limit and its upgrade_url (DESIGN 4);
		// the banner said so in words only, with no way on to the plans.
		// The markets page's read is answered the 429 a spent limit gets
		// (from the browser itself: a real limit's minute may turn, or
		// catch the page's session check, mid-test).
		starter := open(t, base)
		starter.signIn("ud_dev_starter")
		limited := []byte(`{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"rate limit of 60 requests per minute exceeded; retry in 30 s",` +
			`"details":{"limit":"requests_per_minute","max":60,"window":"minute","current_tier":"STARTER","upgrade_url":"/v1/account/billing"}},"timestamp":"2026-11-29T00:00:00.000Z"}`)
		stop := starter.answerStatus("*/v1/markets?*", "/v1/markets?", 429, limited)
		defer stop()
		starter.visit("#/markets?coin=BTC&type=5m&offset=25", "markets")
		var banner, link string
		starter.eval(`(document.querySelector('[data-testid=error-banner]')||{}).textContent||''`, &banner)
		if !strings.Contains(banner, "RATE_LIMIT_EXCEEDED") {
			t.Fatalf("a spent limit: the banner says %q", banner)
		}
		starter.eval(`(document.querySelector('[data-testid=error-banner] a.upgrade')||{}).textContent||''`, &link)
		if link == "" {
			t.Errorf("the rate limit's banner %q has no upgrade link", banner)
		}
	})

	t.Run("a session check the server refuses is said, and tried again", func(t *testing.T) {
		// A page loaded while the session check is refused (a spent
		// minute's limit, the service away) was left blank: start()'s
		// error went to a banner not in the page.
		starter := open(t, base)
		starter.signIn("ud_dev_starter")
		limited := []byte(`{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"rate limit of 60 requests per minute exceeded; retry in 3 s","details":{}},"timestamp":"2026-11-29T00:00:00.000Z"}`)
		stop := starter.answerStatus("*/v1/auth/session*", "/v1/auth/session", 429, limited)
		starter.run("reload while the session check is refused", chromedp.Reload(), chromedp.WaitVisible(`main[data-ready="unavailable"]`))
		var banner string
		starter.eval(`(document.querySelector('[data-testid=error-banner]')||{}).textContent||''`, &banner)
		if !strings.Contains(banner, "RATE_LIMIT_EXCEEDED") {
			t.Errorf("the refused session check: the banner says %q", banner)
		}
		stop()
		starter.run("the page once the session check answers", chromedp.WaitVisible(`main[data-ready="markets"]`))
	})

	t.Run("a markets page past the last says so and leads back", func(t *testing.T) {
		pro := pro.in(t)
		var want struct{ Total int }
		apiGet(t, base, "/v1/markets?coin=BTC&market_type=15m&limit=1", "ud_dev_pro", &want)
		// An address kept while fewer markets came to match: it read "No
		// markets match these filters" under "10,001–N of N".
		pro.visit("#/markets?coin=BTC&type=15m&offset=10000", "markets")
		var cell string
		pro.eval(`(document.querySelector('[data-testid=markets-past-end]')||{}).textContent||''`, &cell)
		if !strings.Contains(cell, fixed(float64(want.Total), 0)+" markets match") {
			t.Errorf("past the last page the table says %q; want that %d markets match", cell, want.Total)
		}
		var rng string
		pro.eval(`(document.querySelector('[data-testid=markets-range]')||{}).textContent||''`, &rng)
		if got := rng; got != "0 of "+fixed(float64(want.Total), 0) {
			t.Errorf("past the last page the pager says %q", got)
		}
		if t.Failed() {
			return
		}
		pro.run("last page", chromedp.Click(byID("markets-last-page")), chromedp.WaitVisible(`main[data-ready="markets"] `+byID("market-row")))
		first := (want.Total - 1) / 25 * 25
		if got := pro.text(byID("markets-range")); got != fixed(float64(first+1), 0)+"–"+fixed(float64(want.Total), 0)+" of "+fixed(float64(want.Total), 0) {
			t.Errorf("the last page's pager says %q; want %d–%d of %d", got, first+1, want.Total, want.Total)
		}
	})
}

// forgetDrafts empties what the pages' forms kept for the tab (as a new
// tab starts): the next replay, agent or sweeps page shows its defaults.
func (b *browserSession) forgetDrafts() {
	b.t.Helper()
	var ok bool
	b.eval(`(() => { for (const k of Object.keys(sessionStorage)) if (k.startsWith('updown.draft.')) sessionStorage.removeItem(k); return true })()`, &ok)
}
