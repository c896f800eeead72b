// Package polytest is a fake Polymarket for tests: Gamma's /events and
// /markets, the CLOB's /book and /books, the CLOB's websocket market
// channel and the Data API's /trades on one local server, answering in the real shapes of
// ../../shared/realdata (string numbers, JSON-encoded outcomes,
// outcomePrices and clobTokenIds, feeSchedule, eventMetadata with the
// reference prices once settled, bids ascending and asks descending, an
// initial dump as an array) with the real habits (/markets hides closed
// markets unless closed=true, ties settle 50-50, tick sizes change) and
// failing on demand the ways the real ones do (see Fault).
//
// Prices are realistic and consistent with binancetest at the same seed:
// an Up book is quoted around Φ(ln(S_t/S_0)/(σ√(T−t))) of the coin price
// path jobs/gen models, and a market settles by its series' rule on the
// prices binancetest serves: 5m, 15m, 4h and hourly markets Up when the
// price at the end, in cents, is at or above the price at the start (what
// binancetest's candles open at); daily markets on the closes of the 1m
// candles opening at start and end, equal being 50-50.
package polytest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/internal/fault"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
)

// Fault is one way to answer a request badly; see Server.Fail.
type Fault = fault.Fault

// Routes a Fault can be set on.
const (
	RouteEvents  = "/events"
	RouteMarkets = "/markets"
	RouteBook    = "/book"
	RouteBooks   = "/books"
	// RouteWS is the websocket market channel; a Fault on it fails the
	// handshake.
	RouteWS = "/ws/market"
	// RouteTrades is the Data API's trades of a market.
	RouteTrades = "/trades"
)

// Options configure a Server. Zero fields take the defaults noted.
type Options struct {
	// Clock is the fake's time (time.Now): what is live, what has closed.
	Clock func() time.Time
	// Seed selects the coin price paths (1), as binancetest's Seed does.
	Seed int64
	// Scheme names upstream markets (collect.NewPolymarketScheme()).
	Scheme collect.SlugScheme
	// BookLevels is the depth of each side of each book served (15).
	BookLevels int
	// SettleAfter is how long after its end a market reports closed with
	// its outcome (0: at once).
	SettleAfter time.Duration
	// WSInterval is how often the websocket sends the changes of the books
	// (100 ms).
	WSInterval time.Duration
	// OldSlugs lists markets under the older form of their upstream slug
	// (the scheme's last one: hourly and daily slugs without the year).
	OldSlugs bool
	// TradeEvery is the mean time between a token's trades (1 s). Trades
	// happen whether or not a socket listens (see Tape): a socket hears
	// those after its subscription as last_trade_price events, the Data
	// API's /trades lists them all.
	TradeEvery time.Duration
	// PriceToBeatAfter, when set, is how long after its start a market's
	// eventMetadata carries its priceToBeat (finalPrice still null), as
	// Gamma publishes it about a minute into the window. Zero: the
	// reference prices appear together, once settled.
	PriceToBeatAfter time.Duration
	// Tap, when set, is given every frame the websocket sends (PONG
	// aside), as sent: what a raw dump of the market channel keeps.
	Tap func(frame []byte)
}

// Server is a fake Polymarket. Its URL serves as the Gamma, the CLOB and
// the Data API base URL; WSURL is the CLOB's websocket market channel.
type Server struct {
	URL    string
	WSURL  string
	srv    *httptest.Server
	faults fault.Set
	opts   Options
	gen    *gen.Generator
	vols   map[store.Coin]float64 // per-second volatility of log price

	mu      sync.Mutex
	bySlug  map[string]*Market // by upstream slug
	byID    map[string]*Market
	byToken map[string]*Market
	next    int64
	tape    map[string]*tokenTape // by token

	wsMu      sync.Mutex
	sockets   map[*socket]bool
	wsStats   WSStats
	wsHistory map[string][]store.Book // by token
	listed    []*Market               // in the order added, for new_market
}

// Market is a market the fake lists.
type Market struct {
	Slug        string // upstream slug
	ID          string
	EventID     string
	ConditionID string
	Coin        store.Coin
	MarketType  store.MarketType
	Start, End  time.Time
	UpToken     string
	DownToken   string
	Volume      float64
	Liquidity   float64
	// TickSize is the market's tick (0.01); see ChangeTick.
	TickSize float64
	// Fees is how Gamma gives the market's fees: FeesV2 (the default),
	// FeesFirstCrypto or FeesNone.
	Fees Fees
	// Quirks of how the market is answered, each a real variation.
	DownFirst          bool // outcomes and clobTokenIds list Down first
	NumericID          bool // id as a JSON number instead of a string
	OmitEventStartTime bool
	// Tie settles the market 50-50, finalPrice equal to priceToBeat (a
	// daily tie).
	Tie bool
	// Unsettled never settles: Gamma keeps it open with no eventMetadata
	// prices, as when Polymarket is late.
	Unsettled bool
	// PricesWhileOpen publishes both reference prices in eventMetadata
	// once the window has ended, while the market stays open (Unsettled:
	// a settlement held up, as by a dispute).
	PricesWhileOpen bool
	// NoReferencePrices settles the market (closed, outcomePrices) but
	// never publishes its reference prices in eventMetadata.
	NoReferencePrices bool
	// UMAStatus, when set, is the umaResolutionStatus Gamma gives the
	// market once closed, in place of "resolved": "proposed" or
	// "disputed", a settlement not final yet, whose outcomePrices show
	// the outcome proposed.
	UMAStatus string
	// NoAsks: nobody sells Up, as in a market all but settled. The Up
	// book has no asks and, in mirror, the Down book no bids; Up is priced
	// by its last trade (REST's last_trade_price).
	NoAsks bool
	// QuietFrom, when set, freezes the market's books from then on: they
	// stay as they were at QuietFrom, and so does the CLOB's timestamp of
	// them, which moves only when the book changes (realdata
	// clob/book_errors_2026-08-10.json). A tick change alone does not move
	// it: its levels are only written with the new tick's decimals.
	// Otherwise a book changes every instant and is stamped with it.
	QuietFrom time.Time
}

