package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's Sweeps page (DESIGN 12, 14) in Chromium against `updown
// dev`: a PRO customer builds a two-parameter sweep, follows its progress
// bar to DONE, and the heatmaps, the best trial's figures and the verdict
// (dsr, pbo) are checked against GET /v1/sweeps/{id}. Then a refused field,
// a second sweep while one runs, cancelling, and a plan without sweeps.

// runUntil runs actions with a generous bound: a sweep finishes when the
// machine gets to it, and the bound only stops a test that would hang.
func (b *browserSession) runUntil(what string, d time.Duration, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var banner, problem string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`(document.querySelector('[data-testid=error-banner]')||{}).textContent||''`, &banner))
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`(document.querySelector('[data-testid=sweep-error]')||{}).textContent||''`, &problem))
		b.t.Fatalf("%s: %v (error banner %q, sweep error %q)", what, err, banner, problem)
	}
}

// sweepSummary is what the test reads of a trial's statistics.
type sweepSummary struct {
	NMarkets int      `json:"n_markets"`
	NTrades  int      `json:"n_trades"`
	TotalPnL float64  `json:"total_pnl"`
	WinRate  *float64 `json:"win_rate"`
	PSR0     *float64 `json:"psr0"`
}

type sweepAnswer struct {
	Data struct {
		SweepID  string `json:"sweep_id"`
		Status   string `json:"status"`
		Trials   int    `json:"trials"`
		Markets  int    `json:"markets"`
		Replays  int    `json:"replays"`
		Progress struct {
			Done  int `json:"replays_done"`
			Total int `json:"replays_total"`
		} `json:"progress"`
		Results *struct {
			Objective string `json:"objective"`
			Trials    []struct {
				Trial      int `json:"trial"`
				Parameters []struct {
					Path  string `json:"path"`
					Value any    `json:"value"`
				} `json:"parameters"`
				Train          sweepSummary  `json:"train"`
				Test           *sweepSummary `json:"test"`
				TrainObjective *float64      `json:"train_objective"`
				TestObjective  *float64      `json:"test_objective"`
			} `json:"trials"`
			Best *struct {
				Trial      int `json:"trial"`
				Parameters []struct {
					Path  string `json:"path"`
					Value any    `json:"value"`
				} `json:"parameters"`
				TrainObjective *float64      `json:"train_objective"`
				TestObjective  *float64      `json:"test_objective"`
				Test           *sweepSummary `json:"test"`
				PerMarket      []struct {
					Slug    string  `json:"slug"`
					PnL     float64 `json:"pnl"`
					Test    bool    `json:"test"`
					Embargo bool    `json:"embargo"`
				} `json:"per_market"`
			} `json:"best"`
			Folds []struct {
				Fold  int `json:"fold"`
				Trial int `json:"trial"`
			} `json:"folds"`
			DSR        *float64 `json:"dsr"`
			PBO        *float64 `json:"pbo"`
			PBOChoices *int     `json:"pbo_choices"`
		} `json:"results"`
	} `json:"data"`
}

// shownValue is a parameter value as the page writes it (JavaScript's String()).
func shownValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// shownRatio is a 0-1 statistic as the page writes it: 3 decimals, or a dash.
func shownRatio(x *float64) string {
	if x == nil {
		return "—"
	}
	return fixed(*x, 3)
}

// chanceWords is a probability as the page words it.
func chanceWords(p float64) string {
	switch {
	case p < 0.005:
		return "less than a 1% chance"
	case p > 0.995:
		return "more than a 99% chance"
	}
	return fmt.Sprintf("a %d%% chance", int(math.Round(p*100)))
}

