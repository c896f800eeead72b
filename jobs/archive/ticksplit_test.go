package archive_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestTickChangesAcrossImports imports a market's stream in two imports
// (hour files imported as they come, a 4hr or 24hr market spanning them),
// on each store: the market the first import created learns the second's
// tick changes, as one import of both files would have it.
func TestTickChangesAcrossImports(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		tickChangesAcrossImports(t, func() ticksStore { return memory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		tickChangesAcrossImports(t, func() ticksStore { return pgtest.NewStore(t) })
	})
}

// ticksStore is a store an import writes and a market is read back from.
type ticksStore interface {
	archive.Store
	GetMarket(ctx context.Context, slug string) (store.Market, error)
}

func tickChangesAcrossImports(t *testing.T, newStore func() ticksStore) {
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeJSONL(t, first, evs[:len(evs)/2])
	writeJSONL(t, second, evs[len(evs)/2:])

	ticks := func(st ticksStore) []store.TickSizeChange {
		t.Helper()
		m, err := st.GetMarket(ctx, fx.known.Slug)
		if err != nil {
			t.Fatal(err)
		}
		return m.TickSizeChanges
	}
	one := newStore()
	if _, err := archive.Import(ctx, one, archive.Options{Format: archive.WSJSONL, Files: []string{first, second}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	two := newStore()
	for _, f := range []string{first, second} {
		if _, err := archive.Import(ctx, two, archive.Options{Format: archive.WSJSONL, Files: []string{f}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatal(err)
		}
	}
	want, got := ticks(one), ticks(two)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("two imports kept %d tick changes, one import of both files %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].TickSize != want[i].TickSize {
			t.Fatalf("tick change %d: two imports %v, one import %v", i, got[i], want[i])
		}
	}
}
