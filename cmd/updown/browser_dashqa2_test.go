package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardQASecondPass: what a second user pass over the dashboard
// found. A strategy_code box holding a code the builder could not take (a
// typo in a pasted code) stops the run, with the code box marked and the
// reason said, where the replay ran, and the sweep swept, the strategy the
// builder showed before it, its result read as the code's; an empty code
// box is no code, and the run goes on with the builder's strategy. One of a
// thing is said in the singular: a sweep of 1 trial over 1 market, and
// the 1 market past whose page an address points, where the pages wrote
// "1 trials × 1 markets = 1 replays" and "1 markets match". A hand-edited
// address is read as the page it can be: a negative or fractional offset
// lists markets from the page it falls in, and one past a safe whole
// number (1e19, 1e400, Infinity) from the first, where the API's refusal of it
// stood in the banner over an empty table, and a market address cut short
// of its slug says it names no market, where it said "no such endpoint:
// GET /v1/markets//series". Between phone and desktop widths (a tablet's
// 768 px) a wide table (the markets, a replay's trades, a sweep's
// statistics) scrolls in its own box, as the sweeps' trials do, where the
// whole page scrolled sideways, its header and figures with it; at a
// desktop's 1280 px the table's header stays in sight as the page scrolls,
// where the box it scrolled in carried it away. The API's
// refusal of a cooldown or a cancel-after is said in the seconds of the
// box it came from, where it named milliseconds the user never typed
// (-1000 for the -1 in a box of seconds). A backtest's market that could
// not be replayed says why in the table, the API's words beside its code,
// where the Error column showed the code alone (NO_DATA). A market past
// its end whose result is not in yet is listed as ended, not "active",
// under a Status filter called "not resolved"; one order or trade event of
// a replay is "1 order event", not "1 order events".
func TestDashboardQASecondPass(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a code the builder could not take runs nothing", func(t *testing.T) {
		slug := marketWithData(t, base, "15m")
		const bad = "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=abc"
		for _, c := range []struct {
			hash, page, code, submit, refused, ran string
		}{
			{"#/replay?market=" + slug, "replay", "replay-code", "replay-submit", byID("error-banner") + ":not([hidden])", byID("replay-results") + "[data-run]"},
			{"#/sweeps", "sweeps", "sweep-strategy-code", "sweep-submit", byID("sweep-error") + ":not([hidden])", byID("sweep-progress")},
		} {
			pro := pro.in(t)
			pro.visit(c.hash, c.page)
			pro.setValue(byID(c.code), bad)
			pro.run("submit", chromedp.Click(byID(c.submit)), chromedp.WaitVisible(c.refused+", "+c.ran))
			var got struct {
				Ran     bool
				Said    string
				Invalid string
			}
			pro.eval(`(() => ({
				Ran: !!document.querySelector('`+c.ran+`'),
				Said: (document.querySelector('`+c.refused+`') || {}).textContent || '',
				Invalid: document.querySelector('[data-testid=`+c.code+`]').getAttribute('aria-invalid') || '' }))()`, &got)
			if got.Ran {
				t.Errorf("%s ran with %q in its code box, the builder's earlier strategy under it", c.page, bad)
			}
			if !strings.Contains(got.Said, "Nothing ran") || !strings.Contains(got.Said, `"size=abc"`) || got.Invalid != "true" {
				t.Errorf("%s says %q, code box aria-invalid %q: want the code's problem said and its box marked", c.page, got.Said, got.Invalid)
			}
		}
	})

	t.Run("an empty code box runs the builder's strategy", func(t *testing.T) {
		slug := marketWithData(t, base, "15m")
		for _, c := range []struct {
			hash, page, code, submit, refused, ran string
		}{
			{"#/replay?market=" + slug, "replay", "replay-code", "replay-submit", byID("error-banner") + ":not([hidden])", byID("replay-results") + "[data-run]"},
			{"#/sweeps", "sweeps", "sweep-strategy-code", "sweep-submit", byID("sweep-error") + ":not([hidden])", byID("sweep-progress")},
		} {
			pro := pro.in(t)
			pro.visit(c.hash, c.page)
			pro.setValue(byID(c.code), "")
			pro.run("submit", chromedp.Click(byID(c.submit)), chromedp.WaitVisible(c.refused+", "+c.ran))
			var got struct {
				Ran  bool
				Said string
			}
			pro.eval(`(() => ({
				Ran: !!document.querySelector('`+c.ran+`'),
				Said: (document.querySelector('`+c.refused+`') || {}).textContent || '' }))()`, &got)
			if !got.Ran || got.Said != "" {
				t.Errorf("%s with its code box emptied: ran %v, says %q; want the builder's strategy run", c.page, got.Ran, got.Said)
			}
			if got.Ran && c.page == "sweeps" {
				// The plan runs one sweep at once: the next subtests start theirs.
				done := byID("sweep-progress")
				pro.run("sweep ends", chromedp.WaitVisible(done+`[data-status=DONE], `+done+`[data-status=FAILED], `+done+`[data-status=CANCELLED]`))
			}
		}
	})

	t.Run("one of a thing is said in the singular", func(t *testing.T) {
		pro := pro.in(t)
		status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy": {"side": "UP",
			"entryConditions": [{"field": "price_up", "operator": "<", "value": 0.45}],
			"exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}], "positionSize": 100},
			"parameters": [{"path": "/entryConditions/0/value", "values": [0.4]}], "search": {"kind": "GRID"},
			"markets": {"coin": "BTC", "market_type": "15m", "count": 1}, "split": {"kind": "NONE"}, "objective": "total_pnl"}`)
		if status != http.StatusAccepted {
			t.Fatalf("POST /v1/sweeps: %d %v", status, m)
		}
		id := m["data"].(map[string]any)["sweep_id"].(string)
		pro.visit("#/sweeps/"+id, "sweeps")
		pro.run("results", chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(`[data-testid=sweep-run] h3`))
		var text string
		pro.eval(`document.querySelector('[data-testid=sweep-run]').innerText`, &text)
		for _, want := range []string{"1 trial × 1 market = 1 replay, started", "Its pnl in its one market", "1 trial (click a heading to sort)"} {
			if !strings.Contains(text, want) {
				t.Errorf("the sweep of one trial over one market does not say %q:\n%s", want, text)
			}
		}
		for _, bad := range []string{"1 trials", "1 markets", "1 replays"} {
			if strings.Contains(text, bad) {
				t.Errorf("the sweep of one trial over one market says %q", bad)
			}
		}

		stop := pro.answerJSON("*/v1/markets?*", "offset=25", []byte(`{"markets": [], "total": 1, "limit": 25, "offset": 25, "warning": null}`))
		defer stop()
		pro.visit("#/markets?coin=BTC&offset=25", "markets")
		if got, want := pro.text(byID("markets-past-end")), "This page is past the last: 1 market matches these filters. Go to the last page"; got != want {
			t.Errorf("past the last page of one market: %q, want %q", got, want)
		}
	})

	t.Run("a hand-edited address shows the page it can", func(t *testing.T) {
		pro := pro.in(t)
		var first struct {
			Markets []struct{ Slug string }
			Total   int
		}
		apiGet(t, base, "/v1/markets?coin=BTC&limit=25", "ud_dev_pro", &first)
		if len(first.Markets) < 3 {
			t.Fatal("dev has no BTC markets")
		}
		for _, c := range []struct{ offset, first, from string }{
			{"-5", first.Markets[0].Slug, "1–"}, {"2.5", first.Markets[2].Slug, "3–"},
			{"1e19", first.Markets[0].Slug, "1–"}, {"1e21", first.Markets[0].Slug, "1–"}, {"1e400", first.Markets[0].Slug, "1–"}, {"Infinity", first.Markets[0].Slug, "1–"},
		} {
			pro.visit("#/markets?coin=BTC&offset="+c.offset, "markets")
			var got struct {
				Banner string
				Slug   string
				Range  string
			}
			pro.eval(`(() => ({
				Banner: document.querySelector('[data-testid=error-banner]').textContent,
				Slug: (document.querySelector('[data-testid=market-row]') || {dataset: {}}).dataset.slug || '',
				Range: (document.querySelector('[data-testid=markets-range]') || {}).textContent || '' }))()`, &got)
			if got.Banner != "" || got.Slug != c.first || !strings.HasPrefix(got.Range, c.from) {
				t.Errorf("offset=%s: banner %q, first row %q, range %q; want no error and %s first (%s)", c.offset, got.Banner, got.Slug, got.Range, c.first, c.from)
			}
		}
		pro.visit("#/market/", "market")
		var said, banner string
		pro.eval(`(document.querySelector('[data-testid=market-none]') || {}).textContent || ''`, &said)
		pro.eval(`document.querySelector('[data-testid=error-banner]').textContent`, &banner)
		if said != "This address names no market: pick one from the markets list." || banner != "" {
			t.Errorf("#/market/ says %q, banner %q: want that it names no market", said, banner)
		}
	})

	t.Run("a tablet's page does not scroll sideways", func(t *testing.T) {
		pro := pro.in(t)
		pro.run("tablet width", chromedp.EmulateViewport(768, 1024))
		defer pro.run("desktop width", chromedp.EmulateViewport(1280, 800))
		slug := marketWithData(t, base, "15m")
		status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy": {"side": "UP",
			"entryConditions": [{"field": "price_up", "operator": "<", "value": 0.45}],
			"exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}], "positionSize": 100},
			"parameters": [{"path": "/entryConditions/0/value", "values": [0.3, 0.4]}, {"path": "/exitConditions/0/value", "values": [0.6, 0.7]}],
			"search": {"kind": "GRID"}, "markets": {"coin": "BTC", "market_type": "15m", "count": 10},
			"split": {"kind": "HOLDOUT", "testFraction": 0.3}, "objective": "total_pnl"}`)
		if status != http.StatusAccepted {
			t.Fatalf("POST /v1/sweeps: %d %v", status, m)
		}
		id := m["data"].(map[string]any)["sweep_id"].(string)
		for _, c := range []struct {
			hash, page, shown string
			act               []chromedp.Action
		}{
			{"#/markets", "markets", byID("market-row"), nil},
			{"#/replay?market=" + slug, "replay", byID("trades-table"), []chromedp.Action{chromedp.Click(byID("replay-submit"))}},
			{"#/sweeps/" + id, "sweeps", byID("sweep-stats"), nil},
		} {
			pro.visit(c.hash, c.page)
			pro.run(c.page+" shown", append(c.act, chromedp.WaitVisible(c.shown))...)
			var w struct{ Scroll, Client float64 }
			pro.eval(`({Scroll: document.documentElement.scrollWidth, Client: document.documentElement.clientWidth})`, &w)
			if w.Scroll > w.Client {
				t.Errorf("%s at 768 px: the page is %v px wide in a window of %v px, and scrolls sideways", c.page, w.Scroll, w.Client)
			}
		}
	})

	t.Run("a desktop table's header stays in sight", func(t *testing.T) {
		pro := pro.in(t)
		// A desktop's width in a short window: the page of 25 markets is
		// longer than it, as it is on a laptop whose browser shows toolbars.
		pro.run("desktop width", chromedp.EmulateViewport(1280, 400))
		defer pro.run("desktop window", chromedp.EmulateViewport(1280, 800))
		pro.visit("#/markets?coin=BTC", "markets")
		pro.run("markets shown", chromedp.WaitVisible(byID("market-row")))
		var got struct{ Top, Scrolled, Width float64 }
		pro.eval(`(() => { window.scrollTo(0, 400); const th = document.querySelector('[data-testid=markets-table] thead th');
			return {Top: th.getBoundingClientRect().top, Scrolled: window.scrollY, Width: document.documentElement.scrollWidth - document.documentElement.clientWidth} })()`, &got)
		if got.Scrolled < 400 {
			t.Fatalf("the markets page scrolls only %v px at 1280 px: too short to check its header", got.Scrolled)
		}
		if got.Top < -1 || got.Top > 60 {
			t.Errorf("400 px into the markets table at 1280 px its header's top is at %v px: want it in sight at the window's top", got.Top)
		}
		if got.Width > 0 {
			t.Errorf("the markets page at 1280 px scrolls %v px sideways", got.Width)
		}
		pro.eval(`window.scrollTo(0, 0)`, nil)
	})

	t.Run("a refused cooldown is said in the box's seconds", func(t *testing.T) {
		pro := pro.in(t)
		slug := marketWithData(t, base, "15m")
		for _, c := range []struct {
			hash, page, submit, said string
			set                      map[string]string
			want                     string
		}{
			{"#/replay?market=" + slug, "replay", "replay-submit", "error-banner", map[string]string{"reentry-cooldown": "-1"},
				"Cooldown after an exit: -1 s is not allowed: it must be from 0 to 86400 seconds (a day), in whole milliseconds (reentryCooldownMs -1000)"},
			{"#/agent", "agent", "agent-backtest", "error-banner", map[string]string{"agent-code": "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10", "reentry-cooldown": "90000"},
				"Cooldown after an exit: 90000 s is not allowed: it must be from 0 to 86400 seconds (a day), in whole milliseconds (reentryCooldownMs 90000000)"},
			{"#/sweeps", "sweeps", "sweep-submit", "sweep-error", map[string]string{"reentry-cooldown": "-1"},
				"strategy: Cooldown after an exit: -1 s is not allowed: it must be from 0 to 86400 seconds (a day), in whole milliseconds (reentryCooldownMs -1000)"},
			{"#/replay?market=" + slug, "replay", "replay-submit", "error-banner", map[string]string{"reentry-cooldown": "", "order-type": "GTC", "gtc-cancel-after": "0.0005"},
				"Cancel after: 0.0005 s is not allowed: it must be from 0.001 to 86400 seconds, or left empty to rest until filled or the market ends, in whole milliseconds (cancelAfterMs 0.5)"},
		} {
			pro.visit(c.hash, c.page)
			for _, id := range []string{"agent-code", "order-type", "reentry-cooldown", "gtc-cancel-after"} {
				if v, ok := c.set[id]; ok {
					pro.setValue(byID(id), v)
				}
			}
			pro.run("submit", chromedp.Click(byID(c.submit)), chromedp.WaitVisible(byID(c.said)+":not([hidden])"))
			var said, invalid string
			pro.eval(`document.querySelector('[data-testid=`+c.said+`]').textContent`, &said)
			pro.eval(`[...document.querySelectorAll('[aria-invalid=true]')].map(e => e.dataset.testid).join(' ')`, &invalid)
			if !strings.Contains(said, c.want) {
				t.Errorf("%s with %v says %q, want %q", c.page, c.set, said, c.want)
			}
			if !strings.Contains(invalid, map[bool]string{true: "gtc-cancel-after", false: "reentry-cooldown"}[c.set["gtc-cancel-after"] != ""]) {
				t.Errorf("%s with %v marks %q", c.page, c.set, invalid)
			}
			// The next page starts from the defaults, not this one's draft.
			pro.setValue(byID("reentry-cooldown"), "")
			if c.set["order-type"] != "" {
				pro.setValue(byID("order-type"), "MARKET")
			}
		}
	})

	t.Run("a backtest's failed market says why", func(t *testing.T) {
		pro := pro.in(t)
		const slug = "btc-updown-15m-1764499500"
		answer, _ := json.Marshal(map[string]any{"data": map[string]any{
			"strategy_code": "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10",
			"aggregate":     map[string]any{"total_pnl": 0, "markets_tested": 1, "markets_failed": 1, "markets_traded": 0, "total_trades": 0, "win_rate": 0, "avg_market_pnl": 0, "max_drawdown": 0},
			"results":       []any{map[string]any{"slug": slug, "error": map[string]any{"code": "NO_DATA", "message": `market "` + slug + `" has no recorded snapshots to replay`}}},
		}})
		defer pro.answerJSON("*/v1/backtest-ai/run", "/v1/backtest-ai/run", answer)()
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run]`))
		var cell string
		pro.eval(`(() => { const heads = [...document.querySelectorAll('[data-testid=agent-results-table] thead th')].map(th => th.textContent);
			return document.querySelector('[data-testid=agent-results-table] tbody tr').cells[heads.indexOf('Error')].textContent })()`, &cell)
		if want := `market "` + slug + `" has no recorded snapshots to replay (NO_DATA)`; cell != want {
			t.Errorf("the failed market's Error cell says %q, want %q", cell, want)
		}
	})

	t.Run("a market past its end without a result is not active", func(t *testing.T) {
		pro := pro.in(t)
		now := time.Now().UTC().Truncate(time.Minute)
		market := func(slug string, start time.Time) map[string]any {
			return map[string]any{"slug": slug, "market_id": "1", "market_type": "5m", "start_time": start.Format(time.RFC3339),
				"end_time": start.Add(5 * time.Minute).Format(time.RFC3339), "coin_price_start": 70000, "coin_price_end": nil,
				"winner": nil, "final_volume": nil, "resolved_at": nil}
		}
		answer, _ := json.Marshal(map[string]any{"markets": []any{market("btc-updown-5m-live", now.Add(-time.Minute)), market("btc-updown-5m-ended", now.Add(-10*time.Minute))},
			"total": 2, "limit": 25, "offset": 0, "warning": nil})
		defer pro.answerJSON("*/v1/markets?*", "resolved=false", answer)()
		pro.visit("#/markets?coin=BTC&resolved=false", "markets")
		var winners map[string]string
		pro.eval(`Object.fromEntries([...document.querySelectorAll('[data-testid=market-row]')].map(r => [r.dataset.slug, r.querySelector('td.winner').textContent]))`, &winners)
		if winners["btc-updown-5m-live"] != "active" || winners["btc-updown-5m-ended"] != "ended, no result yet" {
			t.Errorf("the Winner column says %q: want the live market active, the one ended 5 minutes ago ended with no result yet", winners)
		}
		var status string
		pro.eval(`(s => s.options[s.selectedIndex].text)(document.querySelector('[data-testid=markets-resolved]'))`, &status)
		if status != "not resolved" {
			t.Errorf("the Status filter that lists them is called %q, want %q (it covers the ended ones too)", status, "not resolved")
		}
	})

	t.Run("one order or trade event is said in the singular", func(t *testing.T) {
		pro := pro.in(t)
		slug := marketWithData(t, base, "15m")
		status, m := call(t, http.MethodPost, base+"/v1/replay", "X-API-Key: ud_dev_pro", `{"marketSlug": "`+slug+`", "side": "UP",
			"entryConditions": [{"field": "price_up", "operator": ">", "value": 0}], "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}], "positionSize": 10}`)
		if status != http.StatusOK {
			t.Fatalf("POST /v1/replay: %d %v", status, m)
		}
		data := m["data"].(map[string]any)
		trades, _ := data["trades"].([]any)
		if len(trades) == 0 {
			t.Fatalf("a replay of %s entering at once has no trade events", slug)
		}
		data["trades"] = trades[:1]
		data["orders"] = []any{map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "action": "PLACED", "side": "UP", "price": 0.5, "shares": 20, "reason": "ENTRY"}}
		answer, _ := json.Marshal(m)
		defer pro.answerJSON("*/v1/replay", "/v1/replay", answer)()
		pro.visit("#/replay?market="+slug, "replay")
		pro.run("submit", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("trades-table")))
		var got struct{ Orders, Trades string }
		pro.eval(`({Orders: (document.querySelector('[data-testid=orders-caption]') || {}).textContent || '',
			Trades: document.querySelector('[data-testid=trades-table] caption').textContent})`, &got)
		if got.Orders != "1 order event" || got.Trades != "1 trade event" {
			t.Errorf("a replay of one order and one trade event says %q and %q", got.Orders, got.Trades)
		}
	})
}
