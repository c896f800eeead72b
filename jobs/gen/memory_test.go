package gen_test

import (
	"bytes"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestSeedMemoryStore seeds the dev data set into the in-memory store, as
// `updown dev` does, and reads DESIGN 3's promises back through the store:
// the Starter window, an unresolved market per series, markets without
// snapshots, books, depth history.
func TestSeedMemoryStore(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds half a million snapshots")
	}
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	before := heapInUse()
	start := time.Now()
	s := memory.New()
	st, err := gen.Seed(t.Context(), gen.DefaultConfig(now), s)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	heap := heapInUse() - before
	t.Logf("seeded %+v in %v; store heap %.0f MiB, process RSS %s", st, took.Round(time.Millisecond), float64(heap)/(1<<20), rss())
	if heap > 512<<20 {
		t.Errorf("the seeded store holds %d MiB of heap, want well under 1 GiB", heap>>20)
	}

	ctx := t.Context()
	for mt, n := range map[store.MarketType]int{store.M5: 50, store.M15: 50, store.H1: 24, store.H4: 24, store.H24: 5} {
		if _, ok, err := s.NthNewestStart(ctx, store.BTC, mt, n+1, time.Now().Add(48*time.Hour)); err != nil || !ok {
			t.Errorf("BTC %s: no market past the Starter window's %d (%v)", mt, n, err)
		}
	}
	no := false
	live, total, err := s.ListMarkets(ctx, store.MarketFilter{Resolved: &no})
	if err != nil || total != 11 || st.Unresolved != 11 {
		t.Errorf("%d unresolved markets (%v), want one per series", total, err)
	}
	for _, m := range live {
		snaps, n, err := s.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Limit: 1, WithBooks: true})
		cadence := max(300*time.Millisecond, m.MarketType.Duration()/1000)
		if err != nil || n == 0 || snaps[0].BookUp == nil || now.Sub(snaps[0].Time) > cadence*5/4 {
			t.Errorf("live %s: %d snapshots, newest %+v (%v)", m.Slug, n, snaps, err)
		}
	}
	yes := true
	resolved, _, err := s.ListMarkets(ctx, store.MarketFilter{Resolved: &yes})
	if err != nil {
		t.Fatal(err)
	}
	empty := 0
	for _, m := range resolved {
		if _, n, err := s.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Limit: 1}); err == nil && n == 0 {
			empty++
		}
	}
	if empty != st.NoData || empty == 0 {
		t.Errorf("%d resolved markets without snapshots, Stats says %d", empty, st.NoData)
	}
	for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
		if _, n, err := s.ListDepth(ctx, store.DepthFilter{Symbol: "BTCUSDT", Kind: k, Limit: 1}); err != nil || n != st.Depth/2 {
			t.Errorf("BTCUSDT %s: %d depth snapshots (%v), want %d", k, n, err, st.Depth/2)
		}
	}
	runtime.KeepAlive(s)
}

// heapInUse returns the bytes of live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// rss returns the process's resident set size as /proc reports it.
func rss() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return "unknown"
}
