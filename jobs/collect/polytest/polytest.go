// Package polytest is a fake Polymarket for tests: Gamma's /events and
// /markets, the CLOB's /book and /books, and the CLOB's websocket market
// channel on one local server, answering
// in the real shapes (string numbers, JSON-encoded outcomes, outcomePrices
// and clobTokenIds, books listed worst level first) and failing on demand
// the ways the real ones do (see Fault).
//
// Prices are realistic and consistent with binancetest at the same seed:
// an Up book is quoted around Φ(ln(S_t/S_0)/(σ√(T−t))) of the coin price
// path jobs/gen models, and a market settles Up when the price at its end,
// in cents, is at or above the price at its start, which is what
// binancetest's 1-second candles open at.
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
}

// Server is a fake Polymarket. Its URL serves as both the Gamma and the
// CLOB base URL; WSURL is the CLOB's websocket market channel.
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

	wsMu      sync.Mutex
	sockets   map[*socket]bool
	wsStats   WSStats
	wsHistory map[string][]store.Book // by token
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
	// Quirks of how the market is answered, each a real variation.
	DownFirst          bool // outcomes and clobTokenIds list Down first
	NumericID          bool // id as a JSON number instead of a string
	OmitEventStartTime bool
}

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
	slug := s.opts.Scheme.Slugs(c, mt, start)[0]
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
			m := s.AddWindow(sr.Coin, sr.MarketType, t)
			t = m.End
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

// Winner is the outcome the market settles to.
func (s *Server) Winner(m *Market) string {
	if s.CoinPrice(m.Coin, m.End) >= s.CoinPrice(m.Coin, m.Start) {
		return store.OutcomeUp
	}
	return store.OutcomeDown
}

// closed reports whether the market has settled by now.
func (s *Server) closed(m *Market, now time.Time) bool {
	return !now.Before(m.End.Add(s.opts.SettleAfter))
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
		prices = []string{"0", "1"}
		if s.Winner(m) == store.OutcomeUp {
			prices = []string{"1", "0"}
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
		"orderPriceMinTickSize": 0.01,
	}
	if !m.OmitEventStartTime {
		out["eventStartTime"] = m.Start.Format(time.RFC3339)
	}
	if closed {
		// Gamma writes closedTime the Postgres way.
		out["closedTime"] = m.End.Add(s.opts.SettleAfter).Add(3 * time.Second).Format("2006-01-02 15:04:05-07")
	}
	if m.NumericID {
		id, _ := strconv.ParseInt(m.ID, 10, 64)
		out["id"] = id
	}
	if withEvents {
		out["events"] = []map[string]any{{"id": m.EventID, "slug": m.Slug}}
	}
	return out
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	if m, ok := s.bySlug[r.URL.Query().Get("slug")]; ok {
		out = append(out, map[string]any{
			"id": m.EventID, "slug": m.Slug, "title": fmt.Sprintf("%s Up or Down", m.Coin),
			"startDate": m.Start.Add(-24 * time.Hour).Format(time.RFC3339), "endDate": m.End.Format(time.RFC3339),
			"closed":  s.closed(m, now),
			"markets": []map[string]any{s.marketJSON(m, now, false)},
		})
	}
	writeJSON(w, out)
}

