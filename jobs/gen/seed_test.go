package gen

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/updown/updown/store"
)

// failingWriter fails the n-th call of the chosen kind (1-based).
type failingWriter struct {
	*recorder
	markets, snaps, depth, trades int64 // fail on this call; 0 never
	nm, ns, nd, nt                atomic.Int64
}

func (w *failingWriter) AppendMarketTrades(ctx context.Context, slug string, tr []store.MarketTrade) (int, error) {
	if w.nt.Add(1) == w.trades {
		return 0, errDisk
	}
	return w.recorder.AppendMarketTrades(ctx, slug, tr)
}

var errDisk = errors.New("disk full")

func (w *failingWriter) UpsertMarkets(ctx context.Context, ms []store.Market) error {
	if w.nm.Add(1) == w.markets {
		return errDisk
	}
	return w.recorder.UpsertMarkets(ctx, ms)
}

func (w *failingWriter) AppendSnapshots(ctx context.Context, slug string, s []store.Snapshot) (int, error) {
	if w.ns.Add(1) == w.snaps {
		return 0, errDisk
	}
	return w.recorder.AppendSnapshots(ctx, slug, s)
}

func (w *failingWriter) AppendDepth(ctx context.Context, d []store.DepthSnapshot) error {
	if w.nd.Add(1) == w.depth {
		return errDisk
	}
	return w.recorder.AppendDepth(ctx, d)
}

func TestSeedErrors(t *testing.T) {
	t.Parallel()
	cfg := smallConfig(testNow())
	for name, w := range map[string]*failingWriter{
		"markets":   {recorder: newRecorder(), markets: 1},
		"snapshots": {recorder: newRecorder(), snaps: 5},
		"depth":     {recorder: newRecorder(), depth: 1},
		"trades":    {recorder: newRecorder(), trades: 3},
	} {
		if _, err := Seed(context.Background(), cfg, w); !errors.Is(err, errDisk) {
			t.Errorf("%s: Seed = %v, want the writer's error", name, err)
		}
	}
	// After the first failure no more snapshots are generated than the
	// workers already had in hand.
	w := &failingWriter{recorder: newRecorder(), snaps: 1}
	_, _ = Seed(context.Background(), cfg, w)
	if n := w.ns.Load(); n > 20 {
		t.Errorf("%d AppendSnapshots calls after the first failed", n-1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Seed(ctx, cfg, newRecorder()); !errors.Is(err, context.Canceled) {
		t.Errorf("Seed with a cancelled context = %v", err)
	}
	cfg.BatchSize = 0
	if _, err := Seed(context.Background(), cfg, newRecorder()); err == nil {
		t.Error("Seed of an invalid config succeeded")
	}
}
