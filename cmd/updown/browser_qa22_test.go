package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
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

// invalidBoxes are the data-testids of the controls marked invalid.
func (b *browserSession) invalidBoxes() []string {
	b.t.Helper()
	var ids []string
	b.eval(`[...document.querySelectorAll('[aria-invalid=true]')].map(e => e.dataset.testid)`, &ids)
	return ids
}

// fakeSweeps is a page of a sweeps list, n sweeps from the first'th
// (1-based), as GET /v1/sweeps answers it.
func fakeSweeps(first, n, total int) []byte {
	var sweeps []map[string]any
	for i := first; i < first+n; i++ {
		sweeps = append(sweeps, map[string]any{
			"sweep_id": fmt.Sprintf("sw_qa22_%02d", i), "status": "DONE", "trials": 4, "markets": 2, "replays": 8,
			"progress":    map[string]any{"replays_done": 8, "replays_total": 8, "eta_seconds": nil},
			"created_at":  time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(i) * time.Hour).Format(time.RFC3339),
			"finished_at": nil, "error": nil,
		})
	}
	body, _ := json.Marshal(map[string]any{"success": true, "data": map[string]any{"sweeps": sweeps, "total": total, "limit": 20, "offset": first - 1},
		"timestamp": "2026-11-01T00:00:00Z"})
	return body
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

	t.Run("a page of the sweeps list that fails keeps the page shown and offers a retry", func(t *testing.T) {
		t.Parallel()
		ent := open(t, base)
		ent.signIn("ud_dev_enterprise")
		var fail atomic.Bool
		fail.Store(true)
		defer ent.answerBy("*/v1/sweeps?limit=*", "/v1/sweeps?limit=", func(url string) (int64, []byte, bool) {
			switch {
			case strings.Contains(url, "offset=0"):
				return 200, fakeSweeps(1, 20, 25), true
			case strings.Contains(url, "offset=20"):
				if fail.Load() {
					return 503, []byte(`{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the store is unavailable: try again shortly"},"timestamp":"2026-11-30T00:00:00Z"}`), true
				}
				return 200, fakeSweeps(21, 5, 25), true
			}
			return 0, nil, false
		}, &fetch.HeaderEntry{Name: "X-Request-Id", Value: "req-qa22"})()
		ent.visit("#/sweeps", "sweeps")
		ent.run("the first page", chromedp.WaitVisible(byID("sweeps-list")+` [data-testid=sweep-row][data-id="sw_qa22_01"]`))
		ent.run("older by keyboard", chromedp.Focus(byID("sweeps-older")), chromedp.KeyEvent("\r"), chromedp.WaitVisible(byID("sweeps-error")))
		var rows []string
		ent.eval(`[...document.querySelectorAll('[data-testid=sweeps-list] [data-testid=sweep-row]')].map(r => r.dataset.id)`, &rows)
		if len(rows) != 20 || rows[0] != "sw_qa22_01" {
			t.Errorf("after the older page failed the list shows %v; want the 20 sweeps shown before", rows)
		}
		msg := ent.text(byID("sweeps-error"))
		for _, want := range []string{"the store is unavailable", "req-qa22"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the list's error %q does not say %q", msg, want)
			}
		}
		if got := ent.text(byID("sweeps-range")); got != "1–20 of 25" {
			t.Errorf("the pager says %q after the failure; want the page still shown, 1–20 of 25", got)
		}
		if got := ent.focused(); got != "sweeps-older" && got != "sweeps-retry" {
			t.Errorf("after the failure the keyboard is on %q; want Older or the retry", got)
		}
		fail.Store(false)
		ent.run("retry", chromedp.Click(byID("sweeps-retry")),
			chromedp.WaitVisible(byID("sweeps-list")+` [data-testid=sweep-row][data-id="sw_qa22_21"]`))
		if got := ent.text(byID("sweeps-range")); got != "21–25 of 25" {
			t.Errorf("after the retry the pager says %q; want 21–25 of 25", got)
		}
		var errs int
		ent.eval(`document.querySelectorAll('[data-testid=sweeps-error]').length`, &errs)
		if errs != 0 {
			t.Error("the error stays after the retry succeeded")
		}
	})

	t.Run("the agent's empty number boxes say the value that runs", func(t *testing.T) {
		// An empty box sends nothing and the API uses its default (10
		// markets, 100 shares, 50% max loss, offset 0, exponent 1, no
		// latency, no limit): the box says so.
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-order-type"), "GTC")
		pro.setValue(byID("agent-fee-model"), "CUSTOM")
		for _, c := range []struct{ id, want string }{
			{"agent-count", `Empty: 10\b`}, {"agent-size", `else 100\b`}, {"agent-maxloss", `else 50\b`}, {"gtc-offset", `else 0\b`},
			{"agent-fee-exponent", `Empty: 1\b`}, {"agent-latency", `else 0\b`}, {"max-entries", `else no limit`},
		} {
			pro.setValue(byID(c.id), "")
			// What the box says empty: its placeholder, and the hint under it.
			var said string
			pro.eval(`(() => { const el = document.querySelector('[data-testid=`+c.id+`]'), hint = el.closest('.field').querySelector('small');
				return el.placeholder + ' | ' + (hint ? hint.textContent : '') })()`, &said)
			if !regexp.MustCompile(c.want).MatchString(said) {
				t.Errorf("%s empty says %q: not the default that runs (%s)", c.id, said, c.want)
			}
		}
	})

	t.Run("the agent's shares box left alone follows the prompt", func(t *testing.T) {
		// Its hint says "Empty: as the prompt says, else 100", as the max
		// loss box's does; a box that started at 100 sent 100 with every
		// generation, and a prompt's "50 shares" was overridden unsaid.
		t.Parallel()
		ent := open(t, base) // unlimited generations
		ent.signIn("ud_dev_enterprise")
		ent.forgetDrafts()
		ent.visit("#/agent", "agent")
		var size string
		ent.eval(`document.querySelector('[data-testid=agent-size]').value`, &size)
		if size != "" {
			t.Errorf("the shares box starts at %q; want empty, as its hint describes", size)
		}
		var before string
		var ok bool
		ent.run("quota", chromedp.AttributeValue(byID("agent-quota"), "data-used", &before, &ok))
		ent.setValue(byID("agent-prompt"), "buy 50 shares of UP when price_up drops below 0.4, exit above 0.6, stop loss 30%")
		ent.run("generate", chromedp.Click(byID("agent-generate")), chromedp.WaitVisible(byID("agent-quota")+`:not([data-used="`+before+`"])`))
		var code string
		ent.eval(`document.querySelector('[data-testid=agent-code]').value`, &code)
		if !strings.Contains(code, " size=50 ") || !strings.Contains(code, " maxloss=30 ") {
			t.Errorf("generated code %q: want the prompt's size=50 and maxloss=30", code)
		}
	})

	t.Run("the agent's control the API refused is marked and takes the keyboard", func(t *testing.T) {
		// As on the replay and sweeps pages: the error names a request
		// field (strategy_code, marketCount); its box is marked invalid and
		// has the keyboard, not the button pressed.
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		for _, c := range []struct{ id, code, count, says string }{
			{"agent-code", "", "3", "strategy_code is empty"},
			{"agent-count", "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100", "1.5", "marketCount must be a whole number"},
		} {
			pro.setValue(byID("agent-code"), c.code)
			pro.setValue(byID("agent-count"), c.count)
			pro.run("backtest by keyboard", chromedp.Focus(byID("agent-backtest")), chromedp.KeyEvent("\r"),
				chromedp.WaitVisible(byID("error-banner")), chromedp.WaitVisible(byID("agent-backtest")+`:not([aria-busy])`))
			if got := pro.text(byID("error-banner")); !strings.Contains(got, c.says) {
				t.Errorf("the banner says %q; want %q", got, c.says)
			}
			invalid := pro.invalidBoxes()
			if fmt.Sprint(invalid) != fmt.Sprint([]string{c.id}) {
				t.Errorf("%q refused: the boxes marked invalid are %v; want [%s]", c.says, invalid, c.id)
			}
			if got := pro.focused(); got != c.id {
				t.Errorf("%q refused: the keyboard is on %q; want %s", c.says, got, c.id)
			}
		}
	})

	t.Run("a replay refused for its market marks the market box and gives it the keyboard", func(t *testing.T) {
		// MARKET_NOT_FOUND and MARKET_NOT_RESOLVED name no field: they are
		// of the market all the same, which is the box to correct.
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.forgetDrafts()
		var active struct{ Markets []struct{ Slug string } }
		apiGet(t, base, "/v1/markets?coin=BTC&resolved=false&limit=1", "ud_dev_pro", &active)
		if len(active.Markets) == 0 {
			t.Fatal("dev has no active market")
		}
		pro.visit("#/replay", "replay")
		for _, c := range []struct{ slug, says string }{
			{"btc-updown-5m-1", "does not exist"},
			{active.Markets[0].Slug, "is not resolved yet"},
		} {
			pro.setValue(byID("replay-market"), c.slug)
			pro.run("replay by keyboard", chromedp.Focus(byID("replay-submit")), chromedp.KeyEvent("\r"),
				chromedp.WaitVisible(byID("error-banner")), chromedp.WaitVisible(byID("replay-submit")+`:not([disabled])`))
			if got := pro.text(byID("error-banner")); !strings.Contains(got, c.says) {
				t.Errorf("the banner says %q; want %q", got, c.says)
			}
			var invalid string
			pro.eval(`document.querySelector('[data-testid=replay-market]').getAttribute('aria-invalid') || ''`, &invalid)
			if invalid != "true" {
				t.Errorf("%s (%s): the market box is not marked invalid", c.slug, c.says)
			}
			if got := pro.focused(); got != "replay-market" {
				t.Errorf("%s (%s): the keyboard is on %q; want the market box", c.slug, c.says, got)
			}
		}
	})

	t.Run("a daily Sharpe left out says why, not what it came from", func(t *testing.T) {
		// The statistics table wrote "from 20 days." beside a "—" of a
		// sweep of a few hours' markets: read as "worked out from 20 days".
		t.Parallel()
		ent := open(t, base)
		ent.signIn("ud_dev_enterprise")
		status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_enterprise", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
			"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100},
			"parameters":[{"path":"/entryConditions/0/value","values":[0.4,0.45]}],"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":4}}`)
		data, _ := m["data"].(map[string]any)
		id, _ := data["sweep_id"].(string)
		if status != http.StatusAccepted || id == "" {
			t.Fatalf("start a sweep: %d %v", status, m)
		}
		ent.visit("#/sweeps/"+id, "sweeps")
		ent.run("the statistics", chromedp.WaitVisible(byID("sweep-stats")))
		var rows [][]string
		ent.eval(`[...document.querySelectorAll('[data-testid=sweep-stats] tbody tr')].filter(r => r.cells[0].textContent.startsWith('Daily')).map(r => [...r.cells].map(c => c.textContent))`, &rows)
		if len(rows) != 2 {
			t.Fatalf("the daily rows: %q", rows)
		}
		for _, r := range rows {
			if r[1] != "—" {
				t.Fatalf("%s shows %q from 4 markets of a few hours", r[0], r[1])
			}
			if says := r[len(r)-1]; !strings.Contains(says, "fewer than 20") {
				t.Errorf("%s — says %q: not why it is left out (fewer than 20 UTC days)", r[0], says)
			}
		}
	})

	t.Run("a plan without the agent is told so, not 0 of 0 generations", func(t *testing.T) {
		t.Parallel()
		for _, key := range []string{"ud_dev_starter", "ud_dev_pro_trial"} {
			b := open(t, base)
			b.signIn(key)
			b.visit("#/account", "account")
			if got := b.text(byID("account-ai-quota")); !strings.Contains(got, "not in your plan") {
				t.Errorf("%s: AI generations this month %q; want the agent not in the plan", key, got)
			}
			b.close()
		}
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.visit("#/account", "account")
		if got := pro.text(byID("account-ai-quota")); !regexp.MustCompile(`^\d+ of 5$`).MatchString(got) {
			t.Errorf("PRO: AI generations this month %q; want n of 5", got)
		}
	})

	t.Run("copying an empty code box says there is nothing to copy", func(t *testing.T) {
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.forgetDrafts()
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "  ")
		pro.run("copy by keyboard", chromedp.Focus(byID("agent-copy")), chromedp.KeyEvent("\r"))
		var said string
		pro.run("the answer", chromedp.Poll(`(() => { const p = document.querySelector('[data-testid=agent-code]').closest('form').querySelector('p[role=status]'); return p && p.textContent })()`, &said))
		if !strings.Contains(said, "Nothing to copy") {
			t.Errorf("copying an empty code box says %q", said)
		}
		if got := pro.focused(); got != "agent-code" {
			t.Errorf("after copying nothing the keyboard is on %q; want the code box", got)
		}
	})

	t.Run("dates the wrong way round are said in the filters' words, on the box", func(t *testing.T) {
		// The API answers end_time must be later than start_time (a
		// VALIDATION_ERROR located at query.end_time): the page's boxes are
		// "Starting after" and "Starting before".
		t.Parallel()
		pro := open(t, base)
		pro.signIn("ud_dev_pro")
		pro.visit("#/markets?coin=BTC&from=2026-11-30T06:00&to=2026-11-29T06:00", "markets")
		invalid := pro.invalidBoxes()
		if fmt.Sprint(invalid) != "[markets-to]" {
			t.Errorf("the boxes marked invalid: %v; want [markets-to]", invalid)
		}
		var said string
		pro.eval(`document.querySelector('[data-testid=markets-table] tbody').textContent`, &said)
		if !strings.Contains(said, "Starting before") || !strings.Contains(said, "Starting after") {
			t.Errorf("the table says %q: not in the boxes' words", said)
		}
		// The alert sits inside its cell, which stays a cell of the table,
		// and the box marked invalid is described by it.
		var roles struct {
			Cell, Described string
		}
		pro.eval(`(() => { const a = document.querySelector('[data-testid=markets-filter-error]');
			const box = document.querySelector('[data-testid=markets-to]');
			const by = document.getElementById(box.getAttribute('aria-describedby') || '');
			return { cell: a.closest('td') ? (a.closest('td').getAttribute('role') || 'cell') : 'none',
				described: by === a ? 'yes' : 'no' }; })()`, &roles)
		if roles.Cell != "cell" || roles.Described != "yes" {
			t.Errorf("the alert's cell has role %q, the box described by it: %s", roles.Cell, roles.Described)
		}
	})
}