func (s *Server) markets(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Clock()
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, slug := range q["slug"] {
		if m, ok := s.bySlug[slug]; ok {
			out = append(out, s.marketJSON(m, now, true))
		}
	}
	for _, id := range q["id"] {
		if m, ok := s.byID[id]; ok {
			out = append(out, s.marketJSON(m, now, true))
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
	up := s.fairUp(m, now)
	// The Up book's best ask and bid in cents, one to three ticks apart.
	h := fnv.New64a()
	h.Write([]byte(token))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(now.UnixMilli()/100)))
	spread := 1 + r.IntN(3)
	ask := min(max(int(math.Round(up*100+float64(spread)/2)), 1+spread), 99)
	bid := ask - spread
	if token == m.DownToken {
		ask, bid = 100-bid, 100-ask
	}
	level := func(cents int) clobLevel {
		size := 50 + r.Float64()*r.Float64()*4950
		return clobLevel{Price: strconv.FormatFloat(float64(cents)/100, 'f', -1, 64), Size: strconv.FormatFloat(math.Round(size*100)/100, 'f', 2, 64)}
	}
	bids := make([]clobLevel, 0, s.opts.BookLevels)
	asks := make([]clobLevel, 0, s.opts.BookLevels)
	for p := bid; p >= 1 && len(bids) < s.opts.BookLevels; p-- {
		bids = append(bids, level(p))
	}
	for p := ask; p <= 99 && len(asks) < s.opts.BookLevels; p++ {
		asks = append(asks, level(p))
	}
	// Worst first, as the CLOB lists them.
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
		TickSize:       "0.01",
		LastTradePrice: strconv.FormatFloat(float64(ask)/100, 'f', -1, 64),
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

// QuickScheme is a collect.SlugScheme of short windows, so that a test sees
// markets start, end and resolve in seconds: every series' windows are
// Length long from Origin (the Unix epoch when zero), named
// {coin}-quick-{type}-{unix ms of start}. Length must be at least a second,
// so that slugs, which carry the start in seconds, stay unique.
type QuickScheme struct {
	Origin time.Time
	Length time.Duration
}

// Window implements collect.SlugScheme.
func (q QuickScheme) Window(_ store.Coin, _ store.MarketType, t time.Time) (start, end time.Time) {
	origin := q.Origin
	if origin.IsZero() {
		origin = time.Unix(0, 0)
	}
	k := t.Sub(origin) / q.Length
	if t.Before(origin.Add(k * q.Length)) {
		k--
	}
	start = origin.Add(k * q.Length).UTC()
	return start, start.Add(q.Length)
}

// Slugs implements collect.SlugScheme.
func (q QuickScheme) Slugs(c store.Coin, mt store.MarketType, start time.Time) []string {
	return []string{fmt.Sprintf("%s-quick-%s-%d", strings.ToLower(string(c)), mt, start.UnixMilli())}
}

// The websocket market channel.
//
// A client connects to WSURL and subscribes with
// {"assets_ids":[...],"type":"market"}; it is sent a `book` event of every
// token it names that the fake lists (in one array, as upstream does), then
// every Options.WSInterval a `price_change` event per market whose books
// moved, setting the changed levels (size "0" removes one), with the best
// bid and ask after the change. {"assets_ids":[...],"operation":"subscribe"}
// and "unsubscribe" change the set on the open connection; "PING" is
// answered "PONG". Books follow the same price model as /books.

// socket is one websocket client's connection.
type socket struct {
	conn    *websocket.Conn
	stalled atomic.Bool
	mu      sync.Mutex
	sent    map[string]clobBook // last book sent, by subscribed token
}

// WSStats counts what the websocket endpoint has seen.
type WSStats struct {
	Connections int // websocket sessions accepted
	Open        int // open now
	Pings       int // PING messages received
	Subscribes  int // subscription messages received, the first included
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
	sc := &socket{conn: conn, sent: map[string]clobBook{}}
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
				if s.subscribe(ctx, sc, op.AssetsIDs) != nil {
					return
				}
			case "unsubscribe":
				sc.mu.Lock()
				for _, t := range op.AssetsIDs {
					delete(sc.sent, t)
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
		if sc.stalled.Load() {
			continue
		}
		if s.changes(ctx, sc) != nil {
			return
		}
	}
}

type wsRequest struct {
	AssetsIDs []string `json:"assets_ids"`
	Type      string   `json:"type"`
	Operation string   `json:"operation"`
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
			events = append(events, wsBook{EventType: "book", clobBook: b})
		}
	}
	sc.mu.Unlock()
	s.mu.Unlock()
	for _, e := range events {
		s.remember(e.clobBook)
	}
	if len(events) == 0 {
		return nil
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
	bestOf := func(levels []clobLevel) string {
		if len(levels) == 0 {
			return "0"
		}
		return levels[len(levels)-1].Price // worst first
	}
	bb, ba := bestOf(nb.Bids), bestOf(nb.Asks)
	var out []wsChange
	side := func(name string, was, is []clobLevel) {
		prev := map[string]string{}
		for _, l := range was {
			prev[l.Price] = l.Size
		}
		cur := map[string]bool{}
		for _, l := range is {
			cur[l.Price] = true
			if prev[l.Price] != l.Size {
				out = append(out, wsChange{AssetID: nb.AssetID, Price: l.Price, Size: l.Size, Side: name})
			}
		}
		for _, l := range was {
			if !cur[l.Price] {
				out = append(out, wsChange{AssetID: nb.AssetID, Price: l.Price, Size: "0", Side: name})
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
