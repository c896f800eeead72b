package collect_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// oldRecord is a market as a build that kept no fee type stored it (before
// migration 016, or imported from a file without fee_type): the fee
// fields given, the rest as the collector records them.
func oldRecord(pm *polytest.Market, rate *float64, exp *int, rebate *float64) store.Market {
	return store.Market{Slug: polytest.SlugOf(pm), MarketID: pm.ID, EventID: pm.EventID, Coin: pm.Coin, MarketType: pm.MarketType,
		StartTime: pm.Start, EndTime: pm.End, ConditionID: pm.ConditionID, ClobTokenUp: pm.UpToken, ClobTokenDown: pm.DownToken,
		UpstreamSlug: pm.Slug, TakerFeeRate: rate, FeeExponent: exp, MakerRebateRate: rebate}
}

func ptr[T any](v T) *T { return &v }

// fees is a market's fee fields as a user reads them.
func fees(m store.Market) string {
	s := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	e := "null"
	if m.FeeExponent != nil {
		e = fmt.Sprint(*m.FeeExponent)
	}
	return fmt.Sprintf("type=%q rate=%s exp=%s rebate=%s", m.FeeType, s(m.TakerFeeRate), e, s(m.MakerRebateRate))
}

func noteSlugs(ns []collect.FeeNote) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Slug)
	}
	slices.Sort(out)
	return out
}

