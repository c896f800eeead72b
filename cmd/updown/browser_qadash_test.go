package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestDashboardQADash: what a person reading the dashboard's results met
// that the pages got wrong, each checked in a real browser against
// `updown dev` (answers the test shapes are put in the browser's way).
func TestDashboardQADash(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a chart's ticks are written with the decimals of their step", func(t *testing.T) {
		pro := pro.in(t)
		// uPlot steps its ticks by 1, 2, 2.5 and 5 times a power of ten:
		// ticks 2.5 apart written without a decimal read 0, 3, 5, 8.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		// One listener answers every replay with the answer of the span under test.
		var answer atomic.Value
		defer pro.answerBy("*/v1/replay", "/v1/replay", func(string) (int64, []byte, bool) { return 200, answer.Load().([]byte), true })()
		fractional := 0
		for run, span := range []float64{12, 14, 16, 18, 19, 20, 22, 25, 1.6, 1.9, 0.19} {
			answer.Store(replayAnswer(slug15, span))
			pro.run("replay", chromedp.Click(byID("replay-submit")),
				chromedp.WaitVisible(byID("replay-results")+fmt.Sprintf(`[data-run="%d"]`, run+1)), chromedp.WaitVisible(byID("equity-chart")+`[data-y-ticks]`))
			var raw string
			pro.eval(`document.querySelector('[data-testid=equity-chart]').dataset.yTicks`, &raw)
			var labels []string
			if err := json.Unmarshal([]byte(raw), &labels); err != nil || len(labels) < 3 {
				t.Fatalf("pnl from 0 to %v: the y axis's ticks %q", span, raw)
			}
			var vals []float64
			for _, l := range labels {
				v, err := strconv.ParseFloat(strings.NewReplacer("−", "-", ",", "").Replace(l), 64)
				if err != nil {
					t.Fatalf("pnl from 0 to %v: tick %q is not a number", span, l)
				}
				vals = append(vals, v)
			}
			// Steps that are not whole (2.5, 0.25) are the case to see.
			step := vals[1] - vals[0]
			if step != math.Trunc(step) || uneven(vals) {
				fractional++
			}
			if uneven(vals) {
				t.Errorf("pnl from 0 to %v: the ticks read %q, not evenly spaced: a tick is written with fewer decimals than its step has", span, labels)
			}
		}
		if fractional == 0 {
			t.Errorf("no span drew ticks a fraction apart: the test saw nothing to check")
		}
	})

	t.Run("a walk-forward sweep says whose test figures it shows", func(t *testing.T) {
		pro := pro.in(t)
		defer pro.answerJSON("*/v1/sweeps/sw_qadashwf*", "/v1/sweeps/sw_qadashwf", walkForwardSweep())()
		pro.visit("#/sweeps/sw_qadashwf", "sweeps")
		pro.run("results", chromedp.WaitVisible(byID("heatmap-test")), chromedp.WaitVisible(byID("sweep-trials")))
		// A trial's test figures are its last fold's block (the earlier
		// blocks train in the later folds).
		var caption string
		pro.eval(`document.querySelector('[data-testid=heatmap-test] caption').textContent`, &caption)
		if !strings.Contains(caption, "last fold") {
			t.Errorf("the test heatmap's caption %q does not say it is the last fold's block", caption)
		}
		var heads []string
		pro.eval(`[...document.querySelectorAll('[data-testid=sweep-trials] thead th')].map(h => h.textContent)`, &heads)
		for _, h := range heads {
			if strings.HasPrefix(h, "Test") && !strings.Contains(h, "last fold") {
				t.Errorf("the trials table's column %q does not say it is the last fold's block (columns %q)", h, heads)
			}
		}
		// best.test joins every fold's chosen trial's test block.
		var label string
		pro.eval(`document.querySelector('[data-testid=best-test-objective]').previousElementSibling.textContent`, &label)
		if !strings.Contains(label, "folds joined") {
			t.Errorf("the best trial's test figure is labelled %q: it is the folds' chosen trials' joined", label)
		}
		// Each market's pnl says which trial traded it.
		var trials []string
		pro.eval(`[...document.querySelectorAll('[data-testid=best-market-row]')].map(r => (r.querySelector('[data-testid=best-market-trial]')||{}).textContent||'')`, &trials)
		if want := []string{"0", "0", "1", "1", "0", "0"}; fmt.Sprint(trials) != fmt.Sprint(want) {
			t.Errorf("the per-market rows name the trials %q; the answer's are %q (test markets: the trial their fold chose)", trials, want)
		}
	})

	t.Run("an error answered to Run replay is seen where the button is", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.setValue(byID("replay-size"), "0")
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("error-banner")))
		var at struct {
			Top, Bottom, Height, ScrollY float64
			Text                         string
		}
		pro.eval(`(() => { const b = document.querySelector('[data-testid=error-banner]').getBoundingClientRect();
			return {Top: b.top, Bottom: b.bottom, Height: window.innerHeight, ScrollY: window.scrollY, Text: document.querySelector('[data-testid=error-banner]').textContent} })()`, &at)
		if !strings.Contains(at.Text, "VALIDATION_ERROR") {
			t.Fatalf("the banner says %q", at.Text)
		}
		if at.ScrollY == 0 {
			t.Fatalf("the Run button was in view without scrolling: nothing to check")
		}
		if at.Top < 0 || at.Bottom > at.Height {
			t.Errorf("the error of a refused replay is at %v to %v px of an %v px window (scrolled %v px to the Run button): out of sight", at.Top, at.Bottom, at.Height, at.ScrollY)
		}
	})
	t.Run("a filter or page changed from the keyboard keeps the keyboard there", func(t *testing.T) {
		pro := pro.in(t)
		// Each filter change (and each page) loads the list afresh: the
		// control used must have the focus again, not the document, from
		// which the next Tab starts at the top, through the navigation.
		pro.visit("#/markets", "markets")
		focused := func() string {
			var id string
			pro.eval(`(() => { const e = document.activeElement; return e ? (e.dataset.testid || e.tagName) : '' })()`, &id)
			return id
		}
		// The list of the new address, once shown (the old one goes at once).
		shown := func(cond string) chromedp.Action {
			return chromedp.Poll(`!!document.querySelector('main[data-ready="markets"]') && (`+cond+`)`, nil, chromedp.WithPollingTimeout(patience))
		}
		pro.run("focus the type box", chromedp.Focus(byID("markets-type")))
		pro.run("pick 15m with the keyboard", chromedp.SetValue(byID("markets-type"), "15m"),
			chromedp.Evaluate(`document.querySelector('[data-testid=markets-type]').dispatchEvent(new Event('change', {bubbles: true}))`, nil),
			shown(`[...document.querySelectorAll('[data-testid=market-row] td:nth-child(2)')].every(c => c.textContent === '15m')`))
		if got := focused(); got != "markets-type" {
			t.Errorf("after a filter changed from the keyboard the focus is on %q; want the type box", got)
		}
		older := `.pager button:last-of-type`
		pro.run("focus Older", chromedp.Focus(older))
		pro.run("press Enter", chromedp.KeyEvent("\r"), shown(`document.querySelector('[data-testid=markets-range]').textContent.startsWith('26')`))
		if got := focused(); got != "markets-next" {
			t.Errorf("after Older with the keyboard the focus is on %q; want Older (markets-next)", got)
		}
		// The exchange's coin, likewise.
		pro.visit("#/exchange", "exchange")
		pro.run("focus the coin", chromedp.Focus(byID("exchange-coin")))
		pro.run("pick ETH", chromedp.SetValue(byID("exchange-coin"), "eth"),
			chromedp.Evaluate(`document.querySelector('[data-testid=exchange-coin]').dispatchEvent(new Event('change', {bubbles: true}))`, nil),
			chromedp.Poll(`!!document.querySelector('main[data-ready="exchange"]') && document.querySelector('[data-testid=exchange-trades-table] caption').textContent.startsWith('ETH')`, nil, chromedp.WithPollingTimeout(patience)))
		if got := focused(); got != "exchange-coin" {
			t.Errorf("after the exchange's coin changed from the keyboard the focus is on %q; want the coin box", got)
		}
	})
	t.Run("each page names itself in the window's title", func(t *testing.T) {
		pro := pro.in(t)
		// A screen reader announces the title on a page change, and a
		// tab or the history lists pages by it.
		for _, p := range []struct{ hash, page, name string }{
			{"#/markets", "markets", "Markets"}, {"#/market/" + url.PathEscape(slug15), "market", slug15}, {"#/replay", "replay", "Replay"},
			{"#/agent", "agent", "Backtest AI"}, {"#/sweeps", "sweeps", "Sweeps"}, {"#/exchange", "exchange", "Exchange"}, {"#/account", "account", "Account"},
		} {
			pro.visit(p.hash, p.page)
			var title string
			pro.eval(`document.title`, &title)
			if !strings.HasPrefix(title, p.name) || !strings.Contains(title, "updown") {
				t.Errorf("%s is titled %q; want it to start with %q", p.hash, title, p.name)
			}
		}
	})
	t.Run("a sweep whose progress the server does not answer says so", func(t *testing.T) {
		pro := pro.in(t)
		// The sweep runs; then its polls are answered 503 (Postgres away
		// behind the api): the page must not go on saying it runs, with
		// a progress bar that no longer moves, without a word.
		var status atomic.Int64
		status.Store(200)
		running := runningSweep()
		refused := []byte(`{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the database is not answering"},"timestamp":"2026-11-27T10:00:00Z"}`)
		defer pro.answerBy("*/v1/sweeps/sw_qadashrun*", "/v1/sweeps/sw_qadashrun", func(string) (int64, []byte, bool) {
			if st := status.Load(); st != 200 {
				return st, refused, true
			}
			return 200, running, true
		})()
		pro.visit("#/sweeps/sw_qadashrun", "sweeps")
		pro.run("progress", chromedp.WaitVisible(byID("sweep-progress")+`[data-status="RUNNING"]`))
		status.Store(503)
		// Polls come every 0.7 s: a few of them.
		_ = chromedp.Run(pro.ctx, chromedp.Poll(`document.querySelector('[data-testid=sweep-status]').textContent.includes('SERVICE_UNAVAILABLE')`, nil,
			chromedp.WithPollingTimeout(8*time.Second)))
		if got := pro.text(byID("sweep-status")); !strings.Contains(got, "SERVICE_UNAVAILABLE") {
			t.Errorf("with every poll of its progress refused 503, the sweep's status says %q", got)
		}
		// Answered again, it says what the sweep does.
		status.Store(200)
		pro.run("answered again", chromedp.Poll(`!document.querySelector('[data-testid=sweep-status]').textContent.includes('SERVICE_UNAVAILABLE')`, nil,
			chromedp.WithPollingTimeout(patience)))
	})
	t.Run("the replay page suggests every coin's markets", func(t *testing.T) {
		pro := pro.in(t)
		// A PRO plan replays BTC, ETH and SOL markets alike: the market
		// box suggests the newest resolved of each, where it listed BTC's
		// alone, with BTC's newest still the default.
		pro.visit("#/replay", "replay")
		pro.run("suggestions", chromedp.Poll(`document.querySelectorAll('#replay-markets option').length > 0`, nil,
			chromedp.WithPollingTimeout(patience)))
		var slugs []string
		pro.eval(`[...document.querySelectorAll('#replay-markets option')].map(o => o.value)`, &slugs)
		for _, coin := range []string{"btc-", "eth-", "sol-"} {
			if !slices.ContainsFunc(slugs, func(s string) bool { return strings.HasPrefix(s, coin) }) {
				t.Errorf("the replay page suggests no %s market: %v", strings.TrimSuffix(coin, "-"), slugs)
			}
		}
		var chosen string
		pro.eval(`document.querySelector('[data-testid=replay-market]').value`, &chosen)
		if !strings.HasPrefix(chosen, "btc-") {
			t.Errorf("the replay page's default market is %q, want BTC's newest", chosen)
		}
	})
	t.Run("a sweep's progress waits out a 429's Retry-After", func(t *testing.T) {
		pro := pro.in(t)
		// Over the rate limit, the page's next poll waits as long as the
		// 429's Retry-After asks (SPEC 7), where it asked again every
		// 0.7 s and spent the limit it had been told to spare.
		// Each poll is logged with when it came and what it was answered:
		// the page's waits are read from the log, not timed by the test
		// (a slow machine only spaces its polls further).
		type poll struct {
			at      time.Time
			limited bool
		}
		var mu sync.Mutex
		var log []poll
		var limited atomic.Bool
		running := runningSweep()
		over := []byte(`{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"over the minute's limit","details":{"window":"minute"}},"timestamp":"2026-11-27T10:00:00Z"}`)
		defer pro.answerBy("*/v1/sweeps/sw_qadashrun*", "/v1/sweeps/sw_qadashrun", func(string) (int64, []byte, bool) {
			l := limited.Load()
			mu.Lock()
			log = append(log, poll{time.Now(), l})
			mu.Unlock()
			if l {
				return 429, over, true
			}
			return 200, running, true
		}, &fetch.HeaderEntry{Name: "Retry-After", Value: "4"})()
		pro.visit("#/sweeps/sw_qadashrun", "sweeps")
		pro.run("progress", chromedp.WaitVisible(byID("sweep-progress")+`[data-status="RUNNING"]`))
		limited.Store(true)
		pro.run("the 429 shown", chromedp.Poll(`document.querySelector('[data-testid=sweep-status]').textContent.includes('RATE_LIMIT_EXCEEDED')`, nil,
			chromedp.WithPollingTimeout(patience)))
		// Answered again, the page goes on.
		limited.Store(false)
		pro.run("polled again", chromedp.Poll(`!document.querySelector('[data-testid=sweep-status]').textContent.includes('RATE_LIMIT_EXCEEDED')`, nil,
			chromedp.WithPollingTimeout(patience)))
		mu.Lock()
		defer mu.Unlock()
		// Every poll after a 429 came at least the 4 s its Retry-After
		// asked for (0.7 s apart before; 3.5 s leaves the clocks' slack).
		after429 := 0
		for i := 1; i < len(log); i++ {
			if !log[i-1].limited {
				continue
			}
			after429++
			if gap := log[i].at.Sub(log[i-1].at); gap < 3500*time.Millisecond {
				t.Errorf("a poll %v after a 429 with Retry-After: 4; want it to wait the 4 s", gap.Round(time.Millisecond))
			}
		}
		if after429 == 0 {
			t.Errorf("no poll followed a 429: %d polls", len(log))
		}
	})
	t.Run("a server error names its request id", func(t *testing.T) {
		pro := pro.in(t)
		// A 500 says nothing of its cause (DESIGN 5); the operator finds
		// it in the log by the request id the answer carries: the user
		// must be able to give it.
		failed := []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"internal server error"},"timestamp":"2026-11-27T10:00:00Z"}`)
		defer pro.answerBy("*/v1/replay", "/v1/replay", func(string) (int64, []byte, bool) { return 500, failed, true },
			&fetch.HeaderEntry{Name: "X-Request-Id", Value: "qadash0123456789abcdef"})()
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("error-banner")))
		if got := pro.text(byID("error-banner")); !strings.Contains(got, "INTERNAL_ERROR") || !strings.Contains(got, "qadash0123456789abcdef") {
			t.Errorf("a replay answered 500 shows %q: no request id to report", got)
		}
	})
	t.Run("a replay's drawdown shows its percent too", func(t *testing.T) {
		pro := pro.in(t)
		// max_drawdown_percent is SPEC's figure beside max_drawdown: the
		// fall over the peak it fell from.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.setValue(byID("replay-code"), "side=UP entry: price_up >= 0 exit: price_up > 0.99 size=100 maxloss=100 order=MARKET")
		var runs string
		pro.eval(`document.querySelector('[data-testid=replay-results]').dataset.run || '0'`, &runs)
		n, _ := strconv.Atoi(runs)
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+fmt.Sprintf(`[data-run="%d"]`, n+1)))
		var answer struct {
			Data struct {
				Performance struct {
					MaxDrawdown        float64 `json:"max_drawdown"`
					MaxDrawdownPercent float64 `json:"max_drawdown_percent"`
				}
			}
		}
		apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", `{"marketSlug":"`+slug15+`","side":"UP","entryConditions":[{"field":"price_up","operator":">=","value":0}],
			"exitConditions":[{"field":"price_up","operator":">","value":0.99}],"positionSize":100,"maxLossPercent":100,"orderType":"MARKET"}`, &answer)
		p := answer.Data.Performance
		if p.MaxDrawdownPercent == 0 {
			t.Fatalf("the replay had no drawdown: nothing to check (%+v)", p)
		}
		want := "$" + fixed(p.MaxDrawdown, 2) + " (" + fixed(p.MaxDrawdownPercent, 1) + "%)"
		var got string
		pro.eval(`[...document.querySelectorAll('[data-testid=replay-results] dt')].find(d => d.textContent === 'Max drawdown').nextElementSibling.textContent`, &got)
		if got != want {
			t.Errorf("max drawdown shows %q; the API's is %q", got, want)
		}
	})
	t.Run("a page waiting on a slow server says it is loading", func(t *testing.T) {
		pro := pro.in(t)
		// The server takes 3 s to answer: the page says it is loading,
		// not an empty table (the markets) or an empty page (the account).
		slow := func(path string) func(string) (int64, []byte, bool) {
			return func(string) (int64, []byte, bool) {
				time.Sleep(3 * time.Second)
				var out any
				apiGet(t, base, path, "ud_dev_pro", &out)
				b, _ := json.Marshal(out)
				return 200, b, true
			}
		}
		stop := pro.answerBy("*/v1/markets?*", "/v1/markets?coin=SOL", slow("/v1/markets?coin=SOL&limit=25&offset=0"))
		pro.run("open the SOL markets", chromedp.Navigate(base+"/app/#/markets?coin=SOL"), chromedp.WaitVisible(byID("markets-table")))
		var waiting string
		pro.eval(`document.querySelector('[data-testid=markets-table] tbody').textContent`, &waiting)
		pro.run("the list", chromedp.WaitVisible(`main[data-ready="markets"]`))
		stop()
		if !strings.Contains(waiting, "Loading") {
			t.Errorf("while the server answered the markets table held %q: nothing says it is loading", waiting)
		}
		if got := pro.text(byID("markets-table") + " tbody"); strings.Contains(got, "Loading") {
			t.Errorf("the answered markets table still says it is loading")
		}

		stop = pro.answerBy("*/v1/account", "/v1/account", slow("/v1/account"))
		defer func() { stop() }()
		pro.run("open the account", chromedp.Navigate(base+"/app/#/account"), chromedp.WaitVisible(`main .page`))
		pro.eval(`document.querySelector('main .page').textContent`, &waiting)
		pro.run("the account", chromedp.WaitVisible(`main[data-ready="account"]`))
		if !strings.Contains(waiting, "Loading") {
			t.Errorf("while the server answered the account page held %q: nothing says it is loading", waiting)
		}
		stop()
		// A page the server refused says why, and no longer that it is loading.
		refused := []byte(`{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the database is not answering"},"timestamp":"2026-11-27T10:00:00Z"}`)
		stop = pro.answerBy("*/v1/account", "/v1/account", func(string) (int64, []byte, bool) { return 503, refused, true })
		pro.visit("#/markets", "markets")
		pro.visit("#/account", "account")
		if got := pro.text(byID("error-banner")); !strings.Contains(got, "SERVICE_UNAVAILABLE") {
			t.Errorf("the refused account page's banner says %q", got)
		}
		var left int
		pro.eval(`document.querySelectorAll('[data-testid=page-loading]').length`, &left)
		if left != 0 {
			t.Errorf("the refused account page still says it is loading")
		}
	})
	t.Run("the field a refused replay names is marked in the form", func(t *testing.T) {
		pro := pro.in(t)
		// The API names the request's field (positionSize,
		// entryConditions[0].value); the form shows its own words: the
		// control is marked and takes the keyboard.
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		invalid := func() (ids []string, focused string) {
			pro.eval(`[...document.querySelectorAll('form [aria-invalid=true]')].map(e => e.dataset.testid || (e.closest('[data-testid]') || {dataset: {}}).dataset.testid + ' ' + e.name)`, &ids)
			pro.eval(`(() => { const e = document.activeElement; return e.dataset.testid || (e.closest('[data-testid]') || {dataset: {}}).dataset.testid + ' ' + e.name })()`, &focused)
			return ids, focused
		}
		pro.setValue(byID("replay-size"), "0")
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("error-banner")))
		if ids, focused := invalid(); fmt.Sprint(ids) != "[replay-size]" || focused != "replay-size" {
			t.Errorf("positionSize refused: marked %q, focus on %q; want the shares box", ids, focused)
		}
		pro.setValue(byID("replay-size"), "10")
		pro.setValue(byID("replay-entry")+" [name=value]", "")
		pro.run("run", chromedp.Click(byID("replay-submit")), chromedp.Poll(`document.querySelector('[data-testid=error-banner]').textContent.includes('entryConditions[0].value')`, nil, chromedp.WithPollingTimeout(patience)))
		if ids, focused := invalid(); fmt.Sprint(ids) != "[replay-entry value]" || focused != "replay-entry value" {
			t.Errorf("entryConditions[0].value refused: marked %q, focus on %q; want the first entry condition's value", ids, focused)
		}
	})
	t.Run("the account page shows its keys when the plans cannot be read", func(t *testing.T) {
		pro := pro.in(t)
		// Each part of the page stands on its own: the plans' answer
		// refused leaves the keys (and the account's figures) usable.
		refused := []byte(`{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the database is not answering"},"timestamp":"2026-11-27T10:00:00Z"}`)
		defer pro.answerBy("*/v1/account/billing*", "/v1/account/billing", func(string) (int64, []byte, bool) { return 503, refused, true })()
		pro.visit("#/markets", "markets")
		pro.visit("#/account", "account")
		var rows int
		pro.eval(`document.querySelectorAll('[data-testid=keys-table] tbody tr').length`, &rows)
		if rows == 0 {
			t.Errorf("with the plans refused the account page lists no key (banner %q)", pro.text(byID("error-banner")))
		}
		var plans string
		pro.eval(`(document.querySelector('[data-testid=billing-error]') || {}).textContent || ''`, &plans)
		if !strings.Contains(plans, "SERVICE_UNAVAILABLE") {
			t.Errorf("where the plans would be the page says %q", plans)
		}
	})
}

