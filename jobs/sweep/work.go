package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// TaskType runs one shard of a stored sweep (queue jobs.QueueSweeps); its
// payload is a ShardTask.
const TaskType = "updown:sweep-shard"

// ShardTask names one shard of a stored sweep: the sweep's request and
// trials are read from the store, so the task stays small whatever the
// sweep's size.
type ShardTask struct {
	Sweep  string `json:"sweep"`
	Market string `json:"market"`
}

// noLimits re-plans a stored sweep, whose size was checked when it was
// accepted.
var noLimits = Limits{Plan: "stored", Trials: math.MaxUint64, Markets: math.MaxUint64, Replays: math.MaxUint64}

// PlanOf re-plans a stored sweep from its normalized request.
func PlanOf(sw store.Sweep) (Plan, error) {
	r, err := Decode(sw.Request)
	if err != nil {
		return Plan{}, fmt.Errorf("sweep %s: decode its request: %w", sw.ID, err)
	}
	p, err := r.Normalize(noLimits)
	if err != nil {
		return Plan{}, fmt.Errorf("sweep %s: plan its request: %w", sw.ID, err)
	}
	if len(p.Trials) != sw.TrialCount {
		return Plan{}, fmt.Errorf("sweep %s: its request plans %d trials, it was stored with %d", sw.ID, len(p.Trials), sw.TrialCount)
	}
	return p, nil
}

// Plans keeps the plans of the sweeps a worker is running, so that each of
// a sweep's shards does not decode and validate every trial again (10,000
// trials take about a third of a second, as long as the shard's replays
// of a 15m market). A stored sweep's request never changes, so a plan is
// keyed by the sweep's id. It holds at most a few plans; the zero value is
// ready to use and safe for concurrent use.
type Plans struct {
	mu    sync.Mutex
	plans map[string]Plan
	order []string // oldest first
}

// maxPlans bounds Plans: a worker runs shards of a few sweeps at once.
const maxPlans = 8

