package collect

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestBackfillCountsAHashOnce: of the Data API's trades of a gap, those
// the market has are left out by the rule in backfill.go: a transaction
// hash once per market, whatever the outcome (the mirror token) or the
// time; without a hash on either side, the same outcome, side, price and
// size in the same second; the writer's trades not yet written count.
func TestBackfillCountsAHashOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	st := memory.New()
	m := store.Market{Slug: "btc-updown-5m-1", Coin: store.BTC, MarketType: store.M5, StartTime: t0, EndTime: t0.Add(5 * time.Minute)}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Activity: st, MaxPending: 100}
	c := &Collector{cfg: cfg, filler: st, w: newWriter(&cfg, slog.New(slog.DiscardHandler), nil)}
	tr := func(at time.Time, outcome, side string, price, size float64, hash string) store.MarketTrade {
		return store.MarketTrade{Time: at, Outcome: outcome, Side: side, Price: price, Size: size, TxHash: hash}
	}
	up, down, buy, sell := store.OutcomeUp, store.OutcomeDown, store.SideBuy, store.SideSell
	stored := []store.MarketTrade{
		tr(sec(1.234), up, buy, 0.50, 10, "0xa"),
		tr(sec(2.5), down, sell, 0.40, 20, ""), // an older feed's trade, without a hash
	}
	if _, err := st.AppendMarketTrades(ctx, m.Slug, stored); err != nil {
		t.Fatal(err)
	}
	c.w.addTrade(m.Slug, tr(sec(3.1), up, sell, 0.30, 5, "0xc")) // heard, not written yet

	rows := []store.MarketTrade{
		tr(sec(1), down, buy, 0.50, 10, "0xa"),  // 0xa on the mirror token: the same match
		tr(sec(2), down, sell, 0.40, 20, "0xb"), // the unhashed trade's fields, its second
		tr(sec(3), up, sell, 0.30, 5, ""),       // a row without a hash: the held trade's fields
		tr(sec(3), up, sell, 0.30, 5, "0xc"),    // the held trade
		tr(sec(4), up, buy, 0.60, 7, "0xn"),     // new
		tr(sec(4), up, buy, 0.60, 7, "0xn"),     // a page repeated
		tr(sec(4), up, buy, 0.60, 7, ""),        // the new one, without its hash
		tr(sec(5), down, sell, 0.40, 20, "0xm"), // the unhashed trade's fields, another second: new
	}
	got, err := c.unrecorded(ctx, m.Slug, store.Gap{From: sec(0.5), To: sec(6), Kind: store.GapTrades}, rows)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.MarketTrade{rows[4], rows[7]}; !reflect.DeepEqual(got, want) {
		t.Errorf("unrecorded trades:\n got %+v\nwant %+v", got, want)
	}
}

// TestDataAPIPaging: the trades of a gap are read newest first, page by
// page, until a page reaches a trade before the gap's first second or the
// market's first trade; a walk that reaches the API's last offset first is
// errPagesEnd, and a failing API an error.
func TestDataAPIPaging(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	// n rows, one every step before end, newest first.
	serve := func(n int, step time.Duration, end time.Time, status int) (*httptest.Server, *atomic.Int64) {
		var hits atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if status != http.StatusOK {
				http.Error(w, "down", status)
				return
			}
			q := r.URL.Query()
			if q.Get("market") != "0xcond" || q.Get("takerOnly") != "true" {
				http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
				return
			}
			limit, _ := strconv.Atoi(q.Get("limit"))
			off, _ := strconv.Atoi(q.Get("offset"))
			var page []map[string]any
			for i := off; i < min(off+limit, n); i++ {
				at := end.Add(-time.Duration(i) * step)
				page = append(page, map[string]any{"asset": "up", "conditionId": "0xcond", "side": "BUY", "price": 0.5, "size": 10,
					"timestamp": at.Unix(), "transactionHash": "0x" + strconv.Itoa(i)})
			}
			_ = json.NewEncoder(w).Encode(page)
		}))
		t.Cleanup(srv.Close)
		return srv, &hits
	}
	api := func(url string) *dataAPI {
		u, err := newUpstream("data-api", url, http.DefaultClient, slog.New(slog.DiscardHandler), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		return &dataAPI{u: u, timeout: 5 * time.Second, backoff: Backoff{Base: time.Millisecond, Max: time.Millisecond}}
	}
	from, to := t0.Add(10*time.Minute+300*time.Millisecond), t0.Add(20*time.Minute)

	t.Run("reaches before the gap", func(t *testing.T) {
		// One a second from 30 min in back to the start: 600 s of the gap
		// (its first second included), over two pages of 500.
		srv, hits := serve(1801, time.Second, t0.Add(30*time.Minute), http.StatusOK)
		rows, err := api(srv.URL).trades(context.Background(), "0xcond", from, to)
		if err != nil || len(rows) != 600 || hits.Load() != 3 {
			t.Errorf("%d rows, %d requests, err %v; want 600 rows (from the gap's first second to its last) in 3 pages", len(rows), hits.Load(), err)
		}
	})
	t.Run("the market's first trade", func(t *testing.T) {
		srv, hits := serve(120, time.Second, to.Add(-time.Second), http.StatusOK)
		rows, err := api(srv.URL).trades(context.Background(), "0xcond", from, to)
		if err != nil || len(rows) != 120 || hits.Load() != 1 {
			t.Errorf("%d rows, %d requests, err %v; want the 120 in one short page", len(rows), hits.Load(), err)
		}
	})
	t.Run("past the last offset", func(t *testing.T) {
		srv, _ := serve(20_000, time.Millisecond, to.Add(-time.Second), http.StatusOK)
		_, err := api(srv.URL).trades(context.Background(), "0xcond", from, to)
		if !errors.Is(err, errPagesEnd) {
			t.Errorf("err %v, want errPagesEnd", err)
		}
	})
	t.Run("failing", func(t *testing.T) {
		srv, hits := serve(10, time.Second, to, http.StatusServiceUnavailable)
		_, err := api(srv.URL).trades(context.Background(), "0xcond", from, to)
		if err == nil || errors.Is(err, errPagesEnd) || hits.Load() != 3 {
			t.Errorf("err %v after %d requests, want the 503 after 3", err, hits.Load())
		}
	})
}

