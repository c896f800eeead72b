package collect_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// jumpClock is a clock that runs at real speed and can be moved forward,
// as a stalled process sees its clock move.
type jumpClock struct{ offset atomic.Int64 }

func (j *jumpClock) now() time.Time       { return time.Now().Add(time.Duration(j.offset.Load())) }
func (j *jumpClock) jump(d time.Duration) { j.offset.Add(int64(d)) }

// liveSlugs returns the SPEC slugs of the series' windows at t.
func liveSlugs(scheme collect.SlugScheme, series []collect.Series, t time.Time) []string {
	out := make([]string, len(series))
	for i, sr := range series {
		start, _ := scheme.Window(sr.Coin, sr.MarketType, t)
		out[i] = collect.Slug(sr.Coin, sr.MarketType, start)
	}
	return out
}

// snapshotCount is how many snapshots the store holds of the market.
func snapshotCount(t testing.TB, st store.Store, slug string) int {
	t.Helper()
	_, total, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Limit: 1})
	if err != nil {
		return 0
	}
	return total
}

// TestSkippedInstantsAreCounted moves the collector's clock forward by
// three seconds, as a process stalled that long sees it: the instants of
// the grid it passed over are lost for every market at once, and each is
// counted (DroppedInstants, exported on /metrics) and the stretch logged
// once.
func TestSkippedInstantsAreCounted(t *testing.T) {
	t.Parallel()
	scheme := hourScheme()
	clock := &jumpClock{}
	r := newClockedRig(t, memory.New(), scheme, clock.now)
	now := clock.now()
	r.poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	c, _ := start(t, cfg)
	slug := liveSlugs(scheme, twoSeries, now)[0]
	eventually(t, 30*time.Second, "first snapshots", func() bool { return snapshotCount(t, r.st, slug) > 0 })
	if n := c.DroppedInstants()[collect.DropStalled]; n != 0 {
		t.Logf("%d instants skipped before the jump (a loaded machine)", n)
	}
	before := c.DroppedInstants()[collect.DropStalled]
	clock.jump(3 * time.Second)
	// 3 s of a 100 ms grid: 29 instants strictly between the last handled
	// and the next.
	eventually(t, 30*time.Second, "the skipped instants counted", func() bool {
		return c.DroppedInstants()[collect.DropStalled]-before >= 29
	})
	// The count comes just before the log line: wait for the line too.
	eventually(t, 30*time.Second, "the skipped stretch logged", func() bool {
		return strings.Contains(r.logs.String(), "snapshot instants skipped")
	})
}

