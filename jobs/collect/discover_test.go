package collect_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDiscoveryFindsEverySeries checks discovery of every series by the
// slugs Polymarket uses today and by the older forms (hourly and daily
// without the year), and that the stored market carries what Gamma says
// beside SPEC's fields: upstream slug, fee schedule, tick, minimum order.
// A started window whose market is not listed is warned of once, naming
// the slugs tried, and counted.
func TestDiscoveryFindsEverySeries(t *testing.T) {
	t.Parallel()
	for _, old := range []bool{false, true} {
		scheme := collect.NewPolymarketScheme()
		// Half past the hour: no window of a series with a listed market
		// ends during the run, so each series lacks one market, or none.
		r := newRigAt(t, memory.New(), scheme, time.Now().Truncate(time.Hour).Add(30*time.Minute+time.Second))
		r.poly = polytest.New(t, polytest.Options{OldSlugs: old, Clock: r.clock})
		series := collect.AllSeries()
		now := r.clock()
		var listed, unlisted []collect.Series
		for _, sr := range series {
			if sr.Coin == store.SOL && sr.MarketType == store.H1 {
				unlisted = append(unlisted, sr) // never listed upstream
				continue
			}
			listed = append(listed, sr)
		}
		r.poly.AddAround(listed, now)
		cfg := r.config(scheme, series)
		cfg.Interval = time.Second
		c, stop := start(t, cfg)
		ctx := context.Background()
		for _, sr := range listed {
			up := r.poly.AddWindow(sr.Coin, sr.MarketType, now)
			want := scheme.Slugs(sr.Coin, sr.MarketType, up.Start)
			if old && (sr.MarketType == store.H1 || sr.MarketType == store.H24) {
				if up.Slug != want[1] || strings.Contains(up.Slug, "-2026") {
					t.Fatalf("old form %q, want %q", up.Slug, want[1])
				}
			} else if up.Slug != want[0] {
				t.Fatalf("%s listed as %q, want %q", sr, up.Slug, want[0])
			}
			var m store.Market
			eventually(t, 60*time.Second, sr.String()+" discovered", func() bool {
				var err error
				m, err = r.st.GetMarket(ctx, polytest.SlugOf(up))
				return err == nil
			})
			if m.UpstreamSlug != up.Slug || m.TakerFeeRate == nil || *m.TakerFeeRate != 0.07 || m.FeeExponent == nil || *m.FeeExponent != 1 ||
				m.MakerRebateRate == nil || *m.MakerRebateRate != 0.2 ||
				m.TickSize == nil || *m.TickSize != 0.01 || m.MinOrderSize == nil || *m.MinOrderSize != 5 || m.EventID != up.EventID {
				t.Errorf("%s (old forms %v): stored upstream %q fee %v^%v rebate %v tick %v min %v event %q; listed %q", sr, old, m.UpstreamSlug,
					ptrV(m.TakerFeeRate), ptrV(m.FeeExponent), ptrV(m.MakerRebateRate), ptrV(m.TickSize), ptrV(m.MinOrderSize), m.EventID, up.Slug)
			}
			if m.Resolved() || m.PriceToBeat != nil || m.FinalPrice != nil {
				t.Errorf("%s: a live market stored with settlement fields %+v", sr, m)
			}
		}
		eventually(t, 60*time.Second, "the unlisted series counted", func() bool { return c.MissingWindows() == int64(len(unlisted)) })
		time.Sleep(3 * cfg.DiscoveryInterval)
		stop()
		logs := r.logs.String()
		if n := strings.Count(logs, "its market is not found upstream"); n != len(unlisted) || c.MissingWindows() != int64(len(unlisted)) {
			t.Errorf("unlisted window warned %d times, counted %d; want once each for %d", n, c.MissingWindows(), len(unlisted))
		}
		start, _ := scheme.Window(store.SOL, store.H1, now)
		for _, s := range scheme.Slugs(store.SOL, store.H1, start) {
			if !strings.Contains(logs, s) {
				t.Errorf("the warning does not name the slug tried %q:\n%s", s, logs)
			}
		}
	}
}