// Fees is a way Gamma gives a market's fees, each a real one.
type Fees int

const (
	// FeesV2 is crypto_fees_v2 with its schedule (rate 0.07, exponent 1,
	// rebate 0.2), as crypto up/down markets have had since early 2026.
	FeesV2 Fees = iota
	// FeesFirstCrypto is Polymarket's first crypto fee type, crypto_fees,
	// which Gamma gives without a schedule (early-2026 15m and 5m markets).
	FeesFirstCrypto
	// FeesNone is a market without fees: feesEnabled false, no fee type
	// and no schedule, as before 2026.
	FeesNone
)

// New starts a fake Polymarket, closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Scheme == nil {
		opts.Scheme = collect.NewPolymarketScheme()
	}
	if opts.BookLevels <= 0 {
		opts.BookLevels = 15
	}
	if opts.WSInterval <= 0 {
		opts.WSInterval = 100 * time.Millisecond
	}
	if opts.TradeEvery <= 0 {
		opts.TradeEvery = time.Second
	}
	cfg := gen.DefaultConfig(opts.Clock())
	cfg.Seed = opts.Seed
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatalf("polytest: %v", err)
	}
	s := &Server{
		opts: opts, gen: g, vols: map[store.Coin]float64{},
		bySlug: map[string]*Market{}, byID: map[string]*Market{}, byToken: map[string]*Market{},
		next:    1_000_000,
		tape:    map[string]*tokenTape{},
		sockets: map[*socket]bool{}, wsHistory: map[string][]store.Book{},
	}
	for _, m := range cfg.Coins {
		s.vols[m.Coin] = m.Vol / math.Sqrt(365*86400)
	}
	// Draw today's price path now rather than in the first request, which
	// would then answer late.
	for _, c := range store.Coins {
		_, _ = g.CoinPrice(c, opts.Clock())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", s.faults.Wrap(RouteEvents, s.events))
	mux.HandleFunc("GET /markets", s.faults.Wrap(RouteMarkets, s.markets))
	mux.HandleFunc("GET /book", s.faults.Wrap(RouteBook, s.book))
	mux.HandleFunc("POST /books", s.faults.Wrap(RouteBooks, s.books))
	mux.HandleFunc("GET "+RouteWS, s.faults.Wrap(RouteWS, s.ws))
	mux.HandleFunc("GET "+RouteTrades, s.faults.Wrap(RouteTrades, s.dataTrades))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	s.WSURL = "ws" + strings.TrimPrefix(s.URL, "http") + RouteWS
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; requests under way are cut.
func (s *Server) Close() {
	s.DropSockets()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Fail answers the next requests to route with the faults, one each.
func (s *Server) Fail(route string, fs ...Fault) { s.faults.Next(route, fs...) }

// FailAlways answers every request to route with f until Recover.
func (s *Server) FailAlways(route string, f Fault) { s.faults.Always(route, f) }

// Recover removes the faults of route.
func (s *Server) Recover(route string) { s.faults.Clear(route) }

// Hits returns how many requests route has had.
func (s *Server) Hits(route string) int { return s.faults.Hits(route) }

// AddWindow lists the market of coin c and type mt whose window contains t
// and returns it; listing it twice returns the first.
func (s *Server) AddWindow(c store.Coin, mt store.MarketType, t time.Time) *Market {
	start, end := s.opts.Scheme.Window(c, mt, t)
	slugs := s.opts.Scheme.Slugs(c, mt, start)
	slug := slugs[0]
	if s.opts.OldSlugs {
		slug = slugs[len(slugs)-1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.bySlug[slug]; ok {
		return m
	}
	s.next += 3
	h := fnv.New64a()
	h.Write([]byte(slug))
	sum := h.Sum64()
	m := &Market{
		Slug: slug, ID: strconv.FormatInt(s.next, 10), EventID: strconv.FormatInt(s.next-900_000, 10),
		ConditionID: fmt.Sprintf("0x%016x%016x", sum, ^sum),
		Coin:        c, MarketType: mt, Start: start, End: end,
		UpToken:   strconv.FormatUint(sum>>1, 10) + "1",
		DownToken: strconv.FormatUint(sum>>1, 10) + "2",
		Volume:    math.Round(float64(sum%5_000_000)) / 100,
		Liquidity: math.Round(float64(sum%1_000_000)) / 100,
		TickSize:  0.01,
	}
	s.add(m)
	return m
}

// Add lists a market built by hand (quirks, odd windows). Its tokens and
// ids must be new.
func (s *Server) Add(m *Market) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(m)
}

func (s *Server) add(m *Market) {
	if m.TickSize == 0 {
		m.TickSize = 0.01
	}
	s.listed = append(s.listed, m)
	s.bySlug[m.Slug] = m
	s.byID[m.ID] = m
	s.byToken[m.UpToken] = m
	s.byToken[m.DownToken] = m
}

// AddRange lists, for every series, the markets of every window that
// overlaps [from, to].
func (s *Server) AddRange(series []collect.Series, from, to time.Time) {
	for _, sr := range series {
		for t := from; !t.After(to); {
			next := s.AddWindow(sr.Coin, sr.MarketType, t).End
			if !next.After(t) {
				// The hour US Eastern repeats: its slug names the first
				// one's market, listed already.
				_, next = s.opts.Scheme.Window(sr.Coin, sr.MarketType, t)
			}
			t = next
		}
	}
}

// Edit changes a listed market, safely against requests under way: to give
// it a quirk, say.
func (s *Server) Edit(m *Market, fn func(*Market)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(m)
}

// AddAround lists, for every series, the markets of the windows before, at
// and after t.
func (s *Server) AddAround(series []collect.Series, t time.Time) {
	for _, sr := range series {
		start, end := s.opts.Scheme.Window(sr.Coin, sr.MarketType, t)
		s.AddWindow(sr.Coin, sr.MarketType, start.Add(-time.Second))
		s.AddWindow(sr.Coin, sr.MarketType, t)
		s.AddWindow(sr.Coin, sr.MarketType, end)
	}
}

// CoinPrice is the coin's price at t in cents, as binancetest's candles
// open at it.
func (s *Server) CoinPrice(c store.Coin, t time.Time) float64 {
	p, _ := s.gen.CoinPrice(c, t)
	return math.Round(p*100) / 100
}

// ReferencePrices are the start and end prices the market settles on,
// as Polymarket publishes them (eventMetadata.priceToBeat and finalPrice):
// for a daily market the closes of binancetest's 1m candles opening at its
// start and end, for the others the prices at start and end.
func (s *Server) ReferencePrices(m *Market) (start, end float64) {
	if m.MarketType == store.H24 {
		start, end = s.CoinPrice(m.Coin, m.Start.Add(time.Minute)), s.CoinPrice(m.Coin, m.End.Add(time.Minute))
	} else {
		start, end = s.CoinPrice(m.Coin, m.Start), s.CoinPrice(m.Coin, m.End)
	}
	if m.Tie {
		end = start
	}
	return start, end
}

// Winner is the outcome the market settles to: "Up", "Down", or "50-50"
// for a daily tie.
func (s *Server) Winner(m *Market) string {
	start, end := s.ReferencePrices(m)
	switch {
	case end > start || (end == start && m.MarketType != store.H24):
		return store.OutcomeUp
	case end < start:
		return store.OutcomeDown
	}
	return store.OutcomeFiftyFifty
}

// closed reports whether the market has settled by now.
func (s *Server) closed(m *Market, now time.Time) bool {
	return !m.Unsettled && !now.Before(m.End.Add(s.opts.SettleAfter))
}

// SettledAt is when the market reports closed with its outcome.
func (s *Server) SettledAt(m *Market) time.Time { return m.End.Add(s.opts.SettleAfter) }

// resolutionSource is the market's resolutionSource, as Gamma gives it.
func resolutionSource(m *Market) string {
	switch m.MarketType {
	case store.H1, store.H24:
		return "https://www.binance.com/en/trade/" + string(m.Coin) + "_USDT"
	}
	return "https://data.chain.link/streams/" + strings.ToLower(string(m.Coin)) + "-usd"
}

// fairUp is the probability of Up at t.
func (s *Server) fairUp(m *Market, t time.Time) float64 {
	if t.Before(m.Start) {
		return 0.5
	}
	s0, _ := s.gen.CoinPrice(m.Coin, m.Start)
	st, _ := s.gen.CoinPrice(m.Coin, t)
	left := m.End.Sub(t).Seconds()
	if left <= 0 {
		if st >= s0 {
			return 1
		}
		return 0
	}
	x := math.Log(st/s0) / (s.vols[m.Coin] * math.Sqrt(left))
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// marketJSON is a market as Gamma answers it.
func (s *Server) marketJSON(m *Market, now time.Time, withEvents bool) map[string]any {
	outcomes := []string{"Up", "Down"}
	tokens := []string{m.UpToken, m.DownToken}
	up := s.fairUp(m, now)
	prices := []string{fmt.Sprintf("%.3f", up), fmt.Sprintf("%.3f", 1-up)}
	closed := s.closed(m, now)
	if closed {
		switch s.Winner(m) {
		case store.OutcomeUp:
			prices = []string{"1", "0"}
		case store.OutcomeDown:
			prices = []string{"0", "1"}
		default:
			prices = []string{"0.5", "0.5"}
		}
	}
	if m.DownFirst {
		outcomes[0], outcomes[1] = outcomes[1], outcomes[0]
		tokens[0], tokens[1] = tokens[1], tokens[0]
		prices[0], prices[1] = prices[1], prices[0]
	}
	enc := func(v []string) string { b, _ := json.Marshal(v); return string(b) }
	out := map[string]any{
		"id":                    m.ID,
		"question":              fmt.Sprintf("%s Up or Down - %s", m.Coin, m.Start.Format(time.RFC822)),
		"conditionId":           m.ConditionID,
		"slug":                  m.Slug,
		"startDate":             m.Start.Add(-24 * time.Hour).Add(1234 * time.Millisecond).Format("2006-01-02T15:04:05.000Z"),
		"endDate":               m.End.Format(time.RFC3339),
		"outcomes":              enc(outcomes),
		"outcomePrices":         enc(prices),
		"clobTokenIds":          enc(tokens),
		"volume":                strconv.FormatFloat(m.Volume, 'f', -1, 64),
		"volumeNum":             m.Volume,
		"liquidity":             strconv.FormatFloat(m.Liquidity, 'f', -1, 64),
		"liquidityNum":          m.Liquidity,
		"active":                true,
		"closed":                closed,
		"acceptingOrders":       !closed,
		"enableOrderBook":       true,
		"orderPriceMinTickSize": m.TickSize,
		"orderMinSize":          5,
		"resolutionSource":      resolutionSource(m),
		"feesEnabled":           true,
		"feeType":               "crypto_fees_v2",
		"feeSchedule":           map[string]any{"exponent": 1, "rate": 0.07, "takerOnly": true, "rebateRate": 0.2},
		"umaResolutionStatuses": "[]",
	}
	switch m.Fees {
	case FeesFirstCrypto:
		out["feeType"] = "crypto_fees"
		delete(out, "feeSchedule")
	case FeesNone:
		out["feesEnabled"] = false
		delete(out, "feeType")
		delete(out, "feeSchedule")
	}
	if !m.OmitEventStartTime {
		out["eventStartTime"] = m.Start.Format(time.RFC3339)
	}
	if closed {
		out["umaResolutionStatus"] = "resolved"
		if m.UMAStatus != "" {
			out["umaResolutionStatus"] = m.UMAStatus
		}
		// Gamma writes closedTime the Postgres way.
		out["closedTime"] = m.End.Add(s.opts.SettleAfter).Add(3 * time.Second).Format("2006-01-02 15:04:05-07")
	}
	if m.NumericID {
		id, _ := strconv.ParseInt(m.ID, 10, 64)
		out["id"] = id
	}
	if withEvents {
		out["events"] = []map[string]any{{"id": m.EventID, "slug": m.Slug, "eventMetadata": s.metadataJSON(m, now)}}
	}
	return out
}

// metadataJSON is an event's eventMetadata: the reference prices once
// settled, null before (as Polymarket publishes them).
func (s *Server) metadataJSON(m *Market, now time.Time) any {
	start, end := s.ReferencePrices(m)
	if !s.closed(m, now) {
		if m.PricesWhileOpen && !now.Before(m.End) {
			return map[string]any{"priceToBeat": start, "finalPrice": end}
		}
		if s.opts.PriceToBeatAfter > 0 && !now.Before(m.Start.Add(s.opts.PriceToBeatAfter)) {
			return map[string]any{"priceToBeat": start, "finalPrice": nil}
		}
		return nil
	}
	if m.NoReferencePrices {
		return nil
	}
	return map[string]any{"priceToBeat": start, "finalPrice": end}
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	if m, ok := s.bySlug[r.URL.Query().Get("slug")]; ok {
		out = append(out, map[string]any{
			"id": m.EventID, "ticker": m.Slug, "slug": m.Slug, "title": fmt.Sprintf("%s Up or Down", m.Coin),
			"resolutionSource": resolutionSource(m),
			"startDate":        m.Start.Add(-24 * time.Hour).Format("2006-01-02T15:04:05.000000Z"),
			"endDate":          m.End.Format(time.RFC3339), "startTime": m.Start.Format(time.RFC3339),
			"closed":        s.closed(m, now),
			"eventMetadata": s.metadataJSON(m, now),
			"markets":       []map[string]any{s.marketJSON(m, now, false)},
		})
	}
	writeJSON(w, out)
}

func (s *Server) markets(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Clock()
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	// /markets answers closed markets only to closed=true, open ones only
	// without it (Gamma's default is closed=false).
	wantClosed := strings.EqualFold(q.Get("closed"), "true")
	out := []map[string]any{}
	add := func(m *Market) {
		if s.closed(m, now) == wantClosed {
			out = append(out, s.marketJSON(m, now, true))
		}
	}
	for _, slug := range q["slug"] {
		if m, ok := s.bySlug[slug]; ok {
			add(m)
		}
	}
	for _, id := range q["id"] {
		if m, ok := s.byID[id]; ok {
			add(m)
		}
	}
	writeJSON(w, out)
}

// bookJSON is the CLOB's book of a token at now, levels listed worst first
// as the CLOB lists them.
func (s *Server) bookJSON(token string, now time.Time) (clobBook, bool) {
	m, ok := s.byToken[token]
	if !ok {
		return clobBook{}, false
	}
	if !m.QuietFrom.IsZero() && now.After(m.QuietFrom) {
		now = m.QuietFrom
	}
	up := s.fairUp(m, now)
	// The Up book's best ask and bid in ticks (100 or 1,000 to the
	// dollar), one to three cents apart.
	units := int(math.Round(1 / m.TickSize))
	step := max(units/100, 1) // ticks to a cent
	h := fnv.New64a()
	h.Write([]byte(token))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(now.UnixMilli()/100)))
	spread := (1 + r.IntN(3)) * step
	ask := min(max(int(math.Round(up*float64(units)+float64(spread)/2)), 1+spread), units-1)
	bid := ask - spread
	if token == m.DownToken {
		ask, bid = units-bid, units-ask
	}
	digits := 2
	if units > 100 {
		digits = 3
	}
	level := func(t int) clobLevel {
		size := 50 + r.Float64()*r.Float64()*4950
		return clobLevel{Price: strconv.FormatFloat(float64(t)/float64(units), 'f', digits, 64), Size: strconv.FormatFloat(math.Round(size*100)/100, 'f', 2, 64)}
	}
	bids := make([]clobLevel, 0, s.opts.BookLevels)
	asks := make([]clobLevel, 0, s.opts.BookLevels)
	for p := bid; p >= 1 && len(bids) < s.opts.BookLevels; p -= step {
		bids = append(bids, level(p))
	}
	for p := ask; p <= units-1 && len(asks) < s.opts.BookLevels; p += step {
		asks = append(asks, level(p))
	}
	if m.NoAsks {
		if token == m.UpToken {
			asks = asks[:0]
		} else {
			bids = bids[:0]
		}
	}
	// Worst first, as the CLOB lists them: bids ascending, asks
	// descending.
	reverse(bids)
	reverse(asks)
	return clobBook{
		Market:         m.ConditionID,
		AssetID:        token,
		Timestamp:      strconv.FormatInt(now.UnixMilli(), 10),
		Hash:           fmt.Sprintf("%x", h.Sum64()^uint64(now.UnixMilli())),
		Bids:           bids,
		Asks:           asks,
		MinOrderSize:   "5",
		TickSize:       strconv.FormatFloat(m.TickSize, 'f', -1, 64),
		LastTradePrice: strconv.FormatFloat(float64(ask)/float64(units), 'f', digits, 64),
	}, true
}

// clobBook and clobLevel are the CLOB's book shape, with string numbers.
type clobBook struct {
	Market         string      `json:"market"`
	AssetID        string      `json:"asset_id"`
	Timestamp      string      `json:"timestamp"`
	Hash           string      `json:"hash"`
	Bids           []clobLevel `json:"bids"`
	Asks           []clobLevel `json:"asks"`
	MinOrderSize   string      `json:"min_order_size"`
	TickSize       string      `json:"tick_size"`
	NegRisk        bool        `json:"neg_risk"`
	LastTradePrice string      `json:"last_trade_price"`
}

type clobLevel struct {
	Price string `json:"price"`
	Size  string `json:"size"`
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func (s *Server) book(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Clock()
	s.mu.Lock()
	b, ok := s.bookJSON(r.URL.Query().Get("token_id"), now)
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"No orderbook exists for the requested token id"}`))
		return
	}
	writeJSON(w, b)
}

func (s *Server) books(w http.ResponseWriter, r *http.Request) {
	var params []struct {
		TokenID string `json:"token_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"Invalid payload"}`))
		return
	}
	now := s.opts.Clock()
	s.mu.Lock()
	out := make([]clobBook, 0, len(params))
	for _, p := range params {
		if b, ok := s.bookJSON(p.TokenID, now); ok {
			out = append(out, b)
		}
	}
	s.mu.Unlock()
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Markets returns the listed markets, by upstream slug.
func (s *Server) Markets() map[string]Market {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Market, len(s.bySlug))
	for k, m := range s.bySlug {
		out[k] = *m
	}
	return out
}

// SlugOf returns the SPEC slug the collector stores m under.
func SlugOf(m *Market) string { return collect.Slug(m.Coin, m.MarketType, m.Start) }

// QuickScheme is collect.QuickScheme: short windows, so that a test sees
// markets start, end and resolve in seconds.
type QuickScheme = collect.QuickScheme

// The websocket market channel.
//
// A client connects to WSURL and subscribes with
// {"assets_ids":[...],"type":"market"}; it is sent a `book` event of every
// token it names that the fake lists (in one array, as upstream does), then
// every Options.WSInterval a `price_change` event per market whose books
// moved, setting the changed levels (size "0" removes one), with the best
// bid and ask after the change. {"assets_ids":[...],"operation":"subscribe",
// "initial_dump":true} and "unsubscribe" change the set on the open
// connection; "PING" is answered "PONG". Books follow the same price model as /books.

// socket is one websocket client's connection.
type socket struct {
	conn    *websocket.Conn
	stalled atomic.Bool
	muted   atomic.Bool // PONGs still answered, no market data
	custom  bool        // custom_feature_enabled: best_bid_ask, new_market, market_resolved
	mu      sync.Mutex
	sent    map[string]clobBook // last book sent, by subscribed token
	heard   map[string]int      // trades of the tape sent, by subscribed token
	ticks   map[string]float64  // tick size last told, by subscribed token
	// announced holds the markets new_market or market_resolved was sent
	// for; known how many of s.listed existed at connection.
	resolved map[string]bool
	known    int
}

// WSStats counts what the websocket endpoint has seen.
type WSStats struct {
	Connections int // websocket sessions accepted
	Open        int // open now
	Pings       int // PING messages received
	Subscribes  int // subscription messages received, the first included
	// UndumpedSubscribes counts the "operation":"subscribe" messages
	// without "initial_dump":true. Polymarket's own client asks for the
	// dump on every one (rs-clob-client SubscriptionRequest::market, sent
	// for the assets it adds to a live connection): one without it may
	// bring no `book` event, leaving the tokens' books to REST.
	UndumpedSubscribes int
	// InitialDump and CustomFeatures are the flags of the last connection's
	// first subscription.
	InitialDump    bool
	CustomFeatures bool
	Trades         int // last_trade_price events sent
	TickChanges    int // tick_size_change events sent
	Resolved       int // market_resolved events sent
	NewMarkets     int // new_market events sent
}

// WSStats returns what the websocket endpoint has seen so far.
func (s *Server) WSStats() WSStats {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	st := s.wsStats
	st.Open = len(s.sockets)
	return st
}

// DropSockets cuts every open websocket connection without a close
// handshake, as a network failure does, and returns how many it cut.
func (s *Server) DropSockets() int {
	s.wsMu.Lock()
	open := slices.Collect(maps.Keys(s.sockets))
	s.wsMu.Unlock()
	for _, sc := range open {
		_ = sc.conn.CloseNow()
	}
	return len(open)
}

// StallSockets makes the open websocket connections go silent for good
// (no events, no PONGs; new connections are served), as a connection that
// died without TCP noticing does, and returns how many it silenced.
func (s *Server) StallSockets() int {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	for sc := range s.sockets {
		sc.stalled.Store(true)
	}
	return len(s.sockets)
}

// MuteSockets makes the open websocket connections stop sending market
// data for good while still answering PING with PONG (new connections are
// served), as an upstream whose feed froze behind a live connection does,
// and returns how many it muted.
func (s *Server) MuteSockets() int {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	for sc := range s.sockets {
		sc.muted.Store(true)
	}
	return len(s.sockets)
}

// SocketBooks returns every book of token the websocket has conveyed so
// far, whole, in the order sent: what a client that applied every event
// held after each one.
func (s *Server) SocketBooks(token string) []store.Book {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return slices.Clone(s.wsHistory[token])
}

func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sc := &socket{conn: conn, sent: map[string]clobBook{}, heard: map[string]int{}, ticks: map[string]float64{}, resolved: map[string]bool{}}
	s.wsMu.Lock()
	s.sockets[sc] = true
	s.wsStats.Connections++
	s.wsMu.Unlock()
	defer func() {
		s.wsMu.Lock()
		delete(s.sockets, sc)
		s.wsMu.Unlock()
	}()

	var sub wsRequest
	_, data, err := conn.Read(ctx)
	if err != nil {
		return
	}
	if json.Unmarshal(data, &sub) != nil || !strings.EqualFold(sub.Type, "market") {
		_ = conn.Close(websocket.StatusPolicyViolation, "first message must subscribe to the market channel")
		return
	}
	s.countSubscribe()
	sc.custom = sub.CustomFeatureEnabled
	s.mu.Lock()
	sc.known = len(s.listed)
	s.mu.Unlock()
	s.wsMu.Lock()
	s.wsStats.InitialDump = sub.InitialDump != nil && *sub.InitialDump
	s.wsStats.CustomFeatures = sub.CustomFeatureEnabled
	s.wsMu.Unlock()
	if s.subscribe(ctx, sc, sub.AssetsIDs) != nil {
		return
	}
	go func() {
		defer cancel()
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if string(data) == "PING" {
				s.wsMu.Lock()
				s.wsStats.Pings++
				s.wsMu.Unlock()
				if !sc.stalled.Load() && conn.Write(ctx, websocket.MessageText, []byte("PONG")) != nil {
					return
				}
				continue
			}
			var op wsRequest
			if json.Unmarshal(data, &op) != nil {
				_ = conn.Close(websocket.StatusUnsupportedData, "bad message")
				return
			}
			s.countSubscribe()
			switch strings.ToLower(op.Operation) {
			case "subscribe":
				if op.InitialDump == nil || !*op.InitialDump {
					s.wsMu.Lock()
					s.wsStats.UndumpedSubscribes++
					s.wsMu.Unlock()
				}
				if s.subscribe(ctx, sc, op.AssetsIDs) != nil {
					return
				}
			case "unsubscribe":
				sc.mu.Lock()
				for _, t := range op.AssetsIDs {
					delete(sc.sent, t)
					delete(sc.heard, t)
				}
				sc.mu.Unlock()
			}
		}
	}()
	tick := time.NewTicker(s.opts.WSInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if sc.stalled.Load() || sc.muted.Load() {
			continue
		}
		if s.extras(ctx, sc) != nil || s.changes(ctx, sc) != nil {
			return
		}
	}
}

