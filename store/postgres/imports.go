package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
)

var _ store.ImportStore = (*Store)(nil)

// BeginImport starts an import in one transaction: a failed import rolls
// back whole. What it writes to markets stored before it is held until
// Commit (see importTx.held), which locks them only for its last step.
// Partitions its snapshots need are created outside it (as every append
// does): an empty partition is no data.
func (s *Store) BeginImport(ctx context.Context) (store.ImportTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, wrap("begin import", err)
	}
	return &importTx{s: s, tx: tx, created: map[string]bool{}, ids: map[string]int64{},
		fresh: map[string]*freshSeries{}, freshTrades: map[string]*freshTrades{}, freshGaps: map[int64][]store.Gap{},
		rewrites: map[string]int{}, held: map[string]*heldMarket{}}, nil
}

const importColumns = `id, key, source, files, from_time, to_time, markets, snapshots, trades, gaps, skipped, created_at`

func scanImport(row pgx.CollectableRow) (store.Import, error) {
	var imp store.Import
	var from, to *time.Time
	err := row.Scan(&imp.ID, &imp.Key, &imp.Source, &imp.Files, &from, &to, &imp.Markets, &imp.Snapshots,
		&imp.Trades, &imp.Gaps, &imp.Skipped, &imp.CreatedAt)
	if from != nil {
		imp.From = utc(*from)
	}
	if to != nil {
		imp.To = utc(*to)
	}
	imp.CreatedAt = utc(imp.CreatedAt)
	return imp, err
}

// ListImports returns the committed imports, oldest first.
func (s *Store) ListImports(ctx context.Context) ([]store.Import, error) {
	rows, _ := s.pool.Query(ctx, `select `+importColumns+` from imports order by id`)
	out, err := pgx.CollectRows(rows, scanImport)
	if out == nil {
		out = []store.Import{}
	}
	return out, wrap("list imports", err)
}

type importTx struct {
	s                          *Store
	tx                         pgx.Tx
	created                    map[string]bool
	ids                        map[string]int64 // markets' ids by slug, as learnt
	markets, snapshots, trades int64
	gaps                       int64

	// fresh holds, by slug, the snapshot series of the markets this import
	// created, whose snapshots are all the import's and come oldest first:
	// their chunks are encoded as they come, held in pending and copied
	// many at a time, and their series rows written at Commit. Nothing is
	// read back, merged or counted by a query: nothing else can be there.
	fresh        map[string]*freshSeries
	pending      []freshChunk
	pendingBytes int
	// freshTrades are, by slug, the trades of the markets the import
	// created while they come oldest first: copied with the chunks, the
	// duplicates a statement's conflict would skip dropped here.
	// freshGaps are those markets' gaps by id, written at Commit.
	freshTrades   map[string]*freshTrades
	pendingTrades []freshTrade
	freshGaps     map[int64][]store.Gap

	// copying, when set, brings the end of the COPY of the chunks and
	// trades pending before (see copyPending): until then the connection
	// is the copy's, and every other use of tx waits for it (settle), so
	// that encoding the next rows overlaps the server's writing of these.
	// err is the first failure of one, for every call after.
	copying <-chan copied
	cancel  context.CancelFunc
	err     error
	// spareChunks and spareTrades are the memory of the last batch
	// copied, for the next one.
	spareChunks []freshChunk
	spareTrades []freshTrade

	// rewrites are the markets the import created as AddMarket was last
	// given them (what the import learnt of them since their first
	// rows), by index into rewriting: written all at once, at Commit (or
	// before a read of markets).
	rewrites  map[string]int
	rewriting []rewrite

	// held are, by slug, the markets stored before the import that it
	// writes to: what it changes of their rows and gaps is held here, and
	// their snapshots in import_staged, and written at Commit, in one
	// short step (planSnapshots, writeSnapshots, writeHeld), so that until
	// then the import holds no lock the collector's writes to them would
	// wait for (an import runs for minutes; every writer waits
	// lock_timeout).
	held map[string]*heldMarket
	// staging is set once stagedTables are made; pendingStaged are the
	// staged chunks pending, copied with the others (copyPending).
	staging       bool
	pendingStaged []freshChunk
	spareStaged   []freshChunk
	// tradeStaging is set once import_trades is made (tradeTables):
	// the stored markets' trades are held there, copied with the others
	// (pendingHeldTrades), and inserted into theirs at Commit
	// (writeHeldTrades).
	tradeStaging      bool
	pendingHeldTrades []freshTrade
	spareHeldTrades   []freshTrade
}

// heldMarket is what an import holds for a market stored before it.
type heldMarket struct {
	id int64
	// adds are the AddMarket calls, in order, applied to the row as it is
	// at Commit (applyAdds).
	adds []rewrite
	// gaps are the ReplaceGaps calls, in order, applied to the gaps as
	// they are at Commit.
	gaps []gapReplace
	// n snapshots, from first to last, are staged in import_staged (see
	// stagedTables) as chunks that never overlap, the first written of a
	// time kept; Commit merges them into the market's (planSnapshots,
	// writeSnapshots).
	n           int64
	first, last time.Time
	plan        snapshotPlan
	// trades are the newest of the market's trades held in import_trades
	// (see freshTrades).
	trades freshTrades
}

// snapshotPlan is how Commit adds a held market's staged snapshots to its
// stored ones, as worked out before it locks anything (planSnapshots):
// the stored chunks the staged span overlaps (overlapped, each with its
// row version), which the merged chunks in import_merged replace; when
// none, the staged chunks go in as they are. added counts the snapshots
// the market gains. Under the lock, the plan holds if the chunks the span
// overlaps are still those.
type snapshotPlan struct {
	ready      bool
	overlapped []chunkVersion
	added      int64
	// from and to span the chunks written (the staged ones, or the merged
	// ones, which reach out to the overlapped chunks').
	from, to time.Time
}

// chunkVersion names a stored chunk and its row version.
type chunkVersion struct {
	first time.Time
	xmin  string
}