func TestSweepsPageInBrowser(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	shots := os.Getenv("UPDOWN_SCREENSHOTS")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	pro.visit("#/sweeps", "sweeps")
	pro.run("the form", chromedp.WaitVisible(byID("sweep-form")))

	// Two parameters: the entry threshold as values, the exit threshold as a range.
	param := func(n int, name string) string {
		return fmt.Sprintf(`[data-testid=sweep-param]:nth-child(%d) [name=%s]`, n, name)
	}
	pro.setValue(param(1, "mode"), "values")
	pro.setValue(param(1, "values"), "0.35, 0.45, 0.55")
	pro.setValue(param(2, "mode"), "range")
	pro.setValue(param(2, "from"), "0.6")
	pro.setValue(param(2, "to"), "0.7")
	pro.setValue(param(2, "step"), "0.05")
	pro.setValue(byID("sweep-count"), "30")
	pro.setValue(byID("sweep-split"), "HOLDOUT")
	if got := pro.text(byID("sweep-replays")); !strings.HasPrefix(got, "9 trials × up to 30 markets = up to 270 replays") {
		t.Errorf("sweep size: %q", got)
	}
	pro.run("submit", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-progress")))
	pro.runUntil("the sweep finishes", 5*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(byID("heatmap-train")))
	var hash string
	pro.eval(`location.hash`, &hash)
	id, ok := strings.CutPrefix(hash, "#/sweeps/")
	if !ok || !strings.HasPrefix(id, "sw_") {
		t.Fatalf("the address after submitting is %q: want #/sweeps/sw_…", hash)
	}
	var sw sweepAnswer
	apiGet(t, base, "/v1/sweeps/"+id, "ud_dev_pro", &sw)
	d := sw.Data
	if d.Status != "DONE" || d.Results == nil || d.Trials != 9 || len(d.Results.Trials) != 9 {
		t.Fatalf("the API's sweep: %+v", d)
	}
	res := d.Results

	t.Run("progress bar at 100%", func(t *testing.T) {
		pro := pro.in(t)
		var bar struct{ Value, Max float64 }
		pro.eval(`(() => { const p = document.querySelector('[data-testid=sweep-progress] progress'); return {Value: p.value, Max: p.max} })()`, &bar)
		if bar.Value != float64(d.Progress.Total) || bar.Max != float64(d.Progress.Total) || d.Progress.Done != d.Progress.Total {
			t.Errorf("progress bar %v of %v; the API %d of %d", bar.Value, bar.Max, d.Progress.Done, d.Progress.Total)
		}
		want := fmt.Sprintf("%s of %s replays (100%%)", fixed(float64(d.Replays), 0), fixed(float64(d.Replays), 0))
		if got := pro.text(byID("sweep-progress-text")); got != want {
			t.Errorf("progress text %q, want %q", got, want)
		}
		var cancelHidden bool
		pro.eval(`document.querySelector('[data-testid=sweep-cancel]').hidden`, &cancelHidden)
		if !cancelHidden {
			t.Error("a finished sweep still offers to cancel")
		}
	})

	t.Run("heatmaps, train beside test", func(t *testing.T) {
		pro := pro.in(t)
		for _, m := range []struct {
			testid string
			value  func(i int) *float64
		}{
			{"heatmap-train", func(i int) *float64 { return res.Trials[i].TrainObjective }},
			{"heatmap-test", func(i int) *float64 { return res.Trials[i].TestObjective }},
		} {
			var cells []struct{ X, Y, Trial, Value, Text, Background string }
			pro.eval(`[...document.querySelectorAll('[data-testid=`+m.testid+`] [data-testid=heatmap-cell]')].map(c => ({X: c.dataset.x, Y: c.dataset.y, Trial: c.dataset.trial,
				Value: c.dataset.value, Text: c.textContent, Background: getComputedStyle(c).backgroundColor}))`, &cells)
			if len(cells) != 9 {
				t.Fatalf("%s: %d cells, want 9", m.testid, len(cells))
			}
			byPair := map[string]int{}
			for i, tr := range res.Trials {
				byPair[shownValue(tr.Parameters[0].Value)+" "+shownValue(tr.Parameters[1].Value)] = i
			}
			for _, c := range cells {
				i, ok := byPair[c.X+" "+c.Y]
				if !ok {
					t.Errorf("%s: a cell at %s, %s, which no trial ran", m.testid, c.X, c.Y)
					continue
				}
				want := m.value(i)
				if want == nil {
					if c.Text != "—" || c.Value != "" {
						t.Errorf("%s at %s, %s: %q (%q), the API null", m.testid, c.X, c.Y, c.Text, c.Value)
					}
					continue
				}
				if c.Trial != strconv.Itoa(res.Trials[i].Trial) {
					t.Errorf("%s at %s, %s: trial %s, want %d", m.testid, c.X, c.Y, c.Trial, res.Trials[i].Trial)
				}
				if v, err := strconv.ParseFloat(c.Value, 64); err != nil || v != *want {
					t.Errorf("%s at %s, %s: value %q, the API %v", m.testid, c.X, c.Y, c.Value, *want)
				}
				moneyShown(t, m.testid+" cell", c.Text, *want)
				// Gains green, losses red (set through the CSSOM, which the CSP allows).
				if hue := map[bool]string{true: "rgba(26, 127, 55", false: "rgba(207, 34, 46"}[*want > 0]; *want != 0 && !strings.HasPrefix(c.Background, hue) {
					t.Errorf("%s at %s, %s (%v) is coloured %s", m.testid, c.X, c.Y, *want, c.Background)
				}
			}
		}
		var best string
		pro.eval(`(document.querySelector('[data-testid=heatmap-train] td.best')||{dataset:{}}).dataset.trial||''`, &best)
		if res.Best == nil || best != strconv.Itoa(res.Best.Trial) {
			t.Errorf("the outlined train cell is trial %q; the API's best %+v", best, res.Best)
		}
	})

	t.Run("best trial's figures", func(t *testing.T) {
		pro := pro.in(t)
		b := res.Best
		if b == nil {
			t.Fatal("the API has no best trial")
		}
		var params []string
		pro.eval(`[...document.querySelectorAll('[data-testid=best-param]')].map(e => e.textContent)`, &params)
		var want []string
		for _, p := range b.Parameters {
			want = append(want, shownValue(p.Value))
		}
		if fmt.Sprint(params) != fmt.Sprint(want) {
			t.Errorf("best parameters %q, the API %q", params, want)
		}
		moneyShown(t, "best train objective", pro.text(byID("best-train-objective")), *b.TrainObjective)
		if b.TestObjective != nil {
			moneyShown(t, "best test objective", pro.text(byID("best-test-objective")), *b.TestObjective)
		}
		var won, lost int
		for _, m := range b.PerMarket {
			if m.Embargo { // neither train nor test: not counted
				continue
			}
			if m.PnL > 0 {
				won++
			} else if m.PnL < 0 {
				lost++
			}
		}
		// The objective is total_pnl: its figures are the pnl, not repeated.
		var pnlFigures int
		pro.eval(`document.querySelectorAll('[data-testid=best-train-pnl], [data-testid=best-test-pnl]').length`, &pnlFigures)
		if pnlFigures != 0 {
			t.Errorf("total_pnl is shown twice among the best trial's figures")
		}
		train := res.Trials[b.Trial].Train
		if got, want := pro.text(byID("best-trades")), fixed(float64(train.NTrades), 0)+" / "+fixed(float64(b.Test.NTrades), 0); got != want {
			t.Errorf("best trial's trades %q, the API %q", got, want)
		}
		if got := pro.text(byID("best-won-lost")); got != fmt.Sprintf("%d / %d", won, lost) {
			t.Errorf("markets won / lost %q, the API %d / %d", got, won, lost)
		}
		var rows []struct{ Slug, PnL string }
		pro.eval(`[...document.querySelectorAll('[data-testid=best-market-row]')].map(r => ({Slug: r.dataset.slug, PnL: r.cells[3].textContent}))`, &rows)
		if len(rows) != len(b.PerMarket) || len(rows) != d.Markets {
			t.Fatalf("%d per-market rows, the API %d of %d markets", len(rows), len(b.PerMarket), d.Markets)
		}
		for i, r := range rows {
			if r.Slug != b.PerMarket[i].Slug {
				t.Errorf("per-market row %d is %s, the API %s", i, r.Slug, b.PerMarket[i].Slug)
			}
			moneyShown(t, "per-market pnl of "+r.Slug, r.PnL, b.PerMarket[i].PnL)
		}
		var points string
		pro.run("per-market chart", chromedp.AttributeValue(byID("sweep-best-chart"), "data-points", &points, &ok))
		if points != strconv.Itoa(len(b.PerMarket)) {
			t.Errorf("the per-market chart has %q points, want %d", points, len(b.PerMarket))
		}
	})

	t.Run("dsr, pbo and the statistics in plain words", func(t *testing.T) {
		pro := pro.in(t)
		if got := pro.text(byID("sweep-dsr")); got != shownRatio(res.DSR) {
			t.Errorf("dsr %q, the API %v", got, res.DSR)
		}
		if got := pro.text(byID("sweep-pbo")); got != shownRatio(res.PBO) {
			t.Errorf("pbo %q, the API %v", got, res.PBO)
		}
		words := pro.text(byID("sweep-dsr-words"))
		if res.DSR != nil {
			want := chanceWords(*res.DSR) + " that the best trial's per-market Sharpe beats what the best of 9 random tries would show"
			if !strings.Contains(strings.ToLower(words), strings.ToLower(want)) {
				t.Errorf("dsr words %q: want %q", words, want)
			}
		} else if !strings.Contains(words, "No DSR") {
			t.Errorf("dsr words %q for a null dsr", words)
		}
		words = pro.text(byID("sweep-pbo-words"))
		if res.PBO != nil {
			n := 70
			if res.PBOChoices != nil {
				n = *res.PBOChoices
			}
			k := int(math.Round(*res.PBO * float64(n)))
			want := fmt.Sprintf("In %d of the %d ways of halving the train markets", k, n)
			if k == 0 || k == n {
				want = fmt.Sprintf("In %s of the %d ways of halving the train markets", map[bool]string{true: "none", false: "all"}[k == 0], n)
			}
			if !strings.Contains(words, want) {
				t.Errorf("pbo words %q: want %q", words, want)
			}
		} else if !strings.Contains(words, "No PBO") {
			t.Errorf("pbo words %q for a null pbo", words)
		}
		// Every statistic has its line of words; the best trial's are the API's.
		var stats []struct{ Stat, Train, Test, Words string }
		pro.eval(`[...document.querySelectorAll('[data-testid=stat-row]')].map(r => ({Stat: r.dataset.stat, Train: r.querySelector('[data-testid=stat-train]').textContent,
			Test: (r.querySelector('[data-testid=stat-test]')||{}).textContent||'', Words: r.querySelector('td.words').textContent}))`, &stats)
		bestTrain := res.Trials[res.Best.Trial].Train
		seen := map[string]bool{}
		for _, s := range stats {
			seen[s.Stat] = true
			if len(s.Words) < 10 {
				t.Errorf("statistic %s has no plain words: %q", s.Stat, s.Words)
			}
			switch s.Stat {
			case "total_pnl":
				moneyShown(t, "best trial's train total pnl", s.Train, bestTrain.TotalPnL)
			case "n_trades":
				if s.Train != fixed(float64(bestTrain.NTrades), 0) {
					t.Errorf("best trial's train trades %q, the API %d", s.Train, bestTrain.NTrades)
				}
			case "psr0":
				if s.Train != shownRatio(bestTrain.PSR0) {
					t.Errorf("best trial's psr0 %q, the API %v", s.Train, bestTrain.PSR0)
				}
			}
		}
		for _, k := range []string{"n_trades", "total_pnl", "win_rate", "ev_per_trade", "sqn", "sharpe_per_market", "psr0", "sharpe_daily_ann", "portfolio_max_drawdown", "brier"} {
			if !seen[k] {
				t.Errorf("the statistics table lacks %s", k)
			}
		}
		pro.checkNumbers("sweep results")
	})

	t.Run("trials table sorts", func(t *testing.T) {
		pro := pro.in(t)
		var order []string
		read := func() {
			pro.eval(`[...document.querySelectorAll('[data-testid=trial-row]')].map(r => r.dataset.trial)`, &order)
		}
		read()
		if len(order) != 9 || order[0] != strconv.Itoa(res.Best.Trial) {
			t.Errorf("trials by train objective %q: want 9, the best (%d) first", order, res.Best.Trial)
		}
		for i := 1; i < len(order); i++ {
			a, _ := strconv.Atoi(order[i-1])
			b, _ := strconv.Atoi(order[i])
			oa, ob := res.Trials[a].TrainObjective, res.Trials[b].TrainObjective
			if oa != nil && ob != nil && *oa < *ob {
				t.Errorf("trial %d (%v) before trial %d (%v)", a, *oa, b, *ob)
			}
		}
		pro.run("sort by trial", chromedp.Click(byID("sweep-trials")+` button[data-key="trial"]`))
		read()
		if fmt.Sprint(order) != "[0 1 2 3 4 5 6 7 8]" {
			t.Errorf("trials by number: %q", order)
		}
	})

	t.Run("every trial downloads as CSV", func(t *testing.T) {
		pro := pro.in(t)
		// The page hands the browser a blob; read it as the user would save it.
		var ok bool
		pro.eval(`(() => { window.__csv = null; const make = URL.createObjectURL; URL.createObjectURL = (b) => { b.text().then((x) => { window.__csv = x; }); return make.call(URL, b); }; return true })()`, &ok)
		var got string
		pro.run("download the trials", chromedp.Click(byID("sweep-trials-csv")),
			chromedp.Poll(`window.__csv`, &got, chromedp.WithPollingTimeout(patience)))
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/sweeps/"+id+"/trials?limit=1000", nil)
		req.Header.Set("X-API-Key", "ud_dev_pro")
		req.Header.Set("Accept", "text/csv")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		want, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("the API's trials CSV: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if got != string(want) {
			t.Errorf("the downloaded CSV:\n%s\nthe API's:\n%s", got, want)
		}
		if lines := strings.Count(strings.TrimSpace(got), "\n"); lines != 9 {
			t.Errorf("the download has %d rows after its header, want 9 trials", lines)
		}
	})

	t.Run("the list and a reload show the sweep", func(t *testing.T) {
		pro := pro.in(t)
		pro.run("listed", chromedp.WaitVisible(byID("sweep-row")+`[data-id="`+id+`"][data-status="DONE"]`))
		pro.run("reload", chromedp.Reload(), chromedp.WaitVisible(`main[data-ready="sweeps"]`), chromedp.WaitVisible(byID("heatmap-train")))
		var path string
		pro.eval(`document.querySelector('[data-testid=sweep-param] [name=path]').value`, &path)
		if path != "/entryConditions/0/value" {
			t.Errorf("the reloaded form's first parameter: %q", path)
		}
		// Evenly spaced values show as the range they make.
		var ranges []string
		pro.eval(`[1, 2].map(k => ['mode', 'from', 'to', 'step'].map(n => document.querySelector('[data-testid=sweep-param]:nth-child(' + k + ') [name=' + n + ']').value).join(' '))`, &ranges)
		if fmt.Sprint(ranges) != "[range 0.35 0.55 0.1 range 0.6 0.7 0.05]" {
			t.Errorf("the reloaded form's parameters: %q", ranges)
		}
		if shots != "" {
			screenshot(t, pro, filepath.Join(shots, "dashboard-sweeps.png"))
		}
	})

	t.Run("a refused field is named and marked", func(t *testing.T) {
		pro := pro.in(t)
		// A count over PRO's 200 markets runs on the ~60 that exist: an
		// embargo that leaves no test market is what refuses the count.
		pro.setValue(byID("sweep-split"), "HOLDOUT")
		pro.setValue(byID("sweep-embargo"), "1000")
		pro.run("submit", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-error")))
		status, body := call(t, "POST", base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
			"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100},
			"parameters":[{"path":"/entryConditions/0/value","values":[0.35,0.45,0.55]}],"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"15m","count":30},
			"split":{"kind":"HOLDOUT","embargoMarkets":1000}}`)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if d, _ := e["details"].(map[string]any); status != 400 || d["field"] != "markets.count" {
			t.Fatalf("the API on an embargo of 1000: %d %v", status, body)
		}
		if got := pro.text(byID("sweep-error")); got != "Not accepted: "+msg+"." && got != "Not accepted: "+msg {
			t.Errorf("the page says %q; the API %q", got, msg)
		}
		var invalid string
		pro.run("marked", chromedp.AttributeValue(byID("sweep-count"), "aria-invalid", &invalid, &ok))
		if invalid != "true" {
			t.Errorf("the count box is not marked invalid (%q)", invalid)
		}
		pro.setValue(byID("sweep-embargo"), "1")
	})

	t.Run("a second sweep while one runs, and cancel", func(t *testing.T) {
		pro := pro.in(t)
		// 190 trials × 60 markets: long enough to be running when the
		// second one is asked for, on any machine this runs on.
		pro.setValue(byID("sweep-type"), "5m")
		pro.setValue(byID("sweep-count"), "60")
		pro.setValue(param(1, "mode"), "range")
		pro.setValue(param(1, "from"), "0.05")
		pro.setValue(param(1, "to"), "0.95")
		pro.setValue(param(1, "step"), "0.05")
		pro.setValue(param(2, "mode"), "range")
		pro.setValue(param(2, "from"), "0.5")
		pro.setValue(param(2, "to"), "0.95")
		pro.setValue(param(2, "step"), "0.05")
		pro.run("start", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-cancel")))
		var first string
		pro.eval(`location.hash.replace('#/sweeps/', '')`, &first)
		if first == id {
			t.Fatal("the second sweep did not start")
		}
		// The form is submitted by the page itself, and the test waits for
		// either answer: the 429's banner, or, the first sweep having ended
		// first (on a quick machine it takes seconds), a second sweep
		// started. A click waited on the button while the page redrew it
		// as the first sweep ended, for minutes, in one CI run.
		pro.eval(`document.querySelector('[data-testid=sweep-form]').requestSubmit(), true`, &ok)
		answered := `(() => { const e = document.querySelector('[data-testid=sweep-error]');
			return (!!e && e.offsetParent !== null) || location.hash !== '#/sweeps/' + ` + strconv.Quote(first) + ` })()`
		pro.runUntil("the answer to a second sweep", time.Minute, chromedp.Poll(answered, &ok))
		var got sweepAnswer
		apiGet(t, base, "/v1/sweeps/"+first, "ud_dev_pro", &got)
		var hash string
		pro.eval(`location.hash`, &hash)
		switch {
		case hash != "#/sweeps/"+first:
			// Let through: only once the first had ended.
			if got.Data.Status == "RUNNING" || got.Data.Status == "QUEUED" {
				t.Errorf("a second sweep (%s) started while %s is %s", hash, first, got.Data.Status)
			}
			t.Logf("the first sweep was %s before the second was asked for", got.Data.Status)
			first = strings.TrimPrefix(hash, "#/sweeps/") // the one the page shows, and cancels below
		default:
			if msg := pro.text(byID("sweep-error")); !strings.Contains(msg, "You already have a sweep running") && got.Data.Status != "DONE" {
				t.Errorf("a second sweep while %s is %s: %q", first, got.Data.Status, msg)
			}
		}
		// The sweep may have finished already (the button is then hidden,
		// and a click on it fails): cancel only while it shows.
		var clicked bool
		pro.eval(`(() => { const b = document.querySelector('[data-testid=sweep-cancel]'); if (b && !b.hidden && !b.disabled) { b.click(); return true } return false })()`, &clicked)
		t.Logf("cancel clicked: %v", clicked)
		pro.runUntil("stopped", 2*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`:is([data-status="CANCELLED"], [data-status="DONE"])`))
		var shown string
		pro.run("status", chromedp.AttributeValue(byID("sweep-progress"), "data-status", &shown, &ok))
		apiGet(t, base, "/v1/sweeps/"+first, "ud_dev_pro", &got)
		if shown != got.Data.Status || (shown != "CANCELLED" && shown != "DONE") {
			t.Errorf("after cancel the page shows %s, the API %s", shown, got.Data.Status)
		}
		if shown == "CANCELLED" && !strings.Contains(pro.text(byID("sweep-status")), "Cancelled") {
			t.Errorf("status line %q", pro.text(byID("sweep-status")))
		}
	})

	t.Run("random search, walk-forward folds, sqn", func(t *testing.T) {
		pro := pro.in(t)
		pro.setValue(byID("sweep-type"), "15m")
		pro.setValue(byID("sweep-count"), "40")
		pro.setValue(param(1, "mode"), "values")
		pro.setValue(param(1, "values"), "0.35, 0.45, 0.55")
		pro.setValue(param(2, "mode"), "range")
		pro.setValue(param(2, "from"), "0.6")
		pro.setValue(param(2, "to"), "0.8")
		pro.setValue(param(2, "step"), "0.05")
		pro.setValue(byID("sweep-search"), "RANDOM")
		pro.setValue(byID("sweep-random-trials"), "6")
		pro.setValue(byID("sweep-seed"), "7")
		pro.setValue(byID("sweep-split"), "WALK_FORWARD")
		pro.setValue(byID("sweep-folds"), "2")
		pro.setValue(byID("sweep-objective"), "sqn")
		if got := pro.text(byID("sweep-replays")); !strings.HasPrefix(got, "6 trials × up to 40 markets = up to 240 replays") {
			t.Errorf("sweep size: %q", got)
		}
		var before string
		pro.eval(`location.hash`, &before)
		pro.run("submit", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-progress")+`:not([data-status="CANCELLED"])`))
		pro.runUntil("the sweep finishes", 5*time.Minute, chromedp.WaitVisible(byID("sweep-progress")+`[data-status="DONE"]`), chromedp.WaitVisible(byID("sweep-folds")))
		var hash string
		pro.eval(`location.hash`, &hash)
		if hash == before {
			t.Fatalf("no new sweep: still %s", hash)
		}
		var sw sweepAnswer
		apiGet(t, base, "/v1/sweeps/"+strings.TrimPrefix(hash, "#/sweeps/"), "ud_dev_pro", &sw)
		r := sw.Data.Results
		if r == nil || len(r.Trials) != 6 || len(r.Folds) != 2 || r.Objective != "sqn" {
			t.Fatalf("the API's sweep: %+v", sw.Data)
		}
		var rows int
		pro.eval(`document.querySelectorAll('[data-testid=trial-row]').length`, &rows)
		if rows != 6 {
			t.Errorf("%d trial rows, want 6", rows)
		}
		// 6 of the 15 pairs ran: the others are empty cells.
		var cells []struct{ X, Y, Trial, Text string }
		pro.eval(`[...document.querySelectorAll('[data-testid=heatmap-train] [data-testid=heatmap-cell]')].map(c => ({X: c.dataset.x, Y: c.dataset.y, Trial: c.dataset.trial, Text: c.textContent}))`, &cells)
		if len(cells) != 15 {
			t.Errorf("%d heatmap cells, want 3 × 5: %+v", len(cells), cells)
		}
		ran := map[string]int{}
		for i, tr := range r.Trials {
			ran[shownValue(tr.Parameters[0].Value)+" "+shownValue(tr.Parameters[1].Value)] = i
		}
		for _, c := range cells {
			i, ok := ran[c.X+" "+c.Y]
			switch {
			case !ok && (c.Trial != "" || c.Text != "—"):
				t.Errorf("a pair no trial ran (%s, %s) shows %q (trial %q)", c.X, c.Y, c.Text, c.Trial)
			case ok && r.Trials[i].TrainObjective != nil && c.Text != fixed(*r.Trials[i].TrainObjective, 2):
				t.Errorf("sqn at %s, %s: %q, the API %v", c.X, c.Y, c.Text, *r.Trials[i].TrainObjective)
			}
		}
		var folds []string
		pro.eval(`[...document.querySelectorAll('[data-testid=sweep-folds] tbody tr')].map(r => r.cells[1].textContent)`, &folds)
		var want []string
		for _, f := range r.Folds {
			want = append(want, strconv.Itoa(f.Trial))
		}
		if fmt.Sprint(folds) != fmt.Sprint(want) {
			t.Errorf("folds' chosen trials %q, the API %q", folds, want)
		}
		pro.checkNumbers("a walk-forward sweep")
	})

	t.Run("phone width", func(t *testing.T) {
		pro := pro.in(t)
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		pro.run("viewport", chromedp.EmulateViewport(390, 844))
		pro.visit("#/sweeps/"+id, "sweeps")
		pro.run("results", chromedp.WaitVisible(byID("heatmap-train")))
		var overflow float64
		pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
		if overflow > 0 {
			t.Errorf("the sweeps page is %v px wider than a 390 px screen", overflow)
		}
		pro.checkNumbers("sweeps at 390 px")
	})

	t.Run("a plan without sweeps", func(t *testing.T) {
		st := open(t, base)
		st.signIn("ud_dev_starter")
		st.visit("#/sweeps", "sweeps")
		msg := strings.ToLower(st.text(byID("plan-denied")))
		if !strings.Contains(msg, "starter") || !strings.Contains(msg, "parameter sweeps") {
			t.Errorf("a Starter on #/sweeps: %q", msg)
		}
		var forms int
		st.eval(`document.querySelectorAll('main form').length`, &forms)
		if forms != 0 {
			t.Error("the Sweeps page shows a form to a plan that cannot sweep")
		}
	})
}

// The Sweeps page's arithmetic and words (web/src/sweep.ts), run in node on
// hand-made answers: values typed in a box, a sweep's size, the heatmap's
// grid (a third parameter folded into the best of each pair), and the plain
// words of dsr, pbo and the errors.
const tsSweepRunner = `
const fs = require('fs');
const ts = require(process.argv[1]);
const src = fs.readFileSync(process.argv[2], 'utf8');
const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
const mod = { exports: {} };
new Function('module', 'exports', js)(mod, mod.exports);
const m = mod.exports;
const calls = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(calls.map(([f, args]) => m[f](...args))));
`

func TestSweepPageHelpersInNode(t *testing.T) {
	t.Parallel()
	node, tsPath := nodeTypeScript(t)
	src, _ := filepath.Abs("../../web/src/sweep.ts")

	trial := func(n int, a, b, c float64, obj any) map[string]any {
		return map[string]any{"trial": n, "train_objective": obj, "test_objective": nil, "train": map[string]any{}, "test": nil,
			"parameters": []map[string]any{{"path": "/a", "value": a}, {"path": "/b", "value": b}, {"path": "/c", "value": c}}}
	}
	// Two values of /a and /b each, and /c varying under them: each cell
	// takes the best of its two trials; trial 6's objective is undefined.
	trials := []map[string]any{
		trial(0, 0.4, 1, 10, 5.0), trial(1, 0.4, 1, 20, 7.0),
		trial(2, 0.3, 1, 10, -2.0), trial(3, 0.3, 1, 20, -3.0),
		trial(4, 0.4, 2, 10, 1.0), trial(5, 0.4, 2, 20, -9.0),
		trial(6, 0.3, 2, 10, nil), trial(7, 0.3, 2, 20, nil),
	}
	// Trials with train and test figures, /c varying under each pair: the
	// test map shows the test figure of the trial its pair chose on train,
	// never the best test figure, which would choose on the test markets.
	tt := func(n int, a, b, c float64, train, test any) map[string]any {
		m := trial(n, a, b, c, train)
		m["test_objective"] = test
		return m
	}
	chosenOnTrain := []map[string]any{
		tt(0, 0.4, 1, 10, 5.0, 3.0), tt(1, 0.4, 1, 20, 7.0, -1.0), // train chooses trial 1
		tt(2, 0.3, 1, 10, nil, 2.0), tt(3, 0.3, 1, 20, nil, 6.0), // nothing to choose on train
		tt(4, 0.4, 2, 10, 1.0, nil), tt(5, 0.4, 2, 20, -9.0, 4.0), // trial 4, no test figure
		tt(6, 0.3, 2, 10, nil, 8.0), // alone in its pair
	}
	cases := []struct {
		name string
		fn   string
		args []any
		want string
	}{
		{"the test map shows the trial chosen on train", "heatmap", []any{chosenOnTrain, "/a", "/b", "test_objective"},
			`{"xs":[0.3,0.4],"ys":[1,2],"rows":[[{"x":0.3,"y":1,"value":null,"trial":null,"trials":2},{"x":0.4,"y":1,"value":-1,"trial":1,"trials":2}],` +
				`[{"x":0.3,"y":2,"value":8,"trial":6,"trials":1},{"x":0.4,"y":2,"value":null,"trial":null,"trials":2}]],"maxAbs":8}`},
		{"the train map of the same trials", "heatmap", []any{chosenOnTrain, "/a", "/b", "train_objective"},
			`{"xs":[0.3,0.4],"ys":[1,2],"rows":[[{"x":0.3,"y":1,"value":null,"trial":null,"trials":2},{"x":0.4,"y":1,"value":7,"trial":1,"trials":2}],` +
				`[{"x":0.3,"y":2,"value":null,"trial":null,"trials":1},{"x":0.4,"y":2,"value":1,"trial":4,"trials":2}]],"maxAbs":7}`},
		// The colour scale is each map's own, over the values its cells
		// show: trial 5's -9 on train and trial 0's 30 on test are no
		// cell's, and would wash the cells out.
		{"the test map's scale is over the cells it shows", "heatmap", []any{[]map[string]any{
			tt(0, 0.4, 1, 10, 5.0, 30.0), tt(1, 0.4, 1, 20, 7.0, -2.0), tt(4, 0.4, 2, 10, 1.0, 0.5), tt(5, 0.4, 2, 20, -9.0, 4.0)}, "/a", "/b", "test_objective"},
			`{"xs":[0.4],"ys":[1,2],"rows":[[{"x":0.4,"y":1,"value":-2,"trial":1,"trials":2}],[{"x":0.4,"y":2,"value":0.5,"trial":4,"trials":2}]],"maxAbs":2}`},
		{"values typed", "parseValues", []any{"0.3, 0.4 MARKET,true  1e-2"}, `[0.3,0.4,"MARKET",true,0.01]`},
		{"range with a float step", "rangeCount", []any{0.35, 0.5, 0.05}, `4`},
		{"range of one", "rangeCount", []any{0.6, 0.6, 0.05}, `1`},
		{"backwards range", "rangeCount", []any{0.7, 0.6, 0.05}, `0`},
		{"grid", "trialCount", []any{[]any{map[string]any{"path": "/a", "values": []any{1, 2, 2, 3}}, map[string]any{"path": "/b", "range": map[string]any{"from": 0, "to": 1, "step": 0.25}}}, map[string]any{"kind": "GRID"}}, `15`},
		{"random draws at most the grid", "trialCount", []any{[]any{map[string]any{"path": "/a", "values": []any{1, 2}}}, map[string]any{"kind": "RANDOM", "trials": 50}}, `2`},
		{"heatmap folds a third parameter", "heatmap", []any{trials, "/a", "/b", "train_objective"},
			`{"xs":[0.3,0.4],"ys":[1,2],"rows":[[{"x":0.3,"y":1,"value":-2,"trial":2,"trials":2},{"x":0.4,"y":1,"value":7,"trial":1,"trials":2}],` +
				`[{"x":0.3,"y":2,"value":null,"trial":null,"trials":2},{"x":0.4,"y":2,"value":1,"trial":4,"trials":2}]],"maxAbs":7}`},
		{"one parameter is one row", "heatmap", []any{trials[:2], "/c", "/c", "train_objective"},
			`{"xs":[10,20],"ys":[""],"rows":[[{"x":10,"y":"","value":5,"trial":0,"trials":1},{"x":20,"y":"","value":7,"trial":1,"trials":1}]],"maxAbs":7}`},
		{"a random search's untried pairs are empty cells", "heatmap", []any{trials[:1], "/a", "/b", "train_objective",
			[]any{map[string]any{"path": "/a", "values": []any{0.4, 0.3}}, map[string]any{"path": "/b", "values": []any{1}}}},
			`{"xs":[0.3,0.4],"ys":[1],"rows":[[{"x":0.3,"y":1,"value":null,"trial":null,"trials":0},{"x":0.4,"y":1,"value":5,"trial":0,"trials":1}]],"maxAbs":5}`},
		{"evenly spaced values are a range", "asRange", []any{map[string]any{"path": "/a", "values": []any{0.6, 0.65, 0.7, 0.75}}},
			`{"path":"/a","range":{"from":0.6,"to":0.75,"step":0.05}}`},
		{"uneven values stay values", "asRange", []any{map[string]any{"path": "/a", "values": []any{0.3, 0.4, 0.6}}}, `{"path":"/a","values":[0.3,0.4,0.6]}`},
		{"words stay values", "asRange", []any{map[string]any{"path": "/orderType", "values": []any{"MARKET", "LIMIT", "GTC"}}}, `{"path":"/orderType","values":["MARKET","LIMIT","GTC"]}`},
		{"gain colour", "cellColor", []any{4.5, 9}, `"rgba(26,127,55,0.51)"`},
		{"loss colour", "cellColor", []any{-9, 9}, `"rgba(207,34,46,0.90)"`},
		{"no value", "cellColor", []any{nil, 9}, `"#eaeef2"`},
		{"dsr 0.4", "dsrWords", []any{0.4, 200},
			`"Only a 40% chance that the best trial's per-market Sharpe beats what the best of 200 random tries would show: the best result is most likely the luck of trying 200 settings."`},
		{"dsr 0.97", "dsrWords", []any{0.97, 9},
			`"Strong: a 97% chance that the best trial's per-market Sharpe beats what the best of 9 random tries would show, so its edge is very likely more than the luck of the search."`},
		{"dsr 0.97 from 40 markets", "dsrWords", []any{0.97, 9, 40},
			`"Strong: a 97% chance that the best trial's per-market Sharpe beats what the best of 9 random tries would show, so its edge is very likely more than the luck of the search."`},
		{"dsr 0.9999 from 2 markets", "dsrWords", []any{0.9999, 4, 2},
			`"Too few markets to tell: more than a 99% chance that the best trial's per-market Sharpe beats what the best of 4 random tries would show, but from only 2 markets with trades, where the formula is far surer than the data; 30 or more would tell."`},
		{"dsr 0.2 from 2 markets", "dsrWords", []any{0.2, 4, 2},
			`"Only a 20% chance that the best trial's per-market Sharpe beats what the best of 4 random tries would show: the best result is most likely the luck of trying 4 settings."`},
		{"dsr 0.003", "dsrWords", []any{0.003, 9},
			`"Less than a 1% chance that the best trial's per-market Sharpe beats what the best of 9 random tries would show: the best result is most likely the luck of trying 9 settings."`},
		{"dsr 0.5", "dsrWords", []any{0.5, 1},
			`"Weak: a 50% chance that the best trial's per-market Sharpe beats what the best of 1 random try would show. Better than a coin toss, not yet evidence; more markets would tell."`},
		{"chance near 1", "chance", []any{0.9951}, `"more than a 99% chance"`},
		{"dsr null", "dsrWords", []any{nil, 9}, `"No DSR: it needs at least 2 trials and 2 train markets with trades, and a best trial whose pnl varies from market to market (without a spread it has no Sharpe ratio)."`},
		// A PBO over the 55 splits that gave a verdict (pbo_choices).
		{"pbo of 55 choices", "pboWords", []any{0.272727, 55},
			`"In 15 of the 55 ways of halving the train markets (the other 15 were left out: no trial had an objective on one half, or none but the best on the other, or every trial scored the same there), the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective: some overfitting; the best setting does not always carry over."`},
		{"pbo null", "pboWords", []any{nil}, `"No PBO: it needs at least 16 train markets and a way of halving them in which the best trial on one half can be compared on the other with another trial that has an objective there (a setting that never trades has none, and is not ranked), and not every trial scores the same there (identical settings cannot be told apart)."`},
		{"pbo 0", "pboWords", []any{0},
			`"In none of the 70 ways of halving the train markets, the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective: the best setting holds up from half to half, so the search is unlikely to be overfit."`},
		{"pbo 0.971429", "pboWords", []any{0.971429},
			`"In 68 of the 70 ways of halving the train markets, the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective: the best setting is no better than a coin toss out of sample, so the search is overfit."`},
		{"pbo 0.3", "pboWords", []any{0.3},
			`"In 21 of the 70 ways of halving the train markets, the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective: some overfitting; the best setting does not always carry over."`},
		{"pbo 1", "pboWords", []any{1},
			`"In all of the 70 ways of halving the train markets, the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective: the best setting is no better than a coin toss out of sample, so the search is overfit."`},
		{"429 concurrent_sweeps", "sweepProblem", []any{429, "RATE_LIMITED", "a sweep is already running: …", map[string]any{"limit": "concurrent_sweeps", "max": 1, "retry_after": 1}},
			`{"text":"You already have a sweep running, as many as your plan runs at once. Wait until it finishes (see Your sweeps below) or cancel it, then start this one."}`},
		{"429 rate limit", "sweepProblem", []any{429, "RATE_LIMITED", "rate limit exceeded", map[string]any{"retry_after": 12}}, `{"text":"Too many requests. Wait 12 s and try again."}`},
		{"400 names its field once", "sweepProblem", []any{400, "VALIDATION_ERROR", "markets.count 1000 is over the limit: PRO allows 200 markets a sweep", map[string]any{"field": "markets.count"}},
			`{"text":"Not accepted: markets.count 1000 is over the limit: PRO allows 200 markets a sweep.","field":"markets.count"}`},
		{"403 plan", "sweepProblem", []any{403, "TIER_ACCESS_DENIED", "ETH markets need the PRO plan or above; yours is STARTER", map[string]any{"required_tier": "PRO"}},
			`{"text":"Your plan does not allow this sweep. ETH markets need the PRO plan or above; yours is STARTER.","plan":true}`},
	}
	calls := make([][]any, len(cases))
	for i, c := range cases {
		calls[i] = []any{c.fn, c.args}
	}
	in, _ := json.Marshal(calls)
	cmd := exec.Command(node, "-e", tsSweepRunner, tsPath, src)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node answered %s (%v)", out, err)
	}
	for i, c := range cases {
		if string(got[i]) != c.want {
			t.Errorf("%s: %s(...)\n got %s\nwant %s", c.name, c.fn, got[i], c.want)
		}
	}
}