type wsRequest struct {
	AssetsIDs            []string `json:"assets_ids"`
	Type                 string   `json:"type"`
	Operation            string   `json:"operation"`
	InitialDump          *bool    `json:"initial_dump"`
	CustomFeatureEnabled bool     `json:"custom_feature_enabled"`
}

func (s *Server) countSubscribe() {
	s.wsMu.Lock()
	s.wsStats.Subscribes++
	s.wsMu.Unlock()
}

// wsBook is a `book` event.
type wsBook struct {
	EventType string `json:"event_type"`
	clobBook
}

// subscribe adds the tokens to the socket and sends their books.
func (s *Server) subscribe(ctx context.Context, sc *socket, tokens []string) error {
	now := s.opts.Clock()
	var events []wsBook
	s.mu.Lock()
	sc.mu.Lock()
	for _, t := range tokens {
		if b, ok := s.bookJSON(t, now); ok {
			sc.sent[t] = b
			if _, ok := sc.heard[t]; !ok { // trades from now on; a subscription again loses none
				sc.heard[t] = len(s.advanceTape(t, now).trades)
			}
			sc.ticks[t] = s.byToken[t].TickSize
			// The market channel's book carries last_trade_price "" (the
			// tardis capture): only REST's book tells the last trade.
			b.LastTradePrice = ""
			events = append(events, wsBook{EventType: "book", clobBook: b})
		}
	}
	sc.mu.Unlock()
	s.mu.Unlock()
	if len(events) == 0 || sc.muted.Load() {
		return nil
	}
	for _, e := range events {
		s.remember(e.clobBook)
	}
	return s.send(ctx, sc, events)
}

