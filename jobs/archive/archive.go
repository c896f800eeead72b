// Package archive imports archived market-channel events into the store
// (DESIGN 9, `updown import events`): raw websocket dumps (ws-jsonl) and
// the PMXT archive's hourly Parquet (pmxt-v2) become one event stream,
// whose books are rebuilt and sampled by the collector's own rules
// (package book), so that an imported market equals a recorded one.
//
// Markets are found by condition id among the stored markets and those of
// a markets file; the events of any other market are skipped and counted.
// Each market's events, in time order, rebuild its two books; a snapshot
// is taken at every instant of the 300 ms grid inside the market's window
// at which both books are known and the coin price is (Binance klines, or
// the stream's Chainlink frames). A stretch of over 3 s without an event
// of a market (a quiet feed, a missing hour file) is a gap: its books are
// forgotten, and no snapshot is taken again until a `book` event brings
// each back. Gaps are the stretches of the window the import covers with
// no snapshot for over 3 s, stored or imported. No snapshot is taken past
// the end of what the input covers. A market_resolved frame settles an
// unresolved market the import writes, or one only imports stored.
//
// Everything goes through one store.ImportTx: a failed import leaves the
// store as it was; stored rows win over imported ones; an import of the
// same inputs again changes nothing. Memory stays bounded: ws-jsonl is
// read a line at a time, pmxt-v2 a row group at a time and held a market
// at a time (the archive sorts by market; the reader is one market ahead
// of the folding), snapshots are written in batches.
package archive

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// Store is what an import needs of a store.
type Store interface {
	store.ImportStore
	// ListSnapshots reads the snapshots stored before the import, whose
	// instants count when gaps are found.
	ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error)
	// ListGaps reads the gaps stored before the import: a trades gap the
	// recorder left is kept where the import brings no trades.
	ListGaps(ctx context.Context, slug string) ([]store.Gap, error)
	// ListMarketTrades reads the trades stored before the import: one the
	// collector backfilled from the Data API (timed to the second) is the
	// same fill as the import's (timed to the millisecond).
	ListMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) ([]store.MarketTrade, int, error)
}

// Options configure an import.
type Options struct {
	Format Format
	// Files are the event files; pmxt-v2 files are read in the order of
	// the hours they hold.
	Files []string
	// Markets are the markets of a markets file (--markets): events of
	// markets neither stored nor here are skipped and counted. Without a
	// markets file (nil) an event of a market not stored is an error,
	// unless SkipUnknown.
	Markets     []store.Market
	SkipUnknown bool
	// Prices are the coin prices; nil is none but the stream's Chainlink
	// frames.
	Prices *CoinPrices
	// KeyExtra is folded into the import's key: the digests of the
	// markets and klines files.
	KeyExtra []string
	// BookLevels is how many levels of each side a snapshot keeps (the
	// collector's 10 when 0).
	BookLevels int
	// Interval is the snapshot grid (300 ms) and GapAfter the silence that
	// is a gap (3 s), when 0.
	Interval, GapAfter time.Duration
	// Progress, when set, is called about every ProgressEvery (1 s) and
	// once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	Logger        *slog.Logger
}

// Progress is how far an import has come.
type Progress struct {
	Events  int64 // events (frames' events or rows) read
	Markets int   // markets imported so far
	// Done and Total measure the input: bytes for ws-jsonl, rows for
	// pmxt-v2 (Total 0 when unknown).
	Done, Total int64
	// Elapsed is the time since this reading of the input began: an
	// import begun again (a file out of time order) counts from then, as
	// Done and Events do, so that a rate or a time left worked out from
	// them is the reading's.
	Elapsed time.Duration
	Final   bool
}

// Summary is what an import did.
type Summary struct {
	Import store.Import
	// Fresh is false when these inputs were imported before: nothing
	// was written.
	Fresh bool
	// Events were read; Skipped belonged to markets not imported, of
	// SkippedMarkets condition ids.
	Events, Skipped int64
	SkippedMarkets  int
	// NoPrice counts grid instants inside a market's window with both
	// books but no coin price (klines not covering them): gaps.
	NoPrice int64
	// MissingHours are the hours between pmxt-v2 files with no file.
	MissingHours []time.Time
	Elapsed      time.Duration
}

// Source of a market created or extended by an import of the format.
func (f Format) Source() string { return string(f) }

// Import reads the files and writes what they hold through one import
// transaction of st.
//
// A ws-jsonl file whose events go back in time (a price_change or
// tick_size_change over GapAfter behind the latest of its token before it
// in the file) is out of order: shuffled lines, or captures concatenated
// in the wrong order. Its events, folded as they come, would be taken as
// a clock going back and hardly a snapshot written; the import is begun
// again with the file read in the order of its events' times
// (readWSJSONLSorted).
func Import(ctx context.Context, st Store, opt Options) (Summary, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	sorted := map[string]bool{}
	var check []string
	began := time.Now()
	for {
		sum, err := importOnce(ctx, st, opt, sorted, check, began)
		if ooo, ok := errors.AsType[*outOfOrder](err); ok && !sorted[ooo.pos.File] {
			opt.Logger.Info("a file's events are out of time order: it is read again in the order of their times",
				"file", ooo.pos.File, "line", ooo.pos.Line, "time", ooo.at, "after", ooo.clock)
			sorted[ooo.pos.File] = true
			// Begun again at each file out of order, an import read and
			// folded every file before it again each time: an archive of
			// n such files cost some n²/2 files' imports. Before it begins
			// again, the order of as many of the files after this one as
			// it read before it (one at least) is checked, a reading
			// that decodes them without folding: at most half the cost of
			// the files read again, and an archive of files all out of
			// order begins again some log₂ n times, while one with a file
			// out of order among many in order does not check them all.
			check = ooo.unread[:min(len(ooo.unread), ooo.read+1)]
			continue
		}
		return sum, err
	}
}

// outOfOrder ends an import at an event of a ws-jsonl file that goes back
// in time; Import reads the file again sorted, and checks the order of
// some of the files after it (unread) before it begins again. read is how
// many files it read through before it.
type outOfOrder struct {
	pos       Pos
	at, clock time.Time
	unread    []string
	read      int
}

func (e *outOfOrder) Error() string {
	return fmt.Sprintf("%s: an event at %s, %s before one earlier in the file: the file is out of time order",
		e.pos, e.at.UTC().Format(time.RFC3339Nano), e.clock.Sub(e.at))
}

