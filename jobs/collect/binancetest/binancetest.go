// Package binancetest is a fake Binance for tests: spot (/api/v3) and
// futures (/fapi/v1) depth and trades, the spot price ticker and 1-second
// klines, on one local server, answering in the real shapes (numbers as
// strings, futures depth with E and T, futures trades without isBestMatch)
// and failing on demand the ways the real ones do (see Fault).
//
// Its data is jobs/gen's model at the fake's clock: prices on the coin
// price path of the seed (the one polytest quotes its books from), books
// and trades as gen draws them.
package binancetest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/internal/fault"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
)

// Fault is one way to answer a request badly; see Server.Fail.
type Fault = fault.Fault

// Routes a Fault can be set on.
const (
	RouteSpotDepth     = "/api/v3/depth"
	RouteFuturesDepth  = "/fapi/v1/depth"
	RouteSpotTrades    = "/api/v3/trades"
	RouteFuturesTrades = "/fapi/v1/trades"
	RouteTicker        = "/api/v3/ticker/price"
	RouteKlines        = "/api/v3/klines"
)

// Options configure a Server. Zero fields take the defaults noted.
type Options struct {
	Clock func() time.Time // time.Now
	Seed  int64            // 1, as polytest's
}

// Server is a fake Binance. Its URL serves as both the spot and the
// futures base URL.
type Server struct {
	URL    string
	srv    *httptest.Server
	faults fault.Set
	clock  func() time.Time
	cfg    gen.Config
	gen    *gen.Generator
}

// maxLevels is the deepest book served (Binance serves 5,000 on spot).
const maxLevels = 1000

// New starts a fake Binance, closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	cfg := gen.DefaultConfig(opts.Clock())
	cfg.Seed = opts.Seed
	cfg.DepthLevels = 100
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatalf("binancetest: %v", err)
	}
	s := &Server{clock: opts.Clock, cfg: cfg, gen: g}
	// Draw today's price path now rather than in the first request, which
	// would then answer late.
	for _, c := range store.Coins {
		_, _ = g.CoinPrice(c, opts.Clock())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+RouteSpotDepth, s.faults.Wrap(RouteSpotDepth, s.depth(store.Spot)))
	mux.HandleFunc("GET "+RouteFuturesDepth, s.faults.Wrap(RouteFuturesDepth, s.depth(store.Future)))
	mux.HandleFunc("GET "+RouteSpotTrades, s.faults.Wrap(RouteSpotTrades, s.trades(store.Spot)))
	mux.HandleFunc("GET "+RouteFuturesTrades, s.faults.Wrap(RouteFuturesTrades, s.trades(store.Future)))
	mux.HandleFunc("GET "+RouteTicker, s.faults.Wrap(RouteTicker, s.ticker))
	mux.HandleFunc("GET "+RouteKlines, s.faults.Wrap(RouteKlines, s.klines))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; requests under way are cut.
func (s *Server) Close() {
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

// Price is the coin's price at t in cents: what the ticker reports and a
// 1-second candle opening at t opens at.
func (s *Server) Price(c store.Coin, t time.Time) float64 {
	p, _ := s.gen.CoinPrice(c, t)
	return math.Round(p*100) / 100
}

// Depth is the book the fake serves for coin c on market k at t.
func (s *Server) Depth(c store.Coin, k store.ExchangeKind, t time.Time) store.DepthSnapshot {
	d, _ := s.gen.Depth(c, k, t)
	return d
}

// Trades returns the n most recent trades of coin c on market k up to now,
// oldest first, as Binance lists them: a Poisson number a second (a dozen
// on BTC spot) at the bid or the ask around the coin's price, ids rising
// with time, quantities log-normal around a few hundred dollars. It is a
// pure function of (Seed, c, k, second), so polls that overlap agree.
func (s *Server) Trades(c store.Coin, k store.ExchangeKind, now time.Time, n int) []store.Trade {
	// Prices in ticks and quantities in lots, divided by exact powers of
	// ten so that they print as the decimals they are.
	ticks, lots, rate := 100.0, 1e5, 12.0
	if k == store.Future {
		ticks, lots, rate = 10, 1e3, 25
	}
	var out []store.Trade
	for sec := now.Unix(); len(out) < n; sec-- {
		r := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(sec)<<8|uint64(len(c))<<1|kindBit(k)))
		count := poisson(r, rate)
		var batch []store.Trade
		for i := range count {
			t := time.Unix(sec, 0).Add(time.Duration(r.Int64N(1000)) * time.Millisecond).UTC()
			p, _ := s.gen.CoinPrice(c, t)
			buyerMaker := r.IntN(2) == 0
			pt := math.Floor(p * ticks)
			if !buyerMaker {
				pt++
			}
			price := pt / ticks
			qty := max(math.Round(300*math.Exp(1.6*r.NormFloat64())/price*lots), 1) / lots
			tr := store.Trade{ID: sec*100 + int64(i), Price: price, Qty: qty, QuoteQty: math.Round(price*qty*1e8) / 1e8,
				Time: t, IsBuyerMaker: buyerMaker}
			if k == store.Spot {
				best := true
				tr.IsBestMatch = &best
			}
			if !tr.Time.After(now) {
				batch = append(batch, tr)
			}
		}
		slices.SortFunc(batch, func(a, b store.Trade) int { return a.Time.Compare(b.Time) })
		for i := range batch { // ids follow time within the second
			batch[i].ID = sec*100 + int64(i)
		}
		out = append(batch[max(0, len(batch)-(n-len(out))):], out...)
	}
	return out
}

func kindBit(k store.ExchangeKind) uint64 {
	if k == store.Future {
		return 1
	}
	return 0
}

