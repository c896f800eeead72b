package collect_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// hourScheme gives every series one window of an hour that began a little
// before the test, so that no market ends while a test runs.
func hourScheme() polytest.QuickScheme {
	return polytest.QuickScheme{Origin: time.Now().Add(-10 * time.Second).Truncate(time.Second), Length: time.Hour}
}

var twoSeries = []collect.Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.ETH, MarketType: store.M15}}

// TestCollectorSurvivesUpstreamFailures puts the collector through what
// real upstreams do (rate limits with Retry-After, 5xx, timeouts, dropped
// connections, malformed bodies, nonsense inside well-formed ones) and
// checks that it records nothing while they last, backs off, logs each gap
// once when it opens and once when it closes, and resumes by itself.
func TestCollectorSurvivesUpstreamFailures(t *testing.T) {
	scheme := hourScheme()
	r := newRig(t, memory.New(), scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now)
	btc := r.poly.AddWindow(store.BTC, store.M5, now)
	// Discovery meets a 500, an HTML error page and a dropped connection
	// before Gamma answers.
	r.poly.Fail(polytest.RouteEvents, polytest.Fault{Status: 500}, polytest.Fault{Body: "<html>Bad gateway</html>"}, polytest.Fault{Drop: true})

	cfg := r.config(scheme, twoSeries)
	// A tight MaxLag keeps the windows in which nothing may be recorded
	// long: an answer the upstream gave after it recovered is a real
	// recording of the instant it was asked for, if within MaxLag.
	cfg.MaxLag = 400 * time.Millisecond
	_, stop := start(t, cfg)
	ctx := context.Background()
	slugs := make([]string, len(twoSeries))
	for i, sr := range twoSeries {
		start, _ := scheme.Window(sr.Coin, sr.MarketType, now)
		slugs[i] = collect.Slug(sr.Coin, sr.MarketType, start)
	}
	count := func() int {
		n := 0
		for _, s := range slugs {
			_, total, err := r.st.ListSnapshots(ctx, s, store.SnapshotQuery{Limit: 1})
			if err == nil {
				n += total
			}
		}
		return n
	}
	// resumed waits for snapshots to flow again and every gap to be
	// closed, so that the next outage opens a gap (and logs its cause) of
	// its own.
	resumed := func(what string) {
		n := count()
		// Generous: beside the rest of a -race CI run (load 20 on 2
		// cores) a 400 ms MaxLag opens gaps of lateness that take a while
		// to close all at once.
		eventually(t, 3*time.Minute, "snapshots after "+what, func() bool {
			logs := r.logs.String()
			return count() >= n+2*len(slugs) &&
				strings.Count(logs, `msg="gap opened`) == strings.Count(logs, `msg="gap closed"`)
		})
	}
	resumed("discovery through Gamma's failures")
	if !strings.Contains(r.logs.String(), "retrying") {
		t.Errorf("discovery's retries are not logged:\n%s", r.logs)
	}

	type window struct {
		what    string
		on, off time.Time
	}
	var outages []window
	outage := func(what string, on, off func()) {
		w := window{what: what, on: time.Now()}
		on()
		time.Sleep(1200 * time.Millisecond)
		off()
		w.off = time.Now()
		outages = append(outages, w)
		resumed(what)
	}

	outage("a 429 asking for a second's wait",
		func() {
			books := r.poly.Hits(polytest.RouteBooks)
			r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 429, RetryAfter: time.Second})
			// Requests already on their way when the limit began are
			// refused too (on a loaded machine one may reach the fake a few
			// hundred milliseconds late). Once a refusal is in, nothing may
			// be sent until its second is over: at 100 ms a tick, 4
			// requests would go in the 400 ms watched here without the wait.
			eventually(t, 30*time.Second, "a refused book request", func() bool { return r.poly.Hits(polytest.RouteBooks) > books })
			time.Sleep(450 * time.Millisecond)
			held := r.poly.Hits(polytest.RouteBooks)
			time.Sleep(400 * time.Millisecond)
			if n := r.poly.Hits(polytest.RouteBooks) - held; n > 0 {
				t.Errorf("%d book requests sent while a 429 asked for a second's wait", n)
			}
		}, func() { r.poly.Recover(polytest.RouteBooks) })
	outage("503s",
		func() { r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 503}) },
		func() { r.poly.Recover(polytest.RouteBooks) })
	outage("answers slower than MaxLag",
		func() { r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Delay: 3 * time.Second}) },
		func() { r.poly.Recover(polytest.RouteBooks) })
	outage("dropped connections",
		func() { r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Drop: true}) },
		func() { r.poly.Recover(polytest.RouteBooks) })
	outage("truncated JSON",
		func() {
			r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Body: `[{"asset_id":"1","bids":[{"price":"0.`})
		},
		func() { r.poly.Recover(polytest.RouteBooks) })
	outage("books that make no sense",
		func() {
			r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Body: `[{"asset_id":"` + btc.UpToken + `","bids":[{"price":"2","size":"1"}],"asks":[]}]`})
		},
		func() { r.poly.Recover(polytest.RouteBooks) })
	outage("Binance's ticker failing",
		func() { r.bin.FailAlways(binancetest.RouteTicker, binancetest.Fault{Status: 500}) },
		func() { r.bin.Recover(binancetest.RouteTicker) })
	stop()

	for i, slug := range slugs {
		snaps := allSnapshots(t, r.st, slug)
		start, end := scheme.Window(twoSeries[i].Coin, twoSeries[i].MarketType, now)
		checkSnapshots(t, r.bin, twoSeries[i].Coin, slug, snaps, cfg.Interval, start, end)
		for _, s := range snaps {
			for _, w := range outages {
				if s.Time.After(w.on.Add(cfg.Interval)) && s.Time.Before(w.off.Add(-cfg.MaxLag)) {
					t.Errorf("%s: snapshot at %v, during %s [%v, %v): a gap must stay a gap", slug, s.Time, w.what, w.on, w.off)
				}
			}
		}
	}
	logs := r.logs.String()
	if opened, closed := strings.Count(logs, `msg="gap opened`), strings.Count(logs, `msg="gap closed"`); opened < len(outages) || closed < len(outages) {
		t.Errorf("%d gaps opened and %d closed in the log, want at least %d each:\n%s", opened, closed, len(outages), logs)
	}
	for _, want := range [][]string{{"429 Too Many Requests"}, {"503 Service Unavailable"},
		{"context deadline exceeded", "still under way"}, {"EOF", "connection reset"}, {"malformed body"},
		{"outside (0, 1)"}, {"binance-spot: GET /api/v3/ticker/price"}} {
		if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(logs, w) }) {
			t.Errorf("the log never says %q:\n%s", want, logs)
		}
	}
}

