package postgres_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
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

// dropBefore drops the months before the month starting at before, as an
// operator does, and fails the test on error.
func dropBefore(t *testing.T, s *postgres.Store, before time.Time) postgres.Dropped {
	t.Helper()
	d, err := s.DropSnapshotsBefore(t.Context(), before, false)
	if err != nil {
		t.Fatalf("DropSnapshotsBefore(%s): %v", before.Format("2006-01"), err)
	}
	return d
}

// checkMarket fails the test unless every way of reading the market's
// snapshots answers want: listings, counts, the market's count and the
// tape.
func checkMarket(t *testing.T, s *postgres.Store, slug string, want []store.Snapshot) {
	t.Helper()
	ctx := t.Context()
	checkChunks(t, s, slug, len(want))
	if len(want) > 0 {
		checkPages(t, s, slug, want, 0, 100)
	} else if got, total := list(t, s, slug, store.SnapshotQuery{}); len(got) != 0 || total != 0 {
		t.Errorf("%s: listed %d snapshots of %d, want none", slug, len(got), total)
	}
	if n, err := s.CountSnapshots(ctx, slug, store.SnapshotQuery{}); err != nil || n != len(want) {
		t.Errorf("%s: CountSnapshots = %d, %v; want %d", slug, n, err, len(want))
	}
	if _, sc, err := s.GetMarketSeries(ctx, slug); err != nil || sc.N != len(want) {
		t.Errorf("%s: GetMarketSeries counts %d, %v; want %d", slug, sc.N, err, len(want))
	}
	tape, err := s.ReadTape(ctx, slug, store.OutcomeUp)
	if err != nil {
		t.Errorf("%s: ReadTape: %v", slug, err)
	} else if len(tape.Ticks) != len(want) {
		t.Errorf("%s: the tape has %d ticks, want %d", slug, len(tape.Ticks), len(want))
	} else if len(want) > 0 && (tape.Ticks[0].Nanos != want[0].Time.UnixNano() || tape.Ticks[len(want)-1].Nanos != want[len(want)-1].Time.UnixNano()) {
		t.Errorf("%s: the tape runs %d..%d, want %v..%v", slug, tape.Ticks[0].Nanos, tape.Ticks[len(want)-1].Nanos, want[0].Time, want[len(want)-1].Time)
	}
	if len(want) > 0 {
		from, to := want[0].Time, want[len(want)-1].Time.Add(time.Microsecond)
		got, total := list(t, s, slug, store.SnapshotQuery{From: &from, To: &to, Ascending: true})
		if total != len(want) || len(got) != len(want) {
			t.Errorf("%s: the range %v..%v lists %d of %d, want %d", slug, from, to, len(got), total, len(want))
		}
	}
}

// since returns the snapshots of snaps at or after t.
func since(snaps []store.Snapshot, t time.Time) []store.Snapshot {
	for i, sn := range snaps {
		if !sn.Time.Before(t) {
			return snaps[i:]
		}
	}
	return nil
}