// stagedTables are an import's staging tables, made by its first
// snapshot of a stored market and dropped with its transaction: the
// staged chunks, as snapshot_chunks keeps them, and the merged ones that
// replace stored chunks at Commit. Being temporary, they are the
// import's only and written without WAL.
const stagedTables = `
create temp table import_staged (
	market     bigint not null,
	first_time timestamptz not null,
	last_time  timestamptz not null,
	n          integer not null,
	head       bytea not null,
	books      bytea not null,
	primary key (market, first_time)
) on commit drop;
create temp table import_merged (like import_staged including all) on commit drop`

// tradeTables is an import's table of the stored markets' trades, made by
// its first trade of one and dropped with its transaction: their rows, as
// market_trades keys them, inserted into it at Commit (writeHeldTrades).
// Inserted as they come, they would lock their keys until the import
// commits, and the collector's append of the same trade (a capture of the
// live hour holds the collector's) would wait out lock_timeout and fail,
// the rest of its batch with it.
const tradeTables = `
create temp table import_trades (
	market       bigint not null,
	time         timestamptz not null,
	outcome      text collate "C" not null,
	side         text collate "C" not null,
	price        double precision not null,
	size         double precision not null,
	fee_rate_bps double precision not null,
	tx_hash      text collate "C" not null,
	primary key (market, time, outcome, side, price, size, fee_rate_bps, tx_hash)
) on commit drop`

// gapReplace is a ReplaceGaps call held for Commit.
type gapReplace struct {
	from, to time.Time
	gaps     []store.Gap
}

// copied is how a COPY in flight ended, with the memory of what it wrote,
// for the next batch.
type copied struct {
	chunks, staged     []freshChunk
	trades, heldTrades []freshTrade
	err                error
}

// rewrite is an AddMarket call held for Commit: a created market's row,
// written again, or what a stored market takes of the market given
// (applyAdds).
type rewrite struct {
	m       store.Market
	source  string
	stamped time.Time
}

// freshTrades is what is written of a created market's trades (or held of
// a stored market's, in import_trades).
type freshTrades struct {
	market int64
	// newest are the newest trades written, all of one time: only they
	// can equal a later batch's trades, which are no older.
	newest []store.MarketTrade
}

type freshTrade struct {
	market int64
	store.MarketTrade
}

// tradeBytes is about what a pending trade weighs, for copyPendingBytes.
const tradeBytes = 160

// freshSeries is the series of a market the import created, as written so
// far (n counts pending chunks too).
type freshSeries struct {
	market      int64
	n           int64
	first, last time.Time
}

type freshChunk struct {
	market int64
	newChunk
}

// copyPendingBytes is about how many bytes of chunks and trades an import
// holds before it copies them. A megabyte a COPY spreads a copy's fixed
// cost (a round trip, and the server's setting up of the copy) over
// thousands of rows, keeps memory bounded (one batch pending, one being
// copied) and keeps short what is left to copy when the input ends, which
// nothing overlaps: with 4 MB batches, copied in turn with the encoding,
// that tail was a third of a small import's time. (A quarter megabyte
// measured no better: the writer waits for the copy before it more often.)
const copyPendingBytes = 1 << 20

func (t *importTx) MarketsByCondition(ctx context.Context, ids []string) ([]store.Market, error) {
	if err := t.writeRewrites(ctx); err != nil {
		return nil, wrap("import: markets by condition", err)
	}
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !storable(id) })
	rows, _ := t.tx.Query(ctx, `select `+marketColumns+` from markets where condition_id = any($1) order by start_time desc, slug`, ids)
	out, err := pgx.CollectRows(rows, scanMarket)
	for i, m := range out {
		if h := t.held[m.Slug]; h != nil {
			out[i] = applyAdds(m, h.adds) // as Commit will write it
		}
	}
	return out, wrap("import: markets by condition", err)
}

// insertMarketSQL stores a market the import creates, with its source
// as its only data source (upsertMarketArgs), and answers its id; a market
// stored under the slug is left as it is (no row then): what the import
// changes of one is held for Commit (applyAdds), where a conflicting
// update would lock the row until then.
const insertMarketSQL = `
insert into markets (` + marketColumns + `)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
	$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31::text[])
on conflict (slug) do nothing
returning id`

// applyAdds is the stored market m as the AddMarket calls adds make it:
// each adds its source to the data sources and stamps updated_at (the
// import changes the market's data, and caches keyed by the record, an
// API's settled pages, must not serve what it was); every other field
// stays (recorded wins), but that a market only imports wrote (no
// DataRecorder among its sources) takes the settlement of the market
// given while it is unresolved (store.Market.SettleFrom) and gains its
// tick changes at instants it has none of (store.MergeTickChanges, its
// tick size the latest).
func applyAdds(m store.Market, adds []rewrite) store.Market {
	for _, a := range adds {
		recorded := slices.Contains(m.DataSources, store.DataRecorder)
		m.DataSources = store.AddDataSource(m.DataSources, a.source)
		m.UpdatedAt = a.stamped
		if recorded {
			continue
		}
		given := a.m
		if given.ResolvedAt != nil {
			r := micro(*given.ResolvedAt)
			given.ResolvedAt = &r
		}
		m = m.SettleFrom(given)
		if len(given.TickSizeChanges) == 0 {
			continue
		}
		norm := make([]store.TickSizeChange, len(given.TickSizeChanges))
		for i, c := range given.TickSizeChanges {
			norm[i] = store.TickSizeChange{Time: micro(c.Time), TickSize: c.TickSize}
		}
		if merged := store.MergeTickChanges(m.TickSizeChanges, norm); !slices.EqualFunc(merged, m.TickSizeChanges, func(a, b store.TickSizeChange) bool {
			return a.Time.Equal(b.Time) && a.TickSize == b.TickSize
		}) {
			size := merged[len(merged)-1].TickSize
			m.TickSizeChanges, m.TickSize = merged, &size
		}
	}
	return m
}

