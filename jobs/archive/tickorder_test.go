package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestBookTickOfALaterCaptureImportedFirst imports two captures of a
// market in two imports, on each store: a later one first (it begins
// after the tick went to 0.001: its first book makes that a change from
// the book's time), then an earlier one that heard the change itself.
// The market's tick history is that of one import of both, the change
// and the change back, where the later capture's book stayed beside the
// change as a second "change" to the tick already in force.
func TestBookTickOfALaterCaptureImportedFirst(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		bookTickOfALaterCaptureImportedFirst(t, func() ticksStore { return memory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		bookTickOfALaterCaptureImportedFirst(t, func() ticksStore { return pgtest.NewStore(t) })
	})
}

func bookTickOfALaterCaptureImportedFirst(t *testing.T, newStore func() ticksStore) {
	ctx := context.Background()
	m := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	m.TickSize = nil
	wentFine, wentBack := m.StartTime.Add(time.Minute), m.StartTime.Add(3*time.Minute)
	// dump writes the market's books every second from first to past its
	// end, quoted in the tick of their time, and the tick changes it
	// hears (from first on).
	dump := func(path string, first time.Time) {
		var buf bytes.Buffer
		line := func(v map[string]any) {
			frame, _ := json.Marshal(v)
			buf.Write(append(frame, '\n'))
		}
		change := func(at time.Time, old, tick string) {
			for _, tok := range []string{m.ClobTokenUp, m.ClobTokenDown} {
				line(map[string]any{"event_type": "tick_size_change", "market": m.ConditionID, "asset_id": tok,
					"timestamp": strconv.FormatInt(at.UnixMilli(), 10), "old_tick_size": old, "new_tick_size": tick})
			}
		}
		for at := first; at.Before(m.EndTime.Add(10 * time.Second)); at = at.Add(time.Second) {
			tick, bid, ask := "0.01", "0.49", "0.51"
			if !at.Before(wentFine) && at.Before(wentBack) {
				tick, bid, ask = "0.001", "0.497", "0.503"
			}
			if at.Equal(wentFine) {
				change(at, "0.01", "0.001")
			}
			if at.Equal(wentBack) {
				change(at, "0.001", "0.01")
			}
			for i, tok := range []string{m.ClobTokenUp, m.ClobTokenDown} {
				line(map[string]any{"event_type": "book", "market": m.ConditionID, "asset_id": tok,
					"timestamp": strconv.FormatInt(at.UnixMilli()+int64(i), 10),
					"bids":      []map[string]string{{"price": bid, "size": "10"}}, "asks": []map[string]string{{"price": ask, "size": "10"}},
					"tick_size": tick, "last_trade_price": ""})
			}
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	early, late := filepath.Join(dir, "early.jsonl"), filepath.Join(dir, "late.jsonl")
	dump(early, m.StartTime)
	dump(late, m.StartTime.Add(2*time.Minute))
	prices := archive.NewCoinPrices()
	writeKlines(t, prices, store.BTC, fxHour, fxHour.Add(time.Hour), func(time.Time) float64 { return 80000 })
	want := []store.TickSizeChange{{Time: wentFine, TickSize: 0.001}, {Time: wentBack, TickSize: 0.01}}
	st := newStore()
	for _, f := range []string{late, early} {
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{f}, Markets: []store.Market{m}, Prices: prices}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GetMarket(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.TickSizeChanges, want, func(a, b store.TickSizeChange) bool { return a.Time.Equal(b.Time) && a.TickSize == b.TickSize }) ||
		got.TickSize == nil || *got.TickSize != 0.01 {
		t.Errorf("tick %v, changes %v; want 0.01 after the changes %v", fmtTick(got.TickSize), got.TickSizeChanges, want)
	}
}