type wsPriceChange struct {
	EventType    string     `json:"event_type"`
	Market       string     `json:"market"`
	PriceChanges []wsChange `json:"price_changes"`
	Timestamp    string     `json:"timestamp"`
}

type wsChange struct {
	AssetID string `json:"asset_id"`
	Price   string `json:"price"`
	Size    string `json:"size"`
	Side    string `json:"side"`
	Hash    string `json:"hash"`
	BestBid string `json:"best_bid"`
	BestAsk string `json:"best_ask"`
}

// changes sends a price_change event per market whose subscribed books
// moved since last sent.
func (s *Server) changes(ctx context.Context, sc *socket) error {
	now := s.opts.Clock()
	byMarket := map[string]*wsPriceChange{}
	var markets []string
	var moved []clobBook
	s.mu.Lock()
	sc.mu.Lock()
	tokens := slices.Sorted(maps.Keys(sc.sent))
	for _, t := range tokens {
		nb, ok := s.bookJSON(t, now)
		if !ok {
			continue
		}
		cs := diffBooks(sc.sent[t], nb)
		if len(cs) == 0 {
			continue
		}
		sc.sent[t] = nb
		moved = append(moved, nb)
		e := byMarket[nb.Market]
		if e == nil {
			e = &wsPriceChange{EventType: "price_change", Market: nb.Market, Timestamp: nb.Timestamp}
			byMarket[nb.Market] = e
			markets = append(markets, nb.Market)
		}
		e.PriceChanges = append(e.PriceChanges, cs...)
	}
	sc.mu.Unlock()
	s.mu.Unlock()
	for _, b := range moved {
		s.remember(b)
	}
	for _, m := range markets {
		if err := s.send(ctx, sc, byMarket[m]); err != nil {
			return err
		}
	}
	return nil
}