// TestBackfillTriedAgainWhileTheMarketIsRecent: with the Data API down, a
// gap's backfill is tried again, the waits doubling from BackfillDelay,
// for as long as its market started within ResumeLookback; a market past
// it is tried no more, and a line says so.
func TestBackfillTriedAgainWhileTheMarketIsRecent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		age   time.Duration // of the market at the first try
		again bool          // tried again past the first tries
	}{
		{"recent", time.Hour, true},
		{"too old", ResumeLookback - 60*time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				http.Error(w, "down", http.StatusServiceUnavailable)
			}))
			t.Cleanup(srv.Close)
			var logs SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			u, err := newUpstream("data-api", srv.URL, http.DefaultClient, log, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			st := memory.New()
			now := time.Now()
			m := store.Market{Slug: "btc-updown-5m-1", Coin: store.BTC, MarketType: store.M5, ConditionID: "0xcond",
				StartTime: now.Add(-tc.age), EndTime: now.Add(-tc.age + 5*time.Minute)}
			cfg := Config{Store: st, Activity: st, MaxPending: 100, Now: time.Now, BackfillDelay: 10 * time.Millisecond, FlushInterval: time.Millisecond}
			c := &Collector{cfg: cfg, log: log, filler: st, w: newWriter(&cfg, log, nil), backfills: make(chan backfillJob, 1),
				data: &dataAPI{u: u, timeout: time.Second, backoff: Backoff{Base: time.Millisecond, Max: time.Millisecond}}}
			c.backfills <- backfillJob{market: m, gap: store.Gap{From: m.StartTime, To: m.StartTime.Add(time.Minute), Kind: store.GapTrades}}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); c.runBackfill(ctx) }()
			// Waits of 10, 20, 40, 80 and 160 ms: the recent market's gap
			// is tried a sixth time within a second or so; the old one's
			// third wait would take its market past ResumeLookback.
			tries := func() int { return strings.Count(logs.String(), "trades gap not backfilled yet") }
			gaveUp := func() bool { return strings.Contains(logs.String(), "the market is too old to be tried again") }
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && !(tc.again && tries() >= 5) && !(!tc.again && gaveUp()) {
				time.Sleep(10 * time.Millisecond)
			}
			n := tries()
			time.Sleep(200 * time.Millisecond)
			cancel()
			<-done
			switch {
			case tc.again && (n < 5 || gaveUp()):
				t.Errorf("%d tries again and given up %v, want 5 or more and not given up:\n%s", n, gaveUp(), logs.String())
			case !tc.again && (!gaveUp() || tries() != n || n > 2):
				t.Errorf("%d tries again (then %d) and given up %v, want at most 2 and given up for good once the market is too old:\n%s", n, tries(), gaveUp(), logs.String())
			}
			if hits.Load() == 0 {
				t.Errorf("the Data API was never asked")
			}
		})
	}
}

// slowTrades is an activity store whose trade writes wait for release.
type slowTrades struct {
	*memory.Store
	entered, release chan struct{}
}

func (s slowTrades) AppendMarketTrades(ctx context.Context, slug string, trades []store.MarketTrade) (int, error) {
	close(s.entered)
	<-s.release
	return s.Store.AppendMarketTrades(ctx, slug, trades)
}

// TestBackfillSeesATradeBeingFlushed: a trade the websocket heard, which
// a flush has taken out of the writer but not yet written, is neither held
// nor stored while the flush runs: the backfill waits for the flush and
// then knows it, rather than recording the trades source's copy of it too
// (a trade recorded twice, seen at load 16).
func TestBackfillSeesATradeBeingFlushed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	mem := memory.New()
	m := store.Market{Slug: "btc-updown-5m-1", Coin: store.BTC, MarketType: store.M5, StartTime: t0, EndTime: t0.Add(5 * time.Minute)}
	if err := mem.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	st := slowTrades{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := Config{Store: mem, Activity: st, MaxPending: 100}
	c := &Collector{cfg: cfg, filler: mem, w: newWriter(&cfg, slog.New(slog.DiscardHandler), nil)}
	heard := store.MarketTrade{Time: t0.Add(3720 * time.Millisecond), Outcome: store.OutcomeDown, Side: store.SideSell, Price: 0.41, Size: 186.81, TxHash: "0xdc"}
	c.w.addTrade(m.Slug, heard)
	flushed := make(chan bool)
	go func() { flushed <- c.w.flush(ctx) }()
	<-st.entered // the flush holds the trade: the writer no longer does, the store not yet
	got := make(chan []store.MarketTrade)
	go func() {
		row := heard
		row.Time = heard.Time.Truncate(time.Second) // the Data API gives whole seconds
		fresh, err := c.unrecorded(ctx, m.Slug, store.Gap{From: t0, To: t0.Add(3400 * time.Millisecond), Kind: store.GapTrades}, []store.MarketTrade{row})
		if err != nil {
			t.Error(err)
		}
		got <- fresh
	}()
	time.Sleep(50 * time.Millisecond) // let the backfill's read start while the flush runs
	close(st.release)
	if !<-flushed {
		t.Fatal("the flush failed")
	}
	if fresh := <-got; len(fresh) != 0 {
		t.Errorf("the backfill would record %+v again: the trade was being flushed", fresh)
	}
}
