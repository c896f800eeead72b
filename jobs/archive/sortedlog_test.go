package archive_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// logRecorder keeps the messages logged through it.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// readSorted tells whether a file was read again in time order.
func (r *logRecorder) readSorted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.msgs, func(m string) bool { return strings.Contains(m, "read again in the order of their times") })
}

// TestInOrderNotSorted imports a file in order (one market's capture, and
// one with a resubscription's old book): it is read once, in the file's
// order, and not taken as out of order and read again sorted, which an
// identical import could hide.
func TestInOrderNotSorted(t *testing.T) {
	t.Parallel()
	fx := newFxSet()
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	writeJSONL(t, path, fx.events)
	logs := &logRecorder{}
	if _, err := archive.Import(context.Background(), memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{path},
		Markets: []store.Market{fx.known}, Prices: fx.klines(t), Logger: slog.New(logs)}); err != nil {
		t.Fatal(err)
	}
	if logs.readSorted() {
		t.Errorf("a file in order was read again sorted: %q", logs.msgs)
	}
	// The control: a file out of order is read again sorted, and says so.
	shuffled := filepath.Join(t.TempDir(), "shuffled.jsonl")
	evs := slices.Clone(fx.events)
	slices.Reverse(evs)
	writeLines(t, shuffled, evs)
	logs = &logRecorder{}
	if _, err := archive.Import(context.Background(), memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{shuffled},
		Markets: []store.Market{fx.known}, Prices: fx.klines(t), Logger: slog.New(logs)}); err != nil {
		t.Fatal(err)
	}
	if !logs.readSorted() {
		t.Errorf("a file out of order was not read again sorted: %q", logs.msgs)
	}
}
