package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/updown/updown/jobs/strategy"
)

// The dashboard in a real browser (DESIGN 12): Debian's Chromium, headless,
// driven over the DevTools protocol against `updown dev` on loopback. What
// the screen shows is checked against the API's own answers.

// chromiumPath finds the browser; without one the test skips on a
// developer's machine and fails under CI=true.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: install Debian's chromium package (.ci/run does)")
	}
	t.Skip("no chromium on this machine (apt-get install chromium)")
	return ""
}

// browserSession is one signed-in browser context (its own cookies).
type browserSession struct {
	t        *testing.T
	ctx      context.Context
	base     string
	close    func()
	fetching *interception // shared by the session's copies (in)
}

// open starts a Chromium of its own (its own profile, so no cookies are
// shared with other sessions) with the flags a closed network needs. It is
// closed by close, or when the test ends.
func open(t *testing.T, base string) *browserSession {
	t.Helper()
	// Chromium may still write its profile as it exits: removed without
	// checking, rather than by t.TempDir, which fails on that.
	profile, err := os.MkdirTemp("", "updown-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	b := &browserSession{t: t, ctx: ctx, base: base, close: func() { cancel(); cancelAlloc() }, fetching: &interception{patterns: map[string]int{}}}
	t.Cleanup(b.close)
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// run runs actions; ones that never end are a hang, failed after patience.
// answerJSON has the browser answer its requests whose URL matches the
// fetch pattern and holds part with body, a 200 JSON answer, in place of
// the server, until the returned stop is called. A session's listeners
// outlive the subtest that added them: each answers its own requests only.
func (b *browserSession) answerJSON(pattern, part string, body []byte) (stop func()) {
	return b.answerStatus(pattern, part, 200, body)
}

// answerStatus is answerJSON answering with the status given.
func (b *browserSession) answerStatus(pattern, part string, status int64, body []byte) (stop func()) {
	return b.answerBy(pattern, part, func(string) (int64, []byte, bool) { return status, body, true })
}

// answerBy has the browser answer its requests whose URL matches the fetch
// pattern and holds part as answer says at the time: a status and a JSON
// body (with the headers given), or, when answer says no, the server's
// answer. It answers until the returned stop is called; a listener
// outlives its stop, and once stopped it answers nothing (another
// answerBy for the same part answers instead). answer may take its time
// (a slow server): it runs off the browser's event loop.
func (b *browserSession) answerBy(pattern, part string, answer func(url string) (status int64, body []byte, ok bool), headers ...*fetch.HeaderEntry) (stop func()) {
	return b.answerRequestBy(pattern, part, func(r *network.Request) (int64, []byte, bool) { return answer(r.URL) }, headers...)
}

// answerRequestBy is answerBy for an answer that reads more of the request
// than its URL (its method).
func (b *browserSession) answerRequestBy(pattern, part string, answer func(r *network.Request) (status int64, body []byte, ok bool), headers ...*fetch.HeaderEntry) (stop func()) {
	headers = append([]*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}, headers...)
	var live atomic.Bool
	live.Store(true)
	chromedp.ListenTarget(b.ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok || !live.Load() || !strings.Contains(e.Request.URL, part) {
			return
		}
		go func() {
			status, body, ok := answer(e.Request)
			if !ok {
				_ = chromedp.Run(b.ctx, fetch.ContinueRequest(e.RequestID))
				return
			}
			_ = chromedp.Run(b.ctx, fetch.FulfillRequest(e.RequestID, status).WithResponseHeaders(headers).WithBody(b64(body)))
		}()
	})
	release := b.intercept("answer "+part, pattern)
	return func() {
		live.Store(false)
		release()
	}
}

// hold has the browser hold the first request whose URL matches the fetch
// pattern and holds part, for the test to answer (fetch.FulfillRequest)
// or let through (fetch.ContinueRequest) when it chooses; later ones go
// to the server. held waits for that request to be sent and answers its
// id; release stops holding.
func (b *browserSession) hold(pattern, part string) (held func() fetch.RequestID, release func()) {
	ids := make(chan fetch.RequestID, 1)
	var first atomic.Bool
	chromedp.ListenTarget(b.ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok || !strings.Contains(e.Request.URL, part) {
			return
		}
		if first.CompareAndSwap(false, true) {
			ids <- e.RequestID
			return
		}
		go func() { _ = chromedp.Run(b.ctx, fetch.ContinueRequest(e.RequestID)) }()
	})
	release = b.intercept("hold "+part, pattern)
	held = func() fetch.RequestID {
		b.t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, patience)
		defer cancel()
		select {
		case id := <-ids:
			return id
		case <-ctx.Done():
			b.t.Fatalf("no request to %s was sent", part)
			return ""
		}
	}
	return held, release
}

// interception is the fetch patterns a session's listeners have the
// browser pause requests on, each with how many listeners want it. The
// browser's fetch.Enable replaces every pattern it had, and fetch.Disable
// drops them all: a listener that starts or stops enables the patterns
// the live ones want, so one stopping leaves the others answering.
type interception struct {
	mu       sync.Mutex
	patterns map[string]int
}

// intercept has the browser pause the requests matching pattern besides
// those it already pauses; release (once) stops pausing them alone.
func (b *browserSession) intercept(what, pattern string) (release func()) {
	b.t.Helper()
	f := b.fetching
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patterns[pattern]++
	b.run(what, f.enable())
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.patterns[pattern]--; f.patterns[pattern] == 0 {
				delete(f.patterns, pattern)
			}
			b.run("stop: "+what, f.enable())
		})
	}
}

// enable is the action that has the browser pause on the patterns wanted
// now (none: fetch.Disable). Its caller holds f.mu.
func (f *interception) enable() chromedp.Action {
	if len(f.patterns) == 0 {
		return fetch.Disable()
	}
	var ps []*fetch.RequestPattern
	for p := range f.patterns {
		ps = append(ps, &fetch.RequestPattern{URLPattern: p})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].URLPattern < ps[j].URLPattern })
	return fetch.Enable().WithPatterns(ps)
}

func (b *browserSession) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patience)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var banner string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`(document.querySelector('[data-testid=error-banner]')||{}).textContent||''`, &banner))
		b.t.Fatalf("%s: %v (error banner: %q)", what, err, banner)
	}
}

// in is the session reporting to a subtest's t.
func (b *browserSession) in(t *testing.T) *browserSession {
	c := *b
	c.t = t
	return &c
}

func byID(id string) string { return `[data-testid="` + id + `"]` }

// signIn loads / (redirected to /app/), signs in with the key and waits
// for the markets page; it answers the time to usable.
func (b *browserSession) signIn(key string) time.Duration {
	b.t.Helper()
	b.run("load the sign-in page", chromedp.Navigate(b.base+"/"), chromedp.WaitVisible(byID("signin-key")))
	start := time.Now()
	b.run("sign in with "+key,
		chromedp.SendKeys(byID("signin-key"), key),
		chromedp.Click(byID("signin-submit")),
		chromedp.WaitVisible(`main[data-ready="markets"]`),
	)
	return time.Since(start)
}

// visit goes to a dashboard page by its address and answers the time until
// the page marks itself usable, as the page measured it (from the route's
// start to its data shown).
func (b *browserSession) visit(hash, page string) time.Duration {
	b.t.Helper()
	var ms, here string
	var ok bool
	target := b.base + "/app/" + hash
	b.run("where", chromedp.Location(&here))
	nav := chromedp.Navigate(target)
	if here == target { // the same address: no hashchange, so load the page afresh
		nav = chromedp.Reload()
	}
	b.run("open "+hash, nav, chromedp.WaitVisible(`main[data-ready="`+page+`"]`),
		chromedp.AttributeValue(`main`, "data-ready-ms", &ms, &ok))
	v, err := strconv.ParseFloat(ms, 64)
	if err != nil {
		b.t.Fatalf("%s: no data-ready-ms (%q)", hash, ms)
	}
	return time.Duration(v * float64(time.Millisecond))
}

func (b *browserSession) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("read "+sel, chromedp.Text(sel, &s, chromedp.NodeVisible))
	return strings.TrimSpace(s)
}

func (b *browserSession) eval(js string, out any) {
	b.t.Helper()
	b.run("evaluate "+js[:min(len(js), 60)], chromedp.Evaluate(js, out))
}

