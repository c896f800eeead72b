package collect

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestRecordTickKeepsTimeOrder: a tick shown by a REST book taken before
// the last change recorded (the websocket told of the change while the
// book's answer travelled) is older news, and neither moves the tick back
// nor enters the history out of order; a later change back is recorded.
func TestRecordTickKeepsTimeOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	cent := 0.01
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := store.Market{Slug: "btc-updown-5m-1796040000", Coin: store.BTC, MarketType: store.M5, StartTime: start,
		EndTime: start.Add(5 * time.Minute), ClobTokenUp: "up", ClobTokenDown: "down", TickSize: &cent}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	c := offlineCollector(t, Config{Store: st, Scheme: QuickScheme{Length: 5 * time.Minute}, Series: []Series{{Coin: store.BTC, MarketType: store.M5}}})
	changed := start.Add(time.Minute)
	steps := []struct {
		tick float64
		at   time.Time
		want []store.TickSizeChange
	}{
		{0.001, changed, []store.TickSizeChange{{Time: changed, TickSize: 0.001}}},
		// The book taken 5 ms before the change, or at its instant.
		{0.01, changed.Add(-5 * time.Millisecond), []store.TickSizeChange{{Time: changed, TickSize: 0.001}}},
		{0.01, changed, []store.TickSizeChange{{Time: changed, TickSize: 0.001}}},
		{0.01, changed.Add(time.Second), []store.TickSizeChange{{Time: changed, TickSize: 0.001}, {Time: changed.Add(time.Second), TickSize: 0.01}}},
	}
	for i, s := range steps {
		c.recordTick(ctx, m.Slug, s.tick, s.at)
		got, err := st.GetMarket(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		last := s.want[len(s.want)-1].TickSize
		if got.TickSize == nil || *got.TickSize != last || len(got.TickSizeChanges) != len(s.want) {
			t.Fatalf("step %d (%v at %s): tick %v, changes %+v; want %v, %+v", i, s.tick, s.at.Format(time.StampMilli), fmtPtr(got.TickSize), got.TickSizeChanges, last, s.want)
		}
		for k, w := range s.want {
			if g := got.TickSizeChanges[k]; !g.Time.Equal(w.Time) || g.TickSize != w.TickSize {
				t.Fatalf("step %d: change %d is %+v, want %+v", i, k, g, w)
			}
		}
	}
}

// offlineCollector is a collector of cfg (its Store and Series) whose
// upstreams are never asked, with a memory Live, no scheduler and no log:
// for tests that call its methods themselves.
func offlineCollector(t *testing.T, cfg Config) *Collector {
	t.Helper()
	none := "http://127.0.0.1:1" // no upstream is asked
	cfg.Upstreams = Upstreams{Gamma: none, CLOB: none, BinanceSpot: none, BinanceFutures: none}
	cfg.Live, cfg.Scheduler, cfg.Logger = memory.NewLive(), noScheduler{}, slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type noScheduler struct{}

func (noScheduler) ScheduleResolution(context.Context, string, time.Duration) error { return nil }

// TestRESTTickChangeAfterTheLastRecorded: a market whose tick was last
// recorded at an instant (its discovery at another tick, say) and whose
// quiet REST book, asked for after that instant, shows another tick
// records the change after it: the book's timestamp, from before the
// instant, would date it as older news, and the change was lost for good
// (every later book says the same).
func TestRESTTickChangeAfterTheLastRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	milli := 0.001
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	found := start.Add(2 * time.Minute) // discovered then, at 0.001
	m := store.Market{Slug: "btc-updown-5m-1796040000", Coin: store.BTC, MarketType: store.M5, StartTime: start,
		EndTime: start.Add(5 * time.Minute), ClobTokenUp: "up", ClobTokenDown: "down", TickSize: &milli,
		TickSizeChanges: []store.TickSizeChange{{Time: found, TickSize: milli}}}
	if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	c := offlineCollector(t, Config{Store: st, Scheme: QuickScheme{Length: 5 * time.Minute}, Series: []Series{{Coin: store.BTC, MarketType: store.M5}}})
	c.remember(m)
	quiet := start.Add(time.Minute) // the book last changed before the discovery
	asked, got := found.Add(3*time.Second), found.Add(3200*time.Millisecond)
	rest := clobBook{AssetID: "up", Timestamp: flexString(strconv.FormatInt(quiet.UnixMilli(), 10)), TickSize: flexFloat{V: 0.01, Set: true}}
	// Asked for just after it, the book may have been taken before it by
	// Polymarket's clock: older news.
	c.checkTick(m, map[string]clobBook{"up": rest}, found.Add(100*time.Millisecond), found.Add(300*time.Millisecond))
	select {
	case fn := <-c.work:
		fn(ctx)
	default:
		t.Fatal("no tick change queued")
	}
	if got, _ := st.GetMarket(ctx, m.Slug); len(got.TickSizeChanges) != 1 {
		t.Fatalf("changes %+v: a book asked for just after the last change, dated before it, was recorded", got.TickSizeChanges)
	}
	c.checkTick(m, map[string]clobBook{"up": rest}, asked, got)
	select {
	case fn := <-c.work:
		fn(ctx)
	default:
		t.Fatal("no tick change queued")
	}
	got2, err := st.GetMarket(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got2.TickSizeChanges); got2.TickSize == nil || *got2.TickSize != 0.01 || n != 2 ||
		!got2.TickSizeChanges[1].Time.After(found) || got2.TickSizeChanges[1].Time.After(got) {
		t.Errorf("tick %v, changes %+v; want the change to 0.01 after %s, by %s", fmtPtr(got2.TickSize), got2.TickSizeChanges,
			found.Format(time.StampMilli), got.Format(time.StampMilli))
	}
}
