package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportHoldsNoLocksOnStoredMarkets runs an import into a market the
// collector records (its row, its gaps, its trades) and, while the import
// is open, the collector's writes to that market: an upsert of the
// market, an edit (SwapMarket), an append of snapshots and a gap. Each
// must go through at once, where the import held the market's row until
// it committed and each waited out lock_timeout and failed. After Commit
// the market holds both: the import's source and the edit's tick change;
// the gaps the import measured and the live one.
func TestImportHoldsNoLocksOnStoredMarkets(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	all := newMarketSim(11, start).series(2400)
	// What the import has of the same instants: other prices and books.
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
	m, err := s.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}

	tx, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if created, err := tx.AddMarket(ctx, m, "pmxt-v2"); err != nil || created {
		t.Fatalf("import: add the stored market: created %v, %v", created, err)
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
	short("SwapMarket", func(ctx context.Context) error {
		cur, err := s.GetMarket(ctx, slug)
		if err != nil {
			return err
		}
		ed := cur
		ed.TickSizeChanges = append(slices.Clone(cur.TickSizeChanges), tick)
		ed.TickSize = &tick.TickSize
		if _, ok, err := s.SwapMarket(ctx, ed, cur.UpdatedAt); err != nil || !ok {
			t.Errorf("SwapMarket: swapped %v", ok)
			return err
		}
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
	if imp.Snapshots != 0 || imp.Markets != 0 || imp.Trades != 1 {
		t.Errorf("import counted %d snapshots, %d markets, %d trades; want 0, 0, 1", imp.Snapshots, imp.Markets, imp.Trades)
	}
	want := slices.Concat(all[:1000], all[1500:2200])
	checkPages(t, s, slug, want, 0, 700)
	checkChunks(t, s, slug, len(want))
	got, err := s.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.DataSources, []string{store.DataRecorder, "pmxt-v2"}) {
		t.Errorf("data sources %v, want the import's added", got.DataSources)
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
