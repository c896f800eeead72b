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

// TestSweepETAWaitingOnAHeldShard: a sweep whose last shard is held up
// (its worker died holding it, and the shard comes back only once its
// lease lapses) has no ETA once it is past the end its pace foretold,
// where it said the fraction of a second its pace leaves for one shard
// for as long as it waited, and a customer at its cap was told to come
// back in a second, again and again. Between shards the ETA counts down
// from the last one.
func TestSweepETAWaitingOnAHeldShard(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// 99 of 100 shards of 10 trials in the first 60 s; the last held since.
	held := store.Sweep{ID: "s", Status: store.SweepRunning, CreatedAt: now.Add(-100 * time.Second),
		UpdatedAt: now.Add(-40 * time.Second), ReplaysDone: 990, ReplaysTotal: 1000}
	// A quarter done in 30 s, the last shard 10 s ago: 90 s from then.
	paced := store.Sweep{ID: "p", Status: store.SweepRunning, CreatedAt: now.Add(-40 * time.Second),
		UpdatedAt: now.Add(-10 * time.Second), ReplaysDone: 25, ReplaysTotal: 100}
	for _, tc := range []struct {
		name string
		sw   store.Sweep
		eta  *float64 // nil: none
		wait int
	}{
		{"held", held, nil, 60},
		{"paced", paced, ptr(80.0), 80},
	} {
		s, err := New(Config{Store: listedSweeps{memory.New(), []store.Sweep{tc.sw}}, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		got := s.sweepJSON(tc.sw, false).Progress.ETASeconds
		if (got == nil) != (tc.eta == nil) || got != nil && *got != *tc.eta {
			t.Errorf("%s: eta_seconds %v, want %v", tc.name, deref(got), deref(tc.eta))
		}
		if w := s.sweepSlotWait(t.Context(), "c"); w != tc.wait {
			t.Errorf("%s: wait %d s, want %d", tc.name, w, tc.wait)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
