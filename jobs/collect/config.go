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

// Upstreams are the base URLs of the APIs the collector and the resolver
// speak to.
type Upstreams struct {
	Gamma string // Polymarket market metadata
	CLOB  string // Polymarket order books
	// PolymarketWS is the CLOB's websocket market channel, the first
	// source of books (REST polling of CLOB is the fallback). Empty: no
	// websocket, books are polled only.
	PolymarketWS string
	// PolymarketData is the Data API, the source of the trades a trades
	// gap missed (see backfill.go). Empty: trades gaps stay as recorded.
	PolymarketData string
	BinanceSpot    string
	BinanceFutures string
}

// Public base URLs of the real upstreams.
const (
	DefaultGammaURL          = "https://gamma-api.polymarket.com"
	DefaultCLOBURL           = "https://clob.polymarket.com"
	DefaultPolymarketWSURL   = "wss://ws-subscriptions-clob.polymarket.com/ws/market"
	DefaultPolymarketDataURL = "https://data-api.polymarket.com"
	DefaultBinanceSpotURL    = "https://api.binance.com"
	DefaultBinanceFuturesURL = "https://fapi.binance.com"
)

// Environment variables that override the default base URLs.
const (
	EnvGammaURL          = "POLYMARKET_GAMMA_URL"
	EnvCLOBURL           = "POLYMARKET_CLOB_URL"
	EnvPolymarketWSURL   = "POLYMARKET_WS_URL"
	EnvPolymarketDataURL = "POLYMARKET_DATA_URL"
	EnvBinanceSpotURL    = "BINANCE_SPOT_URL"
	EnvBinanceFuturesURL = "BINANCE_FUTURES_URL"
)

// DefaultUpstreams are the real public APIs.
func DefaultUpstreams() Upstreams {
	return Upstreams{Gamma: DefaultGammaURL, CLOB: DefaultCLOBURL, PolymarketWS: DefaultPolymarketWSURL, PolymarketData: DefaultPolymarketDataURL,
		BinanceSpot: DefaultBinanceSpotURL, BinanceFutures: DefaultBinanceFuturesURL}
}

// UpstreamsFromEnv returns the default upstreams overridden by the
// environment variables lookup reports (os.LookupEnv in a process). Every
// process of a deployment shares its environment, so the collector and the
// workers resolving its markets speak to the same upstreams. The optional
// upstreams, the Polymarket websocket and Data API, are off when their
// variable is set empty; the others keep their default then.
func UpstreamsFromEnv(lookup func(string) (string, bool)) Upstreams {
	u := DefaultUpstreams()
	for _, f := range []struct {
		env      string
		dst      *string
		optional bool
	}{{EnvGammaURL, &u.Gamma, false}, {EnvCLOBURL, &u.CLOB, false}, {EnvPolymarketWSURL, &u.PolymarketWS, true},
		{EnvPolymarketDataURL, &u.PolymarketData, true}, {EnvBinanceSpotURL, &u.BinanceSpot, false}, {EnvBinanceFuturesURL, &u.BinanceFutures, false}} {
		if v, set := lookup(f.env); v != "" || set && f.optional {
			*f.dst = v
		}
	}
	return u
}

// Store is the part of a store.Store the collector writes through.
type Store interface {
	UpsertMarkets(ctx context.Context, markets []store.Market) error
	GetMarket(ctx context.Context, slug string) (store.Market, error)
	SwapMarket(ctx context.Context, m store.Market, was time.Time) (store.Market, bool, error)
	ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error)
	AppendSnapshots(ctx context.Context, slug string, snaps []store.Snapshot) (int, error)
	AppendDepth(ctx context.Context, snaps []store.DepthSnapshot) error
	ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error)
}

var _ Store = store.Store(nil)

// LiveWriter is the part of a store.LiveExchange the collector writes.
type LiveWriter interface {
	SetLatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind, d store.DepthSnapshot) error
	AddTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, trades []store.Trade) error
}

var _ LiveWriter = store.LiveExchange(nil)

// Scheduler queues the resolution of a market, to run after delay (at once
// when delay ≤ 0). Scheduling one market twice must queue it once: the
// collector schedules on discovery and again on every sweep until the
// market is resolved. Package worker implements it on Asynq.
type Scheduler interface {
	ScheduleResolution(ctx context.Context, slug string, delay time.Duration) error
}

// Series is one coin and market type.
type Series struct {
	Coin       store.Coin
	MarketType store.MarketType
}

func (s Series) String() string { return string(s.Coin) + " " + string(s.MarketType) }

// AllSeries lists every series SPEC allows: 5m, 15m and 1hr for every coin,
// 4hr and 24hr for BTC.
func AllSeries() []Series {
	var out []Series
	for _, c := range store.Coins {
		for _, mt := range store.MarketTypes {
			if mt.AvailableFor(c) {
				out = append(out, Series{Coin: c, MarketType: mt})
			}
		}
	}
	return out
}

