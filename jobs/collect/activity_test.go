package collect_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestWebsocketRecordsWhatMarketsDo runs the collector on the fake's
// websocket over markets of four seconds with discovery rounds too rare to
// matter, and checks what the market channel brings beyond books: the
// subscription asks for the initial dump and the custom features; each
// next market is learnt from new_market; Polymarket's trades are kept as
// sent; a tick change is recorded with its time while snapshots go on in
// the new tick; and market_resolved runs the resolution at once.
func TestWebsocketRecordsWhatMarketsDo(t *testing.T) {
	scheme := polytest.QuickScheme{Length: 4 * time.Second}
	r := newRig(t, memory.New(), scheme)
	r.poly = polytest.New(t, polytest.Options{Scheme: scheme, TradeEvery: 300 * time.Millisecond})
	series := []collect.Series{{Coin: store.BTC, MarketType: store.M5}}
	sr := series[0]
	// Begin just after a window opens, so that timings below hold.
	_, first := scheme.Window(sr.Coin, sr.MarketType, time.Now())
	time.Sleep(time.Until(first) + 100*time.Millisecond)
	now := time.Now()
	r.poly.AddAround(series, now)
	cfg := r.config(scheme, series)
	cfg.Upstreams.PolymarketWS = r.poly.WSURL
	cfg.DiscoveryInterval = time.Hour // only the first round and new_market
	cfg.Interval = 200 * time.Millisecond
	_, stop := start(t, cfg)
	eventually(t, 60*time.Second, "the websocket subscribed", func() bool { return r.poly.WSStats().Subscribes > 0 })

	// List each next window while the one before runs: new_market tells
	// the collector.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 3; i++ {
			_, end := scheme.Window(sr.Coin, sr.MarketType, time.Now())
			r.poly.AddWindow(sr.Coin, sr.MarketType, end.Add(scheme.Length))
			time.Sleep(time.Until(end) + 100*time.Millisecond)
		}
	}()

	// A tick change on the next market, before it opens: its books come
	// in thousandths from then on.
	_, end := scheme.Window(sr.Coin, sr.MarketType, time.Now())
	cur := r.poly.AddWindow(sr.Coin, sr.MarketType, end)
	curSlug := polytest.SlugOf(cur)
	eventually(t, 60*time.Second, "the next market known", func() bool {
		_, err := r.st.GetMarket(context.Background(), curSlug)
		return err == nil
	})
	// Its tokens subscribed: the fake has sent their books.
	eventually(t, 60*time.Second, "the next market subscribed", func() bool {
		return len(r.poly.SocketBooks(cur.UpToken)) > 0 && len(r.poly.SocketBooks(cur.DownToken)) > 0
	})
	changed := time.Now()
	r.poly.ChangeTick(cur, 0.001)
	eventually(t, 60*time.Second, "the tick change recorded", func() bool {
		m, err := r.st.GetMarket(context.Background(), curSlug)
		return err == nil && m.TickSize != nil && *m.TickSize == 0.001 && len(m.TickSizeChanges) == 1
	})
	<-done
	// The markets that ended heard market_resolved.
	eventually(t, 60*time.Second, "market_resolved of the markets that ended", func() bool {
		for _, up := range r.poly.Markets() {
			if up.End.After(time.Now()) || up.Start.Before(now) {
				continue
			}
			if _, ok := r.sched.nowAt(polytest.SlugOf(&up)); !ok {
				return false
			}
		}
		return true
	})
	stop()

	ws := r.poly.WSStats()
	if !ws.InitialDump || !ws.CustomFeatures || ws.NewMarkets < 3 || ws.Trades == 0 || ws.TickChanges == 0 || ws.Resolved == 0 {
		t.Errorf("websocket %+v: subscription flags or events missing", ws)
	}
	ctx := context.Background()
	m, _ := r.st.GetMarket(ctx, curSlug)
	if c := m.TickSizeChanges[0]; c.TickSize != 0.001 || c.Time.Before(changed.Add(-time.Second)) || c.Time.After(time.Now()) {
		t.Errorf("tick change %+v, made at %v", c, changed)
	}
	thousandths := 0
	for _, s := range allSnapshots(t, r.st, curSlug) {
		if math.Abs(s.PriceUp*100-math.Round(s.PriceUp*100)) > 1e-6 || math.Abs(s.PriceDown*100-math.Round(s.PriceDown*100)) > 1e-6 {
			thousandths++
		}
	}
	if thousandths == 0 {
		t.Errorf("no snapshot after the tick change is priced in thousandths")
	}

	// Every market the fake listed while running was discovered through
	// new_market, recorded, and its trades kept as sent.
	for _, up := range r.poly.Markets() {
		if up.End.After(time.Now()) || up.Start.Before(now) {
			continue
		}
		slug := polytest.SlugOf(&up)
		if _, err := r.st.GetMarket(ctx, slug); err != nil {
			t.Errorf("%s not discovered: %v", slug, err)
			continue
		}
		if n := len(allSnapshots(t, r.st, slug)); n == 0 {
			t.Errorf("%s: %d snapshots", slug, n)
		}
		stored := r.act.tradesOf(slug)
		sent := append(r.poly.Trades(up.UpToken), r.poly.Trades(up.DownToken)...)
		if len(sent) > 0 && (len(stored) == 0 || len(stored) < len(sent)/2) {
			t.Errorf("%s: %d trades stored of %d sent", slug, len(stored), len(sent))
		}
		for _, tr := range stored {
			found := false
			for _, s := range sent {
				found = found || (s.TxHash == tr.TxHash && s.Price == tr.Price && s.Size == tr.Size && s.Side == tr.Side &&
					s.Outcome == tr.Outcome && s.Time.Equal(tr.Time))
			}
			if !found {
				t.Errorf("%s: stored trade %+v was never sent", slug, tr)
				break
			}
		}
		// market_resolved scheduled the resolution at once, not only on
		// its delay.
		if at, ok := r.sched.nowAt(slug); !ok || at.Before(up.End) {
			t.Errorf("%s: market_resolved did not run its resolution at once (%v %v)", slug, at, ok)
		}
	}
}