// uneven says whether ticks are not evenly spaced.
func uneven(vals []float64) bool {
	for i := 2; i < len(vals); i++ {
		if math.Abs((vals[i]-vals[i-1])-(vals[1]-vals[0])) > 1e-9 {
			return true
		}
	}
	return false
}

// replayAnswer is a replay's answer whose equity runs from 0 to span.
func replayAnswer(slug string, span float64) []byte {
	const start = "2026-11-27T10:00:00.000000Z"
	curve := []map[string]any{}
	for i := 0; i <= 10; i++ {
		curve = append(curve, map[string]any{"time": fmt.Sprintf("2026-11-27T10:%02d:00.000000Z", i), "pnl": span * float64(i) / 10,
			"unrealized_pnl": 0, "price": 0.5, "coin_price": 90000, "in_position": false})
	}
	b, _ := json.Marshal(map[string]any{"success": true, "timestamp": start, "data": map[string]any{
		"market":   map[string]any{"slug": slug, "market_type": "15m", "winner": "UP", "start_time": start, "end_time": "2026-11-27T10:15:00.000000Z"},
		"strategy": map[string]any{"side": "UP", "positionSize": 100, "orderType": "MARKET", "entryConditionCount": 1, "exitConditionCount": 1, "feeModel": "NONE", "latencyMs": 0},
		"performance": map[string]any{"total_pnl": span, "total_pnl_percent": 1, "max_drawdown": 0, "max_drawdown_percent": 0, "total_trades": 0,
			"winning_trades": 0, "losing_trades": 0, "win_rate": 0, "avg_trade_pnl": 0, "best_trade": 0, "worst_trade": 0, "time_in_position_pct": 0,
			"final_market_outcome": "UP", "total_fees": 0},
		"trades": []any{}, "pnl_curve": curve, "total_snapshots": 11}})
	return b
}

