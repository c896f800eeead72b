package archive_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestCapturesOfEachTokenConcatenated imports a dump made of captures of
// one token each (a connection per token), concatenated: every token's
// frames are in time order, but a market's Down frames come after its Up
// frames of the whole stretch, minutes later in the file than their
// time. That is captures concatenated in the wrong order, imported as its
// events in time order, where the file's order was checked token by token
// and found right: the Down events were folded into the books at the time
// of the last Up event, and the market got no snapshot.
func TestCapturesOfEachTokenConcatenated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	markets := []store.Market{fx.known, fx.unknown}
	want := inOrderImport(t, fx, dir, markets)
	// A capture a token, the Up tokens' first.
	rank := map[string]int{fx.known.ClobTokenUp: 0, fx.unknown.ClobTokenUp: 1, fx.known.ClobTokenDown: 2, fx.unknown.ClobTokenDown: 3}
	evs := slices.Clone(fx.events)
	slices.SortStableFunc(evs, func(a, b fxEvent) int {
		return cmp.Or(cmp.Compare(rank[a.asset], rank[b.asset]), cmp.Compare(a.received, b.received))
	})
	var data []byte
	for _, e := range evs {
		data = append(append(data, e.frame()...), '\n')
	}
	concatenated := filepath.Join(dir, "tokens.jsonl")
	if err := os.WriteFile(concatenated, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got := memory.New()
	if _, err := archive.Import(ctx, got, archive.Options{Format: archive.WSJSONL, Files: []string{concatenated}, Markets: markets, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	for _, m := range markets {
		sameSnapshots(t, m.Slug, "in order", want, "concatenated", got)
		ga, _ := want.ListGaps(ctx, m.Slug)
		gb, _ := got.ListGaps(ctx, m.Slug)
		if !sameGaps(ga, gb) {
			t.Errorf("%s: gaps %v, in order %v", m.Slug, gb, ga)
		}
	}
}

// inOrderImport imports fx's events for markets from a ws-jsonl dump in
// time order, written in dir: the import the same events in another
// order or form must equal.
func inOrderImport(t *testing.T, fx fxSet, dir string, markets []store.Market) *memory.Store {
	t.Helper()
	name := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, name, fx.events)
	st := memory.New()
	if _, err := archive.Import(context.Background(), st, archive.Options{Format: archive.WSJSONL, Files: []string{name}, Markets: markets, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	return st
}

// sameSnapshots fails t unless the two imports, named for the message,
// hold the same snapshots of the market.
func sameSnapshots(t *testing.T, slug, wantName string, want *memory.Store, gotName string, got *memory.Store) {
	t.Helper()
	a, b := snapshotsOf(t, want, slug), snapshotsOf(t, got, slug)
	if len(a) != len(b) {
		t.Fatalf("%s: %s %d snapshots, %s %d", slug, wantName, len(a), gotName, len(b))
	}
	for i := range a {
		if !a[i].Time.Equal(b[i].Time) || !sameSnapshot(a[i], b[i]) {
			t.Fatalf("%s: snapshot %d: %s %s %s, %s %s %s", slug, i, wantName, a[i].Time, fmtSnap(a[i]), gotName, b[i].Time, fmtSnap(b[i]))
		}
	}
}
