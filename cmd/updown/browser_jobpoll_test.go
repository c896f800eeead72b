package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestDashboardFollowsAJobPastARefusedPoll: a poll of GET /v1/jobs/{id}
// that the server refuses (429 over the rate limit, 503 while it is away
// behind its proxy) is asked again, after its Retry-After, as SPEC 7 tells
// clients to; the job goes on meanwhile. QA: the dashboard stopped
// following at the first such answer and showed the rate limit's error in
// place of the replay's result, which the job went on to produce.
func TestDashboardFollowsAJobPastARefusedPoll(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	dev := startProc(t, "dev", []string{"TOKEN_SECRET=", "WEBHOOK_SECRET=", "AI_PROVIDER=builtin", "LOG_FORMAT=text", "JOB_WAIT=1ms"},
		"dev", "--addr", addr, "--collect-every", "0")
	base := "http://" + addr
	waitReady(t, dev, base, patience)
	slug := marketWithData(t, base, "15m")
	b := open(t, base)
	b.signIn("ud_dev_pro")
	b.visit("#/replay?market="+url.QueryEscape(slug), "replay")

	// The first polls are refused, one of each; the rest reach the server.
	refusals := []struct {
		status int64
		body   string
	}{
		{429, `{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"rate limit exceeded: the PRO plan allows 300 requests per minute; retry in 1 s"},"timestamp":"2026-11-29T00:00:00Z"}`},
		{503, `{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the service is unavailable"},"timestamp":"2026-11-29T00:00:00Z"}`},
	}
	var polls atomic.Int32
	chromedp.ListenTarget(b.ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok || !strings.Contains(e.Request.URL, "/v1/jobs/") {
			return
		}
		n := int(polls.Add(1)) - 1
		go func() {
			if n >= len(refusals) {
				_ = chromedp.Run(b.ctx, fetch.ContinueRequest(e.RequestID))
				return
			}
			r := refusals[n]
			_ = chromedp.Run(b.ctx, fetch.FulfillRequest(e.RequestID, r.status).WithResponseHeaders([]*fetch.HeaderEntry{
				{Name: "Content-Type", Value: "application/json"}, {Name: "Retry-After", Value: "1"},
			}).WithBody(b64([]byte(r.body))))
		}()
	})
	b.run("refuse polls", fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/v1/jobs/*"}}))

	// A replay can beat JOB_WAIT's 1 ms and answer at once, with no job to
	// follow: it is run again, with another size (another job), until one
	// is followed.
	for run := 1; polls.Load() == 0; run++ {
		if run > 20 {
			t.Fatal("20 replays all answered within JOB_WAIT=1ms: none was followed")
		}
		b.setValue(byID("replay-size"), strconv.Itoa(10+run))
		var outcome string
		b.run("run a replay", chromedp.Click(byID("replay-submit")), chromedp.Poll(fmt.Sprintf(`(() => {
			if (document.querySelector('[data-testid=replay-results][data-run="%d"] [data-testid=replay-total-pnl]')) return 'result';
			const e = (document.querySelector('[data-testid=error-banner]') || {}).textContent || '';
			return e ? 'error banner: ' + e : null })()`, run), &outcome, chromedp.WithPollingTimeout(patience)))
		if outcome != "result" {
			t.Fatalf("a replay whose job's polls were refused (429, then 503) shows %s; want its result", outcome)
		}
	}
	if n := polls.Load(); n <= int32(len(refusals)) {
		t.Errorf("the job was polled %d times; want past the %d refused polls", n, len(refusals))
	}
}
