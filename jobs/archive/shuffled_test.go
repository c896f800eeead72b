package archive_test

import (
	"compress/gzip"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// writeLines writes the events' frames one a line in the order given (no
// sorting, unlike writeJSONL).
func writeLines(t *testing.T, path string, evs []fxEvent) {
	t.Helper()
	var b []byte
	for _, e := range evs {
		b = append(append(b, e.frame()...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLinesOutOfOrder imports ws-jsonl files whose lines are not in time
// order: every line shuffled (a capture sorted by something else), and
// a capture's later half written before its earlier half (two captures
// concatenated). Each is imported as the same events in order are: the
// same snapshots, trades and gaps, where a file out of order imported
// hardly a snapshot (its events taken as a clock going back).
func TestLinesOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := slices.Clone(fx.events)
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return int(a.received - b.received) })
	dir := t.TempDir()
	type result struct {
		sum    archive.Summary
		snaps  []store.Snapshot
		trades []store.MarketTrade
		gaps   []store.Gap
	}
	imp := func(name string, lines []fxEvent) result {
		t.Helper()
		path := filepath.Join(dir, name)
		writeLines(t, path, lines)
		if strings.HasSuffix(name, ".gz") {
			gzipFile(t, path)
		}
		st := memory.New()
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		trades, _, err := st.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		gaps, err := st.ListGaps(ctx, fx.known.Slug)
		if err != nil {
			t.Fatal(err)
		}
		return result{sum, snapshotsOf(t, st, fx.known.Slug), trades, gaps}
	}
	want := imp("in-order.jsonl", evs)
	if len(want.snaps) < 500 || len(want.trades) == 0 {
		t.Fatalf("in order: %d snapshots, %d trades", len(want.snaps), len(want.trades))
	}
	shuffled := slices.Clone(evs)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	half := len(evs) / 2
	for name, lines := range map[string][]fxEvent{
		"shuffled.jsonl.gz":  shuffled,
		"shuffled.jsonl":     shuffled,
		"concatenated.jsonl": append(slices.Clone(evs[half:]), evs[:half]...),
	} {
		got := imp(name, lines)
		if len(got.snaps) != len(want.snaps) {
			t.Errorf("%s: %d snapshots, in order %d", name, len(got.snaps), len(want.snaps))
			continue
		}
		for i := range got.snaps {
			if !got.snaps[i].Time.Equal(want.snaps[i].Time) || !sameSnapshot(got.snaps[i], want.snaps[i]) {
				t.Errorf("%s: snapshot %d: %s %s, in order %s %s", name, i, got.snaps[i].Time, fmtSnap(got.snaps[i]), want.snaps[i].Time, fmtSnap(want.snaps[i]))
				break
			}
		}
		if !slices.Equal(got.trades, want.trades) {
			t.Errorf("%s: %d trades, in order %d", name, len(got.trades), len(want.trades))
		}
		if !slices.Equal(got.gaps, want.gaps) {
			t.Errorf("%s: gaps %v, in order %v", name, got.gaps, want.gaps)
		}
		if got.sum.Events != want.sum.Events || got.sum.Skipped != want.sum.Skipped || got.sum.NoPrice != want.sum.NoPrice ||
			!got.sum.Import.From.Equal(want.sum.Import.From) || !got.sum.Import.To.Equal(want.sum.Import.To) {
			t.Errorf("%s: summary %+v, in order %+v", name, got.sum, want.sum)
		}
	}
}

// TestOldBookInOrder imports a file in order into which a book arrives
// with a timestamp two hours old, as a resubscription's initial dump
// sends a quiet book (its timestamp is its last change): the file is not
// out of order, the book replaces its side where it arrived, as the
// collector applies it, and is not moved back to its own time.
func TestOldBookInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	at := len(evs) / 4
	arrived := evs[at].ts
	old := fxEvent{ts: arrived - 2*time.Hour.Milliseconds(), received: arrived, market: fx.known.ConditionID, kind: "book",
		asset: fx.known.ClobTokenUp, bids: []level{{"0.01", "5"}}, asks: []level{{"0.02", "1234"}}}
	lines := append(slices.Clone(evs[:at]), append([]fxEvent{old}, evs[at:]...)...)
	path := filepath.Join(t.TempDir(), "resubscribed.jsonl")
	writeLines(t, path, lines)
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
		t.Fatal(err)
	}
	after := 0
	for _, s := range snapshotsOf(t, st, fx.known.Slug) {
		if s.PriceUp == 0.02 {
			if s.Time.Before(time.UnixMilli(evs[at-1].ts)) { // the books' clock when it arrived
				t.Fatalf("snapshot at %s priced by the book that arrived after the event at %s", s.Time, time.UnixMilli(evs[at-1].ts).UTC())
			}
			after++
		}
	}
	if after == 0 {
		t.Errorf("no snapshot after %s is priced by the book that arrived then", time.UnixMilli(arrived).UTC())
	}
}

// gzipFile compresses the file in place.
func gzipFile(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestShuffledResubscription imports, shuffled, a capture into which a
// resubscription's initial dump came: one frame, an array of the market's
// two books, one of them quiet for hours (a book's timestamp is its last
// change). The frame is placed by its latest event, as it came after it,
// and the import is the one of the capture in order, where it was placed
// by its earliest, hours before the stream: its fresh book's time then
// held the books' clock, and the minutes before it had no snapshot.
func TestShuffledResubscription(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	k := len(evs) / 4
	at := evs[k-1].ts + 1
	up := fxEvent{ts: at, market: fx.known.ConditionID, kind: "book", asset: fx.known.ClobTokenUp,
		bids: []level{{"0.30", "7"}}, asks: []level{{"0.70", "9"}}}
	down := fxEvent{ts: at - 4*time.Hour.Milliseconds(), market: fx.known.ConditionID, kind: "book", asset: fx.known.ClobTokenDown,
		bids: []level{{"0.29", "7"}}, asks: []level{{"0.71", "9"}}}
	frames := make([]string, 0, len(evs)+1)
	for i, e := range evs {
		if i == k {
			frames = append(frames, "["+string(up.frame())+","+string(down.frame())+"]")
		}
		frames = append(frames, string(e.frame()))
	}
	dir := t.TempDir()
	imp := func(name string, frames []string) []store.Snapshot {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(frames, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return snapshotsOf(t, st, fx.known.Slug)
	}
	want := imp("in-order.jsonl", frames)
	shuffled := slices.Clone(frames)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	got := imp("shuffled.jsonl", shuffled)
	if len(want) < 500 || len(got) != len(want) {
		t.Fatalf("shuffled: %d snapshots, in order %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || !sameSnapshot(got[i], want[i]) {
			t.Fatalf("snapshot %d: shuffled %s %s, in order %s %s", i, got[i].Time, fmtSnap(got[i]), want[i].Time, fmtSnap(want[i]))
		}
	}
}
