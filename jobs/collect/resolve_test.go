package collect_test

import (
	"context"
	"errors"
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

func newResolver(t testing.TB, r *rig, now func() time.Time) *collect.Resolver {
	t.Helper()
	res, err := collect.NewResolver(collect.ResolverConfig{
		Upstreams: collect.Upstreams{Gamma: r.poly.URL, CLOB: r.poly.URL, BinanceSpot: r.bin.URL, BinanceFutures: r.bin.URL},
		Store:     r.st,
		Logger:    r.log,
		Now:       now,
		Backoff:   collect.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCollectorResolvesEndedMarkets runs the collector over markets of three
// seconds, resolving each as its task comes due, and checks every ended
// market against what the upstreams say: winner, coin prices at start and
// end, final volume and liquidity, and a resolution time after the end.
func TestCollectorResolvesEndedMarkets(t *testing.T) {
	scheme := polytest.QuickScheme{Length: 3 * time.Second}
	r := newRig(t, memory.New(), scheme)
	began := time.Now()
	r.poly.AddRange(twoSeries, began, began.Add(time.Minute))
	res := newResolver(t, r, time.Now)
	errs := make(chan error, 1000)
	r.sched.resolve = func(slug string) {
		_, err := res.Resolve(context.Background(), slug)
		errs <- err
	}
	_, stop := start(t, r.config(scheme, twoSeries))
	time.Sleep(8 * time.Second)
	stop()
	ended := time.Now()

	ctx := context.Background()
	resolved := 0
	for _, up := range r.poly.Markets() {
		if up.End.After(ended) || up.Start.Before(began.Truncate(scheme.Length)) {
			continue
		}
		slug := polytest.SlugOf(&up)
		var m store.Market
		deadline := time.Now().Add(60 * time.Second)
		for {
			var err error
			m, err = r.st.GetMarket(ctx, slug)
			if err == nil && m.Resolved() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not resolved: %+v %v; resolver errors: %v", slug, m, err, drain(errs))
			}
			time.Sleep(20 * time.Millisecond)
		}
		resolved++
		if *m.Winner != r.poly.Winner(&up) {
			t.Errorf("%s: winner %s, upstream settled %s", slug, *m.Winner, r.poly.Winner(&up))
		}
		if *m.CoinPriceStart != r.bin.Price(up.Coin, up.Start) || *m.CoinPriceEnd != r.bin.Price(up.Coin, up.End) {
			t.Errorf("%s: prices %v → %v, Binance had %v → %v", slug, *m.CoinPriceStart, *m.CoinPriceEnd,
				r.bin.Price(up.Coin, up.Start), r.bin.Price(up.Coin, up.End))
		}
		if (*m.Winner == store.OutcomeUp) != (*m.CoinPriceEnd >= *m.CoinPriceStart) {
			t.Errorf("%s: winner %s with prices %v → %v", slug, *m.Winner, *m.CoinPriceStart, *m.CoinPriceEnd)
		}
		if m.FinalVolume == nil || *m.FinalVolume != up.Volume || m.FinalLiquidity == nil || *m.FinalLiquidity != up.Liquidity {
			t.Errorf("%s: volume %v liquidity %v, upstream %v %v", slug, m.FinalVolume, m.FinalLiquidity, up.Volume, up.Liquidity)
		}
		if m.ResolvedAt == nil || m.ResolvedAt.Before(up.End) {
			t.Errorf("%s: resolved at %v, it ended at %v", slug, m.ResolvedAt, up.End)
		}
		if snaps := allSnapshots(t, r.st, slug); up.Start.After(began) && len(snaps) == 0 {
			// A market of three seconds may go by while a loaded machine
			// starves the collector; then it says so with a gap.
			gaps, err := r.st.ListGaps(ctx, slug)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(gaps, func(g store.Gap) bool { return g.Kind == store.GapSnapshots }) {
				t.Errorf("%s: no snapshot in a 3s window at 100ms, and no gap says why (gaps %v)", slug, gaps)
			}
		}
	}
	if resolved < 2*len(twoSeries) {
		t.Errorf("%d markets resolved; want at least %d", resolved, 2*len(twoSeries))
	}
	for _, err := range drain(errs) {
		t.Errorf("resolution failed: %v", err)
	}
}

func drain(errs chan error) []error {
	var out []error
	for {
		select {
		case err := <-errs:
			if err != nil {
				out = append(out, err)
			}
		default:
			return out
		}
	}
}

// TestResolverErrors checks what Resolve answers when it cannot resolve,
// so that the queue knows whether to retry.
func TestResolverErrors(t *testing.T) {
	t.Parallel()
	r := newRig(t, memory.New(), collect.NewPolymarketScheme())
	ctx := context.Background()
	now := time.Now()
	// A market that ended a minute ago.
	up := r.poly.AddWindow(store.BTC, store.M5, now.Add(-6*time.Minute))
	m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, EventID: up.EventID, Coin: up.Coin, MarketType: up.MarketType,
		StartTime: up.Start, EndTime: up.End, ClobTokenUp: up.UpToken, ClobTokenDown: up.DownToken, UpstreamSlug: up.Slug}
	// One that has not ended.
	live := r.poly.AddWindow(store.ETH, store.M5, now)
	lm := store.Market{Slug: polytest.SlugOf(live), MarketID: live.ID, Coin: live.Coin, MarketType: live.MarketType,
		StartTime: live.Start, EndTime: live.End}
	if err := r.st.UpsertMarkets(ctx, []store.Market{m, lm}); err != nil {
		t.Fatal(err)
	}
	res := newResolver(t, r, time.Now)

	if _, err := res.Resolve(ctx, "btc-updown-5m-1"); !errors.Is(err, collect.ErrNoRetry) {
		t.Errorf("unknown market: %v, want ErrNoRetry", err)
	}
	if _, err := res.Resolve(ctx, lm.Slug); !errors.Is(err, collect.ErrNotSettled) {
		t.Errorf("live market: %v, want ErrNotSettled", err)
	}

	// Gamma failing: a retryable error, not ErrNoRetry.
	r.poly.FailAlways(polytest.RouteEvents, polytest.Fault{Status: 502})
	if _, err := res.Resolve(ctx, m.Slug); err == nil || errors.Is(err, collect.ErrNoRetry) || !strings.Contains(err.Error(), "502") {
		t.Errorf("Gamma failing: %v", err)
	}
	r.poly.Recover(polytest.RouteEvents)

	// Gamma failing twice, then answering: the request retries.
	r.poly.Fail(polytest.RouteEvents, polytest.Fault{Status: 500}, polytest.Fault{Status: 429, RetryAfter: time.Second})
	got, err := res.Resolve(ctx, m.Slug)
	if err != nil || !got.Resolved() || *got.Winner != r.poly.Winner(up) {
		t.Fatalf("resolve through Gamma's failures: %+v %v", got, err)
	}
	// Resolving again changes nothing and asks nobody.
	hits := r.poly.Hits(polytest.RouteEvents) + r.poly.Hits(polytest.RouteMarkets)
	again, err := res.Resolve(ctx, m.Slug)
	if err != nil || !again.UpdatedAt.Equal(got.UpdatedAt) || r.poly.Hits(polytest.RouteEvents)+r.poly.Hits(polytest.RouteMarkets) != hits {
		t.Errorf("second resolution: %v, updated %v→%v, %d Gamma requests", err, got.UpdatedAt, again.UpdatedAt,
			r.poly.Hits(polytest.RouteEvents)+r.poly.Hits(polytest.RouteMarkets)-hits)
	}
}

// TestResolverSettlesAsPolymarket checks the settlement of every series
// against the fake's: a closed market is found through /events by its
// upstream slug (and, without one, through /markets by id with
// closed=true, since /markets hides closed markets), its winner read from
// outcomePrices (50-50 for a tie) and its prices from eventMetadata, with
// the series' resolution source.
func TestResolverSettlesAsPolymarket(t *testing.T) {
	t.Parallel()
	r := newRig(t, memory.New(), collect.NewPolymarketScheme())
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		coin     store.Coin
		mt       store.MarketType
		ago      time.Duration
		tie      bool
		noSlug   bool
		source   string
		fiftyOne bool
	}{
		{store.BTC, store.M5, 6 * time.Minute, false, false, store.SourceChainlink, false},
		{store.ETH, store.M15, 16 * time.Minute, false, true, store.SourceChainlink, false},
		{store.BTC, store.H4, 5 * time.Hour, false, false, store.SourceChainlink, false},
		{store.SOL, store.H1, 70 * time.Minute, false, false, store.SourceBinance1h, false},
		{store.BTC, store.H24, 26 * time.Hour, false, false, store.SourceBinance1mNoonET, false},
		{store.BTC, store.H24, 50 * time.Hour, true, false, store.SourceBinance1mNoonET, true},
	} {
		up := r.poly.AddWindow(tc.coin, tc.mt, now.Add(-tc.ago))
		r.poly.Edit(up, func(m *polytest.Market) { m.Tie = tc.tie })
		m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
			StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug}
		if tc.noSlug {
			m.UpstreamSlug = ""
		}
		if err := r.st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		got, err := newResolver(t, r, time.Now).Resolve(ctx, m.Slug)
		if err != nil {
			t.Fatalf("%s: %v", m.Slug, err)
		}
		start, end := r.poly.ReferencePrices(up)
		if *got.Winner != r.poly.Winner(up) || (*got.Winner == store.OutcomeFiftyFifty) != tc.fiftyOne {
			t.Errorf("%s: winner %s, Polymarket's %s", m.Slug, *got.Winner, r.poly.Winner(up))
		}
		if *got.CoinPriceStart != start || *got.CoinPriceEnd != end || got.PriceToBeat == nil || *got.PriceToBeat != start ||
			got.FinalPrice == nil || *got.FinalPrice != end {
			t.Errorf("%s: prices %v → %v (to beat %v, final %v), Polymarket's %v → %v", m.Slug, *got.CoinPriceStart,
				*got.CoinPriceEnd, got.PriceToBeat, got.FinalPrice, start, end)
		}
		if got.ResolutionSource != tc.source || got.TakerFeeRate == nil || *got.TakerFeeRate != 0.07 {
			t.Errorf("%s: source %q fee %v", m.Slug, got.ResolutionSource, got.TakerFeeRate)
		}
		if collect.AwaitsVerdict(got) {
			t.Errorf("%s: resolved from Polymarket's verdict still awaits it", m.Slug)
		}
	}
}

