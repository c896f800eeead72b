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

// TestBinanceFramesOfTheDataSocketAreNotChainlink imports a dump that
// kept both price topics of Polymarket's real-time data socket beside the
// market channel: crypto_prices_chainlink ("btc/usd", what 5m, 15m and 4h
// markets settle on) and crypto_prices (Binance, "btcusdt"). Snapshots
// take the Chainlink price only, where the Binance frames, a few dollars
// off and a few milliseconds apart, were taken as Chainlink's too.
func TestBinanceFramesOfTheDataSocketAreNotChainlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	sorted := slices.Clone(fx.events)
	slices.SortStableFunc(sorted, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	chainlink := func(at time.Time) float64 { return 90000 + float64(at.Unix()%61) }
	var buf bytes.Buffer
	next := fx.known.StartTime.Add(time.Minute)
	for _, e := range sorted {
		for !next.After(time.UnixMilli(e.received)) {
			ms := next.UnixMilli()
			fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"update","timestamp":%d,"payload":{"symbol":"btc/usd","timestamp":%d,"value":%v}}`+"\n",
				ms, ms, chainlink(next))
			fmt.Fprintf(&buf, `{"topic":"crypto_prices","type":"update","timestamp":%d,"payload":{"symbol":"btcusdt","timestamp":%d,"value":%v}}`+"\n",
				ms+7, ms+5, chainlink(next)+37.5)
			next = next.Add(time.Second)
		}
		buf.Write(append(e.frame(), '\n'))
	}
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, SkipUnknown: true}); err != nil {
		t.Fatal(err)
	}
	snaps := snapshotsOf(t, st, fx.known.Slug)
	if len(snaps) < 100 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	for _, s := range snaps {
		if at := s.Time.Truncate(time.Second); s.CoinPrice != chainlink(at) && s.CoinPrice != chainlink(at.Add(-time.Second)) {
			t.Fatalf("snapshot at %s: coin price %v, Chainlink's %v (Binance's %v)", s.Time, s.CoinPrice, chainlink(at), chainlink(at)+37.5)
		}
	}
}
