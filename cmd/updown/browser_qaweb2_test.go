package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardQAWebSecondPass: what a second pass over the dashboard, as a
// new user, found the pages lacking or getting wrong, each checked in a real
// browser against `updown dev`.
func TestDashboardQAWebSecondPass(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	value := func(b *browserSession, id string) string {
		var v string
		b.eval(`document.querySelector('[data-testid=`+id+`]').value`, &v)
		return v
	}

	t.Run("the sweeps list pages through every sweep", func(t *testing.T) {
		// GET /v1/sweeps pages (limit, offset, total); the page asked for
		// the newest 20 and said "The newest 20 of 43" with no way to the
		// other 23. Each sweep here is started and cancelled at once.
		const auth = "X-API-Key: ud_dev_enterprise"
		const sweeps = 43
		for i := range sweeps {
			status, m := call(t, http.MethodPost, base+"/v1/sweeps", auth, fmt.Sprintf(`{"strategy":{"side":"UP",
				"entryConditions":[{"field":"price_up","operator":"<","value":0.45}],"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":%d},
				"parameters":[{"path":"/entryConditions/0/value","values":[0.4,0.45]}],"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":2}}`, i+1))
			data, _ := m["data"].(map[string]any)
			id, _ := data["sweep_id"].(string)
			if status != http.StatusAccepted || id == "" {
				t.Fatalf("start sweep %d: %d %v", i+1, status, m)
			}
			if status, m := call(t, http.MethodDelete, base+"/v1/sweeps/"+id, auth, ""); status != http.StatusOK {
				t.Fatalf("cancel sweep %d: %d %v", i+1, status, m)
			}
		}
		var list struct {
			Data struct {
				Sweeps []struct {
					ID string `json:"sweep_id"`
				}
				Total int
			}
		}
		apiGet(t, base, "/v1/sweeps?limit=100", "ud_dev_enterprise", &list)
		if list.Data.Total != sweeps || len(list.Data.Sweeps) != sweeps {
			t.Fatalf("the API lists %d of %d sweeps; want %d", len(list.Data.Sweeps), list.Data.Total, sweeps)
		}
		ids := make([]string, sweeps)
		for i, s := range list.Data.Sweeps {
			ids[i] = s.ID
		}
		ent := open(t, base)
		defer ent.close()
		ent.signIn("ud_dev_enterprise")
		ent.visit("#/sweeps", "sweeps")
		type page struct {
			IDs          []string
			Range        string
			Newer, Older bool // enabled
			Focus        string
		}
		read := func(first string) page {
			t.Helper()
			ent.run("the list from "+first, chromedp.WaitVisible(byID("sweeps-list")+" tbody tr:first-child"+`[data-id="`+first+`"]`))
			var p page
			ent.eval(`(() => { const q = s => document.querySelector('[data-testid=sweeps-list] [data-testid=' + s + ']');
				return { IDs: [...document.querySelectorAll('[data-testid=sweeps-list] [data-testid=sweep-row]')].map(r => r.dataset.id),
					Range: (q('sweeps-range') || {}).textContent || '', Newer: !!q('sweeps-newer') && !q('sweeps-newer').disabled,
					Older: !!q('sweeps-older') && !q('sweeps-older').disabled, Focus: document.activeElement.dataset.testid || '' } })()`, &p)
			return p
		}
		check := func(p page, from, to int, newer, older bool, focus string) {
			t.Helper()
			if fmt.Sprint(p.IDs) != fmt.Sprint(ids[from-1:to]) {
				t.Errorf("sweeps %d-%d: the page lists %v\nwant %v", from, to, p.IDs, ids[from-1:to])
			}
			if want := fmt.Sprintf("%d–%d of %d", from, to, sweeps); p.Range != want {
				t.Errorf("sweeps %d-%d: the pager says %q; want %q", from, to, p.Range, want)
			}
			if p.Newer != newer || p.Older != older {
				t.Errorf("sweeps %d-%d: Newer enabled %v, Older enabled %v; want %v, %v", from, to, p.Newer, p.Older, newer, older)
			}
			if focus != "" && p.Focus != focus {
				t.Errorf("sweeps %d-%d: the keyboard is on %q; want %q", from, to, p.Focus, focus)
			}
		}
		check(read(ids[0]), 1, 20, false, true, "")
		if t.Failed() {
			return
		}
		// By keyboard: the button pressed keeps the keyboard, and on the
		// last page, where Older is disabled, it goes to Newer.
		press := func(id string) {
			ent.run("press "+id, chromedp.Focus(byID(id)), chromedp.KeyEvent("\r"))
		}
		press("sweeps-older")
		check(read(ids[20]), 21, 40, true, true, "sweeps-older")
		press("sweeps-older")
		check(read(ids[40]), 41, 43, true, false, "sweeps-newer")
		press("sweeps-newer")
		check(read(ids[20]), 21, 40, true, true, "sweeps-newer")
	})

	t.Run("the agent takes a resting order's settings", func(t *testing.T) {
		pro := pro.in(t)
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		if got := value(pro, "agent-order-type"); got != "" {
			t.Errorf("the agent's order type starts as %q; want \"from the prompt or code\"", got)
		}
		var hidden bool
		pro.eval(`!document.querySelector('[data-testid=gtc-options]') || document.querySelector('[data-testid=gtc-options]').hidden`, &hidden)
		if !hidden {
			t.Error("the GTC options show before GTC is chosen")
		}
		// The replay page's resting-order options, for a code that has none.
		code := "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 or time_remaining_pct <= 5 size=50 maxloss=50 order=MARKET"
		pro.setValue(byID("agent-code"), code)
		pro.setValue(byID("agent-type"), "15m")
		pro.setValue(byID("agent-count"), "3")
		pro.setValue(byID("agent-order-type"), "GTC")
		if got := value(pro, "agent-order-type"); got != "GTC" {
			t.Fatalf("the agent's order type offers no GTC: it shows %q", got)
		}
		pro.eval(`!document.querySelector('[data-testid=gtc-options]') || document.querySelector('[data-testid=gtc-options]').hidden`, &hidden)
		if hidden {
			t.Fatal("with GTC chosen the agent shows no resting-order options")
		}
		pro.run("post only", chromedp.Click(byID("gtc-post-only")))
		pro.setValue(byID("gtc-offset"), "1")
		pro.setValue(byID("gtc-cancel-after"), "30")
		pro.setValue(byID("gtc-queue"), "FRONT")
		var unlabelled []string
		pro.eval(`['agent-order-type','gtc-post-only','gtc-offset','gtc-cancel-after','gtc-queue','gtc-rebates']
			.filter(id => { const el = document.querySelector('[data-testid='+id+']'); return !el || !el.labels || el.labels.length === 0 })`, &unlabelled)
		if len(unlabelled) > 0 {
			t.Errorf("controls without a label: %v", unlabelled)
		}
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		if got, want := pro.text(byID("agent-used-orders")), "GTC, resting as a maker: post only, offset 1 tick, cancelled after 30 s, queue FRONT"; got != want {
			t.Errorf("the backtest ran with the orders %q; want %q", got, want)
		}
		// As the API runs the same code with the same settings.
		status, tok := post(t, base+"/v1/auth/token", "ud_dev_pro", "")
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		var want struct {
			Data struct {
				Aggregate struct {
					TotalPnL    float64 `json:"total_pnl"`
					TotalTrades int     `json:"total_trades"`
				}
			}
		}
		apiPost(t, base, "/v1/backtest-ai/run", "Authorization: Bearer "+tok["access_token"].(string),
			`{"strategy_code":"`+code+`","coin":"BTC","marketType":"15m","marketCount":3,"orderType":"GTC","postOnly":true,"limitOffsetTicks":1,"cancelAfterMs":30000,"queueModel":"FRONT","includeRebates":false}`, &want)
		moneyShown(t, "the GTC backtest's total pnl", pro.text(byID("agent-total-pnl")), want.Data.Aggregate.TotalPnL)
		if got := pro.text(byID("agent-total-trades")); got != fixed(float64(want.Data.Aggregate.TotalTrades), 0) {
			t.Errorf("the GTC backtest shows %s trades; the API %d", got, want.Data.Aggregate.TotalTrades)
		}

		// A generation takes them too: the code it writes rests its orders.
		pro.setValue(byID("agent-prompt"), "buy UP when price_up drops below 0.45, exit above 0.6")
		var before string
		var ok bool
		pro.run("quota", chromedp.AttributeValue(byID("agent-quota"), "data-used", &before, &ok))
		pro.run("generate", chromedp.Click(byID("agent-generate")), chromedp.WaitVisible(byID("agent-quota")+`:not([data-used="`+before+`"])`))
		generated := value(pro, "agent-code")
		for _, w := range []string{"order=GTC", "postonly=true", "offset=1", "cancel=30000", "queue=front"} {
			if !strings.Contains(generated, w) {
				t.Errorf("the generated code %q lacks %s", generated, w)
			}
		}

		// And they are there on coming back to the page.
		pro.visit("#/account", "account")
		pro.visit("#/agent", "agent")
		for id, want := range map[string]string{"agent-order-type": "GTC", "gtc-offset": "1", "gtc-cancel-after": "30", "gtc-queue": "FRONT"} {
			if got := value(pro, id); got != want {
				t.Errorf("back on the agent page %s is %q; want %q", id, got, want)
			}
		}
	})

	t.Run("an empty box leaves a gap in the code, not NaN", func(t *testing.T) {
		pro := pro.in(t)
		// A size or a condition's value cleared (on the way to another)
		// wrote "size=NaN" into the strategy_code box, and the line under
		// it said "expected a number after size=, such as 0.35".
		for _, p := range []struct{ hash, page, code, status string }{
			{"#/replay", "replay", "replay-code", "replay-code-status"},
			{"#/sweeps", "sweeps", "sweep-strategy-code", "sweep-strategy-code-status"},
		} {
			pro.forgetDrafts()
			pro.visit(p.hash, p.page)
			prefix := strings.TrimSuffix(p.code, "-code")
			pro.setValue(byID(prefix+"-size"), "")
			if got := value(pro, p.code); strings.Contains(got, "NaN") || !strings.Contains(got, " size= ") {
				t.Errorf("%s: an empty size shows the code %q; want a gap after size=", p.page, got)
			}
			if got, want := pro.text(byID(p.status)), "size is missing: it must be between 1 and 10000 shares"; got != want {
				t.Errorf("%s: an empty size is explained as %q; want %q", p.page, got, want)
			}
			pro.setValue(byID(prefix+"-size"), "25")
			pro.setValue(byID(prefix+"-entry")+" [name=value]", "")
			if got := value(pro, p.code); strings.Contains(got, "NaN") {
				t.Errorf("%s: an empty entry value shows the code %q", p.page, got)
			}
			if got, want := pro.text(byID(p.status)), "entry condition 1 (price_up <) has no value: give the number the field is compared with"; got != want {
				t.Errorf("%s: an empty entry value is explained as %q; want %q", p.page, got, want)
			}
		}
	})

	t.Run("the keys keep the keyboard as they are created and revoked", func(t *testing.T) {
		// The list is drawn again after each change: the key revoked by
		// keyboard, and Create disabled by the last key the plan allows,
		// left the keyboard on the page's top, from where Tab starts again
		// at the navigation.
		b := open(t, base)
		defer b.close()
		b.signIn("ud_dev_pro_trial")
		b.visit("#/account", "account")
		var live int
		b.eval(`document.querySelectorAll('[data-testid=key-revoke]').length`, &live)
		if live >= 10 {
			t.Fatalf("the customer has %d live keys already", live)
		}
		b.run("focus Create", chromedp.Focus(byID("key-create")))
		for n := live + 1; n <= 10; n++ {
			b.run(fmt.Sprintf("create key %d by keyboard", n), chromedp.KeyEvent("\r"),
				chromedp.WaitVisible(fmt.Sprintf(`[data-testid=keys-table] tbody tr:nth-child(%d) [data-testid=key-revoke]`, n)))
		}
		var focus string
		b.run("Create disabled", chromedp.WaitVisible(byID("key-create")+`:disabled`))
		b.eval(`document.activeElement.className + ' ' + (document.activeElement.textContent || '').slice(0, 30)`, &focus)
		if !strings.HasPrefix(focus, "card new-key") {
			t.Errorf("the tenth live key disabled Create and the keyboard went to %q; want the new key", focus)
		}
		var ids []string
		b.eval(`[...document.querySelectorAll('[data-testid=key-revoke]')].map(x => x.dataset.keyId)`, &ids)
		b.run("revoke the third by keyboard", chromedp.Focus(byID("keys-table")+` tbody tr:nth-child(3) `+byID("key-revoke")), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(`[data-testid=keys-table] tbody tr[data-key-id="`+ids[2]+`"].revoked`))
		b.eval(`(document.activeElement.dataset.keyId || document.activeElement.tagName)`, &focus)
		if focus != ids[3] {
			t.Errorf("after revoking the third key the keyboard is on %q; want the Revoke of the key now in its place, %s", focus, ids[3])
		}
	})

	t.Run("a button pressed to run something keeps the keyboard", func(t *testing.T) {
		pro := pro.in(t)
		// Run, Backtest and Start are disabled while their work runs, and a
		// disabled button loses the keyboard: it fell to the page's top, so
		// the next Tab started again at the navigation.
		slug := marketWithData(t, base, "15m")
		for _, c := range []struct{ hash, page, button, done string }{
			{"#/replay?market=" + url.QueryEscape(slug), "replay", "replay-submit", byID("replay-results") + `[data-run="1"]`},
			{"#/agent", "agent", "agent-backtest", byID("agent-results") + `[data-run="1"]`},
			{"#/sweeps", "sweeps", "sweep-submit", byID("sweep-progress")},
		} {
			pro.forgetDrafts()
			pro.visit(c.hash, c.page)
			if c.page == "agent" {
				pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
				pro.setValue(byID("agent-count"), "2")
			}
			pro.run("press "+c.button, chromedp.Focus(byID(c.button)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(c.done))
			var focus string
			pro.run("the keyboard back", chromedp.Poll(`(() => { const b = document.querySelector('[data-testid=`+c.button+`]');
				return !b.disabled && (document.activeElement.dataset.testid || document.activeElement.tagName) })()`, &focus, chromedp.WithPollingTimeout(patience)))
			if focus != c.button {
				t.Errorf("%s: after %s ran, the keyboard is on %q", c.page, c.button, focus)
			}
		}
	})
}
