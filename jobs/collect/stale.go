package collect

import (
	"errors"
	"time"
)

// bookAges follows, for one websocket connection, when each token's book
// last changed (a `book` event, or a `price_change` touching it) and when
// the connection last sent market data at all (PONGs are not data).
//
// A connection can stay up, answer every PING and still send nothing: its
// books then freeze while looking live. So a book unchanged for longer than
// after (Config.BookStaleAfter, 5 s) is not vouched for: the tick polls it
// from REST instead (a fresh book, or a gap when REST fails too), and the
// token is subscribed again, which brings a fresh `book` event. A market
// quiet for that long costs a REST poll of its book per tick, nothing
// more. A connection that has sent no market data for twice the bound
// while books were found stale is mute, and is made again.
//
// A zero bound turns this off. Callers hold wsBooks.mu.
type bookAges struct {
	after    time.Duration
	changed  map[string]time.Time // by token
	resynced map[string]time.Time // by token: last resubscription asked
	data     time.Time            // last market data of the connection
	staleAt  time.Time            // last time a stale book was asked for
}

func newBookAges(after time.Duration) *bookAges {
	return &bookAges{after: after, changed: map[string]time.Time{}, resynced: map[string]time.Time{}}
}

// saw notes the events of one message, read at now.
func (a *bookAges) saw(events []wsEvent, now time.Time) {
	if len(events) == 0 {
		return // PONG
	}
	a.data = now
	for i := range events {
		switch e := &events[i]; e.EventType {
		case "book":
			a.changed[e.AssetID] = now
		case "price_change":
			for _, c := range e.Changes {
				a.changed[c.AssetID] = now
			}
		}
	}
}

// stale reports whether the token's book has not changed for longer than
// the bound, and whether its resubscription is due (once per bound).
func (a *bookAges) stale(token string, now time.Time) (stale, resync bool) {
	at, ok := a.changed[token]
	if !ok || a.after <= 0 || now.Sub(at) <= a.after {
		return false, false
	}
	a.staleAt = now
	if now.Sub(a.resynced[token]) > a.after {
		a.resynced[token] = now
		resync = true
	}
	return true, resync
}

// mute reports whether the connection has sent no market data for twice
// the bound while its books were asked for and found stale.
func (a *bookAges) mute(now time.Time) bool {
	return a.after > 0 && !a.data.IsZero() && now.Sub(a.data) > 2*a.after && now.Sub(a.staleAt) <= a.after
}

// forget drops what is known of tokens no longer subscribed, so that a
// connection up for days holds the markets it follows, not every one it
// followed (some 2,500 tokens a day).
func (a *bookAges) forget(tokens []string) {
	for _, t := range tokens {
		delete(a.changed, t)
		delete(a.resynced, t)
	}
}

// reset forgets everything: a new connection.
func (a *bookAges) reset(now time.Time) {
	clear(a.changed)
	clear(a.resynced)
	a.data, a.staleAt = now, time.Time{}
}

// errWSMute is a connection that answers PING but sends no market data.
var errWSMute = errors.New("websocket mute: PONGs but no market data while its books went stale")

// mutedNow reports whether the connection is mute (bookAges.mute).
func (w *wsBooks) mutedNow() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ages.mute(w.now())
}

// lastData is when the connection (the last one, if none is up) last sent
// market data; zero before any.
func (w *wsBooks) lastData() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ages.data
}

// tradesFlowing reports whether the socket is delivering market data, and
// so trades (last_trade_price), now: a connection is up, holds books, and
// has sent data within the staleness bound (or WSStaleAfter, whichever is
// longer).
func (w *wsBooks) tradesFlowing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	bound := max(w.ages.after, w.stale)
	return w.live && w.books.Len() > 0 && !w.ages.data.IsZero() && w.now().Sub(w.ages.data) <= bound
}