// setValue sets a control's value as a user would and fires its events.
func (b *browserSession) setValue(sel, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, sel, value)
	var ok bool
	b.eval(js, &ok)
}

// apiGet asks the API directly, for the answers the screen must match.
func apiGet(t *testing.T, base, path, key string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func apiPost(t *testing.T, base, path, auth, body string, out any) {
	t.Helper()
	status, m := call(t, http.MethodPost, base+path, auth, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %v", path, status, m)
	}
	raw, _ := json.Marshal(m)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// marketWithData is the newest resolved market of the type that has snapshots.
func marketWithData(t *testing.T, base, mt string) string {
	t.Helper()
	var list struct{ Markets []struct{ Slug string } }
	apiGet(t, base, "/v1/markets?coin=BTC&resolved=true&limit=20&market_type="+mt, "ud_dev_pro", &list)
	for _, m := range list.Markets {
		var page struct{ Total int }
		apiGet(t, base, "/v1/markets/"+m.Slug+"/snapshots?limit=1", "ud_dev_pro", &page)
		if page.Total > 0 {
			return m.Slug
		}
	}
	t.Fatalf("no resolved %s market with snapshots", mt)
	return ""
}

type level struct{ Side, Price, Size string }

// fixed is x as the dashboard shows a figure: d decimals, thousands
// separated by commas, a minus sign (U+2212) before negatives.
func fixed(x float64, d int) string {
	s := intlFixed(math.Abs(x), d)
	whole, frac, _ := strings.Cut(s, ".")
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	if frac != "" {
		whole += "." + frac
	}
	if x < 0 && strings.ContainsAny(whole, "123456789") {
		return "−" + whole
	}
	return whole
}

// intlFixed writes x ≥ 0 with d decimals as the browser's
// Intl.NumberFormat does: it rounds x's shortest decimal form, half away
// from zero, where strconv rounds the binary value (0.215, stored as
// 0.21499…, is "0.22" to the dashboard and "0.21" to strconv).
func intlFixed(x float64, d int) string {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return strconv.FormatFloat(x, 'f', d, 64) // NaN, ±Inf
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
	r.Mul(r, scale).Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // floor, r ≥ 0
	return new(big.Rat).SetFrac(n, scale.Num()).FloatString(d)
}

// moneyShown reads a dollar figure as the dashboard writes it ("+$1,234.50",
// "−$0.35", "$0.00") and checks its form: a sign, a $, thousands separated,
// exactly two decimals.
var moneyForm = regexp.MustCompile(`^[+−]?\$\d{1,3}(,\d{3})*\.\d{2}$`)

func moneyShown(t *testing.T, what, s string, want float64) {
	t.Helper()
	if !moneyForm.MatchString(s) {
		t.Errorf("%s %q is not a dollar figure with 2 decimals", what, s)
		return
	}
	v, err := strconv.ParseFloat(strings.NewReplacer("+", "", "−", "-", "$", "", ",", "").Replace(s), 64)
	// Rounded to the cent, either way at an exact half.
	if err != nil || math.Abs(v-want) > 0.005+1e-9 {
		t.Errorf("%s shows %q, the API %v", what, s, want)
	}
}

// rawFloat is a float with 6 or more decimals: what no page should show.
var rawFloat = regexp.MustCompile(`\d\.\d{6,}`)

// checkNumbers fails when the page's text shows a raw float.
func (b *browserSession) checkNumbers(where string) {
	b.t.Helper()
	var text string
	b.eval(`document.body.innerText`, &text)
	if m := rawFloat.FindString(text); m != "" {
		b.t.Errorf("%s shows the raw float %q", where, m)
	}
}

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t) // `updown dev` as `make run` starts it

	shots := os.Getenv("UPDOWN_SCREENSHOTS") // a folder: save the README's screenshots there
	timings := map[string]time.Duration{}

	// Every demo plan signs in and sees its tier.
	for _, c := range []struct{ key, tier string }{
		{"ud_dev_starter", "STARTER"}, {"ud_dev_pro", "PRO"}, {"ud_dev_pro_trial", "PRO_TRIAL"},
		{"ud_dev_suite", "SUITE"}, {"ud_dev_enterprise", "ENTERPRISE"},
	} {
		b := open(t, base)
		d := b.signIn(c.key)
		if got := b.text(".tier"); got != c.tier {
			t.Errorf("%s signed in as %q", c.key, got)
		}
		t.Logf("sign-in to usable markets page as %s: %v", c.tier, d)
		b.close()
	}

	pro := open(t, base)
	t.Logf("sign-in as PRO to a usable markets page, wall time from the click: %v", pro.signIn("ud_dev_pro"))

	t.Run("cookie flags", func(t *testing.T) {
		pro := pro.in(t)
		var cookies []*network.Cookie
		pro.run("read cookies", chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			cookies, err = network.GetCookies().WithURLs([]string{base}).Do(ctx)
			return err
		}))
		if len(cookies) != 1 || cookies[0].Name != "updown_session" || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict ||
			cookies[0].Path != "/" || cookies[0].Secure {
			t.Errorf("cookies %+v: want one updown_session, HttpOnly, SameSite=Strict, Path=/, not Secure on http", cookies)
		}
		var visible string
		pro.eval(`document.cookie`, &visible)
		if visible != "" {
			t.Errorf("page script can read cookies: %q", visible)
		}
	})

	// List and filter markets.
	slug24 := marketWithData(t, base, "24hr")
	timings["markets"] = pro.visit("#/markets", "markets")
	pro.setValue(byID("markets-type"), "24hr")
	pro.run("filter 24hr", chromedp.WaitVisible(`main[data-ready="markets"] `+byID("market-row")+`[data-slug*="-24hr-"]`))
	pro.setValue(byID("markets-resolved"), "true")
	pro.run("filter resolved", chromedp.WaitVisible(`main[data-ready="markets"] `+byID("market-row")+`[data-slug="`+slug24+`"]`))
	var rows []string
	pro.eval(`[...document.querySelectorAll('[data-testid=market-row]')].map(r => r.dataset.slug)`, &rows)
	var want struct {
		Markets []struct{ Slug string }
		Total   int
	}
	apiGet(t, base, "/v1/markets?coin=BTC&market_type=24hr&resolved=true&limit=25", "ud_dev_pro", &want)
	if len(rows) != len(want.Markets) || len(rows) == 0 || rows[0] != want.Markets[0].Slug {
		t.Errorf("filtered table %v, API %v", rows, want.Markets)
	}

	// Figures: coin prices with $, thousands separators and 2 decimals, right-aligned.
	var cells []struct{ Text, Align string }
	pro.eval(`[...document.querySelectorAll('[data-testid=market-row] td.num')].map(c => ({Text: c.textContent, Align: getComputedStyle(c).textAlign}))`, &cells)
	coinCell := regexp.MustCompile(`^(\$\d{1,3}(,\d{3})+\.\d{2}|—)$`)
	for _, c := range cells {
		if !coinCell.MatchString(c.Text) || c.Align != "right" {
			t.Errorf("markets table figure %q, aligned %s: want $12,345.67 on the right", c.Text, c.Align)
		}
	}
	if len(cells) == 0 {
		t.Error("the markets table shows no figures")
	}
	pro.checkNumbers("markets")
	// The plan's window is said beside the date filter, not in a banner.
	var hint string
	var banners int
	pro.eval(`(document.querySelector('.filters [data-testid=plan-hint]')||{}).textContent||''`, &hint)
	pro.eval(`document.querySelectorAll('.plan-note').length`, &banners)
	if !strings.Contains(hint, "31 days") || banners != 0 {
		t.Errorf("PRO's plan limit: hint %q by the filters, %d banners", hint, banners)
	}

	// A resolved 24hr market, opened by a click on its row (not its link): its chart drawn with data.
	var drawMS, points, readyMS string
	var ok bool
	pro.run("open the 24hr market", chromedp.Click(byID("market-row")+`[data-slug="`+slug24+`"] td:nth-child(2)`), chromedp.WaitVisible(`main[data-ready="market"]`),
		chromedp.AttributeValue(`main`, "data-ready-ms", &readyMS, &ok))
	if v, err := strconv.ParseFloat(readyMS, 64); err == nil {
		timings["market 24hr"] = time.Duration(v * float64(time.Millisecond))
	} else {
		t.Errorf("market page: data-ready-ms %q", readyMS)
	}
	pro.run("chart drawn", chromedp.AttributeValue(byID("market-chart"), "data-draw-ms", &drawMS, &ok), chromedp.AttributeValue(byID("market-chart"), "data-points", &points, &ok))
	draw, _ := strconv.ParseFloat(drawMS, 64)
	if n, _ := strconv.Atoi(points); n < 100 || draw <= 0 {
		t.Errorf("24hr chart: %s points drawn in %s ms", points, drawMS)
	}
	// DESIGN 12's "under 1 s" is logged, not asserted: on a loaded machine
	// a correctness test must not fail on wall-clock speed.
	t.Logf("24hr market chart (%s): %s points drawn in %s ms", slug24, points, drawMS)
	// Before an instant is picked the books ask for one; the legend names
	// each series once (the min-max band is shading, not legend entries).
	if books := pro.text(byID("market-book-up")); !strings.Contains(books, "Pick an instant") || strings.Contains(books, "No book recorded") {
		t.Errorf("the UP book before a pick: %q", books)
	}
	var legend []string
	pro.eval(`[...document.querySelectorAll('[data-testid=market-chart] .u-legend .u-label')].map(l => l.textContent)`, &legend)
	if fmt.Sprint(legend) != "[time (UTC) price_up price_down coin price]" {
		t.Errorf("market chart legend %q", legend)
	}
	var ticks []string
	pro.eval(`JSON.parse(document.querySelector('[data-testid=market-chart]').dataset.xTicks || '[]')`, &ticks)
	for i, tick := range ticks {
		if !regexp.MustCompile(`^\d{2}:\d{2}(:\d{2})?(\n\d{4}-\d{2}-\d{2})?$`).MatchString(tick) || (i == 0 && !strings.Contains(tick, "\n")) {
			t.Errorf("time axis tick %q (of %q): want 24-hour UTC, the date under the first", tick, ticks)
		}
	}
	if len(ticks) < 3 {
		t.Errorf("time axis ticks %q", ticks)
	}
	pro.checkNumbers("market")
	if g := pro.text(byID("market-gaps")); strings.Contains(g, "not available") || g == "" {
		t.Errorf("recording gaps: %q", g)
	}
	var canvases int
	pro.eval(`document.querySelectorAll('[data-testid=market-chart] canvas').length`, &canvases)
	if canvases != 1 {
		t.Errorf("%d canvases in the market chart", canvases)
	}
	t.Run("books at a picked instant", func(t *testing.T) {
		pro := pro.in(t)
		var series struct {
			Data struct {
				Snapshots int
				Time      []int64
				Index     []int
				Market    struct {
					TickSize float64 `json:"tick_size"`
				}
			}
		}
		apiGet(t, base, "/v1/markets/"+slug24+"/series?points=2000", "ud_dev_pro", &series)
		k := len(series.Data.Time) / 3
		pro.setValue(byID("market-instant-slider"), strconv.Itoa(k))
		var at string
		pro.run("instant picked", chromedp.WaitVisible(byID("market-instant")+`[data-time]`), chromedp.AttributeValue(byID("market-instant"), "data-time", &at, &ok))
		var page struct {
			Snapshots []struct {
				Time string
				Up   struct {
					Asks, Bids []struct{ Price, Size float64 }
				} `json:"orderbook_up"`
				Down struct {
					Asks, Bids []struct{ Price, Size float64 }
				} `json:"orderbook_down"`
			}
		}
		apiGet(t, base, fmt.Sprintf("/v1/markets/%s/snapshots?order=asc&limit=1&offset=%d&include_orderbook=true", slug24, series.Data.Index[k]), "ud_dev_pro", &page)
		s := page.Snapshots[0]
		if s.Time != at || time.UnixMilli(series.Data.Time[k]).UTC().Format("2006-01-02T15:04:05") != at[:19] {
			t.Errorf("picked %s, the snapshot API's is %s (bucket %d)", at, s.Time, series.Data.Time[k])
		}
		for _, side := range []struct {
			id   string
			book struct {
				Asks, Bids []struct{ Price, Size float64 }
			}
		}{{"market-book-up", s.Up}, {"market-book-down", s.Down}} {
			var shown []level
			pro.eval(`[...document.querySelectorAll('[data-testid=`+side.id+`] tbody tr[data-side]')].map(r => ({Side: r.dataset.side, Price: r.cells[1].textContent, Size: r.cells[2].textContent}))`, &shown)
			// Prices with the tick's decimals (2, or 3 under a cent), sizes with 2.
			pd := 2
			if tick := series.Data.Market.TickSize; tick > 0 && tick < 0.01 {
				pd = 3
			}
			var api []level
			for _, l := range side.book.Asks {
				api = append(api, level{"ask", fixed(l.Price, pd), fixed(l.Size, 2)})
			}
			for _, l := range side.book.Bids {
				api = append(api, level{"bid", fixed(l.Price, pd), fixed(l.Size, 2)})
			}
			key := func(ls []level) []string {
				out := make([]string, len(ls))
				for i, l := range ls {
					out[i] = l.Side + " " + l.Price + " " + l.Size
				}
				sort.Strings(out)
				return out
			}
			if fmt.Sprint(key(shown)) != fmt.Sprint(key(api)) || len(api) == 0 {
				t.Errorf("%s shows %v, the API %v", side.id, key(shown), key(api))
			}
		}
	})
	t.Run("books at a picked instant of a live market", func(t *testing.T) {
		// Snapshots recorded after the page loaded must not shift the
		// instant picked: the books shown are those of the picked bucket.
		pro := pro.in(t)
		var live struct{ Markets []struct{ Slug string } }
		apiGet(t, base, "/v1/markets?coin=BTC&market_type=5m&resolved=false&limit=1", "ud_dev_pro", &live) // under 1,000 snapshots: a bucket a snapshot
		if len(live.Markets) == 0 {
			t.Fatal("dev has no live BTC 5m market")
		}
		slug := live.Markets[0].Slug
		pro.visit("#/market/"+url.PathEscape(slug), "market")
		var series struct {
			Data struct{ Time []int64 }
		}
		// A market whose window has just opened has one snapshot or none:
		// dev records the next every 300 ms.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(300 * time.Millisecond) {
			apiGet(t, base, "/v1/markets/"+slug+"/series?points=2000", "ud_dev_pro", &series)
			if len(series.Data.Time) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the live market has %d buckets a minute on", len(series.Data.Time))
			}
		}
		time.Sleep(2 * time.Second) // dev records a snapshot every 300 ms
		k := len(series.Data.Time) / 2
		pro.setValue(byID("market-instant-slider"), strconv.Itoa(k))
		var at string
		var ok bool
		pro.run("instant picked", chromedp.WaitVisible(byID("market-instant")+`[data-time]`), chromedp.AttributeValue(byID("market-instant"), "data-time", &at, &ok))
		if want := time.UnixMilli(series.Data.Time[k]).UTC().Format("2006-01-02T15:04:05"); len(at) < 19 || at[:19] != want {
			t.Errorf("picked bucket %d (%s) of a live market shows the snapshot of %s", k, want, at)
		}
	})

	if shots != "" { // the market with the books of the picked instant
		screenshot(t, pro, filepath.Join(shots, "dashboard-market.png"))
	}

	// Replays: from the builder and from a pasted strategy_code, each
	// against POST /v1/replay's own answer.
	slug15 := marketWithData(t, base, "15m")
	type replayAnswer struct {
		Data struct {
			Performance struct {
				TotalPnL    float64 `json:"total_pnl"`
				TotalTrades int     `json:"total_trades"`
			}
			Trades []json.RawMessage
		}
	}
	// submitReplay clicks Run and waits for this run's result.
	submitReplay := func(b *browserSession) {
		var run string
		var ok bool
		b.run("previous run", chromedp.AttributeValue(byID("replay-results"), "data-run", &run, &ok))
		n, _ := strconv.Atoi(run)
		b.run("submit", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="`+strconv.Itoa(n+1)+`"]`))
	}
	checkReplay := func(t *testing.T, body string) {
		pro := pro.in(t)
		var want replayAnswer
		apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", body, &want)
		pro.run("replay result", chromedp.WaitVisible(byID("replay-total-pnl")))
		moneyShown(t, "replay total pnl", pro.text(byID("replay-total-pnl")), want.Data.Performance.TotalPnL)
		if got := pro.text(byID("replay-total-trades")); got != strconv.Itoa(want.Data.Performance.TotalTrades) {
			t.Errorf("shown trades %q, API %d", got, want.Data.Performance.TotalTrades)
		}
		var n int
		pro.eval(`document.querySelectorAll('[data-testid=trade-row]').length`, &n)
		if n != len(want.Data.Trades) {
			t.Errorf("%d trade rows, API %d events", n, len(want.Data.Trades))
		}
		// Trade times with milliseconds, prices at the market's tick (2
		// decimals at 0.01, 3 at 0.001), pnl in dollars.
		var trade []string
		pro.eval(`[...(document.querySelector('[data-testid=trade-row]')||{cells: []}).cells].map(c => c.textContent)`, &trade)
		pd := tickDecimals(t, base, slug15)
		if n > 0 && (len(trade) != 12 || !regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$`).MatchString(trade[2]) ||
			!regexp.MustCompile(fmt.Sprintf(`^\d\.\d{%d}$`, pd)).MatchString(trade[3]) || !moneyForm.MatchString(trade[11])) {
			t.Errorf("first trade row %q", trade)
		}
		pro.checkNumbers("replay result")
		var eq string
		pro.run("equity chart", chromedp.AttributeValue(byID("equity-chart"), "data-draw-ms", &eq, &ok))
		if !ok {
			t.Error("no equity chart")
		}
	}
	t.Run("replay from the builder", func(t *testing.T) {
		pro := pro.in(t)
		timings["replay"] = pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		var code string
		pro.eval(`document.querySelector('[data-testid=replay-code]').value`, &code)
		want := "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 or time_remaining_pct <= 5 size=100 maxloss=50 order=MARKET"
		if code != want {
			t.Errorf("the code box shows %q, want %q", code, want)
		}
		// Build: one more exit condition through the form.
		pro.run("add exit", chromedp.Click(byID("replay-add-exit")))
		pro.setValue(`[data-testid=replay-exit]:last-child [name=field]`, "spread")
		pro.setValue(`[data-testid=replay-exit]:last-child [name=operator]`, "crosses_above")
		pro.setValue(`[data-testid=replay-exit]:last-child [name=value]`, "0.3")
		pro.setValue(byID("replay-size"), "50")
		pro.eval(`document.querySelector('[data-testid=replay-code]').value`, &code)
		if !strings.Contains(code, "or spread crosses_above 0.3 size=50") {
			t.Errorf("the code box did not follow the builder: %q", code)
		}
		submitReplay(pro)
		if shots != "" {
			screenshot(t, pro, filepath.Join(shots, "dashboard-replay.png"))
		}
		checkReplay(t, `{"marketSlug":"`+slug15+`","side":"UP","positionSize":50,"maxLossPercent":50,"orderType":"MARKET",
			"entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
			"exitConditions":[{"field":"price_up","operator":">=","value":0.6},{"field":"time_remaining_pct","operator":"<=","value":5},{"field":"spread","operator":"crosses_above","value":0.3}]}`)
	})
	t.Run("replay from a pasted strategy_code", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.setValue(byID("replay-code"), "side=DOWN entry: price_down <= 0.55 and time_remaining_pct > 30 exit: price_down >= 0.7 size=25 maxloss=20 order=LIMIT")
		var side, order string
		pro.eval(`document.querySelector('[data-testid=replay-side]').value`, &side)
		pro.eval(`document.querySelector('[data-testid=order-type]').value`, &order)
		if side != "DOWN" || order != "LIMIT" {
			t.Errorf("the builder shows side %s, order %s after the code", side, order)
		}
		pro.setValue(byID("replay-fee-model"), "MARKET")
		pro.setValue(byID("replay-latency"), "500")
		submitReplay(pro)
		checkReplay(t, `{"marketSlug":"`+slug15+`","side":"DOWN","positionSize":25,"maxLossPercent":20,"orderType":"LIMIT","feeModel":"MARKET","latencyMs":500,
			"entryConditions":[{"field":"price_down","operator":"<=","value":0.55},{"field":"time_remaining_pct","operator":">","value":30}],
			"exitConditions":[{"field":"price_down","operator":">=","value":0.7}]}`)
	})

	t.Run("replay a GTC strategy from the builder", func(t *testing.T) {
		pro := pro.in(t)
		// Dev data ends now, so which market fills this strategy's orders
		// moves with the clock: take the newest resolved 15m market on
		// which the API says it trades.
		gtcBody := func(slug string) string {
			return `{"marketSlug":"` + slug + `","side":"UP","positionSize":50,"orderType":"GTC","postOnly":true,
			"cancelAfterMs":60000,"queueModel":"FRONT","feeModel":"MARKET","reentryCooldownMs":30000,"maxEntriesPerMarket":3,
			"entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
			"exitConditions":[{"field":"price_up","operator":">=","value":0.6},{"field":"time_remaining_pct","operator":"<=","value":5}]}`
		}
		var list struct {
			Markets []struct{ Slug string }
		}
		apiGet(t, base, "/v1/markets?coin=BTC&market_type=15m&resolved=true&limit=40", "ud_dev_pro", &list)
		gtcSlug := ""
		for _, m := range list.Markets {
			var probe struct {
				Data struct {
					Trades []json.RawMessage
				}
			}
			apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", gtcBody(m.Slug), &probe)
			if len(probe.Data.Trades) > 0 {
				gtcSlug = m.Slug
				break
			}
		}
		if gtcSlug == "" {
			t.Fatalf("this GTC strategy trades on none of the newest %d resolved BTC 15m dev markets", len(list.Markets))
		}
		pro.forgetDrafts() // the builder's defaults, which the code below is built on
		pro.visit("#/replay?market="+url.QueryEscape(gtcSlug), "replay")
		var hidden bool
		pro.eval(`document.querySelector('[data-testid=gtc-options]').hidden`, &hidden)
		if !hidden {
			t.Error("the GTC options show with order type MARKET")
		}
		// A GTC code pasted into the code box (input, the box still focused)
		// shows the resting-order fields at once: a click on Run right after
		// the paste is not lost to the page moving as the box loses focus.
		var before string
		pro.eval(`document.querySelector('[data-testid=replay-code]').value`, &before)
		var shownAtOnce bool
		pro.eval(`(() => { const el = document.querySelector('[data-testid=replay-code]');
			el.value = 'side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100 maxloss=50 order=GTC postonly=true';
			el.dispatchEvent(new Event('input', {bubbles: true}));
			return !document.querySelector('[data-testid=gtc-options]').hidden })()`, &shownAtOnce)
		if !shownAtOnce {
			t.Error("a GTC code pasted into the code box does not show the GTC options until the box loses focus")
		}
		pro.setValue(byID("replay-code"), before)
		pro.setValue(byID("order-type"), "GTC")
		pro.eval(`document.querySelector('[data-testid=gtc-options]').hidden`, &hidden)
		if hidden {
			t.Error("the GTC options stay hidden with order type GTC")
		}
		pro.run("post only", chromedp.Click(byID("gtc-post-only")))
		pro.setValue(byID("gtc-cancel-after"), "60")
		pro.setValue(byID("gtc-queue"), "FRONT")
		pro.setValue(byID("reentry-cooldown"), "30")
		pro.setValue(byID("max-entries"), "3")
		pro.setValue(byID("replay-fee-model"), "MARKET")
		pro.setValue(byID("replay-size"), "50")
		// Every control is labelled.
		var unlabelled []string
		pro.eval(`['order-type','gtc-post-only','gtc-offset','gtc-cancel-after','gtc-queue','gtc-rebates','reentry-cooldown','max-entries']
			.filter(id => { const el = document.querySelector('[data-testid='+id+']'); return !el || !el.labels || el.labels.length === 0 })`, &unlabelled)
		if len(unlabelled) > 0 {
			t.Errorf("controls without a label: %v", unlabelled)
		}
		const code = "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 or time_remaining_pct <= 5 size=50 maxloss=50 order=GTC postonly=true cancel=60000 queue=front fees=market cooldown=30000 maxentries=3"
		var shown string
		pro.eval(`document.querySelector('[data-testid=replay-code]').value`, &shown)
		if shown != code {
			t.Errorf("the code box shows %q\nwant %q", shown, code)
		}
		submitReplay(pro)
		var want struct {
			Data struct {
				Performance struct {
					TotalFees    float64 `json:"total_fees"`
					OrdersPlaced int     `json:"orders_placed"`
					OrdersFilled int     `json:"orders_filled"`
				}
				Orders []struct{ Action, Reason string }
				Trades []struct{ Liquidity, Reason string }
			}
		}
		apiPost(t, base, "/v1/replay", "X-API-Key: ud_dev_pro", gtcBody(gtcSlug), &want)
		w := want.Data
		if len(w.Orders) == 0 || len(w.Trades) == 0 {
			t.Fatalf("the dev market gives this GTC strategy %d orders and %d trade events: pick another", len(w.Orders), len(w.Trades))
		}
		var rows int
		pro.eval(`document.querySelectorAll('[data-testid=orders-table] [data-testid=order-row]').length`, &rows)
		if rows != len(w.Orders) {
			t.Errorf("%d order rows, API %d orders", rows, len(w.Orders))
		}
		var first []string
		pro.eval(`[...document.querySelector('[data-testid=order-row]').cells].map(c => c.textContent)`, &first)
		if len(first) != 6 || first[1] != w.Orders[0].Action || first[5] != w.Orders[0].Reason ||
			!regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$`).MatchString(first[0]) {
			t.Errorf("first order row %q, API %+v", first, w.Orders[0])
		}
		var help string
		pro.eval(`document.querySelector('[data-testid=order-row] abbr').title`, &help)
		if help == "" {
			t.Error("the first order's reason has no explanation")
		}
		if got := pro.text(byID("orders-placed")); got != strconv.Itoa(w.Performance.OrdersPlaced) {
			t.Errorf("orders placed shows %q, API %d", got, w.Performance.OrdersPlaced)
		}
		if got := pro.text(byID("orders-filled")); got != strconv.Itoa(w.Performance.OrdersFilled) {
			t.Errorf("orders filled shows %q, API %d", got, w.Performance.OrdersFilled)
		}
		var liquidity []string
		pro.eval(`[...document.querySelectorAll('[data-testid=trade-liquidity]')].map(c => c.textContent)`, &liquidity)
		for i, tr := range w.Trades {
			// A fill is a taker's or a maker's; a position held to the
			// market's end is settled, by no one: "—" (the API has none).
			want := tr.Liquidity
			if tr.Reason == "MARKET_END" && tr.Liquidity == "" {
				want = "—"
			} else if tr.Liquidity != "MAKER" && tr.Liquidity != "TAKER" {
				t.Errorf("trade %d (%s): API liquidity %q, want MAKER or TAKER", i, tr.Reason, tr.Liquidity)
			}
			if i >= len(liquidity) || liquidity[i] != want {
				t.Errorf("trade %d liquidity shown %v, API %q (%s)", i, liquidity, tr.Liquidity, tr.Reason)
				break
			}
		}
		if got, want := pro.text(byID("replay-total-fees")), "$"+fixed(w.Performance.TotalFees, 5); got != want {
			t.Errorf("total fees shows %q, API %q", got, want)
		}
		if got := pro.text(byID("replay-total-rebates")); !strings.HasSuffix(got, "(not in pnl)") {
			t.Errorf("maker rebates shows %q, want it marked not in pnl", got)
		}
		pro.checkNumbers("GTC replay result")
		if shots != "" {
			screenshot(t, pro, filepath.Join(shots, "dashboard-replay-gtc.png"))
		}

		// A bad value: the API's own message, under the code box at once and in the error banner on Run.
		pro.setValue(byID("gtc-offset"), "60")
		if got := pro.text(byID("replay-code-status")); got != "offset 60 is not allowed: it must be a whole number of ticks from 0 to 50" {
			t.Errorf("an offset of 60 is explained as %q", got)
		}
		pro.run("submit a bad offset", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("error-banner")))
		if got := pro.text(byID("error-banner")); !strings.Contains(got, "limitOffsetTicks 60 is not allowed: it must be a whole number of ticks from 0 to 50") {
			t.Errorf("the error banner shows %q", got)
		}
	})
	t.Run("a pasted code with every word fills the builder", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		rules, err := strategy.ParseCode("side=DOWN entry: display_down < 0.45 and coin_return_60s > -0.1 and imbalance_down >= 0.2 " +
			"exit: bid_down >= 0.6 or time_remaining_s < 30 or coin_move_pct crosses_above 0.05 size=20 maxloss=30 order=GTC postonly=true offset=2 " +
			"cancel=45000 queue=front rebates=true fees=custom feerate=0.05 feeexp=2 latency=250 cooldown=15000 maxentries=4")
		if err != nil {
			t.Fatal(err)
		}
		code := strategy.FormatCode(rules)
		pro.setValue(byID("replay-code"), code)
		var got map[string]any
		pro.eval(`(() => { const v = id => { const el = document.querySelector('[data-testid='+id+']'); return el.type === 'checkbox' ? el.checked : el.value };
			return { side: v('replay-side'), order: v('order-type'), postOnly: v('gtc-post-only'), offset: v('gtc-offset'), cancel: v('gtc-cancel-after'),
				queue: v('gtc-queue'), rebates: v('gtc-rebates'), cooldown: v('reentry-cooldown'), maxEntries: v('max-entries'), fees: v('replay-fee-model'),
				rate: v('replay-fee-rate'), exp: v('replay-fee-exponent'), latency: v('replay-latency'), size: v('replay-size'), maxloss: v('replay-maxloss'),
				entry: [...document.querySelectorAll('[data-testid=replay-entry] [name=field]')].map(e => e.value).join(' '),
				exit: [...document.querySelectorAll('[data-testid=replay-exit] [name=field]')].map(e => e.value).join(' '),
				code: v('replay-code'), status: document.querySelector('[data-testid=replay-code-status]').textContent } })()`, &got)
		want := map[string]any{"side": "DOWN", "order": "GTC", "postOnly": true, "offset": "2", "cancel": "45", "queue": "FRONT", "rebates": true,
			"cooldown": "15", "maxEntries": "4", "fees": "CUSTOM", "rate": "0.05", "exp": "2", "latency": "250", "size": "20", "maxloss": "30",
			"entry": "display_down coin_return_60s imbalance_down", "exit": "bid_down time_remaining_s coin_move_pct",
			"code": code, "status": "The builder now shows this code."}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("after pasting %q the builder's %s is %v, want %v", code, k, got[k], v)
			}
		}
	})

	t.Run("agent generates and backtests", func(t *testing.T) {
		pro := pro.in(t)
		timings["agent"] = pro.visit("#/agent", "agent")
		var before string
		pro.run("quota", chromedp.AttributeValue(byID("agent-quota"), "data-used", &before, &ok))
		pro.setValue(byID("agent-prompt"), "buy UP when price_up drops below 0.45, exit above 0.6 or with 10% left")
		pro.setValue(byID("agent-count"), "5")
		pro.run("generate", chromedp.Click(byID("agent-generate")), chromedp.WaitVisible(byID("agent-quota")+`:not([data-used="`+before+`"])`))
		var code string
		pro.eval(`document.querySelector('[data-testid=agent-code]').value`, &code)
		if !strings.Contains(code, "side=UP entry: price_up < 0.45") {
			t.Errorf("generated code %q", code)
		}
		pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+`[data-run="1"]`))
		status, tok := post(t, base+"/v1/auth/token", "ud_dev_pro", "")
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		body, _ := json.Marshal(map[string]any{"strategy_code": code, "coin": "BTC", "marketType": "15m", "marketCount": 5})
		var want struct {
			Data struct {
				Aggregate struct {
					TotalPnL float64 `json:"total_pnl"`
				}
				Results []json.RawMessage
			}
		}
		apiPost(t, base, "/v1/backtest-ai/run", "Authorization: Bearer "+tok["access_token"].(string), string(body), &want)
		moneyShown(t, "agent total pnl", pro.text(byID("agent-total-pnl")), want.Data.Aggregate.TotalPnL)
		var n int
		pro.eval(`document.querySelectorAll('[data-testid=agent-results-table] tbody tr').length`, &n)
		if n != len(want.Data.Results) || n != 5 {
			t.Errorf("%d result rows, API %d", n, len(want.Data.Results))
		}
		// The per-market chart: markets 1 to 5 on the x axis, whole numbers only.
		var axis []string
		pro.eval(`JSON.parse(document.querySelector('[data-testid=agent-pnl-chart]').dataset.xTicks || '[]')`, &axis)
		if fmt.Sprint(axis) != "[1 2 3 4 5]" {
			t.Errorf("per-market chart x axis %q: want market numbers 1 to 5", axis)
		}
		var labels []string
		pro.eval(`[...document.querySelectorAll('main label')].map(l => l.textContent)`, &labels)
		if !strings.Contains(strings.Join(labels, "|"), "|Max loss %|") {
			t.Errorf("agent labels %q: want Max loss %%", labels)
		}
		pro.checkNumbers("agent result")
		if shots != "" {
			screenshot(t, pro, filepath.Join(shots, "dashboard-agent.png"))
		}
	})

	t.Run("exchange", func(t *testing.T) {
		pro := pro.in(t)
		timings["exchange"] = pro.visit("#/exchange?coin=eth", "exchange")
		var n int
		pro.eval(`document.querySelectorAll('[data-testid=exchange-trades-table] tbody tr').length`, &n)
		var drawn bool
		pro.eval(`document.querySelector('[data-testid=depth-chart]').hasAttribute('data-draw-ms')`, &drawn)
		if n == 0 || !drawn {
			t.Errorf("exchange: %d trades, depth chart drawn %t", n, drawn)
		}
		// The header price has thousands separated; quotes have 2 decimals.
		if p := pro.text(byID("exchange-price")); !regexp.MustCompile(`\$\d{1,3}(,\d{3})+\.\d{2}$`).MatchString(p) {
			t.Errorf("exchange price %q", p)
		}
		var quote string
		pro.eval(`document.querySelector('[data-testid=exchange-trades-table] tbody tr').cells[3].textContent`, &quote)
		if !moneyForm.MatchString(quote) {
			t.Errorf("quote %q: want dollars with 2 decimals", quote)
		}
		// The depth history: the coin price and the spread, each on its own scale.
		pro.run("depth history", chromedp.WaitVisible(byID("depth-history-chart")+`[data-draw-ms]`))
		var hist []string
		pro.eval(`[...document.querySelectorAll('[data-testid=depth-history-chart] .u-legend .u-label')].map(l => l.textContent)`, &hist)
		if len(hist) != 3 || !strings.HasPrefix(hist[2], "spread") {
			t.Errorf("depth history series %q", hist)
		}
		pro.checkNumbers("exchange")
	})

	t.Run("keys: create, use, revoke", func(t *testing.T) {
		pro := pro.in(t)
		timings["account"] = pro.visit("#/account", "account")
		if got := pro.text(byID("account-tier")); got != "PRO" {
			t.Errorf("account tier %q", got)
		}
		// The rate limiter gives up on Redis after 250 ms and lets the
		// request through uncounted ("not counted on this server"): on a
		// loaded machine a page may meet that, and the next shows the count.
		usage := regexp.MustCompile(`^\d{1,3}(,\d{3})* of 50,000$`)
		got := pro.text(byID("account-usage"))
		for range 4 {
			if usage.MatchString(got) {
				break
			}
			pro.visit("#/markets", "markets")
			pro.visit("#/account", "account")
			got = pro.text(byID("account-usage"))
		}
		if !usage.MatchString(got) {
			t.Errorf("requests today %q: want \"164 of 50,000\"", got)
		}
		pro.run("create a key", chromedp.Click(byID("key-create")), chromedp.WaitVisible(byID("key-new-value")))
		key := pro.text(byID("key-new-value"))
		var me struct {
			Data struct {
				Keys []struct {
					ID      string
					Current bool
				}
			}
		}
		apiGet(t, base, "/v1/account/keys", key, &me) // the new key works over HTTP
		id := ""
		for _, k := range me.Data.Keys {
			if k.Current {
				id = k.ID
			}
		}
		pro.run("revoke it", chromedp.Click(byID("key-revoke")+`[data-key-id="`+id+`"]`), chromedp.WaitVisible(`tr.revoked[data-key-id="`+id+`"]`))
		if status, _ := get(t, base+"/v1/account", key); status != http.StatusUnauthorized {
			t.Errorf("the revoked key answers %d", status)
		}
		var plans int
		pro.eval(`document.querySelectorAll('[data-testid=billing-plans] thead th').length`, &plans)
		if plans != 6 {
			t.Errorf("billing table has %d columns, want a label and 5 plans", plans)
		}
	})

	t.Run("starter sees what it may not do", func(t *testing.T) {
		st := open(t, base)
		st.signIn("ud_dev_starter")
		for _, p := range []struct{ hash, page, what string }{
			{"#/replay", "replay", "strategy replay"}, {"#/agent", "agent", "backtest ai agent"}, {"#/exchange", "exchange", "exchange data"},
		} {
			st.visit(p.hash, p.page)
			msg := strings.ToLower(st.text(byID("plan-denied")))
			if !strings.Contains(msg, "starter") || !strings.Contains(msg, p.what) {
				t.Errorf("%s: %q", p.hash, msg)
			}
			var forms int
			st.eval(`document.querySelectorAll('main form').length`, &forms)
			if forms != 0 {
				t.Errorf("%s shows a form to a plan that cannot use it", p.hash)
			}
			var link string
			st.run("upgrade link", chromedp.AttributeValue(byID("plan-denied")+" a.upgrade", "href", &link, &ok))
			if link == "" {
				t.Errorf("%s: no upgrade link", p.hash)
			}
		}
		// A refusal of markets is said in place, with the upgrade link
		// (TestDashboardQAPass holds that it is said once).
		st.visit("#/markets?coin=ETH", "markets")
		if msg := st.text(byID("markets-denied")); !strings.Contains(msg, "ETH prediction markets need the PRO plan") {
			t.Errorf("ETH for a Starter: %q", msg)
		}
	})

	// Every page at 1280x800 and at phone width: screenshots of both kept
	// as artifacts; at 390 px nothing is wider than the screen, the header
	// is one line with a menu button, and no raw float shows.
	t.Run("phone width", func(t *testing.T) {
		pro := pro.in(t)
		dir, err := os.MkdirTemp("", "updown-dashboard-screens-")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshots of every page at 1280 and 390 px wide: %s", dir)
		defer pro.run("wide again", chromedp.EmulateViewport(1280, 800))
		pages := []struct{ name, hash, page string }{
			{"markets", "#/markets", "markets"}, {"market", "#/market/" + slug24, "market"}, {"replay", "#/replay", "replay"},
			{"agent", "#/agent", "agent"}, {"exchange", "#/exchange", "exchange"}, {"account", "#/account", "account"}, {"docs", "/docs", ""},
		}
		for _, width := range []int64{1280, 390} {
			height := int64(800)
			if width == 390 {
				height = 844
			}
			pro.run("viewport", chromedp.EmulateViewport(width, height))
			for _, p := range pages {
				if p.page == "" {
					pro.run("open the docs", chromedp.Navigate(base+p.hash), chromedp.WaitVisible(`#docs[data-ready="docs"]`))
				} else {
					pro.visit(p.hash, p.page)
				}
				if p.page == "market" || p.page == "exchange" { // the charts are drawn
					pro.run("charts", chromedp.WaitVisible(`[data-draw-ms]`))
				}
				screenshot(t, pro, filepath.Join(dir, fmt.Sprintf("%s-%d.png", p.name, width)))
				if width != 390 {
					continue
				}
				var overflow float64
				pro.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
				if overflow > 0 {
					t.Errorf("%s is %v px wider than a 390 px screen", p.hash, overflow)
				}
				pro.checkNumbers(p.hash + " at 390 px")
				if p.page == "" {
					continue
				}
				var header float64
				pro.eval(`document.querySelector('header').getBoundingClientRect().height`, &header)
				if header > 60 {
					t.Errorf("%s: the header is %v px tall at 390 px: want one line", p.hash, header)
				}
			}
		}
		// The menu button opens the navigation, and a link closes it.
		pro.visit("#/markets", "markets")
		pro.run("open the menu", chromedp.Click(byID("menu-button")), chromedp.WaitVisible(byID("nav-account")))
		pro.run("go to account", chromedp.Click(byID("nav-account")), chromedp.WaitVisible(`main[data-ready="account"]`), chromedp.WaitNotVisible(byID("nav-account")))
	})

	t.Run("sign out", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/markets", "markets")
		var cookies []*network.Cookie
		pro.run("read cookie", chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			cookies, err = network.GetCookies().WithURLs([]string{base}).Do(ctx)
			return err
		}))
		pro.run("sign out", chromedp.Click(byID("signout")), chromedp.WaitVisible(byID("signin-key")))
		var status int
		pro.run("fetch after sign-out", chromedp.Evaluate(`fetch('/v1/account').then(r => r.status)`, &status,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if status != http.StatusUnauthorized {
			t.Errorf("after sign-out the page's call answers %d", status)
		}
		// The old cookie, replayed from elsewhere, is dead too.
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/account", nil)
		req.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("the signed-out cookie answers %d", res.StatusCode)
		}
	})

	t.Run("docs from embedded assets", func(t *testing.T) {
		d := open(t, base)
		var ms string
		var ok bool
		d.run("docs", chromedp.Navigate(base+"/docs"), chromedp.WaitVisible(`#docs[data-ready="docs"]`),
			chromedp.AttributeValue(`#docs`, "data-ready-ms", &ms, &ok))
		v, err := strconv.ParseFloat(ms, 64)
		if err != nil {
			t.Fatalf("docs: data-ready-ms %q", ms)
		}
		timings["docs (from navigation start)"] = time.Duration(v * float64(time.Millisecond))
		var ops int
		d.eval(`document.querySelectorAll('section.op').length`, &ops)
		if ops < 20 {
			t.Errorf("the docs show %d operations", ops)
		}
		// Markets first; the replay body shows ranges, defaults and examples,
		// and entryConditions as a required array of conditions.
		var tags []string
		d.eval(`[...document.querySelectorAll('nav [data-tag]')].map(x => x.dataset.tag)`, &tags)
		if len(tags) < 5 || tags[0] != "Markets" {
			t.Errorf("docs sections %q: want Markets first", tags)
		}
		var body string
		d.eval(`document.getElementById('replay') ? document.getElementById('replay').querySelector('table.schema').innerText : ''`, &body)
		for _, want := range []string{"entryConditions required", "array of ReplayCondition", "range 1 to 100", "default 50", "one of NONE, MARKET, CUSTOM", "example 0.07"} {
			if !strings.Contains(strings.Join(strings.Fields(body), " "), want) {
				t.Errorf("the replay body in the docs lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "null") {
			t.Errorf("the replay body in the docs shows null types:\n%s", body)
		}
	})

	names := make([]string, 0, len(timings))
	for n := range timings {
		names = append(names, n)
	}
	sort.Strings(names)
	// DESIGN 12 asks for under 1 s: reported, never a pass or a fail (each
	// page above was waited for with a generous bound instead).
	for _, n := range names {
		t.Logf("time to usable, %s: %v", n, timings[n].Round(time.Millisecond))
	}
}

func screenshot(t *testing.T, b *browserSession, path string) {
	t.Helper()
	var png []byte
	var height float64
	b.run("page height", chromedp.Evaluate(`document.documentElement.scrollHeight`, &height))
	shot := chromedp.FullScreenshot(&png, 100)
	if height > 6000 { // the docs: their first screen
		shot = chromedp.CaptureScreenshot(&png)
	}
	b.run("screenshot", chromedp.Sleep(200*time.Millisecond), shot)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAccountPageListsTheKeys: the account page lists the caller's keys
// past the API's default page of 20 (QA: 25 keys showed 20 rows and no
// sign of the rest).
func TestAccountPageListsTheKeys(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t)
	const auth = "X-API-Key: ud_dev_suite"
	for range 24 { // with the dev key: 25 keys, 24 of them revoked
		status, m := call(t, http.MethodPost, base+"/v1/account/keys", auth, "")
		data, _ := m["data"].(map[string]any)
		id, _ := data["id"].(string)
		if status != http.StatusCreated || id == "" {
			t.Fatalf("create a key: %d %v", status, m)
		}
		if status, m := call(t, http.MethodDelete, base+"/v1/account/keys/"+id, auth, ""); status != http.StatusOK {
			t.Fatalf("revoke a key: %d %v", status, m)
		}
	}
	var page struct{ Data struct{ Total int } }
	apiGet(t, base, "/v1/account/keys?limit=1", "ud_dev_suite", &page)
	b := open(t, base)
	defer b.close()
	b.signIn("ud_dev_suite")
	b.visit("#/account", "account")
	var rows int
	b.eval(`document.querySelectorAll('[data-testid=keys-table] tbody tr').length`, &rows)
	if page.Data.Total != 25 || rows != page.Data.Total {
		t.Errorf("the keys table shows %d rows of %d keys", rows, page.Data.Total)
	}
}

// TestDashboardQAFixes: what a QA pass found in headless Chromium, each
// checked as they reproduced it.
func TestDashboardQAFixes(t *testing.T) {
	t.Parallel()
	base := startDevProcess(t, "--collect-every", "0")
	slug15 := marketWithData(t, base, "15m")
	pro := open(t, base)
	pro.signIn("ud_dev_pro")
	var ok bool

	t.Run("a pasted code, then one click on Run, runs the replay", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		// A paste as the browser does it (the box focused, the text
		// inserted), then a real click: the box loses focus on the mouse
		// press, and the status line it writes must not move the button
		// before the release.
		pro.run("paste", chromedp.Focus(byID("replay-code")), chromedp.Evaluate(`document.querySelector('[data-testid=replay-code]').select(), true`, &ok),
			chromedp.ActionFunc(func(ctx context.Context) error {
				return input.InsertText("side=DOWN entry: price_down <= 0.55 exit: price_down >= 0.7 size=25 maxloss=20 order=MARKET").Do(ctx)
			}))
		ctx, cancel := context.WithTimeout(pro.ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("replay-results")+`[data-run="1"]`)); err != nil {
			var status string
			pro.eval(`document.querySelector('[data-testid=replay-code-status]').textContent`, &status)
			t.Fatalf("the first click on Run after a paste ran no replay (%v); the status line says %q", err, status)
		}
		if got := pro.text(byID("replay-code-status")); got != "The builder now shows this code." {
			t.Errorf("status line %q", got)
		}
	})

	t.Run("an empty condition value is missing, not 0", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/replay?market="+url.QueryEscape(slug15), "replay")
		pro.setValue(`[data-testid=replay-entry] [name=value]`, "")
		pro.run("submit", chromedp.Click(byID("replay-submit")), chromedp.WaitVisible(byID("error-banner")))
		if got := pro.text(byID("error-banner")); !strings.Contains(got, "entryConditions[0].value is missing") {
			t.Errorf("an empty entry value: the banner says %q", got)
		}
		var run string
		pro.eval(`document.querySelector('[data-testid=replay-results]').dataset.run || ''`, &run)
		if run != "" {
			t.Errorf("a replay ran (run %s) with an empty value", run)
		}
		pro.setValue(byID("replay-size"), "")
		var body string
		pro.eval(`document.querySelector('[data-testid=replay-code-status]').textContent`, &body)
		if body == "" {
			t.Error("an empty size leaves the code box's status line empty")
		}
	})

	t.Run("the agent's fees and latency win over the code's", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/agent", "agent")
		pro.setValue(byID("agent-code"), "side=UP entry: price_up < 0.45 exit: price_up >= 0.6 size=100 fees=market latency=250")
		pro.setValue(byID("agent-count"), "3")
		used := func(run int) (string, string) {
			pro.run("backtest", chromedp.Click(byID("agent-backtest")), chromedp.WaitVisible(byID("agent-results")+fmt.Sprintf(`[data-run="%d"]`, run)))
			return pro.text(byID("agent-used-fees")), pro.text(byID("agent-used-latency"))
		}
		// By default the code's costs hold.
		if fees, lat := used(1); fees != "the market's fee schedule" || lat != "250 ms" {
			t.Errorf("from the code: fees %q, latency %q; want the market's fee schedule, 250 ms", fees, lat)
		}
		// An explicit none and 0 are sent, and win.
		pro.setValue(byID("agent-fee-model"), "NONE")
		pro.setValue(byID("agent-latency"), "0")
		if fees, lat := used(2); fees != "none" || lat != "0 ms" {
			t.Errorf("with none and 0 set: fees %q, latency %q", fees, lat)
		}
	})

	t.Run("the plans table says what each plan allows of sweeps", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/account", "account")
		var row []string
		pro.eval(`(() => { const r = [...document.querySelectorAll('[data-testid=billing-plans] tbody tr')].find(r => r.cells[0].textContent === 'Parameter sweeps');
			return r ? [...r.cells].map(c => c.textContent) : [] })()`, &row)
		var billing billingAnswer
		apiGet(t, base, "/v1/account/billing", "ud_dev_pro", &billing)
		want := []string{"Parameter sweeps"}
		for _, p := range billing.Data.Plans {
			if s := p.Sweeps; s != nil {
				want = append(want, fmt.Sprintf("%s trials × %s markets, %s replays, %d at a time", fixed(float64(s.MaxTrials), 0), fixed(float64(s.MaxMarkets), 0), fixed(float64(s.MaxReplays), 0), s.Concurrent))
			} else {
				want = append(want, "no") // as the table says of the other features a plan lacks
			}
		}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("the sweeps row %q, want %q", row, want)
		}
		if len(want) > 2 && want[2] != "200 trials × 200 markets, 20,000 replays, 1 at a time" {
			t.Errorf("PRO's sweeps %q", want[2])
		}
	})

	t.Run("a market that does not exist shows only the error", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/market/btc-updown-15m-1", "market")
		pro.run("banner", chromedp.WaitVisible(byID("error-banner")))
		var dead []string
		pro.eval(`['market-instant-slider', 'market-instant', 'market-csv', 'market-book-up', 'market-chart'].filter(id => document.querySelector('[data-testid=' + id + ']'))`, &dead)
		if len(dead) > 0 {
			t.Errorf("a 404 market still shows %v", dead)
		}
	})

	t.Run("a market without snapshots says so, without dead controls", func(t *testing.T) {
		// Dev records snapshots for every market: the series of one is
		// answered as the API answers a market with none.
		pro := pro.in(t)
		var series struct{ Data map[string]any }
		apiGet(t, base, "/v1/markets/"+slug15+"/series?points=2000", "ud_dev_pro", &series)
		d := series.Data
		d["snapshots"], d["time"], d["index"] = 0, []int{}, []int{}
		for _, k := range []string{"price_up", "price_down", "coin_price"} {
			d[k] = map[string]any{"first": []any{}, "min": []any{}, "max": []any{}}
		}
		empty, _ := json.Marshal(map[string]any{"success": true, "data": d})
		defer pro.answerJSON("*/v1/markets/"+slug15+"/series*", "/v1/markets/"+slug15+"/series", empty)()
		pro.visit("#/market/"+url.PathEscape(slug15), "market")
		if got := pro.text(byID("market-no-snapshots")); !strings.Contains(got, "No snapshots recorded") {
			t.Errorf("a market without snapshots: %q", got)
		}
		var dead []string
		pro.eval(`['market-instant-slider', 'market-instant', 'market-csv', 'market-book-up'].filter(id => document.querySelector('[data-testid=' + id + ']'))`, &dead)
		if len(dead) > 0 {
			t.Errorf("a market without snapshots still shows %v", dead)
		}
	})

	t.Run("sweeps: an empty box is missing, not 0", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/sweeps", "sweeps")
		pro.setValue(`[data-testid=sweep-param]:nth-child(1) [name=step]`, "")
		pro.run("submit", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-error")))
		if got := pro.text(byID("sweep-error")); !strings.Contains(got, "parameters[0].range.step is missing") {
			t.Errorf("an empty step: %q", got)
		}
		pro.setValue(`[data-testid=sweep-param]:nth-child(1) [name=step]`, "0.05")
		pro.setValue(byID("sweep-split"), "WALK_FORWARD")
		pro.setValue(byID("sweep-folds"), "")
		pro.run("submit", chromedp.Click(byID("sweep-submit")), chromedp.WaitVisible(byID("sweep-error")+`[data-field="split.folds"]`))
		if got := pro.text(byID("sweep-error")); !strings.Contains(got, "split.folds is missing") {
			t.Errorf("empty folds: %q", got)
		}
	})

	t.Run("sweeps: a 429 shows the sweep that holds the slot", func(t *testing.T) {
		pro := pro.in(t)
		pro.visit("#/sweeps", "sweeps") // the list as it is: no sweep running
		// A long sweep started by the API, after the page loaded.
		status, m := call(t, http.MethodPost, base+"/v1/sweeps", "X-API-Key: ud_dev_pro", `{"strategy":{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.45}],
			"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100},
			"parameters":[{"path":"/entryConditions/0/value","range":{"from":0.05,"to":0.95,"step":0.05}},{"path":"/exitConditions/0/value","range":{"from":0.5,"to":0.95,"step":0.05}}],
			"search":{"kind":"GRID"},"markets":{"coin":"BTC","market_type":"5m","count":100}}`)
		data, _ := m["data"].(map[string]any)
		id, _ := data["sweep_id"].(string)
		if status != http.StatusAccepted || id == "" {
			t.Fatalf("start a sweep: %d %v", status, m)
		}
		defer call(t, http.MethodDelete, base+"/v1/sweeps/"+id, "X-API-Key: ud_dev_pro", "")
		pro.eval(`document.querySelector('[data-testid=sweep-form]').requestSubmit(), true`, &ok)
		pro.run("the answer", chromedp.WaitVisible(byID("sweep-error")+`[data-status="429"]`))
		var sw sweepAnswer
		apiGet(t, base, "/v1/sweeps/"+id, "ud_dev_pro", &sw)
		if sw.Data.Status != "RUNNING" && sw.Data.Status != "QUEUED" {
			t.Skipf("the API's sweep ended (%s) before the page asked", sw.Data.Status)
		}
		ctx, cancel := context.WithTimeout(pro.ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.WaitVisible(byID("sweep-row")+`[data-id="`+id+`"]`)); err != nil {
			t.Errorf("after the 429 (%q) Your sweeps does not list %s: %v", pro.text(byID("sweep-error")), id, err)
		}
	})
}