// TestResolverFallsBackToTheSeriesRule checks markets Polymarket leaves
// unsettled: retried while young, then settled by the series' own rule
// (hourly: the Binance 1h candle; daily: the 1m closes at 12:00 ET, equal
// being 50-50; others: the recorded prices), and corrected once
// Polymarket's verdict arrives.
func TestResolverFallsBackToTheSeriesRule(t *testing.T) {
	t.Parallel()
	st := memory.New()
	r := newRig(t, st, collect.NewPolymarketScheme())
	ctx := context.Background()
	now := time.Now()
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	for _, tc := range []struct {
		coin   store.Coin
		mt     store.MarketType
		ago    time.Duration
		source string
	}{
		{store.SOL, store.M15, 20 * time.Minute, store.SourceRecorded},
		{store.ETH, store.H1, 70 * time.Minute, store.SourceBinance1h},
		{store.BTC, store.H24, 26 * time.Hour, store.SourceBinance1mNoonET},
	} {
		up := r.poly.AddWindow(tc.coin, tc.mt, now.Add(-tc.ago))
		r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled = true })
		m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
			StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug}
		// The recorded start price says the opposite of Polymarket, so
		// that its verdict must correct the fallback.
		wantStart, wantEnd := r.poly.ReferencePrices(up)
		if tc.mt == store.M15 {
			wrong := wantEnd + 1
			if r.poly.Winner(up) == store.OutcomeDown {
				wrong = wantEnd - 1
			}
			m.CoinPriceStart = &wrong
		}
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		soon := func() time.Time { return up.End.Add(time.Minute) }
		if _, err := newResolver(t, r, soon).Resolve(ctx, m.Slug); !errors.Is(err, collect.ErrNotSettled) {
			t.Fatalf("%s unsettled upstream: %v, want ErrNotSettled", m.Slug, err)
		}
		// Binance failing: retried, not settled on a guess.
		r.bin.FailAlways(binancetest.RouteKlines, binancetest.Fault{Status: 502})
		if _, err := newResolver(t, r, later).Resolve(ctx, m.Slug); err == nil || errors.Is(err, collect.ErrNoRetry) {
			t.Errorf("%s with Binance failing: %v", m.Slug, err)
		}
		r.bin.Recover(binancetest.RouteKlines)

		got, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
		if err != nil || !got.Resolved() {
			t.Fatalf("%s after FallbackAfter: %+v %v", m.Slug, got, err)
		}
		if got.ResolutionSource != tc.source || !collect.AwaitsVerdict(got) {
			t.Errorf("%s: source %q, awaits verdict %v", m.Slug, got.ResolutionSource, collect.AwaitsVerdict(got))
		}
		var ruleStart, ruleEnd float64
		switch tc.mt {
		case store.H1:
			ruleStart, ruleEnd = r.bin.Price(up.Coin, up.Start), r.bin.Price(up.Coin, up.End)
		case store.H24:
			ruleStart, ruleEnd = r.bin.Price(up.Coin, up.Start.Add(time.Minute)), r.bin.Price(up.Coin, up.End.Add(time.Minute))
		default:
			ruleStart, ruleEnd = *m.CoinPriceStart, r.bin.Price(up.Coin, up.End)
		}
		if *got.CoinPriceStart != ruleStart || *got.CoinPriceEnd != ruleEnd {
			t.Errorf("%s: fallback prices %v → %v, the rule's %v → %v", m.Slug, *got.CoinPriceStart, *got.CoinPriceEnd, ruleStart, ruleEnd)
		}
		if w := *got.Winner; (w == store.OutcomeUp) != (ruleEnd >= ruleStart) && !(w == store.OutcomeFiftyFifty && ruleEnd == ruleStart) {
			t.Errorf("%s: fallback winner %s contradicts its prices %v → %v", m.Slug, w, ruleStart, ruleEnd)
		}

		// Polymarket speaks at last: the verdict and its prices replace
		// the fallback.
		r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled = false })
		fixed, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
		if err != nil || *fixed.Winner != r.poly.Winner(up) || *fixed.CoinPriceStart != wantStart || *fixed.CoinPriceEnd != wantEnd ||
			collect.AwaitsVerdict(fixed) || fixed.ResolutionSource == store.SourceRecorded {
			t.Errorf("%s after the verdict: %v winner %v prices %v → %v source %q; Polymarket %s %v → %v", m.Slug, err,
				*fixed.Winner, *fixed.CoinPriceStart, *fixed.CoinPriceEnd, fixed.ResolutionSource, r.poly.Winner(up), wantStart, wantEnd)
		}
	}
	if !strings.Contains(r.logs.String(), "corrects the fallback") {
		t.Errorf("no correction logged:\n%s", r.logs)
	}
}

