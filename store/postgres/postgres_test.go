package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return pgtest.NewStore(t) })
}

// newMarket stores a 15-minute BTC market starting at start and returns its slug.
func newMarket(t testing.TB, s store.Store, start time.Time) string {
	t.Helper()
	slug := fmt.Sprintf("btc-updown-15m-%d", start.Unix())
	m := store.Market{
		Slug: slug, MarketID: "mkt-" + slug, EventID: "evt-" + slug, Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute),
		ConditionID: "cond-" + slug, ClobTokenUp: "up-" + slug, ClobTokenDown: "down-" + slug,
	}
	if err := s.UpsertMarkets(context.Background(), []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	return slug
}

// chunkRow is a row of snapshot_chunks, less the data.
type chunkRow struct {
	First, Last time.Time
	N           int
}

// chunks returns the market's chunks in time order.
func chunks(t testing.TB, s *postgres.Store, slug string) []chunkRow {
	t.Helper()
	rows, _ := s.Pool().Query(context.Background(), `
		select c.first_time, c.last_time, c.n
		from snapshot_chunks c join markets m on m.id = c.market
		where m.slug = $1 order by c.first_time`, slug)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[chunkRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkChunks fails the test unless the market's chunks hold n snapshots,
// at most ChunkSize each, without overlapping, and agree with its series row.
func checkChunks(t testing.TB, s *postgres.Store, slug string, n int) []chunkRow {
	t.Helper()
	cs := chunks(t, s, slug)
	sum := 0
	for i, c := range cs {
		sum += c.N
		if c.N < 1 || c.N > postgres.ChunkSize || c.Last.Before(c.First) {
			t.Errorf("chunk %d: %+v", i, c)
		}
		if i > 0 && !cs[i-1].Last.Before(c.First) {
			t.Errorf("chunk %d overlaps the one before: %+v, %+v", i, cs[i-1], c)
		}
	}
	if sum != n {
		t.Errorf("chunks hold %d snapshots, want %d", sum, n)
	}
	var seriesN int
	err := s.Pool().QueryRow(context.Background(), `
		select s.n from snapshot_series s join markets m on m.id = s.market where m.slug = $1`, slug).Scan(&seriesN)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	if seriesN != n {
		t.Errorf("series n = %d, want %d", seriesN, n)
	}
	return cs
}

// list reads a page and fails the test on error.
func list(t testing.TB, s store.Store, slug string, q store.SnapshotQuery) ([]store.Snapshot, int) {
	t.Helper()
	snaps, total, err := s.ListSnapshots(context.Background(), slug, q)
	if err != nil {
		t.Fatalf("ListSnapshots(%+v): %v", q, err)
	}
	return snaps, total
}

// checkPages reads pages of every shape both ways and compares them with
// want, the whole series in time order.
func checkPages(t *testing.T, s store.Store, slug string, want []store.Snapshot, limits ...int) {
	t.Helper()
	desc := slices.Clone(want)
	slices.Reverse(desc)
	for _, limit := range limits {
		for _, asc := range []bool{true, false} {
			all := desc
			if asc {
				all = want
			}
			// Offsets that step by less than a page, so pages overlap, and
			// reach past the end; at most ~40 pages per shape.
			step := max(1, limit*3/4, len(want)/40)
			for off := 0; off <= len(want)+limit; off += step {
				q := store.SnapshotQuery{Limit: limit, Offset: off, Ascending: asc, WithBooks: off%2 == 0}
				got, total := list(t, s, slug, q)
				lo, hi := min(off, len(all)), len(all)
				if limit > 0 {
					hi = min(lo+limit, hi)
				}
				if total != len(want) {
					t.Fatalf("%+v: total %d, want %d", q, total, len(want))
				}
				if msg := snapshotMismatch(all[lo:hi], got, q.WithBooks); msg != "" {
					t.Fatalf("%+v: %s", q, msg)
				}
				if limit == 0 {
					break
				}
			}
		}
	}
}

func TestAppendBulkAndPages(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	slug := newMarket(t, s, t0)
	want := newMarketSim(1, t0).series(3000)
	if _, err := s.AppendSnapshots(t.Context(), slug, want); err != nil {
		t.Fatal(err)
	}
	cs := checkChunks(t, s, slug, len(want))
	if len(cs) != 6 {
		t.Errorf("3000 snapshots in one append made %d chunks, want 6 of 500", len(cs))
	}
	checkPages(t, s, slug, want, 0, 1, 7, 500, 1000, 2999, 5000)
}

// TestSmallAppendsStayCompact appends a few snapshots at a time, as a live
// collector does: chunks must still end up large.
func TestSmallAppendsStayCompact(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	slug := newMarket(t, s, t0)
	want := newMarketSim(2, t0).series(2000)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < len(want); {
		n := min(1+rng.IntN(5), len(want)-i)
		if _, err := s.AppendSnapshots(t.Context(), slug, want[i:i+n]); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	cs := checkChunks(t, s, slug, len(want))
	// Full chunks, then a tail of smaller ones at most log2(ChunkSize) long.
	if len(cs) > len(want)/(postgres.ChunkSize/2)+10 {
		t.Errorf("%d chunks for %d snapshots: %+v", len(cs), len(want), cs)
	}
	checkPages(t, s, slug, want, 0, 1000, 333)
}

// TestAppendInterleaved writes a series in overlapping, shuffled,
// repeated batches that reach back among stored chunks, checking the store
// against a model (the first write of each instant wins) as it goes.
func TestAppendInterleaved(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	slug := newMarket(t, s, t0)
	all := newMarketSim(3, t0).series(2500)
	rng := rand.New(rand.NewPCG(3, 3))
	model := map[time.Time]store.Snapshot{}
	for round := range 40 {
		// A run somewhere in the series, with a fresh variant of each snapshot.
		lo := rng.IntN(len(all))
		hi := min(len(all), lo+1+rng.IntN(700))
		var batch []store.Snapshot
		for i := lo; i < hi; i++ {
			if rng.IntN(3) == 0 {
				continue // leave holes for later rounds to fill
			}
			sn := all[i]
			sn.CoinPrice += float64(round)
			batch = append(batch, sn)
		}
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		if len(batch) > 2 {
			batch = append(batch, batch[0], batch[1]) // repeats within the batch
		}
		if _, err := s.AppendSnapshots(t.Context(), slug, batch); err != nil {
			t.Fatal(err)
		}
		for _, sn := range batch {
			if _, ok := model[sn.Time]; !ok {
				model[sn.Time] = sn
			}
		}
		want := modelSeries(model)
		checkChunks(t, s, slug, len(want))
		got, total := list(t, s, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		if total != len(want) {
			t.Fatalf("round %d: total %d, want %d", round, total, len(want))
		}
		if msg := snapshotMismatch(want, got, true); msg != "" {
			t.Fatalf("round %d: %s", round, msg)
		}
	}
	checkPages(t, s, slug, modelSeries(model), 1000, 77)
}

func modelSeries(model map[time.Time]store.Snapshot) []store.Snapshot {
	out := make([]store.Snapshot, 0, len(model))
	for _, sn := range model {
		out = append(out, sn)
	}
	slices.SortFunc(out, func(a, b store.Snapshot) int { return a.Time.Compare(b.Time) })
	return out
}

// TestPartitions writes snapshots spanning months, in both directions,
// and survives partitions dropped behind the store's back (by another
// process's DropSnapshotsBefore).
func TestPartitions(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	slug := newMarket(t, s, t0)
	// Five snapshots a day apart around a month end, then two years back.
	var want []store.Snapshot
	sim := newMarketSim(4, time.Date(2025, 6, 28, 0, 0, 0, 0, time.UTC))
	for range 5 {
		sn := sim.next()
		sim.t = sim.t.Add(24 * time.Hour)
		want = append(want, sn)
	}
	if _, err := s.AppendSnapshots(ctx, slug, want); err != nil {
		t.Fatal(err)
	}
	old := newMarketSim(5, time.Date(2023, 6, 30, 23, 59, 0, 0, time.UTC)).series(400) // crosses into July
	if _, err := s.AppendSnapshots(ctx, slug, old); err != nil {
		t.Fatal(err)
	}
	want = append(old, want...)
	checkChunks(t, s, slug, len(want))
	checkPages(t, s, slug, want, 0, 100)

	rows, _ := s.Pool().Query(ctx, `
		select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
		where i.inhparent = 'snapshot_chunks'::regclass order by 1`)
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(parts, "snapshot_chunks_p202306") || !slices.Contains(parts, "snapshot_chunks_p202506") {
		t.Errorf("partitions %v, want 2023-06 and 2025-06 among them", parts)
	}

	// Another process drops the 2023 data; this one still believes the
	// partitions exist, and must recreate them.
	admin, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	d, err := admin.DropSnapshotsBefore(ctx, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Snapshots != int64(len(old)) || !slices.Equal(d.Partitions, []string{"snapshot_chunks_p202306", "snapshot_chunks_p202307"}) {
		t.Errorf("dropped %+v, want %d snapshots, the partitions of 2023-06 and 2023-07", d, len(old))
	}
	checkChunks(t, s, slug, len(want)-len(old))
	checkPages(t, s, slug, want[len(old):], 0)
	if _, err := s.AppendSnapshots(ctx, slug, old); err != nil {
		t.Fatalf("append after the partition was dropped: %v", err)
	}
	checkChunks(t, s, slug, len(want))
	checkPages(t, s, slug, want, 0)
}

// TestConcurrentAppends has writers race on one market with overlapping
// batches; the lock on the series row keeps the result exact.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	slug := newMarket(t, s, t0)
	want := newMarketSim(6, t0).series(1200)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 6))
			for range 10 {
				lo := rng.IntN(len(want))
				hi := min(len(want), lo+1+rng.IntN(300))
				if _, err := s.AppendSnapshots(context.Background(), slug, want[lo:hi]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := s.AppendSnapshots(t.Context(), slug, want); err != nil { // fill what the writers missed
		t.Fatal(err)
	}
	checkChunks(t, s, slug, len(want))
	checkPages(t, s, slug, want, 0, 1000)
}

// TestMigrateConcurrently migrates one empty database from several
// stores at once, then again.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			errs <- s.Migrate(context.Background())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	slug := newMarket(t, s, t0)
	if _, total := list(t, s, slug, store.SnapshotQuery{}); total != 0 {
		t.Errorf("total = %d in a new database", total)
	}
}

// TestTimesAndErrors covers what the conformance suite leaves to each store.
func TestTimesAndErrors(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	slug := newMarket(t, s, t0)
	_, err := s.AppendSnapshots(ctx, "nope", nil)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendSnapshots of nothing to an unknown market: %v, want ErrNotFound", err)
	}
	if _, err := s.AppendSnapshots(ctx, slug, nil); err != nil {
		t.Errorf("AppendSnapshots of nothing: %v", err)
	}
	_, err = s.CreateCustomer(ctx, store.Customer{ID: "not-a-uuid", Email: "a@example.com"})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("CreateCustomer with a malformed ID: %v, want ErrInvalid", err)
	}
	// Microseconds survive; nanoseconds are dropped, never rounded up.
	tm := time.Date(2025, 6, 1, 12, 0, 0, 999_999_999, time.FixedZone("x", 3600))
	if _, err := s.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: tm, CoinPrice: 1}}); err != nil {
		t.Fatal(err)
	}
	got, _ := list(t, s, slug, store.SnapshotQuery{})
	if len(got) != 1 || !got[0].Time.Equal(tm.Truncate(time.Microsecond)) || got[0].Time.Location() != time.UTC {
		t.Errorf("got %v, want %v in UTC", got, tm.Truncate(time.Microsecond))
	}
}