// billingAnswer is what the browser tests read of GET /v1/account/billing:
// each plan's sweep limits.
type billingAnswer struct {
	Data struct {
		Plans []struct {
			Tier   string
			Sweeps *struct {
				MaxTrials  int `json:"max_trials"`
				MaxMarkets int `json:"max_markets"`
				MaxReplays int `json:"max_replays"`
				Concurrent int
			}
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestDashboardWonLostInNode: the best trial's markets won and lost leave
// the embargo market out (it is neither train nor test).
func TestDashboardWonLostInNode(t *testing.T) {
	t.Parallel()
	node, tsPath := nodeTypeScript(t)
	src, _ := filepath.Abs("../../web/src/sweep.ts")
	calls, _ := json.Marshal([][]any{{"wonLost", []any{[]map[string]any{
		{"slug": "a", "pnl": 5, "test": false}, {"slug": "b", "pnl": -2, "test": false},
		{"slug": "c", "pnl": 7, "test": false, "embargo": true}, {"slug": "d", "pnl": -1, "test": false, "embargo": true},
		{"slug": "e", "pnl": 3, "test": true}, {"slug": "f", "pnl": 0, "test": true},
	}}}})
	cmd := exec.Command(node, "-e", tsSweepRunner, tsPath, src)
	cmd.Stdin = bytes.NewReader(calls)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	if string(out) != `[[2,1]]` {
		t.Errorf("won / lost %s, want [[2,1]]: the two embargo markets are neither", out)
	}
}

// TestIntlFixed holds intlFixed to what Node's Intl.NumberFormat wrote for
// the same numbers (en-US, d fraction digits, no grouping).
func TestIntlFixed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		x    float64
		d    int
		want string
	}{{0.215, 2, "0.22"}, {1.005, 2, "1.01"}, {8.785, 2, "8.79"}, {2.5, 0, "3"}, {0.125, 2, "0.13"},
		{1234.5, 2, "1234.50"}, {0.0049999, 2, "0.00"}, {1e21, 2, "1000000000000000000000.00"}} {
		if got := intlFixed(c.x, c.d); got != c.want {
			t.Errorf("intlFixed(%v, %d) = %s, want %s", c.x, c.d, got, c.want)
		}
	}
}
