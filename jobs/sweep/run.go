package sweep

import (
	"errors"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/store"
)

// MarketData is what a shard reads of its market, once for every trial:
// the record, the tapes of the outcomes its trials trade or read, and the
// recorded trades when a trial reads them (Needs).
type MarketData struct {
	Market   store.Market
	Up, Down *store.Tape
	Trades   []store.MarketTrade
	// Packed is Trades packed once for every trial (replay.PackTrades);
	// nil: each replay packs Trades itself.
	Packed *replay.Trades
}

// DataNeeds says which tapes and whether the trades a shard's trials read.
type DataNeeds struct {
	Up, Down, Trades bool
}

// NeedsOf is what the strategies read of a market, together.
func NeedsOf(strategies []replay.Strategy) DataNeeds {
	var n DataNeeds
	for i := range strategies {
		s := &strategies[i]
		need := s.Needs()
		up := s.Outcome() == store.OutcomeUp
		n.Up = n.Up || up || need.OtherBook
		n.Down = n.Down || !up || need.OtherBook
		n.Trades = n.Trades || need.Trades
	}
	return n
}

// input is d as a replay of s reads it.
func (d MarketData) input(s replay.Strategy) replay.Input {
	in := replay.Input{Market: d.Market, Tape: d.Up, Other: d.Down, Trades: d.Trades, Packed: d.Packed}
	if s.Outcome() == store.OutcomeDown {
		in.Tape, in.Other = d.Down, d.Up
	}
	return in
}

// TrialMarket is one trial's replay of one market: its performance, as
// POST /v1/replay answers it for the same strategy, and the sums of its
// round trips (nil without trades), of a fixed size however many trades
// the replay made; or the code of a replay that could not run (NO_DATA,
// …).
type TrialMarket struct {
	Performance *replay.Performance `json:"performance,omitempty"`
	Sums        *stats.TradeSums    `json:"sums,omitempty"`
	Error       string              `json:"error,omitempty"`
}

// Trip is a round trip as a replay reports it, its money rounded to 6
// decimals.
type Trip = replay.RoundTrip

// RunShard replays every strategy over one market's data, in order: the
// market is read and decoded once, and each trial costs its engine time
// alone. A replay the data cannot serve is that trial's Error; an error
// that is no fault of the request (bad data) fails the shard.
func RunShard(d MarketData, strategies []replay.Strategy) ([]TrialMarket, error) {
	out := make([]TrialMarket, len(strategies))
	for i, s := range strategies {
		perf, sums, err := replay.TradeSums(d.input(s), s)
		var re *replay.Error
		switch {
		case errors.As(err, &re):
			out[i].Error = re.Code
			continue
		case err != nil:
			return nil, err
		}
		out[i].Performance = &perf
		out[i].Sums = sums
	}
	return out, nil
}