// TestResolverFallbackAwaitsTheVerdictBesidePublishedPrices checks a
// market Polymarket leaves open past FallbackAfter although its event
// already carries both reference prices (a settlement held up, as by a
// dispute): the series' rule settles it for now, but it still awaits the
// verdict (so that it is looked at again), and the verdict, when it comes,
// corrects it.
func TestResolverFallbackAwaitsTheVerdictBesidePublishedPrices(t *testing.T) {
	t.Parallel()
	st := memory.New()
	r := newRig(t, st, collect.NewPolymarketScheme())
	ctx := context.Background()
	up := r.poly.AddWindow(store.BTC, store.M15, time.Now().Add(-20*time.Minute))
	r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled, m.PricesWhileOpen = true, true })
	// The recorded start price says the opposite of Polymarket.
	wantStart, wantEnd := r.poly.ReferencePrices(up)
	wrong := wantEnd + 1
	if r.poly.Winner(up) == store.OutcomeDown {
		wrong = wantEnd - 1
	}
	m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
		StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug, CoinPriceStart: &wrong}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	got, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
	if err != nil || !got.Resolved() {
		t.Fatalf("after FallbackAfter: %+v %v", got, err)
	}
	if got.ResolutionSource != store.SourceRecorded || !collect.AwaitsVerdict(got) {
		t.Errorf("settled by the rule while Polymarket keeps the market open: source %q, awaits verdict %v (final_price %v)",
			got.ResolutionSource, collect.AwaitsVerdict(got), fmtF(got.FinalPrice))
	}

	r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled = false })
	fixed, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
	if err != nil || *fixed.Winner != r.poly.Winner(up) || *fixed.CoinPriceStart != wantStart || *fixed.CoinPriceEnd != wantEnd ||
		collect.AwaitsVerdict(fixed) || fixed.ResolutionSource != store.SourceChainlink {
		t.Errorf("after the verdict: %v winner %v prices %v → %v source %q; Polymarket %s %v → %v", err,
			*fixed.Winner, *fixed.CoinPriceStart, *fixed.CoinPriceEnd, fixed.ResolutionSource, r.poly.Winner(up), wantStart, wantEnd)
	}
}

