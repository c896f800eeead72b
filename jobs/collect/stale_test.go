package collect_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestMuteWebsocketIsNotRecordedAsFresh mutes the fake's websocket: the
// connection stays up and answers every PING, but sends no market data,
// so its books freeze while looking live. No snapshot past the staleness
// bound may carry the frozen book: the books are polled from REST, and
// the connection is made again. With REST and reconnection failing as
// well, nothing is recorded and the stretch is a gap.
func TestMuteWebsocketIsNotRecordedAsFresh(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	r := newWSRig(t)
	r.cfg.BookStaleAfter = bound
	start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	slug := r.slugs()[0]
	m, err := r.st.GetMarket(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	conns := r.poly.WSStats().Connections
	if r.poly.MuteSockets() == 0 {
		t.Fatal("no socket to mute")
	}
	muted := time.Now()
	hist := r.poly.SocketBooks(m.ClobTokenUp)
	frozen := hist[len(hist)-1]

	eventually(t, 60*time.Second, "the mute connection made again", func() bool { return r.poly.WSStats().Connections > conns })
	eventually(t, 60*time.Second, "snapshots past the bound", func() bool {
		snaps, _, err := r.st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Limit: 1})
		return err == nil && len(snaps) > 0 && snaps[0].Time.After(muted.Add(3*bound))
	})
	// The book is stale bound after the collector read its last message,
	// which a loaded machine may read after the mute: no later than the
	// computation of the first instant that carries it (at most MaxLag
	// after the instant).
	from := muted.Add(-5 * time.Second)
	snaps, _, err := r.st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{From: &from, Ascending: true, WithBooks: true})
	if err != nil {
		t.Fatal(err)
	}
	read := muted
	for _, s := range snaps {
		if s.BookUp != nil && sameTop(*s.BookUp, frozen) {
			read = maxTime(read, s.Time.Add(r.cfg.MaxLag))
			break
		}
	}
	fresh := 0
	for _, s := range snaps {
		if !s.Time.After(read.Add(bound)) {
			continue
		}
		fresh++
		if s.BookUp != nil && sameTop(*s.BookUp, frozen) {
			t.Fatalf("snapshot at %v (%v after the socket went mute, %v after the collector read the book at the latest) carries the frozen book",
				s.Time, s.Time.Sub(muted), s.Time.Sub(read))
		}
	}
	if fresh == 0 {
		t.Fatal("nothing recorded past the bound")
	}

	// Mute again, with REST and new connections failing: nothing fresh
	// is to be had, so nothing is recorded, and the stretch is a gap. (A
	// handshake already past the fault when it was set would serve fresh
	// books: such an attempt is made again.)
	var recovered time.Time
	for attempt := 1; ; attempt++ {
		r.socketServes(t, 60*time.Second, "the websocket serving books again")
		r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 503})
		r.poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
		r.poly.MuteSockets()
		muted = time.Now()
		conns := r.poly.WSStats().Connections
		time.Sleep(5 * bound)
		clean := r.poly.WSStats().Connections == conns
		recovered = time.Now()
		r.poly.Recover(polytest.RouteBooks)
		r.poly.Recover(polytest.RouteWS)
		if clean {
			break
		}
		if attempt == 3 {
			t.Fatal("a connection was made during every muted stretch")
		}
	}
	// The gap begins about bound after the mute (later on a loaded
	// machine, whose reader may take the last messages late), and ends at
	// the first instant recorded after the recovery, which may precede it
	// a little: its request, made up to MaxLag after it, came after.
	eventually(t, 60*time.Second, "the stale stretch recorded as a gap", func() bool {
		for _, g := range r.act.gapsOf(slug) {
			if g.Kind == store.GapSnapshots && g.From.Before(recovered.Add(-2*bound)) && !g.To.Before(recovered.Add(-r.cfg.MaxLag)) {
				return true
			}
		}
		return false
	})
}

// sameTop reports whether the recorded book is the top of the full book
// (snapshots keep the top levels a side).
func sameTop(rec, full store.Book) bool {
	if len(rec.Bids) > len(full.Bids) || len(rec.Asks) > len(full.Asks) {
		return false
	}
	return reflect.DeepEqual(rec.Bids, full.Bids[:len(rec.Bids)]) && reflect.DeepEqual(rec.Asks, full.Asks[:len(rec.Asks)])
}

