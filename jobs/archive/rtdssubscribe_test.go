package archive_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestChainlinkSubscribeSnapshot imports a dump of the real-time data
// socket as a capture records it: on each (re)subscription the socket
// first sends the recent Chainlink prices in one frame of type
// "subscribe", {"payload":{"symbol":"btc/usd","data":[{"timestamp",
// "value"},...]}}, then an "update" frame a price. The snapshot frame's
// prices price the snapshots they cover, where its missing
// payload.timestamp failed the whole import on the dump's first line.
func TestChainlinkSubscribeSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	sorted := slices.Clone(fx.events)
	slices.SortStableFunc(sorted, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	price := func(at time.Time) float64 { return 90000 + float64(at.Unix()%61) }
	// The subscription's snapshot: the prices of the market's first two
	// minutes, sent as the capture began; updates follow from then on.
	snapFrom, updatesFrom := fx.known.StartTime, fx.known.StartTime.Add(2*time.Minute)
	var data []string
	for at := snapFrom; at.Before(updatesFrom); at = at.Add(time.Second) {
		data = append(data, fmt.Sprintf(`{"timestamp":%d,"value":%v}`, at.UnixMilli(), price(at)))
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"subscribe","timestamp":%d,"payload":{"symbol":"btc/usd","data":[%s]}}`+"\n",
		snapFrom.UnixMilli(), strings.Join(data, ","))
	next := updatesFrom
	for _, e := range sorted {
		for !next.After(time.UnixMilli(e.received)) {
			ms := next.UnixMilli()
			fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"update","timestamp":%d,"payload":{"symbol":"btc/usd","timestamp":%d,"value":%v}}`+"\n",
				ms+40, ms, price(next))
			next = next.Add(time.Second)
		}
		buf.Write(append(e.frame(), '\n'))
	}
	path := filepath.Join(t.TempDir(), "rtds.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	if _, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, SkipUnknown: true}); err != nil {
		t.Fatal(err)
	}
	snaps := snapshotsOf(t, st, fx.known.Slug)
	early := 0
	for _, s := range snaps {
		if s.Time.Before(updatesFrom) {
			early++
		}
		if at := s.Time.Truncate(time.Second); s.CoinPrice != price(at) && s.CoinPrice != price(at.Add(-time.Second)) {
			t.Fatalf("snapshot at %s: coin price %v, want %v", s.Time, s.CoinPrice, price(at))
		}
	}
	if early < 100 {
		t.Errorf("%d snapshots before the first update frame, of %d: the subscription's prices priced none", early, len(snaps))
	}
}