// TestDiscoveryTrustsGammaTimes checks a market whose Gamma times differ
// from the series' arithmetic: Gamma's are kept (and the SPEC slug follows
// them), and the disagreement is logged.
func TestDiscoveryTrustsGammaTimes(t *testing.T) {
	t.Parallel()
	scheme := collect.NewPolymarketScheme()
	r := newRig(t, memory.New(), scheme)
	now := time.Now()
	ws, we := scheme.Window(store.BTC, store.H4, now)
	// Listed under the window's slug, but running an hour later.
	r.poly.Add(&polytest.Market{Slug: scheme.Slugs(store.BTC, store.H4, ws)[0], ID: "4242", EventID: "77", ConditionID: "0xc",
		Coin: store.BTC, MarketType: store.H4, Start: ws.Add(time.Hour), End: we.Add(time.Hour), UpToken: "9001", DownToken: "9002"})
	cfg := r.config(scheme, []collect.Series{{Coin: store.BTC, MarketType: store.H4}})
	_, stop := start(t, cfg)
	defer stop()
	want := collect.Slug(store.BTC, store.H4, ws.Add(time.Hour))
	eventually(t, 60*time.Second, "market stored", func() bool {
		m, err := r.st.GetMarket(context.Background(), want)
		return err == nil && m.StartTime.Equal(ws.Add(time.Hour)) && m.EndTime.Equal(we.Add(time.Hour))
	})
	if !strings.Contains(r.logs.String(), "keeping Gamma's") {
		t.Errorf("disagreement not logged:\n%s", r.logs)
	}
}

func ptrV[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDiscoveryAtAnotherTick: a live market found at another tick than
// markets open at (its change came before any collector heard it) enters
// its tick history from its discovery, so that a replay of what was
// recorded uses the tick in force; one found at the opening tick has no
// history.
func TestDiscoveryAtAnotherTick(t *testing.T) {
	t.Parallel()
	scheme := collect.NewPolymarketScheme()
	r := newRigAt(t, memory.New(), scheme, time.Now().Truncate(time.Hour).Add(30*time.Minute+time.Second))
	r.poly = polytest.New(t, polytest.Options{Clock: r.clock})
	series := []collect.Series{{Coin: store.BTC, MarketType: store.M15}, {Coin: store.ETH, MarketType: store.M15}}
	now := r.clock()
	fine := r.poly.AddWindow(store.BTC, store.M15, now)
	r.poly.ChangeTick(fine, 0.001)
	plain := r.poly.AddWindow(store.ETH, store.M15, now)
	cfg := r.config(scheme, series)
	cfg.Interval = time.Second
	_, stop := start(t, cfg)
	defer stop()
	ctx := context.Background()
	get := func(up *polytest.Market) store.Market {
		t.Helper()
		var m store.Market
		eventually(t, 60*time.Second, polytest.SlugOf(up)+" discovered", func() bool {
			var err error
			m, err = r.st.GetMarket(ctx, polytest.SlugOf(up))
			return err == nil
		})
		return m
	}
	m := get(fine)
	if m.TickSize == nil || *m.TickSize != 0.001 || len(m.TickSizeChanges) != 1 || m.TickSizeChanges[0].TickSize != 0.001 ||
		m.TickSizeChanges[0].Time.Before(now) || !m.TickSizeChanges[0].Time.Before(m.EndTime) {
		t.Errorf("a market found live at tick 0.001 (at %s): tick %v, history %+v; want one change to 0.001 from its discovery",
			now.Format(time.RFC3339), ptrV(m.TickSize), m.TickSizeChanges)
	}
	if m := get(plain); m.TickSize == nil || *m.TickSize != store.OpeningTickSize || len(m.TickSizeChanges) != 0 {
		t.Errorf("a market found at the opening tick: tick %v, history %+v; want none", ptrV(m.TickSize), m.TickSizeChanges)
	}
}

// TestDiscoveryOfTheRepeatedEasternHour: when summer time ends (2026-11-01)
// US Eastern repeats 1am, and the hourly slug of the second 1am names the
// first one's market, which Gamma answers with its own, ended, window.
// The second hour is a window without a market of its own: warned of
// once and counted as soon as it starts, not taken, round after round,
// for the first hour's market and logged as a disagreement.
func TestDiscoveryOfTheRepeatedEasternHour(t *testing.T) {
	t.Parallel()
	scheme := collect.NewPolymarketScheme()
	first := time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC) // 1am EDT
	// Just before the second 1am (EST): the first one's market is found,
	// and still followed once it ends (WatchAfterEnd).
	r := newRigAt(t, memory.New(), scheme, first.Add(time.Hour-10*time.Second))
	r.poly = polytest.New(t, polytest.Options{Clock: r.clock})
	sr := collect.Series{Coin: store.BTC, MarketType: store.H1}
	up := r.poly.AddWindow(sr.Coin, sr.MarketType, first)
	second, _ := scheme.Window(sr.Coin, sr.MarketType, first.Add(time.Hour))
	if !second.Equal(first.Add(time.Hour)) || scheme.Slugs(sr.Coin, sr.MarketType, second)[0] != up.Slug {
		t.Fatalf("the second 1am starts %v, slugs %q; the first's market %q", second, scheme.Slugs(sr.Coin, sr.MarketType, second), up.Slug)
	}
	cfg := r.config(scheme, []collect.Series{sr})
	cfg.Interval = time.Second
	c, stop := start(t, cfg)
	eventually(t, 60*time.Second, "the first 1am's market found", func() bool {
		_, err := r.st.GetMarket(context.Background(), polytest.SlugOf(up))
		return err == nil
	})
	eventually(t, 60*time.Second, "the second 1am counted as a window without its market", func() bool { return c.MissingWindows() == 1 })
	time.Sleep(10 * cfg.DiscoveryInterval)
	stop()
	logs := r.logs.String()
	if n := strings.Count(logs, "keeping Gamma's"); n > 0 || c.MissingWindows() != 1 {
		t.Errorf("the first 1am's market taken for the second %d times, the second counted missing %d times; want 0 and 1:\n%s", n, c.MissingWindows(), logs)
	}
}

