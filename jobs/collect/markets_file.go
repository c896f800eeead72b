package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// A markets file (`updown markets fetch`, DESIGN 9) is Gamma's own answer
// for the markets of a series, so that the archive importer learns them by
// the collector's client, slug rules and settlement rules.

// FetchConfig configures FetchMarkets. Zero fields take the collector's
// defaults.
type FetchConfig struct {
	Upstreams      Upstreams
	HTTPClient     *http.Client
	Scheme         SlugScheme
	Logger         *slog.Logger
	RequestTimeout time.Duration
	Backoff        Backoff
	// MaxWindows is the most windows FetchMarkets looks up (a request or
	// more each, all held in memory until it returns): a range of more is
	// refused before Gamma is asked, with a *TooManyWindowsError. 0 is
	// DefaultFetchWindows.
	MaxWindows int
}

// DefaultFetchWindows is the most windows FetchMarkets looks up unless
// FetchConfig.MaxWindows says more: 10,000 is some 35 days of a 5m
// series, 27 years of a daily one.
const DefaultFetchWindows = 10_000

// fetchWindowsCounted bounds the count of windows a refused range is told
// as (a range of centuries is "more than" it).
const fetchWindowsCounted = 10_000_000

// TooManyWindowsError is FetchMarkets's refusal of a range of more
// windows than FetchConfig.MaxWindows, before Gamma is asked: 2020 to
// 2026 of btc-5m was some 725,000 requests, all held in memory.
type TooManyWindowsError struct {
	// Windows counts the range's windows; with More, the range has more
	// than Windows (the count stopped there).
	Windows int
	More    bool
	// Max is the most windows that were allowed.
	Max int
}

// Count is the range's windows as a phrase: "288", or "more than
// 10000000".
func (e *TooManyWindowsError) Count() string {
	if e.More {
		return fmt.Sprintf("more than %d", e.Windows)
	}
	return fmt.Sprintf("%d", e.Windows)
}

func (e *TooManyWindowsError) Error() string {
	return fmt.Sprintf("collect: the range is %s windows, at least one Gamma request each: more than the %d allowed at once", e.Count(), e.Max)
}

// FetchResult is what FetchMarkets found.
type FetchResult struct {
	// Events are Gamma's /events answers' events, as Gamma wrote them.
	Events []json.RawMessage
	// Windows counts the windows looked up, Missing those Gamma has no
	// market for.
	Windows, Missing int
	// Stopped is the start of the window whose lookup failed (zero when
	// none did): Events are those of the windows before it.
	Stopped time.Time
}

