package postgres_test

import (
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// monthOf is the start of t's calendar month in UTC.
func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// TestChunksStayInTheirMonth: however snapshots arrive across a month's
// end (small appends folded into the newest chunk, one large append, a
// merge among stored ones), every chunk holds one month's snapshots, so
// that a month's partition holds that month only and dropping it drops
// nothing of the next.
func TestChunksStayInTheirMonth(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	end := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)

	// Small appends across the month's end: each folds into the tail.
	small := newMarket(t, s, end.Add(-time.Hour))
	snaps := newMarketSim(31, end.Add(-30*time.Second)).series(200)
	for i := 0; i < len(snaps); i += 7 {
		if _, err := s.AppendSnapshots(ctx, small, snaps[i:min(i+7, len(snaps))]); err != nil {
			t.Fatal(err)
		}
	}
	// One large append across it, then a merge reaching back over it.
	large := newMarket(t, s, end.Add(-2*time.Hour))
	all := newMarketSim(32, end.Add(-2*time.Minute)).series(3 * 512)
	var even, odd []store.Snapshot
	for i, sn := range all {
		if i%2 == 0 {
			even = append(even, sn)
		} else {
			odd = append(odd, sn)
		}
	}
	if _, err := s.AppendSnapshots(ctx, large, even); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendSnapshots(ctx, large, odd); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		slug string
		want []store.Snapshot
	}{{small, snaps}, {large, all}} {
		cs := checkChunks(t, s, tc.slug, len(tc.want))
		before, after := 0, 0
		for i, c := range cs {
			if !monthOf(c.First).Equal(monthOf(c.Last)) {
				t.Errorf("%s: chunk %d runs from %v to %v, across a month's end", tc.slug, i, c.First, c.Last)
			}
			if c.First.Before(end) {
				before++
			} else {
				after++
			}
		}
		if before == 0 || after == 0 {
			t.Errorf("%s: %d chunks before the month's end and %d after, want some of each", tc.slug, before, after)
		}
		checkPages(t, s, tc.slug, tc.want, 0, 100)
	}
}
