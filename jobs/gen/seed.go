package gen

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/updown/updown/store"
)

// Writer is the part of a store that Seed writes through. Every store.Store
// is one; tests can pass something smaller.
type Writer interface {
	UpsertMarkets(ctx context.Context, markets []store.Market) error
	AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error)
	AppendDepth(ctx context.Context, snaps []store.DepthSnapshot) error
	AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error)
	RecordGaps(ctx context.Context, slug string, gaps []store.Gap) (int, error)
}

var _ Writer = store.Store(nil)

// Stats counts what Seed wrote.
type Stats struct {
	Markets    int // markets, resolved or not
	Unresolved int // of those, live at Now or awaiting resolution
	NoData     int // resolved markets without snapshots (the collector outage)
	Snapshots  int
	Trades     int // Polymarket trades of the markets
	Gaps       int // recording gaps of the markets (the outage)
	Depth      int // BTCUSDT spot and futures depth snapshots
}

// Seed generates the data of cfg and writes it into w: see Generator.Seed.
func Seed(ctx context.Context, cfg Config, w Writer) (Stats, error) {
	g, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	return g.Seed(ctx, w)
}

// Seed writes the generator's markets, their snapshots (at most BatchSize
// per call, each batch's capacity clipped to its length), trades and gaps,
// and the depth history into w. Markets are generated on up to GOMAXPROCS goroutines,
// each writing its own markets' snapshots, so w must be safe for concurrent
// use (as stores are); what is written does not depend on the scheduling,
// only the order of the calls does. Writes are idempotent (stores upsert
// markets and ignore snapshots they already hold), so a Seed that failed
// half way can simply be run again. The first error stops the rest.
func (g *Generator) Seed(ctx context.Context, w Writer) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	markets := g.Markets()
	st := Stats{Markets: len(markets)}
	for batch := range slices.Chunk(markets, g.cfg.BatchSize) {
		if err := w.UpsertMarkets(ctx, batch); err != nil {
			return Stats{}, fmt.Errorf("gen: seed markets: %w", err)
		}
	}
	for _, m := range markets {
		if !m.Resolved() {
			st.Unresolved++
		}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counts := make([]int, len(markets))
	trades, gaps := make([]int, len(markets)), make([]int, len(markets))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(markets)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(markets) || ctx.Err() != nil {
					return
				}
				m := markets[i]
				snaps := g.snapshots(m.Coin, m.MarketType, m.StartTime)
				for batch := range slices.Chunk(snaps, g.cfg.BatchSize) {
					if ctx.Err() != nil {
						return // another market's write failed: stop here too
					}
					if _, err := w.AppendSnapshots(ctx, m.Slug, batch); err != nil {
						cancel(fmt.Errorf("gen: seed snapshots of %s: %w", m.Slug, err))
						return
					}
				}
				counts[i] = len(snaps)
				if err := g.seedActivity(ctx, w, m, &trades[i], &gaps[i]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return Stats{}, err
	}
	for i, n := range counts {
		st.Snapshots += n
		st.Trades += trades[i]
		st.Gaps += gaps[i]
		if n == 0 && markets[i].Resolved() {
			st.NoData++
		}
	}

	for batch := range slices.Chunk(g.DepthHistory(), g.cfg.BatchSize) {
		if err := w.AppendDepth(ctx, batch); err != nil {
			return Stats{}, fmt.Errorf("gen: seed depth: %w", err)
		}
		st.Depth += len(batch)
	}
	return st, nil
}

// seedActivity writes the trades and gaps of market m and counts them.
func (g *Generator) seedActivity(ctx context.Context, w Writer, m store.Market, trades, gaps *int) error {
	tr := g.marketTrades(m.Coin, m.MarketType, m.StartTime)
	for batch := range slices.Chunk(tr, g.cfg.BatchSize) {
		if _, err := w.AppendMarketTrades(ctx, m.Slug, batch); err != nil {
			return fmt.Errorf("gen: seed trades of %s: %w", m.Slug, err)
		}
	}
	gp := g.gaps(m.MarketType, m.StartTime)
	if len(gp) > 0 {
		if _, err := w.RecordGaps(ctx, m.Slug, gp); err != nil {
			return fmt.Errorf("gen: seed gaps of %s: %w", m.Slug, err)
		}
	}
	*trades, *gaps = len(tr), len(gp)
	return nil
}

// WriteMarket generates the market of the coin and type that starts at
// start and writes it, with its snapshots (in one append), into w: one
// market at the configured cadence, as benchmarks and tests want it. It
// returns what it wrote.
func (g *Generator) WriteMarket(ctx context.Context, w Writer, c store.Coin, mt store.MarketType, start time.Time) (store.Market, []store.Snapshot, error) {
	m, err := g.Market(c, mt, start)
	if err != nil {
		return m, nil, err
	}
	snaps, err := g.Snapshots(m)
	if err != nil {
		return m, nil, err
	}
	if err := w.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		return m, nil, fmt.Errorf("gen: write market %s: %w", m.Slug, err)
	}
	if _, err := w.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
		return m, nil, fmt.Errorf("gen: write snapshots of %s: %w", m.Slug, err)
	}
	return m, snaps, nil
}