// Config configures a Collector. Zero fields take the defaults noted.
type Config struct {
	Upstreams Upstreams // DefaultUpstreams() when zero
	// HTTPClient sends every request (a client with sane transport limits
	// when nil). Per-request timeouts come from RequestTimeout.
	HTTPClient *http.Client
	Store      Store      // required
	Live       LiveWriter // required: latest depth and recent trades
	Scheduler  Scheduler  // required: resolution tasks
	// Activity keeps Polymarket's trades and the recording gaps: the Store
	// when it implements ActivityWriter and Activity is nil; when neither
	// does, trades are not kept and gaps are only logged.
	Activity ActivityWriter
	Scheme   SlugScheme // NewPolymarketScheme() when nil
	Logger   *slog.Logger
	// Now is the clock (time.Now). Tests move it; pacing stays real time.
	Now func() time.Time

	// Series to record (AllSeries when nil); ExchangeCoins to keep live
	// exchange data of (every coin when nil). Depth history is BTCUSDT's.
	Series        []Series
	ExchangeCoins []store.Coin

	// Interval is the snapshot cadence (300 ms).
	Interval time.Duration
	// BookLevels is how many levels of each side of each book a snapshot
	// keeps (10).
	BookLevels int
	// MaxInFlight bounds the snapshot requests under way at once (8): a
	// slow answer does not stop the next tick, but a stalled upstream
	// cannot pile requests up either; ticks beyond it are gaps. A REST
	// poll of the books the websocket lacks that runs to its deadline
	// holds its instant's slot for MaxLag: at the default cadence that is
	// 4 instants' slots, and 8 leave room for a loaded machine's lateness
	// before an instant, the websocket's markets with it, is lost as busy.
	MaxInFlight int
	// MaxLag is how late after its tick a snapshot's data may arrive and
	// still be recorded at the tick's time (1 s); later ones are gaps.
	MaxLag time.Duration
	// RequestTimeout bounds one request (5 s; snapshot requests MaxLag).
	RequestTimeout time.Duration
	// Backoff paces retries after failures (DefaultBackoff: 200 ms
	// doubling to 1 s), websocket reconnections included.
	Backoff Backoff

	// WSPingInterval is how often the websocket is sent PING (10 s, as
	// Polymarket asks). WSStaleAfter is how long the websocket may say
	// nothing before its books are not trusted and REST is polled instead
	// (3 s); silent for WSPingInterval+WSStaleAfter, the PING went
	// unanswered and the connection is dropped and made again.
	WSPingInterval time.Duration
	WSStaleAfter   time.Duration
	// BookStaleAfter is how long a book on the websocket may go without a
	// change before it is not trusted (5 s): the tick polls it from REST
	// and resubscribes it (see bookAges). Polymarket's live up/down books
	// change several times a second; five seconds without a change, while
	// the connection may still answer PING, is a frozen book far more often
	// than a quiet market, and a quiet market costs only a REST poll.
	BookStaleAfter time.Duration

	// DiscoveryInterval is how often markets are looked up (20 s).
	DiscoveryInterval time.Duration
	// ResolveDelay is how long after a market's end its resolution first
	// runs (30 s): upstream settles it within seconds to minutes, and the
	// task retries with backoff until it has; a first attempt that comes
	// too early costs a retry and a log line.
	ResolveDelay time.Duration
	// SweepInterval is how often ended, unresolved markets are scheduled
	// for resolution again (1 min); SweepHorizon how far back the sweep
	// looks (7 days).
	SweepInterval time.Duration
	SweepHorizon  time.Duration

	// DepthInterval is the cadence of exchange depth, live and history
	// (1 s); DepthLevels the levels a side kept (20).
	DepthInterval time.Duration
	DepthLevels   int
	// TradesInterval is the cadence of recent trades (2 s); TradesLimit
	// how many the upstream is asked for (1,000, its most).
	TradesInterval time.Duration
	TradesLimit    int

	// FlushInterval is how often recorded snapshots and depth are written
	// (1 s), FlushSize how many pending snapshots force a write sooner
	// (5,000), MaxPending how many may wait while the store is failing
	// before new ones are dropped as gaps (200,000, about 30 minutes of
	// every series).
	FlushInterval time.Duration
	FlushSize     int
	MaxPending    int

	// UnhealthyAfter is how long an upstream may fail without a good answer
	// before the collector reports it unhealthy (Ready fails) (30 s).
	UnhealthyAfter time.Duration
	// WarnEvery bounds repeated warnings of one kind (an upstream's failed
	// requests, say) to one per period, with a count of those held back
	// (30 s).
	WarnEvery time.Duration
	// WatchAfterEnd is how long after its end a market's tokens stay
	// subscribed, to hear Polymarket's market_resolved (15 min: hourly and
	// daily markets settle about 13 minutes after their end).
	WatchAfterEnd time.Duration
	// GapAfter is the longest a live market may go without a snapshot
	// before the stretch is recorded as a gap (3 s, DESIGN 9).
	GapAfter time.Duration
	// BackfillDelay is how long after a trades gap's end its trades are
	// asked of Upstreams.PolymarketData (30 s): the Data API lists a trade
	// once it has read it from the chain, seconds after the websocket
	// told it, so asking at once could miss the gap's last trades and
	// take the gap for covered.
	BackfillDelay time.Duration
	// BackfillAttempts, when positive, is how many times a trades gap's
	// backfill is tried before the gap is left as it is, until the
	// collector's next start. Zero tries again while the market started
	// within ResumeLookback (48 h). The waits between tries double from
	// BackfillDelay, up to 30 minutes.
	BackfillAttempts int
}

