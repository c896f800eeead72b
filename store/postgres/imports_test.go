package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// importInto begins an import on s and adds to it the market the store
// holds as slug, which must already be stored (not created by the
// import), and returns it with the market as stored; the import is rolled
// back at the test's end unless committed.
func importInto(ctx context.Context, t *testing.T, s *postgres.Store, slug string) (store.ImportTx, store.Market) {
	t.Helper()
	m, err := s.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	if created, err := tx.AddMarket(ctx, m, "pmxt-v2"); err != nil || created {
		t.Fatalf("import: add the stored market: created %v, %v", created, err)
	}
	return tx, m
}

// TestImportHoldsNoLocksOnStoredMarkets runs an import into a market the
// collector records (its row, its snapshot series, its gaps) and, while the
// import is open, the collector's writes to that market: an upsert of the
// market, an edit (SwapMarket), an append of snapshots and a gap. Each
// must go through at once, where the import held the market's rows until
// it committed and each waited out lock_timeout and failed. After Commit
// the market holds both: the recorded snapshots where both have a time
// (recorded wins), the import's in the stretch it filled, the live ones;
// the import's source and the edit's tick change; the gaps the import
// measured and the live one.
func TestImportHoldsNoLocksOnStoredMarkets(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	all := newMarketSim(11, start).series(2400)
	// What the import has of the same instants: other prices and books.
	imported := newMarketSim(12, start).series(len(all))
	for i := range imported {
		imported[i].Time = all[i].Time
	}
	if _, err := s.AppendSnapshots(ctx, slug, all[:1000]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendSnapshots(ctx, slug, all[1500:2000]); err != nil {
		t.Fatal(err)
	}
	outage := store.Gap{From: all[999].Time, To: all[1500].Time, Kind: store.GapSnapshots}
	if _, err := s.RecordGaps(ctx, slug, []store.Gap{outage}); err != nil {
		t.Fatal(err)
	}
	tx, m := importInto(ctx, t, s, slug)
	for part := range slices.Chunk(imported[600:1700], 300) {
		if _, err := tx.AppendSnapshots(ctx, slug, part); err != nil {
			t.Fatalf("import: append snapshots: %v", err)
		}
	}
	trade := store.MarketTrade{Time: all[1200].Time, Outcome: store.OutcomeUp, Side: store.SideBuy, Price: 0.5, Size: 10, TxHash: "0xabc"}
	if _, err := tx.AppendMarketTrades(ctx, slug, []store.MarketTrade{trade}); err != nil {
		t.Fatalf("import: append trades: %v", err)
	}
	// The import saw no gap in what it covers: the outage is mended.
	if err := tx.ReplaceGaps(ctx, slug, all[600].Time, all[1699].Time, nil); err != nil {
		t.Fatalf("import: replace gaps: %v", err)
	}
	if created, err := tx.AddMarket(ctx, m, "pmxt-v2"); err != nil || created {
		t.Fatalf("import: add the stored market again: created %v, %v", created, err)
	}
	if got, err := tx.MarketsByCondition(ctx, []string{m.ConditionID}); err != nil || len(got) != 1 ||
		!slices.Equal(got[0].DataSources, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Errorf("import: markets by condition %+v (%v), want the market with the import's source", got, err)
	}

	// The collector, meanwhile, each write under a deadline far shorter
	// than lock_timeout.
	short := func(what string, write func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := write(ctx); err != nil {
			t.Errorf("%s while an import into the market is open: %v", what, err)
		}
	}
	vol := 1234.5
	short("UpsertMarkets", func(ctx context.Context) error {
		up := m
		up.FinalVolume = &vol
		return s.UpsertMarkets(ctx, []store.Market{up})
	})
	tick := store.TickSizeChange{Time: all[2100].Time, TickSize: 0.001}
	var edited time.Time
	short("SwapMarket", func(ctx context.Context) error {
		cur, err := s.GetMarket(ctx, slug)
		if err != nil {
			return err
		}
		ed := cur
		ed.TickSizeChanges = append(slices.Clone(cur.TickSizeChanges), tick)
		ed.TickSize = &tick.TickSize
		stored, ok, err := s.SwapMarket(ctx, ed, cur.UpdatedAt)
		if err != nil || !ok {
			t.Errorf("SwapMarket: swapped %v", ok)
			return err
		}
		edited = stored.UpdatedAt
		return nil
	})
	short("AppendSnapshots", func(ctx context.Context) error {
		_, err := s.AppendSnapshots(ctx, slug, all[2000:2200])
		return err
	})
	live := store.Gap{From: all[2199].Time, To: all[2300].Time, Kind: store.GapSnapshots}
	short("RecordGaps", func(ctx context.Context) error {
		_, err := s.RecordGaps(ctx, slug, []store.Gap{live})
		return err
	})

	imp, fresh, err := tx.Commit(ctx, store.Import{Key: "no-locks", Source: "pmxt-v2"})
	if err != nil || !fresh {
		t.Fatalf("commit: fresh %v, %v", fresh, err)
	}
	if imp.Snapshots != 500 || imp.Markets != 0 || imp.Trades != 1 {
		t.Errorf("import counted %d snapshots, %d markets, %d trades; want 500, 0, 1", imp.Snapshots, imp.Markets, imp.Trades)
	}
	want := slices.Concat(all[:1000], imported[1000:1500], all[1500:2200])
	checkPages(t, s, slug, want, 0, 700)
	checkChunks(t, s, slug, len(want))
	got, err := s.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.DataSources, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Errorf("data sources %v, want the import's added", got.DataSources)
	}
	// The import's change is the market's latest: caches keyed by the
	// record must see a new one, and an edit that read it before must not
	// swap.
	if !got.UpdatedAt.After(edited) {
		t.Errorf("updated_at %v after the import's commit, %v after the edit before it: want later", got.UpdatedAt, edited)
	}
	if got.FinalVolume == nil || *got.FinalVolume != vol {
		t.Errorf("final volume %v, want the upsert's %v", got.FinalVolume, vol)
	}
	if n := len(got.TickSizeChanges); n == 0 || !got.TickSizeChanges[n-1].Time.Equal(tick.Time) || got.TickSize == nil || *got.TickSize != tick.TickSize {
		t.Errorf("tick changes %v (size %v), want the edit's %v kept", got.TickSizeChanges, got.TickSize, tick)
	}
	gaps, err := s.ListGaps(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || !gaps[0].From.Equal(live.From) || !gaps[0].To.Equal(live.To) {
		t.Errorf("gaps %v, want the live one only, %v (the outage mended)", gaps, live)
	}
	trades, _, err := s.ListMarketTrades(ctx, slug, store.MarketTradeQuery{})
	if err != nil || len(trades) != 1 || trades[0].TxHash != trade.TxHash {
		t.Errorf("trades %v (%v), want the import's", trades, err)
	}
}

// TestImportMergesAgainWhatChangedMeanwhile has the collector write into
// the stretch an import fills after the import merged its snapshots with
// the stored ones and before it locks the market at Commit: the import
// merges again, under the lock, and the recorded snapshots win as ever.
func TestImportMergesAgainWhatChangedMeanwhile(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Date(2031, 8, 1, 0, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	all := newMarketSim(21, start).series(1600)
	imported := newMarketSim(22, start).series(len(all))
	for i := range imported {
		imported[i].Time = all[i].Time
	}
	if _, err := s.AppendSnapshots(ctx, slug, all[:1000]); err != nil {
		t.Fatal(err)
	}
	tx, _ := importInto(ctx, t, s, slug)
	for part := range slices.Chunk(imported[500:1500], 400) {
		if _, err := tx.AppendSnapshots(ctx, slug, part); err != nil {
			t.Fatal(err)
		}
	}
	postgres.SetBeforeImportLocks(s, func() {
		if _, err := s.AppendSnapshots(ctx, slug, all[1200:1300]); err != nil {
			t.Errorf("append during the import's commit: %v", err)
		}
	})
	imp, _, err := tx.Commit(ctx, store.Import{Key: "again", Source: "pmxt-v2"})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Snapshots != 400 {
		t.Errorf("import counted %d snapshots, want 400", imp.Snapshots)
	}
	want := slices.Concat(all[:1000], imported[1000:1200], all[1200:1300], imported[1300:1500])
	checkPages(t, s, slug, want, 0, 700)
	checkChunks(t, s, slug, len(want))
}

// TestImportHoldsStoredMarketsTradesUntilCommit has an import write trades
// of a market the collector records and, while the import is open, the
// collector append a batch holding one of the same trades (as a capture of
// the live hour holds it) and a new one: the append must go through at
// once, where the import's trades were inserted as it wrote them and the
// collector's insert of the same row waited out lock_timeout on them and
// failed, losing the new trade too. After Commit the market has each
// trade once, and the import counts only those it added.
func TestImportHoldsStoredMarketsTradesUntilCommit(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Date(2031, 9, 1, 0, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	trade := func(sec int, hash string) store.MarketTrade {
		return store.MarketTrade{Time: start.Add(time.Duration(sec) * time.Second), Outcome: store.OutcomeUp,
			Side: store.SideBuy, Price: 0.5, Size: 10, FeeRateBps: 1000, TxHash: hash}
	}
	recorded := trade(1, "0xa1")
	if _, err := s.AppendMarketTrades(ctx, slug, []store.MarketTrade{recorded}); err != nil {
		t.Fatal(err)
	}
	tx, _ := importInto(ctx, t, s, slug)
	shared := trade(5, "0xb5")
	// Batches as they come (new to the import: 3, 1), then one reaching
	// back among them (1).
	for i, b := range []struct {
		trades []store.MarketTrade
		new    int
	}{
		{[]store.MarketTrade{shared, recorded, trade(3, "0xb3")}, 3},
		{[]store.MarketTrade{trade(7, "0xb7"), shared}, 1},
		{[]store.MarketTrade{trade(3, "0xb3"), trade(2, "0xb2")}, 1},
	} {
		n, err := tx.AppendMarketTrades(ctx, slug, b.trades)
		if err != nil {
			t.Fatalf("import: append trades %d: %v", i+1, err)
		}
		if n != b.new {
			t.Errorf("import: append trades %d: %d new, want %d", i+1, n, b.new)
		}
	}

	// The collector, meanwhile, under a deadline far shorter than
	// lock_timeout.
	live := trade(6, "0xc6")
	func() {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		n, err := s.AppendMarketTrades(ctx, slug, []store.MarketTrade{shared, live})
		if err != nil {
			t.Errorf("AppendMarketTrades while an import of the same trade is open: %v", err)
		} else if n != 2 {
			t.Errorf("AppendMarketTrades while an import is open stored %d, want 2", n)
		}
	}()

	imp, fresh, err := tx.Commit(ctx, store.Import{Key: "trades-held", Source: "pmxt-v2"})
	if err != nil || !fresh {
		t.Fatalf("commit: fresh %v, %v", fresh, err)
	}
	// The import added 0xb2, 0xb3 and 0xb7: the recorded trade and the
	// shared one were stored before it committed.
	if imp.Trades != 3 {
		t.Errorf("import counted %d trades, want 3", imp.Trades)
	}
	got, _, err := s.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true})
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, tr := range got {
		hashes = append(hashes, tr.TxHash)
	}
	if want := []string{"0xa1", "0xb2", "0xb3", "0xb5", "0xc6", "0xb7"}; !slices.Equal(hashes, want) {
		t.Errorf("trades %v, want %v, each once", hashes, want)
	}
}
