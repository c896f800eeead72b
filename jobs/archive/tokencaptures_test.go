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
	inOrder := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, inOrder, fx.events)
	markets := []store.Market{fx.known, fx.unknown}
	want := memory.New()
	if _, err := archive.Import(ctx, want, archive.Options{Format: archive.WSJSONL, Files: []string{inOrder}, Markets: markets, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
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
		a, b := snapshotsOf(t, want, m.Slug), snapshotsOf(t, got, m.Slug)
		if len(a) != len(b) {
			t.Fatalf("%s: %d snapshots from the captures concatenated, %d from the dump in time order", m.Slug, len(b), len(a))
		}
		for i := range a {
			if !a[i].Time.Equal(b[i].Time) || !sameSnapshot(a[i], b[i]) {
				t.Fatalf("%s: snapshot %d: in order %s %s, concatenated %s %s", m.Slug, i, a[i].Time, fmtSnap(a[i]), b[i].Time, fmtSnap(b[i]))
			}
		}
		ga, _ := want.ListGaps(ctx, m.Slug)
		gb, _ := got.ListGaps(ctx, m.Slug)
		if !sameGaps(ga, gb) {
			t.Errorf("%s: gaps %v, in order %v", m.Slug, gb, ga)
		}
	}
}