// TestUnreachableIsUnavailable: a server that cannot be reached is
// store.ErrUnavailable, which the api answers 503.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	s.Close() // a closed pool stands for a database gone away
	_, err := s.GetMarket(context.Background(), "btc-updown-5m-1")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetMarket on a closed pool: %v, want store.ErrUnavailable", err)
	}
}

// TestTransientErrorsAreUnavailable: errors of a database that turned the
// work away for the moment are store.ErrUnavailable, worth a retry (a
// sweep's shard is tried again, an api answers 503), as a lost connection
// is: the codes of a deadlock, a serialization failure, a disk full and
// connections all taken. A bad query is not, nor are a statement timeout
// and a read-only transaction as the server answers them: the same work
// meets them again on every try.
func TestTransientErrorsAreUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewStore(t)
	serverErr := func(sql string) error {
		t.Helper()
		err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, sql)
			return err
		})
		if err == nil {
			t.Fatalf("%s: no error", sql)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"statement timeout", serverErr("set local statement_timeout = 10; select pg_sleep(1)"), false},
		{"read-only transaction", serverErr("set transaction read only; create temporary table t (x int)"), false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"disk full", &pgconn.PgError{Code: "53100"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"a bad query", serverErr("select no_such_column from markets"), false},
		{"a bad value", &pgconn.PgError{Code: "22P02"}, false},
		{"out of memory", &pgconn.PgError{Code: "53200"}, false},
	} {
		if got := errors.Is(postgres.Wrap("op", tc.err), store.ErrUnavailable); got != tc.want {
			t.Errorf("%s (%v): unavailable %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestListingReadsOversizedChunks: a chunk of more snapshots than the
// writer makes (a repair by hand, another chunk size before) is read whole
// and with its books, the chunks around it too: the listing decodes books
// on other goroutines while it appends heads, and must not move the slice
// under them.
func TestListingReadsOversizedChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewStore(t)
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	snaps := newMarketSim(21, start).series(postgres.ChunkSize + 3*postgres.ChunkSize + 10)
	// The first chunk as the writer makes it, then one three chunks long.
	first, big := snaps[:postgres.ChunkSize], snaps[postgres.ChunkSize:]
	if _, err := s.AppendSnapshots(ctx, slug, first); err != nil {
		t.Fatal(err)
	}
	head, books := postgres.EncodeChunk(big)
	last := big[len(big)-1].Time
	if _, err := s.Pool().Exec(ctx, `
		insert into snapshot_chunks (market, first_time, last_time, n, head, books)
		select id, $2, $3, $4, $5, $6 from markets where slug = $1`,
		slug, big[0].Time, last, len(big), head, books); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `
		update snapshot_series set n = n + $2, last_time = $3
		where market = (select id from markets where slug = $1)`, slug, len(big), last); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.SnapshotQuery{
		{Ascending: true, WithBooks: true},
		{Ascending: true, WithBooks: true, Limit: 1000},
		{Ascending: true, WithBooks: true, Offset: 100, Limit: 1000},
	} {
		got, total := list(t, s, slug, q)
		want := snaps[q.Offset:]
		if q.Limit > 0 {
			want = want[:q.Limit]
		}
		if total != len(snaps) {
			t.Errorf("%+v: total %d, want %d", q, total, len(snaps))
		}
		if msg := snapshotMismatch(want, got, true); msg != "" {
			t.Errorf("%+v: %s", q, msg)
		}
	}
	// A replay's read of the whole market.
	tape, err := s.ReadTape(ctx, slug, store.OutcomeDown)
	if err != nil {
		t.Fatal(err)
	}
	want, err := store.TapeOf(snaps, store.OutcomeDown)
	if err != nil {
		t.Fatal(err)
	}
	if msg := storetest.TapeDiff(want, tape); msg != "" {
		t.Errorf("tape: %s", msg)
	}
}

// TestChunksOfBooksVersion1StillRead: a market whose chunks were written
// in books version 1 (before each outcome's books had a section of their
// own, or by a writer told to keep to it) reads as it did, in listings and
// tapes; and a writer of version 2 folds newer snapshots into its last
// chunk and merges a late one into its first, rewriting those in version 2.
func TestChunksOfBooksVersion1StillRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewStore(t)
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	slug := newMarket(t, s, start)
	snaps := newMarketSim(23, start).series(3*postgres.ChunkSize + 7)
	if err := s.WriteBooksVersion(3); err == nil {
		t.Error("books version 3 accepted")
	}
	if err := s.WriteBooksVersion(1); err != nil {
		t.Fatal(err)
	}
	cut := 2*postgres.ChunkSize + 100
	late := snaps[10]
	first := slices.Concat(snaps[:10], snaps[11:cut])
	if _, err := s.AppendSnapshots(ctx, slug, first); err != nil {
		t.Fatal(err)
	}
	versions := func() map[int]int {
		t.Helper()
		rows, err := s.Pool().Query(ctx, `
			select get_byte(books, 0) from snapshot_chunks
			where market = (select id from markets where slug = $1)`, slug)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		n := map[int]int{}
		for _, v := range vs {
			n[int(v)]++
		}
		return n
	}
	if v := versions(); v[1] == 0 || v[2] != 0 {
		t.Fatalf("chunks by books version after writing version 1: %v", v)
	}
	if err := s.WriteBooksVersion(2); err != nil {
		t.Fatal(err)
	}
	for _, more := range [][]store.Snapshot{snaps[cut:], {late}} {
		if _, err := s.AppendSnapshots(ctx, slug, more); err != nil {
			t.Fatal(err)
		}
	}
	if v := versions(); v[1] == 0 || v[2] == 0 {
		t.Errorf("chunks by books version after writing version 2 too: %v, want both", v)
	}
	got, total := list(t, s, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if total != len(snaps) {
		t.Errorf("total %d, want %d", total, len(snaps))
	}
	if msg := snapshotMismatch(snaps, got, true); msg != "" {
		t.Errorf("listing: %s", msg)
	}
	for _, outcome := range []string{store.OutcomeUp, store.OutcomeDown} {
		tape, err := s.ReadTape(ctx, slug, outcome)
		if err != nil {
			t.Fatal(err)
		}
		want, err := store.TapeOf(snaps, outcome)
		if err != nil {
			t.Fatal(err)
		}
		if msg := storetest.TapeDiff(want, tape); msg != "" {
			t.Errorf("tape of %s: %s", outcome, msg)
		}
	}
}

// TestReadsOfACorruptChunkFail: a chunk whose bytes do not decode (a disk
// fault, a repair by hand gone wrong) fails every read that reaches it
// with an error that says so, and panics nowhere, however the bytes are
// cut.
func TestReadsOfACorruptChunkFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewStore(t)
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	snaps := newMarketSim(22, start).series(3 * postgres.ChunkSize)
	head, books := postgres.EncodeChunk(snaps[postgres.ChunkSize : 2*postgres.ChunkSize])
	for i, bad := range []struct{ head, books []byte }{
		{head[:len(head)/2], books},
		{head, books[:len(books)/2]},
		{append([]byte{9}, head[1:]...), books},
		{head, append([]byte{9}, books[1:]...)},
	} {
		slug := newMarket(t, s, start.Add(time.Duration(i)*time.Hour))
		if _, err := s.AppendSnapshots(ctx, slug, snaps); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `
			update snapshot_chunks set head = $3, books = $4
			where market = (select id from markets where slug = $1) and first_time = $2`,
			slug, snaps[postgres.ChunkSize].Time, bad.head, bad.books); err != nil {
			t.Fatal(err)
		}
		corrupt := func(what string, err error) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), "corrupt snapshot chunk") {
				t.Errorf("case %d, %s: %v, want a corrupt chunk error", i, what, err)
			}
		}
		_, err := s.ReadTape(ctx, slug, store.OutcomeUp)
		corrupt("ReadTape", err)
		_, _, err = s.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		corrupt("ListSnapshots", err)
	}
}

