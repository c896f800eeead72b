package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/updown/updown/api"
)

// TestDashboardSaysWhatTheAPISays: the dashboard shows what the API's
// answers say and the plan allows, where it left things out: a backtest of
// fewer markets than asked for says so (the answer's warning), Generate
// stays disabled once the month's generations are spent, a recording gap
// says whether snapshots or trades are missing, a sweep's size is set
// against the plan's own limits, and the API reference lists the fields of
// objects that may be null.
func TestDashboardSaysWhatTheAPISays(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a backtest of fewer markets than asked for says so", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
		pro.setValue(byID("agent-type"), "24hr") // dev holds 7 24hr markets
		pro.setValue(byID("agent-count"), "100")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var warning string
		pro.eval(`(document.querySelector('[data-testid=agent-warning]')||{}).textContent||''`, &warning)
		if !strings.Contains(warning, "asked for 100 markets") {
			t.Errorf("a backtest asked for 100 24hr markets shows the warning %q; want the API's, naming the 100 asked for", warning)
		}
		// Enough markets: no warning.
		pro.setValue(byID("agent-type"), "15m")
		pro.setValue(byID("agent-count"), "2")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="2"]`))
		var n int
		pro.eval(`document.querySelectorAll('[data-testid=agent-warning]').length`, &n)
		if n != 0 {
			t.Errorf("a backtest of the 2 markets asked for shows a warning")
		}
	})

	t.Run("a pasted code's coin and market type are the ones backtested", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/agent", "agent") // BTC 15m in the boxes
		pro.setValue(byID("agent-code"), "coin=ETH type=5m side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
		pro.setValue(byID("agent-count"), "2")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var slugs []string
		pro.eval(`[...document.querySelectorAll('[data-testid=agent-results-table] tbody tr')].map(r => r.dataset.slug)`, &slugs)
		if len(slugs) != 2 || !strings.HasPrefix(slugs[0], "eth-updown-5m-") || !strings.HasPrefix(slugs[1], "eth-updown-5m-") {
			t.Errorf("a code of ETH 5m was backtested on %q", slugs)
		}
		// The boxes still choose: BTC 15m after the paste runs it there.
		pro.setValue(byID("agent-coin"), "BTC")
		pro.setValue(byID("agent-type"), "15m")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="2"]`))
		pro.eval(`[...document.querySelectorAll('[data-testid=agent-results-table] tbody tr')].map(r => r.dataset.slug)`, &slugs)
		if len(slugs) != 2 || !strings.HasPrefix(slugs[0], "btc-updown-15m-") {
			t.Errorf("the code of ETH 5m with BTC 15m chosen after was backtested on %q", slugs)
		}
	})

	t.Run("Generate is disabled once the month's generations are spent", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/agent", "agent")
		// PRO's five generations a month, spent from the page.
		var used string
		var ok bool
		pro.run("quota", chromedp.WaitVisible(byID("agent-quota")+`[data-used]`), chromedp.AttributeValue(byID("agent-quota"), "data-used", &used, &ok))
		if used != "0" {
			t.Fatalf("quota used %q before the test", used)
		}
		for i := 1; i <= 5; i++ {
			pro.run("generate", chromedp.Click(byID("agent-generate")),
				chromedp.WaitVisible(byID("agent-quota")+`[data-used="`+strconv.Itoa(i)+`"]`))
		}
		// The click's end (its button given back) comes after the quota is shown.
		time.Sleep(500 * time.Millisecond)
		var disabled bool
		pro.eval(`document.querySelector('[data-testid=agent-generate]').disabled`, &disabled)
		if !disabled {
			t.Errorf("after the fifth of PRO's 5 generations the Generate button is enabled (quota: %q)", pro.text(byID("agent-quota")))
		}
		// A fresh page agrees.
		pro.visit("#/agent", "agent")
		pro.eval(`document.querySelector('[data-testid=agent-generate]').disabled`, &disabled)
		if !disabled {
			t.Error("with no generation left a fresh agent page enables Generate")
		}
	})

	t.Run("a recording gap says what is missing", func(t *testing.T) {
		pro := pro.in(t)
		var g map[string]any
		apiGet(t, base, "/v1/markets/"+slug15+"/gaps", "ud_dev_pro", &g)
		var m struct {
			Market struct {
				StartTime string `json:"start_time"`
			}
		}
		raw, _ := json.Marshal(g)
		_ = json.Unmarshal(raw, &m)
		start, err := time.Parse(time.RFC3339Nano, m.Market.StartTime)
		if err != nil {
			t.Fatalf("market start %q: %v", m.Market.StartTime, err)
		}
		at := func(s int) string {
			return start.Add(time.Duration(s) * time.Second).UTC().Format("2006-01-02T15:04:05.000000Z")
		}
		// Dev records no trade-feed gap: the API's answer, with two gaps as
		// the API answers them, one of each kind.
		g["gaps"] = []map[string]string{{"from": at(60), "to": at(90), "kind": "snapshots"}, {"from": at(120), "to": at(200), "kind": "trades"}}
		body, _ := json.Marshal(g)
		defer pro.answerJSON("*/v1/markets/"+slug15+"/gaps*", "/v1/markets/"+slug15+"/gaps", body)()
		pro.visit("#/market/"+url.PathEscape(slug15), "market")
		pro.run("gaps", chromedp.WaitVisible(byID("market-gaps")+` li`))
		var items []string
		pro.eval(`[...document.querySelectorAll('[data-testid=market-gaps] li')].map(li => li.textContent)`, &items)
		if len(items) != 2 || !strings.Contains(items[0], "no snapshots") || !strings.Contains(items[1], "trades may be missing") || strings.Contains(items[1], "no snapshots") {
			t.Errorf("a snapshots gap and a trades gap are shown as %q: want each to say what is missing", items)
		}
	})

	t.Run("a sweep's size is set against the plan's own limits", func(t *testing.T) {
		var billing billingAnswer
		apiGet(t, base, "/v1/account/billing", "ud_dev_pro", &billing)
		for _, key := range []string{"ud_dev_pro", "ud_dev_enterprise"} {
			b := pro.in(t)
			if key != "ud_dev_pro" {
				b = open(t, base).in(t)
				b.signIn(key)
			}
			tier := strings.ToUpper(strings.TrimPrefix(key, "ud_dev_"))
			b.visit("#/sweeps", "sweeps")
			got := b.text(byID("sweep-replays"))
			for _, p := range billing.Data.Plans {
				if p.Tier != tier || p.Sweeps == nil {
					continue
				}
				want := "Your plan, " + tier + ", runs up to " + fixed(float64(p.Sweeps.MaxTrials), 0) + " trials, " + fixed(float64(p.Sweeps.MaxMarkets), 0) +
					" markets and " + fixed(float64(p.Sweeps.MaxReplays), 0) + " replays a sweep"
				if !strings.Contains(got, want) {
					t.Errorf("%s's sweep size line %q; want it to say %q", tier, got, want)
				}
			}
		}
	})

	t.Run("a market type the new coin lacks becomes any", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/markets", "markets")
		pro.setValue(byID("markets-type"), "24hr")
		pro.run("BTC 24hr", chromedp.WaitVisible(`main[data-ready="markets"] `+byID("market-row")+`[data-slug*="-24hr-"]`))
		pro.setValue(byID("markets-coin"), "ETH")
		pro.run("ETH", chromedp.WaitVisible(`main[data-ready="markets"] `+byID("market-row")+`[data-slug^="eth-"]`))
		var state struct {
			Hash, Type string
			Index      int
		}
		pro.eval(`(() => { const s = document.querySelector('[data-testid=markets-type]'); return {Hash: location.hash, Type: s.value, Index: s.selectedIndex} })()`, &state)
		if state.Type != "" || state.Index != 0 || strings.Contains(state.Hash, "type=") {
			t.Errorf("BTC 24hr, then ETH: the type box %q (option %d), address %q; want any, and no type in the address", state.Type, state.Index, state.Hash)
		}
	})

	t.Run("signed out while a sweep is followed, the sign-in page stays put", func(t *testing.T) {
		b := open(t, base)
		b.signIn("ud_dev_enterprise")
		// A long sweep, followed on its page.
		id := longSweep(t, base)
		b.visit("#/sweeps/"+id, "sweeps")
		b.run("following", chromedp.WaitVisible(byID("sweep-progress")))
		// The session ends (here: its cookie goes); the next poll is a 401.
		var polls atomic.Int32
		chromedp.ListenTarget(b.ctx, func(ev any) {
			if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.Contains(e.Request.URL, "/v1/sweeps/"+id) {
				polls.Add(1)
			}
		})
		b.run("sign out", network.Enable(), network.ClearBrowserCookies(), chromedp.WaitVisible(byID("signin-key")))
		// The poll answered 401 showed the sign-in page; on a loaded
		// machine one more may have gone out before the cookie went.
		// From here on, none.
		before := polls.Load()
		b.run("type a key", chromedp.SendKeys(byID("signin-key"), "ud_dev_p"))
		time.Sleep(3 * time.Second) // about four polls' time
		var typed string
		b.eval(`document.querySelector('[data-testid=signin-key]').value`, &typed)
		if n := polls.Load() - before; typed != "ud_dev_p" || n > 0 || before > 2 {
			t.Errorf("3 s after a sign-out the key box holds %q (typed ud_dev_p) and the sweep was asked for %d more times (%d before the sign-in page); want the box kept and no polling", typed, n, before)
		}
	})

	t.Run("a cancel the API refused leaves Cancel usable", func(t *testing.T) {
		b := open(t, base)
		b.signIn("ud_dev_enterprise")
		id := longSweep(t, base)
		b.visit("#/sweeps/"+id, "sweeps")
		b.run("following", chromedp.WaitVisible(byID("sweep-cancel")))
		// The API answers the DELETE 429 (busy); the polls go through.
		refused, _ := json.Marshal(map[string]any{"success": false, "error": map[string]any{"code": "RATE_LIMIT_EXCEEDED", "message": "rate limit exceeded: retry in 1 s"}})
		stop := b.answerRequestBy("*/v1/sweeps/"+id, "/v1/sweeps/"+id, func(r *network.Request) (int64, []byte, bool) {
			return http.StatusTooManyRequests, refused, r.Method == http.MethodDelete
		}, &fetch.HeaderEntry{Name: "Retry-After", Value: "1"})
		b.run("cancel", chromedp.Click(byID("sweep-cancel")), chromedp.WaitVisible(byID("error-banner")))
		time.Sleep(300 * time.Millisecond)
		var disabled bool
		b.eval(`document.querySelector('[data-testid=sweep-cancel]').disabled`, &disabled)
		if disabled {
			t.Errorf("after a refused cancel (%q) the Cancel button stays disabled", b.text(byID("error-banner")))
		}
		stop()
	})

	t.Run("the equity chart shows the answer's pnl, not it plus the unrealized part again", func(t *testing.T) {
		pro := pro.in(t)
		// In a position from the first snapshot to near the end, whatever
		// dev's generated market did: unrealized pnl at most points.
		const code = "side=UP entry: price_up >= 0 exit: price_up > 0.99 size=100 maxloss=50 order=MARKET"
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.setValue(byID("replay-code"), code)
		pro.run("replay", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="1"]`), chromedp.WaitVisible(byID("equity-chart")+` .u-over`))
		var answer struct {
			Data struct {
				PnLCurve []struct {
					Time       string
					PnL        float64 `json:"pnl"`
					Unrealized float64 `json:"unrealized_pnl"`
					InPosition bool    `json:"in_position"`
				} `json:"pnl_curve"`
			}
		}
		apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", `{"marketSlug":"`+slug15+`","side":"UP","entryConditions":[{"field":"price_up","operator":">=","value":0}],
			"exitConditions":[{"field":"price_up","operator":">","value":0.99}],"positionSize":100,"maxLossPercent":50,"orderType":"MARKET"}`, &answer)
		// The legend at a point: its time (to the second) and the two pnl lines.
		var box struct{ Left, Top, Width, Height float64 }
		pro.run("scroll to the chart", chromedp.ScrollIntoView(byID("equity-chart")))
		pro.eval(`(() => { const r = document.querySelector('[data-testid=equity-chart] .u-over').getBoundingClientRect(); return {Left: r.left, Top: r.top, Width: r.width, Height: r.height} })()`, &box)
		inPos, checked := 0, 0
		for k := 1; k <= 40; k++ {
			x, y := box.Left+box.Width*float64(k)/41, box.Top+box.Height/2
			var legend []string
			pro.run("hover", chromedp.MouseEvent(input.MouseMoved, x, y))
			pro.eval(`[...document.querySelectorAll('[data-testid=equity-chart] .u-legend .u-value')].map(v => v.textContent)`, &legend)
			if len(legend) < 3 || legend[0] == "—" {
				continue
			}
			// Every point of that second whose pnl is shown; one of them must be the point hovered.
			match := false
			for _, p := range answer.Data.PnLCurve {
				at, err := time.Parse(time.RFC3339Nano, p.Time)
				if err != nil || at.UTC().Format("2006-01-02 15:04:05") != legend[0] {
					continue
				}
				if pnlShown(p.PnL) == legend[1] && pnlShown(p.PnL-p.Unrealized) == legend[2] {
					match = true
					if p.InPosition && pnlShown(p.Unrealized) != "$0.00" {
						inPos++
					}
				}
			}
			checked++
			if !match {
				t.Errorf("the equity chart at %s shows pnl %s, realized %s: no point of the answer at that second has them (pnl is realized plus unrealized)", legend[0], legend[1], legend[2])
			}
		}
		if checked == 0 || inPos == 0 {
			t.Errorf("%d points read off the chart, %d of them in a position with unrealized pnl: the test saw nothing to check", checked, inPos)
		}
	})

	t.Run("an orders list of the first 1,000 actions says so", func(t *testing.T) {
		pro := pro.in(t)
		// A replay's answer as the API gives it for a resting strategy with
		// more order actions than it lists (orders_truncated).
		status, m := call(t, http.MethodPost, base+"/v1/replay", "X-API-Key: ud_dev_pro", `{"marketSlug":"`+slug15+`","side":"UP","positionSize":10,
			"entryConditions":[{"field":"price_up","operator":"<","value":0.45}],"exitConditions":[{"field":"price_up","operator":">=","value":0.6}]}`)
		data, _ := m["data"].(map[string]any)
		perf, _ := data["performance"].(map[string]any)
		if status != http.StatusOK || perf == nil {
			t.Fatalf("replay: %d %v", status, m)
		}
		order := map[string]any{"time": data["market"].(map[string]any)["start_time"], "action": "PLACE", "side": "BUY", "price": 0.44, "shares": 10, "reason": "SIGNAL"}
		orders := make([]any, 1000)
		for i := range orders {
			orders[i] = order
		}
		data["orders"], data["orders_truncated"] = orders, true
		perf["orders_placed"], perf["orders_filled"], perf["orders_rejected"], perf["orders_cancelled"], perf["orders_expired"] = 1400, 300, 0, 1100, 0
		body, _ := json.Marshal(m)
		defer pro.answerJSON("*/v1/replay", "/v1/replay", body)()
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.run("replay", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("orders-table")))
		var caption string
		pro.eval(`document.querySelector('[data-testid=orders-table] caption').textContent`, &caption)
		if !strings.Contains(caption, "first 1,000") {
			t.Errorf("1,000 of 2,800 order actions listed: the caption says %q", caption)
		}
	})

	t.Run("the API reference lists the fields of objects that may be null", func(t *testing.T) {
		d := open(t, base)
		d.run("docs", chromedp.Navigate(base+"/docs"), chromedp.WaitVisible(`#docs[data-ready="docs"]`))
		// row finds, in an operation's 200 answer, the row of a field and
		// answers the text of its nested fields ("" without them).
		row := func(op, name string) string {
			var s string
			d.eval(`(() => { const sec = document.getElementById(`+jsString(op)+`); if (!sec) return 'no section';
				const r = [...sec.querySelectorAll('.responses table.schema tr')].find(tr => tr.cells[0] && tr.cells[0].querySelector('code') && tr.cells[0].querySelector('code').textContent === `+jsString(name)+`);
				if (!r) return 'no row'; const t = r.querySelector('details table'); return t ? t.textContent : '' })()`, &s)
			return s
		}
		for _, c := range []struct{ op, field, inner string }{
			{"get-billing", "sweeps", "max_trials"},
			{"backtest-ai-run", "quota", "remaining"},
			{"backtest-ai-run", "best_market", "total_pnl"},
			{"get-sweep", "best", "per_market"},
		} {
			if got := row(c.op, c.field); !strings.Contains(got, c.inner) {
				t.Errorf("the docs of %s: field %s lists no fields (%q); want %s among them", c.op, c.field, got, c.inner)
			}
		}
	})

	// Last: it changes STARTER's plan in this dev process.
	t.Run("a plan changed by the billing webhook shows at the next page", func(t *testing.T) {
		b := open(t, base)
		b.signIn("ud_dev_starter")
		b.visit("#/replay", "replay")
		b.run("denied", chromedp.WaitVisible(byID("plan-denied")))
		var acct struct {
			Data struct {
				CustomerID string `json:"customer_id"`
			}
		}
		apiGet(t, base, "/v1/account", "ud_dev_starter", &acct)
		hook := []byte(`{"business_id":"b","type":"subscription.active","timestamp":"` + time.Now().UTC().Format(time.RFC3339) + `","data":{"subscription_id":"sub_qa","status":"active",
			"product_id":"prod_pro","customer":{"email":"starter@example.com","name":"Demo starter"},"metadata":{"updown_customer_id":"` + acct.Data.CustomerID + `","tier":"PRO"},
			"next_billing_date":"` + time.Now().Add(30*24*time.Hour).UTC().Format(time.RFC3339) + `"}}`)
		now := time.Now()
		sig, err := api.SignWebhook("whsec_dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDA=", "msg_qa_ui_1", now, hook) // dev's built-in secret
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/webhook/dodo", bytes.NewReader(hook))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", "msg_qa_ui_1")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("webhook: %d", res.StatusCode)
		}
		// The next pages, without a reload: PRO's.
		b.visit("#/markets", "markets")
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.Navigate(base+"/app/#/replay"), chromedp.WaitVisible(byID("replay-submit"))); err != nil {
			var denied string
			b.eval(`(document.querySelector('[data-testid=plan-denied]')||{}).textContent||''`, &denied)
			t.Errorf("after the webhook made the customer PRO the replay page says %q (%v)", denied, err)
		}
		if got := b.text(".tier"); got != "PRO" {
			t.Errorf("after the webhook made the customer PRO the header says %q", got)
		}
	})
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pnlShown is a gain or loss as the dashboard writes it: +$1.20, −$0.35, $0.00.
func pnlShown(x float64) string {
	s := fixed(math.Abs(x), 2)
	switch {
	case s == "0.00":
		return "$0.00"
	case x > 0:
		return "+$" + s
	default:
		return "−$" + s
	}
}

// longSweep starts a PRO sweep of 190 trials on 100 markets through the
// API, cancelled when the test ends; it answers its id.
func longSweep(t *testing.T, base string) string {
	t.Helper()
	// ENTERPRISE's size: 4,186 trials over dev's resolved 5m markets, some
	// 250,000 replays, that a fast worker takes tens of seconds over (a
	// PRO sweep of 200 trials was done in two, before the page could act
	// on it).
	status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_enterprise", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
		"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100},
		"parameters":[{"path":"/entryConditions/0/value","range":{"from":0.05,"to":0.95,"step":0.01}},{"path":"/exitConditions/0/value","range":{"from":0.5,"to":0.95,"step":0.01}}],
		"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"5m","count":100}}`)
	data, _ := m["data"].(map[string]any)
	id, _ := data["sweep_id"].(string)
	if status != http.StatusAccepted || id == "" {
		t.Fatalf("start a sweep: %d %v", status, m)
	}
	t.Cleanup(func() { call(t, http.MethodDelete, base+"/v1/sweeps/"+id, "X-API-Key: ud_dev_enterprise", "") })
	return id
}
