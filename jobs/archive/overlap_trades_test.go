package archive_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestTradesKeepTheirOwnTime imports a market's stream as one file and as
// two dumps that overlap (a capture restarted before the last one
// stopped): the overlap's trades arrive behind the market's clock, and
// must be stored at their own times, so that they are the trades already
// imported, not copies at another instant.
func TestTradesKeepTheirOwnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.jsonl")
	writeJSONL(t, whole, evs)
	cut := len(evs) / 2
	first, second := filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
	writeJSONL(t, first, evs[:cut+200])
	writeJSONL(t, second, evs[cut:])

	trades := func(files ...string) []store.MarketTrade {
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: files, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatal(err)
		}
		ts, _, err := st.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	want := trades(whole)
	var inStream int
	for _, e := range evs {
		if e.kind == "last_trade_price" {
			inStream++
		}
	}
	if len(want) != inStream {
		t.Fatalf("one file: %d trades, the stream has %d", len(want), inStream)
	}
	for _, tr := range want {
		i := slices.IndexFunc(evs, func(e fxEvent) bool { return e.kind == "last_trade_price" && e.tx == tr.TxHash })
		if i < 0 || !tr.Time.Equal(time.UnixMilli(evs[i].ts).UTC()) {
			t.Fatalf("trade %s at %s, not at its event's time", tr.TxHash, tr.Time)
		}
	}
	if got := trades(first, second); !slices.Equal(got, want) {
		t.Errorf("two overlapping dumps: %d trades, one file %d", len(got), len(want))
	}
}