func (t *importTx) AddMarket(ctx context.Context, m store.Market, source string) (bool, error) {
	op := fmt.Sprintf("import: add market %q", m.Slug)
	if m.Slug == "" || source == "" {
		return false, invalid(op, "a market without a slug or a source without a name")
	}
	now := t.s.stamp()
	if t.created[m.Slug] {
		// Only this import wrote the market: its row is written again at
		// Commit, all such rows in one round trip.
		rw := rewrite{m: m, source: source, stamped: now}
		if i, ok := t.rewrites[m.Slug]; ok {
			t.rewriting[i] = rw
		} else {
			t.rewrites[m.Slug] = len(t.rewriting)
			t.rewriting = append(t.rewriting, rw)
		}
		return false, nil
	}
	if h := t.held[m.Slug]; h != nil {
		h.adds = append(h.adds, rewrite{m: m, source: source, stamped: now})
		return false, nil
	}
	if err := t.settle(ctx); err != nil {
		return false, wrap(op, err)
	}
	var id int64
	err := t.tx.QueryRow(ctx, insertMarketSQL, upsertMarketArgs(m, now, now, []string{source})...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		// Stored: what the import changes of it waits for Commit.
		h, err := t.heldOf(ctx, m.Slug)
		if err != nil {
			return false, wrap(op, err)
		}
		h.adds = append(h.adds, rewrite{m: m, source: source, stamped: now})
		return false, nil
	}
	if err != nil {
		return false, wrap(op, err)
	}
	t.markets++
	t.created[m.Slug] = true
	t.fresh[m.Slug] = &freshSeries{market: id}
	t.freshTrades[m.Slug] = &freshTrades{market: id}
	t.ids[m.Slug] = id
	return true, nil
}

// heldOf returns what the import holds for the stored market with the
// slug, found (without a lock) on first use.
func (t *importTx) heldOf(ctx context.Context, slug string) (*heldMarket, error) {
	if h := t.held[slug]; h != nil {
		return h, nil
	}
	if !storable(slug) {
		return nil, pgx.ErrNoRows
	}
	if err := t.settle(ctx); err != nil {
		return nil, err
	}
	var id int64
	if err := t.tx.QueryRow(ctx, `select id from markets where slug = $1`, slug).Scan(&id); err != nil {
		return nil, err
	}
	h := &heldMarket{id: id}
	t.held[slug] = h
	t.ids[slug] = id
	return h, nil
}

func (t *importTx) AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error) {
	op := fmt.Sprintf("import: append snapshots of %q", slug)
	if err := store.CheckSnapshots(snaps); err != nil {
		return 0, wrap(op, err)
	}
	in := normalized(snaps)
	if len(in) == 0 {
		return 0, nil
	}
	if err := t.s.ensurePartitions(ctx, monthsOf(in, func(sn store.Snapshot) time.Time { return sn.Time })); err != nil {
		return 0, wrap(op, err)
	}
	if fs := t.fresh[slug]; fs != nil {
		if fs.n == 0 || in[0].Time.After(fs.last) {
			t.appendFresh(fs, in)
			if t.pendingBytes >= copyPendingBytes {
				if err := t.copyPending(ctx); err != nil {
					return 0, wrap(op, err)
				}
			}
			return len(in), nil
		}
		// Snapshots reaching back among its own: the market's series is
		// written now, and merged into as any other.
		if err := t.writeFresh(ctx, slug); err != nil {
			return 0, wrap(op, err)
		}
	}
	if !t.created[slug] {
		// A stored market's: staged, and merged into its own at Commit.
		n, err := t.stage(ctx, slug, in)
		if err != nil {
			return 0, wrap(op, err)
		}
		return n, nil
	}
	if err := t.settle(ctx); err != nil {
		return 0, wrap(op, err)
	}
	added, err := t.s.appendTx(ctx, t.tx, slug, in)
	if err != nil {
		var need needPartitions
		if errors.As(err, &need) {
			return 0, wrap(op, fmt.Errorf("a partition was dropped during the import: %w", err))
		}
		return 0, wrap(op, err)
	}
	t.snapshots += int64(added)
	return added, nil
}

func (t *importTx) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	op := fmt.Sprintf("import: append market trades of %q", slug)
	sorted, err := sortedTrades(op, trades)
	if err != nil {
		return 0, err
	}
	// Equal trades are one row (the key is every column).
	sorted = slices.CompactFunc(sorted, func(a, b store.MarketTrade) bool { return store.CompareMarketTrades(a, b) == 0 })
	if ft := t.freshTrades[slug]; ft != nil && len(sorted) > 0 {
		if len(ft.newest) == 0 || !sorted[0].Time.Before(ft.newest[0].Time) {
			kept, err := t.appendFreshTrades(ctx, ft, sorted, &t.pendingTrades)
			if err != nil {
				return 0, wrap(op, err)
			}
			t.trades += int64(kept)
			return kept, nil
		}
		// Trades reaching back among its own: from now on the market's
		// trades are inserted by statement, after what is pending.
		if err := t.flushPending(ctx); err != nil {
			return 0, wrap(op, err)
		}
		delete(t.freshTrades, slug)
	}
	if !t.created[slug] {
		// A stored market's: held in import_trades, and inserted into its
		// own at Commit.
		n, err := t.holdTrades(ctx, slug, sorted)
		if err != nil {
			return 0, wrap(op, err)
		}
		return n, nil
	}
	if err := t.settle(ctx); err != nil {
		return 0, wrap(op, err)
	}
	id, err := t.marketID(ctx, slug)
	if err != nil {
		return 0, wrap(op, err)
	}
	if len(sorted) == 0 {
		return 0, nil
	}
	tag, err := t.tx.Exec(ctx, appendTradesSQL, tradeArgs(id, sorted)...)
	if err != nil {
		return 0, wrap(op, err)
	}
	t.trades += tag.RowsAffected()
	return int(tag.RowsAffected()), nil
}

// heldTradesSQL is appendTradesSQL into import_trades.
const heldTradesSQL = `
insert into import_trades` + tradesFromArrays

// holdTrades holds sorted distinct trades of a stored market in
// import_trades and returns how many of them are new to those the import
// gave it (what the market gains is counted at Commit): those no older
// than all it gave, the usual case, are pending, copied with the others;
// those reaching back among them are inserted, the key skipping those
// held already.
func (t *importTx) holdTrades(ctx context.Context, slug string, sorted []store.MarketTrade) (int, error) {
	h, err := t.heldOf(ctx, slug)
	if err != nil {
		return 0, err
	}
	if len(sorted) == 0 {
		return 0, nil
	}
	if !t.tradeStaging {
		if err := t.settle(ctx); err != nil {
			return 0, err
		}
		if _, err := t.tx.Exec(ctx, tradeTables); err != nil {
			return 0, t.fail(err)
		}
		t.tradeStaging = true
	}
	ht := &h.trades
	ht.market = h.id
	if len(ht.newest) == 0 || !sorted[0].Time.Before(ht.newest[0].Time) {
		return t.appendFreshTrades(ctx, ht, sorted, &t.pendingHeldTrades)
	}
	if err := t.flushPending(ctx); err != nil {
		return 0, err
	}
	tag, err := t.tx.Exec(ctx, heldTradesSQL, tradeArgs(h.id, sorted)...)
	if err != nil {
		return 0, err
	}
	ht.newest = newestTrades(ht.newest, sorted)
	return int(tag.RowsAffected()), nil
}

