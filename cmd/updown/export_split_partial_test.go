package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestExportSplitUnfinishedIsTold: a split export that stops after some
// of its files are complete (here: the store is lost half way) says the export is unfinished, how many files the
// directory holds and that the markets file is not among them, where it
// gave only the error and the directory looked like a whole export.
func TestExportSplitUnfinishedIsTold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	g, err := gen.New(gen.DefaultConfig(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-3 * time.Hour).Truncate(5 * time.Minute)
	for i := range 3 {
		if _, _, err := g.WriteMarket(ctx, st, store.BTC, store.M5, start.Add(time.Duration(i)*5*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	// The store is lost at the third market's snapshots, once the first
	// two markets' files are complete.
	src := &failingSource{Source: st, failAt: 3, seen: map[string]bool{}}
	err = exportSplit(ctx, src, dir, transfer.SplitMarket, transfer.ExportOptions{Format: transfer.JSONL, Books: true}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("the export succeeded without its markets file")
	}
	for _, want := range []string{"the export is unfinished", "holds the 2 files completed", "not markets.jsonl", "run the export again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// failingSource fails reading the snapshots of the failAt-th market read.
type failingSource struct {
	transfer.Source
	failAt int
	seen   map[string]bool
}

func (f *failingSource) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	f.seen[slug] = true
	if len(f.seen) >= f.failAt {
		return nil, 0, errors.New("connection lost")
	}
	return f.Source.ListSnapshots(ctx, slug, q)
}
