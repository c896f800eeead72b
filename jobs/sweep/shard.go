package sweep

import (
	"fmt"

	"github.com/updown/updown/jobs/replay"
)

// Shard is the work of one sweep task: one market × every trial (DESIGN
// 14), so that the market's snapshots are read and decoded once and every
// trial runs over them. It carries the strategy once and each trial's
// values, in trial order.
type Shard struct {
	Sweep  string          `json:"sweep"`
	Market string          `json:"market"`
	Base   replay.Strategy `json:"strategy"`
	Paths  []string        `json:"paths"`
	Trials [][]any         `json:"trials"`
}

// Shards returns the plan's shards for its markets, one a market.
func (p *Plan) Shards(sweepID string, markets []string) []Shard {
	paths := paths(p.Request.Parameters)
	values := make([][]any, len(p.Trials))
	for i, t := range p.Trials {
		values[i] = t.Values
	}
	out := make([]Shard, len(markets))
	for i, m := range markets {
		out[i] = Shard{Sweep: sweepID, Market: m, Base: p.Request.Strategy, Paths: paths, Trials: values}
	}
	return out
}

// Strategies builds the shard's trials' strategies, in trial order.
func (s Shard) Strategies() ([]replay.Strategy, error) {
	out := make([]replay.Strategy, len(s.Trials))
	for i, v := range s.Trials {
		if len(v) != len(s.Paths) {
			return nil, fmt.Errorf("sweep: shard trial %d has %d values for %d paths", i, len(v), len(s.Paths))
		}
		st, err := Apply(s.Base, s.Paths, v)
		if err != nil {
			return nil, fmt.Errorf("sweep: shard trial %d: %w", i, err)
		}
		out[i] = st
	}
	return out, nil
}
