package worker

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"
)

// The memory budget (issue 16, item 1): a replay holds its market's whole
// history while it runs (a 24hr market at the 300 ms cadence: 288,000
// snapshots with books, about 170 MB decoded), so a worker running several
// at once grew to about a gigabyte, and its garbage collector stole the
// CPU small replays needed. A worker therefore admits replays against a
// budget of the bytes their data takes once decoded (estimated from the
// snapshot count before anything is loaded): one that does not fit waits
// until earlier ones have finished, one larger than the whole budget runs
// alone, and small ones (under smallTaskBytes) run at once, so that they
// never queue behind large ones.

// DefaultMemoryBudget is a worker's budget when Config.MemoryBudget is 0.
const DefaultMemoryBudget = 256 << 20

// estSnapshotBytes estimates what a replay holds for each snapshot of its
// market at most: the tape's tick (80 bytes) and its side's levels (16
// bytes each, 20 for ten-level books redrawn every tick), and the arenas
// its chunks are decoded through.
const estSnapshotBytes = 600

// smallTaskBytes: replays estimated under this run outside the budget.
const smallTaskBytes = 16 << 20

// memoryBudget admits replays by the bytes their data will take.
type memoryBudget struct {
	sem   *semaphore.Weighted
	total int64
	// waiting, when set (tests), is told of a replay that found no room
	// and waits for it.
	waiting func(slug string)
}

func newMemoryBudget(bytes int64) *memoryBudget {
	if bytes <= 0 {
		bytes = DefaultMemoryBudget
	}
	return &memoryBudget{sem: semaphore.NewWeighted(bytes), total: bytes}
}

// admit waits until the replay of a market of n snapshots (slug) fits the
// budget and returns what gives its share back.
func (b *memoryBudget) admit(ctx context.Context, slug string, n int) (release func(), err error) {
	need := int64(n) * estSnapshotBytes
	if need < smallTaskBytes {
		return func() {}, nil
	}
	need = min(need, b.total)
	if !b.sem.TryAcquire(need) {
		if b.waiting != nil {
			b.waiting(slug)
		}
		if err := b.sem.Acquire(ctx, need); err != nil {
			return nil, fmt.Errorf("wait for memory to replay %s: %w", slug, err)
		}
	}
	return func() { b.sem.Release(need) }, nil
}
