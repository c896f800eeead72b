package archive_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestLaggingConnection imports a capture of four markets recorded on two
// websocket connections, one of them (market 2's) 4 s behind: each
// token's frames are in order, and the file is imported as the same
// capture without the lag, not taken as out of order and read again
// sorted (which places market 1's resubscription book, two hours old, at
// its own time and changes the import).
func TestLaggingConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var markets []store.Market
	var evs []fxEvent
	for n := 1; n <= 4; n++ {
		m := fxMarket(store.BTC, fxHour.Add(time.Duration(9+n)*time.Minute), n)
		markets = append(markets, m)
		evs = append(evs, fxStream(m, m.StartTime.Add(-20*time.Second), m.EndTime.Add(10*time.Second), uint64(n), 0)...)
	}
	// Market 1's resubscription: a book quiet for two hours, arriving mid-stream.
	m1 := markets[0]
	var mid fxEvent
	for _, e := range evs {
		if e.market == m1.ConditionID && e.ts >= m1.StartTime.Add(2*time.Minute).UnixMilli() {
			mid = e
			break
		}
	}
	evs = append(evs, fxEvent{ts: mid.received - 2*time.Hour.Milliseconds(), received: mid.received + 1, market: m1.ConditionID, kind: "book",
		asset: m1.ClobTokenUp, bids: []level{{"0.01", "5"}}, asks: []level{{"0.02", "1234"}}})
	lagged := slices.Clone(evs)
	for i := range lagged {
		if lagged[i].market == markets[1].ConditionID {
			lagged[i].received += 4000
		}
	}
	cp := archive.NewCoinPrices()
	writeKlines(t, cp, store.BTC, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
	dir := t.TempDir()
	imp := func(name string, evs []fxEvent) (*memory.Store, *logRecorder) {
		t.Helper()
		path := filepath.Join(dir, name)
		writeJSONL(t, path, evs)
		st, logs := memory.New(), &logRecorder{}
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: markets, Prices: cp,
			Logger: slog.New(logs)}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return st, logs
	}
	wantSt, wantLogs := imp("together.jsonl", evs)
	gotSt, gotLogs := imp("lagged.jsonl", lagged)
	if wantLogs.readSorted() {
		t.Fatalf("the capture without lag was read again sorted: %q", wantLogs.msgs)
	}
	if gotLogs.readSorted() {
		t.Errorf("the capture with one connection 4 s behind was read again sorted: %q", gotLogs.msgs)
	}
	for _, m := range markets {
		want, got := snapshotsOf(t, wantSt, m.Slug), snapshotsOf(t, gotSt, m.Slug)
		if len(want) < 300 || len(got) != len(want) {
			t.Fatalf("%s: %d snapshots with the lag, %d without", m.Slug, len(got), len(want))
		}
		for i := range got {
			if !got[i].Time.Equal(want[i].Time) || !sameSnapshot(got[i], want[i]) {
				t.Fatalf("%s snapshot %d: with the lag %s %s, without %s %s", m.Slug, i, got[i].Time, fmtSnap(got[i]), want[i].Time, fmtSnap(want[i]))
			}
		}
	}
}
