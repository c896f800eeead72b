package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// Snapshots by time (DESIGN 13): time ranges, both orders, keyset
// positions, and the count of a range.

// rangeSeries stores n snapshots of a fresh market in appends of 600, so
// that a store that keeps snapshots in chunks has several, and returns the
// slug and the snapshots in time order.
func rangeSeries(t *testing.T, s store.Store, n int) (string, []store.Snapshot) {
	t.Helper()
	slug := seedSnapshotMarket(t, s, 0)
	all := newSnapshots(t0(), 0, n-1)
	for i := 0; i < n; i += 600 {
		appendSnapshots(t, s, slug, all[i:min(i+600, n)])
	}
	return slug, all
}

// snapAt is the time of the i-th snapshot of newSnapshots from t0.
func snapAt(i int) time.Time { return t0().Add(time.Duration(i) * 300 * time.Millisecond) }

// inRange returns the snapshots of asc (time-sorted) in [from, to).
func inRange(asc []store.Snapshot, from, to *time.Time) []store.Snapshot {
	var out []store.Snapshot
	for _, sn := range asc {
		t := sn.Time.Truncate(time.Microsecond)
		if (from == nil || !t.Before(*from)) && (to == nil || t.Before(*to)) {
			out = append(out, sn)
		}
	}
	return out
}

func testSnapshotsTimeRange(t *testing.T, s store.Store) {
	const n = 1500
	slug, asc := rangeSeries(t, s, n)
	tp := func(i int) *time.Time { return ptr(snapAt(i)) }
	half := 150 * time.Millisecond
	ranges := []struct {
		name     string
		from, to *time.Time
	}{
		{"none", nil, nil},
		{"from (inclusive)", tp(700), nil},
		{"to (exclusive)", nil, tp(700)},
		{"inside one stretch", tp(10), tp(20)},
		{"across chunks", tp(250), tp(1320)},
		{"between snapshots", ptr(snapAt(99).Add(half)), ptr(snapAt(1204).Add(half))},
		{"one snapshot", tp(612), tp(613)},
		{"from equals to", tp(612), tp(612)},
		{"from after to", tp(900), tp(100)},
		{"before the first", ptr(snapAt(0).Add(-time.Hour)), tp(0)},
		{"after the last", ptr(snapAt(n - 1).Add(time.Microsecond)), nil},
		{"wider than the series", ptr(snapAt(0).Add(-time.Hour)), ptr(snapAt(n).Add(time.Hour))},
		{"in another time zone", ptr(snapAt(300).In(elsewhere())), ptr(snapAt(310).In(elsewhere()))},
	}
	pages := []struct{ limit, offset int }{{0, 0}, {7, 0}, {50, 3}, {1000, 0}, {5, 10_000}, {1000, math.MaxInt64}, {0, math.MaxInt64}}
	for _, r := range ranges {
		want := inRange(asc, r.from, r.to)
		t.Run(r.name, func(t *testing.T) {
			count, err := s.CountSnapshots(t.Context(), slug, store.SnapshotQuery{From: r.from, To: r.to, Limit: 3, Offset: 2})
			mustOK(t, err, "CountSnapshots")
			if count != len(want) {
				t.Errorf("CountSnapshots = %d, want %d", count, len(want))
			}
			for _, p := range pages {
				for _, ascending := range []bool{true, false} {
					books := p.limit == 7
					q := store.SnapshotQuery{From: r.from, To: r.to, Limit: p.limit, Offset: p.offset, Ascending: ascending, WithBooks: books}
					all := want
					if !ascending {
						all = reversed(want)
					}
					lo := min(p.offset, len(all))
					hi := len(all)
					if p.limit > 0 {
						hi = min(lo+p.limit, hi)
					}
					got, total := listSnapshots(t, s, slug, q)
					checkSnapshots(t, fmt.Sprintf("limit %d offset %d ascending %t", p.limit, p.offset, ascending), all[lo:hi], got, books)
					if total != n {
						t.Errorf("total = %d, want %d (all the market's snapshots)", total, n)
					}
				}
			}
		})
	}
}

