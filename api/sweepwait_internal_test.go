package api

import (
	"context"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// listedSweeps is a store whose customer's sweeps are the ones given.
type listedSweeps struct {
	*memory.Store
	sweeps []store.Sweep
}

func (s listedSweeps) ListSweeps(context.Context, string, int, int) ([]store.Sweep, int, error) {
	return s.sweeps, len(s.sweeps), nil
}

// TestSweepSlotWait: a customer at its cap of sweeps is told to come back
// when the running sweep expected to end first ends, by its pace so far,
// and in a minute while none has a pace yet.
func TestSweepSlotWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	running := func(startedAgo time.Duration, done, total int) store.Sweep {
		return store.Sweep{ID: "s", Status: store.SweepRunning, CreatedAt: now.Add(-startedAgo), ReplaysDone: done, ReplaysTotal: total}
	}
	for _, tc := range []struct {
		name   string
		sweeps []store.Sweep
		want   int
	}{
		{"none with a pace", []store.Sweep{running(time.Minute, 0, 100)}, 60},
		// 30 s for a quarter: 90 s for the rest.
		{"one a quarter done", []store.Sweep{running(30*time.Second, 25, 100)}, 90},
		// 10 s for a half: 10 s more; the other needs 90.
		{"the soonest of two", []store.Sweep{running(30*time.Second, 25, 100), running(10*time.Second, 50, 100)}, 10},
		{"almost done", []store.Sweep{running(time.Second, 999, 1000)}, 1},
		{"a finished one has no pace", []store.Sweep{{Status: store.SweepDone, CreatedAt: now.Add(-time.Hour), ReplaysDone: 5, ReplaysTotal: 5}}, 60},
	} {
		s, err := New(Config{Store: listedSweeps{memory.New(), tc.sweeps}, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.sweepSlotWait(t.Context(), "c"); got != tc.want {
			t.Errorf("%s: wait %d s, want %d", tc.name, got, tc.want)
		}
	}
}
