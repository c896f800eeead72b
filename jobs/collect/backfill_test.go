package collect_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// backfillRig is a websocket rig whose collector writes trades and gaps to
// its store (which lists trades and removes gaps) and asks the fake's
// Data API for the trades a gap missed.
func backfillRig(t *testing.T, st store.Store) *wsRig {
	t.Helper()
	r := newWSRigOn(t, st)
	r.cfg.Activity = nil // the memory store's own
	r.cfg.Upstreams.PolymarketData = r.poly.URL
	r.cfg.BackfillDelay = time.Second
	return r
}

// outage cuts the websocket (refusing new connections) until REST has
// kept the snapshots going for over 5 s, then lets it connect again.
func (r *wsRig) outage(t *testing.T) (down time.Time) {
	t.Helper()
	r.poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
	r.poly.DropSockets()
	down = time.Now()
	n := r.count()
	eventually(t, 60*time.Second, "snapshots from REST while the socket is down", func() bool {
		return time.Since(down) > 5*time.Second && r.count() > n
	})
	r.poly.Recover(polytest.RouteWS)
	return down
}

// timesRecorded counts the market's recorded trades by transaction hash.
func (r *wsRig) timesRecorded(t *testing.T, slug string) map[string]int {
	t.Helper()
	recorded, _, err := r.st.ListMarketTrades(context.Background(), slug, store.MarketTradeQuery{Ascending: true})
	if err != nil {
		t.Fatal(err)
	}
	times := map[string]int{}
	for _, tr := range recorded {
		times[tr.TxHash]++
	}
	return times
}

// tradesGaps returns the market's gaps of kind trades.
func (r *wsRig) tradesGaps(t *testing.T, slug string) []store.Gap {
	t.Helper()
	gaps, err := r.st.ListGaps(context.Background(), slug)
	if err != nil {
		t.Fatalf("gaps of %s: %v", slug, err)
	}
	var out []store.Gap
	for _, g := range gaps {
		if g.Kind == store.GapTrades {
			out = append(out, g)
		}
	}
	return out
}

// awaitTrades waits until the websocket has brought a few trades of
// every market the rig lists.
func (r *wsRig) awaitTrades(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, "trades recorded from the websocket", func() bool {
		for _, slug := range r.slugs() {
			if _, n, err := r.st.ListMarketTrades(context.Background(), slug, store.MarketTradeQuery{Limit: 1}); err != nil || n < 3 {
				return false
			}
		}
		return true
	})
}

// gapsRecorded counts the trades gaps the rig's collectors recorded: the
// writer logs each.
func (r *wsRig) gapsRecorded() int {
	return strings.Count(r.logs.String(), "gap recorded: a live market's trades may be missing")
}

// awaitBackfilled waits until at least more trades gaps were recorded
// beyond the count before, and c has backfilled as many gaps as were
// recorded beyond the count base, plus stored (gaps of earlier runs): on
// a loaded machine the socket's first connection can take long enough to
// leave a gap of its own, which is backfilled too.
func (r *wsRig) awaitBackfilled(t *testing.T, c *collect.Collector, before, base, more, stored int) {
	t.Helper()
	eventually(t, 60*time.Second, "every trades gap backfilled", func() bool {
		rec := r.gapsRecorded()
		return rec-before >= more && c.Stats().GapsBackfilled >= int64(rec-base+stored)
	})
}

// mute silences the websocket's market data (PONGs go on) until the
// collector makes a new connection, which is served.
func (r *wsRig) mute(t *testing.T) (down time.Time) {
	t.Helper()
	conns := r.poly.WSStats().Connections
	r.poly.MuteSockets()
	down = time.Now()
	eventually(t, 60*time.Second, "a new connection after the mute", func() bool {
		return r.poly.WSStats().Connections > conns && time.Since(down) > 5*time.Second
	})
	return down
}

