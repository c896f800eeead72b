// Package backtest runs one strategy across many resolved markets: the
// task payloads of a multi-market backtest, the per-market shards it fans
// out to the workers, and the aggregation of their results (DESIGN 8). It
// is transport-free: the worker package moves the shards through Asynq.
//
// Decisions where SPEC and DESIGN are silent, pinned by the tests:
//
//   - A market whose replay fails (NO_DATA, MARKET_NOT_FOUND, a timeout)
//     does not fail the batch: its result carries the error code and it
//     counts in markets_tested and markets_failed, not in the sums.
//   - markets_traded counts markets with at least one trade;
//     avg_market_pnl is total_pnl over the markets replayed (traded or
//     not), avg_trade_pnl total_pnl over the trades.
//   - win_rate is winning over all trades ×100, as the replay defines it
//     for one market.
//   - best_market and worst_market are the traded markets with the
//     highest and lowest total_pnl (the newer market on a tie), null when
//     no market traded.
//   - max_drawdown (and max_drawdown_percent) is the largest of the
//     markets' own: every market is a separate run starting from
//     positionSize of capital, so their drawdowns do not add up.
//   - Money is rounded to 6 decimals, as the replay rounds it.
//   - total_fees sums the markets' own total_fees, and is always present,
//     as in a single replay (0 without a fee model: DESIGN 6).
//   - Beside these, the aggregate carries DESIGN 14's statistics of an
//     edge (stats.Edge, and n_markets, n_markets_traded, n_trades) over
//     the markets replayed: n_markets leaves out the failed markets that
//     markets_tested counts. A shard reports the sums of a market's
//     round trips beside its performance (stats.TradeSums, as a sweep's
//     shard keeps them), which the statistics that need each trade read
//     (ev_ci95, sqn, calibration, brier_entry, brier_market); they cross
//     from the shard to the batch only, and are not in the answer's
//     results. A worker older than the sums reported the round trips
//     themselves, which are added up as they are read (a rolling
//     upgrade); a result with neither leaves those statistics null, and
//     ev_per_trade total_pnl over the trades. The daily figures and portfolio_max_drawdown read
//     each market's end_time, which a shard reports beside its
//     performance; a result without one (from a worker older than
//     end_time) leaves them null.
package backtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
)

// Task types. A batch's payload is a Request and its result a Report; a
// shard task's payload is a ShardGroup (see Request.Groups), and its
// result the outcomes of its markets, []jobs.Outcome in order, each a
// MarketResult or the failure a user sees. Both run on the backtest queue.
const (
	TaskType  = "updown:backtest"
	GroupType = "updown:backtest-group"
	// ShardType is the shard task of a batch that an older worker began,
	// whose payload is []replay.Request: workers still run it,
	// so that a batch lives through a rolling upgrade.
	ShardType = "updown:backtest-shards"
)

// ShardGroup is a shard task's payload: markets replayed, in order, with
// one strategy. The strategy travels once a group rather than once a
// market: decoding it cost as much as replaying a 15m market.
type ShardGroup struct {
	Strategy replay.Strategy `json:"strategy"`
	Markets  []string        `json:"markets"`
}

// maxGroups is how many shard tasks a batch fans out at most. A task costs
// a few Redis round trips (enqueue, dequeue, result, announcement) besides
// its replays, several times what the engine spends on a 15m market; so
// markets travel in groups, while there are still enough groups to keep
// every worker busy and to even out their sizes.
const maxGroups = 16

// groupSnapshots is about the snapshots one group is made to replay when
// the markets' window is known: its tasks' round trips then cost little
// beside its replays. 100 markets of 15m make 4 groups, of 1h or longer 16.
// minGroups keeps a batch of short markets on a few workers still.
const (
	groupSnapshots = 75_000
	minGroups      = 4
)

