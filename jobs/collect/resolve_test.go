package collect_test

import (
	"context"
	"errors"
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
		deadline := time.Now().Add(5 * time.Second)
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
		if snaps := allSnapshots(t, r.st, slug); up.Start.After(began) && len(snaps) < 5 {
			t.Errorf("%s: %d snapshots in a 3s window at 100ms", slug, len(snaps))
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
		StartTime: up.Start, EndTime: up.End, ClobTokenUp: up.UpToken, ClobTokenDown: up.DownToken}
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

	// Binance's candles failing: a retryable error, not ErrNoRetry.
	r.bin.FailAlways(binancetest.RouteKlines, binancetest.Fault{Status: 502})
	if _, err := res.Resolve(ctx, m.Slug); err == nil || errors.Is(err, collect.ErrNoRetry) || !strings.Contains(err.Error(), "502") {
		t.Errorf("Binance failing: %v", err)
	}
	r.bin.Recover(binancetest.RouteKlines)

	// Gamma failing twice, then answering: the request retries.
	r.poly.Fail(polytest.RouteMarkets, polytest.Fault{Status: 500}, polytest.Fault{Status: 429, RetryAfter: time.Second})
	got, err := res.Resolve(ctx, m.Slug)
	if err != nil || !got.Resolved() || *got.Winner != r.poly.Winner(up) {
		t.Fatalf("resolve through Gamma's failures: %+v %v", got, err)
	}
	// Resolving again changes nothing and asks nobody.
	hits := r.poly.Hits(polytest.RouteMarkets)
	again, err := res.Resolve(ctx, m.Slug)
	if err != nil || !again.UpdatedAt.Equal(got.UpdatedAt) || r.poly.Hits(polytest.RouteMarkets) != hits {
		t.Errorf("second resolution: %v, updated %v→%v, %d Gamma requests", err, got.UpdatedAt, again.UpdatedAt, r.poly.Hits(polytest.RouteMarkets)-hits)
	}
}

// TestResolverFallsBackToPrices checks a market Gamma leaves unsettled:
// retried while young, decided by the coin prices once FallbackAfter has
// passed.
func TestResolverFallsBackToPrices(t *testing.T) {
	t.Parallel()
	st := memory.New()
	r := newRig(t, st, collect.NewPolymarketScheme())
	r.poly = polytest.New(t, polytest.Options{SettleAfter: 24 * time.Hour})
	ctx := context.Background()
	up := r.poly.AddWindow(store.SOL, store.M15, time.Now().Add(-20*time.Minute))
	m := store.Market{Slug: polytest.SlugOf(up), MarketID: up.ID, Coin: up.Coin, MarketType: up.MarketType, StartTime: up.Start, EndTime: up.End}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := newResolver(t, r, time.Now).Resolve(ctx, m.Slug); !errors.Is(err, collect.ErrNotSettled) {
		t.Fatalf("unsettled upstream: %v, want ErrNotSettled", err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	got, err := newResolver(t, r, later).Resolve(ctx, m.Slug)
	if err != nil || !got.Resolved() {
		t.Fatalf("after FallbackAfter: %+v %v", got, err)
	}
	if *got.Winner != r.poly.Winner(up) || !strings.Contains(r.logs.String(), "coin prices decide") {
		t.Errorf("fallback winner %s, by prices %s; log:\n%s", *got.Winner, r.poly.Winner(up), r.logs)
	}
}