// TestImportCreatesPartitions runs an import that writes a stored market's
// snapshots in one month and then a new market's in months without a
// partition: the partitions are made while the import's transaction holds
// its lock on snapshot_chunks (creating one the usual way waits for that
// lock, which the import never lets go: the import hung), and a reader
// and a writer of other markets are not held up meanwhile.
func TestImportCreatesPartitions(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	recorded := newMarket(t, s, time.Date(2031, 3, 31, 23, 30, 0, 0, time.UTC))
	if _, err := s.AppendSnapshots(ctx, recorded, newMarketSim(1, time.Date(2031, 3, 31, 23, 30, 0, 0, time.UTC)).series(10)); err != nil {
		t.Fatal(err)
	}
	other := newMarket(t, s, time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC))

	tx, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	m, _ := s.GetMarket(ctx, recorded)
	if _, err := tx.AddMarket(ctx, m, "ws-jsonl"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AppendSnapshots(ctx, recorded, newMarketSim(2, time.Date(2031, 3, 31, 23, 40, 0, 0, time.UTC)).series(10)); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2031, 4, 30, 23, 55, 0, 0, time.UTC) // April, then May
	fresh := store.Market{Slug: "import-partitions", MarketID: "m", EventID: "e", Coin: store.ETH, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "c", ClobTokenUp: "u", ClobTokenDown: "d"}
	if _, err := tx.AddMarket(ctx, fresh, "ws-jsonl"); err != nil {
		t.Fatal(err)
	}
	want := newMarketSim(3, start).series(4000) // 20 minutes
	for part := range slices.Chunk(want, 1000) {
		if _, err := tx.AppendSnapshots(ctx, fresh.Slug, part); err != nil {
			t.Fatalf("import append across new months: %v", err)
		}
	}
	// Others go on meanwhile.
	if _, err := s.AppendSnapshots(ctx, other, newMarketSim(4, time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)).series(10)); err != nil {
		t.Fatalf("another market's append during the import: %v", err)
	}
	if _, _, err := s.ListSnapshots(ctx, recorded, store.SnapshotQuery{}); err != nil {
		t.Fatalf("a listing during the import: %v", err)
	}
	if _, _, err := tx.Commit(ctx, store.Import{Key: "partitions", Source: "ws-jsonl"}); err != nil {
		t.Fatal(err)
	}
	got, n, err := s.ListSnapshots(ctx, fresh.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil || n != len(want) {
		t.Fatalf("%d snapshots imported across months (%v), want %d", n, err, len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) {
			t.Fatalf("snapshot %d at %s, want %s", i, got[i].Time, want[i].Time)
		}
	}
}

