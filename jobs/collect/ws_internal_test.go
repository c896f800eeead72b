package collect

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
)

// wsState is a wsBooks with a connection up, fed by hand, on a clock the
// test moves.
func wsState(t *testing.T) (*wsBooks, *time.Time) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Now: func() time.Time { return now }, WSPingInterval: 10 * time.Second, WSStaleAfter: 3 * time.Second, RequestTimeout: time.Second}
	w, err := newWSBooks("wss://example.invalid/ws/market", &cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	w.live, w.lastMsg = true, now
	return w, &now
}

// feed applies one message as read does (fold).
func (w *wsBooks) feed(t *testing.T, msg string) {
	t.Helper()
	events, err := book.Decode([]byte(msg))
	if err != nil {
		t.Fatalf("decode %s: %v", msg, err)
	}
	w.fold(events)
}

func (w *wsBooks) storeBook(t *testing.T, token string) (store.Book, bool) {
	t.Helper()
	got, missing := w.get([]string{token})
	if len(missing) > 0 {
		return store.Book{}, false
	}
	b, err := got[token].book(10)
	if err != nil {
		t.Fatalf("book of %s: %v", token, err)
	}
	return b, true
}

func lv(p, s float64) store.Level { return store.Level{Price: p, Size: s} }

// TestWSBooksApplyEvents checks that book snapshots and price_change
// deltas build the books upstream describes, in today's shapes and the
// older ones.
func TestWSBooksApplyEvents(t *testing.T) {
	w, now := wsState(t)
	// The subscription's answer: an array of books, levels worst first.
	w.feed(t, `[{"event_type":"book","asset_id":"A","market":"0x1","bids":[{"price":".48","size":"30"},{"price":".49","size":"20"}],
		"asks":[{"price":".53","size":"60"},{"price":".52","size":"25"}],"timestamp":"1","hash":"0x","last_trade_price":"0.5","tick_size":"0.01"},
		{"event_type":"book","asset_id":"B","buys":[{"price":"0.47","size":"5"}],"sells":[]}]`)
	want := store.Book{Bids: []store.Level{lv(.49, 20), lv(.48, 30)}, Asks: []store.Level{lv(.52, 25), lv(.53, 60)}}
	if b, ok := w.storeBook(t, "A"); !ok || !equalBook(b, want) {
		t.Fatalf("book A %+v, want %+v", b, want)
	}
	// A new level, a changed one, an emptied one (size 0), across two
	// tokens in one event.
	w.feed(t, `{"event_type":"price_change","market":"0x1","timestamp":"2","price_changes":[
		{"asset_id":"A","price":"0.5","size":"7","side":"BUY","hash":"h","best_bid":"0.5","best_ask":"0.52"},
		{"asset_id":"A","price":"0.52","size":"0","side":"SELL","hash":"h","best_bid":"0.5","best_ask":"0.53"},
		{"asset_id":"A","price":"0.53","size":"61.5","side":"SELL","hash":"h","best_bid":"0.5","best_ask":"0.53"},
		{"asset_id":"B","price":"0.6","size":"3","side":"SELL","hash":"h","best_bid":"0.47","best_ask":"0.6"}]}`)
	want = store.Book{Bids: []store.Level{lv(.5, 7), lv(.49, 20), lv(.48, 30)}, Asks: []store.Level{lv(.53, 61.5)}}
	if b, ok := w.storeBook(t, "A"); !ok || !equalBook(b, want) {
		t.Fatalf("book A after changes %+v, want %+v", b, want)
	}
	if b, ok := w.storeBook(t, "B"); !ok || !equalBook(b, store.Book{Bids: []store.Level{lv(.47, 5)}, Asks: []store.Level{lv(.6, 3)}}) {
		t.Fatalf("book B after changes %+v", b)
	}
	// The older price_change shape: changes, asset_id on the event.
	w.feed(t, `{"event_type":"price_change","asset_id":"B","changes":[{"price":"0.6","side":"SELL","size":"0"}]}`)
	if b, _ := w.storeBook(t, "B"); len(b.Asks) != 0 {
		t.Fatalf("book B asks %+v after the only ask was emptied", b.Asks)
	}
	// A trade moves the last trade price, which prices a book without asks.
	w.feed(t, `{"event_type":"last_trade_price","asset_id":"B","price":"0.55","side":"BUY","size":"10"}`)
	if got, _ := w.get([]string{"B"}); !got["B"].LastTradePrice.Set || got["B"].LastTradePrice.V != .55 {
		t.Fatalf("last trade price of B %+v", got["B"].LastTradePrice)
	}
	// Events that change no level, a change to a token without a book,
	// and PONG leave the books alone.
	w.feed(t, `{"event_type":"tick_size_change","asset_id":"A","old_tick_size":"0.01","new_tick_size":"0.001"}`)
	w.feed(t, `{"event_type":"price_change","price_changes":[{"asset_id":"C","price":"0.5","size":"1","side":"BUY"}]}`)
	w.feed(t, "PONG")
	if b, _ := w.storeBook(t, "A"); !equalBook(b, want) {
		t.Fatalf("book A %+v changed by events that change no level", b)
	}
	if _, missing := w.get([]string{"A", "C"}); !slices.Equal(missing, []string{"C"}) {
		t.Fatalf("missing %v, want [C]: a delta without a book is no book", missing)
	}

	// A change after which upstream's best bid is not the book's: the book
	// missed something, is dropped and asked for again.
	w.feed(t, `{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"0.3","size":"1","side":"BUY","best_bid":"0.51","best_ask":"0.53"}]}`)
	if _, ok := w.storeBook(t, "A"); ok || !w.resync["A"] {
		t.Fatalf("book A kept after disagreeing with upstream's best bid (resync %v)", w.resync)
	}
	w.feed(t, `{"event_type":"book","asset_id":"A","bids":[],"asks":[{"price":"0.9","size":"1"}]}`)
	if b, ok := w.storeBook(t, "A"); !ok || w.resync["A"] || !equalBook(b, store.Book{Bids: []store.Level{}, Asks: []store.Level{lv(.9, 1)}}) {
		t.Fatalf("book A %+v (%v) after a fresh book event", b, ok)
	}

	// Silence past WSStaleAfter: no book is trusted, REST is asked for all.
	*now = now.Add(3100 * time.Millisecond)
	if got, missing := w.get([]string{"A", "B"}); len(got) != 0 || len(missing) != 2 {
		t.Fatalf("stale socket served %v, missing %v", got, missing)
	}
	w.feed(t, "PONG")
	if _, missing := w.get([]string{"A", "B"}); len(missing) != 0 {
		t.Fatalf("a PONG did not make the socket fresh again: missing %v", missing)
	}
	w.live = false
	if _, missing := w.get([]string{"A"}); len(missing) != 1 {
		t.Fatal("a socket that is down served books")
	}
}