// diffBooks lists the level changes from old to nb, with nb's best prices.
func diffBooks(old, nb clobBook) []wsChange {
	// An empty side is best_bid "0", best_ask "1", as upstream writes
	// them.
	bestOf := func(levels []clobLevel, empty string) string {
		if len(levels) == 0 {
			return empty
		}
		return levels[len(levels)-1].Price // worst first
	}
	bb, ba := bestOf(nb.Bids, "0"), bestOf(nb.Asks, "1")
	var out []wsChange
	side := func(name string, was, is []clobLevel) {
		prev := map[string]string{}
		for _, l := range was {
			prev[l.Price] = l.Size
		}
		cur := map[string]bool{}
		for _, l := range is {
			cur[l.Price] = true
		}
		// Removals first: after a tick change "0.50" goes and "0.500"
		// comes, the same price written two ways.
		for _, l := range was {
			if !cur[l.Price] {
				out = append(out, wsChange{AssetID: nb.AssetID, Price: l.Price, Size: "0", Side: name})
			}
		}
		for _, l := range is {
			if prev[l.Price] != l.Size {
				out = append(out, wsChange{AssetID: nb.AssetID, Price: l.Price, Size: l.Size, Side: name})
			}
		}
	}
	side("BUY", old.Bids, nb.Bids)
	side("SELL", old.Asks, nb.Asks)
	for i := range out {
		out[i].Hash = nb.Hash
		out[i].BestBid, out[i].BestAsk = bb, ba
	}
	return out
}