// TestImportCancelledWhileCopying cancels an import while its rows are
// being copied in the background: the calls after fail at once, without a
// hang or a second use of the connection, Rollback leaves the store as it
// was, and the store goes on serving.
func TestImportCancelledWhileCopying(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	tx, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)
	m := store.Market{Slug: "import-cancelled", MarketID: "m", EventID: "e", Coin: store.BTC, MarketType: store.H1,
		StartTime: start, EndTime: start.Add(time.Hour), ConditionID: "c", ClobTokenUp: "u", ClobTokenDown: "d"}
	if _, err := tx.AddMarket(ctx, m, "ws-jsonl"); err != nil {
		t.Fatal(err)
	}
	// Several megabytes, books redrawn every snapshot: copies start and
	// go on behind the appends.
	all := newMarketSim(7, start).series(12000)
	for part := range slices.Chunk(all[:8000], 2000) {
		if _, err := tx.AppendSnapshots(ctx, m.Slug, part); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if _, err := tx.AppendSnapshots(ctx, m.Slug, all[8000:]); err == nil {
		if _, _, err := tx.Commit(ctx, store.Import{Key: "cancelled", Source: "ws-jsonl"}); err == nil {
			t.Fatal("an import cancelled while copying committed")
		}
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Errorf("rollback: %v", err)
	}
	if _, err := s.GetMarket(t.Context(), m.Slug); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a cancelled import left its market: %v", err)
	}
	if imps, err := s.ListImports(t.Context()); err != nil || len(imps) != 0 {
		t.Errorf("imports after a cancelled one: %v %v", imps, err)
	}
}