// importOnce is Import begun at began (an import begun again counts its
// time from the first start), the files of sorted read in time order, and
// those of check, before any is read, checked for events out of time
// order (and added to sorted when they are).
func importOnce(ctx context.Context, st Store, opt Options, sorted map[string]bool, check []string, began time.Time) (Summary, error) {
	reading := time.Now() // this attempt's, for its progress
	if opt.Format != WSJSONL && opt.Format != PMXTv2 {
		return Summary{}, fmt.Errorf("archive: format %q: want ws-jsonl or pmxt-v2", opt.Format)
	}
	if len(opt.Files) == 0 {
		return Summary{}, errors.New("archive: no event files to import")
	}
	opt.BookLevels = cmp.Or(opt.BookLevels, 10)
	opt.Interval = cmp.Or(opt.Interval, book.Interval)
	opt.GapAfter = cmp.Or(opt.GapAfter, 3*time.Second)
	opt.ProgressEvery = cmp.Or(opt.ProgressEvery, time.Second)
	if opt.Prices == nil {
		opt.Prices = NewCoinPrices()
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	for _, name := range opt.Files {
		if _, err := os.Stat(name); err != nil {
			return Summary{}, fmt.Errorf("archive: %w", err)
		}
	}
	if opt.Format == WSJSONL {
		// ws-jsonl files are read in the order of the times they begin
		// with, as pmxt-v2's in the order of their hours: files named out
		// of order (dump-10 listed before dump-9) would otherwise take the
		// later events first and fold the earlier ones in as a clock going
		// back, writing none of their snapshots. The key then does not
		// depend on the order the files were named in.
		opt.Files = byFirstEvent(ctx, opt.Files)
	}
	// The inputs are digested for the import's key while they are read
	// and written: when the key is among the imports stored, the import is
	// ended at once (its context cancelled, importedBefore the cause) and
	// nothing it wrote is kept, so that nothing is written twice. Writes
	// do not wait for the key: a fresh import, the common case, neither
	// reads everything twice over first nor holds its writes back while
	// the inputs are digested. (One stored meanwhile is found by Commit.)
	before, err := st.ListImports(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("archive: list imports: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keyc := make(chan keyResult, 1)
	go func() {
		res := keyResult{}
		res.key, res.err = importKey(ctx, opt)
		if i := slices.IndexFunc(before, func(imp store.Import) bool { return res.err == nil && imp.Key == res.key }); i >= 0 {
			res.before = &importedBefore{imp: before[i]}
			cancel(res.before)
		}
		keyc <- res
	}()
	tx, err := st.BeginImport(ctx)
	if err != nil {
		cancel(err)
		if key := <-keyc; key.before != nil {
			return Summary{Import: key.before.imp, Fresh: false, Elapsed: time.Since(began)}, nil
		}
		return Summary{}, fmt.Errorf("archive: %w", err)
	}
	im := &importer{ctx: ctx, st: st, tx: tx, opt: opt, source: opt.Format.Source(), began: began, sorted: sorted, check: check,
		byCond: map[string]*run{}, byToken: map[string]*run{}, unknown: map[string]bool{}, resolved: map[string]store.Market{},
		fileMarkets: map[string]store.Market{}, fileTokens: map[string]store.Market{}}
	for _, m := range opt.Markets {
		im.fileMarkets[m.ConditionID] = m
		im.fileTokens[m.ClobTokenUp], im.fileTokens[m.ClobTokenDown] = m, m
	}
	sum, err := im.run(reading)
	if err != nil {
		cancel(err) // the digest is not needed, unless it is made already
	}
	key := <-keyc
	switch {
	case key.before != nil: // whatever else ended the import
		err = key.before
	case err == nil && key.err != nil:
		err = key.err
	}
	if err == nil && sum.Events == 0 {
		// An empty file (a download cut short, the wrong hour) imports
		// nothing, and is not recorded as an import that did.
		err = fmt.Errorf("archive: no events in %s: nothing imported", strings.Join(opt.Files, ", "))
	}
	switch {
	case err != nil || im.importedAny():
	case sum.Skipped > 0:
		// Nor is one whose every event was skipped (the wrong markets
		// file, the wrong hour): recorded, it would answer "already
		// imported" to the same files once their markets are known.
		err = fmt.Errorf("archive: nothing imported: the %d events of %s are of %d markets neither stored nor in the markets file, all skipped",
			sum.Skipped, strings.Join(opt.Files, ", "), sum.SkippedMarkets)
	default:
		// Nor one of lines that are no market's events (another file, an
		// updown export): recorded, it would answer "already imported".
		err = fmt.Errorf("archive: nothing imported: the %d lines of %s hold no market channel's events (book, price_change, last_trade_price, ...); is it a %s archive?",
			sum.Events, strings.Join(opt.Files, ", "), opt.Format)
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if old, ok := errors.AsType[*importedBefore](err); ok {
			return Summary{Import: old.imp, Fresh: false, Elapsed: time.Since(began)}, nil
		}
		return sum, err
	}
	if sum.Skipped > 0 {
		// What an import that skipped markets wrote depends on the markets
		// it knew: its key names the ones it skipped, so that the same
		// files imported again once they are known (a fuller markets
		// file, markets stored since) are imported, not answered "already
		// imported", while an import that would skip the same ones is.
		key.key += ":skipped:" + im.unknownDigest()
	}
	imp := store.Import{Key: key.key, Source: im.source, Files: opt.Files, From: im.covFrom, To: im.covTo, Skipped: sum.Skipped}
	stored, fresh, err := tx.Commit(ctx, imp)
	if err != nil {
		return sum, fmt.Errorf("archive: %w", err)
	}
	sum.Import, sum.Fresh = stored, fresh
	sum.Elapsed = time.Since(began)
	return sum, nil
}

// importedAny reports whether the import held events of a market it
// imports, or settled a stored market by a verdict alone (writeVerdict):
// one that held nothing else, recorded, would answer "already imported"
// to the same files once their markets are stored.
func (im *importer) importedAny() bool {
	return im.settled.Load() > 0 || slices.ContainsFunc(im.runs, func(r *run) bool { return r.folded })
}

// unknownDigest digests the markets the import skipped.
func (im *importer) unknownDigest() string {
	im.resolveMu.Lock()
	keys := slices.Sorted(maps.Keys(im.unknown))
	im.resolveMu.Unlock()
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\n", k)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// importKey digests the inputs' contents and the options that shape what
// is written.
func importKey(ctx context.Context, opt Options) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%v|%v|", opt.Format, opt.BookLevels, opt.Interval, opt.GapAfter)
	for _, name := range opt.Files {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("archive: %w", err)
		}
		fh := sha256.New()
		_, err = io.Copy(fh, ctxReader{ctx, f})
		f.Close()
		if err != nil {
			return "", fmt.Errorf("archive: read %s: %w", name, err)
		}
		h.Write(fh.Sum(nil))
	}
	for _, x := range opt.KeyExtra {
		fmt.Fprintf(h, "|%s", x)
	}
	return opt.Format.Source() + ":" + hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// keyResult is the import's key, or why it could not be made, and the
// stored import with the key.
type keyResult struct {
	key    string
	err    error
	before *importedBefore
}

// importedBefore ends an import whose key is stored: it changes nothing.
type importedBefore struct{ imp store.Import }

func (e *importedBefore) Error() string {
	return fmt.Sprintf("archive: imported before as import %d", e.imp.ID)
}

type importer struct {
	ctx    context.Context
	st     Store
	tx     store.ImportTx
	opt    Options
	source string
	// began is when the import started: a market whose window ended
	// before it is no longer recorded by anyone.
	began time.Time

	byCond      map[string]*run
	byToken     map[string]*run
	runs        []*run // in the order met
	unknown     map[string]bool
	fileMarkets map[string]store.Market // by condition id
	fileTokens  map[string]store.Market // by token
	// resolveMu guards what is learnt of markets (resolve): resolved and
	// unknown markets by condition id (or "token:" and a token), and the
	// stored markets of the markets file's condition ids, asked for at
	// once on the first lookup (fileAsked).
	resolveMu  sync.Mutex
	resolved   map[string]store.Market
	storedFile map[string]store.Market
	fileAsked  bool

	// w writes through tx off the reading goroutine, in order (see
	// writer); every use of tx goes through it.
	w *writer

	// fileTo is the latest event time of the ws-jsonl file being read:
	// the clock that says which markets ended (finishEnded). Files may
	// cover the same hours (a dump a market or a coin): the clock of the
	// files read before is not this file's.
	fileTo time.Time
	// sorted are the ws-jsonl files read in time order; order, when the
	// file being read is not, checks that its events are in time order
	// (outOfOrder). check are files whose order is checked before any
	// file is read (an import begun again).
	sorted map[string]bool
	check  []string
	order  *orderCheck

	covFrom, covTo time.Time
	// streamTo is the latest time of a ws-jsonl event read, of any market
	// (skipped ones too): where the input, and what it can tell of any
	// market's books, ends.
	streamTo    time.Time
	events      int64
	skipped     int64
	noPrice     int64
	badTrades   int64 // trades left out: the store cannot keep them
	done, total atomic.Int64
	imported    atomic.Int64
	settled     atomic.Int64 // stored markets settled by a verdict alone
}

// run reads the input and writes what it holds, its progress measured
// from reading (this attempt's start).
func (im *importer) run(reading time.Time) (Summary, error) {
	stop := make(chan struct{})
	progressDone := make(chan struct{})
	report := func(final bool) {
		if im.opt.Progress != nil {
			im.opt.Progress(Progress{Events: atomic.LoadInt64(&im.events), Markets: int(im.imported.Load()), Done: im.done.Load(),
				Total: im.total.Load(), Elapsed: time.Since(reading), Final: final})
		}
	}
	go func() {
		defer close(progressDone)
		t := time.NewTicker(im.opt.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				report(false)
			}
		}
	}()
	im.w = newWriter()
	sum, err := im.read()
	close(stop)
	<-progressDone
	if err == nil {
		for _, r := range im.runs {
			if r.finished {
				err = r.flush()
			} else {
				err = r.finish()
			}
			if err == nil && r.verdict {
				err = r.writeVerdict()
			}
			if err != nil {
				break
			}
		}
	}
	if werr := im.w.close(); err == nil {
		err = werr
	}
	if _, ooo := errors.AsType[*outOfOrder](err); !ooo {
		report(true) // an import that begins again ends once, then
	}
	if im.badTrades > 0 {
		im.opt.Logger.Warn("trades the store cannot keep were left out", "trades", im.badTrades)
	}
	sum.Events, sum.Skipped, sum.SkippedMarkets, sum.NoPrice = atomic.LoadInt64(&im.events), im.skipped, len(im.unknown), im.noPrice
	return sum, err
}

func (im *importer) read() (Summary, error) {
	var sum Summary
	switch im.opt.Format {
	case WSJSONL:
		for _, name := range slices.Concat(im.opt.Files, im.check) {
			if st, err := os.Stat(name); err == nil {
				im.total.Add(st.Size())
			}
		}
		if err := im.checkFiles(); err != nil {
			return sum, err
		}
		for _, name := range im.opt.Files {
			if st, err := os.Stat(name); err == nil && im.sorted[name] {
				im.total.Add(st.Size()) // read twice (readWSJSONLSorted)
			}
		}
		for i, name := range im.opt.Files {
			im.fileTo, im.order = time.Time{}, nil
			if !im.sorted[name] {
				im.order = newOrderCheck(im.opt.GapAfter)
			}
			if err := im.readPipelined(name); err != nil {
				if ooo, ok := errors.AsType[*outOfOrder](err); ok {
					ooo.unread, ooo.read = slices.Clone(im.opt.Files[i+1:]), i
				}
				return sum, err
			}
		}
	case PMXTv2:
		files := make([]*pmxtFile, 0, len(im.opt.Files))
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		for _, name := range im.opt.Files {
			f, err := openPMXT(name)
			if err != nil {
				return sum, err
			}
			files = append(files, f)
			if f.hour, err = f.firstHour(); err != nil {
				return sum, err
			}
			im.total.Add(f.pf.NumRows())
		}
		slices.SortStableFunc(files, func(a, b *pmxtFile) int { return a.hour.Compare(b.hour) })
		var prev time.Time // the hour of the last file that has one
		for _, f := range files {
			if f.hour.IsZero() {
				// No rows: no hour, no events. (Taken as the hour of year
				// one, every hour since was missing.)
				continue
			}
			if !prev.IsZero() {
				for h := prev.Add(time.Hour); h.Before(f.hour); h = h.Add(time.Hour) {
					sum.MissingHours = append(sum.MissingHours, h)
				}
			}
			prev = f.hour
			if im.covFrom.IsZero() {
				im.covFrom = f.hour
			}
			im.covTo = f.hour.Add(time.Hour)
			if err := im.readPMXT(f); err != nil {
				return sum, err
			}
			if err := im.finishEnded(im.covTo); err != nil {
				return sum, err
			}
		}
		if len(sum.MissingHours) > 0 {
			im.opt.Logger.Warn("hours missing between the files: their stretches are gaps", "hours", len(sum.MissingHours))
		}
	}
	return sum, nil
}

// batchItems is how many items a batch of decoded events holds.
const batchItems = 1024

// itemBatch is a run of decoded items handed from the decoding goroutine
// to the folding one; err, on the last, is how reading ended.
type itemBatch struct {
	items []item
	err   error
}

// readPipelined reads a ws-jsonl file on a goroutine of its own, which
// decodes frames into batches of items (half an import's work), while this
// one folds them into the markets' books and snapshots, in order; the coin
// prices the stream carries travel in the same batches, in their place.
// The first error in stream order ends the import: one the folding finds
// before the place a reading error was found wins, as it would have
// read alone.
func (im *importer) readPipelined(name string) error {
	ctx, cancel := context.WithCancel(im.ctx)
	batches := make(chan *itemBatch, 4)
	free := make(chan *itemBatch, 6)
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		for range batches { // let the reader end, and wait for it
		}
		<-readerDone
	}()
	go func() {
		defer close(readerDone)
		defer close(batches)
		b := &itemBatch{}
		send := func() error {
			select {
			case batches <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case b = <-free:
			default:
				b = &itemBatch{items: make([]item, 0, batchItems)}
			}
			return nil
		}
		read := readWSJSONL
		if im.sorted[name] {
			read = readWSJSONLSorted
		}
		err := read(ctx, name, &im.done, func(evs []book.Event, pos Pos) error {
			for i := range evs {
				b.items = append(b.items, item{ev: evs[i], pos: pos})
			}
			if len(b.items) >= batchItems {
				return send()
			}
			return nil
		}, func(p coinPoint) {
			b.items = append(b.items, item{point: &p})
		})
		b.err = err
		select {
		case batches <- b:
		case <-ctx.Done():
		}
	}()
	for b := range batches {
		if err := im.items(b.items); err != nil {
			return err
		}
		if b.err != nil {
			return b.err
		}
		clear(b.items) // the events' books and changes are folded in
		b.items = b.items[:0]
		select {
		case free <- b:
		default:
		}
	}
	// The import was ended while the file was read: the reader's last
	// batch, with the error, may have been given up for the context's
	// end, and what was folded is not the file.
	return ctx.Err()
}

// readPMXT reads a pmxt-v2 file on a goroutine of its own, which decodes
// its rows (skipping the markets not imported) and hands over each
// market's events in time order, while this one folds them into the
// markets' books and snapshots, in order: the reader is a market ahead at
// most. The first error in stream order ends the import: one the folding
// finds comes from a market before the one the reader stopped at.
func (im *importer) readPMXT(f *pmxtFile) error {
	ctx, cancel := context.WithCancel(im.ctx)
	defer cancel()
	markets := make(chan []item)
	var skipped int64
	var rerr error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(markets)
		rerr = f.read(ctx, &im.done, im.want, func(its []item) error {
			select {
			case markets <- its:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, &skipped, im.opt.GapAfter)
	}()
	var err error
	for its := range markets {
		if err == nil {
			if err = im.items(its); err != nil {
				cancel() // the reader stops, and is waited for
			}
		}
	}
	<-readerDone
	im.skipped += skipped
	if err != nil {
		return err
	}
	return rerr
}

// want reports whether the market's events are imported; a market not
// stored and not in the markets file is an error without one.
func (im *importer) want(cond string, pos Pos) (bool, error) {
	_, ok, err := im.resolve(cond, "", pos, false)
	return ok, err
}

// lookup finds the run of the market of the condition id (or, for an
// event without one, the token); quiet as resolve's.
func (im *importer) lookup(cond, token string, pos Pos, quiet bool) (*run, error) {
	if cond != "" {
		if r, ok := im.byCond[cond]; ok {
			return r, nil
		}
	} else if r, ok := im.byToken[token]; ok {
		return r, nil
	}
	m, ok, err := im.resolve(cond, token, pos, quiet)
	if !ok || err != nil {
		return nil, err
	}
	// In time order, as tickAt reads them (a markets file's may not be).
	m.TickSizeChanges = store.SortTickChanges(m.TickSizeChanges)
	r := &run{im: im, m: m, books: book.NewBooks()}
	im.byCond[m.ConditionID] = r
	im.byToken[m.ClobTokenUp], im.byToken[m.ClobTokenDown] = r, r
	im.runs = append(im.runs, r)
	return r, nil
}

// resolve finds the market of the condition id (or, for an event without
// one, the token): stored, or in the markets file; ok is false for one
// skipped. quiet finds a market only: one not found is neither an error
// nor skipped (counted), as for an event that only settles a market
// (market_resolved), which a capture has of every market it heard. It is
// safe to call from the goroutine that reads pmxt-v2 (want) while the one
// that folds events looks markets up.
func (im *importer) resolve(cond, token string, pos Pos, quiet bool) (m store.Market, ok bool, err error) {
	im.resolveMu.Lock()
	defer im.resolveMu.Unlock()
	key := cmp.Or(cond, "token:"+token)
	if m, ok := im.resolved[key]; ok {
		return m, true, nil
	}
	if im.unknown[key] {
		return store.Market{}, false, nil
	}
	found := false
	if _, inFile := im.fileMarkets[cond]; inFile && cond != "" {
		if err := im.askFileMarkets(); err != nil {
			return store.Market{}, false, err
		}
		m, found = im.storedFile[cond]
	} else if cond != "" {
		var ms []store.Market
		err := im.w.do(func() error {
			var err error
			ms, err = im.tx.MarketsByCondition(im.ctx, []string{cond})
			return err
		})
		if err != nil {
			return store.Market{}, false, fmt.Errorf("archive: %w", err)
		}
		if len(ms) > 0 {
			m, found = ms[0], true
		}
	}
	if fm, ok := im.fileMarkets[cond]; found && ok && cond != "" && !slices.Contains(m.DataSources, store.DataRecorder) {
		// A market only imports wrote, unresolved when they did, settles
		// as the markets file says once it says so (fetched again).
		m = m.SettleFrom(fm)
	}
	if !found {
		if fm, ok := im.fileMarkets[cond]; ok && cond != "" {
			m, found = fm, true
		} else if fm, ok := im.fileTokens[token]; ok && token != "" {
			m, found = fm, true
		}
	}
	if !found && quiet {
		return store.Market{}, false, nil
	}
	if !found {
		if im.opt.Markets == nil && !im.opt.SkipUnknown {
			field, what := "market", "condition id "+cond
			if cond == "" {
				field, what = "asset_id", "token "+token
			}
			return store.Market{}, false, &InputError{Pos: pos, Field: field, Err: fmt.Errorf("%s is not a stored market: give the markets with --markets FILE (`updown markets fetch` writes one), or --skip-unknown to skip markets not stored", what)}
		}
		im.unknown[key] = true
		return store.Market{}, false, nil
	}
	im.resolved[key] = m
	return m, true, nil
}

// lookupBatch is how many condition ids one question to the store names.
const lookupBatch = 1000

// askFileMarkets asks the store, once, which of the markets file's
// condition ids it holds, a batch at a time, rather than one question a
// market (each of which waits for the writes queued before it).
func (im *importer) askFileMarkets() error {
	if im.fileAsked {
		return nil
	}
	im.fileAsked = true
	im.storedFile = map[string]store.Market{}
	conds := make([]string, 0, len(im.fileMarkets))
	for c := range im.fileMarkets {
		conds = append(conds, c)
	}
	slices.Sort(conds)
	for batch := range slices.Chunk(conds, lookupBatch) {
		var ms []store.Market
		err := im.w.do(func() error {
			var err error
			ms, err = im.tx.MarketsByCondition(im.ctx, batch)
			return err
		})
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		for _, m := range ms {
			if _, ok := im.storedFile[m.ConditionID]; !ok { // the first, as one market's lookup takes
				im.storedFile[m.ConditionID] = m
			}
		}
	}
	return nil
}

// finishEnded finishes the markets whose window (and the silence after
// their last event that still counts) the input has passed by now: their
// snapshots and gaps are final, and their memory is released, so that
// memory holds the live markets only, however long the stream.
func (im *importer) finishEnded(now time.Time) error {
	for _, r := range im.runs {
		if r.finished || r.last.IsZero() || !r.m.EndTime.Add(im.opt.GapAfter).Before(now) {
			continue
		}
		if err := r.finish(); err != nil {
			return err
		}
		r.finished = true
		// What a later pass needs of this one (see reopen): the stretches
		// its snapshots cover, not the instants.
		r.covered = coverOf(r.covered, r.times, r.im.opt.GapAfter)
		r.snaps, r.times, r.books = nil, nil, book.NewBooks()
	}
	return nil
}

// orderCheck finds an event of a ws-jsonl file out of time order: a
// price_change or tick_size_change over after behind the latest change of
// its market before it in the file.
type orderCheck struct {
	after time.Duration
	clock map[string]time.Time // by market (condition id, else token)
}

func newOrderCheck(after time.Duration) *orderCheck {
	return &orderCheck{after: after, clock: map[string]time.Time{}}
}

// check is an *outOfOrder when the event of the token, read at pos, goes
// back in time.
func (c *orderCheck) check(e *book.Event, token string, pos Pos) error {
	if e.Time.IsZero() || (e.EventType != "price_change" && e.EventType != "tick_size_change") {
		// A book's time is its last change, older than the frames before
		// it in an initial dump; a trade's is its match.
		return nil
	}
	// The clock is the market's, as a market's events fold into its
	// books on one clock (its run's): a capture of two connections, one
	// seconds behind the other, is in order market by market, but one
	// of a token each, concatenated (every Up frame, then every Down
	// frame), is not, though each token's frames are in order.
	key := cmp.Or(e.Market, token)
	clock := c.clock[key]
	if clock.Sub(e.Time) > c.after {
		return &outOfOrder{pos: pos, at: e.Time, clock: clock}
	}
	if e.Time.After(clock) {
		c.clock[key] = e.Time
	}
	return nil
}

// eventToken is the token an event is of: its asset id, or its first
// change's.
func eventToken(e *book.Event) string {
	if e.AssetID == "" && len(e.Changes) > 0 {
		return e.Changes[0].AssetID
	}
	return e.AssetID
}

// checkFiles reads the files of im.check, not yet known to be out of
// order, for events out of time order, as the folding checks them, and
// adds those that have one to im.sorted, so that the import, begun again,
// reads them in time order at once. A file is read up to its first event
// out of order; its bytes all count for the progress.
func (im *importer) checkFiles() error {
	for _, name := range im.check {
		if im.sorted[name] {
			continue
		}
		var size int64
		if st, err := os.Stat(name); err == nil {
			size = st.Size()
		}
		var read atomic.Int64
		order := newOrderCheck(im.opt.GapAfter)
		err := readWSJSONL(im.ctx, name, &read, func(evs []book.Event, pos Pos) error {
			for i := range evs {
				if err := order.check(&evs[i], eventToken(&evs[i]), pos); err != nil {
					return err
				}
			}
			return nil
		}, func(coinPoint) {})
		im.done.Add(max(size, read.Load()))
		// Bad input is the folding's to name, where it reads it.
		if ooo, ok := errors.AsType[*outOfOrder](err); ok {
			im.opt.Logger.Info("a file's events are out of time order: it is read in the order of their times",
				"file", name, "line", ooo.pos.Line, "time", ooo.at, "after", ooo.clock)
			im.sorted[name] = true
		}
	}
	return im.ctx.Err()
}

// finishEvery is how many events pass between looks for ended markets.
const finishEvery = 8192

// items folds a run of events into their markets.
func (im *importer) items(items []item) error {
	for i := range items {
		it := &items[i]
		if it.point != nil {
			im.opt.Prices.addPoint(*it.point)
			continue
		}
		atomic.AddInt64(&im.events, 1)
		e := &it.ev
		switch e.EventType {
		case "book", "price_change", "last_trade_price", "tick_size_change":
		case "market_resolved":
			if err := im.verdict(e, it.pos); err != nil {
				return err
			}
			continue
		default:
			continue // new_market, best_bid_ask: no book change
		}
		if plausible(e.Time, im.began) && e.Time.After(im.streamTo) {
			im.streamTo = e.Time
		}
		token := eventToken(e)
		if im.order != nil {
			if err := im.order.check(e, token, it.pos); err != nil {
				return err
			}
		}
		r, err := im.lookup(e.Market, token, it.pos, false)
		if err != nil {
			return err
		}
		if r == nil {
			im.skipped++
			continue
		}
		r.folded = true
		if !e.Time.IsZero() && !plausible(e.Time, im.began) {
			// A time in µs or s, not ms: the first finished the market
			// (the clock in a year to come), the second went back to 1970,
			// and a trade so dated was stored then.
			return &InputError{Pos: it.pos, Field: "timestamp", Err: fmt.Errorf("%s is not a time of an archived event (before %s, or over a day after the import began): the market channel's times are in ms",
				e.Time.UTC().Format(time.RFC3339Nano), earliestEvent.Format(time.DateOnly))}
		}
		if im.opt.Format == WSJSONL && !e.Time.IsZero() {
			if im.covFrom.IsZero() || e.Time.Before(im.covFrom) {
				im.covFrom = e.Time
			}
			if e.Time.After(im.covTo) {
				im.covTo = e.Time
			}
			if e.Time.After(im.fileTo) {
				im.fileTo = e.Time
			}
		}
		if err := r.event(e); err != nil {
			return err
		}
		if im.opt.Format == WSJSONL && atomic.LoadInt64(&im.events)%finishEvery == 0 {
			if err := im.finishEnded(im.fileTo); err != nil {
				return err
			}
		}
	}
	return nil
}

// verdict takes a market_resolved event, Polymarket's settlement of a
// market (its winning token): the market, of the import or stored, takes
// it (run.settle); another market's is passed over. (A pmxt-v2 row has
// no column of the winning token: it settles nothing.)
func (im *importer) verdict(e *book.Event, pos Pos) error {
	if e.Winner == "" {
		return nil
	}
	r, err := im.lookup(e.Market, e.Winner, pos, true)
	if r == nil || err != nil {
		return err
	}
	r.settle(e)
	return nil
}

// earliestEvent is before any market-channel event: Polymarket's order
// book began after it.
var earliestEvent = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// plausible reports whether t may be the time of an archived event of an
// import begun at began: from earliestEvent to a day after began.
func plausible(t, began time.Time) bool {
	return !t.Before(earliestEvent) && !t.After(began.Add(24*time.Hour))
}

// flushEvery is how many snapshots of a market are held before they are
// written.
const flushEvery = 2048

// run is one market's import.
type run struct {
	im    *importer
	m     store.Market
	books *book.Books
	last  time.Time // the last event's time
	next  time.Time // the next grid instant to consider
	// added: AddMarket was asked for; created (known to the writer only):
	// the import created the market.
	added, created bool

	// up and down are the outcomes' books as the last snapshot took them,
	// kept until an event touches the token: a book that did not change
	// is not sorted into levels again, and its snapshots share it.
	up, down sideCache

	snaps  []store.Snapshot
	trades []store.MarketTrade
	ticks  []store.TickSizeChange
	times  []int64 // instants of the snapshots imported, µs
	wrote  bool
	// verdict: a market_resolved event settled r.m (settle), which is to
	// be written; folded: an event of the market's books, trades or tick
	// was read; heard: an event other than a `book` was, in this pass.
	verdict, folded, heard bool
	// finished: the stream passed the market's end, its snapshots and
	// gaps are written and its memory released; later events add trades,
	// or, inside its window (a file read after another that covers the
	// same hours), open it again (reopen).
	finished bool
	// covered are the stretches [from, to] (µs) the snapshots of the
	// passes finished before cover, no two of them over GapAfter apart.
	covered [][2]int64
}

// coverOf adds to covered the stretches the sorted instants cover, none
// of them over after apart.
func coverOf(covered [][2]int64, times []int64, after time.Duration) [][2]int64 {
	lim := after.Microseconds()
	for i, t := range times {
		if i == 0 || t-times[i-1] > lim {
			covered = append(covered, [2]int64{t, t})
		} else {
			covered[len(covered)-1][1] = t
		}
	}
	return covered
}

// imported are the instants of the snapshots the import took of the
// market, sorted: this pass's, and for each stretch an earlier pass
// covered, instants GapAfter apart over it (which no gap is found in).
func (r *run) imported() []int64 {
	if len(r.covered) == 0 {
		return r.times
	}
	step := r.im.opt.GapAfter.Microseconds()
	out := slices.Clone(r.times)
	for _, c := range r.covered {
		for t := c[0]; t < c[1]; t += step {
			out = append(out, t)
		}
		out = append(out, c[1])
	}
	slices.Sort(out)
	return out
}

// reopen takes up again a market a file read before finished, whose
// window a later file covers too (two captures of the same hours): its
// books start anew from this file's events, and its gaps are found again
// at its finish over what both passes took.
func (r *run) reopen() {
	r.finished, r.heard = false, false
	r.last, r.next = time.Time{}, time.Time{}
	r.books = book.NewBooks()
	r.up, r.down = sideCache{}, sideCache{}
	r.snaps = make([]store.Snapshot, 0, flushEvery)
}

func (r *run) event(e *book.Event) error {
	if r.finished && e.EventType != "last_trade_price" && !e.Time.IsZero() && e.Time.Before(r.m.EndTime) {
		r.reopen()
	}
	if r.finished {
		if e.EventType == "last_trade_price" {
			r.trade(e, cmp.Or(e.Time, r.last))
			if len(r.trades) >= flushEvery {
				return r.flush()
			}
		}
		return nil
	}
	t := e.Time
	if t.IsZero() || t.Before(r.last) {
		t = r.last // an event without a time, or the clock going back: no instant passes
	}
	switch {
	case r.last.IsZero():
		r.next = firstAtOrAfter(t, r.im.opt.Interval)
	case t.Sub(r.last) > r.im.opt.GapAfter && (e.EventType != "book" || r.heard):
		// A silence: the books are trusted GapAfter past the last event,
		// then forgotten until their next `book`. Between the books a
		// pass begins with (a subscription's initial dump) is none: each
		// is stamped with its last change, a quiet book's long before the
		// others', and all came at once.
		if err := r.advance(r.last.Add(r.im.opt.GapAfter), true); err != nil {
			return err
		}
		r.books.Reset()
		r.next = firstAtOrAfter(t, r.im.opt.Interval)
	default:
		if err := r.advance(t, false); err != nil {
			return err
		}
	}
	r.last = t
	r.heard = r.heard || e.EventType != "book"
	if e.EventType == "price_change" {
		// Only this market's tokens: a frame may carry other markets'.
		ours := func(c book.Change) bool { return c.AssetID == r.m.ClobTokenUp || c.AssetID == r.m.ClobTokenDown }
		if !all(e.Changes, ours) {
			var kept []book.Change
			for _, c := range e.Changes {
				if ours(c) {
					kept = append(kept, c)
				}
			}
			cp := *e
			cp.Changes = kept
			e = &cp
		}
	}
	r.books.Apply(e)
	switch e.EventType {
	case "book", "last_trade_price":
		r.touched(e.AssetID)
	case "price_change":
		for _, c := range e.Changes {
			r.touched(c.AssetID)
		}
	}
	switch e.EventType {
	case "last_trade_price":
		// A trade happened at its own time, whatever the books' clock
		// says (as the collector keeps it): one met again behind it (dumps
		// that overlap) is then the trade stored, not a copy at another
		// instant.
		r.trade(e, cmp.Or(e.Time, t))
	case "tick_size_change":
		// At its own time, as the collector records it, whatever the
		// books' clock says (a frame heard after events stamped later);
		// older news than the last change kept is dropped, as the
		// collector drops it, so that the changes stay in time order.
		// The tick in force is the last change the import kept; before
		// the first, any tick heard of is one.
		var cur *float64
		if n := len(r.ticks); n > 0 {
			cur = &r.ticks[n-1].TickSize
		}
		r.ticks, _ = store.AppendTickChange(r.ticks, cur, e.NewTick, cmp.Or(e.Time, t))
	case "book":
		r.bookTick(e.Tick, cmp.Or(e.Time, t), t)
	}
	if len(r.snaps) >= flushEvery || len(r.trades) >= flushEvery {
		return r.flush()
	}
	return nil
}

// bookTick takes the tick a book is quoted in, tick (0: not said), at
// its own time at, the stream having reached clock. A tick other than the
// one in force (a stream that begins after a change, or missed one) is a
// change from the book's time, as the collector records a market it
// finds at another tick, or a REST book in a new one. The tick in force
// is that of the change in force at the book's time, not the last one
// kept: a book older than the clock (a second capture of the same hours
// read after the first) comes after changes made later than it. A book
// shows the tick of when it was sent, which an initial dump's book, dated
// by its last change, may be as late as the clock: a tick in force then
// is no change either. A change so found makes the import's next one to
// the same tick no change (a capture read later that began earlier): it
// is dropped, so that the captures make one history in any order.
func (r *run) bookTick(tick float64, at, clock time.Time) {
	if tick <= 0 || tick == r.tickAt(at) || tick == r.tickAt(clock) {
		return
	}
	at = at.UTC()
	i, _ := slices.BinarySearchFunc(r.ticks, at, func(c store.TickSizeChange, t time.Time) int { return c.Time.Compare(t) })
	if i < len(r.ticks) && r.ticks[i].Time.Equal(at) {
		// A change at that instant already: the first one kept stays, as
		// the store keeps changes (store.SortTickChanges).
		return
	}
	r.ticks = slices.Insert(r.ticks, i, store.TickSizeChange{Time: at, TickSize: tick})
	if n := i + 1; n < len(r.ticks) && r.ticks[n].TickSize == tick && r.tickAt(r.ticks[n].Time.Add(-time.Nanosecond)) == tick {
		r.ticks = slices.Delete(r.ticks, n, n+1)
	}
}

// tickAt is the tick in force at t as a replay will read it: that of the
// last change at or before t, of the import's and the market's as stored
// (the stored one at the same instant, as ensure merges them), else the
// tick markets open at.
func (r *run) tickAt(t time.Time) float64 {
	tick := store.OpeningTickSize
	var from time.Time
	// The import's changes are in time order: the one in force at t is
	// the last at or before it, most often the last of all.
	for i := len(r.ticks) - 1; i >= 0; i-- {
		if !r.ticks[i].Time.After(t) {
			tick, from = r.ticks[i].TickSize, r.ticks[i].Time
			break
		}
	}
	for _, c := range r.m.TickSizeChanges {
		if c.Time.After(t) {
			break
		}
		if !c.Time.Before(from) {
			tick = c.TickSize
		}
	}
	return tick
}

// all reports whether every x satisfies ok.
func all[T any](xs []T, ok func(T) bool) bool {
	return !slices.ContainsFunc(xs, func(x T) bool { return !ok(x) })
}

// sideCache is an outcome's book in the store's form, n levels a side, and
// its price, as taken from b.
type sideCache struct {
	b     *book.Book // nil: nothing held
	book  *store.Book
	price float64
	err   error
}

// touched forgets what is held of the token's book.
func (r *run) touched(token string) {
	switch token {
	case r.m.ClobTokenUp:
		r.up.b = nil
	case r.m.ClobTokenDown:
		r.down.b = nil
	}
}

// side returns b in the store's form and its price (book.Book.Store),
// held from the last call while b is the same book and untouched.
func (c *sideCache) side(b *book.Book, n int) (*store.Book, float64, error) {
	if c.b != b {
		sb, p, err := b.Store(n)
		c.b, c.book, c.price, c.err = b, &sb, p, err
	}
	return c.book, c.price, c.err
}

// settle takes Polymarket's verdict on the market, a market_resolved
// event: its winning token's outcome, at the event's time, with the
// series' settlement source, as the resolver records a verdict, and no
// reference prices, which the event has none of (they stay empty: no
// resolve task looks at a market only imports stored). A market settled already (stored so, or by the
// markets file) keeps its settlement, a recorded one is the resolver's to
// settle (the store keeps its own: ImportTx.AddMarket), and an event that
// names neither of its tokens, or comes before its window's end, settles
// nothing.
func (r *run) settle(e *book.Event) {
	if r.m.Resolved() {
		return
	}
	var winner string
	switch e.Winner {
	case r.m.ClobTokenUp:
		winner = store.OutcomeUp
	case r.m.ClobTokenDown:
		winner = store.OutcomeDown
	default:
		return
	}
	// An event without a time came after the events read before it.
	at := cmp.Or(e.Time, r.im.streamTo).UTC()
	if at.Before(r.m.EndTime) || !plausible(at, r.im.began) {
		return
	}
	r.m.Winner, r.m.ResolvedAt, r.m.ResolutionSource = &winner, &at, series.SettlementSource(r.m.MarketType)
	r.verdict = true
}

// writeVerdict writes the settlement settle took: with the market, when
// the import wrote it; else onto the stored market, when only imports
// wrote it (an earlier hour's dump held its window, this one its
// settlement). A market neither stored nor written is not created for it.
func (r *run) writeVerdict() error {
	if r.added {
		return r.ensure(true)
	}
	m := r.m
	return r.im.w.later(func() error {
		stored, err := r.im.tx.MarketsByCondition(r.im.ctx, []string{m.ConditionID})
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		i := slices.IndexFunc(stored, func(s store.Market) bool { return s.Slug == m.Slug })
		if i < 0 || slices.Contains(stored[i].DataSources, store.DataRecorder) {
			return nil
		}
		if _, err := r.im.tx.AddMarket(r.im.ctx, m, r.im.source); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		r.im.settled.Add(1)
		return nil
	})
}

// trade keeps a last_trade_price event of the market's tokens.
func (r *run) trade(e *book.Event, t time.Time) {
	outcome := store.OutcomeUp
	if e.AssetID == r.m.ClobTokenDown {
		outcome = store.OutcomeDown
	} else if e.AssetID != r.m.ClobTokenUp {
		return
	}
	tr := e.Trade
	mt := store.MarketTrade{Time: t.UTC().Truncate(time.Millisecond), Outcome: outcome, Price: tr.Price,
		Size: tr.Size, Side: tr.Side, FeeRateBps: tr.FeeRateBps, TxHash: tr.TxHash}
	if err := mt.Check(); err != nil {
		// One the store refuses (no side) would fail the whole import at
		// its write: it is left out, as the collector leaves it out.
		if r.im.badTrades++; r.im.badTrades == 1 {
			r.im.opt.Logger.Warn("a trade the store cannot keep is left out (further ones are counted at the end)",
				"market", r.m.Slug, "tx_hash", tr.TxHash, "err", err)
		}
		return
	}
	r.trades = append(r.trades, mt)
}

func firstAtOrAfter(t time.Time, d time.Duration) time.Time {
	if book.OnGrid(t, d) {
		return t
	}
	return book.Next(t, d)
}

// advance takes the snapshots of the instants from r.next up to until
// (included when inclusive).
func (r *run) advance(until time.Time, inclusive bool) error {
	d := r.im.opt.Interval
	if r.next.Before(r.m.StartTime) {
		r.next = firstAtOrAfter(r.m.StartTime, d)
	}
	for ; r.next.Before(until) || (inclusive && r.next.Equal(until)); r.next = r.next.Add(d) {
		at := r.next
		if !at.Before(r.m.EndTime) {
			r.next = until.Add(d) // nothing more in this window
			return nil
		}
		up, down := r.books.Get(r.m.ClobTokenUp), r.books.Get(r.m.ClobTokenDown)
		if up == nil || down == nil {
			continue
		}
		price, ok := r.im.opt.Prices.At(r.m.Coin, at)
		if !ok {
			r.im.noPrice++
			continue
		}
		// book.Snapshot's, with each side held while its book is unchanged.
		bu, pu, err := r.up.side(up, r.im.opt.BookLevels)
		if err != nil {
			continue // an outcome without a price: not recorded, as by the collector
		}
		bd, pd, err := r.down.side(down, r.im.opt.BookLevels)
		if err != nil {
			continue
		}
		r.snaps = append(r.snaps, store.Snapshot{Time: at, CoinPrice: price, PriceUp: pu, PriceDown: pd, BookUp: bu, BookDown: bd})
		r.times = append(r.times, at.UnixMicro())
	}
	return nil
}

// ensure stores the market (or adds the source to it) before its first
// rows; final writes a market the import created again with what was
// learnt of it since (its tick changes, its settlement). It runs on the
// writer, which alone knows whether the import created the market
// (r.created), so that reading goes on meanwhile.
func (r *run) ensure(final bool) error {
	if r.added && (!final || len(r.ticks) == 0 && !r.verdict) {
		return nil
	}
	first := !r.added
	if first {
		r.added = true
		r.im.imported.Add(1)
	}
	ticks := slices.Clone(r.ticks)
	m := r.m // as it is now: a verdict may settle r.m while this waits
	return r.im.w.later(func() error {
		// A stored market keeps its fields (recorded wins), but for the
		// tick changes it has none of, which the store adds to a market
		// only imports wrote (a 4hr market imported an hour at a time),
		// and, unresolved, the settlement of a verdict (SettleFrom).
		if len(ticks) > 0 {
			m.TickSizeChanges = store.MergeTickChanges(m.TickSizeChanges, ticks)
			if len(m.TickSizeChanges) > 0 {
				last := m.TickSizeChanges[len(m.TickSizeChanges)-1].TickSize
				m.TickSize = &last
			}
		}
		created, err := r.im.tx.AddMarket(r.im.ctx, m, r.im.source)
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if first {
			r.created = created
		}
		return nil
	})
}

func (r *run) flush() error {
	if len(r.snaps) == 0 && len(r.trades) == 0 {
		return nil
	}
	if err := r.ensure(false); err != nil {
		return err
	}
	snaps, trades, slug := r.snaps, r.trades, r.m.Slug
	r.snaps, r.trades = make([]store.Snapshot, 0, flushEvery), nil
	r.wrote = true
	return r.im.w.later(func() error {
		if len(snaps) > 0 {
			if _, err := r.im.tx.AppendSnapshots(r.im.ctx, slug, snaps); err != nil {
				return fmt.Errorf("archive: %w", err)
			}
		}
		if len(trades) > 0 && !r.created {
			var err error
			if trades, err = r.unstored(trades); err != nil {
				return err
			}
		}
		if len(trades) > 0 {
			if _, err := r.im.tx.AppendMarketTrades(r.im.ctx, slug, trades); err != nil {
				return fmt.Errorf("archive: %w", err)
			}
		}
		return nil
	})
}

// unstored returns the trades but those the market has stored already
// under another time: the collector backfills a stretch its trade feed
// missed from the Data API, whose times are whole seconds and which has
// no fee rate, so that the store, which keeps a trade once by all its
// fields, would keep the import's copy beside it. A fill is told, as the
// backfill tells it, by its transaction hash, and here by its outcome,
// side, price and size too (one transaction holds several fills). Run on
// the writer, where r.created is known.
func (r *run) unstored(trades []store.MarketTrade) ([]store.MarketTrade, error) {
	type fill struct {
		hash, outcome, side string
		price, size         float64
	}
	from, to := trades[0].Time, trades[0].Time
	for _, t := range trades {
		from, to = minTime(from, t.Time), maxTime(to, t.Time)
	}
	from, to = from.Add(-5*time.Second), to.Add(5*time.Second)
	stored, _, err := r.im.st.ListMarketTrades(r.im.ctx, r.m.Slug, store.MarketTradeQuery{Ascending: true, From: &from, To: &to})
	if err != nil {
		return nil, fmt.Errorf("archive: read stored trades of %s: %w", r.m.Slug, err)
	}
	have := map[fill]bool{}
	for _, t := range stored {
		if t.TxHash != "" {
			have[fill{t.TxHash, t.Outcome, t.Side, t.Price, t.Size}] = true
		}
	}
	if len(have) == 0 {
		return trades, nil
	}
	return slices.DeleteFunc(trades, func(t store.MarketTrade) bool {
		return t.TxHash != "" && have[fill{t.TxHash, t.Outcome, t.Side, t.Price, t.Size}]
	}), nil
}

// finish takes the snapshots up to the end of what the input covers,
// writes what is held, and records the market's gaps in that stretch.
//
// The books are trusted GapAfter past the market's last event while the
// input goes on (a quiet market), not past the input's end (the last
// pmxt-v2 hour's, the latest ws-jsonl event's): what came after is the
// next file's to say. Books taken on past it were snapshots of books
// frozen at the end of an hour's dump which, stored first, won over the
// next hour's snapshots of the same instants when the hours were
// imported one after the other.
func (r *run) finish() error {
	if !r.last.IsZero() {
		end := r.last.Add(r.im.opt.GapAfter)
		inputEnd := r.im.streamTo
		if r.im.opt.Format == PMXTv2 {
			inputEnd = r.im.covTo
		}
		if inputEnd.Before(end) {
			end = inputEnd
		}
		if err := r.advance(end, true); err != nil {
			return err
		}
	}
	if len(r.ticks) > 0 && !r.wrote && len(r.snaps) == 0 && len(r.trades) == 0 {
		return nil // nothing but tick changes: not worth a market
	}
	if err := r.flush(); err != nil {
		return err
	}
	if !r.wrote {
		return nil
	}
	if err := r.ensure(true); err != nil { // the tick changes seen after the first flush
		return err
	}
	covFrom, covTo := r.im.covFrom, r.im.covTo
	imported := r.imported() // now the writer's
	slug := r.m.Slug
	return r.im.w.later(func() error {
		from, to := covFrom, covTo
		if n := len(imported); n > 0 {
			// The books are trusted GapAfter past the market's last event:
			// its snapshots may go on past the last event the input
			// holds, and the stretch the import speaks for with them.
			if last := time.UnixMicro(imported[n-1]).UTC(); last.After(to) { // imported is sorted
				to = last
			}
		}
		if from.Before(r.m.StartTime) || r.created {
			// A market this import created (r.created, known to the
			// writer only) has no data from before it: its stretch from
			// the window's start to what the input covers is a gap too,
			// as the recorder measures the first snapshot it takes of a
			// market from the window's start. An import that covers the
			// stretch later replaces it (ReplaceGaps).
			from = r.m.StartTime
		}
		if to.After(r.m.EndTime) || r.created && r.m.EndTime.Before(r.im.began) {
			// Likewise the stretch from what the input covers to the end
			// of a window that is over (a dump cut short), as the
			// recorder records one from a market's last snapshot to its
			// end; a live market's is the recorder's to measure.
			to = r.m.EndTime
		}
		if !to.After(from) {
			return nil
		}
		// A stored gap of snapshots across from or to (one an earlier
		// import found from the window's start to its first snapshot, or
		// from its last to the end, where this one begins or ends inside)
		// is measured again whole, with this import's snapshots: cut at
		// from or to, its part outside would stay a gap however short
		// (a stretch of under GapAfter between the two imports'
		// snapshots, or from the window's start to this import's first
		// event), where one import of both inputs finds none.
		from, to, err := r.widenToGaps(from, to)
		if err != nil {
			return err
		}
		times, err := r.storedTimes(from, to)
		if err != nil {
			return err
		}
		times = append(times, imported...)
		slices.Sort(times)
		gaps := findGaps(times, from, to, r.im.opt.GapAfter)
		trades, err := r.tradesGaps(from, to, imported)
		if err != nil {
			return err
		}
		gaps = append(gaps, trades...)
		if err := r.im.tx.ReplaceGaps(r.im.ctx, slug, from, to, gaps); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		return nil
	})
}

// tradesGaps are the parts of the market's stored trades gaps (the
// recorder's trade feed was down while its snapshots went on) within
// [from, to] that the import does not mend: those outside the stretches
// in which it took snapshots of the market (imported, sorted µs), where
// it had the market's events and so its trades. ReplaceGaps would drop
// them with the rest of the gaps in [from, to].
func (r *run) tradesGaps(from, to time.Time, imported []int64) ([]store.Gap, error) {
	if r.created {
		return nil, nil
	}
	stored, err := r.im.st.ListGaps(r.im.ctx, r.m.Slug)
	if err != nil {
		return nil, fmt.Errorf("archive: read stored gaps of %s: %w", r.m.Slug, err)
	}
	// dead is where the import had no events of the market.
	dead := []store.Gap{{From: from, To: to}}
	if len(imported) > 0 {
		dead = findGaps(imported, from, to, r.im.opt.GapAfter)
	}
	var out []store.Gap
	for _, g := range stored {
		if g.Kind != store.GapTrades || !g.From.Before(to) || !from.Before(g.To) {
			continue
		}
		for _, d := range dead {
			f, t := d.From, d.To
			if g.From.After(f) {
				f = g.From
			}
			if g.To.Before(t) {
				t = g.To
			}
			if f.Before(t) {
				out = append(out, store.Gap{From: f, To: t, Kind: store.GapTrades})
			}
		}
	}
	return out, nil
}

// widenToGaps returns [from, to] widened to the bounds of the market's
// stored gaps of snapshots that cross from or to.
func (r *run) widenToGaps(from, to time.Time) (time.Time, time.Time, error) {
	if r.created {
		return from, to, nil
	}
	stored, err := r.im.st.ListGaps(r.im.ctx, r.m.Slug)
	if err != nil {
		return from, to, fmt.Errorf("archive: read stored gaps of %s: %w", r.m.Slug, err)
	}
	for _, g := range stored {
		if g.Kind != store.GapSnapshots {
			continue
		}
		if g.From.Before(from) && g.To.After(from) {
			from = g.From
		}
		if g.From.Before(to) && g.To.After(to) {
			to = g.To
		}
	}
	return from, to, nil
}

// storedTimes are the instants of the market's snapshots stored before
// the import, within [from, to].
func (r *run) storedTimes(from, to time.Time) ([]int64, error) {
	if r.created {
		return nil, nil
	}
	end := to.Add(time.Microsecond)
	snaps, _, err := r.im.st.ListSnapshots(r.im.ctx, r.m.Slug, store.SnapshotQuery{From: &from, To: &end, Ascending: true})
	if err != nil {
		return nil, fmt.Errorf("archive: read stored snapshots of %s: %w", r.m.Slug, err)
	}
	out := make([]int64, len(snaps))
	for i, s := range snaps {
		out[i] = s.Time.UnixMicro()
	}
	return out, nil
}

// findGaps returns the stretches of [from, to] longer than after without
// an instant of times (sorted µs).
func findGaps(times []int64, from, to time.Time, after time.Duration) []store.Gap {
	var gaps []store.Gap
	prev := from.UnixMicro()
	lim := after.Microseconds()
	for _, t := range times {
		if t < prev {
			continue
		}
		if t-prev > lim {
			gaps = append(gaps, store.Gap{From: time.UnixMicro(prev).UTC(), To: time.UnixMicro(t).UTC()})
		}
		prev = t
	}
	if end := to.UnixMicro(); end-prev > lim {
		gaps = append(gaps, store.Gap{From: time.UnixMicro(prev).UTC(), To: to.UTC()})
	}
	return gaps
}

// writer runs an import's store writes on a goroutine of their own, in
// the order given, so that reading and rebuilding the next events overlap
// the store's work; a few batches wait at most, which bounds memory. The
// first error stops it, and is returned by every call after.
type writer struct {
	jobs chan func() error
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func newWriter() *writer {
	w := &writer{jobs: make(chan func() error, 4), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for job := range w.jobs {
			if err := job(); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// later queues job, which does not run once a job has failed; it reports
// an earlier job's failure.
func (w *writer) later(job func() error) error {
	if err := w.failed(); err != nil {
		return err
	}
	w.jobs <- func() error {
		if w.failed() != nil {
			return nil
		}
		return job()
	}
	return nil
}

// do runs job after everything queued and waits for it.
func (w *writer) do(job func() error) error {
	if err := w.failed(); err != nil {
		return err
	}
	res := make(chan error, 1)
	w.jobs <- func() error {
		if err := w.failed(); err != nil {
			res <- err
			return nil
		}
		err := job()
		res <- err
		return err
	}
	return <-res
}

// close waits for the queued jobs and returns the first failure.
func (w *writer) close() error {
	close(w.jobs)
	<-w.done
	return w.failed()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
