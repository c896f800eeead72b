package archive_test

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

type nopScheduler struct{}

func (nopScheduler) ScheduleResolution(context.Context, string, time.Duration) error { return nil }

// TestImportEqualsCollector feeds one event stream to the collector through
// the fake websocket and writes the same frames, as sent, to a gzipped
// ws-jsonl file; importing that file must give the collector's snapshots
// (both books and both prices) on at least 99.9% of its grid instants, and
// the same trades.
//
// The fake stamps its events, and moves its books, on a clock that steps
// every other instant of the 300 ms grid, and the collector's clock runs
// 150 ms behind real time: a collector instant then reads the books 150 ms
// after the step they were sent at, or 450 ms after it and 150 ms before
// the next, so that neither a loaded machine's scheduling nor the socket's
// latency decides which instant an event falls in (the importer places
// events by their timestamps, the collector by their arrival).
func TestImportEqualsCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a collector for half a minute")
	}
	t.Parallel()
	const grid = 300 * time.Millisecond
	stepped := func() time.Time { return time.Now().Truncate(2 * grid) }
	const behindBy = grid / 2
	behind := func() time.Time { return time.Now().Add(-behindBy) }

	var mu sync.Mutex
	var frames [][]byte
	var sentAt []time.Time
	scheme := collect.QuickScheme{Length: 12 * time.Second}
	poly := polytest.New(t, polytest.Options{Scheme: scheme, Clock: stepped, WSInterval: 20 * time.Millisecond, TradeEvery: 700 * time.Millisecond,
		Tap: func(b []byte) {
			sent := time.Now()
			mu.Lock()
			frames = append(frames, slices.Clone(b))
			sentAt = append(sentAt, sent)
			mu.Unlock()
		}})
	bin := binancetest.New(t, binancetest.Options{Clock: time.Now})
	rec := memory.New()
	series := []collect.Series{{Coin: store.BTC, MarketType: store.M5}, {Coin: store.ETH, MarketType: store.M15}}
	now := time.Now()
	for _, s := range series {
		for at := now.Add(-scheme.Length); at.Before(now.Add(4 * scheme.Length)); at = at.Add(scheme.Length) {
			poly.AddWindow(s.Coin, s.MarketType, at)
		}
	}
	cfg := collect.Config{
		Upstreams: collect.Upstreams{Gamma: poly.URL, CLOB: poly.URL, PolymarketWS: poly.WSURL, BinanceSpot: bin.URL, BinanceFutures: bin.URL},
		Store:     rec, Live: memory.NewLive(), Scheduler: nopScheduler{}, Activity: rec, Scheme: scheme,
		Logger: slog.New(slog.DiscardHandler), Now: behind, Series: series,
		Interval: grid, BookLevels: 10, DiscoveryInterval: 500 * time.Millisecond, FlushInterval: 200 * time.Millisecond,
		MaxLag: 2 * time.Second, RequestTimeout: 2 * time.Second, WSStaleAfter: 5 * time.Second,
		Backoff: collect.Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	}
	c, err := collect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	time.Sleep(3*scheme.Length + 2*time.Second)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("collector did not stop")
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "stream.jsonl.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	mu.Lock()
	// The collector holds several connections, and the tap hears them
	// all: a connection's events are in time order, but one connection's
	// trade (stamped when it happened) may follow another's book event of
	// a later step. A dump of one connection never goes back in time; the
	// file merges them, an event a line, in event time, as a dump of
	// several would be.
	frames, sentAt = byEventTime(frames, sentAt)
	for _, fr := range frames {
		zw.Write(fr)
		zw.Write([]byte("\n"))
	}
	nFrames := len(frames)
	// Steps whose frames the fake sent after the collector read its
	// books (a stalled fake on a loaded machine): no collector could have
	// had them, and they are left out, and counted.
	first := map[int64]time.Time{} // a step's first price_change sent
	for i, fr := range frames {
		var head struct {
			EventType string `json:"event_type"`
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(fr, &head) != nil || head.EventType != "price_change" {
			continue
		}
		ms, err := strconv.ParseInt(head.Timestamp, 10, 64)
		if f, ok := first[ms]; err == nil && (!ok || sentAt[i].Before(f)) {
			first[ms] = sentAt[i]
		}
	}
	late := map[int64]bool{}
	for ms, sent := range first {
		late[ms] = sent.Sub(time.UnixMilli(ms)) > behindBy-10*time.Millisecond
	}
	mu.Unlock()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	markets, _, err := rec.ListMarkets(context.Background(), store.MarketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	prices := archive.NewCoinPrices()
	for _, coin := range []store.Coin{store.BTC, store.ETH} {
		writeKlines(t, prices, coin, now.Add(-time.Minute), time.Now().Add(time.Minute), func(at time.Time) float64 { return poly.CoinPrice(coin, at) })
	}
	imp := memory.New()
	sum, err := archive.Import(context.Background(), imp, archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: markets, Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames: %+v", nFrames, sum)

	// Instants left out: excluded in all, and of them shifted, those
	// equal to the import's at a nearby step.
	total, same, excluded, shifted, changedSame := 0, 0, 0, 0, 0
	for _, m := range markets {
		want, _, err := rec.ListSnapshots(context.Background(), m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := imp.ListSnapshots(context.Background(), m.Slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
		if err != nil && len(want) > 0 {
			t.Fatalf("imported %s: %v", m.Slug, err)
		}
		if len(got) == 0 {
			continue
		}
		first, last := got[0].Time, got[len(got)-1].Time
		byTime := map[int64]store.Snapshot{}
		for _, s := range got {
			byTime[s.Time.UnixMicro()] = s
		}
		// A collector that has no book from the socket yet when a market
		// starts (a loaded machine subscribes late) takes its first
		// snapshots from the CLOB's REST books, which no event stream
		// holds: until its books first equal one of the import's, its
		// instants are left out, and counted. An import that never
		// equals it leaves too few instants to compare, and fails below.
		seeded := true
		for k, w := range want {
			if w.Time.Before(first) || w.Time.After(last) {
				continue // before the socket's first book, or after the stream
			}
			if seeded {
				if !slices.ContainsFunc(got, func(g store.Snapshot) bool { return sameSnapshot(w, g) }) {
					excluded++
					continue
				}
				seeded = false
			}
			if late[w.Time.UnixMilli()] {
				excluded++
				continue
			}
			g, ok := byTime[w.Time.UnixMicro()]
			if ok && !sameSnapshot(w, g) && (tookEarlier(w, byTime) || tookLater(w, byTime)) {
				// The collector took this instant before the frames stamped
				// just ahead of it reached it (a loaded machine delivers
				// late): it shows the import's previous instant. Or its
				// tick ran late, after the next step's frames had come: it
				// shows the import's next instant. Left out like a late
				// send; a systematic slip would leave out most instants and
				// fail below.
				excluded++
				shifted++
				continue
			}
			total++
			if ok && sameSnapshot(w, g) {
				same++
				if k > 0 && want[k-1].Time.Equal(w.Time.Add(-300*time.Millisecond)) && !sameSnapshot(want[k-1], w) {
					changedSame++ // the collector's books or prices changed at this step, and the import's too
				}
			} else {
				lag := "none"
				for _, g2 := range got {
					if sameSnapshot(w, g2) {
						lag = g2.Time.Sub(w.Time).String()
					}
				}
				t.Logf("%s at %s differs (found %v); the collector's equals the import's at %s", m.Slug, w.Time.Format("15:04:05.000"), ok, lag)
			}
		}
		wantTrades, _, _ := rec.ListMarketTrades(context.Background(), m.Slug, store.MarketTradeQuery{Ascending: true})
		gotTrades, _, _ := imp.ListMarketTrades(context.Background(), m.Slug, store.MarketTradeQuery{Ascending: true})
		if n := len(wantTrades); n > 0 {
			// The collector stopped mid-stream: a trade sent after the
			// last one it read is in the file alone.
			last := wantTrades[n-1].Time
			gotTrades = slices.DeleteFunc(gotTrades, func(tr store.MarketTrade) bool { return tr.Time.After(last) })
		}
		if !slices.Equal(wantTrades, gotTrades) {
			t.Errorf("%s: trades differ: collector %d, import %d", m.Slug, len(wantTrades), len(gotTrades))
			for k := range min(len(wantTrades), len(gotTrades)) {
				if wantTrades[k] != gotTrades[k] {
					t.Errorf("%s: first difference at trade %d: collector %+v, import %+v", m.Slug, k, wantTrades[k], gotTrades[k])
					break
				}
			}
		}
		if imported, err := imp.GetMarket(context.Background(), m.Slug); err != nil || !slices.Equal(imported.DataSources, []string{"ws-jsonl"}) {
			t.Errorf("%s: data sources %v (%v), want [ws-jsonl]", m.Slug, imported.DataSources, err)
		}
	}
	// A quiet machine compares some 200; a loaded one leaves out many (the
	// fake's late steps, REST-seeded starts), and at load 10-20 left 56.
	// Forty still fail an import that never equals the collector (none
	// compared), and at 99.9% allow no instant to differ.
	if total < 40 {
		t.Fatalf("only %d instants to compare", total)
	}
	if ratio := float64(same) / float64(total); ratio < 0.999 {
		t.Fatalf("the import equals the collector on %d of %d instants (%.2f%%), want at least 99.9%%", same, total, 100*ratio)
	}
	t.Logf("the import equals the collector on %d of %d instants (%d left out: their step was sent or received late; %d of them equal to the import's at a nearby step)",
		same, total, excluded, shifted)
	// A slip of the importer's grid would shift every instant at which the
	// collector's books changed, and leave to compare only those where
	// nothing changed; a loaded machine shifts some of them (85 of 212 at
	// load 15), never all. So the instants compared must include some at
	// which the collector's books changed, and agree.
	if changedSame == 0 {
		t.Fatalf("of %d instants compared, none is one at which the books changed (%d shifted by a step or more): the import's grid slipped", total, shifted)
	}
	t.Logf("%d of the instants compared are ones at which the books changed", changedSame)
}

// tookEarlier reports whether the collector's snapshot w equals one the import
// took one to ten steps (3 s) earlier: the collector took its instant
// before that step's frames reached it (a -race build on a loaded machine
// reads its socket seconds late).
func tookEarlier(w store.Snapshot, byTime map[int64]store.Snapshot) bool {
	return shiftedBy(w, byTime, -10, -1)
}

// tookLater reports whether the collector's snapshot w is the import's
// next instant or the one after: the collector's tick for w ran that late.
func tookLater(w store.Snapshot, byTime map[int64]store.Snapshot) bool {
	return shiftedBy(w, byTime, 1, 2)
}

// shiftedBy reports whether w equals the import's snapshot from steps to
// to steps of the 300 ms grid away from its own instant.
func shiftedBy(w store.Snapshot, byTime map[int64]store.Snapshot, from, to int) bool {
	for k := from; k <= to; k++ {
		if g, had := byTime[w.Time.Add(time.Duration(k)*300*time.Millisecond).UnixMicro()]; had && sameSnapshot(w, g) {
			return true
		}
	}
	return false
}

// byEventTime splits frames into one event each and sorts them (and their
// send times) by the events' timestamps, stably; an event without one
// keeps the previous event's.
func byEventTime(frames [][]byte, sentAt []time.Time) ([][]byte, []time.Time) {
	type stamped struct {
		ms    int64
		frame []byte
		sent  time.Time
	}
	var all []stamped
	var last int64
	for i, fr := range frames {
		var events []json.RawMessage
		if json.Unmarshal(fr, &events) != nil {
			events = []json.RawMessage{fr}
		}
		for _, e := range events {
			var head struct {
				Timestamp string `json:"timestamp"`
			}
			if json.Unmarshal(e, &head) == nil {
				if ms, err := strconv.ParseInt(head.Timestamp, 10, 64); err == nil {
					last = ms
				}
			}
			all = append(all, stamped{last, e, sentAt[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b stamped) int { return cmp.Compare(a.ms, b.ms) })
	outF, outS := make([][]byte, len(all)), make([]time.Time, len(all))
	for i, a := range all {
		outF[i], outS[i] = a.frame, a.sent
	}
	return outF, outS
}

func sameSnapshot(a, b store.Snapshot) bool {
	if a.PriceUp != b.PriceUp || a.PriceDown != b.PriceDown || a.BookUp == nil || b.BookUp == nil || a.BookDown == nil || b.BookDown == nil {
		return false
	}
	return slices.Equal(a.BookUp.Bids, b.BookUp.Bids) && slices.Equal(a.BookUp.Asks, b.BookUp.Asks) &&
		slices.Equal(a.BookDown.Bids, b.BookDown.Bids) && slices.Equal(a.BookDown.Asks, b.BookDown.Asks) &&
		b.CoinPrice > 0 && abs(a.CoinPrice-b.CoinPrice) <= 0.01*a.CoinPrice
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func fmtSnap(s store.Snapshot) string {
	if s.BookUp == nil {
		return fmt.Sprintf("{up %v down %v no books}", s.PriceUp, s.PriceDown)
	}
	return fmt.Sprintf("{up %v down %v coin %v upBook %v/%v downBook %v/%v}", s.PriceUp, s.PriceDown, s.CoinPrice, s.BookUp.Bids, s.BookUp.Asks, s.BookDown.Bids, s.BookDown.Asks)
}

// writeKlines gives prices 1 s klines of the coin over [from, to) from
// price, through a Binance archive CSV (ms times, no header).
func writeKlines(t *testing.T, prices *archive.CoinPrices, coin store.Coin, from, to time.Time, price func(time.Time) float64) {
	t.Helper()
	name := filepath.Join(t.TempDir(), string(coin)+"USDT-1s.csv")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	for at := from.Truncate(time.Second); at.Before(to); at = at.Add(time.Second) {
		o, c := price(at), price(at.Add(999*time.Millisecond))
		fmt.Fprintf(f, "%d,%.2f,%.2f,%.2f,%.2f,1.0,%d,1.0,1,0.5,0.5,0\n", at.UnixMilli(), o, max(o, c), min(o, c), c, at.Add(999*time.Millisecond).UnixMilli())
	}
	f.Close()
	r, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := prices.AddKlines(coin, name, r); err != nil {
		t.Fatal(err)
	}
}
