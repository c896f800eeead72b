package collect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/updown/updown/store"
)

// Backfilling trades gaps.
//
// A trades gap (tradegaps.go) is a stretch in which the websocket, the
// only live source of Polymarket's trades, did not reach the collector.
// Polymarket's Data API lists a market's past trades (GET /trades), so
// once the socket is back the collector asks it, BackfillDelay after each
// gap's end, for the trades of the market inside the gap, and records
// those it lacks. When the Data API answered for the whole gap the gap is
// removed (store.MarketActivityStore.RemoveGaps), so /gaps and the
// replay's warnings no longer report it. A backfill that failed (the Data
// API or the store) is tried again, BackfillDelay after the failure and
// twice as long after each next one, up to every maxBackfillWait, while
// the market started within ResumeLookback (or BackfillAttempts times in
// all, when set); then, or when the Data API's pages end before the gap's
// start, the gap stays and one log line says why.
//
// A gap the collector could not backfill before it stopped (its stretch
// was still open, it waited for its turn, or its tries ran out) is
// stored: at its next start the collector reads the trades gaps of the
// markets of the last ResumeLookback (resumeBackfills) and backfills them
// in turn.
//
// The Data API gives a trade's time in whole seconds: a backfilled trade
// keeps that time (the trade happened within the second after it), and
// reports no fee rate (0).
//
// A trade the market already has is not recorded twice. The rule: a
// transaction hash counts once per market (REFERENCE, "Trading
// mechanics"). A row whose hash the market has a trade of within the gap
// (give or take a second), whatever its outcome, price, size or side, is
// that trade: the websocket may tell a match on the token the taker did
// not trade (UP and DOWN share one book in mirror) or once per maker
// order filled, while the Data API, asked for takers only, lists the
// taker's order once with its whole size, so no field but the hash is
// sure to agree. Of the rows themselves, one per hash is kept (a page
// that shifted under newer trades repeats rows). A row without a hash,
// or a recorded trade without one (older feeds send no
// transaction_hash), is matched on outcome, side, price and size with a
// trade in the same second.

// GapFiller is what backfilling trades gaps needs of Config.Activity
// beyond an ActivityWriter; a store.MarketActivityStore has it. Without
// it gaps are not backfilled.
type GapFiller interface {
	ListMarketTrades(ctx context.Context, slug string, q store.MarketTradeQuery) ([]store.MarketTrade, int, error)
	RemoveGaps(ctx context.Context, slug string, gaps []store.Gap) error
	ListGapsEndingAfter(ctx context.Context, kind store.GapKind, t time.Time) ([]store.MarketGap, error)
}

var _ GapFiller = store.MarketActivityStore(nil)

// dataAPI is Polymarket's Data API.
type dataAPI struct {
	u       *upstream
	timeout time.Duration
	backoff Backoff
}

// dataTrade is a row of the Data API's GET /trades; numbers are JSON
// numbers there (strings are read too), the timestamp Unix seconds.
type dataTrade struct {
	Side            flexString `json:"side"`
	Asset           flexString `json:"asset"`
	ConditionID     flexString `json:"conditionId"`
	Size            flexFloat  `json:"size"`
	Price           flexFloat  `json:"price"`
	Timestamp       flexFloat  `json:"timestamp"`
	TransactionHash flexString `json:"transactionHash"`
}

// time is the row's time: Unix seconds (milliseconds too, should the API
// ever send them).
func (r dataTrade) time() time.Time {
	v := int64(r.Timestamp.V)
	if v > 100_000_000_000 {
		return time.UnixMilli(v).UTC()
	}
	return time.Unix(v, 0).UTC()
}

// The Data API's paging of /trades: pages of dataPage, offsets up to
// dataMaxOffset.
const (
	dataPage      = 500
	dataMaxOffset = 10_000
)

// errPagesEnd is a walk of the pages that stopped at the API's last
// offset before reaching the gap's start.
var errPagesEnd = fmt.Errorf("its pages end (offset %d) before the gap's start", dataMaxOffset)

