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
)

// TestBookTickEntersTheTickHistory imports a ws-jsonl dump that begins
// after its market's tick went to 0.001: no tick_size_change is in it, but
// its book events say tick_size "0.001", as the market channel's books do
// (tardis-node's 2026 captures, Polymarket's ts-sdk). The imported market
// trades in 0.001 from its first book, as the collector records a market
// it finds at another tick than markets open at, where it kept no tick
// change and a replay placed orders on the opening 0.01 grid.
func TestBookTickEntersTheTickHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	m.TickSize = nil
	var buf bytes.Buffer
	first := m.StartTime.Add(time.Minute)
	for at := first; at.Before(m.EndTime); at = at.Add(time.Second) {
		for i, tok := range []string{m.ClobTokenUp, m.ClobTokenDown} {
			frame, _ := json.Marshal(map[string]any{"event_type": "book", "market": m.ConditionID, "asset_id": tok,
				"timestamp": strconv.FormatInt(at.UnixMilli()+int64(i), 10),
				"bids":      []map[string]string{{"price": "0.497", "size": "10"}}, "asks": []map[string]string{{"price": "0.503", "size": "10"}},
				"tick_size": "0.001", "last_trade_price": ""})
			buf.Write(append(frame, '\n'))
		}
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := os.WriteFile(dump, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	prices := archive.NewCoinPrices()
	writeKlines(t, prices, store.BTC, fxHour, fxHour.Add(time.Hour), func(time.Time) float64 { return 80000 })
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{dump}, Markets: []store.Market{m}, Prices: prices}); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetMarket(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.TickSizeChanges) != 1 || !got.TickSizeChanges[0].Time.Equal(first) || got.TickSizeChanges[0].TickSize != 0.001 ||
		got.TickSize == nil || *got.TickSize != 0.001 {
		t.Errorf("tick %v, changes %v; want 0.001 from the first book at %s", got.TickSize, got.TickSizeChanges, first)
	}
}

// TestBookTickInForceAtItsTime imports two captures of the same market's
// hours, as two machines' dumps are: one from a minute in, when the tick
// had gone to 0.001 (no tick_size_change in it: its books say so), and one
// begun later, both hearing the tick go back to 0.01 at three minutes. A
// book is a change only where its tick differs from the one in force at
// its own time: the market's tick history is the two changes, whichever
// dump is read first, where the second dump's books, older than the last
// change kept, were compared with the tick before any change and each
// added a change already in force.
func TestBookTickInForceAtItsTime(t *testing.T) {
	t.Parallel()
	m := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	m.TickSize = nil
	wentFine, wentBack := m.StartTime.Add(time.Minute), m.StartTime.Add(3*time.Minute)
	// dump writes the market's books every second from first to past its
	// end, quoted in the tick of their time, and the change back to 0.01.
	dump := func(t *testing.T, path string, first time.Time) {
		var buf bytes.Buffer
		line := func(v map[string]any) {
			frame, _ := json.Marshal(v)
			buf.Write(append(frame, '\n'))
		}
		told := false
		for at := first; at.Before(m.EndTime.Add(10 * time.Second)); at = at.Add(time.Second) {
			tick, bid, ask := "0.001", "0.497", "0.503"
			if !at.Before(wentBack) {
				if !told {
					for _, tok := range []string{m.ClobTokenUp, m.ClobTokenDown} {
						line(map[string]any{"event_type": "tick_size_change", "market": m.ConditionID, "asset_id": tok,
							"timestamp": strconv.FormatInt(wentBack.UnixMilli(), 10), "old_tick_size": "0.001", "new_tick_size": "0.01"})
					}
					told = true
				}
				tick, bid, ask = "0.01", "0.49", "0.51"
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
	dump(t, early, wentFine)
	dump(t, late, m.StartTime.Add(2*time.Minute))
	want := []store.TickSizeChange{{Time: wentFine, TickSize: 0.001}, {Time: wentBack, TickSize: 0.01}}
	for name, files := range map[string][]string{"early first": {early, late}, "late first": {late, early}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			prices := archive.NewCoinPrices()
			writeKlines(t, prices, store.BTC, fxHour, fxHour.Add(time.Hour), func(time.Time) float64 { return 80000 })
			st := memory.New()
			if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{m}, Prices: prices}); err != nil {
				t.Fatal(err)
			}
			got, err := st.GetMarket(ctx, m.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got.TickSizeChanges, want, func(a, b store.TickSizeChange) bool { return a.Time.Equal(b.Time) && a.TickSize == b.TickSize }) ||
				got.TickSize == nil || *got.TickSize != 0.01 {
				t.Errorf("tick %v, changes %v; want 0.01 after the changes %v", fmtTick(got.TickSize), got.TickSizeChanges, want)
			}
		})
	}
}

func fmtTick(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}
