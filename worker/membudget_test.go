package worker

import (
	"context"
	"testing"
	"time"
)

// TestMemoryBudget: large replays share the budget (one that does not fit
// waits, one larger than all of it runs alone), small ones never wait.
func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	const h24 = 288_000 // a 24hr market at the 300 ms cadence: ~165 MiB
	sizes := map[string]int{"h24-a": h24, "h24-b": h24, "huge": 10 * h24, "m15": 3_000}
	b := newMemoryBudget(256 << 20)
	ctx := t.Context()

	first, err := b.admit(ctx, "h24-a", sizes["h24-a"])
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan func())
	go func() {
		r, err := b.admit(ctx, "h24-b", sizes["h24-b"])
		if err != nil {
			t.Error(err)
		}
		admitted <- r
	}()
	select {
	case <-admitted:
		t.Fatal("a second 24hr replay was admitted beside the first: the budget holds one")
	case <-time.After(100 * time.Millisecond):
	}
	small, err := b.admit(ctx, "m15", sizes["m15"]) // a 15m replay does not wait
	if err != nil {
		t.Fatal(err)
	}
	small()
	first()
	second := <-admitted

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := b.admit(short, "huge", sizes["huge"]); err == nil {
		t.Fatal("a replay larger than the budget was admitted while another held part of it")
	}
	second()
	huge, err := b.admit(ctx, "huge", sizes["huge"]) // alone, it runs
	if err != nil {
		t.Fatal(err)
	}
	huge()
}
