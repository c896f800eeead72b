package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/updown/updown/jobs/book"
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
	want    []string        // tokens to subscribe, sorted
	live    bool            // a connection is up and subscribed
	lastMsg time.Time       // last message of the live connection
	books   *book.Books     // books of the live connection, by token
	resync  map[string]bool // tokens whose book went out of step
	ages    *bookAges       // when each book last changed (stale.go)
	heard   []wsEvent       // events for the listener, handed over after apply
	ended   time.Time       // last market data of the last connection that ended
	// lost holds the tokens dropped and subscribed again for a fresh book
	// (resync), by the instant from which their trades may be missing:
	// none comes between the unsubscription and the subscription.
	lost map[string]time.Time
	// refound holds the stretches of lost tokens whose book came back,
	// for the listener, handed over after apply as heard is.
	refound []lostTrades

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
	// subscribed: a connection serves the tokens' books, after none did
	// (a start or a reconnection). A tick_size_change sent while no
	// connection was up is lost, and its books do not tell the tick.
	subscribed(tokens []string)
	// tradesLost: the trades of each token over its stretch may not have
	// come (a resubscription for a fresh book).
	tradesLost(lost []lostTrades)
}

// lostTrades is a stretch [from, to) in which a token's trades may not
// have reached the collector.
type lostTrades struct {
	token    string
	from, to time.Time
}

// The market channel's events and the books they build follow the book
// package's rules, which the archive importer shares (DESIGN 2).
type (
	wsEvent = book.Event
	wsTrade = book.Trade
)

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
		books:   book.NewBooks(),
		resync:  map[string]bool{},
		lost:    map[string]time.Time{},
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
		b := w.books.Get(t)
		if stale, resync := w.ages.stale(t, now); stale && b != nil {
			b = nil // frozen: REST is asked, and the socket for a fresh book
			if resync {
				w.resync[t] = true
			}
		}
		if b == nil || (len(b.Asks) == 0 && !b.Last.Set) {
			// No book, or one without asks whose last trade the socket has
			// not told (its book events carry last_trade_price ""): REST's
			// book carries the last trade, which prices it (see lastTrades).
			missing = append(missing, t)
			continue
		}
		out[t] = clobBook{AssetID: flexString(t), Bids: b.Bids.Levels(), Asks: b.Asks.Levels(), LastTradePrice: b.Last}
	}
	return out, missing
}

// lastTrades gives the books the socket holds without a last trade price
// the one REST's books of the same tokens carry: a trade the socket has
// not heard of (before its subscription) prices a book without asks. A
// last trade the socket tells later replaces it.
func (w *wsBooks) lastTrades(books map[string]clobBook) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, rb := range books {
		if b := w.books.Get(t); b != nil && !b.Last.Set && rb.LastTradePrice.Set && rb.LastTradePrice.V > 0 && rb.LastTradePrice.V <= 1 {
			b.Last = rb.LastTradePrice
		}
	}
}

// endedData is the last market data of a connection that held books and
// ended: the tick of the markets it served was told on it until then.
// Zero before any.
func (w *wsBooks) endedData() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
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
		// Tokens asked for again whose book did not come before the end:
		// their trades may be missing up to it (and from there the
		// connection's own trades gap, tradeWatch, takes over).
		refound := w.closeLost(nil, w.now())
		if w.books.Len() > 0 {
			// It held books: a tick change before its last data would
			// have come on it.
			w.ended = later(w.ended, w.ages.data)
		}
		w.books.Reset()
		w.mu.Unlock()
		w.tellLost(refound)
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
			if w.listener != nil {
				w.listener.subscribed(subscribed)
			}
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
				w.markLost(resync)
				if err := w.send(ctx, conn, wsOperation{AssetsIDs: resync, Operation: "unsubscribe"}); err != nil {
					return served, err
				}
				if err := w.send(ctx, conn, wsSubscribeOp(resync)); err != nil {
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
				w.dropTokens(drop)
			}
			if len(add) > 0 {
				if err := w.send(ctx, conn, wsSubscribeOp(add)); err != nil {
					return served, err
				}
			}
			subscribed = want
		}
	}
}

// dropTokens forgets the books of tokens unsubscribed and what is known
// of their ages.
func (w *wsBooks) dropTokens(tokens []string) {
	w.mu.Lock()
	for _, t := range tokens {
		w.books.Drop(t)
	}
	w.ages.forget(tokens)
	refound := w.closeLost(tokens, w.now())
	w.mu.Unlock()
	w.tellLost(refound)
}

// markLost records that the tokens are about to be dropped and subscribed
// again for a fresh book: Polymarket sends no trade of a token between
// the two, and a book asked for again because it went stale may be one
// whose feed froze after its last change. So from that change (now, for
// a token never heard of), less the delivery of a message
// (wsDeliveryLag), their trades may be missing until the fresh book
// arrives (apply, which tells whether any can be). A token already
// waiting (one found out of step, apply) keeps its earlier start.
func (w *wsBooks) markLost(tokens []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	for _, t := range tokens {
		w.lostSince(t, now)
	}
}