// TestRecoveryAfterEveryUpstreamFails takes every upstream down (Gamma,
// the CLOB's REST and websocket, Binance) for a few seconds, long enough
// for the retries to back off to their cap, and brings them back: the
// collector resumes recording by itself, and the outage is one recorded
// gap per market. How soon it resumes is bounded by the backoff's cap
// (TestBackoffCapsRecovery); the figure measured here is logged, not
// asserted, since a loaded machine stretches it.
func TestRecoveryAfterEveryUpstreamFails(t *testing.T) {
	t.Parallel()
	scheme := hourScheme()
	r := newRig(t, memory.New(), scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	cfg.Backoff = collect.DefaultBackoff()
	c, _ := start(t, cfg)
	slugs := liveSlugs(scheme, twoSeries, now)
	eventually(t, 30*time.Second, "first snapshots", func() bool { return snapshotCount(t, r.st, slugs[0]) > 0 })

	down := polytest.Fault{Status: 503}
	polyRoutes := []string{polytest.RouteEvents, polytest.RouteMarkets, polytest.RouteBook, polytest.RouteBooks, polytest.RouteWS}
	binRoutes := []string{binancetest.RouteSpotDepth, binancetest.RouteFuturesDepth, binancetest.RouteSpotTrades,
		binancetest.RouteFuturesTrades, binancetest.RouteTicker, binancetest.RouteKlines}
	for _, route := range polyRoutes {
		r.poly.FailAlways(route, down)
	}
	for _, route := range binRoutes {
		r.bin.FailAlways(route, down)
	}
	r.poly.DropSockets()
	wentDown := time.Now()
	// Long enough for every retry schedule to reach its cap.
	eventually(t, 60*time.Second, "the outage noticed", func() bool {
		return time.Since(wentDown) > 4*time.Second && c.DroppedInstants()[collect.DropUpstream] > 0
	})
	for _, route := range polyRoutes {
		r.poly.Recover(route)
	}
	for _, route := range binRoutes {
		r.bin.Recover(route)
	}
	back := time.Now()
	eventually(t, 60*time.Second, "snapshots after the upstreams are back", func() bool {
		for _, s := range slugs {
			snaps, _, err := r.st.ListSnapshots(context.Background(), s, store.SnapshotQuery{Limit: 1})
			if err != nil || len(snaps) == 0 || !snaps[0].Time.After(back) {
				return false
			}
		}
		return true
	})
	first, _, _ := r.st.ListSnapshots(context.Background(), slugs[0], store.SnapshotQuery{Limit: 1, From: &back, Ascending: true})
	if len(first) > 0 {
		t.Logf("recording resumed %v after the upstreams were back", first[0].Time.Sub(back).Round(time.Millisecond))
	}
	eventually(t, 30*time.Second, "the outage recorded as a gap", func() bool {
		for _, g := range r.act.gapsOf(slugs[0]) {
			if !g.From.After(wentDown) && g.To.After(wentDown.Add(3*time.Second)) {
				return true
			}
		}
		return false
	})
}

// TestPriceToBeatRefreshedUntilPublished lists live markets whose
// priceToBeat Gamma publishes a few seconds after the collector has found
// them (in production about a minute into the window): the collector looks
// again until it appears and stores it, long before settlement.
func TestPriceToBeatRefreshedUntilPublished(t *testing.T) {
	t.Parallel()
	scheme := hourScheme() // windows began ≤ 11 s ago and last an hour
	r := newRig(t, memory.New(), scheme)
	poly := polytest.New(t, polytest.Options{Scheme: scheme, PriceToBeatAfter: 15 * time.Second})
	now := time.Now()
	poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	cfg.Upstreams.Gamma, cfg.Upstreams.CLOB = poly.URL, poly.URL
	start(t, cfg)
	ctx := context.Background()
	slugs := liveSlugs(scheme, twoSeries, now)
	eventually(t, 30*time.Second, "markets discovered", func() bool {
		for _, s := range slugs {
			if _, err := r.st.GetMarket(ctx, s); err != nil {
				return false
			}
		}
		return true
	})
	for _, up := range poly.Markets() {
		slug := polytest.SlugOf(&up)
		want, _ := poly.ReferencePrices(&up)
		eventually(t, 60*time.Second, "price_to_beat of "+slug, func() bool {
			m, err := r.st.GetMarket(ctx, slug)
			return err == nil && m.PriceToBeat != nil
		})
		m, _ := r.st.GetMarket(ctx, slug)
		if *m.PriceToBeat != want || m.Resolved() || m.FinalPrice != nil {
			t.Errorf("%s: price_to_beat %v (want %v), resolved %v, final price %v", slug, *m.PriceToBeat, want, m.Resolved(), m.FinalPrice)
		}
	}
}

// TestBinanceBanDoesNotStallDiscovery bans the collector from Binance spot
// (a 418 with a ten-minute Retry-After on the 1-second klines that start
// prices come from) while markets keep opening on Polymarket: the markets
// of later windows are still found. The start-price lookups, made in the
// discovery round, slept the ban out inside that round, and no market
// opening in the meantime was found or recorded.
func TestBinanceBanDoesNotStallDiscovery(t *testing.T) {
	t.Parallel()
	now := time.Now()
	// Windows of 4 s: a live market asks for its start price 2 s in.
	scheme := polytest.QuickScheme{Origin: now.Add(-10 * time.Second).Truncate(time.Second), Length: 4 * time.Second}
	series := []collect.Series{{Coin: store.BTC, MarketType: store.M5}}
	r := newRig(t, memory.New(), scheme)
	r.poly.AddRange(series, now, now.Add(time.Minute))
	r.bin.FailAlways(binancetest.RouteKlines, binancetest.Fault{Status: http.StatusTeapot, RetryAfter: 10 * time.Minute})
	start(t, r.config(scheme, series))
	eventually(t, 30*time.Second, "the ban met", func() bool { return r.bin.Hits(binancetest.RouteKlines) > 0 })
	met := time.Now()
	later := liveSlugs(scheme, series, met.Add(12*time.Second))[0]
	eventually(t, 40*time.Second, "a market opening after the ban ("+later+") found", func() bool {
		_, err := r.st.GetMarket(context.Background(), later)
		return err == nil
	})
	if n := r.bin.Hits(binancetest.RouteKlines); n != 1 {
		t.Errorf("the banned klines were asked %d times during the ban; want once", n)
	}
}

// downLive is a LiveExchange whose latest-depth writes fail, as Redis
// down does.
type downLive struct{ *memory.LiveExchange }

func (downLive) SetLatestDepth(context.Context, store.Coin, store.ExchangeKind, store.DepthSnapshot) error {
	return store.ErrUnavailable
}

// TestDepthHistoryRecordedWhileRedisIsDown: with the latest depth unable to
// reach Redis, the BTCUSDT books Binance answered still go into the depth
// history, which Postgres keeps, and the failure is logged. A Redis outage
// left a hole in /v1/btc/{spot,future}/snapshots as long as itself.
func TestDepthHistoryRecordedWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	scheme := hourScheme()
	r := newRig(t, memory.New(), scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	cfg.Live = downLive{r.live}
	start(t, cfg)
	ctx := context.Background()
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		eventually(t, 30*time.Second, "BTCUSDT "+string(k)+" depth history", func() bool {
			_, n, err := r.st.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: k})
			return err == nil && n >= 3
		})
	}
	eventually(t, 30*time.Second, "the latest depth's failure logged", func() bool {
		return strings.Contains(r.logs.String(), "keep latest depth")
	})
}