// TestDropSnapshotsBefore drops old months as an operator does: the
// markets that ran across the month kept keep their later snapshots,
// those wholly before it have none, those after it are untouched, and
// every one is read and counted alike by listings, counts and tapes, and
// takes appends after.
func TestDropSnapshotsBefore(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	july := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)

	// across runs over the month's end; june is before it, after after it.
	across := newMarket(t, s, july.Add(-time.Hour))
	acrossSnaps := newMarketSim(41, july.Add(-2*time.Minute)).series(900)
	june := newMarket(t, s, july.Add(-10*24*time.Hour))
	juneSnaps := newMarketSim(42, july.Add(-10*24*time.Hour)).series(700)
	after := newMarket(t, s, july.Add(24*time.Hour))
	afterSnaps := newMarketSim(43, july.Add(24*time.Hour)).series(600)
	for _, m := range []struct {
		slug  string
		snaps []store.Snapshot
	}{{across, acrossSnaps}, {june, juneSnaps}, {after, afterSnaps}} {
		for i := 0; i < len(m.snaps); i += 50 { // as a collector writes them
			if _, err := s.AppendSnapshots(ctx, m.slug, m.snaps[i:min(i+50, len(m.snaps))]); err != nil {
				t.Fatal(err)
			}
		}
	}

	// legacy is stored as chunks were before they were cut at months'
	// ends: one chunk from June 2023 into July 2023 and on to June 2025.
	legacy := newMarket(t, s, time.Date(2023, 6, 30, 23, 0, 0, 0, time.UTC))
	legacySnaps := append(newMarketSim(44, time.Date(2023, 6, 30, 23, 59, 59, 0, time.UTC)).series(10),
		newMarketSim(45, time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)).series(5)...)
	head, books := postgres.EncodeChunk(legacySnaps)
	first, last := legacySnaps[0].Time, legacySnaps[len(legacySnaps)-1].Time
	for _, sql := range []string{
		`create table snapshot_chunks_p202306 partition of snapshot_chunks for values from ('2023-06-01 00:00:00+00') to ('2023-07-01 00:00:00+00')`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `
		insert into snapshot_chunks (market, first_time, last_time, n, head, books)
		select id, $2, $3, $4, $5, $6 from markets where slug = $1`,
		legacy, first, last, len(legacySnaps), head, books); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `
		insert into snapshot_series (market, n, first_time, last_time)
		select id, $2, $3, $4 from markets where slug = $1`, legacy, len(legacySnaps), first, last); err != nil {
		t.Fatal(err)
	}
	checkMarket(t, s, legacy, legacySnaps)

	// Dropping June 2023 keeps what the legacy chunk held of later months.
	july23 := time.Date(2023, 7, 1, 0, 0, 0, 0, time.UTC)
	d := dropBefore(t, s, july23)
	legacyKept := since(legacySnaps, july23)
	if want := len(legacySnaps) - len(legacyKept); d.Snapshots != int64(want) || d.Markets != 1 || d.Emptied != 0 ||
		d.Kept != int64(len(legacyKept)) || !slices.Equal(d.Partitions, []string{"snapshot_chunks_p202306"}) {
		t.Errorf("dropping June 2023: %+v, want %d snapshots of 1 market, %d kept, the partition of 2023-06", d, want, len(legacyKept))
	}
	checkMarket(t, s, legacy, legacyKept)
	checkMarket(t, s, june, juneSnaps)

	// A dry run of dropping up to June 2025 tells what would go and
	// changes nothing.
	wantDropped := int64(len(juneSnaps) + len(acrossSnaps) - len(since(acrossSnaps, july)) + len(legacyKept))
	dry, err := s.DropSnapshotsBefore(ctx, july, true)
	if err != nil {
		t.Fatal(err)
	}
	wantParts := []string{"snapshot_chunks_p202307", "snapshot_chunks_p202506"}
	if dry.Snapshots != wantDropped || dry.Markets != 3 || dry.Emptied != 2 || !slices.Equal(dry.Partitions, wantParts) {
		t.Errorf("dry run: %+v, want %d snapshots of 3 markets, 2 emptied, partitions %v", dry, wantDropped, wantParts)
	}
	checkMarket(t, s, across, acrossSnaps)

	d = dropBefore(t, s, july)
	if d.Snapshots != wantDropped || d.Markets != 3 || d.Emptied != 2 || d.Kept != 0 || !slices.Equal(d.Partitions, wantParts) {
		t.Errorf("dropping up to June 2025: %+v, want %d snapshots of 3 markets, 2 emptied, partitions %v", d, wantDropped, wantParts)
	}
	checkMarket(t, s, across, since(acrossSnaps, july))
	checkMarket(t, s, june, nil)
	checkMarket(t, s, legacy, nil)
	checkMarket(t, s, after, afterSnaps)

	// Appends after count from what is left, in the months kept and in
	// the months dropped alike.
	more := newMarketSim(46, acrossSnaps[len(acrossSnaps)-1].Time).series(30)
	if _, err := s.AppendSnapshots(ctx, across, more); err != nil {
		t.Fatal(err)
	}
	checkMarket(t, s, across, append(since(acrossSnaps, july), more...))
	if _, err := s.AppendSnapshots(ctx, june, juneSnaps[:20]); err != nil {
		t.Fatalf("append to a dropped month: %v", err)
	}
	checkMarket(t, s, june, juneSnaps[:20])

	// Nothing left before the month: dropping again drops nothing.
	d = dropBefore(t, s, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	if d.Snapshots != 0 || d.Markets != 0 || len(d.Partitions) != 0 {
		t.Errorf("dropping again: %+v, want nothing", d)
	}
}

