package collect

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRateLogForgetsOldKeys: the writer's warnings are keyed by market
// ("write "+slug), and markets come and go for the life of the collector:
// a key not seen for an interval is forgotten (throttle.Log), the repeats
// it held back logged as it goes.
func TestRateLogForgetsOldKeys(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := newRateLog(slog.New(slog.NewJSONHandler(&out, nil)), time.Minute, func() time.Time { return clock })
	ctx := context.Background()
	for range 3 {
		r.warn(ctx, "write btc-updown-5m-1", "writing snapshots failed; kept for the next flush")
	}
	r.warn(ctx, "write btc-updown-5m-2", "writing snapshots failed; kept for the next flush")
	clock = clock.Add(2 * time.Minute)
	r.warn(ctx, "write btc-updown-5m-3", "writing snapshots failed; kept for the next flush")
	if !strings.Contains(out.String(), `"key":"write btc-updown-5m-1","suppressed":2`) {
		t.Errorf("the repeats held back of a forgotten key were not logged:\n%s", out.String())
	}
}