// poisson draws a Poisson count of mean lambda (Knuth's method).
func poisson(r *rand.Rand, lambda float64) int {
	limit, k := math.Exp(-lambda), 0
	for p := r.Float64(); p > limit; p *= r.Float64() {
		k++
	}
	return k
}

// errorBody answers as Binance does: {"code":-1121,"msg":"Invalid symbol."}.
func errorBody(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"code":%d,"msg":%q}`, code, msg)
}

func coinOf(symbol string) (store.Coin, bool) {
	c := store.Coin(strings.TrimSuffix(strings.ToUpper(symbol), "USDT"))
	return c, c.Valid() && strings.HasSuffix(strings.ToUpper(symbol), "USDT")
}

// num formats a number as Binance does: spot with 8 decimals, futures as
// short as it reads.
func num(v float64, k store.ExchangeKind) string {
	if k == store.Spot {
		return strconv.FormatFloat(v, 'f', 8, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func limitOf(r *http.Request, def, most int) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return min(n, most), err == nil && n > 0
}

func (s *Server) depth(k store.ExchangeKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := coinOf(r.URL.Query().Get("symbol"))
		if !ok {
			errorBody(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		limit, ok := limitOf(r, 100, maxLevels)
		if !ok {
			errorBody(w, http.StatusBadRequest, -1100, "Illegal characters found in parameter 'limit'.")
			return
		}
		now := s.clock()
		d := s.Depth(c, k, now)
		side := func(ls []store.DepthLevel) [][2]string {
			out := make([][2]string, 0, min(len(ls), limit))
			for _, l := range ls[:min(len(ls), limit)] {
				out = append(out, [2]string{num(l.Price, k), num(l.Quantity, k)})
			}
			return out
		}
		body := map[string]any{"lastUpdateId": d.LastUpdateID, "bids": side(d.Bids), "asks": side(d.Asks)}
		if k == store.Future {
			body["E"] = now.UnixMilli()
			body["T"] = now.UnixMilli() - 3
		}
		writeJSON(w, body)
	}
}

func (s *Server) trades(k store.ExchangeKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := coinOf(r.URL.Query().Get("symbol"))
		if !ok {
			errorBody(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		limit, ok := limitOf(r, 500, 1000)
		if !ok {
			errorBody(w, http.StatusBadRequest, -1100, "Illegal characters found in parameter 'limit'.")
			return
		}
		ts := s.Trades(c, k, s.clock(), limit)
		out := make([]map[string]any, len(ts))
		for i, t := range ts {
			m := map[string]any{
				"id": t.ID, "price": num(t.Price, k), "qty": num(t.Qty, k), "quoteQty": num(t.QuoteQty, k),
				"time": t.Time.UnixMilli(), "isBuyerMaker": t.IsBuyerMaker,
			}
			if t.IsBestMatch != nil {
				m["isBestMatch"] = *t.IsBestMatch
			}
			out[i] = m
		}
		writeJSON(w, out)
	}
}

func (s *Server) ticker(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := s.clock()
	entry := func(symbol string) (map[string]string, bool) {
		c, ok := coinOf(symbol)
		if !ok {
			return nil, false
		}
		return map[string]string{"symbol": strings.ToUpper(symbol), "price": num(s.Price(c, now), store.Spot)}, true
	}
	if sym := q.Get("symbol"); sym != "" {
		e, ok := entry(sym)
		if !ok {
			errorBody(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		writeJSON(w, e)
		return
	}
	var symbols []string
	if err := json.Unmarshal([]byte(q.Get("symbols")), &symbols); err != nil {
		errorBody(w, http.StatusBadRequest, -1100, "Illegal characters found in parameter 'symbols'.")
		return
	}
	out := make([]map[string]string, 0, len(symbols))
	for _, sym := range symbols {
		e, ok := entry(sym)
		if !ok {
			errorBody(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		out = append(out, e)
	}
	writeJSON(w, out)
}

// klines serves candles of 1s, 1m and 1h: [openTime, open, high, low, close,
// volume, closeTime, quoteVolume, trades, takerBase, takerQuote, ignore],
// from startTime, the newest one possibly still open.
func (s *Server) klines(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, ok := coinOf(q.Get("symbol"))
	if !ok {
		errorBody(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	var step time.Duration
	switch q.Get("interval") {
	case "1s":
		step = time.Second
	case "1m":
		step = time.Minute
	case "1h":
		step = time.Hour
	default:
		errorBody(w, http.StatusBadRequest, -1120, "Invalid interval.")
		return
	}
	limit, ok := limitOf(r, 500, 1000)
	if !ok {
		errorBody(w, http.StatusBadRequest, -1100, "Illegal characters found in parameter 'limit'.")
		return
	}
	now := s.clock()
	start := now.Add(-time.Duration(limit) * step)
	if v := q.Get("startTime"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errorBody(w, http.StatusBadRequest, -1100, "Illegal characters found in parameter 'startTime'.")
			return
		}
		start = time.UnixMilli(ms)
	}
	// Candles open on multiples of their interval, the first at or after
	// startTime.
	open := start.Truncate(step)
	if open.Before(start) {
		open = open.Add(step)
	}
	out := [][]any{}
	for ; len(out) < limit && !open.After(now); open = open.Add(step) {
		o, cl := s.Price(c, open), s.Price(c, open.Add(step))
		out = append(out, []any{
			open.UnixMilli(), num(o, store.Spot), num(max(o, cl), store.Spot), num(min(o, cl), store.Spot), num(cl, store.Spot),
			"1.25000000", open.Add(step).UnixMilli() - 1, num(1.25*o, store.Spot), 42, "0.60000000", num(0.6*o, store.Spot), "0",
		})
	}
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