func (s *Server) send(ctx context.Context, sc *socket, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if s.opts.Tap != nil {
		s.opts.Tap(b)
	}
	return sc.conn.Write(ctx, websocket.MessageText, b)
}

// remember adds a book sent on a websocket to the history SocketBooks
// returns.
func (s *Server) remember(b clobBook) {
	sb := toStoreBook(b)
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	h := s.wsHistory[b.AssetID]
	if n := len(h); n > 0 && reflect.DeepEqual(h[n-1], sb) {
		return
	}
	if len(h) >= maxHistory {
		h = h[len(h)-maxHistory/2:]
	}
	s.wsHistory[b.AssetID] = append(h, sb)
}

// maxHistory bounds the books of a token SocketBooks keeps.
const maxHistory = 20_000

func toStoreBook(b clobBook) store.Book {
	conv := func(levels []clobLevel) []store.Level {
		out := make([]store.Level, 0, len(levels))
		for i := len(levels) - 1; i >= 0; i-- { // best first
			p, _ := strconv.ParseFloat(levels[i].Price, 64)
			sz, _ := strconv.ParseFloat(levels[i].Size, 64)
			out = append(out, store.Level{Price: p, Size: sz})
		}
		return out
	}
	return store.Book{Bids: conv(b.Bids), Asks: conv(b.Asks)}
}

