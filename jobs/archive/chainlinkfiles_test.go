package archive_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestOverlappingDumpsKeepTheirChainlinkPrices imports two ws-jsonl dumps
// of the same two hours, each with its own BTC market and the socket's
// Chainlink frames (a dump a market series, imported together). The
// second file's market, early in those hours, is priced by the Chainlink
// frames of the hours it is in, as when it is imported alone, where the
// prices the first file left behind (its last hour only) priced none of
// its snapshots, and it was imported as one long gap.
func TestOverlappingDumpsKeepTheirChainlinkPrices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	from, to := fxHour, fxHour.Add(2*time.Hour)
	late := fxMarket(store.BTC, fxHour.Add(110*time.Minute), 11)
	early := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 12)
	price := func(at time.Time) float64 { return 90000 + float64(at.Unix()%61) }
	dir := t.TempDir()
	write := func(name string, m store.Market, seed uint64) string {
		evs := fxStream(m, m.StartTime.Add(-20*time.Second), m.EndTime.Add(5*time.Second), seed, 0)
		slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
		var buf bytes.Buffer
		next := from
		for _, e := range evs {
			for !next.After(time.UnixMilli(e.received)) {
				fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"update","timestamp":%d,"payload":{"symbol":"btc/usd","timestamp":%d,"value":%v}}`+"\n",
					next.UnixMilli(), next.UnixMilli(), price(next))
				next = next.Add(time.Second)
			}
			buf.Write(append(e.frame(), '\n'))
		}
		for ; next.Before(to); next = next.Add(time.Second) {
			fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"update","timestamp":%d,"payload":{"symbol":"btc/usd","timestamp":%d,"value":%v}}`+"\n",
				next.UnixMilli(), next.UnixMilli(), price(next))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b := write("a.jsonl", late, 1), write("b.jsonl", early, 2)
	markets := []store.Market{late, early}

	alone := memory.New()
	if _, err := archive.Import(ctx, alone, archive.Options{Format: archive.WSJSONL, Files: []string{b}, Markets: markets}); err != nil {
		t.Fatal(err)
	}
	want := len(snapshotsOf(t, alone, early.Slug))
	if want < 900 {
		t.Fatalf("the early market imported alone: %d snapshots", want)
	}

	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{a, b}, Markets: markets}); err != nil {
		t.Fatal(err)
	}
	if got := len(snapshotsOf(t, st, late.Slug)); got < 900 {
		t.Errorf("the late market: %d snapshots", got)
	}
	snaps := snapshotsOf(t, st, early.Slug)
	if len(snaps) != want {
		t.Errorf("the early market, imported beside the other dump: %d snapshots, %d imported alone", len(snaps), want)
	}
	for _, s := range snaps {
		if at := s.Time.Truncate(time.Second); s.CoinPrice != price(at) && s.CoinPrice != price(at.Add(-time.Second)) {
			t.Fatalf("snapshot at %s: coin price %v, want %v", s.Time, s.CoinPrice, price(at))
		}
	}
	gaps, _ := st.ListGaps(ctx, early.Slug)
	if len(gaps) != 0 {
		t.Errorf("gaps of the early market: %v", gaps)
	}
}