// walk lists q page by page, each page after the last time of the one
// before, until a short page, and returns all it saw.
func walk(t *testing.T, s store.Store, slug string, q store.SnapshotQuery) []store.Snapshot {
	t.Helper()
	var out []store.Snapshot
	for range 10_000 {
		page, _ := listSnapshots(t, s, slug, q)
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		q.After = ptr(page[len(page)-1].Time)
	}
	t.Fatal("walk did not end")
	return nil
}

func testSnapshotsCursor(t *testing.T, s store.Store) {
	slug, asc := rangeSeries(t, s, 1300)
	for _, r := range []struct {
		name     string
		from, to *time.Time
	}{
		{"whole series", nil, nil},
		{"range", ptr(snapAt(333)), ptr(snapAt(1111))},
	} {
		want := inRange(asc, r.from, r.to)
		for _, ascending := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s ascending %t", r.name, ascending), func(t *testing.T) {
				for _, limit := range []int{1, 97, 512, 1000} {
					if limit == 1 && r.from == nil {
						continue // 1300 round trips add nothing to the range's 778
					}
					got := walk(t, s, slug, store.SnapshotQuery{From: r.from, To: r.to, Ascending: ascending, Limit: limit, WithBooks: limit == 97})
					w := want
					if !ascending {
						w = reversed(want)
					}
					checkSnapshots(t, fmt.Sprintf("walk by %d", limit), w, got, limit == 97)
				}
			})
		}
	}
	// A position between snapshots, or outside the range, is a place in
	// time, not a snapshot that must exist.
	got, _ := listSnapshots(t, s, slug, store.SnapshotQuery{After: ptr(snapAt(20).Add(time.Millisecond)), Limit: 3})
	checkSnapshots(t, "after a time between snapshots, newest first", reversed(asc[18:21]), got, false)
	got, _ = listSnapshots(t, s, slug, store.SnapshotQuery{After: ptr(snapAt(20).Add(time.Millisecond)), Ascending: true, Limit: 3})
	checkSnapshots(t, "after a time between snapshots, oldest first", asc[21:24], got, false)
	got, _ = listSnapshots(t, s, slug, store.SnapshotQuery{After: ptr(snapAt(5000)), Limit: 2, From: ptr(snapAt(40)), To: ptr(snapAt(50))})
	checkSnapshots(t, "after a time past the range, newest first", reversed(asc[48:50]), got, false)
	got, _ = listSnapshots(t, s, slug, store.SnapshotQuery{After: ptr(snapAt(0).Add(-time.Hour)), Ascending: true, Limit: 2})
	checkSnapshots(t, "after a time before the series, oldest first", asc[0:2], got, false)
}

// testSnapshotsCursorStable: a walk by keyset position neither repeats nor
// skips a snapshot when snapshots arrive between its pages, where offset
// paging would.
func testSnapshotsCursorStable(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	all := newSnapshots(t0(), 0, 1999)
	appendSnapshots(t, s, slug, all[800:1400])

	// Newest first, as a live market is read: newer snapshots arrive.
	q := store.SnapshotQuery{Limit: 250}
	first, _ := listSnapshots(t, s, slug, q)
	checkSnapshots(t, "first page", reversed(all[1150:1400]), first, false)
	appendSnapshots(t, s, slug, all[1400:1700])
	q.After = ptr(first[len(first)-1].Time)
	second, total := listSnapshots(t, s, slug, q)
	checkSnapshots(t, "page after newer snapshots arrived", reversed(all[900:1150]), second, false)
	if total != 900 {
		t.Errorf("total = %d, want 900", total)
	}

	// Oldest first, while older snapshots are backfilled and newer ones
	// arrive: the walk goes on from where it stopped.
	q = store.SnapshotQuery{Limit: 300, Ascending: true, WithBooks: true}
	first, _ = listSnapshots(t, s, slug, q)
	checkSnapshots(t, "first page oldest first", all[800:1100], first, true)
	appendSnapshots(t, s, slug, all[0:800])
	appendSnapshots(t, s, slug, all[1700:2000])
	var got []store.Snapshot
	for q.After = ptr(first[len(first)-1].Time); ; {
		page, _ := listSnapshots(t, s, slug, q)
		got = append(got, page...)
		if len(page) < q.Limit {
			break
		}
		q.After = ptr(page[len(page)-1].Time)
	}
	checkSnapshots(t, "rest of the walk", all[1100:2000], got, true)
}