// TestResolverFallbackTakesAVerdictThatComesWithoutPrices checks a market
// the series' rule settled while Polymarket was late, whose verdict then
// comes without its reference prices (and they never come): the verdict
// waits for them as long as a first resolution would (4 × FallbackAfter
// after the end), then replaces the rule's winner, as it does for a market
// not settled before.
func TestResolverFallbackTakesAVerdictThatComesWithoutPrices(t *testing.T) {
	t.Parallel()
	st := memory.New()
	r := newRig(t, st, collect.NewPolymarketScheme())
	ctx := context.Background()
	up := r.poly.AddWindow(store.ETH, store.M15, time.Now().Add(-20*time.Minute))
	r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled, m.NoReferencePrices = true, true })
	// The recorded start price says the opposite of Polymarket.
	_, end := r.poly.ReferencePrices(up)
	wrong := end + 1
	if r.poly.Winner(up) == store.OutcomeDown {
		wrong = end - 1
	}
	m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
		StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug, CoinPriceStart: &wrong}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) func() time.Time { return func() time.Time { return up.End.Add(d) } }
	got, err := newResolver(t, r, at(2*time.Hour)).Resolve(ctx, m.Slug)
	if err != nil || !got.Resolved() || *got.Winner == r.poly.Winner(up) || !collect.AwaitsVerdict(got) {
		t.Fatalf("the rule's fallback: %v %+v", err, got)
	}
	rule := *got.Winner

	r.poly.Edit(up, func(m *polytest.Market) { m.Unsettled = false })
	if got, err := newResolver(t, r, at(3*time.Hour)).Resolve(ctx, m.Slug); err != nil || *got.Winner != rule {
		t.Errorf("a verdict without prices, 3 h after the end: winner %v (%v), want the rule's %s while its prices may come", fmtF2(got.Winner), err, rule)
	}
	got, err = newResolver(t, r, at(5*time.Hour)).Resolve(ctx, m.Slug)
	if err != nil || *got.Winner != r.poly.Winner(up) {
		t.Errorf("a verdict without prices, 5 h after the end: winner %v (%v), want Polymarket's %s", fmtF2(got.Winner), err, r.poly.Winner(up))
	}
}

