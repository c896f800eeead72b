package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// ResolveRequest is the payload of a resolution task (jobs.TypeResolve),
// JSON encoded. Verify counts the checks of a market resolved before
// Polymarket's verdict (see AwaitsVerdict); 0 for the first resolution.
type ResolveRequest struct {
	Slug   string `json:"slug"`
	Verify int    `json:"verify,omitempty"`
}

// AwaitsVerdict reports whether a resolved market still lacks Polymarket's
// own verdict and reference prices: it was settled by the series' rule
// because Polymarket had not published in time, and a later look at Gamma
// may correct it.
func AwaitsVerdict(m store.Market) bool { return m.Resolved() && m.FinalPrice == nil }

// ErrNoRetry marks a resolution no retry can mend (the market does not
// exist): the task should be dropped, not retried.
var ErrNoRetry = errors.New("no retry can mend this")

// ErrNotSettled is a market the upstream has not settled yet: retry later.
var ErrNotSettled = errors.New("not settled upstream yet")

// ResolverStore is the part of a store the resolver reads and writes.
type ResolverStore interface {
	GetMarket(ctx context.Context, slug string) (store.Market, error)
	SwapMarket(ctx context.Context, m store.Market, was time.Time) (store.Market, bool, error)
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
	// FallbackAfter is how long after a market's end Polymarket may leave
	// it unsettled, or its reference prices unpublished, before the
	// series' own rule settles it (1 h; Polymarket settles within ~90 s
	// for 5m/15m and ~13 min for hourly and daily): hourly, the Binance 1h
	// candle's open and close; daily, the Binance 1m candle closes at 12:00
	// ET day over day (equal is 50-50); 5m, 15m and 4h, the recorded
	// reference prices at start and end. Polymarket's verdict wins whenever
	// it has one, and corrects a fallback when it arrives later.
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
// market resolved already is returned as it is (the task is at least
// once), unless it awaits Polymarket's verdict (AwaitsVerdict): then Gamma
// is asked again and the market corrected when the verdict has arrived.
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
	if m.Resolved() && !AwaitsVerdict(m) {
		return m, nil
	}
	now := r.cfg.Now()
	if now.Before(m.EndTime) {
		return store.Market{}, fmt.Errorf("resolve %s: %w: it ends at %s", slug, ErrNotSettled, m.EndTime.Format(time.RFC3339))
	}
	before := m

	f, found, err := r.lookup(ctx, m)
	if err != nil {
		return store.Market{}, fmt.Errorf("resolve %s: %w", slug, err)
	}
	if found {
		applyDetails(&m, f)
	}
	verdict := f.market.outcome()
	published := m.PriceToBeat != nil && m.FinalPrice != nil
	late := now.Sub(m.EndTime) >= r.cfg.FallbackAfter
	// A verdict that contradicts the series' rule waits this long after
	// the end for the reference prices that would confirm it, then wins.
	verdictWaited := now.Sub(m.EndTime) >= 4*r.cfg.FallbackAfter
	var winner, source string
	var start, end float64
	switch {
	case verdict != "" && published:
		winner, source = verdict, series.SettlementSource(m.MarketType)
		start, end = *m.PriceToBeat, *m.FinalPrice
		if rule := ruleWinner(m.MarketType, start, end); rule != verdict {
			r.log.WarnContext(ctx, "Polymarket's verdict differs from its own reference prices; keeping the verdict",
				"market", slug, "verdict", verdict, "price_to_beat", start, "final_price", end)
		}
	case m.Resolved() && (verdict == "" || verdict == *m.Winner || !verdictWaited):
		// Settled by the rule before; Polymarket has still not spoken,
		// or has given a verdict whose prices may yet come. (One that
		// contradicts the rule and whose prices never came is kept, as
		// for a market not settled before: the default case.)
		if verdict != "" && verdict != *m.Winner {
			r.log.WarnContext(ctx, "Polymarket's verdict differs from the fallback; waiting for its reference prices to correct it",
				"market", slug, "verdict", verdict, "fallback", *m.Winner)
		}
		return before, nil
	case !late && !found:
		return store.Market{}, fmt.Errorf("resolve %s: %w: Gamma has no market %s (upstream slug %q)", slug, ErrNotSettled, m.MarketID, m.UpstreamSlug)
	case !late:
		return store.Market{}, fmt.Errorf("resolve %s: %w: Gamma market %s closed=%v outcomePrices=%q priceToBeat=%v finalPrice=%v",
			slug, ErrNotSettled, m.MarketID, bool(f.market.Closed), []string(f.market.OutcomePrices), fmtPtr(m.PriceToBeat), fmtPtr(m.FinalPrice))
	default:
		// Polymarket has not published in time: the series' own rule.
		start, end, source, err = r.rulePrices(ctx, m)
		if err != nil {
			return store.Market{}, err
		}
		winner = ruleWinner(m.MarketType, start, end)
		if verdict != "" && verdict != winner {
			if !verdictWaited {
				return store.Market{}, fmt.Errorf("resolve %s: %w: verdict %s but %s prices %v → %v say %s; waiting for Polymarket's reference prices",
					slug, ErrNotSettled, verdict, source, start, end, winner)
			}
			r.log.ErrorContext(ctx, "Polymarket's verdict contradicts the series' rule and its prices never came; keeping the verdict",
				"market", slug, "verdict", verdict, "source", source, "start", start, "end", end)
		}
		if verdict != "" {
			winner = verdict
		}
		r.log.WarnContext(ctx, "Polymarket has not published the settlement; the series' rule decides until it does",
			"market", slug, "found_upstream", found, "closed_upstream", bool(f.market.Closed), "winner", winner,
			"source", source, "start", start, "end", end, "ended", m.EndTime)
	}

	resolvedAt := now.UTC()
	if t, ok := parseTime(f.market.ClosedTime); ok && !t.Before(m.EndTime) && !t.After(now) {
		resolvedAt = t
	}
	if before.Resolved() {
		if *before.Winner != winner {
			r.log.WarnContext(ctx, "Polymarket's verdict corrects the fallback", "market", slug,
				"was", *before.Winner, "now", winner, "was_source", before.ResolutionSource)
		}
		if before.ResolvedAt != nil {
			resolvedAt = *before.ResolvedAt
		}
	}
	// Written onto the market as it is now, not as it was read before the
	// upstream lookups: what the collector wrote meanwhile (a tick change,
	// price_to_beat) stays, and a run of this task that settled the market
	// meanwhile is not undone.
	stored, changed, err := store.EditMarket(ctx, r.cfg.Store, slug, func(cur *store.Market) bool {
		if cur.Resolved() && !AwaitsVerdict(*cur) {
			return false
		}
		if found {
			applyDetails(cur, f)
		}
		if verdict == "" {
			// Settled by the series' rule while Polymarket keeps the
			// market open: it awaits the verdict (AwaitsVerdict), even
			// if the event shows a final price already (a settlement
			// held up), so that it is looked at again and corrected.
			cur.FinalPrice = nil
		}
		cur.Winner = &winner
		cur.CoinPriceStart = &start
		cur.CoinPriceEnd = &end
		cur.ResolutionSource = source
		if v := f.market.volume(); v != nil || cur.FinalVolume == nil {
			cur.FinalVolume = v
		}
		if l := f.market.liquidity(); l != nil || cur.FinalLiquidity == nil {
			cur.FinalLiquidity = l
		}
		cur.ResolvedAt = &resolvedAt
		return true
	})
	if err != nil {
		return store.Market{}, fmt.Errorf("resolve %s: store: %w", slug, err)
	}
	if !changed {
		r.log.InfoContext(ctx, "market settled meanwhile by another run; kept as it is", "market", slug,
			"winner", fmtPtr(stored.Winner), "source", stored.ResolutionSource)
		return stored, nil
	}
	r.log.InfoContext(ctx, "market resolved", "market", slug, "winner", winner, "source", source,
		"start", start, "end", end, "lag", now.Sub(m.EndTime).Round(time.Millisecond).String())
	return stored, nil
}

