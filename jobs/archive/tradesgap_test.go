package archive_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportKeepsTheRecordersTradesGaps imports a dump into a market the
// recorder recorded whole from REST books while its trade feed was down
// three times (trades gaps). The dump begins a minute into the window and
// falls silent for a minute later on. A trades gap where the dump was live
// is mended (the dump brought that stretch's trades); the part of one
// before the dump began, and one inside the dump's silence, are still
// trades gaps, where the import dropped the latter, so that a stretch no
// trade was recorded in by anyone looked complete, and (memory store)
// turned the former into a gap of snapshots the recorder had.
func TestImportKeepsTheRecordersTradesGaps(t *testing.T) {
	t.Parallel()
	type importStore interface {
		store.Store
		store.ImportStore
	}
	for name, open := range map[string]func(t *testing.T) importStore{
		"memory":   func(*testing.T) importStore { return memory.New() },
		"postgres": func(t *testing.T) importStore { return pgtest.NewStore(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			m := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
			s := m.StartTime
			if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
				t.Fatal(err)
			}
			var recorded []store.Snapshot
			for at := s; at.Before(m.EndTime); at = at.Add(300 * time.Millisecond) {
				recorded = append(recorded, store.Snapshot{Time: at, CoinPrice: 1, PriceUp: 0.6, PriceDown: 0.5,
					BookUp: &store.Book{Asks: []store.Level{{Price: 0.6, Size: 1}}}, BookDown: &store.Book{Asks: []store.Level{{Price: 0.5, Size: 1}}}})
			}
			if _, err := st.AppendSnapshots(ctx, m.Slug, recorded); err != nil {
				t.Fatal(err)
			}
			gap := func(from, to time.Duration) store.Gap {
				return store.Gap{From: s.Add(from), To: s.Add(to), Kind: store.GapTrades}
			}
			before, live, silent := gap(30*time.Second, 90*time.Second), gap(100*time.Second, 120*time.Second), gap(200*time.Second, 230*time.Second)
			if _, err := st.RecordGaps(ctx, m.Slug, []store.Gap{before, live, silent}); err != nil {
				t.Fatal(err)
			}

			// The dump: from a minute in, silent for a minute from 185 s.
			evs := fxStream(m, s.Add(time.Minute), m.EndTime.Add(10*time.Second), 3, time.Minute)
			dump := filepath.Join(t.TempDir(), "dump.jsonl")
			writeJSONL(t, dump, evs)
			prices := archive.NewCoinPrices()
			writeKlines(t, prices, store.BTC, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
			sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{dump}, Markets: []store.Market{m}, Prices: prices})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Import.Gaps != 0 {
				t.Errorf("the import says it found %d gaps in a market recorded whole (the recorder's trades gaps are not its own)", sum.Import.Gaps)
			}
			gaps, err := st.ListGaps(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			show := func() string { return fmt.Sprint(gaps) }
			covered := func(g store.Gap) bool {
				return slices.ContainsFunc(gaps, func(x store.Gap) bool {
					return x.Kind == g.Kind && !x.From.After(g.From) && !x.To.Before(g.To)
				})
			}
			if want := gap(30*time.Second, time.Minute); !covered(want) {
				t.Errorf("the trades gap's part before the dump began (%v) is not a trades gap: %s", want, show())
			}
			if !covered(silent) {
				t.Errorf("the trades gap inside the dump's silence (%v) is not a trades gap: %s", silent, show())
			}
			for _, g := range gaps {
				if g.Kind == store.GapSnapshots {
					t.Errorf("a snapshots gap %v in a market recorded whole", g)
				}
				if g.Kind == store.GapTrades && g.From.Before(live.To) && live.From.Before(g.To) {
					t.Errorf("the trades gap %v, where the dump was live (%v), was not mended", g, live)
				}
			}
		})
	}
}