// of returns sw's plan, planning it once.
func (ps *Plans) of(sw store.Sweep) (Plan, error) {
	if ps == nil {
		return PlanOf(sw)
	}
	ps.mu.Lock()
	p, ok := ps.plans[sw.ID]
	ps.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := PlanOf(sw)
	if err != nil {
		return Plan{}, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.plans == nil {
		ps.plans = map[string]Plan{}
	}
	if _, ok := ps.plans[sw.ID]; !ok {
		ps.plans[sw.ID] = p
		ps.order = append(ps.order, sw.ID)
		if len(ps.order) > maxPlans {
			delete(ps.plans, ps.order[0])
			ps.order = ps.order[1:]
		}
	}
	return p, nil
}

// ErrStopped is a shard that found its sweep cancelled or ended: there is
// nothing to do, and nothing to retry.
var ErrStopped = errors.New("sweep: the sweep is no longer running")

// Work runs one shard: it reads the sweep and its market once, replays
// every trial over it, and stores the results; the shard that completes
// the sweep gathers every shard and finishes it (Finish). Running a shard
// twice stores and counts it once. ctx's cancellation stops it between
// trials. plans (nil: none) keeps the sweep's plan for its other shards.
func Work(ctx context.Context, st store.Store, task ShardTask, plans *Plans) error {
	return WorkYielding(ctx, st, task, plans, nil)
}

// Yield is called between a shard's trials: it returns at once when the
// shard may go on, blocks while work that comes first runs (a worker's
// replays, DESIGN 14), and returns ctx's error if ctx ends meanwhile.
type Yield func(ctx context.Context) error

// Fail ends the sweep FAILED, saying why, while it is QUEUED or RUNNING;
// a sweep no longer active (cancelled, done, failed already) is left as
// it is, and that is no error.
func Fail(ctx context.Context, st store.SweepStore, id, reason string) error {
	_, err := st.SetSweepStatus(ctx, id, []store.SweepStatus{store.SweepQueued, store.SweepRunning}, store.SweepFailed, reason)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// WorkYielding is Work calling yield (nil: none) every few trials, so
// that a shard gives way to work of a higher priority within a few
// replays' time.
func WorkYielding(ctx context.Context, st store.Store, task ShardTask, plans *Plans, yield Yield) error {
	sw, err := st.GetSweepInfo(ctx, task.Sweep)
	if err != nil {
		return fmt.Errorf("sweep %s: read it: %w", task.Sweep, err)
	}
	if !sw.Status.Active() {
		return ErrStopped
	}
	p, err := plans.of(sw)
	if err != nil {
		// The stored request no longer plans (a later release validates
		// it otherwise): no shard of it can ever run, and a retry plans it
		// the same. Left RUNNING it held one of its customer's sweeps in
		// flight for the weeks of its shards' retries.
		return errors.Join(err, Fail(ctx, st, sw.ID, "the sweep's request could not be planned again to run it; start it anew"))
	}
	strategies := make([]replay.Strategy, len(p.Trials))
	for i, t := range p.Trials {
		strategies[i] = t.Strategy
	}
	d, err := loadMarket(ctx, st, task.Market, NeedsOf(strategies))
	var out []TrialMarket
	switch {
	case errors.Is(err, store.ErrNotFound):
		// The market went away: every trial says so, as a replay would.
		out = make([]TrialMarket, len(strategies))
		for i := range out {
			out[i].Error = "MARKET_NOT_FOUND"
		}
	case err != nil:
		return err
	default:
		if out, err = runShard(ctx, d, strategies, yield); err != nil {
			return err
		}
	}
	results := EncodeShard(out)
	if err := ctx.Err(); err != nil {
		return err // stopped while encoding (a cancel, a shutdown): nothing stored
	}
	sw, err = st.PutSweepShard(ctx, sw.ID, task.Market, len(strategies), results)
	if errors.Is(err, store.ErrConflict) {
		return ErrStopped
	}
	if err != nil {
		return fmt.Errorf("sweep %s: store the shard of %s: %w", task.Sweep, task.Market, err)
	}
	if sw.ReplaysDone < sw.ReplaysTotal {
		return nil
	}
	return finish(ctx, st, sw, p, yield)
}

// runShard is RunShard stopping between trials when ctx is done, and
// giving way (yield) between them.
func runShard(ctx context.Context, d MarketData, strategies []replay.Strategy, yield Yield) ([]TrialMarket, error) {
	out := make([]TrialMarket, 0, len(strategies))
	const batch = 4 // trials between looks at ctx and yields: a few replays' time
	for lo := 0; lo < len(strategies); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if yield != nil {
			if err := yield(ctx); err != nil {
				return nil, err
			}
		}
		part, err := RunShard(d, strategies[lo:min(lo+batch, len(strategies))])
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// loadMarket reads what the trials read of one market, once.
func loadMarket(ctx context.Context, st store.Store, slug string, need DataNeeds) (MarketData, error) {
	m, err := st.GetMarket(ctx, slug)
	if err != nil {
		return MarketData{}, fmt.Errorf("read market %s: %w", slug, err)
	}
	d := MarketData{Market: m}
	if need.Up {
		if d.Up, err = st.ReadTape(ctx, slug, store.OutcomeUp); err != nil {
			return MarketData{}, fmt.Errorf("read the Up books of %s: %w", slug, err)
		}
	}
	if need.Down {
		if d.Down, err = st.ReadTape(ctx, slug, store.OutcomeDown); err != nil {
			return MarketData{}, fmt.Errorf("read the Down books of %s: %w", slug, err)
		}
	}
	if need.Trades {
		if d.Trades, _, err = st.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true}); err != nil {
			return MarketData{}, fmt.Errorf("read the trades of %s: %w", slug, err)
		}
		d.Packed = replay.PackTrades(d.Trades)
	}
	return d, nil
}

// Finish gathers a complete sweep's shards, summarizes them and stores
// the results (DONE); a sweep whose shards cannot be summarized is FAILED.
// A sweep already finished (another shard's run got there first) is left
// as it is.
func Finish(ctx context.Context, st store.Store, sw store.Sweep, p Plan) error {
	return finish(ctx, st, sw, p, nil)
}

// finish is Finish yielding (nil: never) between the shards it decodes:
// a large sweep's are seconds of work.
func finish(ctx context.Context, st store.Store, sw store.Sweep, p Plan, yield Yield) error {
	res, err := summarizeStored(ctx, st, sw, p, yield)
	if err != nil && (ctx.Err() != nil || errors.Is(err, store.ErrUnavailable)) {
		// Stopped or the store out of reach, not broken: the task runs
		// again (its shard is stored, so it comes straight here) or the
		// sweep was cancelled. A database blip at this last step once
		// failed a sweep whose every replay was done.
		return err
	}
	if err != nil {
		return errors.Join(err, Fail(ctx, st, sw.ID, "the sweep's results could not be summarized"))
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("sweep %s: encode its results: %w", sw.ID, err)
	}
	if err := start(ctx, st, sw); err != nil {
		return err
	}
	if err := st.FinishSweep(ctx, sw.ID, b); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("sweep %s: store its results: %w", sw.ID, err)
	}
	return nil
}