func equalBook(a, b store.Book) bool {
	return slices.Equal(a.Bids, b.Bids) && slices.Equal(a.Asks, b.Asks)
}

// TestDecodeWSRejects checks that messages the books cannot rely on fail
// whole.
func TestDecodeWSRejects(t *testing.T) {
	for _, msg := range []string{
		``, `hello`, `{"event_type":"book"`, `[{"event_type":"book","asset_id":"A","bids":[{"price":"1.5","size":"1"}]}]`,
		`{"event_type":"book","bids":[]}`,
		`{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"0.5","size":"-1","side":"BUY"}]}`,
		`{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"0.5","size":"1","side":"HOLD"}]}`,
		`{"event_type":"price_change","price_changes":[{"price":"0.5","size":"1","side":"BUY"}]}`,
		`{"event_type":"price_change","price_changes":[{"asset_id":"A","price":"NaN","size":"1","side":"BUY"}]}`,
		`{"event_type":"price_change","price_changes":[{"asset_id":"A","size":"1","side":"BUY"}]}`,
	} {
		if _, err := book.Decode([]byte(msg)); err == nil {
			t.Errorf("book.Decode accepted %q", msg)
		}
	}
	if ev, err := book.Decode([]byte(`{"event_type":"new_market","id":"1","assets_ids":["1","2"]}`)); err != nil || len(ev) != 1 {
		t.Errorf("an event the books ignore: %v %v", ev, err)
	}
}

