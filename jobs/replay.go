package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Replay loads a market and its tape, every snapshot oldest first with the
// books of the side it trades, and runs the strategy against them.
// Problems a user can mend or should know of (unknown market, unresolved,
// no data, a bad strategy) are a *Failure; anything else is an error worth
// retrying.
func Replay(ctx context.Context, st store.Store, req replay.Request) (replay.Result, error) {
	return replayWith(ctx, st, req, replay.RunTape)
}

// ReplayPerformance is Replay for the performance alone, as a backtest's
// shard reports it.
func ReplayPerformance(ctx context.Context, st store.Store, req replay.Request) (replay.Performance, error) {
	return replayWith(ctx, st, req, replay.RunPerformance)
}

func replayWith[R any](ctx context.Context, st store.Store, req replay.Request,
	run func(store.Market, *store.Tape, replay.Strategy) (R, error)) (R, error) {
	var zero R
	m, err := st.GetMarket(ctx, req.MarketSlug)
	if errors.Is(err, store.ErrNotFound) {
		return zero, &Failure{Code: "MARKET_NOT_FOUND", Message: fmt.Sprintf("market %q does not exist", req.MarketSlug)}
	}
	if err != nil {
		return zero, fmt.Errorf("load market %s: %w", req.MarketSlug, err)
	}
	tape, err := st.ReadTape(ctx, m.Slug, req.Strategy.Outcome())
	if err != nil {
		return zero, fmt.Errorf("load snapshots of %s: %w", m.Slug, err)
	}
	res, err := run(m, tape, req.Strategy)
	var re *replay.Error
	if errors.As(err, &re) {
		return res, &Failure{Code: re.Code, Message: re.Message}
	}
	if err != nil {
		return res, fmt.Errorf("replay %s: %w", m.Slug, err)
	}
	return res, nil
}
