package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/updown/updown/store"
)

func concurrencyTests() []test {
	return []test{
		{"WritersAndReaders", testConcurrentWriters},
		{"SameSnapshotsFromManyWriters", testConcurrentDuplicates},
		{"SameEmailAndHashFromManyWriters", testConcurrentUniqueKeys},
		{"SameMarketsInOppositeOrders", testConcurrentMarketOrders},
	}
}

// testConcurrentMarketOrders has writers upsert the same markets at once,
// half of them in the reverse order (as a transfer and a collector list
// them): every batch is stored, none failing on the rows the others hold.
func testConcurrentMarketOrders(t *testing.T, s store.Store) {
	ctx := t.Context()
	markets := make([]store.Market, 60)
	for i := range markets {
		markets[i] = newMarket(store.Coins[i%len(store.Coins)], store.M5, at(5*i), "")
	}
	reversed := slices.Clone(markets)
	slices.Reverse(reversed)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			batch := markets
			if w%2 == 1 {
				batch = reversed
			}
			for range batches {
				if err := s.UpsertMarkets(ctx, batch); err != nil {
					t.Errorf("writer %d: UpsertMarkets: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := count(t, s, store.MarketFilter{}); n != len(markets) {
		t.Errorf("CountMarkets = %d, want %d", n, len(markets))
	}
}

const (
	writers   = 8
	batches   = 10
	batchSize = 30
)

// testConcurrentWriters has writers each create a market, fill it with
// snapshots in batches (some out of time order), update it after every
// batch and add a batch of its own to one shared market, while readers
// list; no write may be lost.
func testConcurrentWriters(t *testing.T, s store.Store) {
	ctx := t.Context()
	shared := newMarket(store.BTC, store.H24, at(-1440), "")
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{shared}), "UpsertMarkets")
	markets := make([]store.Market, writers)
	for w := range markets {
		markets[w] = newMarket(store.Coins[w%len(store.Coins)], store.M5, at(5*w), "")
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() { writeMarket(t, s, markets[w], shared, w) })
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() { readUntil(t, s, shared.Slug, done) })
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}

	if n := count(t, s, store.MarketFilter{}); n != writers+1 {
		t.Errorf("CountMarkets = %d, want %d", n, writers+1)
	}
	for _, m := range markets {
		want := m
		want.CoinPriceStart = ptr(micros(int64(batches - 1)))
		got := get(t, s, m.Slug)
		want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
		checkMarket(t, "market after concurrent updates", want, got)
		checkSeries(t, s, m.Slug, newSnapshots(m.StartTime, 0, batches*batchSize-1))
	}
	checkSeries(t, s, shared.Slug, newSnapshots(shared.StartTime, 0, writers*batchSize-1))
}

// writeMarket is one writer of testConcurrentWriters. After its k-th
// batch it sets the market's start price to k, so the last update leaves
// batches-1.
func writeMarket(t *testing.T, s store.Store, m store.Market, shared store.Market, w int) {
	ctx := t.Context()
	if err := s.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Errorf("writer %d: UpsertMarkets: %v", w, err)
		return
	}
	for k := range batches {
		b := k
		if w%2 == 1 {
			b = k * 7 % batches // out of time order
		}
		if _, err := s.AppendSnapshots(ctx, m.Slug, newSnapshots(m.StartTime, b*batchSize, (b+1)*batchSize-1)); err != nil {
			t.Errorf("writer %d: AppendSnapshots: %v", w, err)
			return
		}
		upd := m
		upd.CoinPriceStart = ptr(micros(int64(k)))
		if err := s.UpsertMarkets(ctx, []store.Market{upd}); err != nil {
			t.Errorf("writer %d: UpsertMarkets update: %v", w, err)
			return
		}
	}
	if _, err := s.AppendSnapshots(ctx, shared.Slug, newSnapshots(shared.StartTime, w*batchSize, (w+1)*batchSize-1)); err != nil {
		t.Errorf("writer %d: AppendSnapshots to the shared market: %v", w, err)
	}
}

// readUntil lists markets and the shared market's snapshots until done is
// closed. Whether a read sees a concurrent write is not specified; it must
// not fail.
func readUntil(t *testing.T, s store.Store, shared string, done <-chan struct{}) {
	ctx := t.Context()
	for {
		select {
		case <-done:
			return
		default:
		}
		if _, _, err := s.ListMarkets(ctx, store.MarketFilter{Limit: 5}); err != nil {
			t.Errorf("reader: ListMarkets: %v", err)
			return
		}
		if _, _, err := s.ListSnapshots(ctx, shared, store.SnapshotQuery{Limit: 100, WithBooks: true}); err != nil {
			t.Errorf("reader: ListSnapshots: %v", err)
			return
		}
	}
}

// testConcurrentDuplicates has writers write the same snapshots to one
// market in differently cut batches: each is stored once.
func testConcurrentDuplicates(t *testing.T, s store.Store) {
	slug := seedSnapshotMarket(t, s, 0)
	const n = 120
	want := newSnapshots(t0(), 0, n-1)
	var wg sync.WaitGroup
	for w := range 4 {
		size := []int{1, 7, 40, n}[w]
		wg.Go(func() {
			for lo := 0; lo < n; lo += size {
				if _, err := s.AppendSnapshots(t.Context(), slug, want[lo:min(lo+size, n)]); err != nil {
					t.Errorf("writer %d: AppendSnapshots: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkSeries(t, s, slug, want)
}

// testConcurrentUniqueKeys has writers race for one email and one key
// hash: exactly one of each wins, the rest get ErrConflict.
func testConcurrentUniqueKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	owner := createCustomer(t, s, newCustomer("owner"))
	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		customers, keyWins int
		unexpected         []error
	)
	record := func(err error, wins *int) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			*wins++
		case !errors.Is(err, store.ErrConflict):
			unexpected = append(unexpected, err)
		}
	}
	for w := range writers {
		wg.Go(func() {
			c := newCustomer("racer")
			c.Name = fmt.Sprintf("racer %d", w)
			_, err := s.CreateCustomer(ctx, c)
			record(err, &customers)
			_, err = s.CreateAPIKey(ctx, newKey(owner.ID, "ud_race"))
			record(err, &keyWins)
		})
	}
	wg.Wait()
	if customers != 1 || keyWins != 1 || len(unexpected) > 0 {
		t.Errorf("%d customers and %d keys created from one email and one hash, other errors %v; want 1, 1, none",
			customers, keyWins, unexpected)
	}
	all, err := s.ListCustomers(ctx)
	mustOK(t, err, "ListCustomers")
	if len(all) != 2 {
		t.Errorf("ListCustomers returned %d customers, want 2", len(all))
	}
	if keys := listKeys(t, s, owner.ID); len(keys) != 1 {
		t.Errorf("ListAPIKeys returned %d keys, want 1", len(keys))
	}
}
