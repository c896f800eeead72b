package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestMarketResolvedSettlesImportedMarket imports ws-jsonl dumps that
// hold market_resolved frames (realdata/ws's shape): a market only
// imports wrote, which the markets file gives unresolved, takes the
// winner the frame names (its winning token's outcome), at the frame's
// time, as Polymarket's verdict without its reference prices (the frame
// has none); so does one whose frame comes in
// the next hour's dump, imported after its data (a window that ends near
// the hour settles in the next). A market the recorder stored is the
// resolver's to settle, and another market's frame (a market neither
// stored nor in the markets file) is passed over, with or without a
// markets file. The frames were passed over: an imported market stayed
// unresolved unless a markets file fetched after its settlement came.
func TestMarketResolvedSettlesImportedMarket(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		marketResolvedSettles(t, func() ticksStore { return memory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		marketResolvedSettles(t, func() ticksStore { return pgtest.NewStore(t) })
	})
}

// resolvedFrame is a market_resolved frame as the market channel sends it
// (realdata/ws/nautilus_ws_market_resolved_msg.json).
func resolvedFrame(m store.Market, winner string, at time.Time) string {
	outcome := store.OutcomeUp
	if winner == m.ClobTokenDown {
		outcome = store.OutcomeDown
	}
	return fmt.Sprintf(`{"event_type":"market_resolved","id":%q,"market":%q,"assets_ids":[%q,%q],"winning_asset_id":%q,"winning_outcome":%q,"timestamp":"%d","tags":["crypto"]}`,
		m.MarketID, m.ConditionID, m.ClobTokenUp, m.ClobTokenDown, winner, outcome, at.UnixMilli())
}

// otherResolved is realdata's own frame: a market of no up/down series.
const otherResolved = `{"event_type":"market_resolved","id":"1031769","market":"0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1","assets_ids":["76043073756653678226373981964075571318267289248134717369284518995922789326425","31690934263385727664202099278545688007799199447969475608906331829650099442770"],"winning_asset_id":"76043073756653678226373981964075571318267289248134717369284518995922789326425","winning_outcome":"Yes","timestamp":"1766790415550","tags":["stocks"]}`

func marketResolvedSettles(t *testing.T, newStore func() ticksStore) {
	ctx := context.Background()
	fx := newFxSet()
	known, recorded := fx.known, fx.unknown
	at := known.EndTime.Add(75 * time.Second)
	lines := func(evs []fxEvent, extra ...string) []string {
		out := make([]string, 0, len(evs)+len(extra))
		for _, e := range evs {
			out = append(out, string(e.frame()))
		}
		return append(out, extra...)
	}
	dir := t.TempDir()
	write := func(name string, lines []string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	imp := func(st ticksStore, file string, markets []store.Market) {
		t.Helper()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{file}, Markets: markets, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("import %s: %v", filepath.Base(file), err)
		}
	}
	check := func(st ticksStore, m store.Market, winner string) {
		t.Helper()
		got, err := st.GetMarket(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if winner == "" {
			if got.Resolved() {
				t.Errorf("%s: settled %s by %q, want it unresolved", m.Slug, *got.Winner, got.ResolutionSource)
			}
			return
		}
		if !got.Resolved() || *got.Winner != winner || got.ResolvedAt == nil || !got.ResolvedAt.Equal(at) ||
			got.ResolutionSource != store.SourceChainlink || got.FinalPrice != nil || got.CoinPriceEnd != nil {
			t.Errorf("%s: winner %v resolved at %v by %q, final price %v, coin price end %v; want %s at %s by %q, no prices",
				m.Slug, got.Winner, got.ResolvedAt, got.ResolutionSource, got.FinalPrice, got.CoinPriceEnd, winner, at, store.SourceChainlink)
		}
	}

	// One dump with the market's events and its settlement.
	st := newStore()
	if err := st.(interface {
		UpsertMarkets(context.Context, []store.Market) error
	}).UpsertMarkets(ctx, []store.Market{recorded}); err != nil {
		t.Fatal(err)
	}
	imp(st, write("dump.jsonl", lines(fx.events, otherResolved, resolvedFrame(known, known.ClobTokenDown, at),
		resolvedFrame(recorded, recorded.ClobTokenUp, at))), []store.Market{known, recorded})
	check(st, known, store.OutcomeDown)
	check(st, recorded, "") // the resolver's, with Polymarket's prices

	// The settlement in the next hour's dump, imported after the first,
	// without a markets file. (Imported before it, of a market not
	// stored yet, it imports nothing, and is not recorded as an import.)
	st = newStore()
	hour2 := write("hour2.jsonl", []string{otherResolved, resolvedFrame(known, known.ClobTokenDown, at)})
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{hour2}, Markets: []store.Market{known}}); err == nil {
		t.Error("the settlement of a market neither stored nor in the dump was imported")
	}
	imp(st, write("hour1.jsonl", lines(fx.eventsOf(known))), []store.Market{known})
	check(st, known, "")
	imp(st, hour2, nil)
	check(st, known, store.OutcomeDown)
}