// Groups splits the request's markets into runs of consecutive markets of
// nearly equal size, in order: the same markets make the same groups, so a
// repeated batch reuses its groups' retained results. There are at most
// maxGroups of them, and fewer for markets of a short window (see
// groupSnapshots).
func (r *Request) Groups() []ShardGroup {
	n := len(r.Markets)
	k := min(n, maxGroups)
	if d := r.Strategy.MarketType.Duration(); d > 0 {
		snapshots := n * int(d/store.SnapshotCadence)
		k = min(k, max(minGroups, (snapshots+groupSnapshots-1)/groupSnapshots))
	}
	out := make([]ShardGroup, k)
	for i := range out {
		out[i] = ShardGroup{Strategy: r.Strategy.Strategy, Markets: r.Markets[i*n/k : (i+1)*n/k]}
	}
	return out
}

// MaxMarkets bounds a batch (SPEC 8: the agent targets 1 to 100 markets).
const MaxMarkets = strategy.MaxMarketCount

// CodeTimeout marks a market whose shard did not finish before the batch's
// deadline.
const CodeTimeout = "JOB_TIMEOUT"

// Request is a backtest: one strategy on the given markets, newest first.
type Request struct {
	Strategy strategy.Spec `json:"strategy"`
	Markets  []string      `json:"markets"`
	// Quota, when set, is echoed in the Report: /strategy answers it, and
	// a result fetched later by job id must be the very answer.
	Quota *Quota `json:"quota,omitempty"`
	// Warning, when set, is echoed in the Report as Quota is: the api
	// found fewer markets than were asked for.
	Warning *string `json:"warning,omitempty"`
	// MarketVersions, when set, are the versions of the markets' records
	// as the api read them (their updated_at and store.DataVersion: data
	// appended since makes a new one), one a market in order. They
	// are part of the batch's job id, and of its shards' (GroupVersion),
	// but not of the report: a result kept from before a market was
	// corrected (its winner, an import) is not reused for the market as
	// it is now, as a replay's is not (worker.Job.Version).
	MarketVersions []string `json:"market_versions,omitempty"`
}

// GroupVersion is the version of a group's markets (MarketVersions), for
// its shard's job id: "" when the request carries none (from an api older
// than them), or not one a market.
func (r *Request) GroupVersion(g ShardGroup) string {
	if len(r.MarketVersions) != len(r.Markets) {
		return ""
	}
	at := make(map[string]string, len(r.Markets))
	for i, m := range r.Markets {
		at[m] = r.MarketVersions[i]
	}
	var b strings.Builder
	for _, m := range g.Markets {
		b.WriteString(at[m])
		b.WriteByte(0)
	}
	return b.String()
}

// Normalize checks that the request can run, 1 to MaxMarkets distinct
// markets and a valid strategy, and normalizes the strategy (a no-op for
// one the api normalized before enqueueing).
func (r *Request) Normalize() error {
	if err := r.Strategy.Normalize(); err != nil {
		return fmt.Errorf("backtest: strategy: %w", err)
	}
	if n := len(r.Markets); n == 0 || n > MaxMarkets {
		return fmt.Errorf("backtest: %d markets: a batch has 1 to %d", n, MaxMarkets)
	}
	seen := make(map[string]bool, len(r.Markets))
	for _, m := range r.Markets {
		if m == "" || seen[m] {
			return fmt.Errorf("backtest: market %q is empty or repeated", m)
		}
		seen[m] = true
	}
	return nil
}

// Quota is the caller's monthly Backtest AI quota (DESIGN 8). Limit and
// Remaining are null for an unlimited plan.
type Quota struct {
	Used      int    `json:"used"`
	Limit     *int   `json:"limit"`
	Remaining *int   `json:"remaining"`
	ResetsAt  string `json:"resets_at"`
}

// MarketResult is one market of a backtest: its replay's performance and
// the market's end_time, or the error that stopped it.
type MarketResult struct {
	Slug string `json:"slug"`
	// EndTime is the market's end_time (RFC 3339, UTC, as a replay writes
	// it), which places the market in the aggregate's days; absent with an
	// error, and from a worker older than it.
	EndTime     string              `json:"end_time,omitempty" format:"date-time" doc:"The market's end_time."`
	Performance *replay.Performance `json:"performance,omitempty"`
	Error       *jobs.Failure       `json:"error,omitempty"`
	// Sums are the sums of the market's round trips, as its shard
	// reports them for the aggregate's per-trade statistics, of a fixed
	// size however many trades the market made (as a sweep's shard keeps
	// them); Collect leaves them out of the report's results.
	Sums *stats.TradeSums `json:"sums,omitempty" hidden:"true"`
	// Trips are the round trips themselves, as a worker older than the
	// sums reported them (a rolling upgrade): read, added up, never
	// written.
	Trips []replay.RoundTrip `json:"trips,omitempty" hidden:"true"`
}