// TestGapsAreRecorded stops every source of books for longer than 3 s in a
// live market and checks one gap is recorded for the stretch, from the
// last snapshot before to the first after, and that every gap recorded is
// a real stretch of over 3 s without a snapshot. A loaded machine may stall
// the collector itself for over 3 s while it records: that stretch is a
// gap too, rightly, so gaps outside the fault are checked, not forbidden.
func TestGapsAreRecorded(t *testing.T) {
	scheme := polytest.QuickScheme{Length: 20 * time.Second, Origin: time.Now().Add(-time.Second)}
	r := newRig(t, memory.New(), scheme)
	series := []collect.Series{{Coin: store.ETH, MarketType: store.M15}}
	r.poly.AddAround(series, time.Now())
	cfg := r.config(scheme, series)
	_, stop := start(t, cfg)
	up := r.poly.AddWindow(store.ETH, store.M15, time.Now())
	slug := polytest.SlugOf(up)
	eventually(t, 30*time.Second, "recording", func() bool { return snapCount(r.st, slug) >= 10 })
	faultAt := time.Now()
	r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 503})
	time.Sleep(4 * time.Second)
	recoverAt := time.Now()
	r.poly.Recover(polytest.RouteBooks)
	// The fault's gap: the one that holds the middle of the fault, when
	// no book could be had.
	mid := faultAt.Add(recoverAt.Sub(faultAt) / 2)
	faulted := func() []store.Gap {
		var out []store.Gap
		for _, g := range r.act.gapsOf(slug) {
			if g.From.Before(mid) && g.To.After(mid) {
				out = append(out, g)
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "a gap recorded", func() bool { return len(faulted()) > 0 })
	stop()

	gaps := faulted()
	if len(gaps) != 1 {
		t.Fatalf("gaps %+v, want the one stretch (all: %+v)", gaps, r.act.gapsOf(slug))
	}
	g := gaps[0]
	if d := g.To.Sub(g.From); d < 3500*time.Millisecond || d > 30*time.Second {
		t.Errorf("gap %v → %v lasts %v; books failed for 4s", g.From, g.To, d)
	}
	// A snapshot is stamped with its instant of the 300 ms grid, which may
	// be a little before the books it holds were taken: the first after
	// the fault may be stamped just before the recovery.
	if g.From.After(faultAt) || g.To.Before(recoverAt.Add(-time.Second)) {
		t.Errorf("gap %v → %v does not span the fault %v → %v", g.From, g.To, faultAt, recoverAt)
	}
	snaps := allSnapshots(t, r.st, slug)
	// The market as stored starts on Gamma's whole second, which the
	// fake's window (its origin a second before the test began) need not.
	m, err := r.st.GetMarket(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.act.gapsOf(slug) {
		if d := g.To.Sub(g.From); d <= 3*time.Second {
			t.Errorf("gap %v → %v lasts %v, not over 3 s", g.From, g.To, d)
		}
		var before, after bool
		for _, s := range snaps {
			before = before || s.Time.Equal(g.From)
			after = after || s.Time.Equal(g.To)
			if s.Time.After(g.From) && s.Time.Before(g.To) {
				t.Errorf("snapshot at %v inside the gap %v → %v", s.Time, g.From, g.To)
			}
		}
		if !(before || g.From.Equal(m.StartTime)) || !after {
			t.Errorf("gap %v → %v is not bounded by snapshots (%v %v)", g.From, g.To, before, after)
		}
	}
}

// snapCount is how many snapshots the market has; 0 while it is unknown.
func snapCount(st store.Store, slug string) int {
	_, n, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Limit: 1})
	if err != nil {
		return 0
	}
	return n
}

