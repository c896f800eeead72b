package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestExportSplitUnfinishedIsTold: a split export that stops after some
// of its files are complete (here: its markets file, written last, cannot
// be put in place) says the export is unfinished, how many files the
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
	// A directory where the markets file goes: renaming it into place fails.
	if err := os.MkdirAll(filepath.Join(dir, "markets.jsonl", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = exportSplit(ctx, st, dir, transfer.SplitMarket, transfer.ExportOptions{Format: transfer.JSONL, Books: true}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("the export succeeded without its markets file")
	}
	for _, want := range []string{"the export is unfinished", "holds the 3 files completed", "not markets.jsonl", "run the export again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