// TestFillFees fills the fee fields of markets stored without a fee type
// from (the fake) Gamma, on both stores: an early-2026 crypto_fees market
// recorded with no schedule gets the first crypto curve, a crypto_fees_v2
// one its type, a market found by id or by its series' slug too, and one
// imported with the first curve's schedule but no type its type; a market
// whose stored schedule differs from Gamma's, one Gamma has not, one
// Gamma gives no fees and one of another condition id are left as they
// are and named. A second run changes nothing; --overwrite takes Gamma's.
func TestFillFees(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server) {
		at := time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC)
		window := func(c store.Coin, i int, fees polytest.Fees) *polytest.Market {
			pm := poly.AddWindow(c, store.M15, at.Add(time.Duration(i)*15*time.Minute))
			poly.Edit(pm, func(m *polytest.Market) { m.Fees = fees })
			return pm
		}
		first := oldRecord(window(store.BTC, 0, polytest.FeesFirstCrypto), nil, nil, nil)
		v2 := oldRecord(window(store.BTC, 1, polytest.FeesV2), ptr(0.07), ptr(1), ptr(0.2))
		byID := oldRecord(window(store.BTC, 2, polytest.FeesV2), nil, nil, nil)
		byID.UpstreamSlug = ""
		byScheme := oldRecord(window(store.BTC, 3, polytest.FeesFirstCrypto), nil, nil, nil)
		byScheme.UpstreamSlug, byScheme.MarketID = "", ""
		// Imported from a file with the first curve's schedule but no
		// fee type: charged without its factor p until it is filled.
		imported := oldRecord(window(store.BTC, 4, polytest.FeesFirstCrypto), ptr(0.25), ptr(2), nil)
		differ := oldRecord(window(store.ETH, 0, polytest.FeesFirstCrypto), ptr(0.07), ptr(1), nil)
		complete := oldRecord(window(store.ETH, 1, polytest.FeesV2), ptr(0.07), ptr(1), ptr(0.2))
		complete.FeeType = store.FeeTypeCryptoV2
		noFees := oldRecord(window(store.ETH, 2, polytest.FeesNone), nil, nil, nil)
		other := oldRecord(window(store.SOL, 0, polytest.FeesV2), nil, nil, nil)
		other.ConditionID = "0xanother"
		missing := store.Market{Slug: "btc-updown-15m-1700000100", MarketID: "99", Coin: store.BTC, MarketType: store.M15,
			StartTime: at.Add(-24 * time.Hour), EndTime: at.Add(-24*time.Hour + 15*time.Minute), UpstreamSlug: "btc-updown-15m-1700000100"}
		all := []store.Market{first, v2, imported, byID, byScheme, differ, complete, noFees, other, missing}
		if err := st.UpsertMarkets(ctx, all); err != nil {
			t.Fatal(err)
		}
		cfg := collect.FillFeesConfig{Gamma: poly.URL, Store: st, Backoff: collect.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}}

		res, err := collect.FillFees(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Selected != 10 || res.Lacking != 9 || res.Updated != 5 || res.Current != 0 {
			t.Errorf("first run: %+v, want 10 selected, 9 lacking, 5 updated", res)
		}
		for what, c := range map[string]struct{ got, want []string }{
			"differ":    {noteSlugs(res.Differ), []string{differ.Slug}},
			"no fees":   {noteSlugs(res.NoFees), []string{noFees.Slug}},
			"not found": {noteSlugs(res.NotFound), []string{missing.Slug, other.Slug}},
		} {
			slices.Sort(c.want)
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: %v, want %v", what, c.got, c.want)
			}
		}
		if len(res.Differ) == 1 && !strings.Contains(res.Differ[0].Why, "taker_fee_rate 0.07, Gamma's 0.25") {
			t.Errorf("differ says %q", res.Differ[0].Why)
		}
		wantFees := map[string]string{
			first.Slug:    `type="crypto_fees" rate=0.25 exp=2 rebate=null`,
			v2.Slug:       `type="crypto_fees_v2" rate=0.07 exp=1 rebate=0.2`,
			byID.Slug:     `type="crypto_fees_v2" rate=0.07 exp=1 rebate=0.2`,
			byScheme.Slug: `type="crypto_fees" rate=0.25 exp=2 rebate=null`,
			imported.Slug: `type="crypto_fees" rate=0.25 exp=2 rebate=null`,
			differ.Slug:   `type="" rate=0.07 exp=1 rebate=null`,
			complete.Slug: `type="crypto_fees_v2" rate=0.07 exp=1 rebate=0.2`,
			noFees.Slug:   `type="" rate=null exp=null rebate=null`,
			other.Slug:    `type="" rate=null exp=null rebate=null`,
			missing.Slug:  `type="" rate=null exp=null rebate=null`,
		}
		stored := map[string]store.Market{}
		for _, m := range all {
			got, err := st.GetMarket(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			stored[m.Slug] = got
			if fees(got) != wantFees[m.Slug] {
				t.Errorf("%s: %s, want %s", m.Slug, fees(got), wantFees[m.Slug])
			}
			if got.FeeTimesPrice() != (got.FeeType == store.FeeTypeCrypto) || got.UpstreamSlug != m.UpstreamSlug || got.ConditionID != m.ConditionID {
				t.Errorf("%s: other fields changed: %+v", m.Slug, got)
			}
		}

		// Again: nothing to fill, nothing written.
		again, err := collect.FillFees(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if again.Updated != 0 || again.Lacking != 4 || len(again.Differ) != 1 || len(again.NotFound) != 2 || len(again.NoFees) != 1 {
			t.Errorf("second run: %+v, want nothing updated and the same four left", again)
		}
		for _, m := range all {
			got, _ := st.GetMarket(ctx, m.Slug)
			if !got.UpdatedAt.Equal(stored[m.Slug].UpdatedAt) {
				t.Errorf("%s written again by the second run", m.Slug)
			}
		}

		// --overwrite, of the markets named: Gamma's schedule wins.
		cfg.Slugs, cfg.Overwrite = []string{differ.Slug, complete.Slug, "eth-updown-15m-1"}, true
		over, err := collect.FillFees(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if over.Selected != 2 || over.Lacking != 2 || over.Updated != 1 || over.Current != 1 || !slices.Equal(over.NotStored, []string{"eth-updown-15m-1"}) {
			t.Errorf("overwrite: %+v, want 1 updated, 1 current, 1 not stored", over)
		}
		if got, _ := st.GetMarket(ctx, differ.Slug); fees(got) != `type="crypto_fees" rate=0.25 exp=2 rebate=null` {
			t.Errorf("overwritten: %s", fees(got))
		}
	})
}

