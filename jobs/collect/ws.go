package collect

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// wsBooks keeps the order books of the tokens it watches from Polymarket's
// websocket market channel: a `book` event is a token's full book, a
// `price_change` event sets the size of levels (size 0 removes one). It is
// the snapshot loop's first source of books; a token it cannot vouch for
// is polled over REST instead (see get).
//
// A book is trusted only while the connection that built it is up and
// has said something within stale: a connection that dies quietly would
// otherwise leave a frozen book that looks live. Books are forgotten when
// their connection ends, since changes missed while down would make them
// wrong, and rebuilt from the `book` events a new subscription brings.
type wsBooks struct {
	url     string
	hc      *http.Client
	log     *slog.Logger
	now     func() time.Time
	backoff Backoff
	ping    time.Duration // PING cadence
	stale   time.Duration // silence after which books are not trusted
	timeout time.Duration // dial and write bound

	changed chan struct{} // cap 1: want changed

	mu      sync.Mutex
	want    []string           // tokens to subscribe, sorted
	live    bool               // a connection is up and subscribed
	lastMsg time.Time          // last message of the live connection
	books   map[string]*wsBook // books of the live connection, by token
	resync  map[string]bool    // tokens whose book went out of step
	ages    *bookAges          // when each book last changed (stale.go)
	heard   []wsEvent          // events for the listener, handed over after apply

	listener wsListener      // nil: only books are kept
	health   *upstreamHealth // nil: not followed
}

// wsListener hears what the market channel says beyond the books: the
// collector records it (see Collector.wsHeard). Its methods are called from
// the connection's reader, never with the books locked, and must not block
// for long.
type wsListener interface {
	// tickChanged: the token's market trades in a new tick from at.
	tickChanged(token string, tick float64, at time.Time)
	// traded: a trade on the token's book (last_trade_price).
	traded(token string, tr wsTrade)
	// newMarket: Polymarket listed a market (new_market).
	newMarket(slug string, tokens []string)
	// resolved: Polymarket settled the market of the tokens
	// (market_resolved).
	resolved(tokens []string)
}

// wsTrade is a last_trade_price event.
type wsTrade struct {
	Time       time.Time
	Price      float64
	Size       float64
	Side       string
	FeeRateBps float64
	TxHash     string
}

// wsBook is one token's book: size by price, a side each.
type wsBook struct {
	bids, asks map[float64]float64
	last       flexFloat // last trade price
}

func newWSBooks(rawURL string, cfg *Config, log *slog.Logger) (*wsBooks, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("collect: websocket URL %q is not a ws(s) URL", rawURL)
	}
	// The upgrade needs HTTP/1.1: a transport that negotiates HTTP/2
	// cannot hijack the connection.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	return &wsBooks{
		url: rawURL, hc: &http.Client{Transport: t}, log: log.With("upstream", "clob-ws"), now: cfg.Now,
		backoff: cfg.Backoff, ping: cfg.WSPingInterval, stale: cfg.WSStaleAfter, timeout: cfg.RequestTimeout,
		changed: make(chan struct{}, 1),
		books:   map[string]*wsBook{},
		resync:  map[string]bool{},
		ages:    newBookAges(cfg.BookStaleAfter),
	}, nil
}

