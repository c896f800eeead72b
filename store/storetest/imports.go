package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// importTests check archive imports (DESIGN 9): all or nothing, recorded
// rows win, a re-run changes nothing, and data sources.
func importTests() []test {
	return []test{
		{"DataSourcesDefault", testDataSourcesDefault},
		{"CommitsAll", testImportCommits},
		{"RollbackLeavesStore", testImportRollback},
		{"RecordedWins", testImportRecordedWins},
		{"SameKeyChangesNothing", testImportSameKey},
		{"ReplaceGaps", testImportReplaceGaps},
		{"ReplaceGapsTouchingStored", testImportReplaceGapsTouching},
		{"CreatedMarketAppends", testImportCreatedAppends},
		{"CreatedMarketTradesAndGaps", testImportCreatedTradesAndGaps},
		{"CreatedMarketsInterleaved", testImportCreatedInterleaved},
		{"StoredMarketAppends", testImportStoredAppends},
		{"ImportedMarketGainsTicks", testImportedMarketGainsTicks},
		{"NotFiniteSnapshots", testImportNotFiniteSnapshots},
	}
}

func importer(t *testing.T, s store.Store) store.ImportStore {
	t.Helper()
	is, ok := s.(store.ImportStore)
	if !ok {
		t.Fatalf("%T does not keep imports (store.ImportStore)", s)
	}
	return is
}

func begin(t *testing.T, s store.Store) store.ImportTx {
	t.Helper()
	tx, err := importer(t, s).BeginImport(context.Background())
	mustOK(t, err, "begin import")
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func importSnaps(start time.Time, n int, price float64) []store.Snapshot {
	out := make([]store.Snapshot, n)
	for i := range out {
		out[i] = store.Snapshot{Time: start.Add(time.Duration(i) * 300 * time.Millisecond), CoinPrice: 100000, PriceUp: price, PriceDown: 1 - price + 0.01,
			BookUp:   &store.Book{Bids: []store.Level{{Price: price - 0.01, Size: 10}}, Asks: []store.Level{{Price: price, Size: 5}}},
			BookDown: &store.Book{Bids: []store.Level{{Price: 1 - price, Size: 3}}, Asks: []store.Level{{Price: 1 - price + 0.01, Size: 4}}}}
	}
	return out
}

func testDataSourcesDefault(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := upsert(t, s, newMarket(store.BTC, store.M5, at(0), ""))
	if got := get(t, s, m.Slug).DataSources; !slices.Equal(got, []string{store.DataRecorder}) {
		t.Fatalf("new market's data sources %v, want [recorder]", got)
	}
	m.DataSources = []string{store.DataRecorder, "pmxt-v2"}
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{m}), "upsert with sources")
	m.DataSources = nil
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{m}), "upsert without sources")
	if got := get(t, s, m.Slug).DataSources; !slices.Equal(got, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Fatalf("data sources %v after an upsert without, want them kept", got)
	}
}

