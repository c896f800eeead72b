package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
