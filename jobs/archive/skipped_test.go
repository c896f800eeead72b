package archive_test

import (
	"context"
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
	var evs []fxEvent
	for _, e := range fx.events {
		if e.market == fx.unknown.ConditionID {
			evs = append(evs, e)
		}
	}
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
