package archive_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestTickChangeAtItsOwnTime imports a stream in which a tick_size_change
// arrives after an event stamped a few milliseconds later than it, as in
// a real capture of the market channel (tardis-node's: a tick change at
// …940 after a trade at …950): the change is kept at its own timestamp,
// as the collector records it (the event's time), where the import put
// it at the later event's, the books' clock, and a replay read the old
// tick in between.
func TestTickChangeAtItsOwnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := slices.Clone(fx.eventsOf(fx.known))
	k := slices.IndexFunc(evs, func(e fxEvent) bool { return e.kind == "tick_size_change" })
	if k < 0 || k+1 >= len(evs) {
		t.Fatal("the fixture has no tick change with an event after it")
	}
	tick := evs[k]
	next := evs[k+1]
	next.ts = tick.ts + 10 // stamped after the tick change, heard before it
	next.received = tick.received
	evs[k], evs[k+1] = next, tick
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	writeLines(t, path, evs)
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMarket(ctx, fx.known.Slug)
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(tick.ts).UTC()
	i := slices.IndexFunc(m.TickSizeChanges, func(c store.TickSizeChange) bool { return c.TickSize == mustFloat(t, tick.newTick) })
	if i < 0 {
		t.Fatalf("no change to %s among %v", tick.newTick, m.TickSizeChanges)
	}
	if got := m.TickSizeChanges[i].Time; !got.Equal(at) {
		t.Errorf("the change to %s is at %s, want its own time %s (the event after it: %s)", tick.newTick, got, at, time.UnixMilli(next.ts).UTC())
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