// trades returns the market's trades (taker rows, newest first) whose
// second falls in [from, to), walking the pages until one reaches a trade
// before from's second or the market's first trade. An error means the
// rows may not be all of the stretch.
func (d *dataAPI) trades(ctx context.Context, conditionID string, from, to time.Time) ([]dataTrade, error) {
	lo := from.Truncate(time.Second)
	var rows []dataTrade
	for off := 0; off <= dataMaxOffset; off += dataPage {
		q := url.Values{"market": {conditionID}, "limit": {strconv.Itoa(dataPage)}, "offset": {strconv.Itoa(off)}, "takerOnly": {"true"}}
		var page []dataTrade
		err := d.u.do(ctx, request{method: http.MethodGet, path: "/trades", query: q, timeout: d.timeout, attempts: 3, backoff: d.backoff}, &page)
		if err != nil {
			return rows, err
		}
		before := false
		for _, r := range page {
			switch t := r.time(); {
			case t.Before(lo):
				before = true
			case t.Before(to):
				rows = append(rows, r)
			}
		}
		if before || len(page) < dataPage {
			return rows, nil
		}
	}
	return rows, errPagesEnd
}

// backfillJob is a trades gap of a market to backfill.
type backfillJob struct {
	market store.Market
	gap    store.Gap
	// tries counts the failed backfills of the gap so far; a job tried
	// again waits until due.
	tries int
	due   time.Time
}

// maxBackfills bounds the gaps waiting for their backfill; beyond it a
// gap stays as recorded.
const maxBackfills = 1024

// queueBackfill hands a trades gap just recorded to the backfill.
func (c *Collector) queueBackfill(m store.Market, g store.Gap) {
	if c.data == nil || c.filler == nil {
		return
	}
	select {
	case c.backfills <- backfillJob{market: m, gap: g}:
	default:
		c.warn.warn(context.Background(), "backfill-full", "trades gap not backfilled: too many gaps wait for theirs; it stays",
			"market", m.Slug, "from", g.From, "to", g.To)
	}
}

// runBackfill backfills the gaps queued, each BackfillDelay after its end,
// and tries the failed ones again when due, until ctx is done. It begins
// with the gaps earlier runs left (resumeBackfills).
func (c *Collector) runBackfill(ctx context.Context) {
	// again holds the gaps waiting for a try of their own, soonest first:
	// the earlier runs' (due at once), then the failed ones.
	again := c.resumeBackfills(ctx)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	stopped := func(inFlight int) {
		if n := len(c.backfills) + len(again) + inFlight; n > 0 {
			c.log.WarnContext(ctx, "trades gaps not backfilled: the collector stopped before their turn; they stay until its next start", "gaps", n)
		}
	}
	for {
		if len(again) > 0 {
			retry.Reset(again[0].due.Sub(c.cfg.Now()))
		}
		var j backfillJob
		select {
		case <-ctx.Done():
			stopped(0)
			return
		case j = <-c.backfills:
		case <-retry.C:
			j, again = again[0], again[1:]
		}
		retry.Stop()
		if c.awaitTurn(ctx, j.gap) != nil {
			stopped(1)
			return
		}
		err := c.backfill(ctx, j)
		switch {
		case ctx.Err() != nil:
			stopped(1)
			return
		case err == nil:
			continue
		}
		args := []any{"market", j.market.Slug, "from", j.gap.From, "to", j.gap.To, "source", c.cfg.Upstreams.PolymarketData, "err", err}
		j.tries++
		wait := min(c.cfg.BackfillDelay<<min(j.tries-1, 16), maxBackfillWait)
		j.due = c.cfg.Now().Add(wait)
		switch {
		case c.cfg.BackfillAttempts > 0 && j.tries >= c.cfg.BackfillAttempts:
			c.log.WarnContext(ctx, "trades gap stays: "+err.Error(), append(args, "attempts", j.tries)...)
			continue
		case j.due.Sub(j.market.StartTime) > ResumeLookback:
			c.log.WarnContext(ctx, "trades gap stays: "+err.Error()+"; the market is too old to be tried again", append(args, "attempts", j.tries)...)
			continue
		}
		c.log.InfoContext(ctx, "trades gap not backfilled yet: "+err.Error(), append(args, "attempt", j.tries, "next_in", wait.String())...)
		at, _ := slices.BinarySearchFunc(again, j.due, func(x backfillJob, due time.Time) int { return x.due.Compare(due) })
		again = slices.Insert(again, at, j)
	}
}

// ResumeLookback bounds the backfill of a market's trades gaps: a failed
// backfill is tried again, and a start picks up the gaps earlier runs
// stored, for the markets that started within it.
const ResumeLookback = 48 * time.Hour