// TestFetchMarketsOfTheRepeatedEasternHour: `updown markets fetch` over
// the day summer time ends finds the second 1am ET window's slug naming
// the first one's market: that window is missing (counted and warned),
// not the first one's event listed a second time.
func TestFetchMarketsOfTheRepeatedEasternHour(t *testing.T) {
	t.Parallel()
	poly := polytest.New(t, polytest.Options{})
	from := time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC) // 12am EDT
	to := from.Add(4 * time.Hour)                        // 12am EDT, 1am EDT, 1am EST, 2am EST
	poly.AddRange([]collect.Series{{Coin: store.BTC, MarketType: store.H1}}, from, to.Add(-time.Second))
	var logs syncBuffer
	res, err := collect.FetchMarkets(context.Background(), collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: poly.URL},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, collect.Series{Coin: store.BTC, MarketType: store.H1}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 4 || res.Missing != 1 || len(res.Events) != 3 {
		t.Errorf("fetched %d events of %d windows (%d missing), want 3 of 4 (1 missing)", len(res.Events), res.Windows, res.Missing)
	}
	if !strings.Contains(logs.String(), "2026-11-01T06:00:00") {
		t.Errorf("the second 1am not warned of:\n%s", logs.String())
	}
}

// TestFetchMarketsRefusesTooManyWindows: FetchMarkets refuses a range of
// more windows than FetchConfig.MaxWindows (DefaultFetchWindows when 0)
// before Gamma is asked, saying how many, where only the command line
// checked: any other caller asked Gamma once a window of a range of years,
// holding every answer in memory.
func TestFetchMarketsRefusesTooManyWindows(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	gamma := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		_, _ = w.Write([]byte("[]"))
	}))
	t.Cleanup(gamma.Close)
	btc5m := collect.Series{Coin: store.BTC, MarketType: store.M5}
	day := time.Date(2026, 5, 12, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		max      int
		from, to time.Time
		want     collect.TooManyWindowsError
	}{
		{100, day, day.AddDate(0, 0, 1), collect.TooManyWindowsError{Windows: 288, Max: 100}},
		{0, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
			collect.TooManyWindowsError{Windows: 727200, Max: collect.DefaultFetchWindows}},
	} {
		res, err := collect.FetchMarkets(context.Background(), collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: gamma.URL}, MaxWindows: c.max},
			btc5m, c.from, c.to)
		var tooMany *collect.TooManyWindowsError
		if !errors.As(err, &tooMany) || *tooMany != c.want || res.Windows != 0 || len(res.Events) != 0 {
			t.Errorf("FetchMarkets of %s to %s, MaxWindows %d: %+v, %v; want %+v refused", c.from, c.to, c.max, res, err, c.want)
		}
	}
	// A count that stopped (a range of centuries) is told as a bound.
	if got := (&collect.TooManyWindowsError{Windows: 10_000_000, More: true}).Count(); got != "more than 10000000" {
		t.Errorf("a count stopped at 10000000 is told as %q", got)
	}
	if _, err := collect.FetchMarkets(context.Background(), collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: gamma.URL}, MaxWindows: -1},
		btc5m, day, day.Add(time.Hour)); err == nil {
		t.Error("MaxWindows -1 was taken")
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("Gamma was asked %d times, want none", n)
	}
	// A range within the bound is fetched: a request a window.
	res, err := collect.FetchMarkets(context.Background(), collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: gamma.URL}, MaxWindows: 12},
		btc5m, day, day.Add(time.Hour))
	if err != nil || res.Windows != 12 || asked.Load() != 12 {
		t.Errorf("an hour of 5m windows (12, MaxWindows 12 allows them): %+v, %v, %d Gamma requests; want 12 windows fetched, one request each", res, err, asked.Load())
	}
}