func fmtF2(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func fmtF(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// writeBetween is a resolver's store that writes the market once, with
// write, right after the resolver's first read of it: another process (the
// collector) writing while the resolver asks the upstreams.
type writeBetween struct {
	store.Store
	write func(m store.Market) store.Market
	done  bool
}

func (w *writeBetween) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	m, err := w.Store.GetMarket(ctx, slug)
	if err != nil || w.done {
		return m, err
	}
	w.done = true
	other := w.write(m)
	other.UpdatedAt = time.Time{}
	if err := w.Store.UpsertMarkets(ctx, []store.Market{other}); err != nil {
		return m, err
	}
	return m, nil
}

// TestResolverKeepsWritesMadeMeanwhile resolves markets that another writer
// changes between the resolver's read and its write: a tick change the
// collector recorded meanwhile is kept beside the resolution, and a market
// another run of the task settled meanwhile is left as that run wrote it.
func TestResolverKeepsWritesMadeMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	tick := store.TickSizeChange{Time: now.Add(-10 * time.Minute).UTC().Truncate(time.Microsecond), TickSize: 0.001}
	for _, tc := range []struct {
		name  string
		write func(m store.Market) store.Market
		check func(t *testing.T, got store.Market, upWinner string)
	}{
		{"tick change", func(m store.Market) store.Market {
			m.TickSize = &tick.TickSize
			m.TickSizeChanges = append(m.TickSizeChanges, tick)
			return m
		}, func(t *testing.T, got store.Market, upWinner string) {
			if got.Winner == nil || *got.Winner != upWinner {
				t.Errorf("winner %v, want %s", got.Winner, upWinner)
			}
			if len(got.TickSizeChanges) != 1 || !got.TickSizeChanges[0].Time.Equal(tick.Time) || got.TickSizeChanges[0].TickSize != tick.TickSize {
				t.Errorf("tick changes %+v: the one recorded while the resolver asked the upstreams is lost", got.TickSizeChanges)
			}
		}},
		{"settled by another run", func(m store.Market) store.Market {
			w, p := "Down", 1.0
			m.Winner, m.PriceToBeat, m.FinalPrice, m.CoinPriceStart, m.CoinPriceEnd = &w, &p, &p, &p, &p
			m.ResolutionSource = "other run"
			return m
		}, func(t *testing.T, got store.Market, _ string) {
			if got.Winner == nil || *got.Winner != "Down" || got.ResolutionSource != "other run" {
				t.Errorf("winner %v source %q: the other run's settlement was undone", got.Winner, got.ResolutionSource)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			r := newRig(t, st, collect.NewPolymarketScheme())
			up := r.poly.AddWindow(store.BTC, store.M15, now.Add(-16*time.Minute))
			m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
				StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug}
			if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
				t.Fatal(err)
			}
			r.st = &writeBetween{Store: st, write: tc.write}
			got, err := newResolver(t, r, time.Now).Resolve(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := st.GetMarket(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if !got.UpdatedAt.Equal(stored.UpdatedAt) {
				t.Errorf("Resolve answered the market as of %v, stored as of %v", got.UpdatedAt, stored.UpdatedAt)
			}
			tc.check(t, stored, r.poly.Winner(up))
		})
	}
}

// TestResolverKeepsTheRecordedTick resolves a market whose tick change the
// websocket told near its end while Gamma still answers the old tick (its
// answers are cached for minutes): the stored tick stays the one the
// recorded changes put in force, so tick_size never contradicts the last
// of tick_size_changes. An imported market that carries its changes
// without a tick gets the last change's.
func TestResolverKeepsTheRecordedTick(t *testing.T) {
	t.Parallel()
	fine := 0.001
	for _, c := range []struct {
		name string
		tick *float64
	}{{"recorded", &fine}, {"imported without a tick", nil}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := memory.New()
			r := newRig(t, st, collect.NewPolymarketScheme())
			now := time.Now()
			up := r.poly.AddWindow(store.BTC, store.M5, now.Add(-6*time.Minute)) // Gamma: tick 0.01
			change := store.TickSizeChange{Time: up.End.Add(-30 * time.Second).UTC().Truncate(time.Microsecond), TickSize: fine}
			m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
				StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug, TickSize: c.tick, TickSizeChanges: []store.TickSizeChange{change}}
			if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
				t.Fatal(err)
			}
			if _, err := newResolver(t, r, time.Now).Resolve(ctx, m.Slug); err != nil {
				t.Fatal(err)
			}
			got, err := st.GetMarket(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Resolved() {
				t.Fatal("not resolved")
			}
			if got.TickSize == nil || *got.TickSize != fine || len(got.TickSizeChanges) != 1 || got.TickSizeChanges[0].TickSize != fine {
				t.Errorf("tick_size %v with tick_size_changes %+v: want the tick recorded in force (%v)",
					fmtF(got.TickSize), got.TickSizeChanges, fine)
			}
		})
	}
}