// ChangeTick sets the market's tick size (0.01 or 0.001): its books are
// quoted in the new tick from now on, and every websocket subscribed to
// its tokens is sent tick_size_change.
func (s *Server) ChangeTick(m *Market, tick float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.TickSize = tick
}

// Trades returns the trades a websocket has sent for the token
// (last_trade_price events), oldest first.
func (s *Server) Trades(token string) []store.MarketTrade {
	return s.tapeOf(token, true)
}

// Tape returns every trade of the token so far, oldest first, whether a
// websocket sent it or not: the trades the Data API's /trades lists. A
// token's tape begins when the fake is first asked about it (a
// subscription, or /trades of its market).
func (s *Server) Tape(token string) []store.MarketTrade {
	return s.tapeOf(token, false)
}

func (s *Server) tapeOf(token string, sentOnly bool) []store.MarketTrade {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := s.advanceTape(token, s.opts.Clock())
	if tp == nil {
		return nil
	}
	var out []store.MarketTrade
	for _, tr := range tp.trades {
		if tr.sent || !sentOnly {
			out = append(out, tr.MarketTrade)
		}
	}
	return out
}

// tokenTape is a token's trades as they happened on the fake's market,
// drawn slot by slot (Options.WSInterval) as time passes.
type tokenTape struct {
	next   int64 // the next slot to draw
	trades []tapeTrade
}

type tapeTrade struct {
	store.MarketTrade
	sent bool // on some websocket
}

// maxTapeDraw bounds the slots drawn at once: a clock moved far ahead
// skips what lies before.
const maxTapeDraw = 20_000

// advanceTape draws the token's trades up to now and returns its tape (nil
// for a token the fake does not list). A slot has a trade with probability
// WSInterval/TradeEvery, at a time within it, drawn from (token, slot), so
// the tape is the same whenever it is drawn; the trade takes the best ask
// (a BUY) or the best bid (a SELL) of the book at its time. Callers hold
// s.mu.
func (s *Server) advanceTape(token string, now time.Time) *tokenTape {
	m := s.byToken[token]
	if m == nil {
		return nil
	}
	iv := int64(s.opts.WSInterval)
	cur := now.UnixNano() / iv
	tp := s.tape[token]
	if tp == nil {
		tp = &tokenTape{next: cur}
		s.tape[token] = tp
	}
	tp.next = max(tp.next, cur-maxTapeDraw)
	h := fnv.New64a()
	h.Write([]byte(token))
	seed := h.Sum64()
	for ; tp.next <= cur; tp.next++ {
		slot := tp.next
		r := rand.New(rand.NewPCG(seed, uint64(slot)))
		if r.Float64() >= float64(iv)/float64(s.opts.TradeEvery) {
			continue
		}
		at := time.Unix(0, slot*iv+r.Int64N(iv)).UTC().Truncate(time.Millisecond)
		if at.After(now) {
			break // this slot's trade is still to come
		}
		if at.Before(m.Start) || !at.Before(m.End) {
			continue
		}
		b, ok := s.bookJSON(token, at)
		if !ok || len(b.Asks) == 0 || len(b.Bids) == 0 {
			continue
		}
		side, price := store.SideBuy, b.Asks[len(b.Asks)-1].Price
		if r.IntN(2) == 0 {
			side, price = store.SideSell, b.Bids[len(b.Bids)-1].Price
		}
		p, _ := strconv.ParseFloat(price, 64)
		outcome := store.OutcomeUp
		if token == m.DownToken {
			outcome = store.OutcomeDown
		}
		tp.trades = append(tp.trades, tapeTrade{MarketTrade: store.MarketTrade{
			Time: at, Outcome: outcome, Price: p, Size: math.Round((5+r.Float64()*200)*100) / 100, Side: side,
			TxHash: fmt.Sprintf("0x%016x%016x%016x%016x", seed, uint64(slot), seed^uint64(slot), seed+uint64(slot)), // 32 bytes, as on chain
		}})
	}
	return tp
}

type wsTickChange struct {
	EventType   string `json:"event_type"`
	AssetID     string `json:"asset_id"`
	Market      string `json:"market"`
	OldTickSize string `json:"old_tick_size"`
	NewTickSize string `json:"new_tick_size"`
	Timestamp   string `json:"timestamp"`
}

type wsTrade struct {
	EventType       string `json:"event_type"`
	AssetID         string `json:"asset_id"`
	Market          string `json:"market"`
	FeeRateBps      string `json:"fee_rate_bps"`
	Price           string `json:"price"`
	Side            string `json:"side"`
	Size            string `json:"size"`
	Timestamp       string `json:"timestamp"`
	TransactionHash string `json:"transaction_hash"`
}

type wsBestBidAsk struct {
	EventType string `json:"event_type"`
	Market    string `json:"market"`
	AssetID   string `json:"asset_id"`
	BestBid   string `json:"best_bid"`
	BestAsk   string `json:"best_ask"`
	Spread    string `json:"spread"`
	Timestamp string `json:"timestamp"`
}

