package collect

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestDepthOlderThanRecordedIsNotRecorded: Binance numbers every change of
// a book (lastUpdateId only grows), and its REST depth comes from whichever
// server answers, which may be behind the one that answered a second ago.
// An answer older than the book already recorded (a lower lastUpdateId) is
// not the book at the later instant: it is neither appended to the depth
// history at that instant nor made the latest depth, and the next answer
// that is current is recorded again. The collector stamped the old book with
// the new instant, so history went back in time and /latest served it as
// fresh. The payloads are the real ones of realdata/binance.
func TestDepthOlderThanRecordedIsNotRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := at
	bin := binancetest.New(t, binancetest.Options{Clock: func() time.Time { return now }})
	st := memory.New()
	live := memory.NewLive()
	cfg := Config{
		Upstreams:     Upstreams{Gamma: "http://127.0.0.1:1", CLOB: "http://127.0.0.1:1", BinanceSpot: bin.URL, BinanceFutures: bin.URL},
		Store:         st,
		Live:          live,
		Scheduler:     noScheduler{},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Scheme:        QuickScheme{Length: 5 * time.Minute},
		Series:        []Series{{Coin: store.BTC, MarketType: store.M5}},
		ExchangeCoins: []store.Coin{store.BTC},
		Now:           func() time.Time { return now },
		MaxLag:        time.Minute,
		Backoff:       Backoff{Base: time.Nanosecond, Max: time.Nanosecond},
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// Spot: realdata/binance/nautilus_http_spot_market_depth.json (two
	// levels a side), then the same book from before 40 updates earlier.
	spotNew := `{"lastUpdateId":14527958487,"bids":[["60650.00000000","0.00213000"],["60648.08000000","0.06346000"]],` +
		`"asks":[["60650.01000000","0.61982000"],["60653.68000000","0.00696000"]]}`
	spotOld := `{"lastUpdateId":14527958447,"bids":[["60640.00000000","0.50000000"]],"asks":[["60641.00000000","0.40000000"]]}`
	spotNext := `{"lastUpdateId":14527958500,"bids":[["60651.00000000","0.10000000"]],"asks":[["60651.01000000","0.20000000"]]}`
	// Futures: realdata/binance/futures_depth_BTCUSDT_2021-03-21_PARTIAL.json,
	// then an answer from 7 updates earlier, then a current one.
	futNew := `{"lastUpdateId":272144015637,"E":1616333020858,"T":1616333020851,` +
		`"bids":[["56865.62","0.501"],["56865.00","0.003"]],"asks":[["56865.63","3.972"],["56865.64","0.023"]]}`
	futOld := `{"lastUpdateId":272144015630,"E":1616333020758,"T":1616333020751,"bids":[["56860.00","1.000"]],"asks":[["56861.00","2.000"]]}`
	futNext := `{"lastUpdateId":272144015700,"E":1616333021858,"T":1616333021851,"bids":[["56866.00","1.000"]],"asks":[["56866.10","2.000"]]}`
	bin.Fail(binancetest.RouteSpotDepth, binancetest.Fault{Body: spotNew}, binancetest.Fault{Body: spotOld}, binancetest.Fault{Body: spotNext})
	bin.Fail(binancetest.RouteFuturesDepth, binancetest.Fault{Body: futNew}, binancetest.Fault{Body: futOld}, binancetest.Fault{Body: futNext})

	instants := []time.Time{at, at.Add(time.Second), at.Add(2 * time.Second)}
	for _, i := range instants {
		now = i
		c.depth(ctx, i)
		if !c.w.flush(ctx) {
			t.Fatal("depth history not written")
		}
	}
	for _, tc := range []struct {
		kind store.ExchangeKind
		ids  []int64 // newest first
	}{
		{store.Spot, []int64{14527958500, 14527958487}},
		{store.Future, []int64{272144015700, 272144015637}},
	} {
		hist, _, err := st.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: tc.kind})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, d := range hist {
			got = append(got, d.LastUpdateID)
			if d.Time.Equal(instants[1]) {
				t.Errorf("%s: the book of update %d, older than the one recorded at %s, is in the history at %s",
					tc.kind, d.LastUpdateID, instants[0].Format(time.StampMilli), d.Time.Format(time.StampMilli))
			}
		}
		if len(got) != len(tc.ids) || got[0] != tc.ids[0] || got[1] != tc.ids[1] {
			t.Errorf("%s history: update ids %v, want %v", tc.kind, got, tc.ids)
		}
	}

	// The latest depth after the stale answer is still the newer book.
	bin.Fail(binancetest.RouteSpotDepth, binancetest.Fault{Body: spotOld})
	bin.Fail(binancetest.RouteFuturesDepth, binancetest.Fault{Body: futOld})
	now = at.Add(3 * time.Second)
	c.depth(ctx, now)
	for _, tc := range []struct {
		kind store.ExchangeKind
		id   int64
	}{{store.Spot, 14527958500}, {store.Future, 272144015700}} {
		d, err := live.LatestDepth(ctx, store.BTC, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if d.LastUpdateID != tc.id {
			t.Errorf("%s latest depth is the book of update %d, want the newer %d recorded before it", tc.kind, d.LastUpdateID, tc.id)
		}
	}

	// Ids that stay lower for longer than depthRewind are a sequence begun
	// again (no server stays a minute behind): recorded from then on, not
	// refused for good.
	restarted := `{"lastUpdateId":1000,"bids":[["60700.00000000","1.00000000"]],"asks":[["60700.01000000","1.00000000"]]}`
	for i := 0; ; i++ {
		bin.Fail(binancetest.RouteSpotDepth, binancetest.Fault{Body: restarted})
		now = at.Add(4*time.Second + time.Duration(i)*10*time.Second)
		c.depth(ctx, now)
		d, err := live.LatestDepth(ctx, store.BTC, store.Spot)
		if err != nil {
			t.Fatal(err)
		}
		if d.LastUpdateID == 1000 {
			if since := now.Sub(at.Add(2 * time.Second)); since < depthRewind {
				t.Errorf("a lower id recorded %v after the higher one, within depthRewind", since)
			}
			break
		}
		if i == 10 {
			t.Fatalf("spot depth whose ids began again still refused %v later", now.Sub(at))
		}
	}
}
