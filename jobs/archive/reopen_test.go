package archive_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestOverlappingDumpsOfOneMarket imports two dumps of the same market,
// one of which lost two minutes of it (its connection dropped) and went
// on recording the markets after it, as two machines' captures of the
// same hours are. Imported together they fill each other in, as imported
// one after the other: the market has snapshots over the two minutes and
// no gap there, where the first dump's passing of the market's end closed
// the market, and the second dump's events of it were passed over but
// for its trades.
func TestOverlappingDumpsOfOneMarket(t *testing.T) {
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
			overlappingDumpsOfOneMarket(t, open)
		})
	}
}

func overlappingDumpsOfOneMarket[S interface {
	store.Store
	store.ImportStore
}](t *testing.T, open func(t *testing.T) S) {
	ctx := context.Background()
	x := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	markets := []store.Market{x}
	holed := fxStream(x, x.StartTime.Add(-20*time.Second), x.EndTime.Add(10*time.Second), 1, 0)
	holeFrom, holeTo := x.StartTime.Add(time.Minute), x.StartTime.Add(3*time.Minute)
	holed = slices.DeleteFunc(holed, func(e fxEvent) bool {
		at := time.UnixMilli(e.ts)
		return !at.Before(holeFrom) && at.Before(holeTo) && e.kind != "book"
	})
	// The dump resumes with each token's book.
	resumed := fxStream(x, holeTo, holeTo.Add(time.Second), 7, 0)[:2]
	a := append(holed, resumed...)
	// The markets after it, recorded on.
	for n := 2; n <= 6; n++ {
		y := fxMarket(store.BTC, x.EndTime.Add(time.Duration(n-2)*5*time.Minute), n)
		markets = append(markets, y)
		a = append(a, fxStream(y, y.StartTime.Add(-20*time.Second), y.EndTime, uint64(n), 0)...)
	}
	b := fxStream(x, x.StartTime.Add(-20*time.Second), x.EndTime.Add(10*time.Second), 9, 0)
	dir := t.TempDir()
	fa, fb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeJSONL(t, fa, a)
	writeJSONL(t, fb, b)
	prices := func() *archive.CoinPrices {
		cp := archive.NewCoinPrices()
		writeKlines(t, cp, store.BTC, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
		return cp
	}
	inHole := func(st S) (snaps int, gaps []store.Gap) {
		for _, s := range snapshotsOf(t, st, x.Slug) {
			if !s.Time.Before(holeFrom.Add(5*time.Second)) && s.Time.Before(holeTo.Add(-5*time.Second)) {
				snaps++
			}
		}
		all, _ := st.ListGaps(ctx, x.Slug)
		for _, g := range all {
			if g.From.Before(holeTo.Add(-5*time.Second)) && holeFrom.Add(5*time.Second).Before(g.To) {
				gaps = append(gaps, g)
			}
		}
		return snaps, gaps
	}

	apart := open(t)
	for _, f := range []string{fa, fb} {
		if _, err := archive.Import(ctx, apart, archive.Options{Format: archive.WSJSONL, Files: []string{f}, Markets: markets, Prices: prices()}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := inHole(apart)
	if want < 300 {
		t.Fatalf("imported one after the other: %d snapshots in the first dump's hole", want)
	}
	together := open(t)
	if _, err := archive.Import(ctx, together, archive.Options{Format: archive.WSJSONL, Files: []string{fa, fb}, Markets: markets, Prices: prices()}); err != nil {
		t.Fatal(err)
	}
	got, gaps := inHole(together)
	if got != want || len(gaps) > 0 {
		t.Errorf("imported together: %d snapshots in the first dump's hole (%d one after the other), gaps %v", got, want, gaps)
	}
	if n, m := len(snapshotsOf(t, together, x.Slug)), len(snapshotsOf(t, apart, x.Slug)); n != m {
		t.Errorf("imported together: %d snapshots, %d one after the other", n, m)
	}
}
