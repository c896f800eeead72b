package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardQASecondPass: what a second user pass over the dashboard
// found. A strategy_code box holding a code the builder could not take (a
// typo in a pasted code) stops the run, with the code box marked and the
// reason said, where the replay ran, and the sweep swept, the strategy the
// builder showed before it, its result read as the code's.
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
}