func testImportCommits(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	m := newMarket(store.BTC, store.M5, at(0), "")
	created, err := tx.AddMarket(ctx, m, "pmxt-v2")
	mustOK(t, err, "add market")
	if !created {
		t.Fatal("AddMarket did not create a new market")
	}
	got, err := tx.MarketsByCondition(ctx, []string{m.ConditionID, "other"})
	mustOK(t, err, "markets by condition")
	if len(got) != 1 || got[0].Slug != m.Slug {
		t.Fatalf("markets by condition %v, want %s", slugsOf(got), m.Slug)
	}
	if _, err := s.GetMarket(ctx, m.Slug); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("market visible before commit: %v", err)
	}
	snaps := importSnaps(m.StartTime, 10, 0.5)
	_, err = tx.AppendSnapshots(ctx, m.Slug, snaps)
	mustOK(t, err, "append snapshots")
	trades := []store.MarketTrade{{Time: m.StartTime.Add(time.Second), Outcome: store.OutcomeUp, Price: 0.5, Size: 10, Side: store.SideBuy, TxHash: "0xa"}}
	_, err = tx.AppendMarketTrades(ctx, m.Slug, trades)
	mustOK(t, err, "append trades")
	gap := store.Gap{From: m.StartTime.Add(3 * time.Second), To: m.EndTime}
	mustOK(t, tx.ReplaceGaps(ctx, m.Slug, m.StartTime, m.EndTime, []store.Gap{gap}), "replace gaps")
	imp, fresh, err := tx.Commit(ctx, store.Import{Key: "k1", Source: "pmxt-v2", Files: []string{"a.parquet"}, From: m.StartTime, To: m.EndTime, Skipped: 7})
	mustOK(t, err, "commit")
	if !fresh || imp.Markets != 1 || imp.Snapshots != 10 || imp.Trades != 1 || imp.Gaps != 1 || imp.Skipped != 7 || imp.ID == 0 {
		t.Fatalf("commit: %+v fresh %v, want 1 market, 10 snapshots, 1 trade, 1 gap, 7 skipped", imp, fresh)
	}
	stored := get(t, s, m.Slug)
	if !slices.Equal(stored.DataSources, []string{"pmxt-v2"}) {
		t.Errorf("imported market's data sources %v, want [pmxt-v2]", stored.DataSources)
	}
	checkStoredSnapshots(t, s, m.Slug, "imported snapshots", snaps)
	gaps, err := s.ListGaps(ctx, m.Slug)
	mustOK(t, err, "list gaps")
	if len(gaps) != 1 || !gaps[0].From.Equal(gap.From) || !gaps[0].To.Equal(gap.To.UTC()) {
		t.Errorf("gaps %v, want [%v]", gaps, gap)
	}
	imps, err := importer(t, s).ListImports(ctx)
	mustOK(t, err, "list imports")
	if len(imps) != 1 || imps[0].Key != "k1" || imps[0].Source != "pmxt-v2" || !slices.Equal(imps[0].Files, []string{"a.parquet"}) ||
		!imps[0].From.Equal(m.StartTime) || !imps[0].To.Equal(m.EndTime) || imps[0].Snapshots != 10 {
		t.Errorf("imports %+v", imps)
	}
}

func testImportRollback(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := upsert(t, s, newMarket(store.ETH, store.M15, at(0), ""))
	tx := begin(t, s)
	m := newMarket(store.BTC, store.M5, at(0), "")
	_, err := tx.AddMarket(ctx, m, "ws-jsonl")
	mustOK(t, err, "add market")
	_, err = tx.AppendSnapshots(ctx, m.Slug, importSnaps(m.StartTime, 5, 0.4))
	mustOK(t, err, "append snapshots")
	_, err = tx.AddMarket(ctx, rec, "ws-jsonl")
	mustOK(t, err, "add source to a recorded market")
	_, err = tx.AppendSnapshots(ctx, rec.Slug, importSnaps(rec.StartTime, 5, 0.4))
	mustOK(t, err, "append snapshots to a recorded market")
	mustOK(t, tx.Rollback(ctx), "rollback")
	if _, err := s.GetMarket(ctx, m.Slug); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rolled back market stored: %v", err)
	}
	if got := get(t, s, rec.Slug).DataSources; !slices.Equal(got, []string{store.DataRecorder}) {
		t.Errorf("rolled back source kept: %v", got)
	}
	if _, n, _ := s.ListSnapshots(ctx, rec.Slug, store.SnapshotQuery{}); n != 0 {
		t.Errorf("%d rolled back snapshots stored", n)
	}
	imps, err := importer(t, s).ListImports(ctx)
	mustOK(t, err, "list imports")
	if len(imps) != 0 {
		t.Errorf("rolled back import listed: %+v", imps)
	}
	// The store takes a new import after a rollback.
	tx2 := begin(t, s)
	_, _, err = tx2.Commit(ctx, store.Import{Key: "after", Source: "ws-jsonl"})
	mustOK(t, err, "commit after rollback")
}