// startNext starts a collector, cfg edited by edit, on a quick scheme of
// windows of length, and lists the market of the window after the
// current one and of the window after that (a market stays live for at
// least length). It returns the next market once the collector knows it,
// in its first tick, 0.01.
func startNext(t *testing.T, length time.Duration, edit func(*rig, *collect.Config)) (r *rig, next *polytest.Market, slug string) {
	t.Helper()
	scheme := polytest.QuickScheme{Length: length}
	r = newRig(t, memory.New(), scheme)
	series := []collect.Series{{Coin: store.BTC, MarketType: store.M5}}
	sr := series[0]
	r.poly.AddAround(series, time.Now())
	cfg := r.config(scheme, series)
	edit(r, &cfg)
	start(t, cfg)
	_, end := scheme.Window(sr.Coin, sr.MarketType, time.Now())
	next = r.poly.AddWindow(sr.Coin, sr.MarketType, end)
	r.poly.AddWindow(sr.Coin, sr.MarketType, end.Add(length))
	slug = polytest.SlugOf(next)
	eventually(t, 60*time.Second, "the next market known", func() bool {
		m, err := r.st.GetMarket(context.Background(), slug)
		return err == nil && m.TickSize != nil && *m.TickSize == 0.01
	})
	return r, next, slug
}

// TestRESTBooksRecordATickChange: without the websocket, which tells of a
// tick change, the CLOB's books tell the tick they are quoted in; a market
// whose book comes in a new tick records the change, dated by the book,
// once.
func TestRESTBooksRecordATickChange(t *testing.T) {
	t.Parallel()
	r, next, slug := startNext(t, 4*time.Second, func(*rig, *collect.Config) {}) // REST books alone
	changed := time.Now()
	r.poly.ChangeTick(next, 0.001)
	eventually(t, 60*time.Second, "the tick change recorded", func() bool {
		m, err := r.st.GetMarket(context.Background(), slug)
		return err == nil && m.TickSize != nil && *m.TickSize == 0.001 && len(m.TickSizeChanges) > 0
	})
	time.Sleep(time.Second) // polls go on: the change is not recorded again
	m, err := r.st.GetMarket(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TickSizeChanges) != 1 {
		t.Fatalf("tick changes %+v, want one", m.TickSizeChanges)
	}
	if c := m.TickSizeChanges[0]; c.TickSize != 0.001 || c.Time.Before(changed.Add(-time.Second)) || c.Time.After(time.Now()) {
		t.Errorf("tick change %+v, want 0.001 dated after %s", c, changed.Format(time.RFC3339Nano))
	}
}

