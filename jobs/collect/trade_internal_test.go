package collect

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestUnstorableTradeLeftOut: a trade the websocket sent that the store
// would refuse (no side) is left out as it arrives; before, it went into
// the market's batch, and the store's refusal of the batch at the flush
// lost the good trades beside it.
func TestUnstorableTradeLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st, m := tradeRig(t)
	at := m.StartTime.Add(time.Minute)
	c.traded("up", wsTrade{Time: at, Price: 0.5, Size: 10, Side: store.SideBuy, TxHash: "0xgood"})
	c.traded("up", wsTrade{Time: at.Add(time.Millisecond), Price: 0.5, Size: 3, Side: "", TxHash: "0xnoside"})
	c.traded("down", wsTrade{Time: at.Add(2 * time.Millisecond), Price: 0.5, Size: 4, Side: store.SideSell, TxHash: "0xgood2"})
	flushTrades(t, c, m.Slug)
	trades, n, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
	if err != nil || n != 2 || trades[0].TxHash != "0xgood" || trades[1].TxHash != "0xgood2" {
		t.Errorf("stored %d trades %+v (%v); want the two with a side", n, trades, err)
	}
}

// TestTradeKeying pins how trades the websocket tells are told apart
// (Collector.traded): the same event heard again is one trade, the match
// told on the other token is kept beside it (DESIGN 6 counts the hash once
// across outcomes; an import keeps it too), and two fills of one match
// that differ in size stay two.
func TestTradeKeying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st, m := tradeRig(t)
	at := m.StartTime.Add(time.Minute)
	buy := wsTrade{Time: at, Price: 0.6, Size: 100, Side: store.SideBuy, TxHash: "0xa"}
	c.traded("up", buy)
	c.traded("up", buy) // heard again
	flushTrades(t, c, m.Slug)
	c.w.trades = map[string][]store.MarketTrade{}
	c.traded("up", buy)                                                                             // heard again after a flush
	c.traded("down", wsTrade{Time: at, Price: 0.4, Size: 100, Side: store.SideSell, TxHash: "0xa"}) // the mirror
	c.traded("up", wsTrade{Time: at, Price: 0.6, Size: 40, Side: store.SideBuy, TxHash: "0xa"})     // another fill
	flushTrades(t, c, m.Slug)
	trades, n, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
	if err != nil || n != 3 {
		t.Fatalf("stored %d trades %+v (%v); want the trade once, its mirror and the other fill", n, trades, err)
	}
}

// tradeRig is an offline collector that knows one 5m market, tokens "up"
// and "down", of an empty memory store.
func tradeRig(t *testing.T) (*Collector, store.Store, store.Market) {
	t.Helper()
	st := memory.New()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := store.Market{Slug: "btc-updown-5m-1796040000", Coin: store.BTC, MarketType: store.M5, StartTime: start,
		EndTime: start.Add(5 * time.Minute), ClobTokenUp: "up", ClobTokenDown: "down"}
	if err := st.UpsertMarkets(context.Background(), []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	c := offlineCollector(t, Config{Store: st, Scheme: QuickScheme{Length: 5 * time.Minute}, Series: []Series{{Coin: store.BTC, MarketType: store.M5}}})
	c.remember(m)
	return c, st, m
}

// flushTrades writes the trades the collector holds for slug.
func flushTrades(t *testing.T, c *Collector, slug string) {
	t.Helper()
	if !c.w.flushActivity(context.Background(), map[string][]store.MarketTrade{slug: c.w.heldTrades(slug)}, nil) {
		t.Fatal("the flush failed")
	}
}

// TestStopAfterABriefDropRecordsTheTradesGap: a collector stopping while
// its websocket is down, a second after trades last flowed, records the
// stretch as a trades gap (the next start's backfill reads it), as a
// running collector does once the socket is back: a new subscription
// sends no trade made before it, so even a short stretch loses them.
// Before any flow (a start), only a stretch longer than GapAfter counts.
func TestStopAfterABriefDropRecordsTheTradesGap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		flowed  bool
		wantGap bool
	}{
		{"after a flow", true, true},
		{"before any flow", false, false},
	} {
		c, _, m := tradeRig(t)
		ws, err := newWSBooks("wss://example.invalid/ws/market", &c.cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		c.ws = ws
		at := m.StartTime.Add(time.Minute)
		if tc.flowed {
			c.tradeFeed.covered = at
		}
		c.tradeFeed.down = at.Add(500 * time.Millisecond)
		c.closeTrades(at.Add(1500 * time.Millisecond)) // well within GapAfter
		c.w.mu.Lock()
		gaps := slices.Clone(c.w.gaps[m.Slug])
		c.w.mu.Unlock()
		want := []store.Gap{{From: at, To: at.Add(1500 * time.Millisecond), Kind: store.GapTrades}}
		if !tc.wantGap {
			want = nil
		}
		if !slices.Equal(gaps, want) {
			t.Errorf("%s: stopping 1.5 s into a drop recorded %v, want %v", tc.name, gaps, want)
		}
	}
}

