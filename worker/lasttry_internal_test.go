package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// heldTape is a store whose tape of one market is never read: the read
// says it began (reached) and waits until its caller gives up.
type heldTape struct {
	store.Store
	slug    string
	reached chan<- struct{}
}

func (s heldTape) ReadTape(ctx context.Context, slug, outcome string) (*store.Tape, error) {
	if slug == s.slug {
		s.reached <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.ReadTape(ctx, slug, outcome)
}

// TestLastTryCutOffIsNoMarketFailure: a shard's last attempt cut off
// mid-market (its deadline, or a shutdown) ends with the cut, the markets
// done before it kept, rather than fail the market it was replaying (and
// every one after it) as exhausted: INTERNAL_ERROR "failed on every
// attempt" where the replay ran out of time (a batch reports JOB_TIMEOUT).
func TestLastTryCutOffIsNoMarketFailure(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	group := shardOf(t, mem, 3)
	c, err := NewCache(-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{}, 1)
	s := &Server{store: heldTape{Store: mem, slug: group[1].MarketSlug, reached: reached}, cache: c, budget: newMemoryBudget(0),
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	b := &backtester{s: s}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { <-reached; cancel() }()
	out, finished, err := b.runMarkets(ctx, group, true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the last try cut off: error %v, want the cut's", err)
	}
	if finished != 1 || out[0].Failure != nil || len(out[0].Result) == 0 {
		t.Errorf("the last try cut off at the second market: %d finished, the first's outcome %+v; want 1, a result", finished, out[0])
	}
}