// appendFreshTrades adds sorted distinct trades of ft's market, none
// older than the newest written, to the pending ones in into, but those
// written already, and returns how many it added.
func (t *importTx) appendFreshTrades(ctx context.Context, ft *freshTrades, sorted []store.MarketTrade, into *[]freshTrade) (int, error) {
	kept := 0
	for _, tr := range sorted {
		if len(ft.newest) > 0 && tr.Time.Equal(ft.newest[0].Time) &&
			slices.ContainsFunc(ft.newest, func(o store.MarketTrade) bool { return store.CompareMarketTrades(o, tr) == 0 }) {
			continue
		}
		*into = append(*into, freshTrade{market: ft.market, MarketTrade: tr})
		kept++
	}
	ft.newest = newestTrades(ft.newest, sorted)
	t.pendingBytes += kept * tradeBytes
	if t.pendingBytes >= copyPendingBytes {
		if err := t.copyPending(ctx); err != nil {
			return 0, err
		}
	}
	return kept, nil
}

// newestTrades returns the newest trades, all of one time, of those in
// newest and sorted (sorted distinct trades), reusing newest's memory.
func newestTrades(newest, sorted []store.MarketTrade) []store.MarketTrade {
	last := sorted[len(sorted)-1].Time
	if len(newest) > 0 && last.Before(newest[0].Time) {
		return newest
	}
	if len(newest) == 0 || !newest[0].Time.Equal(last) {
		newest = newest[:0]
	}
	for _, tr := range sorted {
		if tr.Time.Equal(last) && !slices.ContainsFunc(newest, func(o store.MarketTrade) bool { return store.CompareMarketTrades(o, tr) == 0 }) {
			newest = append(newest, tr)
		}
	}
	return newest
}

// marketID returns the id of the market with the slug.
func (t *importTx) marketID(ctx context.Context, slug string) (int64, error) {
	if id, ok := t.ids[slug]; ok {
		return id, nil
	}
	var id int64
	if err := t.tx.QueryRow(ctx, `select id from markets where slug = $1`, slug).Scan(&id); err != nil {
		return 0, err
	}
	t.ids[slug] = id
	return id, nil
}

// ReplaceGaps cuts the market's stored gaps at from and to, drops their
// parts inside, and adds gaps, merged with the parts left where they touch
// or overlap (store.ReplaceGaps), as RecordGaps merges.
func (t *importTx) ReplaceGaps(ctx context.Context, slug string, from, to time.Time, gaps []store.Gap) error {
	op := fmt.Sprintf("import: replace gaps of %q", slug)
	batch := make([]store.Gap, len(gaps))
	for i, g := range gaps {
		g = store.Gap{From: micro(g.From), To: micro(g.To), Kind: g.Kind}
		if err := g.Check(); err != nil {
			return fmt.Errorf("postgres: %s: %w", op, err)
		}
		batch[i] = g
	}
	from, to = micro(from), micro(to)
	if t.created[slug] {
		// Only this import wrote the market's gaps: they are replaced here
		// and written at Commit.
		id := t.ids[slug]
		t.freshGaps[id] = store.ReplaceGaps(t.freshGaps[id], from, to, batch)
		t.gaps += store.FoundGaps(gaps)
		return nil
	}
	// A stored market's: held for Commit, and applied then to its gaps
	// as they are.
	h, err := t.heldOf(ctx, slug)
	if err != nil {
		return wrap(op, err)
	}
	h.gaps = append(h.gaps, gapReplace{from: from, to: to, gaps: batch})
	t.gaps += store.FoundGaps(gaps)
	return nil
}

// stage stages in, snapshots of a stored market, and returns how many
// of them are new to what the import staged of it: those newer than all
// it staged, the usual case, are encoded into pending chunks, copied
// with the others; those reaching back among them are merged into the
// staged chunks they overlap (the first staged of a time kept).
func (t *importTx) stage(ctx context.Context, slug string, in []store.Snapshot) (int, error) {
	h, err := t.heldOf(ctx, slug)
	if err != nil {
		return 0, err
	}
	if !t.staging {
		if err := t.settle(ctx); err != nil {
			return 0, err
		}
		if _, err := t.tx.Exec(ctx, stagedTables); err != nil {
			return 0, t.fail(err)
		}
		t.staging = true
	}
	lo, hi := in[0].Time, in[len(in)-1].Time
	if h.n == 0 || lo.After(h.last) {
		for _, c := range encodeChunks(in, t.s.writeVersion()) {
			t.pendingStaged = append(t.pendingStaged, freshChunk{market: h.id, newChunk: c})
			t.pendingBytes += len(c.head) + len(c.books)
		}
		if h.n == 0 {
			h.first = lo
		}
		h.n += int64(len(in))
		h.last = hi
		if t.pendingBytes >= copyPendingBytes {
			if err := t.copyPending(ctx); err != nil {
				return 0, err
			}
		}
		return len(in), nil
	}
	if err := t.flushPending(ctx); err != nil {
		return 0, err
	}
	rows, _ := t.tx.Query(ctx, `select first_time from import_staged where market = $1 and first_time <= $2 and last_time >= $3`, h.id, hi, lo)
	overlapped, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return 0, err
	}
	old, err := readChunksOf(ctx, t.tx, "import_staged", h.id, overlapped)
	if err != nil {
		return 0, err
	}
	merged, added := merge(old, in)
	if added == 0 {
		return 0, nil
	}
	if _, err := t.tx.Exec(ctx, `delete from import_staged where market = $1 and first_time = any($2)`, h.id, overlapped); err != nil {
		return 0, err
	}
	if err := copyChunks(ctx, t.tx, "import_staged", h.id, encodeChunks(merged, t.s.writeVersion())); err != nil {
		return 0, err
	}
	h.n += int64(added)
	h.first, h.last = minTime(h.first, lo), maxTime(h.last, hi)
	return added, nil
}