// maxBackfillWait is the longest wait before a failed backfill is tried
// again.
const maxBackfillWait = 30 * time.Minute

// resumeBackfills returns the trades gaps the store holds for the markets
// that started within ResumeLookback and whose gaps ended, due at once:
// the gaps earlier runs recorded and did not backfill. They are read in
// one question, and then each market that has one; a market that cannot
// be read is left for the next start.
func (c *Collector) resumeBackfills(ctx context.Context) []backfillJob {
	now := c.cfg.Now()
	after := now.Add(-ResumeLookback)
	// A gap that ended before the lookback began is of a market that
	// started before it.
	gaps, err := c.filler.ListGapsEndingAfter(ctx, store.GapTrades, after)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		c.log.WarnContext(ctx, "trades gaps of earlier runs not backfilled: listing them failed; they stay until the next start", "err", err)
		return nil
	}
	var jobs []backfillJob
	unread := 0
	var m store.Market // the market of the gaps before, ListGapsEndingAfter lists a market's together
	for _, g := range gaps {
		if g.To.After(now) {
			continue // a gap still open, or of a clock ahead: the running collector has it
		}
		if m.Slug != g.Market {
			if m, err = c.cfg.Store.GetMarket(ctx, g.Market); ctx.Err() != nil {
				return nil
			}
			if err != nil {
				if unread++; unread == 1 {
					c.log.WarnContext(ctx, "trades gaps of earlier runs not backfilled: reading their market failed; they stay until the next start", "market", g.Market, "err", err)
				}
				m = store.Market{Slug: g.Market}
				continue
			}
		}
		if m.StartTime.After(after) {
			jobs = append(jobs, backfillJob{market: m, gap: g.Gap, due: now})
		}
	}
	if unread > 1 {
		c.log.WarnContext(ctx, "trades gaps of earlier runs not backfilled: the records of more markets could not be read", "markets", unread)
	}
	if len(jobs) > 0 {
		c.log.InfoContext(ctx, "trades gaps of earlier runs queued for their backfill", "gaps", len(jobs))
	}
	return jobs
}

// awaitTurn waits until BackfillDelay after the gap's end and, for up to
// as long again, until the websocket has sent data from over a second
// after it: the Data API gives the gap's last second whole, and the
// socket's trades of that second past the gap's end must be recorded
// first, to be known as the same trades.
func (c *Collector) awaitTurn(ctx context.Context, g store.Gap) error {
	if err := sleep(ctx, g.To.Add(c.cfg.BackfillDelay).Sub(c.cfg.Now())); err != nil {
		return err
	}
	deadline := c.cfg.Now().Add(c.cfg.BackfillDelay)
	for c.ws != nil && c.ws.lastData().Before(g.To.Add(2*time.Second)) && c.cfg.Now().Before(deadline) {
		if err := sleep(ctx, min(c.cfg.Interval, c.cfg.BackfillDelay)); err != nil {
			return err
		}
	}
	return nil
}

// backfill records the trades of the job's gap that the market lacks, and
// removes the gap when the Data API answered for all of it. It returns
// what failed when trying again may succeed; what cannot (no condition id,
// pages that end before the gap) it logs, and the gap stays.
func (c *Collector) backfill(ctx context.Context, j backfillJob) error {
	m, g := j.market, j.gap
	args := []any{"market", m.Slug, "from", g.From, "to", g.To, "source", c.cfg.Upstreams.PolymarketData}
	if m.ConditionID == "" {
		c.log.WarnContext(ctx, "trades gap stays: the market has no condition id to ask the trades source for", args...)
		return nil
	}
	rows, fetchErr := c.data.trades(ctx, m.ConditionID, g.From, g.To)
	trades := c.fromRows(ctx, m, rows)
	fresh, err := c.unrecorded(ctx, m.Slug, g, trades)
	if err != nil {
		return fmt.Errorf("reading the trades recorded in it failed: %w", err)
	}
	if len(fresh) > 0 {
		if _, err := c.cfg.Activity.AppendMarketTrades(ctx, m.Slug, fresh); err != nil {
			return fmt.Errorf("storing its %d backfilled trades failed: %w", len(fresh), err)
		}
		c.w.tradesWritten.Add(int64(len(fresh)))
		c.backfilled.Add(int64(len(fresh)))
	}
	args = append(args, "backfilled", len(fresh), "already_recorded", len(trades)-len(fresh))
	switch {
	case errors.Is(fetchErr, errPagesEnd):
		c.log.WarnContext(ctx, "trades gap stays: the trades source does not reach back to its start", append(args, "err", fetchErr)...)
		return nil
	case fetchErr != nil:
		return fmt.Errorf("the trades source failed: %w", fetchErr)
	}
	// The gap goes once it is in the store: removing it while the writer
	// still holds it would bring it back at the next flush. A store that
	// keeps refusing it is not waited for past a bound.
	for wait := time.Duration(0); c.w.holdsGap(m.Slug, g); wait += c.cfg.FlushInterval {
		if wait >= flushTimeout {
			return errors.New("its trades were backfilled but the gap itself is not written yet")
		}
		if err := sleep(ctx, c.cfg.FlushInterval); err != nil {
			return err
		}
	}
	if err := c.filler.RemoveGaps(ctx, m.Slug, []store.Gap{g}); err != nil {
		return fmt.Errorf("its trades were backfilled but removing it failed: %w", err)
	}
	c.gapsFilled.Add(1)
	c.log.InfoContext(ctx, "trades gap backfilled from the trades source and removed", args...)
	return nil
}

