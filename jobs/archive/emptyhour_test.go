package archive_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestEmptyPMXTFileBesideOthers imports a pmxt-v2 hour with no rows (a
// Parquet file with its columns and no events) beside a good hour: the
// good hour is imported, and the empty file names no hour, where it was
// taken as the hour of year 1 and every hour from then to the good one
// (seventeen million) was listed as missing, which took minutes and
// gigabytes before the import failed or was killed.
func TestEmptyPMXTFileBesideOthers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fx := newFxSet()
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "13.parquet"), filepath.Join(dir, "12.parquet")
	writePMXT(t, good, pmxtRows(fx.eventsOf(fx.known)))
	writePMXT(t, empty, []pmxtRow{})
	st := memory.New()
	done := make(chan struct{})
	var sum archive.Summary
	var err error
	go func() {
		defer close(done)
		sum, err = archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{empty, good}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the import of an empty hour beside a good one did not end in 30 s")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.MissingHours) != 0 {
		t.Errorf("%d missing hours (the first %v), want none", len(sum.MissingHours), sum.MissingHours[0])
	}
	if !sum.Import.From.Equal(fxHour) || !sum.Import.To.Equal(fxHour.Add(time.Hour)) {
		t.Errorf("the import covers %s to %s, want the good hour", sum.Import.From, sum.Import.To)
	}
	if n := len(snapshotsOf(t, st, fx.known.Slug)); n < 500 {
		t.Errorf("%d snapshots", n)
	}
}