// TestDropSnapshotsChangesDataVersion: a drop of old months changes the
// data version of the markets it takes snapshots from (a replay kept
// from before is not reused), and as many snapshots appended after it (a
// re-import of the month) do not bring the version back.
func TestDropSnapshotsChangesDataVersion(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	july := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)
	june := newMarket(t, s, july.Add(-10*24*time.Hour))
	across := newMarket(t, s, july.Add(-time.Hour))
	kept := newMarket(t, s, july.Add(24*time.Hour))
	versions := func() []string {
		t.Helper()
		vs, err := store.DataVersions(ctx, s, []string{june, across, kept})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = v.String()
		}
		return out
	}
	acrossSnaps := newMarketSim(52, july.Add(-10*time.Second)).series(60)
	for slug, snaps := range map[string][]store.Snapshot{
		june:   newMarketSim(51, july.Add(-10*24*time.Hour)).series(20),
		across: acrossSnaps,
		kept:   newMarketSim(53, july.Add(24*time.Hour)).series(20),
	} {
		if _, err := s.AppendSnapshots(ctx, slug, snaps); err != nil {
			t.Fatal(err)
		}
	}
	before := versions()
	dropBefore(t, s, july)
	dropped := versions()
	for i, what := range []string{"emptied", "run across the month's start"} {
		if dropped[i] == before[i] {
			t.Errorf("the data version of a market %s by a drop is %s, as before it", what, dropped[i])
		}
	}
	if dropped[2] != before[2] {
		t.Errorf("the data version of a market the drop left alone went from %s to %s", before[2], dropped[2])
	}
	// As many snapshots again, in the months dropped.
	if _, err := s.AppendSnapshots(ctx, june, newMarketSim(54, july.Add(-9*24*time.Hour)).series(20)); err != nil {
		t.Fatal(err)
	}
	lost := len(acrossSnaps) - len(since(acrossSnaps, july))
	if _, err := s.AppendSnapshots(ctx, across, newMarketSim(55, acrossSnaps[len(acrossSnaps)-1].Time.Add(time.Second)).series(lost)); err != nil {
		t.Fatal(err)
	}
	again := versions()
	for i, what := range []string{"emptied", "run across the month's start"} {
		if again[i] == before[i] {
			t.Errorf("the data version of a market %s by a drop and given as many snapshots since is %s, as before the drop", what, again[i])
		}
	}
}

// TestDropSnapshotsBeforeRefuses: the month being recorded, or one not
// begun, is never dropped, and a time that is not a month's start is not
// taken for one.
func TestDropSnapshotsBeforeRefuses(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	for _, before := range []time.Time{next, next.AddDate(1, 0, 0), time.Date(2025, 7, 2, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 7, 1, 0, 0, 0, 0, time.FixedZone("CEST", 2*3600))} {
		for _, dry := range []bool{false, true} {
			if _, err := s.DropSnapshotsBefore(t.Context(), before, dry); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("DropSnapshotsBefore(%v, dry run %v) = %v, want ErrInvalid", before, dry, err)
			}
		}
	}
}

// TestDropSnapshotsBeforeWhileWriting drops old months while writers
// append to markets of the months kept and readers list them: no append
// or read fails, and every count is exact after.
func TestDropSnapshotsBeforeWhileWriting(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	july := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)
	type market struct {
		slug  string
		snaps []store.Snapshot
	}
	var ms []market
	for i := range 4 {
		start := july.Add(-time.Duration(i+1) * 20 * time.Second) // each runs across the month's start
		m := market{newMarket(t, s, start), newMarketSim(uint64(50+i), start).series(1500)}
		// The writers append snapshots of July only, the drop's June ones
		// are all stored before.
		if _, err := s.AppendSnapshots(ctx, m.slug, m.snaps[:len(m.snaps)-1000]); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(ms)+1)
	for _, m := range ms {
		wg.Go(func() {
			for i := len(m.snaps) - 1000; i < len(m.snaps); i += 25 {
				if _, err := s.AppendSnapshots(ctx, m.slug, m.snaps[i:i+25]); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if _, _, err := s.ListSnapshots(ctx, m.slug, store.SnapshotQuery{Limit: 100}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		if _, err := s.DropSnapshotsBefore(ctx, july, false); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, m := range ms {
		checkMarket(t, s, m.slug, since(m.snaps, july))
	}
}

// TestSeriesCountAfterDrop: GetMarketSeries and CountSeries answer a
// market's count of snapshots and of those drops took, so that a drop and
// as many snapshots appended after it leave the count as it was but not
// the pair (the version caches key on).
func TestSeriesCountAfterDrop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgtest.NewStore(t)
	start := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	snaps := newMarketSim(51, start).series(40)
	if _, err := s.AppendSnapshots(ctx, slug, snaps); err != nil {
		t.Fatal(err)
	}
	check := func(want store.SeriesCount) {
		t.Helper()
		if _, got, err := s.GetMarketSeries(ctx, slug); err != nil || got != want {
			t.Errorf("GetMarketSeries: %+v, %v; want %+v", got, err, want)
		}
		if got, err := s.CountSeries(ctx, slug); err != nil || got != want {
			t.Errorf("CountSeries: %+v, %v; want %+v", got, err, want)
		}
	}
	check(store.SeriesCount{N: 40})
	dropBefore(t, s, time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC))
	check(store.SeriesCount{N: 0, Dropped: 40})
	if _, err := s.AppendSnapshots(ctx, slug, snaps); err != nil {
		t.Fatal(err)
	}
	check(store.SeriesCount{N: 40, Dropped: 40})
	if _, _, err := s.GetMarketSeries(ctx, "btc-updown-15m-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMarketSeries of no market: %v", err)
	}
	if _, err := s.CountSeries(ctx, "btc-updown-15m-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CountSeries of no market: %v", err)
	}
}
