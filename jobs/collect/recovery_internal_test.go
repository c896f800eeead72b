package collect

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// maxRecoveryPause is the longest a feed may wait, once an upstream is
// back, before asking it again: with one grid interval (300 ms) and the
// answer, recording resumes within 2 s of the upstream's return.
const maxRecoveryPause = time.Second

// TestBackoffCapsRecovery checks the retry schedule every feed and the
// websocket follow (the collector's default Backoff): however long an
// outage has lasted, the next attempt is never more than
// maxRecoveryPause away, so no upstream's return waits on a backoff
// grown during the outage.
func TestBackoffCapsRecovery(t *testing.T) {
	t.Parallel()
	b := DefaultBackoff()
	for n := 1; n <= 200; n++ {
		for range 50 {
			if d := b.Delay(n); d > maxRecoveryPause || d < 0 {
				t.Fatalf("retry %d waits %v, want at most %v", n, d, maxRecoveryPause)
			}
		}
	}

	// A feed failing for a long outage (every tick of ten minutes on a
	// 300 ms grid) is ready again at most maxRecoveryPause after its last
	// failure.
	f := &feed{name: "snapshots", log: slog.New(slog.NewTextHandler(io.Discard, nil)), backoff: b}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for i := range 2000 {
		now := at.Add(time.Duration(i) * 300 * time.Millisecond)
		if !f.ready(now) {
			continue
		}
		f.fail(ctx, now, now, errors.New("connection refused"))
		if wait := f.retryAt.Sub(now); wait > maxRecoveryPause {
			t.Fatalf("after %d failures the feed waits %v, want at most %v", f.failures, wait, maxRecoveryPause)
		}
	}
	if f.failures < 100 {
		t.Fatalf("only %d attempts in ten minutes of outage", f.failures)
	}
}