func (c *Config) setDefaults() error {
	var missing []string
	if c.Store == nil {
		missing = append(missing, "Store")
	}
	if c.Live == nil {
		missing = append(missing, "Live")
	}
	if c.Scheduler == nil {
		missing = append(missing, "Scheduler")
	}
	if len(missing) > 0 {
		return fmt.Errorf("collect: config lacks %v", missing)
	}
	if c.Upstreams == (Upstreams{}) {
		c.Upstreams = DefaultUpstreams()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	if c.Activity == nil {
		c.Activity, _ = c.Store.(ActivityWriter)
	}
	if c.Scheme == nil {
		c.Scheme = NewPolymarketScheme()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Series == nil {
		c.Series = AllSeries()
	}
	for _, s := range c.Series {
		if !s.MarketType.AvailableFor(s.Coin) {
			return fmt.Errorf("collect: no %s markets exist for %s", s.MarketType, s.Coin)
		}
	}
	if c.ExchangeCoins == nil {
		c.ExchangeCoins = store.Coins
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&c.Interval, store.SnapshotCadence)
	defInt(&c.BookLevels, 10)
	defInt(&c.MaxInFlight, 8)
	def(&c.MaxLag, time.Second)
	def(&c.RequestTimeout, 5*time.Second)
	if c.Backoff == (Backoff{}) {
		c.Backoff = DefaultBackoff()
	}
	def(&c.WSPingInterval, 10*time.Second)
	def(&c.WSStaleAfter, 3*time.Second)
	def(&c.BookStaleAfter, 5*time.Second)
	def(&c.DiscoveryInterval, 20*time.Second)
	def(&c.ResolveDelay, 30*time.Second)
	def(&c.SweepInterval, time.Minute)
	def(&c.SweepHorizon, 7*24*time.Hour)
	def(&c.DepthInterval, time.Second)
	defInt(&c.DepthLevels, 20)
	def(&c.TradesInterval, 2*time.Second)
	defInt(&c.TradesLimit, 1000)
	def(&c.FlushInterval, time.Second)
	defInt(&c.FlushSize, 5000)
	defInt(&c.MaxPending, 200_000)
	def(&c.UnhealthyAfter, 30*time.Second)
	def(&c.WarnEvery, 30*time.Second)
	def(&c.GapAfter, 3*time.Second)
	def(&c.WatchAfterEnd, 15*time.Minute)
	def(&c.BackfillDelay, 30*time.Second)
	if c.Interval < time.Millisecond || c.DepthInterval < time.Millisecond {
		return errors.New("collect: Interval and DepthInterval must be at least 1ms")
	}
	// A cadence longer than GapAfter makes every stretch between two
	// snapshots a gap: a market recorded throughout was served as one
	// gap from its first snapshot to its last, "no data" where there was.
	if c.Interval > c.GapAfter {
		return fmt.Errorf("collect: Interval %v is longer than GapAfter %v: every stretch between two snapshots would be recorded as a gap", c.Interval, c.GapAfter)
	}
	return nil
}

// DefaultBackoff is the collector's pacing of retries: 200 ms doubling to
// at most 1 s, with full jitter. The cap bounds recovery: once an upstream
// is back, every feed asks it again within 1 s (plus one grid interval),
// so recording resumes within 2 s of the upstream's return (issue 28). A
// failing upstream is asked no more often than a healthy one is (a feed
// asks about once a second either way); a Retry-After it sends is still
// waited out in full.
func DefaultBackoff() Backoff {
	return Backoff{Base: 200 * time.Millisecond, Max: time.Second}
}

// defaultHTTPClient keeps enough idle connections for every request of a
// tick to reuse one: a TLS handshake per snapshot would cost more than the
// request.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t}
}