// oneOffGamma is the Gamma client of a one-off command (markets fetch,
// markets fill-fees): base URL, client, logger (g.u.log), timeout a
// request and backoff as given, or the defaults both commands share where
// unset.
func oneOffGamma(base string, client *http.Client, log *slog.Logger, timeout time.Duration, backoff Backoff) (*gamma, error) {
	if base == "" {
		base = DefaultGammaURL
	}
	if client == nil {
		client = defaultHTTPClient()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if backoff == (Backoff{}) {
		backoff = Backoff{Base: 200 * time.Millisecond, Max: 10 * time.Second}
	}
	u, err := newUpstream("gamma", base, client, log, time.Now)
	if err != nil {
		return nil, err
	}
	return &gamma{u: u, timeout: timeout, backoff: backoff}, nil
}

// countWindows counts the windows of the series that start in [from,
// to), the Gamma requests (at least one each) FetchMarkets would make,
// stopping once past limit (then it returns limit+1) so that a range of
// years is not walked to the end.
func countWindows(scheme SlugScheme, s Series, from, to time.Time, limit int) int {
	start, end := scheme.Window(s.Coin, s.MarketType, from)
	if start.Before(from) {
		start, end = scheme.Window(s.Coin, s.MarketType, end)
	}
	n := 0
	for ; start.Before(to) && n <= limit; start, end = scheme.Window(s.Coin, s.MarketType, end) {
		n++
	}
	return n
}

// FetchMarkets looks up on Gamma the market of every window of the series
// that starts in [from, to), closed ones included (/events answers them),
// by the upstream slugs the scheme gives, and returns Gamma's events as
// they came. A range of more than cfg.MaxWindows windows is refused
// before Gamma is asked (*TooManyWindowsError).
func FetchMarkets(ctx context.Context, cfg FetchConfig, s Series, from, to time.Time) (FetchResult, error) {
	if cfg.Scheme == nil {
		cfg.Scheme = NewPolymarketScheme()
	}
	if !s.Coin.Valid() || !s.MarketType.AvailableFor(s.Coin) {
		return FetchResult{}, fmt.Errorf("collect: no series %s %s", s.Coin, s.MarketType)
	}
	switch {
	case cfg.MaxWindows < 0:
		return FetchResult{}, fmt.Errorf("collect: MaxWindows %d: want 1 or more windows, or 0 for %d", cfg.MaxWindows, DefaultFetchWindows)
	case cfg.MaxWindows == 0:
		cfg.MaxWindows = DefaultFetchWindows
	}
	limit := max(cfg.MaxWindows, fetchWindowsCounted)
	if n := countWindows(cfg.Scheme, s, from, to, limit); n > cfg.MaxWindows {
		return FetchResult{}, &TooManyWindowsError{Windows: min(n, limit), More: n > limit, Max: cfg.MaxWindows}
	}
	g, err := oneOffGamma(cfg.Upstreams.Gamma, cfg.HTTPClient, cfg.Logger, cfg.RequestTimeout, cfg.Backoff)
	if err != nil {
		return FetchResult{}, err
	}
	cfg.Logger = g.u.log
	var res FetchResult
	start, end := cfg.Scheme.Window(s.Coin, s.MarketType, from)
	if start.Before(from) {
		start, end = cfg.Scheme.Window(s.Coin, s.MarketType, end)
	}
	// The upstream slugs that found an earlier window's market: the hour
	// US Eastern repeats when summer time ends has the first one's hourly
	// slug, and no market of its own.
	taken := map[string]bool{}
	for ; start.Before(to); start, end = cfg.Scheme.Window(s.Coin, s.MarketType, end) {
		res.Windows++
		found := false
		for _, slug := range cfg.Scheme.Slugs(s.Coin, s.MarketType, start) {
			if taken[slug] {
				continue
			}
			var events []json.RawMessage
			if err := g.get(ctx, "/events", url.Values{"slug": {slug}}, &events); err != nil {
				res.Windows--
				res.Stopped = start
				return res, fmt.Errorf("collect: Gamma /events?slug=%s: %w", slug, err)
			}
			if len(events) > 0 {
				res.Events = append(res.Events, events...)
				taken[slug] = true
				found = true
				break
			}
		}
		if !found {
			res.Missing++
			cfg.Logger.WarnContext(ctx, "no market on Gamma for a window", "series", string(s.Coin)+" "+string(s.MarketType), "start", start)
		}
	}
	return res, nil
}

// MarketsFromGamma reads Gamma's events (a JSON array, as FetchMarkets
// returns them, or a /markets answer) and returns the markets of the
// scheme's series in them as the collector stores them: SPEC's slug,
// tokens paired with outcomes, fees, tick, and, for a market Gamma shows
// settled with its reference prices published, the winner and prices as
// the resolver sets them. Markets of no series, and those of one that
// cannot be used (no token ids yet), are skipped and counted.
func MarketsFromGamma(data []byte, scheme SlugScheme) ([]store.Market, int, error) {
	if scheme == nil {
		scheme = NewPolymarketScheme()
	}
	data = bytes.TrimSpace(data)
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, 0, fmt.Errorf("collect: a markets file is Gamma's JSON array of events: %w", err)
	}
	var found []gammaFound
	for i, r := range raw {
		var probe struct {
			Markets json.RawMessage `json:"markets"`
		}
		if err := json.Unmarshal(r, &probe); err != nil {
			return nil, 0, fmt.Errorf("collect: markets file entry %d: %w", i+1, err)
		}
		if probe.Markets != nil {
			var e gammaEvent
			if err := json.Unmarshal(r, &e); err != nil {
				return nil, 0, fmt.Errorf("collect: markets file event %d: %w", i+1, err)
			}
			for _, m := range e.Markets {
				found = append(found, gammaFound{market: m, event: e})
			}
			continue
		}
		var m gammaMarket
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, 0, fmt.Errorf("collect: markets file market %d: %w", i+1, err)
		}
		found = append(found, withEvent(m))
	}
	var out []store.Market
	skipped := 0
	for _, f := range found {
		m, ok, err := fromGamma(f, scheme)
		if errors.Is(err, errMalformed) {
			// One market unusable (no token ids while it is deployed, a
			// window not the series'), as discovery skips it: the file's
			// other markets are not refused with it.
			skipped++
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("collect: markets file: %w", err)
		}
		if !ok {
			skipped++
			continue
		}
		out = append(out, m)
	}
	return out, skipped, nil
}