// TestTradeGapsBackfilled cuts the websocket for over 5 s (dropped, and
// new connections refused) or mutes it (until the collector notices and
// connects again) while the fake's markets go on trading and REST keeps
// the books: once the socket is back, the trades of the outage come from
// the Data API. Every trade the fake made from the first recorded to the
// last is then recorded exactly once (those of the outage at the Data
// API's whole second, the others as the socket sent them), and no trades
// gap is left: on the memory store, and dropped on Postgres too.
func TestTradeGapsBackfilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		st     func(t *testing.T) store.Store
		outage func(*wsRig, *testing.T) time.Time
	}{
		{"dropped", stores(t)["memory"], (*wsRig).outage},
		{"muted", stores(t)["memory"], (*wsRig).mute},
		{"dropped-postgres", stores(t)["postgres"], (*wsRig).outage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testBackfill(t, backfillRig(t, tc.st(t)), tc.outage)
		})
	}
}

func testBackfill(t *testing.T, r *wsRig, outage func(*wsRig, *testing.T) time.Time) {
	c, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	r.awaitTrades(t)
	before := r.gapsRecorded()
	down := outage(r, t)
	r.awaitBackfilled(t, c, before, 0, len(r.slugs()), 0)
	recovered := time.Now()
	eventually(t, 60*time.Second, "trades recorded from the websocket again", func() bool {
		for _, slug := range r.slugs() {
			last, _, err := r.st.ListMarketTrades(context.Background(), slug, store.MarketTradeQuery{Limit: 1})
			if err != nil || len(last) == 0 || last[0].Time.Before(recovered.Add(2*time.Second)) {
				return false
			}
		}
		return true
	})
	stop()

	ctx := context.Background()
	markets := r.poly.Markets()
	backfilled := 0
	for _, slug := range r.slugs() {
		// The outage's gap is backfilled and removed. A stretch the
		// collector found mute after the socket came back (a loaded
		// machine starving its reader) is recorded honestly and left for
		// the next start's backfill: it is no part of the outage.
		for _, g := range r.tradesGaps(t, slug) {
			if g.From.Before(recovered) {
				t.Errorf("%s: trades gap %+v of the outage left after the backfill", slug, g)
			}
		}
		var up polytest.Market
		for _, m := range markets {
			if polytest.SlugOf(&m) == slug {
				up = m
			}
		}
		recorded, _, err := r.st.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true})
		if err != nil || len(recorded) == 0 {
			t.Fatalf("%s: %d trades recorded (%v)", slug, len(recorded), err)
		}
		// The span recorded: from the first trade to a second before the
		// last (the socket's last messages may be cut by the stop).
		first, last := recorded[0].Time, recorded[len(recorded)-1].Time.Add(-time.Second)
		if !first.Before(down) || !last.After(down.Add(5*time.Second)) {
			t.Fatalf("%s: trades recorded from %v to %v, not around the outage at %v", slug, first, last, down)
		}
		byHash := map[string][]store.MarketTrade{}
		for _, tr := range recorded {
			byHash[tr.TxHash] = append(byHash[tr.TxHash], tr)
		}
		tape := append(r.poly.Tape(up.UpToken), r.poly.Tape(up.DownToken)...)
		made, inOutage := map[string]bool{}, 0
		for _, want := range tape {
			made[want.TxHash] = true
			// The first trade recorded came from the socket, before the
			// outage: one made before it (in its second even) may have
			// come before the socket subscribed to its token.
			sec := want.Time.Truncate(time.Second)
			if want.Time.Before(first) || want.Time.After(last) {
				continue
			}
			got := byHash[want.TxHash]
			if len(got) != 1 {
				t.Errorf("%s: trade %+v recorded %d times: %+v", slug, want, len(got), got)
				continue
			}
			g := got[0]
			switch {
			case g.Outcome != want.Outcome || g.Side != want.Side || g.Price != want.Price || g.Size != want.Size:
				t.Errorf("%s: trade recorded as %+v, made as %+v", slug, g, want)
			case g.Time.Equal(sec) && !g.Time.Equal(want.Time):
				backfilled++ // from the Data API, at its second
			case !g.Time.Equal(want.Time):
				t.Errorf("%s: trade recorded at %v, made at %v", slug, g.Time, want.Time)
			}
			if want.Time.After(down.Add(time.Second)) && want.Time.Before(down.Add(5*time.Second)) {
				inOutage++
			}
		}
		if inOutage == 0 {
			t.Errorf("%s: the fake made no trade during the outage; the test proves nothing", slug)
		}
		for _, g := range recorded {
			if !made[g.TxHash] {
				t.Errorf("%s: recorded trade %+v was never made", slug, g)
			}
		}
	}
	if backfilled == 0 {
		t.Errorf("no trade recorded at the Data API's second: nothing came from the backfill")
	}
	if st := c.Stats(); st.BackfilledTrades == 0 || st.GapsBackfilled < int64(len(r.slugs())) {
		t.Errorf("stats %+v: want backfilled trades and one gap backfilled per market", st)
	}
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(line, "trades gap") {
			t.Log(line)
		}
	}
	if !strings.Contains(r.logs.String(), "trades gap backfilled") {
		t.Errorf("no log line says the gaps were backfilled:\n%s", r.logs)
	}
}