// Report is a finished backtest: the data of /strategy and /run.
type Report struct {
	GeneratedStrategy strategy.Spec  `json:"generated_strategy"`
	StrategyCode      string         `json:"strategy_code"`
	Aggregate         Aggregate      `json:"aggregate"`
	Results           []MarketResult `json:"results"`
	Quota             *Quota         `json:"quota,omitempty"`
	// Warning says the backtest ran on fewer markets than were asked for
	// (the request's Warning); null otherwise.
	Warning *string `json:"warning"`
}

// AppendJSON writes the report as the api answers it, with < and > as they
// are (conditions and strategy codes are full of them), so that the api
// and GET /v1/jobs/{id} hand the worker's bytes on as they are.
func (r Report) AppendJSON(b []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("backtest: encode report: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Collect builds the report of req from its markets' results, one per
// market in req's order (Ungroup). It clears their Sums, which the
// aggregate reads and the answer leaves out.
func Collect(req Request, results []MarketResult) (Report, error) {
	if len(results) != len(req.Markets) {
		return Report{}, fmt.Errorf("backtest: %d results for %d markets", len(results), len(req.Markets))
	}
	agg := Summarize(results, req.Strategy.Strategy.PositionSize)
	for i := range results {
		results[i].Sums, results[i].Trips = nil, nil // the aggregate's input, not the answer's
	}
	return Report{
		GeneratedStrategy: req.Strategy,
		StrategyCode:      strategy.FormatCode(req.Strategy.Rules),
		Aggregate:         agg,
		Results:           results,
		Quota:             req.Quota,
		Warning:           req.Warning,
	}, nil
}

// timedOut is the result of a market whose shard did not finish before
// the batch's deadline.
func timedOut(slug string) MarketResult {
	return MarketResult{Slug: slug, Error: Unfinished()}
}

// Unfinished is the failure of a market whose replay did not finish before
// the backtest's deadline.
func Unfinished() *jobs.Failure {
	return &jobs.Failure{Code: CodeTimeout, Message: "this market's replay did not finish before the backtest's deadline"}
}

// marketResult reads one market's outcome (RunShard's); nil is a market
// that did not finish in time.
func marketResult(slug string, o *jobs.Outcome) (MarketResult, error) {
	switch {
	case o == nil:
		return timedOut(slug), nil
	case o.Failure != nil:
		return MarketResult{Slug: slug, Error: o.Failure}, nil
	}
	data, err := o.Data() // a large outcome may come still deflated
	if err != nil {
		return MarketResult{}, fmt.Errorf("backtest: result of %s: %w", slug, err)
	}
	var r MarketResult
	if err := json.Unmarshal(data, &r); err != nil {
		return MarketResult{}, fmt.Errorf("backtest: decode result of %s: %w", slug, err)
	}
	if r.Performance == nil {
		return MarketResult{}, fmt.Errorf("backtest: result of %s has no performance", slug)
	}
	r.Slug = slug
	return r, nil
}

// Aggregate is the combined performance of a backtest (DESIGN 8) and the
// statistics of its edge (DESIGN 14); see the package documentation for
// how each figure is defined.
type Aggregate struct {
	MarketsTested      int        `json:"markets_tested"`
	MarketsFailed      int        `json:"markets_failed"`
	MarketsTraded      int        `json:"markets_traded"`
	TotalTrades        int        `json:"total_trades"`
	WinningTrades      int        `json:"winning_trades"`
	LosingTrades       int        `json:"losing_trades"`
	WinRate            float64    `json:"win_rate"`
	TotalPnL           float64    `json:"total_pnl"`
	TotalFees          float64    `json:"total_fees"`
	AvgMarketPnL       float64    `json:"avg_market_pnl"`
	AvgTradePnL        float64    `json:"avg_trade_pnl"`
	BestMarket         *MarketPnL `json:"best_market"`
	WorstMarket        *MarketPnL `json:"worst_market"`
	MaxDrawdown        float64    `json:"max_drawdown"`
	MaxDrawdownPercent float64    `json:"max_drawdown_percent"`

	NMarkets       int `json:"n_markets" doc:"Markets replayed (markets_tested less markets_failed)."`
	NMarketsTraded int `json:"n_markets_traded" doc:"Markets with at least one trade."`
	NTrades        int `json:"n_trades" doc:"Round trips."`
	stats.Edge
}

// MarketPnL names a market and its total pnl.
type MarketPnL struct {
	Slug     string  `json:"slug"`
	TotalPnL float64 `json:"total_pnl"`
}

// Summarize combines per-market results (newest first) of a strategy of
// the given positionSize, which scales the daily returns. It is a pure
// function of its input.
func Summarize(results []MarketResult, positionSize float64) Aggregate {
	a := Aggregate{MarketsTested: len(results)}
	var total, fees float64
	replayed := 0
	markets := make([]stats.Market, 0, len(results))
	for _, r := range results {
		p := r.Performance
		if r.Error != nil || p == nil {
			a.MarketsFailed++
			continue
		}
		replayed++
		markets = append(markets, statsMarket(r))
		total += p.TotalPnL
		fees += p.TotalFees
		a.TotalTrades += p.TotalTrades
		a.WinningTrades += p.WinningTrades
		a.LosingTrades += p.LosingTrades
		a.MaxDrawdown = math.Max(a.MaxDrawdown, p.MaxDrawdown)
		a.MaxDrawdownPercent = math.Max(a.MaxDrawdownPercent, p.MaxDrawdownPercent)
		if p.TotalTrades == 0 {
			continue
		}
		a.MarketsTraded++
		// Strict comparisons keep the first (newest) market on a tie.
		if a.BestMarket == nil || p.TotalPnL > a.BestMarket.TotalPnL {
			a.BestMarket = &MarketPnL{Slug: r.Slug, TotalPnL: p.TotalPnL}
		}
		if a.WorstMarket == nil || p.TotalPnL < a.WorstMarket.TotalPnL {
			a.WorstMarket = &MarketPnL{Slug: r.Slug, TotalPnL: p.TotalPnL}
		}
	}
	a.TotalPnL = round6(total)
	a.TotalFees = round6(fees)
	if replayed > 0 {
		a.AvgMarketPnL = round6(total / float64(replayed))
	}
	if a.TotalTrades > 0 {
		a.AvgTradePnL = round6(total / float64(a.TotalTrades))
		a.WinRate = round6(100 * float64(a.WinningTrades) / float64(a.TotalTrades))
	}
	s := stats.Aggregate(markets, positionSize)
	a.NMarkets, a.NMarketsTraded, a.NTrades, a.Edge = s.NMarkets, s.NMarketsTraded, s.NTrades, s.Edge
	return a
}

// statsMarket is a replayed market as the statistics read it: its totals
// and counts, its round trips' sums when the result carries them, and its end
// time when the result names one.
func statsMarket(r MarketResult) stats.Market {
	p := r.Performance
	m := stats.Market{Slug: r.Slug, PnL: p.TotalPnL, Fees: p.TotalFees, NTrades: p.TotalTrades, Wins: p.WinningTrades}
	switch {
	case r.Sums != nil:
		m.Sums = r.Sums
	case len(r.Trips) > 0:
		m.Sums = replay.SumTrips(r.Trips) // an older worker's
	case p.TotalTrades > 0:
		m.Sums = &stats.TradeSums{} // none reported: the per-trade figures are null
	}
	if end, err := time.Parse(time.RFC3339Nano, r.EndTime); err == nil {
		m.End = end
	}
	return m
}

// endTimeLayout writes end_time as a replay writes times: RFC 3339 in UTC
// with six decimals.
const endTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// round6 rounds money to 6 decimals, as the replay does at its edge.
func round6(x float64) float64 {
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0 // no -0 in JSON
	}
	return r
}

// RunShard replays one market as a shard task does and returns the outcome
// the batch records: the market's performance and its round trips' sums
// (the trades and the equity curve are never rendered; what crosses Redis
// is about a kilobyte a market, however many trades it made), or the
// failure a user sees
// (an unknown market, no data). Other errors are faults worth a retry.
func RunShard(ctx context.Context, st store.Store, sh replay.Request) (jobs.Outcome, error) {
	m, perf, sums, err := jobs.ReplaySums(ctx, st, sh)
	var f *jobs.Failure
	switch {
	case errors.As(err, &f):
		return jobs.Outcome{Failure: f}, nil
	case err != nil:
		return jobs.Outcome{}, err
	}
	r := MarketResult{Slug: sh.MarketSlug, EndTime: m.EndTime.UTC().Format(endTimeLayout), Performance: &perf, Sums: sums}
	raw, err := json.Marshal(r)
	if err != nil {
		return jobs.Outcome{}, fmt.Errorf("backtest: encode shard result: %w", err)
	}
	return jobs.Outcome{Result: raw}, nil
}

// Requests are the group's replays, a market each, in order: what
// RunShard runs.
func (g ShardGroup) Requests() []replay.Request {
	shards := make([]replay.Request, len(g.Markets))
	for i, slug := range g.Markets {
		shards[i] = replay.Request{MarketSlug: slug, Strategy: g.Strategy}
	}
	return shards
}

// Ungroup turns the outcomes of group tasks into the markets' results, in
// the order of the groups: a group without an outcome (unfinished, nil)
// leaves its markets timed out, a group that failed as a whole gives each
// of its markets its failure. A group's result, []jobs.Outcome of
// RunShard's, is decoded in one pass, each market's result as it is read.
func Ungroup(groups []ShardGroup, outcomes []*jobs.Outcome) ([]MarketResult, error) {
	if len(outcomes) != len(groups) {
		return nil, fmt.Errorf("backtest: %d outcomes for %d groups", len(outcomes), len(groups))
	}
	markets := 0
	for _, g := range groups {
		markets += len(g.Markets)
	}
	out := make([]MarketResult, 0, markets)
	for i, g := range groups {
		o := outcomes[i]
		switch {
		case o == nil:
			for _, slug := range g.Markets {
				out = append(out, timedOut(slug))
			}
			continue
		case o.Failure != nil:
			for _, slug := range g.Markets {
				out = append(out, MarketResult{Slug: slug, Error: o.Failure})
			}
			continue
		}
		data, err := o.Data() // a large outcome may come still deflated
		if err != nil {
			return nil, fmt.Errorf("backtest: the outcomes of group %d: %w", i, err)
		}
		var each []struct {
			Failure *jobs.Failure `json:"failure"`
			Result  *MarketResult `json:"result"`
		}
		if err := json.Unmarshal(data, &each); err != nil {
			return nil, fmt.Errorf("backtest: decode the outcomes of group %d: %w", i, err)
		}
		if len(each) != len(g.Markets) {
			return nil, fmt.Errorf("backtest: group %d has %d outcomes for %d markets", i, len(each), len(g.Markets))
		}
		for j, e := range each {
			slug := g.Markets[j]
			switch {
			case e.Failure != nil:
				out = append(out, MarketResult{Slug: slug, Error: e.Failure})
			case e.Result == nil || e.Result.Performance == nil:
				return nil, fmt.Errorf("backtest: result of %s has no performance", slug)
			default:
				out = append(out, MarketResult{Slug: slug, EndTime: e.Result.EndTime, Performance: e.Result.Performance, Sums: e.Result.Sums, Trips: e.Result.Trips})
			}
		}
	}
	return out, nil
}

// Direct computes req's report here, market after market, without a
// queue: the reference a sharded batch must equal.
func Direct(ctx context.Context, st store.Store, req Request) (Report, error) {
	shards := ShardGroup{Strategy: req.Strategy.Strategy, Markets: req.Markets}.Requests()
	results := make([]MarketResult, len(shards))
	for i, sh := range shards {
		o, err := RunShard(ctx, st, sh)
		if err != nil {
			return Report{}, err
		}
		if results[i], err = marketResult(sh.MarketSlug, &o); err != nil {
			return Report{}, err
		}
	}
	return Collect(req, results)
}
