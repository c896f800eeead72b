package collect

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestSnapshotPollBesideHeldBooks: the websocket holds one book of the
// market (its Up token's) and REST is asked for the other, which answers
// slowly. A poll cut short by the collector's shutdown loses nothing and
// logs nothing (no instant counted, no gap opened); a poll that answers
// before its own deadline but later than MaxLag after the instant loses
// the instant as late, as any late poll, not as an upstream failure.
func TestSnapshotPollBesideHeldBooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		delay    time.Duration // the REST books' answer, after the request
		behind   time.Duration // how long after the instant the snapshot begins
		shutdown time.Duration // when the collector stops, if it does
		want     map[string]int64
	}{
		{name: "shutdown", delay: time.Hour, shutdown: 300 * time.Millisecond, want: map[string]int64{}},
		{name: "late", delay: 300 * time.Millisecond, behind: 850 * time.Millisecond, want: map[string]int64{DropLate: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, logs, m := heldBooksRig(t, tc.delay)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.shutdown > 0 {
				time.AfterFunc(tc.shutdown, cancel)
			}
			c.snapshot(ctx, time.Now().Add(-tc.behind), []store.Market{m})
			got := c.DroppedInstants()
			for _, r := range []string{DropStalled, DropBackoff, DropBusy, DropUpstream, DropLate, DropPartial} {
				if got[r] != tc.want[r] {
					t.Errorf("instants dropped %v, want %v", got, tc.want)
					break
				}
			}
			if tc.shutdown > 0 && strings.Contains(logs.String(), "gap") {
				t.Errorf("a shutdown during the poll logged a gap:\n%s", logs)
			}
		})
	}
}

// heldBooksRig is a collector whose websocket holds the Up book of its one
// market, live, and whose CLOB answers the REST books after delay (or when
// the request ends); the coin prices come from a fake Binance at once.
func heldBooksRig(t *testing.T, delay time.Duration) (*Collector, *lockedBuffer, store.Market) {
	t.Helper()
	clob := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read first: the server hears the client go only once the body
		// is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(`[{"asset_id":"down","bids":[{"price":"0.4","size":"10"}],"asks":[{"price":"0.6","size":"10"}]}]`))
	}))
	t.Cleanup(clob.Close)
	bin := binancetest.New(t, binancetest.Options{})
	logs := &lockedBuffer{}
	st := memory.New()
	start := time.Now().Truncate(5 * time.Minute)
	m := store.Market{Slug: "btc-updown-5m-1", Coin: store.BTC, MarketType: store.M5, StartTime: start,
		EndTime: start.Add(5 * time.Minute), ClobTokenUp: "up", ClobTokenDown: "down"}
	c, err := New(Config{
		Upstreams: Upstreams{Gamma: "http://127.0.0.1:1", CLOB: clob.URL, BinanceSpot: bin.URL, BinanceFutures: bin.URL},
		Store:     st, Live: memory.NewLive(), Scheduler: noScheduler{},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Scheme: QuickScheme{Length: 5 * time.Minute}, Series: []Series{{Coin: store.BTC, MarketType: store.M5}},
		MaxLag: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := newWSBooks("wss://example.invalid/ws/market", &c.cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ws.live, ws.lastMsg = true, time.Now()
	ws.feed(t, `{"event_type":"book","asset_id":"up","market":"0x1","bids":[{"price":"0.5","size":"10"}],"asks":[{"price":"0.55","size":"10"}],"timestamp":"1","hash":"0x"}`)
	c.ws = ws
	return c, logs, m
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
