package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/updown/updown/store"
)

// ResolveRequest is the payload of a resolution task (jobs.TypeResolve),
// JSON encoded.
type ResolveRequest struct {
	Slug string `json:"slug"`
}

// ErrNoRetry marks a resolution no retry can mend (the market does not
// exist): the task should be dropped, not retried.
var ErrNoRetry = errors.New("no retry can mend this")

// ErrNotSettled is a market the upstream has not settled yet: retry later.
var ErrNotSettled = errors.New("not settled upstream yet")

// ResolverStore is the part of a store the resolver reads and writes.
type ResolverStore interface {
	GetMarket(ctx context.Context, slug string) (store.Market, error)
	UpsertMarkets(ctx context.Context, markets []store.Market) error
}

// ResolverConfig configures a Resolver. Zero fields take the defaults
// noted.
type ResolverConfig struct {
	Upstreams  Upstreams    // DefaultUpstreams() when zero
	HTTPClient *http.Client // a default client when nil
	Store      ResolverStore
	Logger     *slog.Logger
	Now        func() time.Time // time.Now
	// RequestTimeout bounds one request (5 s); Backoff paces the few
	// retries of each (200 ms doubling to 10 s). The task itself is
	// retried by the queue, with its own backoff, when Resolve fails.
	RequestTimeout time.Duration
	Backoff        Backoff
	// FallbackAfter is how long after a market's end Gamma may leave it
	// unsettled (or unknown) before the coin prices decide the winner
	// (1 h): Up if the end price is at or above the start price, the
	// up/down markets' own rule. Gamma's outcome wins whenever it has one.
	FallbackAfter time.Duration
}

// Resolver settles markets that have ended: winner, coin prices at start
// and end, final volume and liquidity, resolution time.
type Resolver struct {
	cfg   ResolverConfig
	log   *slog.Logger
	gamma *gamma
	spot  *binance
}

// NewResolver validates cfg and returns a resolver.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	if cfg.Store == nil {
		return nil, errors.New("collect: resolver needs a store")
	}
	if cfg.Upstreams == (Upstreams{}) {
		cfg.Upstreams = DefaultUpstreams()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultHTTPClient()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.Backoff == (Backoff{}) {
		cfg.Backoff = Backoff{Base: 200 * time.Millisecond, Max: 10 * time.Second}
	}
	if cfg.FallbackAfter <= 0 {
		cfg.FallbackAfter = time.Hour
	}
	log := cfg.Logger.With("component", "resolver")
	g, err := newUpstream("gamma", cfg.Upstreams.Gamma, cfg.HTTPClient, log, cfg.Now)
	if err != nil {
		return nil, err
	}
	sp, err := newUpstream("binance-spot", cfg.Upstreams.BinanceSpot, cfg.HTTPClient, log, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Resolver{
		cfg:   cfg,
		log:   log,
		gamma: &gamma{u: g, timeout: cfg.RequestTimeout, backoff: cfg.Backoff},
		spot:  &binance{u: sp, kind: store.Spot, timeout: cfg.RequestTimeout, backoff: cfg.Backoff},
	}, nil
}

// Resolve settles the market with the slug and returns it as stored. A
// market resolved already is returned as it is (the task is at least once).
// Errors wrap ErrNoRetry when retrying cannot help and ErrNotSettled when
// the upstream has not settled the market yet; others are upstream or
// store failures worth a retry.
func (r *Resolver) Resolve(ctx context.Context, slug string) (store.Market, error) {
	m, err := r.cfg.Store.GetMarket(ctx, slug)
	if errors.Is(err, store.ErrNotFound) {
		return store.Market{}, fmt.Errorf("resolve %s: %w: %w", slug, ErrNoRetry, err)
	}
	if err != nil {
		return store.Market{}, fmt.Errorf("resolve %s: %w", slug, err)
	}
	if m.Resolved() {
		return m, nil
	}
	now := r.cfg.Now()
	if now.Before(m.EndTime) {
		return store.Market{}, fmt.Errorf("resolve %s: %w: it ends at %s", slug, ErrNotSettled, m.EndTime.Format(time.RFC3339))
	}

	gm, found, err := r.gamma.byID(ctx, m.MarketID)
	if err != nil {
		return store.Market{}, fmt.Errorf("resolve %s: %w", slug, err)
	}
	start, err := r.price(ctx, m, m.StartTime, m.CoinPriceStart)
	if err != nil {
		return store.Market{}, err
	}
	end, err := r.price(ctx, m, m.EndTime, nil)
	if err != nil {
		return store.Market{}, err
	}
	byPrice := store.OutcomeDown
	if end >= start {
		byPrice = store.OutcomeUp
	}
	winner := gm.outcome()
	late := now.Sub(m.EndTime) >= r.cfg.FallbackAfter
	switch {
	case winner != "":
		if winner != byPrice {
			// Upstream settles on its oracle (Chainlink); ours is
			// Binance's price. Upstream's word is the outcome.
			r.log.InfoContext(ctx, "upstream outcome differs from the Binance prices; keeping upstream's",
				"market", slug, "upstream", winner, "start", start, "end", end)
		}
	case late:
		winner = byPrice
		r.log.WarnContext(ctx, "upstream has not settled the market; the coin prices decide",
			"market", slug, "found_upstream", found, "closed_upstream", bool(gm.Closed), "winner", winner, "ended", m.EndTime)
	case !found:
		return store.Market{}, fmt.Errorf("resolve %s: %w: Gamma has no market %s", slug, ErrNotSettled, m.MarketID)
	default:
		return store.Market{}, fmt.Errorf("resolve %s: %w: Gamma market %s closed=%v outcomePrices=%q",
			slug, ErrNotSettled, m.MarketID, bool(gm.Closed), []string(gm.OutcomePrices))
	}

	resolvedAt := now.UTC()
	if t, ok := parseTime(gm.ClosedTime); ok && !t.Before(m.EndTime) && !t.After(now) {
		resolvedAt = t
	}
	m.Winner = &winner
	m.CoinPriceStart = &start
	m.CoinPriceEnd = &end
	m.FinalVolume = gm.volume()
	m.FinalLiquidity = gm.liquidity()
	m.ResolvedAt = &resolvedAt
	m.UpdatedAt = time.Time{} // the store stamps the update
	if err := r.cfg.Store.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		return store.Market{}, fmt.Errorf("resolve %s: store: %w", slug, err)
	}
	r.log.InfoContext(ctx, "market resolved", "market", slug, "winner", winner, "start", start, "end", end)
	return r.cfg.Store.GetMarket(ctx, slug)
}

// price returns the coin's price at the instant: known, when the collector
// recorded it, else from Binance.
func (r *Resolver) price(ctx context.Context, m store.Market, at time.Time, known *float64) (float64, error) {
	if known != nil {
		return *known, nil
	}
	p, ok, err := r.spot.priceAt(ctx, m.Coin, at)
	if err != nil {
		return 0, fmt.Errorf("resolve %s: price at %s: %w", m.Slug, at.Format(time.RFC3339), err)
	}
	if !ok {
		return 0, fmt.Errorf("resolve %s: %w: Binance has no %s price at %s yet", m.Slug, ErrNotSettled, Symbol(m.Coin), at.Format(time.RFC3339))
	}
	return p, nil
}