// TestRESTTickChangeOfAQuietBook: the CLOB's timestamp of a book moves
// only when the book changes, so a quiet book's timestamp can lie long
// before a tick change it shows, before answers that still showed the old
// tick. The change is dated no earlier than the last of those (the
// instant of the last snapshot recorded before it), never by the quiet
// book's stale timestamp.
func TestRESTTickChangeOfAQuietBook(t *testing.T) {
	t.Parallel()
	r, next, slug := startNext(t, 6*time.Second, func(*rig, *collect.Config) {}) // REST books alone
	r.poly.Edit(next, func(m *polytest.Market) { m.QuietFrom = m.Start })
	eventually(t, 60*time.Second, "the quiet market recorded", func() bool { return snapCount(r.st, slug) >= 3 })
	snaps := allSnapshots(t, r.st, slug)
	seen := snaps[len(snaps)-1].Time // its books showed the old tick
	r.poly.ChangeTick(next, 0.001)
	eventually(t, 60*time.Second, "the tick change recorded", func() bool {
		m, err := r.st.GetMarket(context.Background(), slug)
		return err == nil && m.TickSize != nil && *m.TickSize == 0.001 && len(m.TickSizeChanges) > 0
	})
	m, err := r.st.GetMarket(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TickSizeChanges) != 1 {
		t.Fatalf("tick changes %+v, want one", m.TickSizeChanges)
	}
	if c := m.TickSizeChanges[0]; c.TickSize != 0.001 || c.Time.Before(seen) || c.Time.After(time.Now()) {
		t.Errorf("tick change %+v dated before %s, when a recorded book still showed 0.01 (the book is quiet since %s)",
			c, seen.Format(time.RFC3339Nano), next.Start.Format(time.RFC3339Nano))
	}
}

// TestTickChangeWhileTheSocketIsDown: a tick_size_change sent while no
// websocket connection was up is lost, and the websocket's books do not
// tell the tick. The REST books read when a connection serves again do:
// the change is recorded even though no REST poll of the snapshot loop
// saw it (they all failed while the socket was down).
func TestTickChangeWhileTheSocketIsDown(t *testing.T) {
	t.Parallel()
	// Windows of 20 s: REST books are polled for live markets alone, and
	// one must be live until the socket is down.
	r, next, slug := startNext(t, 20*time.Second, func(r *rig, cfg *collect.Config) {
		cfg.Upstreams.PolymarketWS = r.poly.WSURL
		cfg.WSStaleAfter = 2 * time.Second // a loaded machine delays the fake's messages
	})
	eventually(t, 60*time.Second, "the next market's books sent on the socket", func() bool {
		return len(r.poly.SocketBooks(next.UpToken)) > 0 && len(r.poly.SocketBooks(next.DownToken)) > 0
	})

	// The socket down, and REST books failing too, while the tick changes.
	r.poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 503})
	r.poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
	r.poly.DropSockets()
	changed := time.Now()
	r.poly.ChangeTick(next, 0.001)
	polls := r.poly.Hits(polytest.RouteBooks)
	eventually(t, 60*time.Second, "REST books polled (and failed) while the socket is down", func() bool {
		return r.poly.Hits(polytest.RouteBooks) > polls+2
	})
	// The socket back first, serving the market's books: no
	// tick_size_change comes on it, and the snapshot loop reads its books.
	sent := len(r.poly.SocketBooks(next.UpToken))
	r.poly.Recover(polytest.RouteWS)
	eventually(t, 60*time.Second, "the market's books sent on a new socket, and their tick checked over REST (failing)", func() bool {
		return len(r.poly.SocketBooks(next.UpToken)) > sent && strings.Contains(r.logs.String(), "tick changes missed while the websocket was down")
	})
	r.poly.Recover(polytest.RouteBooks)
	eventually(t, 60*time.Second, "the tick change recorded", func() bool {
		m, err := r.st.GetMarket(context.Background(), slug)
		return err == nil && m.TickSize != nil && *m.TickSize == 0.001 && len(m.TickSizeChanges) > 0
	})
	m, err := r.st.GetMarket(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TickSizeChanges) != 1 {
		t.Fatalf("tick changes %+v, want one", m.TickSizeChanges)
	}
	if c := m.TickSizeChanges[0]; c.TickSize != 0.001 || c.Time.Before(changed) || c.Time.After(time.Now()) {
		t.Errorf("tick change %+v, want 0.001 dated after %s", c, changed.Format(time.RFC3339Nano))
	}
}
