package collect

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Reasons an instant of the snapshot grid is dropped for every live
// market at once, or for some of them (DropPartial)
// (Collector.DroppedInstants). An instant is counted under one reason at
// most: the sum of the first five is the instants lost for every market,
// DropPartial apart those lost for some while others were recorded.
const (
	// DropStalled: the collector woke up past the instant (a stalled
	// process, a loaded machine) and skipped it.
	DropStalled = "stalled"
	// DropBackoff: the snapshot requests were failing and this instant
	// fell in the pause before the next attempt.
	DropBackoff = "backoff"
	// DropBusy: MaxInFlight snapshot requests were still under way.
	DropBusy = "busy"
	// DropUpstream: the books or the coin prices failed; also the REST
	// books of the tokens the websocket could not vouch for, when that
	// left no market of the instant recorded.
	DropUpstream = "upstream"
	// DropLate: the books or prices did not come within MaxLag (a slow
	// upstream, or a loaded machine).
	DropLate = "late"
	// DropPartial: the REST books failed, or came later than MaxLag, for
	// the tokens the websocket could not vouch for, and only their markets
	// lost the instant: at least one other was recorded from the websocket
	// (else the instant is DropUpstream or DropLate, as any failed poll).
	// Counted once an instant, however many markets lost it.
	DropPartial = "partial"
)

// dropCounter counts the grid instants lost for every live market, or
// for some (DropPartial), by reason, and logs the stretches of skipped
// instants (the one reason no feed logs): once when a stretch is seen,
// with its extent and count.
type dropCounter struct {
	log *slog.Logger

	mu sync.Mutex
	n  map[string]int64
}

func newDropCounter(log *slog.Logger) *dropCounter {
	return &dropCounter{log: log, n: map[string]int64{}}
}

// add counts n instants dropped for reason.
func (d *dropCounter) add(reason string, n int64) {
	if n <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n[reason] += n
}

// skipped counts and logs the instants strictly between last and next,
// which the grid passed over while the collector was not running.
func (d *dropCounter) skipped(ctx context.Context, last, next time.Time, every time.Duration) {
	if last.IsZero() || every <= 0 {
		return
	}
	n := int64(next.Sub(last)/every) - 1
	if n <= 0 {
		return
	}
	d.add(DropStalled, n)
	d.log.WarnContext(ctx, "snapshot instants skipped: the collector fell behind its grid; nothing is recorded for them",
		"from", last.Add(every), "to", next.Add(-every), "instants", n)
}

// counts returns the dropped instants by reason.
func (d *dropCounter) counts() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int64, 6)
	for _, r := range []string{DropStalled, DropBackoff, DropBusy, DropUpstream, DropLate, DropPartial} {
		out[r] = d.n[r]
	}
	return out
}

// DroppedInstants counts, by reason (DropStalled, DropBackoff, DropBusy,
// DropUpstream, DropLate), the instants of the snapshot grid at which markets were
// live and none was recorded, and (DropPartial) those at which the REST
// books failed for some markets while at least one other was recorded;
// each instant under one reason at most.
func (c *Collector) DroppedInstants() map[string]int64 { return c.drops.counts() }

// dropReason classes a tick's failed requests: DropLate when the only
// trouble was no answer within MaxLag (rctx expired and no upstream
// answered with an error status), else DropUpstream.
func dropReason(rctx context.Context, errs ...error) string {
	if rctx.Err() == nil {
		return DropUpstream
	}
	for _, err := range errs {
		var ue *UpstreamError
		if errors.As(err, &ue) && ue.Status != 0 {
			return DropUpstream
		}
	}
	return DropLate
}