// fromRows converts Data API rows of the market to recorded trades; a row
// of another market or token, or one that cannot be stored, is left out
// (and logged).
func (c *Collector) fromRows(ctx context.Context, m store.Market, rows []dataTrade) []store.MarketTrade {
	out := make([]store.MarketTrade, 0, len(rows))
	odd := 0
	for _, r := range rows {
		var outcome string
		switch string(r.Asset) {
		case m.ClobTokenUp:
			outcome = store.OutcomeUp
		case m.ClobTokenDown:
			outcome = store.OutcomeDown
		}
		t := store.MarketTrade{Time: r.time(), Outcome: outcome, Price: r.Price.V, Size: r.Size.V, Side: string(r.Side), TxHash: string(r.TransactionHash)}
		if outcome == "" || (r.ConditionID != "" && string(r.ConditionID) != m.ConditionID) || !r.Price.Set || !r.Size.Set || t.Check() != nil {
			odd++
			continue
		}
		out = append(out, t)
	}
	if odd > 0 {
		c.log.WarnContext(ctx, "trades source: rows left out (another market or token, or unreadable)", "market", m.Slug, "rows", odd)
	}
	return out
}

// unrecorded returns the trades the market does not have yet, by the
// rule above: the market's trades within the gap (a second either side)
// are read from the store and from what the writer still holds.
func (c *Collector) unrecorded(ctx context.Context, slug string, g store.Gap, trades []store.MarketTrade) ([]store.MarketTrade, error) {
	if len(trades) == 0 {
		return nil, nil
	}
	from, to := g.From.Truncate(time.Second).Add(-time.Second), g.To.Add(2*time.Second)
	var recorded []store.MarketTrade
	var err error
	// The store and the writer are read together between flushes: a
	// trade a flush is writing is in neither while it runs, and would be
	// recorded twice (the websocket's, and the trades source's copy).
	c.w.betweenFlushes(func() {
		recorded, _, err = c.filler.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true, From: &from, To: &to})
		recorded = append(recorded, c.w.heldTrades(slug)...)
	})
	if err != nil {
		return nil, err
	}
	type key struct {
		outcome, side string
		price, size   float64
		second        int64
	}
	hashes := map[string]bool{}
	fields := map[key]bool{}   // of every trade
	unhashed := map[key]bool{} // of trades without a hash
	note := func(t store.MarketTrade) {
		k := key{t.Outcome, t.Side, t.Price, t.Size, t.Time.Unix()}
		fields[k] = true
		if t.TxHash != "" {
			hashes[t.TxHash] = true
		} else {
			unhashed[k] = true
		}
	}
	for _, t := range recorded {
		note(t)
	}
	var out []store.MarketTrade
	for _, t := range trades {
		k := key{t.Outcome, t.Side, t.Price, t.Size, t.Time.Unix()}
		if t.TxHash != "" && (hashes[t.TxHash] || unhashed[k]) || t.TxHash == "" && fields[k] {
			continue
		}
		note(t)
		out = append(out, t)
	}
	return out, nil
}