// copyChunks copies a market's chunks into a table of chunks.
func copyChunks(ctx context.Context, tx pgx.Tx, table string, market int64, chunks []newChunk) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{table},
		[]string{"market", "first_time", "last_time", "n", "head", "books"},
		pgx.CopyFromSlice(len(chunks), func(i int) ([]any, error) {
			c := &chunks[i]
			return []any{market, c.first, c.last, int32(c.n), c.head, c.books}, nil
		}))
	return err
}

// normalized is normalize without the copy when snaps are sorted by
// distinct times to the microsecond already, as an import's are.
func normalized(snaps []store.Snapshot) []store.Snapshot {
	for i := range snaps {
		if !snaps[i].Time.Equal(micro(snaps[i].Time)) || i > 0 && !snaps[i].Time.After(snaps[i-1].Time) {
			return normalize(snaps)
		}
	}
	return snaps
}

// appendFresh encodes in, newer than everything of the fresh series, into
// pending chunks.
func (t *importTx) appendFresh(fs *freshSeries, in []store.Snapshot) {
	for _, c := range encodeChunks(in, t.s.writeVersion()) {
		t.pending = append(t.pending, freshChunk{market: fs.market, newChunk: c})
		t.pendingBytes += len(c.head) + len(c.books)
	}
	if fs.n == 0 {
		fs.first = in[0].Time
	}
	fs.n += int64(len(in))
	fs.last = in[len(in)-1].Time
	t.snapshots += int64(len(in))
}

// copyPending starts copying the pending chunks, in one COPY, and the
// pending trades, in another, on a goroutine of its own (see copying),
// under ctx; the call that starts it returns at once, the calls after
// wait for the connection. A COPY in flight is waited for first.
func (t *importTx) copyPending(ctx context.Context) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	if len(t.pending) == 0 && len(t.pendingTrades) == 0 && len(t.pendingStaged) == 0 && len(t.pendingHeldTrades) == 0 {
		return nil
	}
	months := monthsOf(t.pending, func(c freshChunk) time.Time { return c.first })
	if missing := t.s.parts.missing(months); len(missing) > 0 {
		return t.fail(fmt.Errorf("a partition was dropped during the import: %w", needPartitions(missing)))
	}
	chunks, staged, trades, held := t.pending, t.pendingStaged, t.pendingTrades, t.pendingHeldTrades
	t.pending, t.pendingStaged, t.pendingTrades, t.pendingHeldTrades, t.pendingBytes = t.spareChunks, t.spareStaged, t.spareTrades, t.spareHeldTrades, 0
	t.spareChunks, t.spareStaged, t.spareTrades, t.spareHeldTrades = nil, nil, nil, nil
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan copied, 1)
	t.copying, t.cancel = done, cancel
	go func() {
		defer cancel()
		done <- copied{chunks: chunks, staged: staged, trades: trades, heldTrades: held,
			err: copyRows(ctx, t.tx, chunks, staged, trades, held)}
	}()
	return nil
}

// copyRows writes chunks, staged chunks (into import_staged), trades and
// held trades (into import_trades), a COPY each.
func copyRows(ctx context.Context, tx pgx.Tx, chunks, staged []freshChunk, trades, held []freshTrade) error {
	for i, cs := range [][]freshChunk{chunks, staged} {
		if len(cs) == 0 {
			continue
		}
		table := []string{"snapshot_chunks", "import_staged"}[i]
		_, err := tx.CopyFrom(ctx, pgx.Identifier{table},
			[]string{"market", "first_time", "last_time", "n", "head", "books"},
			pgx.CopyFromSlice(len(cs), func(i int) ([]any, error) {
				c := &cs[i]
				return []any{c.market, c.first, c.last, int32(c.n), c.head, c.books}, nil
			}))
		if err != nil {
			return err
		}
	}
	for i, ts := range [][]freshTrade{trades, held} {
		if len(ts) == 0 {
			continue
		}
		table := []string{"market_trades", "import_trades"}[i]
		_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(binaryTrades(ts)),
			"copy "+table+" (market, time, outcome, side, price, size, fee_rate_bps, tx_hash) from stdin binary")
		if err != nil {
			return err
		}
	}
	return nil
}