// watch sets the tokens to subscribe to.
func (w *wsBooks) watch(tokens []string) {
	tokens = slices.Clone(tokens)
	slices.Sort(tokens)
	tokens = slices.Compact(tokens)
	w.mu.Lock()
	same := slices.Equal(tokens, w.want)
	if !same {
		w.want = tokens
	}
	w.mu.Unlock()
	if !same {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

// fresh reports whether the connection is up and has spoken lately.
// Callers hold mu.
func (w *wsBooks) fresh() bool {
	return w.live && w.now().Sub(w.lastMsg) <= w.stale
}

// get returns the books it holds of the tokens, in the CLOB's REST
// shape, and the tokens it cannot vouch for (all of them while the
// connection is down or stale).
func (w *wsBooks) get(tokens []string) (map[string]clobBook, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.fresh() {
		return nil, tokens
	}
	out := make(map[string]clobBook, len(tokens))
	var missing []string
	now := w.now()
	for _, t := range tokens {
		b := w.books[t]
		if stale, resync := w.ages.stale(t, now); stale && b != nil {
			b = nil // frozen: REST is asked, and the socket for a fresh book
			if resync {
				w.resync[t] = true
			}
		}
		if b == nil {
			missing = append(missing, t)
			continue
		}
		out[t] = clobBook{AssetID: flexString(t), Bids: levelsOf(b.bids), Asks: levelsOf(b.asks), LastTradePrice: b.last}
	}
	return out, missing
}

func levelsOf(m map[float64]float64) []clobLevel {
	out := make([]clobLevel, 0, len(m))
	for p, s := range m {
		out = append(out, clobLevel{Price: flexFloat{V: p, Set: true}, Size: flexFloat{V: s, Set: true}})
	}
	return out
}

// run keeps a connection subscribed to the watched tokens until ctx is
// done, reconnecting with backoff when it drops.
func (w *wsBooks) run(ctx context.Context) {
	failures := 0
	down := time.Now() // when the last good connection ended
	for ctx.Err() == nil {
		w.mu.Lock()
		idle := len(w.want) == 0
		w.mu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-w.changed:
			}
			continue
		}
		began := time.Now()
		served, err := w.session(ctx)
		if ctx.Err() != nil {
			return
		}
		w.health.fail("clob-ws", err)
		if served {
			// It worked for a while: the next failure starts the backoff
			// over.
			failures, down = 0, time.Now()
			w.log.WarnContext(ctx, "websocket lost; books come from REST polling until it is back", "err", err, "lasted", time.Since(began).Round(time.Millisecond).String())
		}
		failures++
		if failures == 2 || (failures > 2 && failures%20 == 0) {
			w.log.WarnContext(ctx, "websocket still down; polling REST", "since", down, "attempts", failures-1, "err", err)
		}
		if sleep(ctx, w.backoff.Delay(failures)) != nil {
			return
		}
	}
}

// wsMessageLimit bounds one message: a book dump of every watched token is
// tens of kilobytes.
const wsMessageLimit = 8 << 20

// errWSSilent is a connection that stopped speaking, PONGs included.
var errWSSilent = errors.New("websocket silent")

