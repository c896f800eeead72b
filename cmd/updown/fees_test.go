package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestMarketsFillFees runs `updown markets fill-fees` as an operator
// would on a database an older build filled: an early-2026 crypto_fees
// market stored with no fee type nor schedule gets them from (the fake)
// Gamma, a market Gamma has not is named, a re-run updates nothing, an
// unreachable Gamma is an error that says so, and a --slug not stored
// is named.
func TestMarketsFillFees(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	poly := polytest.New(t, polytest.Options{})
	at := time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC)
	pm := poly.AddWindow(store.BTC, store.M15, at)
	poly.Edit(pm, func(m *polytest.Market) { m.Fees = polytest.FeesFirstCrypto })
	old := store.Market{Slug: polytest.SlugOf(pm), MarketID: pm.ID, Coin: pm.Coin, MarketType: pm.MarketType, StartTime: pm.Start, EndTime: pm.End,
		ConditionID: pm.ConditionID, ClobTokenUp: pm.UpToken, ClobTokenDown: pm.DownToken, UpstreamSlug: pm.Slug}
	gone := store.Market{Slug: "btc-updown-15m-1772001000", MarketID: "4242", Coin: store.BTC, MarketType: store.M15,
		StartTime: at.Add(15 * time.Minute), EndTime: at.Add(30 * time.Minute), UpstreamSlug: "btc-updown-15m-1772001000"}
	st, err := postgres.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.UpsertMarkets(t.Context(), []store.Market{old, gone}); err != nil {
		t.Fatal(err)
	}
	fill := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"markets", "fill-fees", "--database-url", db}, args...), &out, &errOut)
		return out.String(), errOut.String(), err
	}

	out, errOut, err := fill("--gamma-url", poly.URL, "--from", "2026-01-01", "--to", "2026-04-01")
	if err != nil || !strings.Contains(out, "2 markets selected, 2 looked up on Gamma") || !strings.Contains(out, ": 1 updated,") ||
		!strings.Contains(out, "1 not found on Gamma") || !strings.Contains(errOut, gone.Slug+": not found: Gamma has no market "+gone.UpstreamSlug) {
		t.Fatalf("fill-fees: %v\n%s%s", err, out, errOut)
	}
	m, err := st.GetMarket(t.Context(), old.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if m.FeeType != store.FeeTypeCrypto || m.TakerFeeRate == nil || *m.TakerFeeRate != 0.25 || m.FeeExponent == nil || *m.FeeExponent != 2 {
		t.Errorf("filled: %q %v %v", m.FeeType, m.TakerFeeRate, m.FeeExponent)
	}
	if out, _, err := fill("--gamma-url", poly.URL); err != nil || !strings.Contains(out, "1 looked up on Gamma (those lacking fee fields): 0 updated") {
		t.Errorf("re-run: %v\n%s", err, out)
	}

	down := "http://" + freeAddr(t)
	if _, _, err := fill("--gamma-url", down); err == nil || !strings.Contains(err.Error(), "Gamma ("+down+") did not answer for market "+gone.Slug) {
		t.Errorf("Gamma unreachable: %v", err)
	}
	if _, errOut, err := fill("--gamma-url", poly.URL, "--slug", "eth-updown-15m-1"); err == nil ||
		!strings.Contains(err.Error(), "not stored: eth-updown-15m-1") || !strings.Contains(errOut, "eth-updown-15m-1: no such market is stored") {
		t.Errorf("--slug not stored: %v\n%s", err, errOut)
	}
	if _, _, err := fill("--slug", old.Slug, "--coin", "BTC"); err == nil || !strings.Contains(err.Error(), "--slug names the markets") {
		t.Errorf("--slug with --coin: %v", err)
	}
}