// TestTradeGapsStayWhenSourceFails: with the Data API failing, the trades
// gap of an outage stays, a log line per gap says why, and nothing is
// counted as backfilled.
func TestTradeGapsStayWhenSourceFails(t *testing.T) {
	t.Parallel()
	r := backfillRig(t, memory.New())
	r.cfg.BackfillAttempts = 2
	r.poly.FailAlways(polytest.RouteTrades, polytest.Fault{Status: 503})
	c, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	down := r.outage(t)
	const why = "trades gap stays: the trades source failed"
	eventually(t, 60*time.Second, "the backfill given up", func() bool {
		return strings.Count(r.logs.String(), why) >= len(r.slugs())
	})
	stop()
	for _, slug := range r.slugs() {
		gaps, found := r.tradesGaps(t, slug), false
		for _, g := range gaps {
			found = found || g.From.Before(down.Add(3*time.Second)) && g.To.After(down.Add(5*time.Second))
		}
		if !found {
			t.Errorf("%s: trades gaps %+v, want the outage's after %v", slug, gaps, down)
		}
	}
	logs := r.logs.String()
	if n := strings.Count(logs, why); n != len(r.slugs()) {
		t.Logf("%d lines say %q, one per gap (another than the outage's on a loaded machine)", n, why)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, why) && !strings.Contains(line, "503") {
			t.Errorf("the line does not name the failure: %s", line)
		}
	}
	if r.poly.Hits(polytest.RouteTrades) == 0 {
		t.Errorf("the Data API was never asked")
	}
	// Each gap tried twice (BackfillAttempts): once more after a line that
	// says so, and given up after the second.
	if n := strings.Count(logs, "trades gap not backfilled yet: the trades source failed"); n < len(r.slugs()) {
		t.Errorf("%d lines say a gap's backfill is tried again, want one a gap:\n%s", n, logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, why) && !strings.Contains(line, "attempts=2") {
			t.Errorf("the line does not say how many times the backfill was tried: %s", line)
		}
	}
	if st := c.Stats(); st.BackfilledTrades != 0 || st.GapsBackfilled != 0 {
		t.Errorf("stats %+v: nothing can have been backfilled", st)
	}
}