// session runs one connection until it fails; served reports whether it
// got as far as delivering books.
func (w *wsBooks) session(ctx context.Context) (served bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, w.timeout)
	conn, _, err := websocket.Dial(dctx, w.url, &websocket.DialOptions{HTTPClient: w.hc})
	dcancel()
	if err != nil {
		return false, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(wsMessageLimit)

	w.mu.Lock()
	subscribed := slices.Clone(w.want)
	clear(w.resync)
	w.mu.Unlock()
	if err := w.send(ctx, conn, wsSubscribe{AssetsIDs: subscribed, Type: "market", InitialDump: true, CustomFeatureEnabled: true}); err != nil {
		return false, err
	}
	w.mu.Lock()
	w.live, w.lastMsg = true, w.now()
	w.ages.reset(w.lastMsg)
	w.mu.Unlock()
	readErr := make(chan error, 1)
	gotBook := make(chan struct{}, 1)
	readDone := make(chan struct{})
	go func() { defer close(readDone); readErr <- w.read(ctx, conn, gotBook) }()
	defer func() {
		// The reader must have stopped before the books are forgotten, or
		// a last message of this connection would outlive it.
		cancel()
		<-readDone
		w.mu.Lock()
		w.live = false
		clear(w.books)
		w.mu.Unlock()
	}()

	ping := time.NewTicker(w.ping)
	defer ping.Stop()
	// Silence for a ping and a stale period means the PING went
	// unanswered: the connection is dead even if TCP has not noticed.
	check := time.NewTicker(max(w.stale/4, time.Millisecond))
	defer check.Stop()
	pinged := time.Now()
	for {
		select {
		case err := <-readErr:
			return served, err
		case <-gotBook:
			served = true
			w.health.ok("clob-ws")
			w.log.InfoContext(ctx, "websocket serving books", "tokens", len(subscribed))
		case <-ping.C:
			pinged = time.Now()
			if err := conn.Write(ctx, websocket.MessageText, []byte("PING")); err != nil {
				return served, fmt.Errorf("send PING: %w", err)
			}
		case <-check.C:
			w.mu.Lock()
			silent := w.now().Sub(w.lastMsg)
			resync := keys(w.resync)
			clear(w.resync)
			w.mu.Unlock()
			if silent > w.ping+w.stale {
				return served, fmt.Errorf("%w for %v", errWSSilent, silent.Round(time.Millisecond))
			}
			if w.mutedNow() {
				return served, errWSMute
			}
			if served && silent <= w.stale {
				w.health.ok("clob-ws")
			}
			// A quiet market is not a dead connection: a PING's PONG
			// proves the books current before they go stale.
			if silent > w.stale/2 && time.Since(pinged) > w.stale/2 {
				pinged = time.Now()
				if err := conn.Write(ctx, websocket.MessageText, []byte("PING")); err != nil {
					return served, fmt.Errorf("send PING: %w", err)
				}
			}
			// A book that went out of step is asked for again: dropping
			// and adding the token brings a fresh `book` event.
			if len(resync) > 0 {
				if err := w.send(ctx, conn, wsOperation{AssetsIDs: resync, Operation: "unsubscribe"}); err != nil {
					return served, err
				}
				if err := w.send(ctx, conn, wsOperation{AssetsIDs: resync, Operation: "subscribe", CustomFeatureEnabled: true}); err != nil {
					return served, err
				}
			}
		case <-w.changed:
			w.mu.Lock()
			want := slices.Clone(w.want)
			w.mu.Unlock()
			add, drop := diffSorted(subscribed, want)
			if len(drop) > 0 {
				if err := w.send(ctx, conn, wsOperation{AssetsIDs: drop, Operation: "unsubscribe"}); err != nil {
					return served, err
				}
				w.mu.Lock()
				for _, t := range drop {
					delete(w.books, t)
				}
				w.mu.Unlock()
			}
			if len(add) > 0 {
				if err := w.send(ctx, conn, wsOperation{AssetsIDs: add, Operation: "subscribe", CustomFeatureEnabled: true}); err != nil {
					return served, err
				}
			}
			subscribed = want
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// diffSorted returns what is in want and not in have, and the reverse.
func diffSorted(have, want []string) (add, drop []string) {
	for _, t := range want {
		if _, ok := slices.BinarySearch(have, t); !ok {
			add = append(add, t)
		}
	}
	for _, t := range have {
		if _, ok := slices.BinarySearch(want, t); !ok {
			drop = append(drop, t)
		}
	}
	return add, drop
}

// wsSubscribe is the first message: the tokens, their books at once
// (initial_dump), and best_bid_ask, new_market and market_resolved
// (custom_feature_enabled).
type wsSubscribe struct {
	AssetsIDs            []string `json:"assets_ids"`
	Type                 string   `json:"type"`
	InitialDump          bool     `json:"initial_dump"`
	CustomFeatureEnabled bool     `json:"custom_feature_enabled"`
}

type wsOperation struct {
	AssetsIDs            []string `json:"assets_ids"`
	Operation            string   `json:"operation"`
	CustomFeatureEnabled bool     `json:"custom_feature_enabled"`
}

func (w *wsBooks) send(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("send subscription: %w", err)
	}
	return nil
}

// read applies the connection's messages until it fails, signalling
// gotBook after the first book.
func (w *wsBooks) read(ctx context.Context, conn *websocket.Conn, gotBook chan<- struct{}) error {
	signalled := false
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		events, err := decodeWS(data)
		if err != nil {
			// The books may have missed a change: start over.
			return err
		}
		w.mu.Lock()
		w.lastMsg = w.now()
		w.ages.saw(events, w.lastMsg)
		books := 0
		for i := range events {
			if w.apply(&events[i]) {
				books++
			}
		}
		heard := w.heard
		w.heard = nil
		w.mu.Unlock()
		w.tell(heard)
		if books > 0 && !signalled {
			signalled = true
			gotBook <- struct{}{}
		}
	}
}

// apply folds one event into the books and reports whether it was a book.
// Callers hold mu.
func (w *wsBooks) apply(e *wsEvent) bool {
	switch e.EventType {
	case "book":
		b := &wsBook{bids: make(map[float64]float64, len(e.Bids)), asks: make(map[float64]float64, len(e.Asks)), last: e.LastTradePrice}
		if old := w.books[e.AssetID]; old != nil && !b.last.Set {
			b.last = old.last
		}
		for _, l := range e.Bids {
			setLevel(b.bids, l.Price.V, l.Size.V)
		}
		for _, l := range e.Asks {
			setLevel(b.asks, l.Price.V, l.Size.V)
		}
		w.books[e.AssetID] = b
		delete(w.resync, e.AssetID)
		return true
	case "price_change":
		touched := map[string]wsChange{}
		for _, c := range e.Changes {
			b := w.books[c.AssetID]
			if b == nil {
				continue // no book yet: its `book` event is on its way
			}
			if c.Side == "BUY" {
				setLevel(b.bids, c.Price.V, c.Size.V)
			} else {
				setLevel(b.asks, c.Price.V, c.Size.V)
			}
			touched[c.AssetID] = c
		}
		// The best prices upstream reports after the change check the
		// book: a book that disagrees missed something.
		for token, c := range touched {
			b := w.books[token]
			if (c.BestBid.Set && !samePrice(best(b.bids, true), c.BestBid.V)) ||
				(c.BestAsk.Set && !samePrice(best(b.asks, false), c.BestAsk.V)) {
				delete(w.books, token)
				w.resync[token] = true
			}
		}
	case "last_trade_price":
		if b := w.books[e.AssetID]; b != nil && e.Price.Set && e.Price.V > 0 && e.Price.V <= 1 {
			b.last = e.Price
		}
		w.heard = append(w.heard, *e)
	case "tick_size_change", "new_market", "market_resolved":
		// No level changes: a book keeps its levels in the tick they came
		// in, and the next changes come in the new one.
		w.heard = append(w.heard, *e)
	}
	return false
}

// tell hands events to the listener.
func (w *wsBooks) tell(events []wsEvent) {
	if w.listener == nil {
		return
	}
	for _, e := range events {
		switch e.EventType {
		case "last_trade_price":
			w.listener.traded(e.AssetID, e.Trade)
		case "tick_size_change":
			w.listener.tickChanged(e.AssetID, e.NewTick, e.Time)
		case "new_market":
			w.listener.newMarket(e.Slug, e.Tokens)
		case "market_resolved":
			w.listener.resolved(e.Tokens)
		}
	}
}

func setLevel(m map[float64]float64, price, size float64) {
	if size == 0 {
		delete(m, price)
		return
	}
	m[price] = size
}

// best is a side's best price, 0 for an empty side (as upstream writes
// best_bid and best_ask of an empty side).
func best(m map[float64]float64, bids bool) float64 {
	var p float64
	first := true
	for q := range m {
		if first || (bids && q > p) || (!bids && q < p) {
			p, first = q, false
		}
	}
	return p
}

func samePrice(a, b float64) bool {
	// An empty ask side is reported as 0 or as 1 (nothing below 1).
	if (a == 0 && b == 1) || (a == 1 && b == 0) {
		return true
	}
	return math.Abs(a-b) < 1e-9
}

// wsEvent is one event of the market channel, checked and normalised: the
// older shapes (buys/sells for bids/asks, a price_change's changes with
// its asset_id on the event) read as the current ones.
type wsEvent struct {
	EventType      string
	AssetID        string
	Bids, Asks     []clobLevel
	LastTradePrice flexFloat
	Price          flexFloat // of a last_trade_price event
	Changes        []wsChange
	Time           time.Time // the event's timestamp, when it has one

	Trade   wsTrade  // last_trade_price
	NewTick float64  // tick_size_change
	Slug    string   // new_market
	Tokens  []string // new_market, market_resolved: the market's tokens
	Fees    *feeSchedule
	// Winner is market_resolved's winning token.
	Winner string
}

type wsChange struct {
	AssetID          string
	Price, Size      flexFloat
	Side             string // BUY (a bid) or SELL (an ask)
	BestBid, BestAsk flexFloat
}

type wireEvent struct {
	EventType      string       `json:"event_type"`
	Market         string       `json:"market"`
	Timestamp      flexString   `json:"timestamp"`
	AssetID        flexString   `json:"asset_id"`
	Size           flexFloat    `json:"size"`
	Side           string       `json:"side"`
	FeeRateBps     flexFloat    `json:"fee_rate_bps"`
	TxHash         string       `json:"transaction_hash"`
	OldTickSize    flexFloat    `json:"old_tick_size"`
	NewTickSize    flexFloat    `json:"new_tick_size"`
	TickSize       flexFloat    `json:"tick_size"`
	BestBid        flexFloat    `json:"best_bid"`
	BestAsk        flexFloat    `json:"best_ask"`
	ID             flexString   `json:"id"`
	Slug           string       `json:"slug"`
	AssetsIDs      []flexString `json:"assets_ids"`
	ClobTokenIDs   []flexString `json:"clob_token_ids"`
	Outcomes       []string     `json:"outcomes"`
	WinningAssetID flexString   `json:"winning_asset_id"`
	WinningOutcome string       `json:"winning_outcome"`
	FeeSchedule    *wireFees    `json:"fee_schedule"`
	Bids           []clobLevel  `json:"bids"`
	Asks           []clobLevel  `json:"asks"`
	Buys           []clobLevel  `json:"buys"`
	Sells          []clobLevel  `json:"sells"`
	LastTradePrice flexFloat    `json:"last_trade_price"`
	Price          flexFloat    `json:"price"`
	PriceChanges   []wireChange `json:"price_changes"`
	Changes        []wireChange `json:"changes"`
}

// wireFees is new_market's fee_schedule: snake_case, string numbers.
type wireFees struct {
	Rate       flexFloat `json:"rate"`
	Exponent   flexFloat `json:"exponent"`
	TakerOnly  flexBool  `json:"taker_only"`
	RebateRate flexFloat `json:"rebate_rate"`
}

type wireChange struct {
	AssetID flexString `json:"asset_id"`
	Price   flexFloat  `json:"price"`
	Size    flexFloat  `json:"size"`
	Side    string     `json:"side"`
	BestBid flexFloat  `json:"best_bid"`
	BestAsk flexFloat  `json:"best_ask"`
}

// decodeWS reads one message of the market channel: PONG, one event, or
// an array of them. It checks what the books rely on and fails the whole
// message otherwise: a change applied halfway would leave a wrong book.
func decodeWS(data []byte) ([]wsEvent, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty websocket message", errMalformed)
	}
	if string(data) == "PONG" {
		return nil, nil
	}
	var raw []wireEvent
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("%w: websocket message: %v", errMalformed, err)
		}
	case '{':
		var e wireEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%w: websocket message: %v", errMalformed, err)
		}
		raw = []wireEvent{e}
	default:
		return nil, fmt.Errorf("%w: websocket message %s", errMalformed, snippet(data))
	}
	out := make([]wsEvent, 0, len(raw))
	for _, r := range raw {
		e, err := r.check()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (r *wireEvent) check() (wsEvent, error) {
	e := wsEvent{EventType: r.EventType, AssetID: string(r.AssetID)}
	if ms, err := strconv.ParseInt(strings.TrimSpace(string(r.Timestamp)), 10, 64); err == nil && ms > 0 {
		e.Time = time.UnixMilli(ms).UTC()
	}
	switch r.EventType {
	case "book":
		if e.AssetID == "" {
			return e, fmt.Errorf("%w: book event without asset_id", errMalformed)
		}
		e.Bids, e.Asks = r.Bids, r.Asks
		if e.Bids == nil && e.Asks == nil {
			e.Bids, e.Asks = r.Buys, r.Sells
		}
		for _, l := range slices.Concat(e.Bids, e.Asks) {
			if err := checkLevel(l.Price, l.Size); err != nil {
				return e, fmt.Errorf("book of %s: %w", e.AssetID, err)
			}
		}
		if r.LastTradePrice.Set && r.LastTradePrice.V > 0 && r.LastTradePrice.V <= 1 {
			e.LastTradePrice = r.LastTradePrice
		}
	case "price_change":
		list := slices.Concat(r.PriceChanges, r.Changes)
		if len(list) == 0 && r.Price.Set {
			// The flat 2024 form: one change on the event itself.
			list = []wireChange{{AssetID: r.AssetID, Price: r.Price, Size: r.Size, Side: r.Side}}
		}
		for _, c := range list {
			ch := wsChange{AssetID: cmp.Or(string(c.AssetID), e.AssetID), Price: c.Price, Size: c.Size, BestBid: c.BestBid, BestAsk: c.BestAsk}
			switch strings.ToUpper(c.Side) {
			case "BUY":
				ch.Side = "BUY"
			case "SELL":
				ch.Side = "SELL"
			default:
				return e, fmt.Errorf("%w: price_change of side %q", errMalformed, c.Side)
			}
			if ch.AssetID == "" {
				return e, fmt.Errorf("%w: price_change without asset_id", errMalformed)
			}
			if err := checkLevel(c.Price, c.Size); err != nil {
				return e, fmt.Errorf("price_change of %s: %w", ch.AssetID, err)
			}
			e.Changes = append(e.Changes, ch)
		}
	case "last_trade_price":
		e.Price = r.Price
		if e.AssetID == "" || !r.Price.Set || r.Price.V <= 0 || r.Price.V >= 1 || r.Size.V < 0 {
			return e, fmt.Errorf("%w: last_trade_price of %q at %v × %v", errMalformed, e.AssetID, r.Price.V, r.Size.V)
		}
		side := strings.ToUpper(r.Side)
		if side != "BUY" && side != "SELL" {
			side = ""
		}
		e.Trade = wsTrade{Time: e.Time, Price: r.Price.V, Size: r.Size.V, Side: side, FeeRateBps: r.FeeRateBps.V, TxHash: r.TxHash}
	case "tick_size_change":
		if e.AssetID == "" || !r.NewTickSize.Set || r.NewTickSize.V <= 0 || r.NewTickSize.V >= 1 {
			return e, fmt.Errorf("%w: tick_size_change of %q to %v", errMalformed, e.AssetID, r.NewTickSize.V)
		}
		e.NewTick = r.NewTickSize.V
	case "new_market":
		e.Slug = r.Slug
		e.Tokens = flexStrings(r.ClobTokenIDs)
		if len(e.Tokens) == 0 {
			e.Tokens = flexStrings(r.AssetsIDs)
		}
		if r.FeeSchedule != nil {
			e.Fees = &feeSchedule{Rate: r.FeeSchedule.Rate, Exponent: r.FeeSchedule.Exponent, TakerOnly: r.FeeSchedule.TakerOnly, RebateRate: r.FeeSchedule.RebateRate}
		}
	case "market_resolved":
		e.Tokens = flexStrings(r.AssetsIDs)
		e.Winner = string(r.WinningAssetID)
	}
	return e, nil
}

func flexStrings(in []flexString) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

func checkLevel(price, size flexFloat) error {
	if !price.Set || !size.Set {
		return fmt.Errorf("%w: a level without price or size", errMalformed)
	}
	if price.V <= 0 || price.V >= 1 || size.V < 0 {
		return fmt.Errorf("%w: level %v × %v is outside (0, 1) × [0, ∞)", errMalformed, price.V, size.V)
	}
	return nil
}
