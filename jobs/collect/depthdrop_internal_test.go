package collect

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// downDepthStore refuses depth history while down, as a database that is
// unreachable does.
type downDepthStore struct {
	*memory.Store
	down atomic.Bool
}

func (s *downDepthStore) AppendDepth(ctx context.Context, snaps []store.DepthSnapshot) error {
	if s.down.Load() {
		return store.ErrUnavailable
	}
	return s.Store.AppendDepth(ctx, snaps)
}

// TestDepthDroppedIsLogged keeps the store from writing depth history for
// longer than the writer holds: the BTCUSDT depth snapshots it had to
// drop are a hole in /v1/btc/{spot,future}/snapshots, and the log says so,
// with their number, as it does of Polymarket snapshots; so does a
// shutdown that could not write what it held. They were dropped without a
// word.
func TestDepthDroppedIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &downDepthStore{Store: memory.New()}
	st.down.Store(true)
	logs := &SyncBuffer{}
	cfg := Config{Store: st, MaxPending: 3, WarnEvery: time.Minute, Backoff: Backoff{Base: time.Millisecond, Max: time.Millisecond}}
	w := newWriter(&cfg, slog.New(slog.NewTextHandler(logs, nil)), nil)
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	depth := func(i int) store.DepthSnapshot {
		return store.DepthSnapshot{Symbol: "BTCUSDT", Kind: store.Spot, Time: t0.Add(time.Duration(i) * time.Second), CoinPrice: 95000,
			Bids: []store.DepthLevel{{Price: 94999.99, Quantity: 1}}, Asks: []store.DepthLevel{{Price: 95000.01, Quantity: 1}}, LastUpdateID: int64(i)}
	}
	for i := range 5 { // two beyond what the writer holds
		w.addDepth(depth(i))
	}
	if w.flush(ctx) {
		t.Fatal("a flush into a store that is down reported success")
	}
	w.addDepth(depth(5)) // the writer still holds the three: dropped
	st.down.Store(false)
	if !w.flush(ctx) {
		t.Fatal("a flush after the store recovered failed")
	}
	if got := w.depthWritten.Load(); got != 3 {
		t.Errorf("%d depth snapshots written, want the 3 held", got)
	}
	told := 0
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "depth history snapshots dropped") {
			_, n, _ := strings.Cut(strings.TrimSpace(line), "dropped=")
			k, _ := strconv.Atoi(n)
			told += k
		}
	}
	if told != 3 {
		t.Errorf("3 depth snapshots dropped; the log tells of %d:\n%s", told, logs)
	}

	st.down.Store(true)
	w.addDepth(depth(6))
	w.final(ctx)
	if l := logs.String(); !strings.Contains(l, "depth history snapshots not written at shutdown") {
		t.Errorf("a depth snapshot lost at shutdown; the log does not say so:\n%s", l)
	}
}
