package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestLeftPageStaysQuiet: a page the user has left does not speak on the
// page they are on. QA: a replay still running when the user went to
// Markets failed later, and its error ("… (NO_DATA)") appeared in the
// Markets page's banner. A page left before it loaded does not mark the
// next one ready either.
func TestLeftPageStaysQuiet(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug := marketWithData(t, base, "15m")
	b := open(t, base)
	b.signIn("ud_dev_pro")
	b.visit("#/replay?market="+url.QueryEscape(slug), "replay")

	// The replay's answer is held until the user is on Markets.
	held, release := b.hold("*/v1/replay", "/v1/replay")
	b.run("run a replay", chromedp.Click(byID("replay-submit")))
	id := held()
	b.run("go to Markets", chromedp.Evaluate(`location.hash = '#/markets'`, nil), chromedp.WaitVisible(`main[data-ready="markets"]`))

	body := []byte(`{"success":false,"error":{"code":"NO_DATA","message":"market has no snapshot data"},"timestamp":"2026-11-29T00:00:00Z"}`)
	b.run("answer the replay with an error", fetch.FulfillRequest(id, 404).
		WithResponseHeaders([]*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}).WithBody(b64(body)))
	release()
	// The answer has reached the page, and the page has had its turns to
	// take it (the replay page's handler runs within them).
	var arrived bool
	b.run("the answer arrives", chromedp.Poll(`performance.getEntriesByType('resource').some((e) => e.name.endsWith('/v1/replay') && e.responseEnd > 0)`, &arrived))
	b.run("let the page take it", chromedp.Evaluate(`new Promise((r) => setTimeout(() => r(true), 500))`, &arrived,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))

	var banner struct {
		Hidden bool   `json:"hidden"`
		Text   string `json:"text"`
		Ready  string `json:"ready"`
	}
	b.eval(`(() => { const e = document.querySelector('[data-testid=error-banner]');
		return { hidden: e.hidden, text: e.textContent, ready: document.querySelector('main').dataset.ready } })()`, &banner)
	if !banner.Hidden || banner.Text != "" {
		t.Errorf("the Markets page shows the error of the replay left behind: %q", banner.Text)
	}
	if banner.Ready != "markets" {
		t.Errorf("the Markets page is marked ready as %q", banner.Ready)
	}
}

// TestBrokenAddressStillRoutes: an address with a broken escape (a link
// cut short, "%E0%A4%A") opens its page, which says what it is not. QA:
// decoding it threw a URIError before the page changed, so the click did
// nothing, and a fresh load showed only "URI malformed".
func TestBrokenAddressStillRoutes(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	b := open(t, base)
	b.signIn("ud_dev_pro")
	b.run("follow a broken link", chromedp.Evaluate(`location.hash = '#/market/btc-%E0%A4%A'`, nil),
		chromedp.WaitVisible(`main[data-ready="market"]`))
	var heading string
	b.eval(`document.querySelector('main h1').textContent`, &heading)
	if heading != "btc-%E0%A4%A" {
		t.Errorf("the market page of a broken link is headed %q; want the slug as written", heading)
	}
	if banner := b.text(byID("error-banner")); !strings.Contains(banner, "RESOURCE_NOT_FOUND") {
		t.Errorf("the market page of a broken link says %q; want the API's not found", banner)
	}
}