// TestTradeGapsRecorded cuts the websocket for a few seconds while REST
// keeps the books coming: snapshots go on, but the trades of that stretch
// never reach the collector, so it is recorded as a gap of kind trades
// (and not as a snapshots gap), which stays without a trades source.
func TestTradeGapsRecorded(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	c, _ := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	slug := r.slugs()[0]
	r.poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
	r.poly.DropSockets()
	down := time.Now()
	n := r.count()
	eventually(t, 60*time.Second, "snapshots from REST while the socket is down", func() bool {
		return time.Since(down) > 5*time.Second && r.count() > n
	})
	r.poly.Recover(polytest.RouteWS)
	eventually(t, 60*time.Second, "a trades gap over the outage", func() bool {
		for _, g := range r.act.gapsOf(slug) {
			// The drop is noticed when the connection's read fails: the
			// gap may begin a little after it.
			if g.Kind == store.GapTrades && g.From.Before(down.Add(3*time.Second)) && g.To.After(down.Add(5*time.Second)) {
				return true
			}
		}
		return false
	})
	// Without a trades source, the gap's log line says it stays.
	if !strings.Contains(r.logs.String(), "none: no trades source") {
		t.Errorf("no log line says the trades gap is not backfilled for want of a source:\n%s", r.logs)
	}
	// REST kept the books: no instant was lost for want of them (a loaded
	// machine's late instants are counted apart).
	if n := c.DroppedInstants()[collect.DropUpstream]; n != 0 {
		t.Errorf("%d instants lost for want of books while REST kept them; the collector's gap lines:\n%s", n, linesWith(r.logs.String(), "gap"))
	}
}

// linesWith returns the lines of logs that contain word.
func linesWith(logs, word string) string {
	var b strings.Builder
	for line := range strings.Lines(logs) {
		if strings.Contains(line, word) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestQuietBookRESTFailureKeepsOtherMarkets: one market's books stop
// moving (a quiet market: the websocket sends nothing of them, so they
// are polled from REST once past the staleness bound) and REST fails for
// a few seconds: answering 429 with a Retry-After of 5 s, or answering
// nothing before the poll's deadline. The other market, whose books the
// websocket keeps fresh, is recorded all along, without a gap: a REST
// failure for some tokens costs only their markets' instants, however
// long the failed poll took.
func TestQuietBookRESTFailureKeepsOtherMarkets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault polytest.Fault
	}{
		{"429", polytest.Fault{Status: 429, RetryAfter: 5 * time.Second}},
		{"timeout", polytest.Fault{Delay: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			quietBookRESTFailure(t, tc.fault)
		})
	}
}