// lostSince records the token's trades as possibly missing from its
// book's last change, or now when earlier or unknown, less
// wsDeliveryLag, unless already recorded. Callers hold mu.
func (w *wsBooks) lostSince(token string, now time.Time) {
	if _, ok := w.lost[token]; ok {
		return
	}
	from := now
	if c, ok := w.ages.changed[token]; ok && c.Before(from) {
		from = c
	}
	w.lost[token] = from.Add(-wsDeliveryLag)
}

// losing reports whether one of the tokens was dropped and subscribed
// again and its fresh book has not come: its stretch of lost trades is
// still open. False on a nil wsBooks (no websocket).
func (w *wsBooks) losing(tokens ...string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range tokens {
		if _, ok := w.lost[t]; ok {
			return true
		}
	}
	return false
}

// closeLost ends at to the stretches of the lost tokens among tokens (all
// of them when tokens is nil) and returns them for the listener. Callers
// hold mu.
func (w *wsBooks) closeLost(tokens []string, to time.Time) []lostTrades {
	var out []lostTrades
	for t, from := range w.lost {
		if tokens == nil || slices.Contains(tokens, t) {
			out = append(out, lostTrades{token: t, from: from, to: to})
			delete(w.lost, t)
		}
	}
	return out
}

// tellLost hands the stretches of lost trades to the listener.
func (w *wsBooks) tellLost(lost []lostTrades) {
	if w.listener != nil && len(lost) > 0 {
		w.listener.tradesLost(lost)
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

// wsOperation changes the set of tokens of a live connection. A
// subscription asks for the tokens' books at once (initial_dump), as
// Polymarket's own client does on every one (rs-clob-client,
// SubscriptionRequest::market): the books of markets added to a live
// connection, and those asked for again (resync), come from their `book`
// events.
type wsOperation struct {
	AssetsIDs            []string `json:"assets_ids"`
	Operation            string   `json:"operation"`
	InitialDump          bool     `json:"initial_dump,omitempty"`
	CustomFeatureEnabled bool     `json:"custom_feature_enabled,omitempty"`
}

// wsSubscribeOp is the operation subscribing a live connection to tokens.
func wsSubscribeOp(tokens []string) wsOperation {
	return wsOperation{AssetsIDs: tokens, Operation: "subscribe", InitialDump: true, CustomFeatureEnabled: true}
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
	// One decoder a connection: it keeps what frames repeat (ids, names)
	// and carves their changes from memory it never writes again, so
	// events held past the next frame (heard) stay as they were.
	var dec book.Decoder
	var events []book.Event
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		events, err = dec.DecodeAppend(events[:0], data)
		if err != nil {
			// The books may have missed a change: start over.
			return err
		}
		if w.fold(events) > 0 && !signalled {
			signalled = true
			gotBook <- struct{}{}
		}
	}
}

// fold applies the events of one message, read now, and hands what the
// listener hears of them over; it returns how many were books.
func (w *wsBooks) fold(events []wsEvent) (books int) {
	w.mu.Lock()
	w.lastMsg = w.now()
	for i := range events {
		if w.apply(&events[i]) {
			books++
		}
	}
	// After apply, which reads when a book out of step last changed.
	w.ages.saw(events, w.lastMsg)
	heard, refound := w.heard, w.refound
	w.heard, w.refound = nil, nil
	w.mu.Unlock()
	w.tell(heard)
	w.tellLost(refound)
	return books
}

// apply folds one event into the books (book.Books.Apply: the rules the
// importer shares) and reports whether it was a book. A book that went
// out of step is asked for again (see session). Callers hold mu.
func (w *wsBooks) apply(e *wsEvent) bool {
	held := w.books.Get(e.AssetID) // a book event replaces it, not changes it
	isBook, outOfStep := w.books.Apply(e)
	if isBook {
		delete(w.resync, e.AssetID)
		if from, ok := w.lost[e.AssetID]; ok {
			// The fresh book asked for: the token's trades flow again. A
			// trade takes size from the book, so a fresh book whose levels
			// are those held (a quiet market's, resubscribed every
			// BookStaleAfter to tell it from a frozen feed) says that none
			// was likely made in between (a level topped back up to the
			// same size would hide one); one that differs, or a book that
			// had gone out of step, may have missed some.
			delete(w.lost, e.AssetID)
			if fresh := w.books.Get(e.AssetID); held == nil || !slices.Equal(held.Bids, fresh.Bids) || !slices.Equal(held.Asks, fresh.Asks) {
				w.refound = append(w.refound, lostTrades{token: e.AssetID, from: from, to: w.lastMsg})
			}
		}
		return true
	}
	for _, t := range outOfStep {
		w.resync[t] = true
		// What it missed came after its last change before this one
		// (saw has not marked this one yet): its trades may be missing
		// from then until its fresh book.
		w.lostSince(t, w.lastMsg)
	}
	switch e.EventType {
	case "last_trade_price", "tick_size_change", "new_market", "market_resolved":
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
