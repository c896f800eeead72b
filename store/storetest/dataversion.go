package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// dataVersionTests check store.DataVersions: what a replay's result is
// kept under beside the market's updated_at, which appends leave as it is.
// Every write that changes a market's data changes its version, and one
// that changes nothing leaves it.
func dataVersionTests() []test {
	return []test{
		{"Appends", testDataVersionAppends},
		{"Import", testDataVersionImport},
		{"Markets", testDataVersionMarkets},
	}
}

// dataVersion is the market's data version, as a job's id takes it.
func dataVersion(t *testing.T, s store.Store, slug string) string {
	t.Helper()
	vs, err := store.DataVersions(context.Background(), s, []string{slug})
	mustOK(t, err, "data versions")
	if len(vs) != 1 {
		t.Fatalf("%d data versions of one market", len(vs))
	}
	return vs[0].String()
}

func testDataVersionAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := upsert(t, s, newMarket(store.BTC, store.M15, at(0), store.OutcomeUp))
	seen := map[string]string{}
	step := func(what string, changes bool) {
		t.Helper()
		v := dataVersion(t, s, m.Slug)
		if was, ok := seen[v]; ok && changes {
			t.Errorf("after %s the data version is %s, as it was %s", what, v, was)
		}
		if _, ok := seen[v]; !ok && !changes {
			t.Errorf("%s changed the data version to %s, a write that stores nothing", what, v)
		}
		if _, ok := seen[v]; !ok {
			seen[v] = what
		}
	}
	step("nothing stored", true)
	snaps := importSnaps(m.StartTime, 4, 0.5)
	mustOK(t, errOf(s.AppendSnapshots(ctx, m.Slug, snaps[:3])), "append snapshots")
	step("snapshots appended", true)
	mustOK(t, errOf(s.AppendSnapshots(ctx, m.Slug, snaps[:3])), "append snapshots again")
	step("the same snapshots appended again", false)
	// A snapshot among the stored ones (not the newest): the collector's
	// late flush, an import of an hour in the middle.
	late := snaps[3]
	late.Time = snaps[0].Time.Add(100 * time.Millisecond)
	mustOK(t, errOf(s.AppendSnapshots(ctx, m.Slug, []store.Snapshot{late})), "append a snapshot among others")
	step("a snapshot appended among stored ones", true)

	trade := store.MarketTrade{Time: m.StartTime.Add(time.Second), Outcome: store.OutcomeUp, Side: store.SideBuy, Price: 0.5, Size: 10, TxHash: "0x01"}
	mustOK(t, errOf(s.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{trade})), "append trades")
	step("a trade appended", true)
	mustOK(t, errOf(s.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{trade})), "append trades again")
	step("the same trade appended again", false)
	// An earlier trade (a backfill after a restart).
	early := trade
	early.Time, early.TxHash = m.StartTime.Add(time.Millisecond), "0x00"
	mustOK(t, errOf(s.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{early})), "append an earlier trade")
	step("an earlier trade appended", true)

	gap := store.Gap{From: m.StartTime.Add(time.Minute), To: m.StartTime.Add(2 * time.Minute), Kind: store.GapTrades}
	mustOK(t, errOf(s.RecordGaps(ctx, m.Slug, []store.Gap{gap})), "record a gap")
	step("a trades gap recorded", true)
	mustOK(t, errOf(s.RecordGaps(ctx, m.Slug, []store.Gap{gap})), "record the gap again")
	step("the same gap recorded again", false)
	mustOK(t, s.RemoveGaps(ctx, m.Slug, []store.Gap{{From: gap.From, To: gap.From.Add(30 * time.Second), Kind: store.GapTrades}}), "remove part of the gap")
	step("part of the gap removed (a backfill)", true)
}

