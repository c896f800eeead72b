package collect

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// feed follows one stream of recordings (the snapshots of all markets, one
// market's book, one exchange book) through failures. It paces retries
// with backoff, so that a failing upstream is not asked again every tick,
// and it logs a gap twice, when it opens and when it closes, not once per
// lost instant: the log then reads as a list of gaps with their extent.
type feed struct {
	name    string
	log     *slog.Logger
	backoff Backoff // zero: no pacing, every instant is tried

	mu       sync.Mutex
	failures int       // consecutive
	from     time.Time // first instant lost in the open gap
	missed   int       // instants lost in the open gap
	retryAt  time.Time // no attempt before
	lastLog  time.Time
	cause    string // shape of the last error logged
}

// gapReminder is how often an open gap is logged again.
const gapReminder = 30 * time.Second

// ready reports whether the instant at may be attempted; an instant skipped
// while backing off counts as lost.
func (f *feed) ready(at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 && at.Before(f.retryAt) {
		f.missed++
		return false
	}
	return true
}

// fail records that the instant at was lost to err, observed at now.
func (f *feed) fail(ctx context.Context, at, now time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures++
	f.missed++
	if f.failures == 1 {
		f.from = at
	}
	if f.backoff != (Backoff{}) {
		f.retryAt = now.Add(max(f.backoff.Delay(f.failures), retryAfter(err)))
	}
	cause := shape(err)
	switch {
	case f.failures == 1:
		f.lastLog, f.cause = now, cause
		f.log.WarnContext(ctx, "gap opened: nothing is recorded until this recovers", "feed", f.name, "at", at, "err", err)
	case cause != f.cause:
		f.lastLog, f.cause = now, cause
		f.log.WarnContext(ctx, "gap still open, failing differently now", "feed", f.name, "since", f.from, "lost", f.missed, "err", err)
	case now.Sub(f.lastLog) >= gapReminder:
		f.lastLog = now
		f.log.WarnContext(ctx, "gap still open", "feed", f.name, "since", f.from, "lost", f.missed, "failures", f.failures, "err", err)
	}
}

// shape is an error's message without its digits (times, lags, ports,
// counts), so that the same failure repeated reads as one cause.
func shape(err error) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, err.Error())
}

// ok records that the instant at was recorded, closing an open gap that
// began at or before it. (Requests overlap, so an earlier instant may be
// recorded after a later one was lost: that does not close the gap.)
func (f *feed) ok(ctx context.Context, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures == 0 || at.Before(f.from) {
		return
	}
	f.log.InfoContext(ctx, "gap closed", "feed", f.name, "from", f.from, "to", at, "lost", f.missed, "failures", f.failures)
	f.failures, f.missed = 0, 0
}

// feeds is a set of feeds made on first use, for streams that come and go
// (one per live market).
type feeds struct {
	log     *slog.Logger
	backoff Backoff
	mu      sync.Mutex
	m       map[string]*feed
}

func (fs *feeds) get(name string) *feed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = make(map[string]*feed)
	}
	f, ok := fs.m[name]
	if !ok {
		f = &feed{name: name, log: fs.log, backoff: fs.backoff}
		fs.m[name] = f
	}
	return f
}

// drop forgets the feeds keep does not want.
func (fs *feeds) drop(keep func(name string) bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for name := range fs.m {
		if !keep(name) {
			delete(fs.m, name)
		}
	}
}
