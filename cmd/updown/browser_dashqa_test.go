package main

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardQAPass: what a user pass over the dashboard at phone and
// desktop width found: at phone width a table's row is a card of labels
// and values, and a cell with nothing in it (a backtest market's Error,
// when it had none) must not show its label alone, as if every market
// had failed. The exchange's depth chart names the unit of its
// quantities, the coin, as the trades table beside it does. The plans
// table says "no" of sweeps for a plan without them, as it does of every
// other feature a plan lacks, at either width, where it showed a dash.
// What the plan does not allow of the markets (a coin, a market outside
// its window) is said once, in place with the upgrade link, where the
// banner above said it a second time. A strategy_code box shows all of
// its code: a generated one ran to a fourth line at phone width, cut off
// behind the box's own scroll bar. A market's CSV is the 1,000
// snapshots its button says: the whole of a market of 1,000, and 1,000
// around an instant picked near a longer market's end, where it started
// 500 before the instant and so held fewer.
func TestDashboardQAPass(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	t.Run("a phone's backtest cards show no label without a value", func(t *testing.T) {
		pro := pro.in(t)
		pro.run("phone width", chromedp.EmulateViewport(390, 844))
		defer pro.run("desktop width", chromedp.EmulateViewport(1280, 800))
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=10")
		pro.setValue(byID("agent-count"), "3")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		var rows int
		var bare []string
		pro.eval(`document.querySelectorAll('[data-testid=agent-results-table] tbody tr').length`, &rows)
		pro.eval(`[...document.querySelectorAll('[data-testid=agent-results-table] td[data-label]')]
			.filter(c => c.getClientRects().length > 0 && c.textContent.trim() === '')
			.map(c => c.closest('tr').dataset.slug + ': ' + c.dataset.label)`, &bare)
		if rows == 0 {
			t.Fatal("the backtest shows no market")
		}
		if len(bare) > 0 {
			t.Errorf("phone cards show labels with no value: %q", bare)
		}
	})

	t.Run("the depth chart says its quantities are in the coin", func(t *testing.T) {
		pro := pro.in(t)
		for _, coin := range []string{"btc", "eth"} {
			pro.visit("#/exchange?coin="+coin+"&kind=spot", "exchange")
			var raw string
			var ok bool
			pro.run("depth chart", chromedp.WaitVisible(byID("depth-chart")+`[data-axis-labels]`), chromedp.AttributeValue(byID("depth-chart"), "data-axis-labels", &raw, &ok))
			var labels []string
			if err := json.Unmarshal([]byte(raw), &labels); err != nil || len(labels) != 2 {
				t.Fatalf("%s depth chart axis labels %q", coin, raw)
			}
			if want := "cumulative quantity (" + map[string]string{"btc": "BTC", "eth": "ETH"}[coin] + ")"; labels[0] != "price ($)" || labels[1] != want {
				t.Errorf("%s depth chart axes %q, want [price ($) %s]", coin, labels, want)
			}
		}
	})

	t.Run("the plans say no of sweeps a plan lacks", func(t *testing.T) {
		pro := pro.in(t)
		var billing billingAnswer
		apiGet(t, base, "/v1/account/billing", "ud_dev_pro", &billing)
		var without []string
		for _, p := range billing.Data.Plans {
			if p.Sweeps == nil {
				without = append(without, p.Tier)
			}
		}
		if len(without) == 0 {
			t.Fatal("every plan has sweeps: nothing to check")
		}
		for _, w := range []int64{1280, 390} {
			pro.run("width", chromedp.EmulateViewport(w, 800))
			pro.visit("#/account", "account")
			// The table at desktop width, a card a plan at phone width: each a
			// plan's name and its sweeps as shown.
			var shown map[string]string
			pro.eval(`(() => {
				const out = {};
				const table = document.querySelector('[data-testid=billing-plans]');
				if (table && table.getClientRects().length) {
					const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.replace(' (yours)', '').trim());
					const row = [...table.querySelectorAll('tbody tr')].find(r => r.cells[0].textContent === 'Parameter sweeps');
					if (row) [...row.cells].slice(1).forEach((c, i) => out[heads[i + 1]] = c.textContent);
				}
				for (const card of document.querySelectorAll('.plan-cards .card')) {
					if (!card.getClientRects().length) continue;
					const dt = [...card.querySelectorAll('dt')].find(d => d.textContent === 'Parameter sweeps');
					if (dt) out[card.querySelector('h3').textContent.replace(' (yours)', '').trim()] = dt.nextElementSibling.textContent;
				}
				return out })()`, &shown)
			for _, tier := range without {
				if shown[tier] != "no" {
					t.Errorf("at %d px the plans show %s's sweeps as %q, want no (all shown: %q)", w, tier, shown[tier], shown)
				}
			}
		}
		pro.run("desktop width", chromedp.EmulateViewport(1280, 800))
	})

	t.Run("a plan's refusal of markets is said once", func(t *testing.T) {
		starter := open(t, base)
		defer starter.close()
		starter.signIn("ud_dev_starter")
		var eth, btc struct{ Markets []struct{ Slug string } }
		apiGet(t, base, "/v1/markets?coin=ETH&limit=1", "ud_dev_pro", &eth)
		apiGet(t, base, "/v1/markets?coin=BTC&market_type=5m&resolved=true&limit=100", "ud_dev_pro", &btc)
		if len(eth.Markets) == 0 || len(btc.Markets) <= 50 {
			t.Fatalf("dev has %d ETH markets and %d resolved BTC 5m ones: want one and over STARTER's 50", len(eth.Markets), len(btc.Markets))
		}
		old := btc.Markets[len(btc.Markets)-1].Slug // past STARTER's newest 50
		for _, c := range []struct{ hash, page, says, in string }{
			{"#/markets?coin=ETH", "markets", "ETH prediction markets need the PRO plan", "markets-denied"},
			{"#/market/" + url.PathEscape(eth.Markets[0].Slug), "market", "ETH prediction markets need the PRO plan", "market-denied"},
			{"#/market/" + url.PathEscape(old), "market", "outside the STARTER plan's data window", "market-denied"},
		} {
			starter := starter.in(t)
			starter.visit(c.hash, c.page)
			var text, place string
			var banner bool
			starter.eval(`document.body.innerText`, &text)
			starter.eval(`document.querySelector('[data-testid=error-banner]').hidden`, &banner)
			starter.eval(`(document.querySelector('[data-testid=`+c.in+`]')||{}).textContent||''`, &place)
			if n := strings.Count(text, c.says); n != 1 || !banner {
				t.Errorf("%s says %q %d times (banner hidden: %v)", c.hash, c.says, n, banner)
			}
			if !strings.Contains(place, c.says) || !strings.Contains(place, "See the plans and upgrade") {
				t.Errorf("%s says in place %q: want the refusal and the upgrade link", c.hash, place)
			}
		}
	})

	t.Run("a strategy_code box shows all of its code at phone width", func(t *testing.T) {
		pro := pro.in(t)
		pro.run("phone width", chromedp.EmulateViewport(390, 844))
		defer pro.run("desktop width", chromedp.EmulateViewport(1280, 800))
		long := "coin=BTC type=15m side=UP entry: price_up < 0.45 exit: price_up > 0.6 or time_remaining_pct <= 20 size=100 maxloss=50 order=MARKET cooldown=30000"
		for _, c := range []struct{ hash, page, box string }{
			{"#/agent", "agent", "agent-code"},
			{"#/replay", "replay", "replay-code"},
		} {
			pro.visit(c.hash, c.page)
			var empty struct{ Client, Line float64 }
			pro.eval(`(() => { const el = document.querySelector('[data-testid=`+c.box+`]'); el.value = '';
				el.dispatchEvent(new Event('input', {bubbles: true}));
				return {Client: el.clientHeight, Line: parseFloat(getComputedStyle(el).lineHeight)} })()`, &empty)
			if empty.Client < 3*empty.Line {
				t.Errorf("%s: an empty %s is %v px tall, under three lines of %v px", c.hash, c.box, empty.Client, empty.Line)
			}
			pro.setValue(byID(c.box), long)
			var fit struct{ Scroll, Client float64 }
			pro.eval(`(() => { const el = document.querySelector('[data-testid=`+c.box+`]'); return {Scroll: el.scrollHeight, Client: el.clientHeight} })()`, &fit)
			if fit.Scroll > fit.Client+1 {
				t.Errorf("%s: the %s box shows %v px of its code's %v px", c.hash, c.box, fit.Client, fit.Scroll)
			}
		}
	})

	t.Run("the CSV holds the snapshots its button says", func(t *testing.T) {
		pro := pro.in(t)
		// The CSV's request, seen and let through to the server.
		offsets := make(chan string, 4)
		stop := pro.answerBy("*/snapshots?*limit=1000*", "limit=1000", func(u string) (int64, []byte, bool) {
			if p, err := url.Parse(u); err == nil {
				offsets <- p.Query().Get("offset")
			}
			return 0, nil, false
		})
		defer stop()
		for _, mt := range []string{"15m", "24hr"} {
			slug := marketWithData(t, base, mt)
			var series struct {
				Data struct {
					Snapshots int
					Time      []int64
				}
			}
			apiGet(t, base, "/v1/markets/"+slug+"/series?points=2000", "ud_dev_pro", &series)
			n := series.Data.Snapshots
			pro.visit("#/market/"+url.PathEscape(slug), "market")
			before := pro.text(byID("market-csv"))
			last := len(series.Data.Time) - 1
			pro.setValue(byID("market-instant-slider"), strconv.Itoa(last))
			pro.run("instant picked", chromedp.WaitVisible(byID("market-instant")+`[data-time]`))
			after := pro.text(byID("market-csv"))
			pro.run("download", chromedp.Click(byID("market-csv")))
			var offset string
			select {
			case offset = <-offsets:
			case <-time.After(patience):
				t.Fatal("no CSV request")
			}
			wantOffset := strconv.Itoa(max(0, n-1000))
			if offset != wantOffset {
				t.Errorf("%s market of %d snapshots, its last instant picked: the CSV is from offset %s, want %s (1,000 to its end)", mt, n, offset, wantOffset)
			}
			if n <= 1000 {
				if want := "Download CSV (all " + fixed(float64(n), 0) + " snapshots)"; before != want || after != want {
					t.Errorf("%s market of %d snapshots: the button says %q, then %q; want %q", mt, n, before, after, want)
				}
			} else if !strings.Contains(before, "the first 1,000 snapshots") || !strings.Contains(after, "1,000 snapshots around the instant") {
				t.Errorf("%s market of %d snapshots: the button says %q before a pick and %q after", mt, n, before, after)
			}
		}

		// A longer market than dev records: its series says 5 snapshots a
		// bucket (the books at an instant are not waited for, only the
		// button and the CSV's request).
		slug := marketWithData(t, base, "15m")
		var long map[string]any
		apiGet(t, base, "/v1/markets/"+slug+"/series?points=2000", "ud_dev_pro", &long)
		data := long["data"].(map[string]any)
		idx := data["index"].([]any)
		for i := range idx {
			idx[i] = 5 * i
		}
		data["snapshots"] = 5 * len(idx)
		body, _ := json.Marshal(long)
		stopSeries := pro.answerJSON("*/series?*", "/series?", body)
		defer stopSeries()
		pro.visit("#/market/"+url.PathEscape(slug), "market")
		if got := pro.text(byID("market-csv")); got != "Download CSV (the first 1,000 snapshots; pick an instant for others)" {
			t.Errorf("a market of %d snapshots before a pick: the button says %q", 5*len(idx), got)
		}
		pro.setValue(byID("market-instant-slider"), strconv.Itoa(len(idx)-1))
		pro.run("download", chromedp.Click(byID("market-csv")))
		select {
		case offset := <-offsets:
			if want := strconv.Itoa(5*len(idx) - 1000); offset != want {
				t.Errorf("a market of %d snapshots, its last instant picked: the CSV is from offset %s, want %s", 5*len(idx), offset, want)
			}
		case <-time.After(patience):
			t.Fatal("no CSV request")
		}
		if got := pro.text(byID("market-csv")); got != "Download CSV (1,000 snapshots around the instant)" {
			t.Errorf("a market of %d snapshots after a pick: the button says %q", 5*len(idx), got)
		}
	})

	t.Run("the plan's warning under the markets leads to the plans in words", func(t *testing.T) {
		starter := open(t, base)
		defer starter.close()
		starter.signIn("ud_dev_starter")
		var want struct{ Warning string }
		apiGet(t, base, "/v1/markets?coin=BTC&limit=25", "ud_dev_starter", &want)
		if !strings.Contains(want.Warning, "upgrade at /v1/account/billing") {
			t.Fatalf("STARTER's markets warning %q: the test wants one naming the address", want.Warning)
		}
		starter.visit("#/markets", "markets")
		got := starter.in(t).text(byID("markets-plan-limit"))
		wantText := strings.TrimSuffix(want.Warning, "; upgrade at /v1/account/billing") + ". See the plans and upgrade"
		if got != wantText {
			t.Errorf("the plan's warning says %q, want %q", got, wantText)
		}
	})
}