// binaryTrades is trades as COPY's binary format spells rows of
// market_trades, or of import_trades, alike (PostgreSQL's COPY, "Binary
// Format"; each value as the binary send function of its column's type
// writes it). Trades are many small rows: pgx's CopyFrom would take each
// of a trade's eight values as an interface, an allocation each, and look
// up its encoding, which was most of what a COPY of them cost an import;
// chunks, a few large rows, go through CopyFrom.
func binaryTrades(trades []freshTrade) []byte {
	const y2k = 946_684_800 * 1_000_000 // timestamptz counts µs from 2000-01-01 UTC
	b := make([]byte, 0, 19+len(trades)*tradeBytes+2)
	b = append(b, "PGCOPY\n\377\r\n\000"...)
	b = binary.BigEndian.AppendUint32(b, 0) // flags
	b = binary.BigEndian.AppendUint32(b, 0) // header extension
	int8 := func(v int64) {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	float8 := func(v float64) { int8(int64(math.Float64bits(v))) }
	text := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	for i := range trades {
		tr := &trades[i]
		b = binary.BigEndian.AppendUint16(b, 8) // columns
		int8(tr.market)
		int8(tr.Time.Unix()*1_000_000 + int64(tr.Time.Nanosecond())/1000 - y2k)
		text(tr.Outcome)
		text(tr.Side)
		float8(tr.Price)
		float8(tr.Size)
		float8(tr.FeeRateBps)
		text(tr.TxHash)
	}
	return binary.BigEndian.AppendUint16(b, 0xffff) // the trailer: -1
}

// settle waits for the COPY in flight, if any, and returns the first
// failure of one; a done ctx stops the wait, and the copy.
func (t *importTx) settle(ctx context.Context) error {
	if t.copying == nil {
		return t.err
	}
	var c copied
	select {
	case c = <-t.copying:
	case <-ctx.Done():
		t.cancel()
		c = <-t.copying
		if c.err == nil {
			c.err = ctx.Err()
		}
	}
	t.copying, t.cancel = nil, nil
	if c.err != nil {
		return t.fail(c.err)
	}
	// Their memory holds a batch after the next: the encoded bytes go
	// with the copy.
	clear(c.chunks)
	clear(c.staged)
	t.spareChunks, t.spareStaged, t.spareTrades, t.spareHeldTrades = c.chunks[:0], c.staged[:0], c.trades[:0], c.heldTrades[:0]
	return nil
}

// fail records the import's first failure: the transaction is of no more
// use.
func (t *importTx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	return t.err
}

// flushPending copies what is pending and waits for it.
func (t *importTx) flushPending(ctx context.Context) error {
	if err := t.copyPending(ctx); err != nil {
		return err
	}
	return t.settle(ctx)
}

// writeRewrites writes the rows of the created markets held for Commit.
func (t *importTx) writeRewrites(ctx context.Context) error {
	if err := t.settle(ctx); err != nil || len(t.rewriting) == 0 {
		return err
	}
	batch := &pgx.Batch{}
	t.queueRewrites(batch)
	return t.tx.SendBatch(ctx, batch).Close()
}

// queueRewrites queues the statements writing the rows of the created
// markets held for Commit.
func (t *importTx) queueRewrites(batch *pgx.Batch) {
	for _, rw := range t.rewriting {
		batch.Queue(upsertMarketSQL, upsertMarketArgs(rw.m, rw.stamped, rw.stamped, []string{rw.source})...)
	}
	clear(t.rewrites)
	t.rewriting = t.rewriting[:0]
}

// writeFresh copies what is pending and writes the series row of the
// slug's market, which is fresh no more.
func (t *importTx) writeFresh(ctx context.Context, slug string) error {
	if err := t.flushPending(ctx); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	t.queueFresh(batch, slug)
	if batch.Len() == 0 {
		return nil
	}
	return t.tx.SendBatch(ctx, batch).Close()
}

// queueFresh queues the insert of the fresh series rows: all of them (slug
// "") or the one of the slug.
func (t *importTx) queueFresh(batch *pgx.Batch, slug string) {
	var ids, ns []int64
	var firsts, lasts []time.Time
	for s, fs := range t.fresh {
		if slug != "" && s != slug {
			continue
		}
		delete(t.fresh, s)
		if fs.n == 0 {
			continue
		}
		ids, ns = append(ids, fs.market), append(ns, fs.n)
		firsts, lasts = append(firsts, fs.first), append(lasts, fs.last)
	}
	if len(ids) > 0 {
		batch.Queue(`insert into snapshot_series (market, n, first_time, last_time)
			select * from unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[])`, ids, ns, firsts, lasts)
	}
}

// queueFreshGaps queues the insert of the gaps of the markets the import
// created.
func (t *importTx) queueFreshGaps(batch *pgx.Batch) {
	var ids []int64
	var froms, tos []time.Time
	var kinds []string
	for id, gaps := range t.freshGaps {
		for _, g := range gaps {
			ids, froms, tos, kinds = append(ids, id), append(froms, g.From), append(tos, g.To), append(kinds, g.Kind.Name())
		}
	}
	clear(t.freshGaps)
	if len(ids) > 0 {
		batch.Queue(`insert into market_gaps (market, from_time, to_time, kind)
			select * from unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[], $4::text[])`, ids, froms, tos, kinds)
	}
}

// writeHeld writes what the import holds for the stored markets it
// changes (held): their rows are locked, in slug order as every writer
// of several markets locks them (UpsertMarkets), then written as the held
// AddMarket calls make them of what they are now, and their gaps as the
// held ReplaceGaps calls make them of those they have now, all in two
// round trips.
func (t *importTx) writeHeld(ctx context.Context) error {
	var ids []int64
	for _, h := range t.held {
		if len(h.adds) > 0 || len(h.gaps) > 0 {
			ids = append(ids, h.id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	// Byte order (collate "C") is Go's string order, UpsertMarkets'.
	var locked []store.Market
	batch.Queue(`select `+marketColumns+` from markets where id = any($1) order by slug collate "C" for no key update`, ids).
		Query(func(rows pgx.Rows) error {
			var err error
			locked, err = pgx.CollectRows(rows, scanMarket)
			return err
		})
	stored := map[int64][]store.Gap{}
	batch.Queue(`select market, from_time, to_time, kind from market_gaps where market = any($1)`, ids).
		Query(func(rows pgx.Rows) error {
			_, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
				var id int64
				var from, to time.Time
				var kind string
				if err := row.Scan(&id, &from, &to, &kind); err != nil {
					return struct{}{}, err
				}
				k, err := store.ParseGapKind(kind)
				stored[id] = append(stored[id], store.Gap{From: utc(from), To: utc(to), Kind: k})
				return struct{}{}, err
			})
			return err
		})
	if err := t.tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	if len(locked) != len(ids) {
		return fmt.Errorf("%d of the %d stored markets the import changes are gone", len(ids)-len(locked), len(ids))
	}
	batch = &pgx.Batch{}
	var gapIDs, rowIDs []int64 // the markets whose gaps are written, and each gap's
	var froms, tos []time.Time
	var kinds []string
	now := t.s.stamp()
	for _, m := range locked {
		h := t.held[m.Slug]
		if len(h.adds) > 0 {
			// Stamped now, later than any write before (an edit while the
			// import ran), as SwapMarket stamps: the import's change is the
			// latest, which caches and the next swap must see.
			stamp := maxTime(now, m.UpdatedAt.Add(time.Microsecond))
			m = applyAdds(m, h.adds)
			m.UpdatedAt = stamp
			batch.Queue(upsertMarketSQL, upsertMarketArgs(m, m.CreatedAt, m.UpdatedAt, m.DataSources)...)
		}
		if len(h.gaps) > 0 {
			gaps := stored[h.id]
			for _, r := range h.gaps {
				gaps = store.ReplaceGaps(gaps, r.from, r.to, r.gaps)
			}
			gapIDs = append(gapIDs, h.id)
			for _, g := range gaps {
				rowIDs, froms, tos, kinds = append(rowIDs, h.id), append(froms, g.From), append(tos, g.To), append(kinds, g.Kind.Name())
			}
		}
	}
	if len(gapIDs) > 0 {
		batch.Queue(`delete from market_gaps where market = any($1)`, gapIDs)
		batch.Queue(`insert into market_gaps (market, from_time, to_time, kind)
			select * from unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[], $4::text[])`, rowIDs, froms, tos, kinds)
	}
	if batch.Len() == 0 {
		return nil
	}
	return t.tx.SendBatch(ctx, batch).Close()
}

// writeHeldTrades inserts the stored markets' trades held in
// import_trades into market_trades, as the collector's appends insert
// theirs (a trade stored already is skipped by the key), in key order, as
// they take their keys (never in a cycle with one), and counts those
// inserted.
func (t *importTx) writeHeldTrades(ctx context.Context) error {
	if !t.tradeStaging {
		return nil
	}
	tag, err := t.tx.Exec(ctx, `
		insert into market_trades (market, `+marketTradeColumns+`)
		select market, `+marketTradeColumns+` from import_trades
		order by market, time, outcome, side, price, size, fee_rate_bps, tx_hash
		on conflict do nothing`)
	if err != nil {
		return err
	}
	t.trades += tag.RowsAffected()
	return nil
}

// overlappedSQL lists the stored chunks of a market ($1) that the span
// [$2, $3] overlaps, with their row versions, in time order; the series'
// first time bounds the partitions searched, as a listing's does.
const overlappedSQL = `
select first_time, last_time, xmin::text from snapshot_chunks
where market = $1 and first_time >= (select first_time from snapshot_series where market = $1)
	and first_time <= $3 and last_time >= $2
order by first_time`

// overlapped returns the versions of the stored chunks of the held
// market that its staged span overlaps, and the span they and it cover.
func (t *importTx) overlapped(ctx context.Context, h *heldMarket) ([]chunkVersion, time.Time, time.Time, error) {
	rows, _ := t.tx.Query(ctx, overlappedSQL, h.id, h.first, h.last)
	return scanOverlapped(rows, h)
}

// scanOverlapped reads the rows of overlappedSQL of the held market.
func scanOverlapped(rows pgx.Rows, h *heldMarket) ([]chunkVersion, time.Time, time.Time, error) {
	from, to := h.first, h.last
	var out []chunkVersion
	var first, last time.Time
	var xmin string
	_, err := pgx.ForEachRow(rows, []any{&first, &last, &xmin}, func() error {
		out = append(out, chunkVersion{first: first, xmin: xmin})
		from, to = minTime(from, first), maxTime(to, last)
		return nil
	})
	return out, from, to, err
}

// mergeChunks bounds how many chunks a merge decodes at a time, of the
// stored and of the staged each.
const mergeChunks = 16

// chunkCursor reads a market's chunks, given their first times in order,
// a few at a time, as one run of snapshots.
type chunkCursor struct {
	tx     pgx.Tx
	table  string
	market int64
	firsts []time.Time
	buf    []store.Snapshot
}

// peek returns the next snapshot, nil at the end.
func (c *chunkCursor) peek(ctx context.Context) (*store.Snapshot, error) {
	for len(c.buf) == 0 && len(c.firsts) > 0 {
		k := min(len(c.firsts), mergeChunks)
		var err error
		if c.buf, err = readChunksOf(ctx, c.tx, c.table, c.market, c.firsts[:k]); err != nil {
			return nil, err
		}
		c.firsts = c.firsts[k:]
	}
	if len(c.buf) == 0 {
		return nil, nil
	}
	return &c.buf[0], nil
}

func (c *chunkCursor) pop() { c.buf = c.buf[1:] }

// planSnapshots works out how the held market's staged snapshots join its
// stored ones (h.plan), reading what is stored as it is now: when no
// stored chunk overlaps their span, they go in as staged; else the
// overlapped chunks and the staged ones are merged, a few chunks at a time
// (the stored snapshot of a time wins), into import_merged.
func (t *importTx) planSnapshots(ctx context.Context, h *heldMarket) error {
	if _, err := t.tx.Exec(ctx, `delete from import_merged where market = $1`, h.id); err != nil {
		return err
	}
	overlapped, from, to, err := t.overlapped(ctx, h)
	if err != nil {
		return err
	}
	h.plan = snapshotPlan{ready: true, overlapped: overlapped, from: from, to: to}
	if len(overlapped) == 0 {
		h.plan.added = h.n
		return nil
	}
	firsts := make([]time.Time, len(overlapped))
	for i, c := range overlapped {
		firsts[i] = c.first
	}
	rows, _ := t.tx.Query(ctx, `select first_time from import_staged where market = $1 order by first_time`, h.id)
	stagedFirsts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return err
	}
	stored := &chunkCursor{tx: t.tx, table: "snapshot_chunks", market: h.id, firsts: firsts}
	staged := &chunkCursor{tx: t.tx, table: "import_staged", market: h.id, firsts: stagedFirsts}
	var out []store.Snapshot
	var pending []newChunk
	size := 0
	// flush closes the chunk in out when all, when it is full or when next
	// (if any) is of another month than the chunk (a chunk holds one
	// calendar month's snapshots, as a month's partition holds them), and
	// copies the closed chunks when all or when they are many.
	flush := func(all bool, next *store.Snapshot) error {
		if len(out) > 0 && (all || len(out) >= chunkSize || next != nil && monthOf(next.Time) != monthOf(out[0].Time)) {
			head, books := encodeChunk(out, t.s.writeVersion())
			pending = append(pending, newChunk{first: out[0].Time, last: out[len(out)-1].Time, n: len(out), head: head, books: books})
			size += len(head) + len(books)
			out = out[:0]
		}
		if len(pending) > 0 && (all || size >= copyPendingBytes) {
			if err := copyChunks(ctx, t.tx, "import_merged", h.id, pending); err != nil {
				return err
			}
			pending, size = pending[:0], 0
		}
		return nil
	}
	for {
		a, err := stored.peek(ctx)
		if err != nil {
			return err
		}
		b, err := staged.peek(ctx)
		if err != nil {
			return err
		}
		var next store.Snapshot
		switch {
		case a == nil && b == nil:
			return flush(true, nil)
		case b == nil || a != nil && a.Time.Before(b.Time):
			next = *a
			stored.pop()
		case a == nil || b.Time.Before(a.Time):
			next = *b
			staged.pop()
			h.plan.added++
		default: // the stored one stays
			next = *a
			stored.pop()
			staged.pop()
		}
		if err := flush(false, &next); err != nil {
			return err
		}
		out = append(out, next)
	}
}

// writeSnapshots locks the series rows of the held markets with staged
// snapshots the market lacks, in slug order, and carries out each one's
// plan if the stored chunks its staged span overlaps are still those it
// was made with (the collector appends what is newer meanwhile, which the
// span rarely reaches); else it makes the plan again, under the lock. The
// locks and the checks take one round trip, the writes another.
func (t *importTx) writeSnapshots(ctx context.Context, slugs []string) error {
	type locked struct {
		h   *heldMarket
		ser series
		now []chunkVersion
	}
	var todo []*locked
	batch := &pgx.Batch{}
	for _, slug := range slugs {
		h := t.held[slug]
		if h.n == 0 || !h.plan.ready || h.plan.added == 0 {
			continue // nothing the market lacks (planned when stored wins)
		}
		l := &locked{h: h}
		todo = append(todo, l)
		batch.Queue(`
			insert into snapshot_series as s (market) values ($1)
			on conflict (market) do update set n = s.n
			returning market, n, first_time, last_time`, h.id).QueryRow(func(row pgx.Row) error {
			return row.Scan(&l.ser.market, &l.ser.n, &l.ser.first, &l.ser.last)
		})
		batch.Queue(overlappedSQL, h.id, h.first, h.last).Query(func(rows pgx.Rows) error {
			var err error
			l.now, _, _, err = scanOverlapped(rows, h)
			return err
		})
	}
	if len(todo) == 0 {
		return nil
	}
	if err := t.tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	batch = &pgx.Batch{}
	for _, l := range todo {
		h := l.h
		if !slices.EqualFunc(l.now, h.plan.overlapped, func(a, b chunkVersion) bool { return a.first.Equal(b.first) && a.xmin == b.xmin }) {
			if err := t.planSnapshots(ctx, h); err != nil {
				return err
			}
			if h.plan.added == 0 {
				continue
			}
		}
		p := h.plan
		firsts := make([]time.Time, len(p.overlapped))
		for i, c := range p.overlapped {
			firsts[i] = c.first
		}
		from := "import_staged"
		if len(firsts) > 0 {
			from = "import_merged"
		}
		first, last := p.from, p.to
		if l.ser.n > 0 {
			first, last = minTime(first, *l.ser.first), maxTime(last, *l.ser.last)
		}
		batch.Queue(`delete from snapshot_chunks where market = $1 and first_time = any($2)`, h.id, firsts)
		batch.Queue(`insert into snapshot_chunks (market, first_time, last_time, n, head, books)
			select market, first_time, last_time, n, head, books from `+from+` where market = $1`, h.id)
		batch.Queue(`update snapshot_series set n = $2, first_time = $3, last_time = $4 where market = $1`,
			h.id, l.ser.n+p.added, first, last)
		t.snapshots += p.added
	}
	if batch.Len() == 0 {
		return nil
	}
	return t.tx.SendBatch(ctx, batch).Close()
}

// Commit records the import and commits, or, when an import with its key
// is stored, rolls back and returns that one. What was held for it (the
// last rows, the series, gaps and rows of the created markets, the
// import's row) is written in one round trip after the last COPY.
func (t *importTx) Commit(ctx context.Context, imp store.Import) (store.Import, bool, error) {
	const op = "import: commit"
	if err := t.flushPending(ctx); err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	var from, to *time.Time
	if !imp.From.IsZero() {
		f := micro(imp.From)
		from = &f
	}
	if !imp.To.IsZero() {
		x := micro(imp.To)
		to = &x
	}
	files := imp.Files
	if files == nil {
		files = []string{}
	}
	// The stored markets' snapshots are merged first, locking nothing;
	// then their trades are inserted, which locks those the import adds
	// (a collector's append of one waits for the commit); then their
	// series, rows and gaps are locked and written, briefly: the rows
	// last, which the collector's edits of markets wait for.
	slugs := slices.Sorted(maps.Keys(t.held))
	for _, slug := range slugs {
		if h := t.held[slug]; h.n > 0 {
			if err := t.planSnapshots(ctx, h); err != nil {
				_ = t.tx.Rollback(ctx)
				return store.Import{}, false, wrap(op, err)
			}
		}
	}
	if err := t.writeHeldTrades(ctx); err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	if t.s.beforeImportLocks != nil {
		t.s.beforeImportLocks()
	}
	if err := t.writeSnapshots(ctx, slugs); err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	if err := t.writeHeld(ctx); err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	batch := &pgx.Batch{}
	t.queueRewrites(batch)
	t.queueFresh(batch, "")
	t.queueFreshGaps(batch)
	var stored []store.Import
	batch.Queue(`
		insert into imports (key, source, files, from_time, to_time, markets, snapshots, trades, gaps, skipped, created_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		on conflict (key) do nothing
		returning `+importColumns,
		imp.Key, imp.Source, files, from, to, t.markets, t.snapshots, t.trades, t.gaps, imp.Skipped, t.s.stamp()).
		Query(func(rows pgx.Rows) error {
			var err error
			stored, err = pgx.CollectRows(rows, scanImport)
			return err
		})
	if err := t.tx.SendBatch(ctx, batch).Close(); err != nil {
		_ = t.tx.Rollback(ctx)
		return store.Import{}, false, wrap(op, err)
	}
	if len(stored) == 0 {
		rows, _ := t.tx.Query(ctx, `select `+importColumns+` from imports where key = $1`, imp.Key)
		old, err := pgx.CollectExactlyOneRow(rows, scanImport)
		_ = t.tx.Rollback(ctx)
		return old, false, wrap(op, err)
	}
	if err := t.tx.Commit(ctx); err != nil {
		return store.Import{}, false, wrap(op, err)
	}
	return stored[0], true, nil
}

// Rollback drops everything written, a COPY in flight first.
func (t *importTx) Rollback(ctx context.Context) error {
	if t.copying != nil {
		t.cancel()
		_ = t.settle(ctx)
	}
	err := t.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return wrap("import: rollback", err)
}