// TestTradeGapsBackfillTriedAgain: the Data API fails the first asks of
// the outage's gaps and then answers; the backfills tried again fill every
// gap in the same run.
func TestTradeGapsBackfillTriedAgain(t *testing.T) {
	t.Parallel()
	r := backfillRig(t, memory.New())
	c, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	// Three: the upstream layer itself asks three times before failing.
	r.poly.Fail(polytest.RouteTrades, polytest.Fault{Status: 503}, polytest.Fault{Status: 503}, polytest.Fault{Status: 503})
	before := r.gapsRecorded()
	r.outage(t)
	recovered := time.Now() // the socket is back
	r.awaitBackfilled(t, c, before, 0, len(r.slugs()), 0)
	stop()
	for _, slug := range r.slugs() {
		// The outage's gap is backfilled and removed. A stretch the
		// collector found mute after the socket came back (a loaded
		// machine starving its reader) is recorded honestly and left for
		// the next start's backfill: it is no part of the outage.
		for _, g := range r.tradesGaps(t, slug) {
			if g.From.Before(recovered) {
				t.Errorf("%s: trades gap %+v of the outage left after the backfill", slug, g)
			}
		}
	}
	if logs := r.logs.String(); !strings.Contains(logs, "trades gap not backfilled yet: the trades source failed") {
		t.Errorf("no log line says a failed backfill is tried again:\n%s", logs)
	}
}

// TestTradeGapsBackfilledAtNextStart: a collector whose backfill failed
// (the Data API down, one attempt) stops with its trades gaps stored; the
// next collector on the store, with the Data API back, finds them at its
// start and backfills them: no gap is left, and every trade the fake made
// inside the gaps is recorded exactly once.
func TestTradeGapsBackfilledAtNextStart(t *testing.T) {
	t.Parallel()
	r := backfillRig(t, memory.New())
	r.cfg.BackfillAttempts = 1
	r.poly.FailAlways(polytest.RouteTrades, polytest.Fault{Status: 503})
	_, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	r.outage(t)
	const why = "trades gap stays: the trades source failed"
	eventually(t, 60*time.Second, "the backfill given up", func() bool {
		return strings.Count(r.logs.String(), why) >= len(r.slugs())
	})
	// Stopped before the outage's gap was recorded, the collector records
	// it as it stops: either way it is stored.
	stop()
	left, stored := map[string][]store.Gap{}, 0
	for _, slug := range r.slugs() {
		if left[slug] = r.tradesGaps(t, slug); len(left[slug]) == 0 {
			t.Fatalf("%s: no trades gap stored after the failed backfill", slug)
		}
		stored += len(left[slug])
	}

	r.poly.Recover(polytest.RouteTrades)
	base := r.gapsRecorded()
	next, stopNext := start(t, r.cfg)
	// The next collector's own start is a trades gap until its socket
	// serves (1.1 s at a CI run's load, recorded after the stored gaps'
	// backfills were counted): its backfill is waited for too, before
	// the stop, by the gaps left rather than by counts.
	r.socketServes(t, 30*time.Second, "the next collector's websocket serving books")
	r.awaitBackfilled(t, next, base, base, 0, stored)
	eventually(t, 60*time.Second, "no trades gap left on the markets of the failed backfill", func() bool {
		for slug := range left {
			if len(r.tradesGaps(t, slug)) != 0 {
				return false
			}
		}
		return true
	})
	stopNext()
	if !strings.Contains(r.logs.String(), "trades gaps of earlier runs queued for their backfill") {
		t.Errorf("no log line says the earlier run's gaps were queued:\n%s", r.logs)
	}
	inGaps := 0
	for _, m := range r.poly.Markets() {
		slug := polytest.SlugOf(&m)
		gaps, ok := left[slug]
		if !ok {
			continue
		}
		if now := r.tradesGaps(t, slug); len(now) != 0 {
			t.Errorf("%s: trades gaps %+v left after the next start's backfill", slug, now)
		}
		times := r.timesRecorded(t, slug)
		for _, made := range append(r.poly.Tape(m.UpToken), r.poly.Tape(m.DownToken)...) {
			for _, g := range gaps {
				// Strictly inside the gap, a second clear of its ends: the
				// trades there came from nowhere but the backfill.
				if made.Time.After(g.From.Add(time.Second)) && made.Time.Before(g.To.Add(-time.Second)) {
					inGaps++
					if n := times[made.TxHash]; n != 1 {
						t.Errorf("%s: trade %+v inside the gap %v-%v recorded %d times", slug, made, g.From, g.To, n)
					}
				}
			}
		}
	}
	if inGaps == 0 {
		t.Errorf("the fake made no trade inside the gaps; the test proves nothing")
	}
}

