package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardQAWebSecondPass: what a second pass over the dashboard, as a
// new user, found the pages lacking or getting wrong, each checked in a real
// browser against `updown dev`.
func TestDashboardQAWebSecondPass(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
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
}