// FuzzDecodeWS checks that no message panics the decoder or the books, and
// that whatever is accepted leaves books of valid levels only.
func FuzzDecodeWS(f *testing.F) {
	for _, s := range []string{
		"PONG",
		`[{"event_type":"book","asset_id":"A","bids":[{"price":".48","size":"30"}],"asks":[{"price":".52","size":"25"}],"last_trade_price":"0.5"}]`,
		`{"event_type":"price_change","market":"0x1","price_changes":[{"asset_id":"A","price":"0.5","size":"0","side":"BUY","best_bid":"0.48","best_ask":"0.52"}]}`,
		`{"event_type":"price_change","asset_id":"A","changes":[{"price":"0.52","side":"sell","size":"3"}]}`,
		`{"event_type":"last_trade_price","asset_id":"A","price":"0.51"}`,
		`{"event_type":"book","asset_id":1,"buys":[{"price":0.1,"size":2}],"sells":null}`,
		`[]`, `[{}]`, `{"event_type":"tick_size_change"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		events, err := book.Decode(msg)
		if err != nil {
			return
		}
		w, _ := wsState(t)
		w.feed(t, `[{"event_type":"book","asset_id":"A","bids":[{"price":".48","size":"30"}],"asks":[{"price":".52","size":"25"}]}]`)
		w.mu.Lock()
		for i := range events {
			w.apply(&events[i])
		}
		tokens := w.books.Tokens()
		w.mu.Unlock()
		got, _ := w.get(tokens)
		for token, b := range got {
			bk, err := b.book(1000)
			if err != nil {
				t.Fatalf("book of %q after %q: %v", token, msg, err)
			}
			for _, l := range slices.Concat(bk.Bids, bk.Asks) {
				if !(l.Price > 0 && l.Price < 1 && l.Size > 0) {
					t.Fatalf("book of %q kept level %+v after %q", token, l, msg)
				}
			}
			if b.LastTradePrice.Set && !(b.LastTradePrice.V > 0 && b.LastTradePrice.V <= 1) {
				t.Fatalf("last trade price %v after %q", b.LastTradePrice.V, strings.TrimSpace(string(msg)))
			}
		}
	})
}

// TestWSDropForgetsTokens: a token unsubscribed on a live connection
// leaves neither its book nor its ages behind, so that a connection up for
// days holds only the markets it follows.
func TestWSDropForgetsTokens(t *testing.T) {
	w, now := wsState(t)
	w.ages = newBookAges(5 * time.Second)
	const books = `[{"event_type":"book","asset_id":"A","bids":[{"price":"0.48","size":"30"}],"asks":[{"price":"0.52","size":"25"}]},
		{"event_type":"book","asset_id":"B","bids":[{"price":"0.47","size":"5"}],"asks":[]}]`
	w.feed(t, books)
	events, err := book.Decode([]byte(books))
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.ages.saw(events, *now) // as the read loop notes them
	w.mu.Unlock()
	*now = now.Add(6 * time.Second)
	w.mu.Lock()
	for _, tok := range []string{"A", "B"} {
		if stale, resync := w.ages.stale(tok, *now); !stale || !resync {
			t.Fatalf("token %s after 6 s: stale %v, resync %v", tok, stale, resync)
		}
	}
	w.mu.Unlock()
	w.dropTokens([]string{"A"})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.books.Get("A") != nil {
		t.Error("the book of A, unsubscribed, is still held")
	}
	if w.books.Get("B") == nil {
		t.Error("the book of B, still subscribed, is gone")
	}
	if _, ok := w.ages.changed["A"]; ok {
		t.Error("the book age of A, unsubscribed, is still held")
	}
	if _, ok := w.ages.resynced["A"]; ok {
		t.Error("the resync time of A, unsubscribed, is still held")
	}
	if _, ok := w.ages.changed["B"]; !ok {
		t.Error("the book age of B, still subscribed, is gone")
	}
}

// TestWSResubscriptionLosesTrades: a token dropped and subscribed again
// for a fresh book (a book out of step, or a stale one told from a frozen
// feed) hears no trade in between, and one whose feed froze heard none
// since its book's last change. The stretch, from that change (or, out of
// step, the change before the one that showed it) less wsDeliveryLag to
// the fresh book, is told as trades that may be lost when the fresh book
// differs from the one held, or none was held (out of step); a fresh book
// equal to the one held says no trade was likely made, so a quiet
// market's resubscriptions record nothing. A token dropped while waiting
// for its book, or a connection that ends, tells its stretch up to then.
func TestWSResubscriptionLosesTrades(t *testing.T) {
	t.Parallel()
	w, now := wsState(t)
	h := &heardAll{}
	w.listener = h
	const bookA = `{"event_type":"book","asset_id":"A","bids":[{"price":"0.48","size":"30"}],"asks":[{"price":"0.52","size":"25"}]}`
	const bookB = `{"event_type":"book","asset_id":"B","bids":[{"price":"0.40","size":"10"}],"asks":[{"price":"0.60","size":"10"}]}`
	w.feed(t, bookA)
	w.feed(t, bookB)
	step := func(d time.Duration) time.Time { *now = now.Add(d); return *now }
	want := func(what string, lost ...lostTrades) {
		t.Helper()
		if !slices.Equal(h.lost, lost) {
			t.Fatalf("%s: told %+v, want %+v", what, h.lost, lost)
		}
		h.lost = nil
	}

	// Quiet: the same book comes back.
	step(6 * time.Second)
	w.markLost([]string{"A"})
	step(200 * time.Millisecond)
	w.feed(t, bookA)
	want("a quiet book resubscribed")

	// Stale, and a trade took 5 of the best ask meanwhile: the feed of A
	// may have frozen any time after its last book.
	changed := *now
	step(6 * time.Second)
	w.markLost([]string{"A"})
	got := step(150 * time.Millisecond)
	w.feed(t, `{"event_type":"book","asset_id":"A","bids":[{"price":"0.48","size":"30"}],"asks":[{"price":"0.52","size":"20"}]}`)
	want("a stale book that changed while resubscribed", lostTrades{token: "A", from: changed.Add(-wsDeliveryLag), to: got})

	// Out of step: what B missed came after its change before the one
	// that showed it, and the book is dropped, so the fresh one, even the
	// same as before, may follow missed trades.
	changed = step(time.Second)
	w.feed(t, `{"event_type":"price_change","price_changes":[{"asset_id":"B","price":"0.41","size":"5","side":"BUY","best_bid":"0.41","best_ask":"0.60"}]}`)
	step(2 * time.Second)
	w.feed(t, `{"event_type":"price_change","price_changes":[{"asset_id":"B","price":"0.3","size":"1","side":"BUY","best_bid":"0.45","best_ask":"0.60"}]}`)
	if !w.resync["B"] {
		t.Fatal("B not out of step")
	}
	step(time.Second)
	w.markLost([]string{"B"}) // the resubscription: the earlier start stands
	got = step(time.Second)
	w.feed(t, bookB)
	want("a book out of step", lostTrades{token: "B", from: changed.Add(-wsDeliveryLag), to: got})

	// Dropped while waiting, and a connection's end.
	marked := step(time.Second)
	w.feed(t, bookA)
	w.feed(t, bookB)
	w.markLost([]string{"A", "B"})
	got = step(100 * time.Millisecond)
	w.dropTokens([]string{"A"})
	want("a token dropped while waiting for its book", lostTrades{token: "A", from: marked.Add(-wsDeliveryLag), to: got})
	w.mu.Lock()
	ended := w.closeLost(nil, got)
	w.mu.Unlock()
	if !slices.Equal(ended, []lostTrades{{token: "B", from: marked.Add(-wsDeliveryLag), to: got}}) || len(w.lost) != 0 {
		t.Fatalf("a connection's end closed %+v (left %v)", ended, w.lost)
	}
}
