package archive_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSettledByALaterMarketsFile imports a dump with a markets file taken
// before its market settled, then again with one taken after (`updown
// markets fetch` run again), on each store: the market only imports wrote
// takes the settlement the second file has, where it stayed unresolved
// for good (replays answer MARKET_NOT_RESOLVED; the collector's sweep
// looks back a week only). A market the recorder stored keeps its own.
func TestSettledByALaterMarketsFile(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		settledByALaterMarketsFile(t, func() ticksStore { return memory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		settledByALaterMarketsFile(t, func() ticksStore { return pgtest.NewStore(t) })
	})
}

func settledByALaterMarketsFile(t *testing.T, newStore func() ticksStore) {
	ctx := context.Background()
	fx := newFxSet()
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	writeJSONL(t, dump, fx.events)
	settled := func(m store.Market) store.Market {
		down, start, end, vol := store.OutcomeDown, 80790.12, 80712.5, 236.04
		at := m.EndTime.Add(90 * time.Second)
		m.Winner, m.CoinPriceStart, m.CoinPriceEnd, m.PriceToBeat, m.FinalPrice = &down, &start, &end, &start, &end
		m.ResolvedAt, m.FinalVolume, m.ResolutionSource = &at, &vol, "chainlink"
		return m
	}
	check := func(st ticksStore, slug string, want store.Market) {
		t.Helper()
		got, err := st.GetMarket(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		same := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
		if (got.Winner == nil) != (want.Winner == nil) || got.Winner != nil && *got.Winner != *want.Winner ||
			!same(got.CoinPriceStart, want.CoinPriceStart) || !same(got.CoinPriceEnd, want.CoinPriceEnd) ||
			!same(got.PriceToBeat, want.PriceToBeat) || !same(got.FinalPrice, want.FinalPrice) || !same(got.FinalVolume, want.FinalVolume) ||
			(got.ResolvedAt == nil) != (want.ResolvedAt == nil) || got.ResolvedAt != nil && !got.ResolvedAt.Equal(*want.ResolvedAt) ||
			got.ResolutionSource != want.ResolutionSource {
			t.Errorf("%s: winner %v, coin prices %v %v, reference %v %v, volume %v, resolved at %v by %q; want those of %+v",
				slug, got.Winner, got.CoinPriceStart, got.CoinPriceEnd, got.PriceToBeat, got.FinalPrice, got.FinalVolume,
				got.ResolvedAt, got.ResolutionSource, want)
		}
	}

	st := newStore()
	// The recorder stored the other market, unresolved; only the markets
	// file settles the first.
	if err := st.(interface {
		UpsertMarkets(context.Context, []store.Market) error
	}).UpsertMarkets(ctx, []store.Market{fx.unknown}); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{dump}, Markets: []store.Market{fx.known, fx.unknown},
		KeyExtra: []string{"markets:open"}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	check(st, fx.known.Slug, fx.known)
	sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{dump}, Markets: []store.Market{settled(fx.known), settled(fx.unknown)},
		KeyExtra: []string{"markets:settled"}, Prices: fx.klines(t)})
	if err != nil || !sum.Fresh {
		t.Fatalf("the import with the settled markets: %+v %v", sum, err)
	}
	check(st, fx.known.Slug, settled(fx.known))
	check(st, fx.unknown.Slug, fx.unknown) // recorded wins: the recorder settles it
}
