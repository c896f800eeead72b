package archive_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestInterruptedImport ends imports while they read (as Ctrl-C ends
// `updown import events`), a file in order and one out of order (whose
// sorted reading first reads the file through): each returns the
// context's error and writes nothing, where the reader's error could be
// dropped as the context ended, and the import went on with the events
// read so far: "no events in FILE: nothing imported" when none had been
// folded yet.
func TestInterruptedImport(t *testing.T) {
	t.Parallel()
	var markets []store.Market
	var evs []fxEvent
	coins := []store.Coin{store.BTC, store.ETH, store.SOL}
	for n := 1; n <= 12; n++ {
		// Twelve markets, each its own (a slug is its coin and start),
		// three at a time.
		m := fxMarket(coins[n%3], fxHour.Add(time.Duration(2+n/3)*5*time.Minute), n)
		markets = append(markets, m)
		evs = append(evs, fxStream(m, m.StartTime.Add(-20*time.Second), m.EndTime.Add(10*time.Second), uint64(n), 0)...)
	}
	dir := t.TempDir()
	path, shuffled := filepath.Join(dir, "dump.jsonl"), filepath.Join(dir, "shuffled.jsonl")
	writeJSONL(t, path, evs)
	mixed := slices.Clone(evs)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
	writeLines(t, shuffled, mixed)
	cp := archive.NewCoinPrices()
	for _, c := range coins {
		writeKlines(t, cp, c, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
	}
	// Uninterrupted, the import succeeds: the imports ended are ended
	// while they read, not by an error of the fixture.
	whole, err := archive.Import(context.Background(), memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: markets, Prices: cp})
	if err != nil || whole.Import.Markets != int64(len(markets)) {
		t.Fatalf("the import uninterrupted: %d markets of %d, %v", whole.Import.Markets, len(markets), err)
	}
	for i := range 8 {
		ctx, cancel := context.WithCancel(context.Background())
		var once sync.Once
		st := memory.New()
		file := path
		if i%2 == 1 {
			file = shuffled
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: markets, Prices: cp,
			ProgressEvery: time.Microsecond, Progress: func(p archive.Progress) {
				switch {
				case file == path && p.Events > 3000:
					once.Do(cancel)
				case file == shuffled && p.Total == 2*fi.Size() && p.Done > 0:
					// Begun again, the file read sorted (twice): its
					// first pass, as a rule, which folds nothing.
					once.Do(cancel)
				}
			}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("import %d of %s, ended while it read: %v, want the context's error", i, filepath.Base(file), err)
		}
		if imps, _ := st.ListImports(context.Background()); len(imps) != 0 {
			t.Errorf("import %d, ended while it read, was recorded: %+v", i, imps)
		}
		if ms, n, _ := st.ListMarkets(context.Background(), store.MarketFilter{}); n != 0 {
			t.Errorf("import %d, ended while it read, stored %d markets: %v", i, n, ms[0].Slug)
		}
	}
	if len(evs) < 20000 {
		t.Fatalf("the fixture has %d events: too few to end the import while it reads", len(evs))
	}
}