// testImportNotFiniteSnapshots: an import's snapshot with a NaN or an
// infinity is refused (ErrInvalid) as SnapshotStore.AppendSnapshots
// refuses it, its batch written in no part.
func testImportNotFiniteSnapshots(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	m := newMarket(store.BTC, store.M5, at(0), "")
	_, err := tx.AddMarket(ctx, m, "ws-jsonl")
	mustOK(t, err, "add market")
	snaps := importSnaps(m.StartTime, 3, 0.4)
	snaps[1].PriceUp = math.NaN()
	snaps[2].BookDown.Asks[0].Size = math.Inf(1)
	if n, err := tx.AppendSnapshots(ctx, m.Slug, snaps); !errors.Is(err, store.ErrInvalid) || n != 0 {
		t.Errorf("import: append snapshots with a NaN price and an infinite size: %d stored, %v; want none, ErrInvalid", n, err)
	}
	_, _, err = tx.Commit(ctx, store.Import{Key: "not-finite", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	if _, n, err := s.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{}); err != nil || n != 0 {
		t.Errorf("%d snapshots stored (%v), want none", n, err)
	}
}

func testImportRecordedWins(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := newMarket(store.BTC, store.M5, at(0), "")
	rec = upsert(t, s, rec)
	recorded := importSnaps(rec.StartTime, 4, 0.6)
	mustOK(t, errOf(s.AppendSnapshots(ctx, rec.Slug, recorded)), "record snapshots")
	before := get(t, s, rec.Slug)
	tx := begin(t, s)
	other := rec
	other.MarketID, other.UpstreamSlug = "different", "other"
	created, err := tx.AddMarket(ctx, other, "pmxt-v2")
	mustOK(t, err, "add market")
	if created {
		t.Fatal("AddMarket created a market over a stored one")
	}
	imported := importSnaps(rec.StartTime, 8, 0.3) // the first 4 collide
	_, err = tx.AppendSnapshots(ctx, rec.Slug, imported)
	mustOK(t, err, "append")
	imp, _, err := tx.Commit(ctx, store.Import{Key: "k", Source: "pmxt-v2"})
	mustOK(t, err, "commit")
	if imp.Snapshots != 4 || imp.Markets != 0 {
		t.Errorf("commit counted %d snapshots, %d markets; want 4 new, 0", imp.Snapshots, imp.Markets)
	}
	got := get(t, s, rec.Slug)
	if got.MarketID != rec.MarketID || got.UpstreamSlug != rec.UpstreamSlug || !slices.Equal(got.DataSources, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Errorf("stored market %s/%s sources %v: the recorded one must win, with pmxt-v2 added", got.MarketID, got.UpstreamSlug, got.DataSources)
	}
	// Its data changed: caches keyed by the record (the API's settled
	// snapshot pages) must see a new one.
	if !got.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("updated_at %v after an import added snapshots and a source, %v before", got.UpdatedAt, before.UpdatedAt)
	}
	list, _, err := s.ListSnapshots(ctx, rec.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	mustOK(t, err, "list")
	checkSnapshots(t, "recorded then imported", append(slices.Clone(recorded), imported[4:]...), list, true)
}

// testImportedMarketGainsTicks: a market an earlier import created gains
// a later import's tick changes at new instants (its tick size the
// latest); a recorded market keeps its own.
func testImportedMarketGainsTicks(t *testing.T, s store.Store) {
	ctx := context.Background()
	tick := func(at time.Time, size float64) store.TickSizeChange {
		return store.TickSizeChange{Time: at, TickSize: size}
	}
	imported := newMarket(store.BTC, store.H4, at(0), "")
	imported.TickSizeChanges = []store.TickSizeChange{tick(imported.StartTime.Add(time.Minute), 0.001)}
	tx := begin(t, s)
	_, err := tx.AddMarket(ctx, imported, "pmxt-v2")
	mustOK(t, err, "add market")
	_, _, err = tx.Commit(ctx, store.Import{Key: "ticks-1", Source: "pmxt-v2"})
	mustOK(t, err, "commit")
	rec := upsert(t, s, newMarket(store.ETH, store.M15, at(0), ""))

	later := []store.TickSizeChange{tick(imported.StartTime.Add(time.Minute), 0.01), tick(imported.StartTime.Add(2*time.Hour+500*time.Microsecond), 0.01)}
	tx = begin(t, s)
	again := imported
	again.TickSizeChanges = later
	created, err := tx.AddMarket(ctx, again, "pmxt-v2")
	mustOK(t, err, "add the imported market again")
	recAgain := rec
	recAgain.TickSizeChanges = later
	_, err = tx.AddMarket(ctx, recAgain, "pmxt-v2")
	mustOK(t, err, "add the recorded market")
	_, _, err = tx.Commit(ctx, store.Import{Key: "ticks-2", Source: "pmxt-v2"})
	mustOK(t, err, "commit")
	if created {
		t.Fatal("AddMarket created a market over a stored one")
	}
	got := get(t, s, imported.Slug)
	want := []store.TickSizeChange{imported.TickSizeChanges[0], later[1]}
	if len(got.TickSizeChanges) != len(want) || got.TickSize == nil || *got.TickSize != 0.01 {
		t.Fatalf("imported market's ticks %v (tick size %v), want %v and tick size 0.01", got.TickSizeChanges, got.TickSize, want)
	}
	for i := range want {
		if !got.TickSizeChanges[i].Time.Equal(want[i].Time) || got.TickSizeChanges[i].TickSize != want[i].TickSize {
			t.Fatalf("imported market's ticks %v, want %v: the stored change at an instant wins", got.TickSizeChanges, want)
		}
	}
	if r := get(t, s, rec.Slug); len(r.TickSizeChanges) != len(rec.TickSizeChanges) {
		t.Errorf("recorded market's ticks %v, want its own %v: recorded wins", r.TickSizeChanges, rec.TickSizeChanges)
	}
}

func testImportSameKey(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := newMarket(store.SOL, store.H1, at(0), "")
	run := func() (store.Import, bool) {
		tx := begin(t, s)
		_, err := tx.AddMarket(ctx, m, "ws-jsonl")
		mustOK(t, err, "add market")
		_, err = tx.AppendSnapshots(ctx, m.Slug, importSnaps(m.StartTime, 3, 0.5))
		mustOK(t, err, "append")
		imp, fresh, err := tx.Commit(ctx, store.Import{Key: "same", Source: "ws-jsonl", Files: []string{"x"}})
		mustOK(t, err, "commit")
		return imp, fresh
	}
	first, fresh := run()
	if !fresh || first.Snapshots != 3 {
		t.Fatalf("first run %+v fresh %v", first, fresh)
	}
	second, fresh := run()
	if fresh || second.ID != first.ID || second.Snapshots != 3 {
		t.Fatalf("second run %+v fresh %v, want the first import back", second, fresh)
	}
	imps, err := importer(t, s).ListImports(ctx)
	mustOK(t, err, "list imports")
	if len(imps) != 1 {
		t.Fatalf("%d imports listed after a re-run, want 1", len(imps))
	}
}

func testImportReplaceGaps(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := upsert(t, s, newMarket(store.BTC, store.H1, at(0), ""))
	st := m.StartTime.UTC()
	sec := func(n int) time.Time { return st.Add(time.Duration(n) * time.Second) }
	mustOK(t, errOf(s.RecordGaps(ctx, m.Slug, []store.Gap{{From: sec(0), To: sec(100)}, {From: sec(200), To: sec(300)}})), "record gaps")
	tx := begin(t, s)
	mustOK(t, tx.ReplaceGaps(ctx, m.Slug, sec(50), sec(250), []store.Gap{{From: sec(60), To: sec(70)}}), "replace gaps")
	_, _, err := tx.Commit(ctx, store.Import{Key: "g", Source: "pmxt-v2"})
	mustOK(t, err, "commit")
	got, err := s.ListGaps(ctx, m.Slug)
	mustOK(t, err, "list gaps")
	want := []store.Gap{{From: sec(0), To: sec(50)}, {From: sec(60), To: sec(70)}, {From: sec(250), To: sec(300)}}
	if len(got) != len(want) {
		t.Fatalf("gaps %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].From.Equal(want[i].From) || !got[i].To.Equal(want[i].To) {
			t.Fatalf("gaps %v, want %v", got, want)
		}
	}
}

// testImportReplaceGapsTouching: gaps an import adds that touch or overlap
// a stored market's gaps outside the range are merged with them, as
// RecordGaps merges: an outage across the hour between two imports of a
// market, an hour file at a time, is one gap, not two touching at the
// hour.
func testImportReplaceGapsTouching(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := upsert(t, s, newMarket(store.BTC, store.H4, at(0), ""))
	sec := func(n int) time.Time { return m.StartTime.UTC().Add(time.Duration(n) * time.Second) }
	mustOK(t, errOf(s.RecordGaps(ctx, m.Slug, []store.Gap{{From: sec(0), To: sec(50)}, {From: sec(200), To: sec(300)}})), "record gaps")
	tx := begin(t, s)
	added := []store.Gap{{From: sec(50), To: sec(70)}, {From: sec(100), To: sec(120)}, {From: sec(110), To: sec(130)}, {From: sec(180), To: sec(200)}}
	mustOK(t, tx.ReplaceGaps(ctx, m.Slug, sec(50), sec(200), added), "replace gaps")
	_, _, err := tx.Commit(ctx, store.Import{Key: "touching", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	got, err := s.ListGaps(ctx, m.Slug)
	mustOK(t, err, "list gaps")
	want := []store.Gap{{From: sec(0), To: sec(70)}, {From: sec(100), To: sec(130)}, {From: sec(180), To: sec(300)}}
	same := len(got) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = got[i].From.Equal(want[i].From) && got[i].To.Equal(want[i].To) && got[i].Kind == want[i].Kind
	}
	if !same {
		t.Fatalf("gaps %v after the import, want %v: touching and overlapping gaps merged", got, want)
	}
}

// testImportCreatedAppends appends to a market the import created in
// batches oldest first (several chunks' worth), then a batch reaching back
// among them (some new, some repeated) and one repeated whole: every
// distinct snapshot is stored once, the first written of a time wins, and
// the import counts each once.
func testImportCreatedAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	m := newMarket(store.SOL, store.H1, at(0), "")
	_, err := tx.AddMarket(ctx, m, "ws-jsonl")
	mustOK(t, err, "add market")
	all := importSnaps(m.StartTime, 3000, 0.5)
	for _, part := range [][2]int{{0, 1100}, {1100, 1101}, {1101, 2000}, {2500, 3000}} {
		_, err := tx.AppendSnapshots(ctx, m.Slug, all[part[0]:part[1]])
		mustOK(t, err, "append snapshots")
	}
	// Back among them: 1900..2500, of which 2000..2500 are new; the repeats
	// carry another price, which must not win.
	back := importSnaps(all[1900].Time, 600, 0.3)
	copy(back[100:], all[2000:2500])
	_, err = tx.AppendSnapshots(ctx, m.Slug, back)
	mustOK(t, err, "append snapshots reaching back")
	_, err = tx.AppendSnapshots(ctx, m.Slug, all[2600:2700])
	mustOK(t, err, "append snapshots again")
	imp, _, err := tx.Commit(ctx, store.Import{Key: "created-appends", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	if imp.Snapshots != 3000 {
		t.Errorf("import counts %d snapshots, want 3000", imp.Snapshots)
	}
	checkStoredSnapshots(t, s, m.Slug, "created market's snapshots", all)
}

// testImportStoredAppends appends to stored markets: to one, several
// chunks' worth oldest first, around recorded snapshots, then a batch
// reaching back among them and across the recorded ones; to another, a
// stretch before all it recorded. Every distinct snapshot is stored once,
// the recorded one of a time wins, then the first the import wrote, and
// the import counts those the markets gained.
func testImportStoredAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := upsert(t, s, newMarket(store.SOL, store.H1, at(0), ""))
	all := importSnaps(rec.StartTime, 3000, 0.5)
	recorded := importSnaps(all[2000].Time, 100, 0.6)
	mustOK(t, errOf(s.AppendSnapshots(ctx, rec.Slug, recorded)), "record snapshots")
	later := upsert(t, s, newMarket(store.ETH, store.H1, at(0), ""))
	laterRec := importSnaps(later.StartTime.Add(30*time.Minute), 10, 0.6)
	mustOK(t, errOf(s.AppendSnapshots(ctx, later.Slug, laterRec)), "record snapshots")
	earlier := importSnaps(later.StartTime, 1000, 0.4)

	tx := begin(t, s)
	for _, m := range []store.Market{rec, later} {
		_, err := tx.AddMarket(ctx, m, "ws-jsonl")
		mustOK(t, err, "add market")
	}
	for _, part := range [][2]int{{0, 1100}, {1100, 1101}, {1101, 1500}, {2500, 3000}} {
		_, err := tx.AppendSnapshots(ctx, rec.Slug, all[part[0]:part[1]])
		mustOK(t, err, "append snapshots")
	}
	_, err := tx.AppendSnapshots(ctx, later.Slug, earlier)
	mustOK(t, err, "append snapshots before the recorded ones")
	// Back among them: 1400..2100, of which 1500..2000 are new; the
	// repeats carry another price, which must not win.
	back := importSnaps(all[1400].Time, 700, 0.3)
	_, err = tx.AppendSnapshots(ctx, rec.Slug, back)
	mustOK(t, err, "append snapshots reaching back")
	_, err = tx.AppendSnapshots(ctx, rec.Slug, all[2600:2700])
	mustOK(t, err, "append snapshots again")
	imp, _, err := tx.Commit(ctx, store.Import{Key: "stored-appends", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	if imp.Snapshots != 2500+1000 || imp.Markets != 0 {
		t.Errorf("import counts %d snapshots, %d markets; want %d, 0", imp.Snapshots, imp.Markets, 2500+1000)
	}
	checkStoredSnapshots(t, s, rec.Slug, "stored market's snapshots", slices.Concat(all[:1500], back[100:600], recorded, all[2500:]))
	checkStoredSnapshots(t, s, later.Slug, "snapshots imported before the recorded ones", slices.Concat(earlier, laterRec))
}

// testImportCreatedTradesAndGaps appends trades to a market the import
// created oldest first, with duplicates inside a batch and across two
// (at the time one ends and the next starts), then a batch reaching back
// among them; and replaces its gaps twice: each distinct trade is stored
// once and counted once, and the gaps are the second replacement's.
func testImportCreatedTradesAndGaps(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	m := newMarket(store.ETH, store.H1, at(0), "")
	_, err := tx.AddMarket(ctx, m, "ws-jsonl")
	mustOK(t, err, "add market")
	trade := func(ms int, hash string) store.MarketTrade {
		return store.MarketTrade{Time: m.StartTime.Add(time.Duration(ms) * time.Millisecond), Outcome: store.OutcomeUp, Price: 0.5, Size: 2, Side: store.SideBuy, TxHash: hash}
	}
	var want []store.MarketTrade
	for i := range 300 {
		want = append(want, trade(100*i, fmt.Sprintf("0x%03d", i)))
	}
	want = append(want, trade(100*299, "0xsame-time"))
	batches := [][]store.MarketTrade{
		append(slices.Clone(want[:100]), want[50], want[99]),             // repeats inside
		append([]store.MarketTrade{want[99]}, want[100:200]...),          // the previous batch's newest again
		{want[200], want[200]},                                           // one, twice
		append(slices.Clone(want[201:]), want[300]),                      // to the end, the last time twice
		append(slices.Clone(want[150:160]), want[0], want[300], want[5]), // back among them: all stored
	}
	for i, b := range batches {
		_, err := tx.AppendMarketTrades(ctx, m.Slug, b)
		mustOK(t, err, fmt.Sprintf("append trades, batch %d", i))
	}
	gap := func(from, to int) store.Gap {
		return store.Gap{From: m.StartTime.Add(time.Duration(from) * time.Second), To: m.StartTime.Add(time.Duration(to) * time.Second)}
	}
	mustOK(t, tx.ReplaceGaps(ctx, m.Slug, m.StartTime, m.EndTime, []store.Gap{gap(10, 20), gap(30, 40)}), "replace gaps")
	mustOK(t, tx.ReplaceGaps(ctx, m.Slug, m.StartTime.Add(25*time.Second), m.EndTime, []store.Gap{gap(50, 60)}), "replace gaps again")
	imp, _, err := tx.Commit(ctx, store.Import{Key: "created-trades", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	if imp.Trades != int64(len(want)) {
		t.Errorf("import counts %d trades, want %d", imp.Trades, len(want))
	}
	got, n, err := s.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true, Limit: 1000})
	mustOK(t, err, "list trades")
	slices.SortFunc(want, store.CompareMarketTrades)
	if n != len(want) || !slices.EqualFunc(got, want, func(a, b store.MarketTrade) bool { return store.CompareMarketTrades(a, b) == 0 }) {
		t.Errorf("%d trades stored, want the %d distinct ones", n, len(want))
	}
	gaps, err := s.ListGaps(ctx, m.Slug)
	mustOK(t, err, "list gaps")
	if !slices.EqualFunc(gaps, []store.Gap{gap(10, 20), gap(50, 60)}, func(a, b store.Gap) bool { return a.From.Equal(b.From) && a.To.Equal(b.To) && a.Kind == b.Kind }) {
		t.Errorf("gaps %v, want [10s-20s 50s-60s]", gaps)
	}
}

// variedSnaps are n snapshots from start, every 300 ms, whose prices and
// ten-level books change at every one, as a busy market's do: megabytes
// of them, once a store has encoded them.
func variedSnaps(start time.Time, n int, seed uint64) []store.Snapshot {
	out := make([]store.Snapshot, n)
	x := seed*2654435761 + 1
	next := func(k uint64) float64 { // 1..k, pseudo-random
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return float64(x%k + 1)
	}
	side := func(from, step float64) []store.Level {
		l := make([]store.Level, 10)
		for i := range l {
			l[i] = store.Level{Price: from + step*float64(i), Size: next(100000) / 100}
		}
		return l
	}
	for i := range out {
		up := next(80)/100 + 0.1
		out[i] = store.Snapshot{Time: start.Add(time.Duration(i) * 300 * time.Millisecond), CoinPrice: 90000 + next(1000000)/100,
			PriceUp: up, PriceDown: 1 - up,
			BookUp:   &store.Book{Bids: side(up-0.01, -0.01), Asks: side(up, 0.01)},
			BookDown: &store.Book{Bids: side(1-up-0.01, -0.01), Asks: side(1-up, 0.01)}}
	}
	return out
}

// testImportCreatedInterleaved writes several markets the import created
// the way an import of a long stream does: their snapshots and trades in
// batches taking turns, many megabytes in all, each market written again
// with what was learnt of it (a tick change) after its first rows. All of
// it is stored, the markets as last written (already to a read inside the
// import), and counted.
func testImportCreatedInterleaved(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	const markets, perMarket, batch = 5, 12000, 2000
	var ms []store.Market
	snaps := map[string][]store.Snapshot{}
	trades := map[string][]store.MarketTrade{}
	for i := range markets {
		m := newMarket(store.BTC, store.H1, at(60*i), "")
		m.TickSizeChanges = nil
		_, err := tx.AddMarket(ctx, m, "ws-jsonl")
		mustOK(t, err, "add market")
		ms = append(ms, m)
		snaps[m.Slug] = variedSnaps(m.StartTime, perMarket, uint64(i+1))
		for k := range perMarket / 4 {
			trades[m.Slug] = append(trades[m.Slug], store.MarketTrade{Time: m.StartTime.Add(time.Duration(k) * 1200 * time.Millisecond),
				Outcome: []string{store.OutcomeUp, store.OutcomeDown}[k%2], Price: 0.5, Size: float64(1 + k%97),
				Side: store.SideBuy, TxHash: fmt.Sprintf("0x%d-%064d", i, k)})
		}
	}
	for from := 0; from < perMarket; from += batch {
		for i, m := range ms {
			_, err := tx.AppendSnapshots(ctx, m.Slug, snaps[m.Slug][from:from+batch])
			mustOK(t, err, "append snapshots")
			_, err = tx.AppendMarketTrades(ctx, m.Slug, trades[m.Slug][from/4:(from+batch)/4])
			mustOK(t, err, "append trades")
			if from == batch { // learnt after the first rows
				ms[i].TickSizeChanges = []store.TickSizeChange{{Time: m.StartTime.Add(time.Minute), TickSize: 0.001}}
				ms[i].TickSize = ptr(0.001)
				_, err := tx.AddMarket(ctx, ms[i], "ws-jsonl")
				mustOK(t, err, "add market again")
			}
		}
	}
	inside, err := tx.MarketsByCondition(ctx, []string{ms[0].ConditionID})
	mustOK(t, err, "markets by condition")
	if len(inside) != 1 || len(inside[0].TickSizeChanges) != 1 {
		t.Fatalf("inside the import, markets by condition %+v, want the market with its tick change", inside)
	}
	imp, _, err := tx.Commit(ctx, store.Import{Key: "interleaved", Source: "ws-jsonl"})
	mustOK(t, err, "commit")
	if imp.Markets != markets || imp.Snapshots != markets*perMarket || imp.Trades != markets*perMarket/4 {
		t.Errorf("import counts %d markets, %d snapshots, %d trades, want %d, %d, %d",
			imp.Markets, imp.Snapshots, imp.Trades, markets, markets*perMarket, markets*perMarket/4)
	}
	for _, m := range ms {
		checkStoredSnapshots(t, s, m.Slug, m.Slug+"'s snapshots", snaps[m.Slug])
		checkMarketTrades(t, s, m.Slug, store.MarketTradeQuery{Ascending: true, Limit: perMarket}, trades[m.Slug], perMarket/4)
		stored := get(t, s, m.Slug)
		if len(stored.TickSizeChanges) != 1 || stored.TickSize == nil || *stored.TickSize != 0.001 {
			t.Errorf("%s: tick changes %v, tick size %v, want the change learnt after the first rows", m.Slug, stored.TickSizeChanges, stored.TickSize)
		}
	}
}

// checkStoredSnapshots fails the test unless the market's stored
// snapshots, with their books, are want: as many, and each the same.
func checkStoredSnapshots(t *testing.T, s store.Store, slug, what string, want []store.Snapshot) {
	t.Helper()
	got, n, err := s.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	mustOK(t, err, "list snapshots")
	if n != len(want) {
		t.Fatalf("%s: %d snapshots stored, want %d", what, n, len(want))
	}
	checkSnapshots(t, what, want, got, true)
}
