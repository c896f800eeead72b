package collect

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updown/updown/store"
)

// writer batches recorded snapshots and depth and writes them to the store:
// one AppendSnapshots per market per flush (a COPY-sized transaction in
// Postgres rather than one per snapshot), so that recording never waits on
// the store and the store sees few, large writes.
//
// A batch the store refuses stays pending and is written with the next
// flush (writes are idempotent, so a batch that did reach the store before
// an error costs nothing twice). Pending work is bounded: beyond maxPending
// new snapshots are dropped and logged as a gap.
type writer struct {
	st  Store
	act ActivityWriter // nil: trades and gaps are not kept
	log *slog.Logger
	// warn logs the failed writes a store outage repeats on every flush
	// (every market's snapshots and trades, the depth) once per
	// Config.WarnEvery each, with a count of those held back.
	warn          *rateLog
	flushInterval time.Duration
	flushSize     int
	maxPending    int
	backoff       Backoff

	flushMu sync.Mutex // held by a flush: what it took is neither pending nor written

	mu      sync.Mutex
	snaps   map[string][]store.Snapshot // by market slug
	pending int                         // snapshots in snaps
	depth   []store.DepthSnapshot
	trades  map[string][]store.MarketTrade // by market slug
	gaps    map[string][]store.Gap         // by market slug
	dropped int                            // snapshots dropped since last logged
	// depthDropped are the depth snapshots dropped since last logged: a
	// hole in the depth history that nothing else records.
	depthDropped int
	kick         chan struct{}

	written       atomic.Int64 // snapshots the store accepted
	depthWritten  atomic.Int64
	tradesWritten atomic.Int64
	gapsWritten   atomic.Int64
}

func newWriter(cfg *Config, log *slog.Logger, warn *rateLog) *writer {
	if warn == nil {
		warn = newRateLog(log, cfg.WarnEvery, nil)
	}
	return &writer{
		st: cfg.Store, act: cfg.Activity, log: log, warn: warn, flushInterval: cfg.FlushInterval, flushSize: cfg.FlushSize,
		maxPending: cfg.MaxPending, backoff: cfg.Backoff,
		snaps: make(map[string][]store.Snapshot), kick: make(chan struct{}, 1),
		trades: map[string][]store.MarketTrade{}, gaps: map[string][]store.Gap{},
	}
}

// addTrade queues a Polymarket trade of the market.
func (w *writer) addTrade(slug string, t store.MarketTrade) {
	if w.act == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.trades[slug]) < w.maxPending {
		w.trades[slug] = append(w.trades[slug], t)
	}
}

// heldTrades returns the trades of the market not written yet.
func (w *writer) heldTrades(slug string) []store.MarketTrade {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.trades[slug])
}

// betweenFlushes runs f with no flush under way, waiting for one that is:
// a flush takes the trades it writes out of the writer before the store
// has them, so a read of the store and of the writer while it runs would
// find those trades in neither.
func (w *writer) betweenFlushes(f func()) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	f()
}

// holdsGap reports whether a gap of the market overlapping g, of its
// kind, is not written yet. It waits for a flush under way.
func (w *writer) holdsGap(slug string, g store.Gap) bool {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.gaps[slug] {
		if h.Kind == g.Kind && h.From.Before(g.To) && g.From.Before(h.To) {
			return true
		}
	}
	return false
}

// addGap queues a recording gap of the market. Gaps are logged as they
// are found, whether or not the store keeps them.
func (w *writer) addGap(slug string, g store.Gap) {
	what := "gap recorded: a live market went without a snapshot"
	if g.Kind == store.GapTrades {
		what = "gap recorded: a live market's trades may be missing"
	}
	w.log.Warn(what, "market", slug, "from", g.From, "to", g.To, "kind", g.Kind.Name(),
		"lasted", g.To.Sub(g.From).Round(time.Millisecond).String())
	if w.act == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gaps[slug] = append(w.gaps[slug], g)
}

// addSnapshot queues a snapshot of the market; false when it was dropped.
func (w *writer) addSnapshot(slug string, s store.Snapshot) bool {
	w.mu.Lock()
	if w.pending >= w.maxPending {
		w.dropped++
		w.mu.Unlock()
		return false
	}
	w.snaps[slug] = append(w.snaps[slug], s)
	w.pending++
	full := w.pending >= w.flushSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// addDepth queues a depth snapshot for the history.
func (w *writer) addDepth(d store.DepthSnapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.depth) < w.maxPending {
		w.depth = append(w.depth, d)
		return
	}
	w.depthDropped++
}

// run flushes every flushInterval, or sooner when a batch is full, until
// stop is closed; then it flushes what is left, for up to finalFlush.
// Writes keep ctx's values but not its cancellation: what was recorded is
// written even while the collector shuts down (a SIGTERM must not lose the
// last second).
func (w *writer) run(ctx context.Context, stop <-chan struct{}) {
	wctx := context.WithoutCancel(ctx)
	t := time.NewTicker(w.flushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			w.final(wctx)
			return
		case <-t.C:
		case <-w.kick:
		}
		fctx, cancel := context.WithTimeout(wctx, flushTimeout)
		w.flush(fctx)
		cancel()
	}
}