func fmtPtr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// lookup finds the market on Gamma the ways that work once it has closed:
// by its upstream slug through /events, else by id with closed=true.
func (r *Resolver) lookup(ctx context.Context, m store.Market) (gammaFound, bool, error) {
	if m.UpstreamSlug != "" {
		f, found, err := r.gamma.bySlug(ctx, m.UpstreamSlug)
		if err != nil || found {
			return f, found, err
		}
	}
	if m.MarketID == "" {
		return gammaFound{}, false, nil
	}
	return r.gamma.byID(ctx, m.MarketID)
}

// ruleWinner is the series' rule: daily markets compare closes (equal is
// 50-50); the others are Up when the end is at or above the start.
func ruleWinner(mt store.MarketType, start, end float64) string {
	switch {
	case end > start:
		return store.OutcomeUp
	case end < start:
		return store.OutcomeDown
	case mt == store.H24:
		return store.OutcomeFiftyFifty
	}
	return store.OutcomeUp
}

// rulePrices returns the market's start and end reference prices by the
// series' own rule, and the source that names it: hourly, the Binance 1h
// candle that opens at the start; daily, the closes of the Binance 1m
// candles that open at the start and at the end (12:00 ET); the others,
// the recorded reference price at start and end.
func (r *Resolver) rulePrices(ctx context.Context, m store.Market) (start, end float64, source string, err error) {
	notYet := func(what string) error {
		return fmt.Errorf("resolve %s: %w: Binance has no final %s %s yet", m.Slug, ErrNotSettled, Symbol(m.Coin), what)
	}
	switch m.MarketType {
	case store.H1:
		o, c, ok, err := r.spot.candle(ctx, m.Coin, "1h", m.StartTime)
		if err != nil {
			return 0, 0, "", fmt.Errorf("resolve %s: 1h candle: %w", m.Slug, err)
		}
		if !ok {
			return 0, 0, "", notYet("1h candle at " + m.StartTime.Format(time.RFC3339))
		}
		return o, c, store.SourceBinance1h, nil
	case store.H24:
		var closes [2]float64
		for i, at := range []time.Time{m.StartTime, m.EndTime} {
			_, c, ok, err := r.spot.candle(ctx, m.Coin, "1m", at)
			if err != nil {
				return 0, 0, "", fmt.Errorf("resolve %s: 1m candle: %w", m.Slug, err)
			}
			if !ok {
				return 0, 0, "", notYet("1m candle at " + at.Format(time.RFC3339))
			}
			closes[i] = c
		}
		return closes[0], closes[1], store.SourceBinance1mNoonET, nil
	}
	if start, err = r.price(ctx, m, m.StartTime, m.CoinPriceStart); err != nil {
		return 0, 0, "", err
	}
	if end, err = r.price(ctx, m, m.EndTime, nil); err != nil {
		return 0, 0, "", err
	}
	return start, end, store.SourceRecorded, nil
}

// price returns the coin's recorded reference price at the instant: known,
// when the collector recorded it, else the open of Binance's 1 s candle.
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
