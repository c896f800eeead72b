package main

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// tickDecimals is the decimals the dashboard writes a market's prices
// with: 3 where any of its ticks was finer than a cent, else 2.
func tickDecimals(t *testing.T, base, slug string) int {
	t.Helper()
	var m struct {
		TickSize        *float64 `json:"tick_size"`
		TickSizeChanges []struct {
			TickSize float64 `json:"tick_size"`
		} `json:"tick_size_changes"`
	}
	apiGet(t, base, "/v1/markets/"+slug, "ud_dev_pro", &m)
	ticks := []float64{}
	if m.TickSize != nil {
		ticks = append(ticks, *m.TickSize)
	}
	for _, c := range m.TickSizeChanges {
		ticks = append(ticks, c.TickSize)
	}
	for _, x := range ticks {
		if x > 0 && x < 0.01 {
			return 3
		}
	}
	return 2
}

// TestDashboardPricesAtTheTick: a replay's trade prices are written at
// their market's tick, 0.50 on a cent market and 0.500 on one that went
// to 0.001 (they were 0.500 on both), a fill that averaged several levels
// with the decimals it needs; and the agent's page and the replay's say a
// custom fee schedule in the same words (the agent wrote "custom: rate
// 0.05, exponent 2" where the replay wrote the formula).
func TestDashboardPricesAtTheTick(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")

	// A resolved market of each tick, with snapshots.
	var list struct{ Markets []struct{ Slug string } }
	apiGet(t, base, "/v1/markets?coin=BTC&resolved=true&limit=100", "ud_dev_pro", &list)
	byDecimals := map[int]string{}
	for _, m := range list.Markets {
		d := tickDecimals(t, base, m.Slug)
		if byDecimals[d] != "" {
			continue
		}
		var page struct{ Total int }
		apiGet(t, base, "/v1/markets/"+m.Slug+"/snapshots?limit=1", "ud_dev_pro", &page)
		if page.Total > 0 {
			byDecimals[d] = m.Slug
		}
	}
	if byDecimals[2] == "" || byDecimals[3] == "" {
		t.Fatalf("dev has no resolved BTC market with snapshots of each tick: %v", byDecimals)
	}

	// In at the first snapshot, out at half time: 500 shares walk the
	// book, so some fills average several levels.
	const code = "side=UP entry: price_up >= 0 exit: time_remaining_pct < 50 size=500 maxloss=100 order=MARKET maxentries=1"
	const customCode = "side=UP entry: price_up >= 0 exit: time_remaining_pct < 50 size=500 maxloss=100 order=MARKET fees=custom feerate=0.05 feeexp=2 maxentries=1"
	const body = `"side":"UP","positionSize":500,"maxLossPercent":100,"orderType":"MARKET","maxEntriesPerMarket":1,
		"entryConditions":[{"field":"price_up","operator":">=","value":0}],"exitConditions":[{"field":"time_remaining_pct","operator":"<","value":50}]}`
	// replay runs the page's strategy and waits for its result: the
	// page counts its runs from 1 on each visit (data-run).
	replay := func(pro *browserSession) {
		pro.run("replay", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="1"]`))
	}
	for _, pd := range []int{2, 3} {
		slug := byDecimals[pd]
		t.Run(fmt.Sprintf("%d decimals on %s", pd, slug), func(t *testing.T) {
			pro := pro.in(t)
			var want struct {
				Data struct {
					Trades []struct {
						Price     float64 `json:"price"`
						FillPrice float64 `json:"fill_price"`
					}
				}
			}
			apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", `{"marketSlug":"`+slug+`",`+body, &want)
			if len(want.Data.Trades) == 0 {
				t.Fatalf("the strategy made no trade on %s", slug)
			}
			pro.visit("#/replay?market="+url.QueryEscape(slug), "replay")
			pro.setValue(byID("replay-code"), code)
			replay(pro)
			var rows [][]string
			pro.eval(`[...document.querySelectorAll('[data-testid=trade-row]')].map(r => [...r.cells].map(c => c.textContent))`, &rows)
			if len(rows) != len(want.Data.Trades) {
				t.Fatalf("%d trade rows, the API %d trade events", len(rows), len(want.Data.Trades))
			}
			// The fill column's decimals: the tick's, or up to 4 where a
			// fill is off its grid.
			fd := pd
			for _, tr := range want.Data.Trades {
				for fd < 4 && math.Abs(tr.FillPrice*math.Pow10(fd)-math.Round(tr.FillPrice*math.Pow10(fd))) > 1e-6 {
					fd++
				}
			}
			for i, tr := range want.Data.Trades {
				if got, w := rows[i][3], fixed(tr.Price, pd); got != w {
					t.Errorf("trade %d: price %q, want %q (the market's tick has %d decimals)", i, got, w, pd)
				}
				if got, w := rows[i][4], fixed(tr.FillPrice, fd); got != w {
					t.Errorf("trade %d: fill %q, want %q (API %v)", i, got, w, tr.FillPrice)
				}
			}
		})
	}

	t.Run("custom fees in the same words on the replay and the agent pages", func(t *testing.T) {
		pro := pro.in(t)
		const want = "custom: shares × 0.05 × (p(1−p))²"
		slug := byDecimals[2]
		pro.visit("#/replay?market="+url.QueryEscape(slug), "replay")
		pro.setValue(byID("replay-code"), customCode)
		replay(pro)
		replayWords := pro.text(byID("replay-fee-schedule"))

		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), customCode)
		pro.setValue(byID("agent-count"), "1")
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		agentWords := pro.text(byID("agent-used-fees"))
		if replayWords != want || agentWords != want {
			t.Errorf("custom fees: the replay page says %q, the agent page %q; want both %q", replayWords, agentWords, want)
		}
		var label string
		pro.eval(`(() => { const e = document.querySelector('[data-testid=agent-used-fees]'); const dt = e && e.previousElementSibling; return dt ? dt.textContent : '' })()`, &label)
		if !strings.EqualFold(strings.TrimSpace(label), "Fees charged") {
			t.Errorf("the agent's figure is labelled %q, the replay's \"Fees charged\"", label)
		}
	})
}
