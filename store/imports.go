package store

import (
	"context"
	"slices"
	"time"
)

// Data sources of a market (Market.DataSources): where its snapshots and
// trades came from.
const (
	// DataRecorder is the collector's own recording, the default of every
	// market not created by an archive import.
	DataRecorder = "recorder"
)

// Import is one archive import (DESIGN 9), as `updown import list` shows
// it. Counts are of the rows the import added: rows the store held already
// (recorded ones, or an earlier run's) are not counted.
type Import struct {
	ID int64
	// Key identifies the import's inputs (a digest of their contents and
	// options): an import whose key is stored already changes nothing.
	Key string
	// Source is the archive's format ("ws-jsonl", "pmxt-v2"), the name a
	// market's DataSources carries.
	Source string
	// Files are the inputs as named on the command line.
	Files []string
	// From and To are the time range of the events imported.
	From, To time.Time
	// Markets counts the markets created, Snapshots and Trades the rows
	// added, Gaps the gaps the import found in the time it covers, Skipped
	// the events of markets not imported.
	Markets, Snapshots, Trades, Gaps, Skipped int64
	CreatedAt                                 time.Time
}

// ImportStore keeps archive imports: everything one writes lands at once,
// or nothing does.
type ImportStore interface {
	// BeginImport starts an import. Nothing written through the ImportTx
	// is seen by others until Commit, and Rollback (or a failed Commit)
	// leaves the store as it was.
	BeginImport(ctx context.Context) (ImportTx, error)
	// ListImports returns the imports committed, oldest first.
	ListImports(ctx context.Context) ([]Import, error)
}

// ImportTx is an import under way. Its writes never overwrite stored rows:
// recorded rows win.
type ImportTx interface {
	// MarketsByCondition returns the stored markets (and those added by
	// this import) with the condition ids.
	MarketsByCondition(ctx context.Context, conditionIDs []string) ([]Market, error)
	// AddMarket stores m unless a market with its slug exists, and adds
	// source to the data sources of the market with that slug; a market
	// this import created is written again as m (what the import learnt
	// of it since, such as tick changes), and a stored market only imports
	// wrote (no DataRecorder among its sources) gains m's tick changes at
	// instants it has none of (MergeTickChanges; its tick size becomes the
	// latest), so that imports of a long market's hours one at a time keep
	// them all, and, while it is unresolved, m's settlement when m has
	// one (SettleFrom's fields: a markets file fetched again once the
	// market settled). created reports whether m was stored as a new
	// market.
	AddMarket(ctx context.Context, m Market, source string) (created bool, err error)
	// AppendSnapshots stores the snapshots the market does not have (as
	// SnapshotStore.AppendSnapshots) and returns how many it stored; of a
	// market stored before the import, which a store may merge its
	// snapshots into at Commit only, how many were new to those the
	// import gave it (Import.Snapshots counts what the markets gained).
	AppendSnapshots(ctx context.Context, slug string, snaps []Snapshot) (int, error)
	// AppendMarketTrades stores the trades the market does not have (as
	// MarketActivityStore.AppendMarketTrades) and returns how many; of a
	// market stored before the import, which a store may insert its
	// trades into at Commit only, how many were new to those the import
	// gave it (Import.Trades counts what the markets gained).
	AppendMarketTrades(ctx context.Context, slug string, trades []MarketTrade) (int, error)
	// ReplaceGaps makes gaps the market's gaps within [from, to]: stored
	// gaps are cut at from and to, their parts inside dropped, and gaps
	// (of either kind) merged in (see ReplaceGaps). A stored gap's parts
	// outside keep its kind.
	ReplaceGaps(ctx context.Context, slug string, from, to time.Time, gaps []Gap) error
	// Commit records imp and makes the import's writes visible. When an
	// import with imp.Key is stored already, it is returned with fresh
	// false and imp is not recorded again.
	Commit(ctx context.Context, imp Import) (stored Import, fresh bool, err error)
	// Rollback drops everything written; after Commit it does nothing.
	Rollback(ctx context.Context) error
}

// ReplaceGaps returns stored with every part inside [from, to] cut away
// and gaps merged in (MergeGaps).
func ReplaceGaps(stored []Gap, from, to time.Time, gaps []Gap) []Gap {
	out := make([]Gap, 0, len(stored)+len(gaps))
	for _, g := range stored {
		if g.From.Before(from) {
			out = append(out, Gap{From: g.From, To: minT(g.To, from), Kind: g.Kind})
		}
		if g.To.After(to) {
			out = append(out, Gap{From: maxT(g.From, to), To: g.To, Kind: g.Kind})
		}
	}
	out = slices.DeleteFunc(append(out, gaps...), func(g Gap) bool { return !g.To.After(g.From) })
	return MergeGaps(out)
}

// FoundGaps counts the gaps of snapshots among gaps: what an import
// counts as the gaps it found (Import.Gaps); the recorder's trades gaps
// it keeps are not its own.
func FoundGaps(gaps []Gap) int64 {
	n := int64(0)
	for _, g := range gaps {
		if g.Kind == GapSnapshots {
			n++
		}
	}
	return n
}

func minT(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// AddDataSource returns sources with source added (once), recorder first
// then in the order added.
func AddDataSource(sources []string, source string) []string {
	if slices.Contains(sources, source) {
		return sources
	}
	return append(slices.Clone(sources), source)
}

// MergeTickChanges adds to old the changes of add at instants it has none of
// (the first of add's at each), in time order, less those to the tick in
// force before them (the change before): no change, such as a capture's
// book taken for one (a capture begun after the tick changed) once an
// earlier capture brought the change itself. The instants met are kept
// in a set: a market's changes are thousands in a long import, and
// looking each up among those before was most of the writer's time.
func MergeTickChanges(old, add []TickSizeChange) []TickSizeChange {
	out := slices.Clone(old)
	// An instant as seconds and nanoseconds: exact for every time, where
	// UnixNano is not outside 1678-2262.
	type instant struct {
		s  int64
		ns int
	}
	at := func(t time.Time) instant { return instant{t.Unix(), t.Nanosecond()} }
	seen := make(map[instant]bool, len(old)+len(add))
	for _, o := range old {
		seen[at(o.Time)] = true
	}
	for _, c := range add {
		if k := at(c.Time); !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, tickChangeTime)
	return slices.CompactFunc(out, func(a, b TickSizeChange) bool { return a.TickSize == b.TickSize })
}