// TestFillFeesPages reads a selection a page at a time, the pages parting
// markets that start at the same time (three coins' windows): every market
// is selected once and filled, none skipped.
func TestFillFeesPages(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server) {
		at := time.Date(2026, 2, 25, 6, 0, 0, 0, time.UTC)
		var ms []store.Market
		for i := range 4 {
			for _, c := range store.Coins {
				ms = append(ms, oldRecord(poly.AddWindow(c, store.M15, at.Add(time.Duration(i)*15*time.Minute)), nil, nil, nil))
			}
		}
		if err := st.UpsertMarkets(ctx, ms); err != nil {
			t.Fatal(err)
		}
		for _, page := range []int{1, 2, 4, 5} {
			res, err := collect.FillFees(ctx, collect.FillFeesConfig{Gamma: poly.URL, Store: st, Page: page, DryRun: true,
				Filter: store.MarketFilter{StartBefore: ptr(at.Add(time.Hour))}})
			if err != nil || res.Selected != len(ms) || res.Updated != len(ms) {
				t.Errorf("page %d: %+v, %v; want %d selected and updated", page, res, err, len(ms))
			}
		}
		var told []int
		res, err := collect.FillFees(ctx, collect.FillFeesConfig{Gamma: poly.URL, Store: st, Page: 2,
			Progress: func(done, total int) {
				if total != len(ms) {
					t.Errorf("progress: %d of %d, want of %d", done, total, len(ms))
				}
				told = append(told, done)
			}})
		if err != nil || res.Updated != len(ms) {
			t.Fatalf("%+v, %v", res, err)
		}
		if len(told) != len(ms) || !slices.IsSorted(told) || told[len(told)-1] != len(ms) {
			t.Errorf("progress told %v", told)
		}
		for _, m := range ms {
			if got, _ := st.GetMarket(ctx, m.Slug); got.FeeType != store.FeeTypeCryptoV2 {
				t.Errorf("%s: %s", m.Slug, fees(got))
			}
		}
	})
}

// TestFillFeesReplayCharges: a MARKET-fee replay of an early-2026
// crypto_fees market stored as older builds stored it charges nothing (and
// says so); once its fee fields are filled, the first crypto curve, as on
// a market recorded with them, and less than the later curve's formula on
// the same schedule.
func TestFillFeesReplayCharges(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server) {
		pm := poly.AddWindow(store.BTC, store.M15, time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC))
		poly.Edit(pm, func(m *polytest.Market) { m.Fees = polytest.FeesFirstCrypto })
		m := oldRecord(pm, nil, nil, nil)
		m.Winner = ptr(store.OutcomeUp)
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		snaps := []store.Snapshot{
			{Time: m.StartTime.Add(time.Second), CoinPrice: 90000, PriceUp: 0.5, PriceDown: 0.5},
			{Time: m.StartTime.Add(10 * time.Second), CoinPrice: 90010, PriceUp: 0.6, PriceDown: 0.4},
		}
		s := replay.Strategy{Side: replay.SideUp, PositionSize: 100, FeeModel: replay.FeeMarket,
			EntryConditions: []replay.Condition{{Field: replay.FieldPriceUp, Operator: replay.OpGreaterOrEqual, Value: 0.5}},
			ExitConditions:  []replay.Condition{{Field: replay.FieldPriceUp, Operator: replay.OpGreaterOrEqual, Value: 0.6}}}
		feesOf := func(m store.Market) (float64, []string) {
			t.Helper()
			r, err := replay.Run(m, snaps, s)
			if err != nil {
				t.Fatal(err)
			}
			return r.Performance.TotalFees, r.Warnings
		}
		stored, _ := st.GetMarket(ctx, m.Slug)
		if fee, warnings := feesOf(stored); fee != 0 || !strings.Contains(strings.Join(warnings, "\n"), "no recorded taker fee schedule") {
			t.Errorf("before: fees %v, warnings %q", fee, warnings)
		}
		if _, err := collect.FillFees(ctx, collect.FillFeesConfig{Gamma: poly.URL, Store: st}); err != nil {
			t.Fatal(err)
		}
		filled, _ := st.GetMarket(ctx, m.Slug)
		recorded := m
		recorded.FeeType, recorded.TakerFeeRate, recorded.FeeExponent = store.FeeTypeCrypto, ptr(store.FeeTypeCryptoRate), ptr(store.FeeTypeCryptoExponent)
		later := recorded
		later.FeeType = ""
		fee, warnings := feesOf(filled)
		want, _ := feesOf(recorded)
		wrong, _ := feesOf(later)
		if fee == 0 || fee != want || fee >= wrong || len(warnings) > 0 && strings.Contains(strings.Join(warnings, "\n"), "no recorded taker fee schedule") {
			t.Errorf("after: fees %v (recorded with them: %v; the later curve's formula: %v), warnings %q", fee, want, wrong, warnings)
		}
	})
}