// testDataVersionImport: an archive import that adds snapshots and trades
// to a stored market changes its data version once committed, and not
// before.
func testDataVersionImport(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := upsert(t, s, newMarket(store.BTC, store.M15, at(0), store.OutcomeUp))
	mustOK(t, errOf(s.AppendSnapshots(ctx, m.Slug, importSnaps(m.StartTime, 4, 0.5))), "record snapshots")
	before := dataVersion(t, s, m.Slug)
	tx := begin(t, s)
	_, err := tx.AddMarket(ctx, m, "pmxt-v2")
	mustOK(t, err, "add market")
	mustOK(t, errOf(tx.AppendSnapshots(ctx, m.Slug, importSnaps(m.StartTime.Add(time.Minute), 4, 0.4))), "import snapshots")
	trade := store.MarketTrade{Time: m.StartTime.Add(time.Minute), Outcome: store.OutcomeDown, Side: store.SideSell, Price: 0.6, Size: 2, TxHash: "0x02"}
	mustOK(t, errOf(tx.AppendMarketTrades(ctx, m.Slug, []store.MarketTrade{trade})), "import trades")
	if got := dataVersion(t, s, m.Slug); got != before {
		t.Errorf("data version %s while the import is under way, %s before: nothing is seen until Commit", got, before)
	}
	_, _, err = tx.Commit(ctx, store.Import{Key: "dv", Source: "pmxt-v2"})
	mustOK(t, err, "commit")
	vs, err := store.DataVersions(ctx, s, []string{m.Slug})
	mustOK(t, err, "data versions")
	if vs[0].N != 8 || vs[0].Trades != 1 || vs[0].String() == before {
		t.Errorf("data version after the import %+v (%s), before %s: want 8 snapshots, 1 trade, and a new version", vs[0], vs[0], before)
	}
}

// testDataVersionMarkets: versions of many markets come in the order asked
// (a slug twice, twice), and a slug of no market is ErrNotFound.
func testDataVersionMarkets(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := upsert(t, s, newMarket(store.BTC, store.M15, at(0), store.OutcomeUp))
	b := upsert(t, s, newMarket(store.ETH, store.M15, at(0), store.OutcomeDown))
	mustOK(t, errOf(s.AppendSnapshots(ctx, b.Slug, importSnaps(b.StartTime, 2, 0.5))), "append snapshots")
	gaps := []store.Gap{
		{From: b.StartTime.Add(time.Minute), To: b.StartTime.Add(2 * time.Minute), Kind: store.GapTrades},
		{From: b.StartTime.Add(90 * time.Second), To: b.StartTime.Add(3 * time.Minute)},
	}
	mustOK(t, errOf(s.RecordGaps(ctx, b.Slug, gaps)), "record gaps")
	vs, err := store.DataVersions(ctx, s, []string{b.Slug, a.Slug, b.Slug})
	mustOK(t, err, "data versions")
	if len(vs) != 3 || vs[0].N != 2 || len(vs[0].Gaps) != 2 || vs[1].N != 0 || vs[1].Trades != 0 || len(vs[1].Gaps) != 0 ||
		vs[2].String() != vs[0].String() {
		t.Errorf("data versions %+v", vs)
	}
	for i, g := range gaps { // as stored: to the microsecond, in UTC
		gaps[i].From, gaps[i].To = g.From.UTC(), g.To.UTC()
	}
	if want := (store.DataVersion{SeriesCount: store.SeriesCount{N: 2}, Gaps: gaps}).String(); len(vs) > 0 && vs[0].String() != want {
		t.Errorf("data version %s, want %s (the gaps as recorded)", vs[0], want)
	}
	if _, err := store.DataVersions(ctx, s, []string{a.Slug, "no-such-market"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("data versions of a slug of no market: %v, want ErrNotFound", err)
	}
	// GetMarketVersion: the record and the version, as read apart.
	m, v, err := store.GetMarketVersion(ctx, s, b.Slug)
	mustOK(t, err, "market version")
	checkMarket(t, "GetMarketVersion beside upsert", b, m)
	if len(vs) > 0 && v.String() != vs[0].String() {
		t.Errorf("GetMarketVersion read version %s, DataVersions %s", v, vs[0])
	}
	if _, _, err := store.GetMarketVersion(ctx, s, "no-such-market"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("market version of a slug of no market: %v, want ErrNotFound", err)
	}
}