type wsResolved struct {
	EventType      string   `json:"event_type"`
	ID             string   `json:"id"`
	Market         string   `json:"market"`
	AssetsIDs      []string `json:"assets_ids"`
	WinningAssetID string   `json:"winning_asset_id"`
	WinningOutcome string   `json:"winning_outcome"`
	Timestamp      string   `json:"timestamp"`
}

type wsNewMarket struct {
	EventType             string            `json:"event_type"`
	ID                    string            `json:"id"`
	Question              string            `json:"question"`
	Market                string            `json:"market"`
	Slug                  string            `json:"slug"`
	AssetsIDs             []string          `json:"assets_ids"`
	Outcomes              []string          `json:"outcomes"`
	EventMessage          map[string]string `json:"event_message"`
	Timestamp             string            `json:"timestamp"`
	ConditionID           string            `json:"condition_id"`
	Active                bool              `json:"active"`
	ClobTokenIDs          []string          `json:"clob_token_ids"`
	OrderPriceMinTickSize string            `json:"order_price_min_tick_size"`
	FeesEnabled           bool              `json:"fees_enabled"`
	FeeSchedule           map[string]any    `json:"fee_schedule"`
}

// extras sends what follows the books on a websocket: tick_size_change
// for a market whose tick changed, trades (last_trade_price), and with
// custom features best_bid_ask for every book that moved, new_market for
// markets listed since the connection, and market_resolved for subscribed
// markets that settled.
func (s *Server) extras(ctx context.Context, sc *socket) error {
	now := s.opts.Clock()
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	var out []any
	// Trades go first, oldest first, so that event times never go back:
	// the other events are stamped now, the trades when they happened.
	type soldTrade struct {
		at time.Time
		ev wsTrade
	}
	var sold []soldTrade
	ticks, resolved, fresh := 0, 0, 0
	s.mu.Lock()
	sc.mu.Lock()
	for _, t := range slices.Sorted(maps.Keys(sc.sent)) {
		m := s.byToken[t]
		if m == nil {
			continue
		}
		if old := sc.ticks[t]; old != m.TickSize {
			sc.ticks[t] = m.TickSize
			out = append(out, wsTickChange{EventType: "tick_size_change", AssetID: t, Market: m.ConditionID,
				OldTickSize: strconv.FormatFloat(old, 'f', -1, 64), NewTickSize: strconv.FormatFloat(m.TickSize, 'f', -1, 64), Timestamp: ms})
			ticks++
		}
		b := sc.sent[t]
		if sc.custom && len(b.Bids) > 0 && len(b.Asks) > 0 {
			bb, ba := b.Bids[len(b.Bids)-1].Price, b.Asks[len(b.Asks)-1].Price
			out = append(out, wsBestBidAsk{EventType: "best_bid_ask", Market: m.ConditionID, AssetID: t, BestBid: bb, BestAsk: ba, Timestamp: ms})
		}
		// The tape's trades since the last sent.
		tp := s.advanceTape(t, now)
		for i := sc.heard[t]; i < len(tp.trades); i++ {
			tr := &tp.trades[i]
			tr.sent = true
			sold = append(sold, soldTrade{at: tr.Time, ev: wsTrade{EventType: "last_trade_price", AssetID: t, Market: m.ConditionID, FeeRateBps: "0",
				Price: strconv.FormatFloat(tr.Price, 'f', -1, 64), Side: tr.Side, Size: strconv.FormatFloat(tr.Size, 'f', 2, 64),
				Timestamp: strconv.FormatInt(tr.Time.UnixMilli(), 10), TransactionHash: tr.TxHash}})
		}
		sc.heard[t] = len(tp.trades)
		if sc.custom && s.closed(m, now) && !sc.resolved[m.ID] && s.Winner(m) != store.OutcomeFiftyFifty {
			sc.resolved[m.ID] = true
			win := m.UpToken
			if s.Winner(m) == store.OutcomeDown {
				win = m.DownToken
			}
			out = append(out, wsResolved{EventType: "market_resolved", ID: m.ID, Market: m.ConditionID,
				AssetsIDs: []string{m.UpToken, m.DownToken}, WinningAssetID: win, WinningOutcome: s.Winner(m), Timestamp: ms})
			resolved++
		}
	}
	sc.mu.Unlock()
	if sc.custom {
		for _, m := range s.listed[sc.known:] {
			out = append(out, wsNewMarket{EventType: "new_market", ID: m.ID, Question: fmt.Sprintf("%s Up or Down", m.Coin),
				Market: m.ConditionID, Slug: m.Slug, AssetsIDs: []string{m.UpToken, m.DownToken}, Outcomes: []string{"Up", "Down"},
				EventMessage: map[string]string{"id": m.EventID, "ticker": m.Slug, "slug": m.Slug, "title": fmt.Sprintf("%s Up or Down", m.Coin)},
				Timestamp:    ms, ConditionID: m.ConditionID, Active: true, ClobTokenIDs: []string{m.UpToken, m.DownToken},
				OrderPriceMinTickSize: strconv.FormatFloat(m.TickSize, 'f', -1, 64), FeesEnabled: true,
				FeeSchedule: map[string]any{"exponent": "1", "rate": "0.07", "taker_only": true, "rebate_rate": "0.2"}})
			fresh++
		}
		sc.known = len(s.listed)
	}
	s.mu.Unlock()

	s.wsMu.Lock()
	s.wsStats.Trades += len(sold)
	s.wsStats.TickChanges += ticks
	s.wsStats.Resolved += resolved
	s.wsStats.NewMarkets += fresh
	s.wsMu.Unlock()
	slices.SortStableFunc(sold, func(a, b soldTrade) int { return a.at.Compare(b.at) })
	for _, e := range sold {
		if err := s.send(ctx, sc, e.ev); err != nil {
			return err
		}
	}
	for _, e := range out {
		if err := s.send(ctx, sc, e); err != nil {
			return err
		}
	}
	return nil
}
