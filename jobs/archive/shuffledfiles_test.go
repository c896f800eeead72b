package archive_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// beginCounter is a store that counts the imports begun on it.
type beginCounter struct {
	*memory.Store
	mu    sync.Mutex
	begun int
}

func (b *beginCounter) BeginImport(ctx context.Context) (store.ImportTx, error) {
	b.mu.Lock()
	b.begun++
	b.mu.Unlock()
	return b.Store.BeginImport(ctx)
}

// TestManyFilesOutOfOrder imports an archive of eight ws-jsonl files,
// each of them out of time order (every dump's lines shuffled). The
// import begins again some log₂ n times, having checked the order of the
// files after the one out of order, as many as it had read before it,
// where it began again at each such file, reading and folding all the
// files before it again each time (an archive of n such files cost some
// n²/2 files' imports, and each attempt drew a progress that went back to
// nothing and ended). The result is the import of the same files in
// order, and the progress ends once, with every byte it counted.
func TestManyFilesOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := slices.Clone(fx.events)
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	const parts = 8
	dir := t.TempDir()
	var inOrder, shuffled []string
	rng := rand.New(rand.NewPCG(7, 8))
	for p := range parts {
		part := evs[p*len(evs)/parts : (p+1)*len(evs)/parts]
		name := filepath.Join(dir, fmt.Sprintf("in-order-%d.jsonl", p))
		writeLines(t, name, part)
		inOrder = append(inOrder, name)
		mixed := slices.Clone(part)
		rng.Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
		name = filepath.Join(dir, fmt.Sprintf("shuffled-%d.jsonl", p))
		writeLines(t, name, mixed)
		shuffled = append(shuffled, name)
	}
	imp := func(files []string) (archive.Summary, *beginCounter, []archive.Progress) {
		t.Helper()
		st := &beginCounter{Store: memory.New()}
		var mu sync.Mutex
		var finals []archive.Progress
		sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{fx.known}, Prices: fx.klines(t),
			Progress: func(p archive.Progress) {
				if p.Final {
					mu.Lock()
					finals = append(finals, p)
					mu.Unlock()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return sum, st, finals
	}
	wantSum, wantSt, _ := imp(inOrder)
	gotSum, gotSt, finals := imp(shuffled)
	// Out of order at the first file (the second then checked), the
	// third (the fourth to sixth checked), the seventh (the eighth
	// checked), then through.
	if gotSt.begun > 4 {
		t.Errorf("an import of %d files out of order began %d times, want at most 4", parts, gotSt.begun)
	}
	if len(finals) != 1 {
		t.Errorf("the progress ended %d times, want once: %+v", len(finals), finals)
	} else if f := finals[0]; f.Done != f.Total || f.Events != gotSum.Events {
		t.Errorf("the final progress %+v: want Done = Total and the summary's %d events", f, gotSum.Events)
	}
	want, got := snapshotsOf(t, wantSt.Store, fx.known.Slug), snapshotsOf(t, gotSt.Store, fx.known.Slug)
	if len(want) < 500 || len(got) != len(want) {
		t.Fatalf("files shuffled: %d snapshots, in order %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || !sameSnapshot(got[i], want[i]) {
			t.Fatalf("snapshot %d: shuffled %s %s, in order %s %s", i, got[i].Time, fmtSnap(got[i]), want[i].Time, fmtSnap(want[i]))
		}
	}
	if gotSum.Events != wantSum.Events || gotSum.Import.Trades != wantSum.Import.Trades || gotSum.Import.Snapshots != wantSum.Import.Snapshots {
		t.Errorf("summary %+v, in order %+v", gotSum, wantSum)
	}
}

// timeHandler notes when the import logged its first record.
type timeHandler struct {
	mu    sync.Mutex
	first time.Time
}

func (h *timeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *timeHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	return nil
}
func (h *timeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *timeHandler) WithGroup(string) slog.Handler      { return h }

// TestBegunAgainProgressElapsed imports a file out of time order, which
// the import reads again from its start, sorted: the progress it reports
// then measures the time of that reading, so that the rate and the time
// left a progress bar works out from it are the reading's, where it
// counted the attempt before it too and over-estimated the time left of
// the bar begun again at 0%.
func TestBegunAgainProgressElapsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := slices.Clone(fx.events)
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	half := len(evs) / 2
	path := filepath.Join(t.TempDir(), "concatenated.jsonl")
	writeLines(t, path, append(slices.Clone(evs[half:]), evs[:half]...))
	h := &timeHandler{}
	var mu sync.Mutex
	var final archive.Progress
	_, err := archive.Import(ctx, memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t),
		Logger: slog.New(h), Progress: func(p archive.Progress) {
			if p.Final {
				mu.Lock()
				final = p
				mu.Unlock()
			}
		}})
	ended := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if h.first.IsZero() {
		t.Fatal("the import did not say it read the file again")
	}
	// The reading begun again began after the import said so.
	if most := ended.Sub(h.first); final.Elapsed > most {
		t.Errorf("the final progress counts %v, more than the %v since the import began again", final.Elapsed, most)
	}
}