// TestCollectorSurvivesStoreFailures checks that snapshots the store
// refuses for a while are kept and written once it recovers.
func TestCollectorSurvivesStoreFailures(t *testing.T) {
	scheme := hourScheme()
	st := &flakyStore{Store: memory.New()}
	r := newRig(t, st, scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	c, stop := start(t, cfg)
	eventually(t, 60*time.Second, "first snapshots", func() bool { return c.Stats().Snapshots > 0 })
	st.failing.Store(true)
	time.Sleep(time.Second)
	held := c.Stats().Snapshots
	st.failing.Store(false)
	// The next flush writes what was kept: within 500 ms on a quiet
	// machine, later on a loaded one, never not at all.
	eventually(t, 60*time.Second, "writes after the store recovered", func() bool { return c.Stats().Snapshots > held })
	time.Sleep(500 * time.Millisecond)
	stopped := time.Now()
	stop()

	start, _ := scheme.Window(store.BTC, store.M5, now)
	snaps := allSnapshots(t, r.st, collect.Slug(store.BTC, store.M5, start))
	// Every instant of the store's outage was recorded and written later:
	// an instant missing is one the collector dropped (a loaded machine
	// answers some late) and counted, never one the store's failure lost.
	// (Instants whose requests were still under way at the stop are
	// left out: shutting down abandons them.)
	missing := 0
	for i := 1; i < len(snaps) && snaps[i].Time.Before(stopped.Add(-cfg.MaxLag)); i++ {
		missing += int(snaps[i].Time.Sub(snaps[i-1].Time)/cfg.Interval) - 1
	}
	dropped := int64(0)
	for _, n := range c.DroppedInstants() {
		dropped += n
	}
	if int64(missing) > dropped {
		t.Errorf("%d instants missing between the first and last snapshot, %d dropped and counted: snapshots were lost while the store failed", missing, dropped)
	}
	if c.Stats().Snapshots <= held || !strings.Contains(r.logs.String(), "kept for the next flush") {
		t.Errorf("writes after the store recovered: %d then %d; log:\n%s", held, c.Stats().Snapshots, r.logs)
	}
	// An outage fails every flush (ten in that second) for every market:
	// each market's failure is logged once per WarnEvery (30 s), not once
	// a flush, or a database restart buries the log.
	if n := strings.Count(r.logs.String(), "writing snapshots failed"); n > len(twoSeries) {
		t.Errorf("%d warnings of failed snapshot writes for %d markets in a second's outage, want one a market:\n%s", n, len(twoSeries), r.logs)
	}
}
