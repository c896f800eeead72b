package gen

import (
	"context"
	"fmt"

	"github.com/updown/updown/store"
)

// LiveWriter is the part of a store.LiveExchange that LoadLive writes
// through. Every store.LiveExchange is one.
type LiveWriter interface {
	SetLatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind, d store.DepthSnapshot) error
	AddTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, trades []store.Trade) error
}

var _ LiveWriter = store.LiveExchange(nil)

// LiveStats counts what LoadLive wrote.
type LiveStats struct {
	Depth  int // latest depth snapshots: one per coin and kind
	Trades int // recent trades, over every coin and kind
}

// LoadLive generates the live exchange data of cfg and writes it into w:
// see Generator.LoadLive.
func LoadLive(ctx context.Context, cfg Config, w LiveWriter) (LiveStats, error) {
	g, err := New(cfg)
	if err != nil {
		return LiveStats{}, err
	}
	return g.LoadLive(ctx, w)
}

// LoadLive writes what a collector keeps live, for every coin of the config
// on spot and futures: the latest depth (Depth at Now) and the
// store.MaxRecentTrades most recent trades. That is what `updown dev`
// serves at /v1/{coin}/{spot,future}/latest and .../trades.
//
// Writes are idempotent (a LiveExchange ignores trade ids it holds and
// depth older than its latest), so loading again, or with a later Now, only
// moves the live data forward: a dev collector can call it on a timer.
func (g *Generator) LoadLive(ctx context.Context, w LiveWriter) (LiveStats, error) {
	var st LiveStats
	for _, m := range g.cfg.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("gen: load live data: %w", err)
			}
			d, err := g.LatestDepth(m.Coin, k)
			if err != nil {
				return st, err
			}
			if err := w.SetLatestDepth(ctx, m.Coin, k, d); err != nil {
				return st, fmt.Errorf("gen: load latest depth of %s %s: %w", m.Coin, k, err)
			}
			st.Depth++
			trades, err := g.Trades(m.Coin, k, store.MaxRecentTrades)
			if err != nil {
				return st, err
			}
			if err := w.AddTrades(ctx, m.Coin, k, trades); err != nil {
				return st, fmt.Errorf("gen: load recent trades of %s %s: %w", m.Coin, k, err)
			}
			st.Trades += len(trades)
		}
	}
	return st, nil
}
