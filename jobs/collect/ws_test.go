package collect_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// wsRig is a rig whose collector takes books from the fake's websocket.
type wsRig struct {
	*rig
	scheme polytest.QuickScheme
	cfg    collect.Config
	began  time.Time
}

func newWSRig(t *testing.T) *wsRig {
	t.Helper()
	return newWSRigOn(t, memory.New())
}

// newWSRigOn is newWSRig on the store st.
func newWSRigOn(t *testing.T, st store.Store) *wsRig {
	t.Helper()
	scheme := hourScheme()
	r := newRig(t, st, scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now)
	cfg := r.config(scheme, twoSeries)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	cfg.WSPingInterval = 200 * time.Millisecond
	// Generous: a loaded machine delays the fake's messages, and a socket
	// judged stale sends the collector to REST.
	cfg.WSStaleAfter = 2 * time.Second
	return &wsRig{rig: r, scheme: scheme, cfg: cfg, began: now}
}

func (r *wsRig) slugs() []string {
	var out []string
	for _, sr := range twoSeries {
		start, _ := r.scheme.Window(sr.Coin, sr.MarketType, r.began)
		out = append(out, collect.Slug(sr.Coin, sr.MarketType, start))
	}
	return out
}

// count is how many snapshots the live markets have.
func (r *wsRig) count() int {
	n := 0
	for _, s := range r.slugs() {
		if _, total, err := r.st.ListSnapshots(context.Background(), s, store.SnapshotQuery{Limit: 1}); err == nil {
			n += total
		}
	}
	return n
}

// socketServes waits until snapshots flow and REST /books is not polled
// for 2 s: the websocket serves every book, and the connection's one read
// of the REST books for tick changes (runTickChecks, on a goroutine a
// loaded machine may start late) is behind.
func (r *wsRig) socketServes(t *testing.T, within time.Duration, what string) {
	t.Helper()
	n := r.count()
	hits, since := r.poly.Hits(polytest.RouteBooks), time.Now()
	eventually(t, within, what, func() bool {
		if h := r.poly.Hits(polytest.RouteBooks); h != hits {
			hits, since = h, time.Now()
		}
		return time.Since(since) >= 2*time.Second && r.count() > n
	})
}

