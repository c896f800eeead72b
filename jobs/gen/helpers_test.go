package gen

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// testNow is an arbitrary instant in the middle of a window of every type
// (not on a boundary), with nanoseconds that New must truncate.
func testNow() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 535_897_932, time.UTC) }

// smallConfig is a config that exercises everything DefaultConfig does
// (every series, a live market each, an outage, books, depth) at a tenth of
// the volume, for tests that generate more than once.
func smallConfig(now time.Time) Config {
	c := DefaultConfig(now)
	c.Markets = map[store.MarketType]int{store.M5: 12, store.M15: 6, store.H1: 4, store.H4: 3, store.H24: 2}
	c.MaxSnapshotsPerMarket = 200
	c.BookLevels = 3
	c.OutageAgo = 30 * time.Minute
	c.DepthHistory = time.Hour
	c.BatchSize = 97 // not a divisor of anything, to exercise partial batches
	return c
}

func mustNew(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func mustSnapshots(t testing.TB, g *Generator, m store.Market) []store.Snapshot {
	t.Helper()
	s, err := g.Snapshots(m)
	if err != nil {
		t.Fatalf("Snapshots(%s): %v", m.Slug, err)
	}
	return s
}

// recorder is a Writer that keeps everything, like a store would, and
// refuses snapshots of markets it has not been given, like a store does.
type recorder struct {
	mu      sync.Mutex
	markets map[string]store.Market
	snaps   map[string][]store.Snapshot
	trades  map[string][]store.MarketTrade
	gaps    map[string][]store.Gap
	depth   []store.DepthSnapshot
	calls   int // AppendSnapshots calls
}

func newRecorder() *recorder {
	return &recorder{markets: map[string]store.Market{}, snaps: map[string][]store.Snapshot{},
		trades: map[string][]store.MarketTrade{}, gaps: map[string][]store.Gap{}}
}

func (r *recorder) AppendMarketTrades(_ context.Context, slug string, tr []store.MarketTrade) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.markets[slug]; !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	r.trades[slug] = append(r.trades[slug], tr...)
	return len(tr), nil
}

func (r *recorder) RecordGaps(_ context.Context, slug string, g []store.Gap) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.markets[slug]; !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	r.gaps[slug] = append(r.gaps[slug], g...)
	return len(g), nil
}

func (r *recorder) UpsertMarkets(_ context.Context, ms []store.Market) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range ms {
		r.markets[m.Slug] = m
	}
	return nil
}

func (r *recorder) AppendSnapshots(_ context.Context, slug string, s []store.Snapshot) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.markets[slug]; !ok {
		return 0, fmt.Errorf("market %s: %w", slug, store.ErrNotFound)
	}
	r.calls++
	r.snaps[slug] = append(r.snaps[slug], s...)
	return len(s), nil
}

func (r *recorder) AppendDepth(_ context.Context, d []store.DepthSnapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.depth = append(r.depth, d...)
	return nil
}

// digest hashes everything recorded, in a canonical order, through JSON:
// floats print as the shortest decimal that reads back to the same bits and
// times to the nanosecond, so equal digests mean equal data, byte for byte.
func (r *recorder) digest(t testing.TB) string {
	t.Helper()
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, slug := range slices.Sorted(maps.Keys(r.markets)) {
		if err := enc.Encode(r.markets[slug]); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(r.snaps[slug]); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(r.trades[slug]); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(r.gaps[slug]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Encode(r.depth); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// seedAll seeds cfg into a fresh recorder.
func seedAll(t testing.TB, cfg Config) (*recorder, Stats) {
	t.Helper()
	r := newRecorder()
	st, err := Seed(context.Background(), cfg, r)
	if err != nil {
		t.Fatalf("Seed: %v", err)
	}
	return r, st
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(t testing.TB, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
