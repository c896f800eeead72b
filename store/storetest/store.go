package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func storeTests() []test {
	return []test{
		{"Ping", testPing},
		{"CancelledContext", testCancelledContext},
	}
}

func testPing(t *testing.T, s store.Store) {
	mustOK(t, s.Ping(t.Context()), "Ping")
}

// testCancelledContext calls every method with a cancelled context: each
// fails with an error matching context.Canceled, and writes store nothing.
func testCancelledContext(t *testing.T, s store.Store) {
	live := t.Context()
	m := newMarket(store.BTC, store.M5, t0(), "")
	mustOK(t, s.UpsertMarkets(live, []store.Market{m}), "UpsertMarkets")
	appendSnapshots(t, s, m.Slug, newSnapshots(t0(), 0, 2))
	appendTrades(t, s, m.Slug, tradesFrom(0, 1))
	mustOK(t, errOf(s.RecordGaps(live, m.Slug, []store.Gap{gap(10, 20)})), "RecordGaps")
	c := createCustomer(t, s, newCustomer("ada"))
	k := createKey(t, s, newKey(c.ID, "ud_live_a"))
	appendDepth(t, s, newDepths(btcusdt, store.Spot, 0, 2))

	ctx, cancel := context.WithCancel(live)
	cancel()
	other := newMarket(store.ETH, store.M5, t0(), "")
	calls := []struct {
		name string
		call func() error
	}{
		{"Ping", func() error { return s.Ping(ctx) }},
		{"UpsertMarkets", func() error { return s.UpsertMarkets(ctx, []store.Market{other}) }},
		{"GetMarket", func() error { _, err := s.GetMarket(ctx, m.Slug); return err }},
		{"GetMarketByMarketID", func() error { _, err := s.GetMarketByMarketID(ctx, m.MarketID); return err }},
		{"ListMarkets", func() error { _, _, err := s.ListMarkets(ctx, store.MarketFilter{}); return err }},
		{"CountMarkets", func() error { _, err := s.CountMarkets(ctx, store.MarketFilter{}); return err }},
		{"NthNewestStart", func() error { _, _, err := s.NthNewestStart(ctx, store.BTC, store.M5, 1, time.Now()); return err }},
		{"AppendSnapshots", func() error { return errOf(s.AppendSnapshots(ctx, m.Slug, newSnapshots(t0(), 3, 4))) }},
		{"ListSnapshots", func() error { _, _, err := s.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{}); return err }},
		{"AppendMarketTrades", func() error { return errOf(s.AppendMarketTrades(ctx, m.Slug, tradesFrom(2, 3))) }},
		{"ListMarketTrades", func() error {
			_, _, err := s.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{})
			return err
		}},
		{"RecordGaps", func() error { return errOf(s.RecordGaps(ctx, m.Slug, []store.Gap{gap(30, 40)})) }},
		{"RemoveGaps", func() error { return s.RemoveGaps(ctx, m.Slug, []store.Gap{gap(10, 20)}) }},
		{"ListGaps", func() error { _, err := s.ListGaps(ctx, m.Slug); return err }},
		{"CreateCustomer", func() error { _, err := s.CreateCustomer(ctx, newCustomer("bea")); return err }},
		{"GetCustomer", func() error { _, err := s.GetCustomer(ctx, c.ID); return err }},
		{"GetCustomerByEmail", func() error { _, err := s.GetCustomerByEmail(ctx, c.Email); return err }},
		{"ListCustomers", func() error { _, err := s.ListCustomers(ctx); return err }},
		{"SetCustomerTier", func() error { _, err := s.SetCustomerTier(ctx, c.ID, store.Pro); return err }},
		{"ReturnTierToBilling", func() error { _, err := s.ReturnTierToBilling(ctx, c.ID); return err }},
		{"TiersSetByHand", func() error { _, err := s.TiersSetByHand(ctx); return err }},
		{"CreateAPIKey", func() error { _, err := s.CreateAPIKey(ctx, newKey(c.ID, "ud_live_b")); return err }},
		{"LookupAPIKey", func() error { _, _, err := s.LookupAPIKey(ctx, k.Hash); return err }},
		{"ListAPIKeys", func() error { _, err := s.ListAPIKeys(ctx, c.ID); return err }},
		{"RevokeAPIKey", func() error { return s.RevokeAPIKey(ctx, k.ID) }},
		{"GetAPIKey", func() error { _, err := s.GetAPIKey(ctx, k.ID); return err }},
		{"PageAPIKeys", func() error { _, err := s.PageAPIKeys(ctx, c.ID, 10, 0); return err }},
		{"AppendDepth", func() error { return s.AppendDepth(ctx, newDepths(btcusdt, store.Spot, 3, 4)) }},
		{"ListDepth", func() error {
			_, _, err := s.ListDepth(ctx, store.DepthFilter{Symbol: btcusdt, Kind: store.Spot})
			return err
		}},
	}
	for _, tc := range calls {
		if err := tc.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want one matching context.Canceled", tc.name, err)
		}
	}

	// Nothing was written.
	if n := count(t, s, store.MarketFilter{}); n != 1 {
		t.Errorf("CountMarkets = %d, want 1", n)
	}
	checkSeries(t, s, m.Slug, newSnapshots(t0(), 0, 2))
	checkMarketTrades(t, s, m.Slug, store.MarketTradeQuery{Ascending: true}, tradesFrom(0, 1), 2)
	checkGaps(t, s, m.Slug, []store.Gap{gap(10, 20)})
	got, err := s.GetCustomer(live, c.ID)
	mustOK(t, err, "GetCustomer")
	checkCustomer(t, "customer", c, got)
	checkAPIKeys(t, "ListAPIKeys", []store.APIKey{k}, listKeys(t, s, c.ID))
	checkDepthList(t, s, store.DepthFilter{Symbol: btcusdt, Kind: store.Spot}, reversed(newDepths(btcusdt, store.Spot, 0, 2)), 3)
}
