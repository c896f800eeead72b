package throttle

import (
	"testing"
	"time"
)

// TestAllow: a key goes through once a period, counting the repeats held
// back in between; a key not seen for a period is forgotten, its held
// repeats handed back once, and a key without held repeats silently.
func TestAllow(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return clock })
	step := func(d time.Duration) { clock = clock.Add(d) }
	want := func(key string, ok bool, held int, gone []Held) {
		t.Helper()
		gotOK, gotHeld, gotGone := l.Allow(key)
		if gotOK != ok || gotHeld != held || len(gotGone) != len(gone) {
			t.Fatalf("Allow(%q) = %v, %d, %v; want %v, %d, %v", key, gotOK, gotHeld, gotGone, ok, held, gone)
		}
		for i := range gone {
			if gotGone[i] != gone[i] {
				t.Fatalf("Allow(%q) gone %v, want %v", key, gotGone, gone)
			}
		}
	}
	want("a", true, 0, nil)
	step(time.Second)
	want("a", false, 0, nil)
	want("a", false, 0, nil)
	want("b", true, 0, nil) // a and b are keys of their own
	step(time.Minute)
	want("a", true, 2, []Held{{Key: "b", N: 0}}[:0]) // b held nothing back: forgotten silently
	want("b", true, 0, nil)
	step(time.Second)
	want("b", false, 0, nil)
	step(time.Minute)
	want("c", true, 0, []Held{{Key: "b", N: 1}}) // a, seen a minute ago with nothing held, goes too
	if len(l.last) != 1 || len(l.held) != 1 {
		t.Errorf("%d keys kept, want only c's", len(l.last))
	}
}