// TestFillFeesDryRun counts what it would fill and writes nothing.
func TestFillFeesDryRun(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server) {
		pm := poly.AddWindow(store.BTC, store.M5, time.Date(2026, 3, 12, 9, 20, 0, 0, time.UTC))
		poly.Edit(pm, func(m *polytest.Market) { m.Fees = polytest.FeesFirstCrypto })
		m := oldRecord(pm, nil, nil, nil)
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		res, err := collect.FillFees(ctx, collect.FillFeesConfig{Gamma: poly.URL, Store: st, DryRun: true})
		if err != nil || res.Updated != 1 {
			t.Fatalf("dry run: %+v, %v", res, err)
		}
		if got, _ := st.GetMarket(ctx, m.Slug); fees(got) != `type="" rate=null exp=null rebate=null` {
			t.Errorf("a dry run wrote %s", fees(got))
		}
	})
}

// TestFillFeesGammaFailing: Gamma answering errors, or not at all, stops
// the run with an error that names Gamma, the market and how many were
// updated before it; what was updated stays.
func TestFillFeesGammaFailing(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server) {
		at := time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC)
		a := oldRecord(poly.AddWindow(store.BTC, store.M15, at), nil, nil, nil)
		// Found by id (/markets), where a is found by slug (/events).
		b := oldRecord(poly.AddWindow(store.BTC, store.M15, at.Add(-15*time.Minute)), nil, nil, nil)
		b.UpstreamSlug = ""
		if err := st.UpsertMarkets(ctx, []store.Market{a, b}); err != nil {
			t.Fatal(err)
		}
		cfg := collect.FillFeesConfig{Gamma: poly.URL, Store: st, Backoff: collect.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}}

		poly.FailAlways(polytest.RouteMarkets, polytest.Fault{Status: 502})
		res, err := collect.FillFees(ctx, cfg) // newest first: a, then b
		if err == nil || !strings.Contains(err.Error(), "Gamma ("+poly.URL+") did not answer for market "+b.Slug) ||
			!strings.Contains(err.Error(), "502") || !strings.Contains(err.Error(), "1 of the 2 markets looked up were updated before it") {
			t.Errorf("Gamma failing: %v", err)
		}
		if res.Updated != 1 {
			t.Errorf("Gamma failing: %+v, want 1 updated", res)
		}
		if got, _ := st.GetMarket(ctx, a.Slug); got.FeeType != store.FeeTypeCryptoV2 {
			t.Errorf("the market updated before the failure: %s", fees(got))
		}
		poly.Recover(polytest.RouteMarkets)

		poly.Close()
		_, err = collect.FillFees(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "Gamma ("+poly.URL+") did not answer for market "+b.Slug) ||
			!strings.Contains(err.Error(), "0 of the 1 markets looked up") {
			t.Errorf("Gamma unreachable: %v", err)
		}
	})
}

// onEachStore runs test on each store (memory and Postgres) as a parallel
// subtest, beside a fake Polymarket of its own.
func onEachStore(t *testing.T, test func(t *testing.T, ctx context.Context, st store.Store, poly *polytest.Server)) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, context.Background(), newStore(t), polytest.New(t, polytest.Options{}))
		})
	}
}
