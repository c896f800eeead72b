package main

import (
	"testing"
)

// TestDashboardQAUI2: what a user of the dashboard met in the second QA
// pass on it, each checked in a real browser against `updown dev`.
func TestDashboardQAUI2(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")

	t.Run("a page a plan lacks names the feature as its heading does", func(t *testing.T) {
		// STARTER was told it "does not include the backtest ai agent",
		// and that "Parameter sweeps is not in your plan".
		st := open(t, base)
		st.signIn("ud_dev_starter")
		for _, c := range []struct{ hash, page, head, body string }{
			{"#/agent", "agent", "The Backtest AI agent is not in your plan",
				"Your plan, STARTER, does not include the Backtest AI agent. It needs PRO or ENTERPRISE."},
			{"#/sweeps", "sweeps", "Parameter sweeps are not in your plan",
				"Your plan, STARTER, does not include parameter sweeps. They need PRO or ENTERPRISE."},
			{"#/replay", "replay", "Strategy replay is not in your plan",
				"Your plan, STARTER, does not include strategy replay. It needs PRO, PRO_TRIAL or ENTERPRISE."},
		} {
			st.in(t).visit(c.hash, c.page)
			if got := st.in(t).text(byID("plan-denied") + " h2"); got != c.head {
				t.Errorf("%s: heading %q, want %q", c.hash, got, c.head)
			}
			if got := st.in(t).text(byID("plan-denied") + " p"); got != c.body {
				t.Errorf("%s: says %q, want %q", c.hash, got, c.body)
			}
		}
	})
}