// walkForwardSweep is a finished WALK_FORWARD sweep as GET /v1/sweeps/{id}
// answers it: 2 trials over 6 markets in 3 blocks of 2; fold 1 trains on
// block 0 and chose trial 1, fold 2 trains on blocks 0 and 1 and chose
// trial 0, the best on the last fold's train markets.
func walkForwardSweep() []byte {
	summary := func(pnl float64, trades int) map[string]any {
		return map[string]any{"n_markets": 2, "n_markets_traded": 2, "n_trades": trades, "total_pnl": pnl, "total_fees": 0, "win_rate": 50,
			"ev_per_trade": pnl / float64(trades), "ev_ci95": nil, "sqn": nil, "win_rate_ci95": nil, "pnl_per_market": nil, "sharpe_per_market": 0.5,
			"daily": nil, "sharpe_daily_ann": nil, "sortino_daily_ann": nil, "portfolio_max_drawdown": 1, "calibration": nil,
			"brier_entry": nil, "brier_market": nil, "psr0": nil}
	}
	param := func(v float64) []map[string]any {
		return []map[string]any{{"path": "/entryConditions/0/value", "value": v}}
	}
	trial := func(n int, v, train, test float64) map[string]any {
		return map[string]any{"trial": n, "parameters": param(v), "train": summary(train, 4), "test": summary(test, 2), "train_objective": train, "test_objective": test}
	}
	market := func(i int, pnl float64, test bool, tr any) map[string]any {
		m := map[string]any{"slug": fmt.Sprintf("btc-updown-15m-qadash-%d", i), "pnl": pnl, "test": test}
		if tr != nil {
			m["trial"] = tr
		}
		return m
	}
	b, _ := json.Marshal(map[string]any{"success": true, "timestamp": "2026-11-27T11:00:00Z", "data": map[string]any{
		"sweep_id": "sw_qadashwf", "status": "DONE", "trials": 2, "markets": 6, "replays": 12,
		"progress":   map[string]any{"replays_done": 12, "replays_total": 12, "eta_seconds": nil},
		"created_at": "2026-11-27T10:00:00Z", "finished_at": "2026-11-27T10:01:00Z", "error": nil,
		"request": map[string]any{
			"strategy": map[string]any{"side": "UP", "entryConditions": []map[string]any{{"field": "price_up", "operator": "<", "value": 0.4}},
				"exitConditions": []map[string]any{{"field": "price_up", "operator": ">=", "value": 0.6}}, "positionSize": 10, "maxLossPercent": 50, "orderType": "MARKET"},
			"parameters": []map[string]any{{"path": "/entryConditions/0/value", "values": []float64{0.4, 0.45}}},
			"search":     map[string]any{"kind": "GRID"},
			"markets":    map[string]any{"coin": "BTC", "market_type": "15m", "count": 6},
			"split":      map[string]any{"kind": "WALK_FORWARD", "folds": 2, "embargoMarkets": 0},
			"objective":  "total_pnl",
		},
		"results": map[string]any{
			"objective": "total_pnl", "split": "WALK_FORWARD",
			"trials": []any{trial(0, 0.4, 3, 1), trial(1, 0.45, 2, -1)},
			"best": map[string]any{"trial": 0, "parameters": param(0.4), "train_objective": 3, "test_objective": 0.5, "test": summary(0.5, 4),
				"per_market": []any{market(1, 1, false, nil), market(2, 1, false, nil), market(3, -0.25, true, 1), market(4, -0.25, true, 1),
					market(5, 0.5, true, 0), market(6, 0.5, true, 0)}},
			"folds": []any{
				map[string]any{"fold": 1, "trial": 1, "train_objective": 2.5, "test": summary(-0.5, 2), "test_objective": -0.5},
				map[string]any{"fold": 2, "trial": 0, "train_objective": 3, "test": summary(1, 2), "test_objective": 1},
			},
			"stability": map[string]any{"trial": 0, "objective": 3, "neighbour_mean": 2, "neighbours": 1},
			"dsr":       nil, "pbo": nil, "pbo_choices": nil,
		},
	}})
	return b
}

// runningSweep is a sweep under way as GET /v1/sweeps/{id} answers it.
func runningSweep() []byte {
	b, _ := json.Marshal(map[string]any{"success": true, "timestamp": "2026-11-27T10:00:30Z", "data": map[string]any{
		"sweep_id": "sw_qadashrun", "status": "RUNNING", "trials": 2, "markets": 6, "replays": 12,
		"progress":   map[string]any{"replays_done": 5, "replays_total": 12, "eta_seconds": 30},
		"created_at": "2026-11-27T10:00:00Z", "finished_at": nil, "error": nil,
	}})
	return b
}
