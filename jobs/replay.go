package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/store"
)

// Replay loads a market and its tape, every snapshot oldest first with the
// books of the side it trades (and, when the strategy reads them, the other
// outcome's tape and the market's recorded trades), and runs the strategy
// against them.
// Problems a user can mend or should know of (unknown market, unresolved,
// no data, a bad strategy) are a *Failure, and so is recorded data the
// engine cannot replay (replay.ErrBadData: INTERNAL_ERROR); anything else
// is an error worth retrying.
func Replay(ctx context.Context, st store.Store, req replay.Request) (replay.Result, error) {
	m, err := market(ctx, st, req.MarketSlug)
	if err != nil {
		return replay.Result{}, err
	}
	return ReplayMarket(ctx, st, m, req)
}

// ReplayMarket is Replay of m, the record of req's market, read already.
func ReplayMarket(ctx context.Context, st store.Store, m store.Market, req replay.Request) (replay.Result, error) {
	w := req.Window()
	return replayWith(ctx, st, m, req, func(in replay.Input, s replay.Strategy) (replay.Result, error) {
		return replay.RunWindow(in, s, w)
	})
}

// ReplaySums is Replay for the performance and the sums of its round trips
// alone (replay.TradeSums), as a backtest's shard reports them, with the
// record of req's market, which the replay read.
func ReplaySums(ctx context.Context, st store.Store, req replay.Request) (store.Market, replay.Performance, *stats.TradeSums, error) {
	m, err := market(ctx, st, req.MarketSlug)
	if err != nil {
		return m, replay.Performance{}, nil, err
	}
	type out struct {
		perf replay.Performance
		sums *stats.TradeSums
	}
	o, err := replayWith(ctx, st, m, req, func(in replay.Input, s replay.Strategy) (out, error) {
		perf, sums, err := replay.TradeSums(in, s)
		return out{perf, sums}, err
	})
	return m, o.perf, o.sums, err
}

// MarketSeries reads the market with the slug and its snapshot counts
// together (store.GetMarketSeries), as a worker does before it replays it:
// an unknown market is the *Failure Replay answers.
func MarketSeries(ctx context.Context, st store.Store, slug string) (store.Market, store.SeriesCount, error) {
	m, sc, err := store.GetMarketSeries(ctx, st, slug)
	return m, sc, marketErr(slug, err)
}

// market reads the market with the slug (see marketErr).
func market(ctx context.Context, st store.Store, slug string) (store.Market, error) {
	m, err := st.GetMarket(ctx, slug)
	return m, marketErr(slug, err)
}

// marketErr is a failed read of the market with the slug as a replay
// answers it: an unknown market is a *Failure (MARKET_NOT_FOUND).
func marketErr(slug string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &Failure{Code: "MARKET_NOT_FOUND", Message: fmt.Sprintf("market %q does not exist", slug)}
	}
	return fmt.Errorf("load market %s: %w", slug, err)
}

func replayWith[R any](ctx context.Context, st store.Store, m store.Market, req replay.Request,
	run func(replay.Input, replay.Strategy) (R, error)) (R, error) {
	in, err := loadInput(ctx, st, m, req.Strategy)
	if err != nil {
		var zero R
		return zero, err
	}
	res, err := run(in, req.Strategy)
	var re *replay.Error
	if errors.As(err, &re) {
		return res, &Failure{Code: re.Code, Message: re.Message}
	}
	if errors.Is(err, replay.ErrBadData) {
		// The same data fails every try: answered now, not after retries.
		return res, &Failure{Code: "INTERNAL_ERROR", Message: fmt.Sprintf("market %q cannot be replayed: %v", m.Slug, err)}
	}
	if err != nil {
		return res, fmt.Errorf("replay %s: %w", m.Slug, err)
	}
	return res, nil
}

// loadInput reads what a replay of s reads of market m (replay.Needs).
func loadInput(ctx context.Context, st store.Store, m store.Market, s replay.Strategy) (replay.Input, error) {
	in := replay.Input{Market: m}
	var err error
	if in.Tape, err = st.ReadTape(ctx, m.Slug, s.Outcome()); err != nil {
		return in, fmt.Errorf("load snapshots of %s: %w", m.Slug, err)
	}
	needs := s.Needs()
	if needs.OtherBook {
		other := store.OutcomeUp
		if s.Outcome() == store.OutcomeUp {
			other = store.OutcomeDown
		}
		if in.Other, err = st.ReadTape(ctx, m.Slug, other); err != nil {
			return in, fmt.Errorf("load the %s books of %s: %w", other, m.Slug, err)
		}
	}
	if needs.Trades {
		if tp, ok := st.(TradePacker); ok {
			in.Packed, err = tp.PackedTrades(ctx, m.Slug)
		} else {
			in.Trades, _, err = st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
		}
		if err != nil {
			return in, fmt.Errorf("load the trades of %s: %w", m.Slug, err)
		}
		// The gaps say where the trades may be missing (a warning of the
		// answer), however the trades were read.
		if in.Gaps, err = st.ListGaps(ctx, m.Slug); err != nil {
			return in, fmt.Errorf("load the gaps of %s: %w", m.Slug, err)
		}
	}
	return in, nil
}

// TradePacker is a store that keeps markets' recorded trades packed for
// replays (replay.PackTrades), as a worker's cache does, so that a market
// replayed again is not listed and packed again. Replay reads the trades
// through it when the store is one.
type TradePacker interface {
	PackedTrades(ctx context.Context, slug string) (*replay.Trades, error)
}
