package archive_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestAllSkippedImportsNothing: a file whose every event is of a market
// neither stored nor in the markets file (the wrong markets file, the
// wrong hour) writes nothing, and is an error that leaves no import
// recorded, as an empty file is: otherwise the same file, imported again
// once its markets are known, answered "already imported" and its events
// were never imported.
func TestAllSkippedImportsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.unknown)
	name := filepath.Join(t.TempDir(), "eth.jsonl")
	writeJSONL(t, name, evs)
	st := memory.New()
	sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{name}, Markets: []store.Market{fx.known}})
	if err == nil || !strings.Contains(err.Error(), "skipped") {
		t.Errorf("every event skipped: %v (summary %+v), want an error saying so", err, sum)
	}
	if imps, _ := st.ListImports(ctx); len(imps) != 0 {
		t.Fatalf("%d imports recorded for a file none of whose events was imported", len(imps))
	}
	again, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{name}, Markets: []store.Market{fx.unknown}})
	if err != nil || !again.Fresh || again.Import.Trades == 0 {
		t.Fatalf("the file with its market known: %+v %v, want a fresh import with its trades", again, err)
	}
}

// TestSkippedMarketsImportedLater: an import that skipped a market's
// events (not in the markets file) is done again, once the market is
// known, for that market's events, where its key answered "already
// imported" and they could never be imported; the same import that would
// skip the same markets changes nothing, and neither does one after the
// whole file is in.
func TestSkippedMarketsImportedLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	name := filepath.Join(t.TempDir(), "both.jsonl")
	writeJSONL(t, name, fx.events)
	st := memory.New()
	run := func(markets ...store.Market) archive.Summary {
		t.Helper()
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{name}, Markets: markets})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	count := func(m store.Market) int {
		t.Helper()
		trades, _, err := st.ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Limit: 100_000})
		if errors.Is(err, store.ErrNotFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(trades)
	}
	first := run(fx.known)
	if !first.Fresh || first.Import.Skipped == 0 || count(fx.known) == 0 || count(fx.unknown) != 0 {
		t.Fatalf("first import: %+v; %d and %d trades", first.Import, count(fx.known), count(fx.unknown))
	}
	known := count(fx.known)
	if again := run(fx.known); again.Fresh || again.Import.ID != first.Import.ID {
		t.Errorf("the same import skipping the same market: %+v, want import %d again", again.Import, first.Import.ID)
	}
	later := run(fx.known, fx.unknown)
	if !later.Fresh || later.Import.Skipped != 0 || count(fx.unknown) == 0 || count(fx.known) != known {
		t.Fatalf("with the skipped market known: %+v; %d (was %d) and %d trades", later.Import, count(fx.known), known, count(fx.unknown))
	}
	if last := run(fx.known, fx.unknown); last.Fresh || last.Import.ID != later.Import.ID {
		t.Errorf("the whole file again: %+v, want import %d", last.Import, later.Import.ID)
	}
}

// TestNoMarketEventsImportsNothing: a file of lines that are no market
// channel's events (an updown export given to import events) writes
// nothing, and is an error saying so that leaves no import recorded:
// recorded, it answered "already imported" the next time.
func TestNoMarketEventsImportsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := filepath.Join(t.TempDir(), "export.jsonl")
	lines := `{"kind":"market","slug":"btc-updown-5m-1777467600","market_id":"1"}` + "\n" +
		`{"kind":"snapshot","slug":"btc-updown-5m-1777467600","time":"2026-04-29T13:00:00Z","price_up":0.5}` + "\n"
	if err := os.WriteFile(name, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	for range 2 {
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{name}})
		if err == nil || !strings.Contains(err.Error(), "no market channel's events") {
			t.Errorf("an export given as events: %v (summary %+v), want an error saying so", err, sum)
		}
	}
	if imps, _ := st.ListImports(ctx); len(imps) != 0 {
		t.Fatalf("%d imports recorded for a file of no events", len(imps))
	}
}