// TestImportTradesAsAppended checks the trades an import copies (in COPY's
// binary format, written by hand), into a market it created and into its
// table of a stored market's trades (inserted from it at Commit), against
// the same trades the store appends (an insert through pgx): random
// times to the microsecond (before 2000, whose offset is negative, too),
// prices, sizes and fees of every kind of float, both outcomes and
// sides, hashes of any text.
func TestImportTradesAsAppended(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(6, 1))
	start := time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC)
	var trades []store.MarketTrade
	for i := range 4000 { // two markets of them pass copyPendingBytes: copied mid-import too
		num := func() float64 {
			switch rng.IntN(3) {
			case 0:
				return rng.Float64()
			case 1:
				return float64(rng.IntN(100000)) / 100
			}
			return 0
		}
		trades = append(trades, store.MarketTrade{Time: start.Add(time.Duration(rng.Int64N(int64(3 * time.Hour)))).Truncate(time.Microsecond),
			Outcome: []string{store.OutcomeUp, store.OutcomeDown}[rng.IntN(2)], Side: []string{store.SideBuy, store.SideSell}[rng.IntN(2)],
			Price: min(0.999, max(0.001, rng.Float64())), Size: num(), FeeRateBps: num(), TxHash: fmt.Sprintf("0x%x·%d", rng.Uint64(), i)})
	}
	market := func(slug string) store.Market {
		return store.Market{Slug: slug, MarketID: slug, EventID: "e", Coin: store.BTC, MarketType: store.H1,
			StartTime: start, EndTime: start.Add(3 * time.Hour), ConditionID: "c-" + slug, ClobTokenUp: "u-" + slug, ClobTokenDown: "d-" + slug}
	}
	if err := s.UpsertMarkets(ctx, []store.Market{market("appended"), market("held")}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // before the store closes
	if created, err := tx.AddMarket(ctx, market("copied"), "ws-jsonl"); err != nil || !created {
		t.Fatalf("add market: %v %v", created, err)
	}
	slices.SortFunc(trades, store.CompareMarketTrades) // as they come, oldest first: copied
	for part := range slices.Chunk(trades, 700) {
		for _, slug := range []string{"copied", "held"} {
			if _, err := tx.AppendMarketTrades(ctx, slug, part); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AppendMarketTrades(ctx, "appended", part); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tx.Commit(ctx, store.Import{Key: "trades", Source: "ws-jsonl"}); err != nil {
		t.Fatal(err)
	}
	copied, _, err := s.ListMarketTrades(ctx, "copied", store.MarketTradeQuery{Ascending: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	appended, _, err := s.ListMarketTrades(ctx, "appended", store.MarketTradeQuery{Ascending: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	held, _, err := s.ListMarketTrades(ctx, "held", store.MarketTradeQuery{Ascending: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(copied) != len(trades) || !slices.Equal(copied, appended) || !slices.Equal(held, appended) {
		t.Fatalf("%d trades copied, %d held, %d appended, of %d", len(copied), len(held), len(appended), len(trades))
	}
	for i := range copied {
		if want := trades[i]; copied[i].Time.Compare(want.Time) != 0 || copied[i].Price != want.Price || copied[i].TxHash != want.TxHash {
			t.Fatalf("trade %d: copied %+v, want %+v", i, copied[i], want)
		}
	}
}