func quietBookRESTFailure(t *testing.T, fault polytest.Fault) {
	const bound = time.Second
	r := newWSRig(t)
	r.cfg.BookStaleAfter = bound
	// Each instant's poll of the quiet books holds a request slot until
	// its deadline (MaxLag): room for all of them at this rig's 100 ms
	// cadence, as 4 slots are at the production cadence of 300 ms.
	r.cfg.MaxInFlight = 16
	c, _ := start(t, r.cfg)
	r.socketServes(t, 30*time.Second, "the websocket serving books")
	busy, quiet := r.slugs()[0], r.slugs()[1]
	qm := r.poly.AddWindow(twoSeries[1].Coin, twoSeries[1].MarketType, r.began)
	if polytest.SlugOf(qm) != quiet {
		t.Fatalf("market %s, want %s", polytest.SlugOf(qm), quiet)
	}
	r.poly.Edit(qm, func(m *polytest.Market) { m.QuietFrom = time.Now() })
	// The quiet market's books go stale and come from REST.
	hits := r.poly.Hits(polytest.RouteBooks)
	eventually(t, 30*time.Second, "the quiet market's books polled from REST", func() bool {
		return r.poly.Hits(polytest.RouteBooks) > hits+3
	})
	r.poly.FailAlways(polytest.RouteBooks, fault)
	failed := time.Now()
	time.Sleep(6 * time.Second)
	r.poly.Recover(polytest.RouteBooks)
	recovered := time.Now()
	// Snapshots well after the recovery: a gap is held back until no
	// snapshot can still come for an instant inside it.
	eventually(t, 60*time.Second, "snapshots after the recovery", func() bool {
		snaps, _, err := r.st.ListSnapshots(context.Background(), busy, store.SnapshotQuery{Limit: 1})
		return err == nil && len(snaps) > 0 && snaps[0].Time.After(recovered.Add(8*time.Second))
	})
	for _, g := range r.act.gapsOf(busy) {
		if g.Kind == store.GapSnapshots && g.To.After(failed) && g.From.Before(recovered) {
			t.Errorf("%s, whose books the websocket kept fresh, has a gap %v to %v while REST failed for the quiet market's (%v to %v)",
				busy, g.From, g.To, failed, recovered)
		}
	}
	if r.count() == 0 {
		t.Fatal("nothing recorded")
	}
	// The busy market was recorded at most instants of the failure, not
	// only at those whose poll failed fast: a poll that took until its
	// deadline held the others back until then, and past MaxLag lost them.
	// (Three quarters of the grid: a loaded machine loses some instants of
	// its own; the code before recorded about half.)
	var during int
	for _, s := range allSnapshots(t, r.st, busy) {
		if s.Time.After(failed.Add(r.cfg.MaxLag)) && s.Time.Before(recovered) {
			during++
		}
	}
	if grid := int((recovered.Sub(failed) - r.cfg.MaxLag) / r.cfg.Interval); during < grid*3/4 {
		t.Errorf("%s, whose books the websocket kept fresh, was recorded at %d of %d instants while REST failed for the quiet market's", busy, during, grid)
	}
	// The quiet market's instants lost while REST failed are counted, for
	// /metrics, though the other market's were recorded.
	if n := c.DroppedInstants()[collect.DropPartial]; n == 0 {
		t.Errorf("no instant counted lost for some markets (%q) while REST failed for the quiet market's books; counts %v", collect.DropPartial, c.DroppedInstants())
	}
}

// TestRESTFailureForEveryMarketDropsWholeInstants: while the websocket
// holds a book of every market but not the other one (an Up book without
// asks, which only REST's last trade prices) and the REST books fail,
// every market loses the instant. The instant is counted lost for all
// markets at once, for its failed request (upstream), as when the
// websocket holds no book: not as lost by some markets only (partial).
func TestRESTFailureForEveryMarketDropsWholeInstants(t *testing.T) {
	t.Parallel()
	scheme := hourScheme()
	r := newRig(t, memory.New(), scheme)
	r.poly = polytest.New(t, polytest.Options{Scheme: scheme, Clock: r.clock, TradeEvery: 24 * time.Hour})
	now := time.Now()
	var markets []*polytest.Market
	for _, sr := range twoSeries {
		m := r.poly.AddWindow(sr.Coin, sr.MarketType, now)
		r.poly.Edit(m, func(m *polytest.Market) { m.NoAsks = true })
		markets = append(markets, m)
	}
	r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 500})
	cfg := r.config(scheme, twoSeries)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	cfg.WSPingInterval = 200 * time.Millisecond
	cfg.WSStaleAfter = 2 * time.Second
	c, _ := start(t, cfg)
	eventually(t, 30*time.Second, "the websocket conveying every Down book", func() bool {
		for _, m := range markets {
			if len(r.poly.SocketBooks(m.DownToken)) == 0 {
				return false
			}
		}
		return true
	})
	lost := func() int64 {
		d := c.DroppedInstants()
		return d[collect.DropUpstream] + d[collect.DropPartial]
	}
	n := lost()
	eventually(t, 30*time.Second, "20 instants more lost", func() bool { return lost() >= n+20 })
	for _, m := range markets {
		if snaps := allSnapshots(t, r.st, polytest.SlugOf(m)); len(snaps) != 0 {
			t.Errorf("%s has %d snapshots, recorded without its Up book's price", polytest.SlugOf(m), len(snaps))
		}
	}
	if d := c.DroppedInstants(); d[collect.DropPartial] != 0 {
		t.Errorf("%d instants that every market lost counted as lost by some markets only (%q); counts %v", d[collect.DropPartial], collect.DropPartial, d)
	}
}