// TestWebsocketServesBooks checks that while the websocket is healthy the
// snapshots' books are the ones its book and price_change events built,
// REST /books is not polled at all, and PING is sent.
func TestWebsocketServesBooks(t *testing.T) {
	r := newWSRig(t)
	c, stop := start(t, r.cfg)
	// A window of 15 snapshots with one connection throughout: a window
	// in which the socket reconnected (a loaded machine can delay the
	// fake past the stale period) is not one in which it was healthy, and
	// each connection reads the REST books once for tick changes: such a
	// window is measured again.
	var from time.Time
	for try := 1; ; try++ {
		r.socketServes(t, 60*time.Second, "the websocket taking over from REST")
		var hits, conns int
		var n int64
		from, hits, conns, n = time.Now(), r.poly.Hits(polytest.RouteBooks), r.poly.Hits(polytest.RouteWS), c.Stats().Snapshots
		eventually(t, 60*time.Second, "15 snapshots from the websocket", func() bool { return c.Stats().Snapshots-n >= 15 })
		h := r.poly.Hits(polytest.RouteBooks)
		if r.poly.Hits(polytest.RouteWS) != conns && try < 5 {
			continue
		}
		if h != hits {
			t.Errorf("REST /books polled %d times while the websocket was healthy", h-hits)
		}
		break
	}
	stop()

	markets := r.poly.Markets()
	checked := 0
	for i, slug := range r.slugs() {
		start, end := r.scheme.Window(twoSeries[i].Coin, twoSeries[i].MarketType, r.began)
		snaps := allSnapshots(t, r.st, slug)
		checkSnapshots(t, r.bin, twoSeries[i].Coin, slug, snaps, r.cfg.Interval, start, end)
		m := markets[r.scheme.Slugs(twoSeries[i].Coin, twoSeries[i].MarketType, start)[0]]
		up, down := r.poly.SocketBooks(m.UpToken), r.poly.SocketBooks(m.DownToken)
		for _, s := range snaps {
			if s.Time.Before(from) {
				continue
			}
			checked++
			if !conveyed(up, *s.BookUp) || !conveyed(down, *s.BookDown) {
				t.Fatalf("%s at %v: books %+v / %+v are not ones the websocket conveyed", slug, s.Time, *s.BookUp, *s.BookDown)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no snapshot from the websocket to check")
	}
	if st := r.poly.WSStats(); st.Pings == 0 || st.Connections != 1 {
		t.Errorf("websocket stats %+v: want PINGs on one connection", st)
	}
}

// conveyed reports whether book is the top 10 levels of one of the books.
func conveyed(books []store.Book, book store.Book) bool {
	top := func(l []store.Level) []store.Level { return l[:min(len(l), 10)] }
	return slices.ContainsFunc(books, func(b store.Book) bool {
		return reflect.DeepEqual(top(b.Bids), book.Bids) && reflect.DeepEqual(top(b.Asks), book.Asks)
	})
}

// TestWebsocketDropFallsBackToREST cuts the websocket, refuses it for a
// while, and makes it go silent, and checks each time that REST takes over
// within a second, that snapshots keep their cadence, and that the socket
// comes back and takes over again.
func TestWebsocketDropFallsBackToREST(t *testing.T) {
	r := newWSRig(t)
	c, stop := start(t, r.cfg)
	r.socketServes(t, 60*time.Second, "the websocket taking over from REST")
	var outages []string

	fallback := func(what string, cut func()) {
		t.Helper()
		outages = append(outages, what)
		hits := r.poly.Hits(polytest.RouteBooks)
		cut()
		eventually(t, 30*time.Second, what+": REST polled", func() bool { return r.poly.Hits(polytest.RouteBooks) > hits })
	}

	// A drop alone: the socket is back at once (the backoff starts at
	// 20 ms here), quicker than the next tick may need REST.
	conns := r.poly.WSStats().Connections
	if n := r.poly.DropSockets(); n != 1 {
		t.Fatalf("%d websockets open, want 1", n)
	}
	eventually(t, 30*time.Second, "reconnecting after a drop", func() bool { return r.poly.WSStats().Connections == conns+1 })
	r.socketServes(t, 60*time.Second, "the websocket back after a drop")

	// A drop, then handshakes cut or refused for a while: REST serves.
	for _, f := range []polytest.Fault{{Drop: true}, {Status: 503}} {
		what := fmt.Sprintf("a drop and handshakes failing with %+v", f)
		fallback(what, func() {
			r.poly.FailAlways(polytest.RouteWS, f)
			r.poly.DropSockets()
		})
		n := r.count()
		eventually(t, 30*time.Second, what+": snapshots from REST", func() bool { return r.count() > n })
		r.poly.Recover(polytest.RouteWS)
		r.socketServes(t, 60*time.Second, "the websocket back after "+what)
	}

	// Silence: the connection stays open but nothing comes, PONGs included.
	fallback("a silent connection", func() {
		if n := r.poly.StallSockets(); n != 1 {
			t.Fatalf("%d websockets open, want 1", n)
		}
	})
	r.socketServes(t, 60*time.Second, "the websocket back after going silent")
	stop()

	// No instant was lost for want of books or prices: REST was there each
	// time. (Instants a loaded machine answered late, or skipped, are its
	// speed, not a failure of the fallback: they are counted apart.)
	if n := c.DroppedInstants()[collect.DropUpstream]; n != 0 {
		t.Errorf("%d instants lost for want of books or prices across %s; log:\n%s", n, strings.Join(outages, ", "), r.logs)
	}
	for _, slug := range r.slugs() {
		snaps := allSnapshots(t, r.st, slug)
		for i := 1; i < len(snaps); i++ {
			if gap := snaps[i].Time.Sub(snaps[i-1].Time); gap > 5*r.cfg.Interval {
				t.Logf("%s: %v without a snapshot from %v (dropped instants by reason: %v)", slug, gap, snaps[i-1].Time, c.DroppedInstants())
			}
		}
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "websocket lost") {
		t.Errorf("the websocket's loss is not logged:\n%s", logs)
	}
}

// TestWebsocketFollowsMarkets runs markets of 2-second windows: the
// socket subscribes to each next market on the open connection before its
// window opens, so the books of market after market come from it and REST
// is never needed once it serves.
func TestWebsocketFollowsMarkets(t *testing.T) {
	// Windows of 2 s and markets well past the test's end: on a loaded
	// machine (CI runs the race detector on every package at once) the
	// takeover and each subscription ahead of a window take a while.
	scheme := polytest.QuickScheme{Origin: time.Now().Truncate(time.Second), Length: 2 * time.Second}
	r := newRig(t, memory.New(), scheme)
	now := time.Now()
	r.poly.AddRange(twoSeries, now, now.Add(40*time.Second))
	cfg := r.config(scheme, twoSeries)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	wr := &wsRig{rig: r, scheme: scheme, cfg: cfg, began: now}
	_, stop := start(t, cfg)
	wr.socketServes(t, 60*time.Second, "the websocket taking over from REST")
	hits, served := r.poly.Hits(polytest.RouteBooks), time.Now()
	time.Sleep(4500 * time.Millisecond)
	stop()
	if h := r.poly.Hits(polytest.RouteBooks); h != hits {
		t.Errorf("REST /books polled %d times across market changes while the websocket was healthy", h-hits)
	}
	if st := r.poly.WSStats(); st.Connections != 1 || st.Subscribes < 3 {
		t.Errorf("websocket stats %+v: want one connection that subscribed again as markets came", st)
	} else if st.UndumpedSubscribes != 0 {
		t.Errorf("websocket stats %+v: a subscription of new markets did not ask for their books (initial_dump)", st)
	}
	// Every market whose window opened after the socket served was
	// recorded from it.
	checked := 0
	for _, m := range r.poly.Markets() {
		if m.Start.Before(served) || !m.End.Before(time.Now()) {
			continue
		}
		snaps := allSnapshots(t, r.st, polytest.SlugOf(&m))
		if len(snaps) == 0 {
			t.Errorf("%s: no snapshot in its 2s window", m.Slug)
		}
		up, down := r.poly.SocketBooks(m.UpToken), r.poly.SocketBooks(m.DownToken)
		for _, s := range snaps {
			if !conveyed(up, *s.BookUp) || !conveyed(down, *s.BookDown) {
				t.Fatalf("%s at %v: books not from the websocket", m.Slug, s.Time)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no market opened and closed while the websocket served")
	}
}

// TestWebsocketPricesABookWithoutAsks: an Up book without asks (nobody
// sells Up, as in a market all but settled) is priced by its last trade.
// The market channel's book event carries last_trade_price "" and a
// market nobody trades sends no last_trade_price event, so the REST book,
// which carries it, tells it: snapshots are recorded priced so, not lost
// as gaps, and once told the websocket serves the book again.
func TestWebsocketPricesABookWithoutAsks(t *testing.T) {
	scheme := hourScheme()
	r := newRig(t, memory.New(), scheme)
	r.poly = polytest.New(t, polytest.Options{Scheme: scheme, Clock: r.clock, TradeEvery: 24 * time.Hour})
	now := time.Now()
	series := twoSeries[:1]
	m := r.poly.AddWindow(series[0].Coin, series[0].MarketType, now)
	r.poly.Edit(m, func(m *polytest.Market) { m.NoAsks = true })
	cfg := r.config(scheme, series)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	cfg.WSPingInterval = 200 * time.Millisecond
	cfg.WSStaleAfter = 2 * time.Second
	wr := &wsRig{rig: r, scheme: scheme, cfg: cfg, began: now}
	c, stop := start(t, cfg)
	wr.socketServes(t, 60*time.Second, "the websocket serving a book without asks")
	n := c.Stats().Snapshots
	eventually(t, 60*time.Second, "10 snapshots more", func() bool { return c.Stats().Snapshots-n >= 10 })
	stop()
	slug := polytest.SlugOf(m)
	snaps := allSnapshots(t, r.st, slug)
	if len(snaps) < 10 {
		t.Fatalf("%d snapshots of %s", len(snaps), slug)
	}
	for _, s := range snaps {
		if s.Time.Before(m.Start) || !s.Time.Before(m.End) || len(s.BookUp.Asks) != 0 || len(s.BookDown.Bids) != 0 || len(s.BookDown.Asks) == 0 {
			t.Fatalf("%s at %v: books %+v / %+v; want Up without asks, Down without bids", slug, s.Time, *s.BookUp, *s.BookDown)
		}
		if !(s.PriceUp > 0 && s.PriceUp < 1) || s.PriceDown != s.BookDown.Asks[0].Price {
			t.Fatalf("%s at %v: prices %v / %v; want Up's last trade and Down's best ask %v", slug, s.Time, s.PriceUp, s.PriceDown, s.BookDown.Asks[0].Price)
		}
	}
}