// TestTradesLostRecordsGaps: stretches in which a market's tokens were
// resubscribed (Collector.tradesLost) are recorded as trades gaps of the
// market, cut to its window, the two tokens' stretches that overlap as
// one; a token of no market followed is passed over, and the log says so.
func TestTradesLostRecordsGaps(t *testing.T) {
	t.Parallel()
	c, _, m := tradeRig(t)
	var logs SyncBuffer
	c.log = slog.New(slog.NewTextHandler(&logs, nil))
	at := m.StartTime.Add(time.Minute)
	c.tradesLost([]lostTrades{
		{token: "up", from: at, to: at.Add(2 * time.Second)},
		{token: "down", from: at.Add(time.Second), to: at.Add(3 * time.Second)},
		{token: "up", from: at.Add(time.Minute), to: at.Add(time.Minute + time.Second)},
		{token: "down", from: m.StartTime.Add(-2 * time.Second), to: m.StartTime.Add(time.Second)},
		{token: "elsewhere", from: at, to: at.Add(time.Second)},
	})
	c.w.mu.Lock()
	got := slices.Clone(c.w.gaps[m.Slug])
	c.w.mu.Unlock()
	slices.SortFunc(got, store.CompareGaps)
	want := []store.Gap{
		{From: m.StartTime, To: m.StartTime.Add(time.Second), Kind: store.GapTrades},
		{From: at, To: at.Add(3 * time.Second), Kind: store.GapTrades},
		{From: at.Add(time.Minute), To: at.Add(time.Minute + time.Second), Kind: store.GapTrades},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("gaps %+v, want %+v", got, want)
	}
	if l := logs.String(); !strings.Contains(l, "trades gap not recorded") || !strings.Contains(l, "token=elsewhere") {
		t.Errorf("no log line says the stretch of a token of no market followed was dropped:\n%s", l)
	}
}

// TestTradesLostOfAMarketThatEnded: a quiet book resubscribed 20 s
// before its market's end, for a fresh book that never comes (the CLOB
// sends none of a market that closed), is still waiting when discovery
// passes WatchAfterEnd after the end. The socket drops the token then;
// the stretch from its last change to the end is a trades gap of the
// market, where forgetting the market first dropped the stretch without
// a word. Once the stretch is closed, the market is forgotten.
func TestTradesLostOfAMarketThatEnded(t *testing.T) {
	t.Parallel()
	c, _, m := tradeRig(t)
	ws, err := newWSBooks("wss://example.invalid/ws/market", &c.cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.ws, ws.listener = ws, c
	clock := m.EndTime.Add(-20 * time.Second)
	ws.now = func() time.Time { return clock }
	ws.markLost([]string{m.ClobTokenUp})

	clock = m.EndTime.Add(c.cfg.WatchAfterEnd + time.Minute)
	if forgot := c.forgetEnded(clock); len(forgot) != 0 {
		t.Errorf("forgot %v while its token waits for its fresh book", forgot)
	}
	ws.dropTokens([]string{m.ClobTokenUp, m.ClobTokenDown}) // the subscription leaves the market
	c.w.mu.Lock()
	got := slices.Clone(c.w.gaps[m.Slug])
	c.w.mu.Unlock()
	want := []store.Gap{{From: m.EndTime.Add(-20*time.Second - wsDeliveryLag), To: m.EndTime, Kind: store.GapTrades}}
	if !slices.Equal(got, want) {
		t.Errorf("gaps %+v, want %+v", got, want)
	}
	if forgot := c.forgetEnded(clock); len(forgot) != 1 || forgot[0].Slug != m.Slug {
		t.Errorf("forgot %v once the stretch closed, want %s", forgot, m.Slug)
	}
}

// TestUnstorableSnapshotLeftOut: a snapshot the store would refuse (a coin
// price that is not finite) is refused as it is built, so that the
// market's instant fails alone; before, it went into the market's batch,
// and the store's refusal of the batch at the flush dropped the good
// snapshots beside it.
func TestUnstorableSnapshotLeftOut(t *testing.T) {
	t.Parallel()
	c, _, m := tradeRig(t)
	at := m.StartTime.Add(time.Minute)
	books := map[string]clobBook{
		"up":   {AssetID: "up", Asks: []book.Level{{Price: book.Num{V: 0.55, Set: true}, Size: book.Num{V: 10, Set: true}}}},
		"down": {AssetID: "down", Asks: []book.Level{{Price: book.Num{V: 0.47, Set: true}, Size: book.Num{V: 10, Set: true}}}},
	}
	if _, err := c.buildSnapshot(m, at, books, map[store.Coin]float64{store.BTC: 75000}); err != nil {
		t.Fatalf("a good snapshot: %v", err)
	}
	for _, price := range []float64{math.NaN(), math.Inf(1)} {
		if s, err := c.buildSnapshot(m, at, books, map[store.Coin]float64{store.BTC: price}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("coin price %v: built %+v (%v), want the store's refusal", price, s, err)
		}
	}
}