// start moves a sweep still QUEUED to RUNNING, which FinishSweep takes it
// from. The api queues a sweep's shards before it marks the sweep RUNNING,
// and a worker fast enough ran them all in between: its FinishSweep, of a
// QUEUED sweep, was refused, and the sweep sat RUNNING with every replay
// done until SweepResumer found it stalled minutes later. A sweep that
// left QUEUED meanwhile (the api started or cancelled it) is left as it is.
func start(ctx context.Context, st store.SweepStore, sw store.Sweep) error {
	if sw.Status != store.SweepQueued {
		return nil
	}
	_, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("sweep %s: start it: %w", sw.ID, err)
	}
	return nil
}

func summarizeStored(ctx context.Context, st store.Store, sw store.Sweep, p Plan, yield Yield) (Results, error) {
	markets := make([]MarketInfo, 0, len(sw.Markets))
	outcomes := make([][]TrialMarket, 0, len(sw.Markets))
	// The shards are read a few at a time and decoded as they come: a
	// sweep of 2,000,000 replays stores some 700 MB of them, which read
	// whole before the first was decoded sat in memory beside everything
	// decoded from them.
	var decodeErr error // f's own: yield's, or a shard that does not decode
	err := st.EachSweepShard(ctx, sw.ID, func(sh store.SweepShard) error {
		if yield != nil {
			if decodeErr = yield(ctx); decodeErr != nil {
				return decodeErr
			}
		}
		out, err := DecodeShard(sh.Results)
		if err != nil {
			decodeErr = fmt.Errorf("sweep %s: decode the shard of %s: %w", sw.ID, sh.Market, err)
			return decodeErr
		}
		outcomes = append(outcomes, out)
		markets = append(markets, MarketInfo{Slug: sh.Market})
		return nil
	})
	switch {
	case decodeErr != nil:
		return Results{}, decodeErr
	case err != nil:
		return Results{}, fmt.Errorf("sweep %s: read its shards: %w", sw.ID, err)
	}
	if len(outcomes) != len(sw.Markets) {
		return Results{}, fmt.Errorf("sweep %s: %d of %d shards stored", sw.ID, len(outcomes), len(sw.Markets))
	}
	for i := range markets {
		// A market that cannot be read has no end time (its days and the
		// portfolio drawdown are null), but a store out of reach is waited
		// for (finish: the task's retry), not taken for a poorer summary.
		switch m, err := st.GetMarket(ctx, markets[i].Slug); {
		case err == nil:
			markets[i].End = m.EndTime
		case errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil:
			return Results{}, fmt.Errorf("sweep %s: read market %s: %w", sw.ID, markets[i].Slug, err)
		}
	}
	folds, err := p.Request.Split.Cut(len(markets))
	if err != nil {
		return Results{}, fmt.Errorf("sweep %s: split its markets: %w", sw.ID, err)
	}
	return p.summarize(ctx, markets, outcomes, folds, yield)
}