// TestUpstreamsFromEnv: each URL defaults to the real upstream's and
// follows its environment variable; the optional upstreams (the websocket
// and the Data API) are off when their variable is set empty, and the
// others keep their default.
func TestUpstreamsFromEnv(t *testing.T) {
	lookup := func(env map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	if got := collect.UpstreamsFromEnv(lookup(nil)); got != collect.DefaultUpstreams() {
		t.Errorf("no variables: %+v, want the defaults", got)
	}
	got := collect.UpstreamsFromEnv(lookup(map[string]string{collect.EnvPolymarketDataURL: "http://127.0.0.1:1", collect.EnvGammaURL: "http://127.0.0.1:2"}))
	if got.PolymarketData != "http://127.0.0.1:1" || got.Gamma != "http://127.0.0.1:2" || got.CLOB != collect.DefaultCLOBURL {
		t.Errorf("set variables: %+v", got)
	}
	got = collect.UpstreamsFromEnv(lookup(map[string]string{collect.EnvPolymarketDataURL: "", collect.EnvPolymarketWSURL: "", collect.EnvGammaURL: ""}))
	if got.PolymarketData != "" || got.PolymarketWS != "" || got.Gamma != collect.DefaultGammaURL {
		t.Errorf("variables set empty: %+v, want the websocket and Data API off, Gamma its default", got)
	}
}

// TestTradesMissedWhileStoppedBackfilled stops the collector for over 5 s
// while the fake's markets go on trading, and starts another: the stretch
// no collector ran is a trades gap of each live market, backfilled from
// the Data API, so every trade made while none ran is recorded once and
// no trades gap is left.
func TestTradesMissedWhileStoppedBackfilled(t *testing.T) {
	t.Parallel()
	r := backfillRig(t, memory.New())
	_, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	r.awaitTrades(t)
	stop()
	down := time.Now()
	time.Sleep(5 * time.Second)
	up := time.Now()
	next, stopNext := start(t, r.cfg)
	// The trades made while no collector ran, strictly inside that
	// stretch (a second clear of its ends), by market.
	var markets []polytest.Market
	for _, m := range r.poly.Markets() {
		if slices.Contains(r.slugs(), polytest.SlugOf(&m)) {
			markets = append(markets, m)
		}
	}
	missed := func(m polytest.Market) []store.MarketTrade {
		var out []store.MarketTrade
		for _, made := range append(r.poly.Tape(m.UpToken), r.poly.Tape(m.DownToken)...) {
			if made.Time.After(down.Add(time.Second)) && made.Time.Before(up.Add(-time.Second)) {
				out = append(out, made)
			}
		}
		return out
	}
	eventually(t, 60*time.Second, "the trades made while no collector ran recorded, and no trades gap left", func() bool {
		for _, m := range markets {
			slug := polytest.SlugOf(&m)
			times := r.timesRecorded(t, slug)
			for _, made := range missed(m) {
				if times[made.TxHash] == 0 {
					return false
				}
			}
			if len(r.tradesGaps(t, slug)) != 0 {
				return false
			}
		}
		return true
	})
	if next.Stats().GapsBackfilled == 0 {
		t.Errorf("no gap backfilled: the trades came from elsewhere")
	}
	stopNext()

	inDowntime := 0
	for _, m := range markets {
		slug := polytest.SlugOf(&m)
		times := r.timesRecorded(t, slug)
		for _, made := range missed(m) {
			inDowntime++
			if n := times[made.TxHash]; n != 1 {
				t.Errorf("%s: trade %+v made while no collector ran recorded %d times", slug, made, n)
			}
		}
	}
	if inDowntime == 0 {
		t.Errorf("the fake made no trade while no collector ran; the test proves nothing")
	}
}

// TestBriefReconnectLosesNoTrade drops the websocket and keeps new
// connections refused for about a second, shorter than GapAfter: the
// stretch the socket was away is shorter than a recording gap, but the
// trades made in it never come on the new connection (its subscription
// sends trades from then on), so they come from the Data API. Every
// trade the fake made from the first recorded to the last is then
// recorded exactly once, and no trades gap is left.
func TestBriefReconnectLosesNoTrade(t *testing.T) {
	t.Parallel()
	r := backfillRig(t, memory.New())
	c, stop := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	r.awaitTrades(t)
	// Brief outages until the fake traded inside one (a trade a second a
	// token: the first nearly always does).
	var outages [][2]time.Time
	traded := func() bool {
		for _, m := range r.poly.Markets() {
			for _, tok := range []string{m.UpToken, m.DownToken} {
				for _, tr := range r.poly.Tape(tok) {
					for _, o := range outages {
						if tr.Time.After(o[0]) && tr.Time.Before(o[1]) {
							return true
						}
					}
				}
			}
		}
		return false
	}
	for len(outages) < 5 && !traded() {
		conns := r.poly.WSStats().Connections
		r.poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
		r.poly.DropSockets()
		down := time.Now()
		time.Sleep(time.Second)
		r.poly.Recover(polytest.RouteWS)
		eventually(t, 30*time.Second, "a new connection serving books", func() bool {
			return r.poly.WSStats().Connections > conns && r.poly.WSStats().Open > 0
		})
		outages = append(outages, [2]time.Time{down, time.Now()})
		time.Sleep(500 * time.Millisecond)
	}
	if !traded() {
		t.Fatal("the fake made no trade during the outages; the test proves nothing")
	}
	// The socket's trades after the last outage, and the backfill of
	// every trades gap recorded.
	back := time.Now()
	eventually(t, 60*time.Second, "trades recorded from the websocket again, and every trades gap backfilled", func() bool {
		for _, slug := range r.slugs() {
			last, _, err := r.st.ListMarketTrades(context.Background(), slug, store.MarketTradeQuery{Limit: 1})
			if err != nil || len(last) == 0 || last[0].Time.Before(back.Add(3*time.Second)) {
				return false
			}
		}
		return c.Stats().GapsBackfilled >= int64(r.gapsRecorded())
	})
	stop()

	for _, slug := range r.slugs() {
		if gaps := r.tradesGaps(t, slug); len(gaps) != 0 {
			t.Errorf("%s: trades gaps %+v left", slug, gaps)
		}
		var m polytest.Market
		for _, x := range r.poly.Markets() {
			if polytest.SlugOf(&x) == slug {
				m = x
			}
		}
		times := r.timesRecorded(t, slug)
		recorded, _, err := r.st.ListMarketTrades(context.Background(), slug, store.MarketTradeQuery{Ascending: true})
		if err != nil || len(recorded) == 0 {
			t.Fatalf("%s: %d trades recorded (%v)", slug, len(recorded), err)
		}
		first, last := recorded[0].Time, recorded[len(recorded)-1].Time.Add(-time.Second)
		for _, want := range append(r.poly.Tape(m.UpToken), r.poly.Tape(m.DownToken)...) {
			if want.Time.Before(first) || want.Time.After(last) {
				continue
			}
			if n := times[want.TxHash]; n != 1 {
				t.Errorf("%s: trade %+v (outages %v) recorded %d times", slug, want, outages, n)
			}
		}
	}
}