// TestResolverWaitsForAFinalSettlement resolves markets Gamma shows closed,
// with outcomePrices at 1 and 0 and both reference prices, while their
// umaResolutionStatus says the settlement is only proposed or disputed:
// Polymarket has not settled them, so they are not settled on that
// verdict (the series' rule takes them after FallbackAfter, awaiting the
// verdict, as any market Polymarket is late with); once the status is
// "resolved" they settle as Polymarket did.
func TestResolverWaitsForAFinalSettlement(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"proposed", "disputed"} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := memory.New()
			r := newRig(t, st, collect.NewPolymarketScheme())
			up := r.poly.AddWindow(store.BTC, store.M15, time.Now().Add(-20*time.Minute))
			r.poly.Edit(up, func(m *polytest.Market) { m.UMAStatus = status })
			m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType,
				StartTime: up.Start, EndTime: up.End, UpstreamSlug: up.Slug}
			if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
				t.Fatal(err)
			}
			if got, err := newResolver(t, r, time.Now).Resolve(ctx, m.Slug); !errors.Is(err, collect.ErrNotSettled) {
				t.Fatalf("umaResolutionStatus %q: resolved as %v (err %v), want ErrNotSettled", status, fmtF2(got.Winner), err)
			}
			if stored, err := st.GetMarket(ctx, m.Slug); err != nil || stored.Resolved() {
				t.Fatalf("umaResolutionStatus %q: stored winner %v (err %v), want none", status, fmtF2(stored.Winner), err)
			}
			// Late: the series' rule decides, and the market still awaits
			// Polymarket's verdict.
			later := func() time.Time { return time.Now().Add(2 * time.Hour) }
			got, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if !collect.AwaitsVerdict(got) {
				t.Errorf("umaResolutionStatus %q: settled as final (%v, final price %v)", status, fmtF2(got.Winner), fmtF(got.FinalPrice))
			}
			r.poly.Edit(up, func(m *polytest.Market) { m.UMAStatus = "" })
			got, err = newResolver(t, r, later).Resolve(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if collect.AwaitsVerdict(got) || *got.Winner != r.poly.Winner(up) {
				t.Errorf("resolved upstream: winner %v awaiting %v, want Polymarket's %s", fmtF2(got.Winner), collect.AwaitsVerdict(got), r.poly.Winner(up))
			}
		})
	}
}