// final writes what is pending at shutdown, retrying briefly.
func (w *writer) final(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, finalFlush)
	defer cancel()
	for range 3 {
		if w.flush(ctx) || sleep(ctx, w.backoff.Delay(1)) != nil {
			break
		}
	}
	w.mu.Lock()
	lost, lostDepth := w.pending, len(w.depth)
	w.mu.Unlock()
	if lost > 0 {
		w.log.ErrorContext(ctx, "gap: snapshots not written at shutdown", "snapshots", lost)
	}
	if lostDepth > 0 {
		w.log.ErrorContext(ctx, "gap: depth history snapshots not written at shutdown", "snapshots", lostDepth)
	}
}

// flushTimeout bounds one flush; finalFlush the flush at shutdown.
const (
	flushTimeout = 30 * time.Second
	finalFlush   = 10 * time.Second
)

// flushParallel bounds the markets written at once.
const flushParallel = 4

// flush writes everything pending once; it reports whether all of it was
// written.
func (w *writer) flush(ctx context.Context) bool {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	snaps, depth, dropped, depthDropped := w.snaps, w.depth, w.dropped, w.depthDropped
	w.snaps, w.pending, w.depth, w.dropped, w.depthDropped = make(map[string][]store.Snapshot, len(snaps)), 0, nil, 0, 0
	trades, gaps := w.trades, w.gaps
	w.trades, w.gaps = map[string][]store.MarketTrade{}, map[string][]store.Gap{}
	w.mu.Unlock()
	if dropped > 0 {
		w.log.ErrorContext(ctx, "gap: snapshots dropped, the store is not keeping up", "dropped", dropped)
	}
	if depthDropped > 0 {
		w.log.ErrorContext(ctx, "gap: depth history snapshots dropped, the store is not keeping up", "dropped", depthDropped)
	}

	var failed sync.Map // slug → []store.Snapshot
	sem := make(chan struct{}, flushParallel)
	var wg sync.WaitGroup
	for slug, batch := range snaps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := w.st.AppendSnapshots(ctx, slug, batch)
			switch {
			case err == nil:
				w.written.Add(int64(len(batch)))
			case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid):
				// No retry mends it; dropping is the honest gap.
				w.log.ErrorContext(ctx, "gap: snapshots refused by the store", "market", slug, "snapshots", len(batch), "err", err)
			default:
				w.warn.warn(ctx, "write "+slug, "writing snapshots failed; kept for the next flush", "market", slug, "snapshots", len(batch), "err", err)
				failed.Store(slug, batch)
			}
		})
	}
	wg.Wait()

	ok := true
	if len(depth) > 0 {
		if err := w.st.AppendDepth(ctx, depth); err != nil {
			w.warn.warn(ctx, "write depth", "writing depth history failed; kept for the next flush", "snapshots", len(depth), "err", err)
			w.requeueDepth(depth)
			ok = false
		} else {
			w.depthWritten.Add(int64(len(depth)))
		}
	}
	failed.Range(func(k, v any) bool {
		w.requeue(k.(string), v.([]store.Snapshot))
		ok = false
		return true
	})
	if !w.flushActivity(ctx, trades, gaps) {
		ok = false
	}
	return ok
}

// flushActivity writes pending trades and gaps; what fails for a reason a
// retry may mend goes back in the queue. Snapshots are written first, so
// that a market's gaps land beside its snapshots.
func (w *writer) flushActivity(ctx context.Context, trades map[string][]store.MarketTrade, gaps map[string][]store.Gap) bool {
	ok := true
	for slug, ts := range trades {
		_, err := w.act.AppendMarketTrades(ctx, slug, ts)
		switch {
		case err == nil:
			w.tradesWritten.Add(int64(len(ts)))
		case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid):
			w.log.ErrorContext(ctx, "trades refused by the store", "market", slug, "trades", len(ts), "err", err)
		default:
			w.warn.warn(ctx, "write "+slug, "writing trades failed; kept for the next flush", "market", slug, "trades", len(ts), "err", err)
			w.mu.Lock()
			if len(w.trades[slug]) < w.maxPending {
				w.trades[slug] = append(ts, w.trades[slug]...)
			}
			w.mu.Unlock()
			ok = false
		}
	}
	for slug, gs := range gaps {
		_, err := w.act.RecordGaps(ctx, slug, gs)
		switch {
		case err == nil:
			w.gapsWritten.Add(int64(len(gs)))
		case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid):
			w.log.ErrorContext(ctx, "gaps refused by the store", "market", slug, "gaps", len(gs), "err", err)
		default:
			w.warn.warn(ctx, "write "+slug, "writing gaps failed; kept for the next flush", "market", slug, "gaps", len(gs), "err", err)
			w.mu.Lock()
			w.gaps[slug] = append(gs, w.gaps[slug]...)
			w.mu.Unlock()
			ok = false
		}
	}
	return ok
}

// requeue puts a batch that failed back in front of what arrived since,
// within maxPending.
func (w *writer) requeue(slug string, batch []store.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.maxPending - w.pending
	if room <= 0 {
		w.dropped += len(batch)
		return
	}
	if len(batch) > room { // keep the newest
		w.dropped += len(batch) - room
		batch = batch[len(batch)-room:]
	}
	w.snaps[slug] = append(slices.Clip(batch), w.snaps[slug]...)
	w.pending += len(batch)
}

func (w *writer) requeueDepth(batch []store.DepthSnapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(batch), max(w.maxPending-len(w.depth), 0))
	w.depthDropped += len(batch) - n
	w.depth = append(slices.Clip(batch[len(batch)-n:]), w.depth...)
}
