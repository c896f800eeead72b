package archive_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestTradeWithoutSideIsLeftOut imports a stream one of whose
// last_trade_price events has no side, which the store cannot keep: the
// trade is left out, as the collector leaves it out, and the rest of the
// stream is imported, in both formats, where it took the import down.
func TestTradeWithoutSideIsLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	i := slices.IndexFunc(evs, func(e fxEvent) bool { return e.kind == "last_trade_price" })
	if i < 0 {
		t.Fatal("the stream has no trade")
	}
	sideless := evs[i].tx
	evs[i].side = ""
	var inStream int
	for _, e := range evs {
		if e.kind == "last_trade_price" {
			inStream++
		}
	}
	dir := t.TempDir()
	for _, format := range []archive.Format{archive.WSJSONL, archive.PMXTv2} {
		name := filepath.Join(dir, "events."+string(format))
		if format == archive.WSJSONL {
			writeJSONL(t, name, evs)
		} else {
			writePMXT(t, name, pmxtRows(evs))
		}
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: format, Files: []string{name}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		ts, _, err := st.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != inStream-1 || slices.ContainsFunc(ts, func(tr store.MarketTrade) bool { return tr.TxHash == sideless }) {
			t.Errorf("%s: %d trades, want the stream's %d but the one without a side", format, len(ts), inStream-1)
		}
		if _, n, err := st.ListSnapshots(ctx, fx.known.Slug, store.SnapshotQuery{Limit: 1}); err != nil || n == 0 {
			t.Errorf("%s: %d snapshots (%v)", format, n, err)
		}
	}
}