// fromGamma finds the series and window whose upstream slug is the
// market's and builds its record; ok is false for a market of no series.
func fromGamma(f gammaFound, scheme SlugScheme) (store.Market, bool, error) {
	g := f.market
	at, ok := parseTime(g.EventStartTime)
	if !ok {
		at, ok = parseTime(f.event.StartTime)
	}
	if !ok {
		return store.Market{}, false, nil
	}
	for _, c := range store.Coins {
		for _, mt := range store.MarketTypes {
			if !mt.AvailableFor(c) {
				continue
			}
			start, end := scheme.Window(c, mt, at)
			if !slices.Contains(scheme.Slugs(c, mt, start), g.Slug) {
				continue
			}
			m, _, err := toMarket(f, c, mt, start, end)
			if err != nil {
				return store.Market{}, false, err
			}
			settle(&m, f)
			return m, true, nil
		}
	}
	return store.Market{}, false, nil
}

// settle sets the winner and reference prices of a market Gamma shows
// settled with both reference prices published: the resolver's first
// rule (Resolve), which needs no other source.
func settle(m *store.Market, f gammaFound) {
	verdict := f.market.outcome()
	if verdict == "" || m.PriceToBeat == nil || m.FinalPrice == nil {
		return
	}
	start, end := *m.PriceToBeat, *m.FinalPrice
	m.Winner = &verdict
	m.CoinPriceStart, m.CoinPriceEnd = &start, &end
	m.ResolutionSource = series.SettlementSource(m.MarketType)
	resolvedAt := m.EndTime
	if t, ok := parseTime(f.market.ClosedTime); ok && !t.Before(m.EndTime) {
		resolvedAt = t
	}
	m.ResolvedAt = &resolvedAt
	m.FinalVolume, m.FinalLiquidity = f.market.volume(), f.market.liquidity()
}

// ErrNoSeries is a series name that is not <coin>-<type>.
var ErrNoSeries = errors.New("not a series")

// ParseSeries reads a series as `updown markets fetch --series` names it:
// btc-5m, eth-15m, sol-1hr (or 1h), btc-4hr (4h), btc-24hr (24h).
func ParseSeries(s string) (Series, error) {
	var coin, typ string
	for i := range s {
		if s[i] == '-' {
			coin, typ = s[:i], s[i+1:]
			break
		}
	}
	c := store.Coin(bytes.ToUpper([]byte(coin)))
	mt := store.MarketType(typ)
	switch typ {
	case "1h":
		mt = store.H1
	case "4h":
		mt = store.H4
	case "24h", "1d":
		mt = store.H24
	}
	if !c.Valid() || !mt.Valid() || !mt.AvailableFor(c) {
		return Series{}, fmt.Errorf("%w: %q (want e.g. btc-5m, eth-15m, sol-1hr, btc-4hr, btc-24hr)", ErrNoSeries, s)
	}
	return Series{Coin: c, MarketType: mt}, nil
}
