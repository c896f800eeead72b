package collect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// betweenReadAndWrite is a store that runs hook once, after the first
// GetMarket has read and before its caller writes.
type betweenReadAndWrite struct {
	Store
	fired atomic.Bool
	hook  func()
}

func (s *betweenReadAndWrite) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	m, err := s.Store.GetMarket(ctx, slug)
	if s.fired.CompareAndSwap(false, true) {
		s.hook()
	}
	return m, err
}

// TestMarketUpdatesDoNotUndoEachOther: the collector updates a stored
// market from two goroutines, the start price and price to beat from
// discovery, a tick change from the websocket's work queue, each by reading
// the market and writing it back. A tick change that lands between the
// start price's read and its write must not be undone by that write (the
// websocket tells of a change once: it would be lost for good).
func TestMarketUpdatesDoNotUndoEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Minute)
	klines := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		ms := start.UnixMilli()
		fmt.Fprintf(w, `[[%d,"91234.50","91240.00","91230.00","91235.10","1.5",%d,"0",3,"0","0","0"]]`, ms, ms+999)
	}))
	t.Cleanup(klines.Close)

	inner := memory.New()
	cent := 0.01
	m := store.Market{Slug: "btc-updown-5m-1796040000", MarketID: "1", Coin: store.BTC, MarketType: store.M5, StartTime: start,
		EndTime: start.Add(5 * time.Minute), ClobTokenUp: "up", ClobTokenDown: "down", TickSize: &cent}
	if err := inner.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	st := &betweenReadAndWrite{Store: inner}
	none := "http://127.0.0.1:1" // not asked
	c, err := New(Config{Upstreams: Upstreams{Gamma: none, CLOB: none, BinanceSpot: klines.URL, BinanceFutures: none},
		Store: st, Live: memory.NewLive(), Scheduler: noScheduler{}, Now: func() time.Time { return now },
		Series: []Series{{Coin: store.BTC, MarketType: store.M5}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.remember(m)
	changed := start.Add(30 * time.Second)
	done := make(chan struct{})
	st.hook = func() {
		// The websocket's tick change, on the work queue's goroutine, while
		// the start price is being recorded. It may wait for that to be
		// written, not the other way round.
		go func() { defer close(done); c.recordTick(ctx, m.Slug, 0.001, changed) }()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.recordStartPrices(ctx, now)
	<-done

	got, err := inner.GetMarket(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if got.CoinPriceStart == nil || *got.CoinPriceStart != 91234.50 {
		t.Errorf("coin_price_start %v, want 91234.5", fmtPtr(got.CoinPriceStart))
	}
	if got.TickSize == nil || *got.TickSize != 0.001 || len(got.TickSizeChanges) != 1 {
		t.Errorf("tick %v, changes %+v: the tick change was undone by the start price's write", fmtPtr(got.TickSize), got.TickSizeChanges)
	}
	c.mu.Lock()
	cached := c.markets[m.Slug]
	c.mu.Unlock()
	if cached.TickSize == nil || *cached.TickSize != 0.001 || cached.CoinPriceStart == nil {
		t.Errorf("the collector holds tick %v, start price %v", fmtPtr(cached.TickSize), fmtPtr(cached.CoinPriceStart))
	}
}
