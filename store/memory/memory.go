// Package memory is an in-memory store.Store: the dev default and the fast
// store for tests. It is a real implementation, not a mock: it passes the
// conformance suite in store/storetest with the same ordering, filters,
// paging and totals as the Postgres store, and keeps what it is given
// isolated from its callers by copying on the way in and out.
//
// Snapshots are kept per market in time order and packed (see pack.go), so
// that a page read is a range of a slice and half a million snapshots with
// books take a few hundred bytes each.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/updown/updown/store"
)

// Store is an in-memory store.Store, safe for concurrent use. Each kind of
// record has its own lock, and each time series its own, so writers to one
// market do not hold up readers of another.
type Store struct {
	now func() time.Time

	marketsMu  sync.RWMutex
	markets    map[string]*marketEntry // by slug
	byMarketID map[string]*marketEntry
	ordered    []*marketEntry // start_time descending, slug ascending

	customersMu sync.RWMutex
	customers   map[string]store.Customer // by ID
	byEmail     map[string]string         // email → customer ID
	keys        map[string]*store.APIKey  // by ID
	keyByHash   map[string]string         // string(hash) → key ID
	keysOf      map[string][]string       // customer ID → key IDs

	depthMu sync.RWMutex
	depth   map[depthKey]*timeline

	quotaMu sync.Mutex
	quota   map[quotaKey]int

	// billingMu is taken before customersMu when an event changes a tier,
	// and never the other way round.
	billingMu    sync.Mutex
	billing      map[string]store.BillingEvent  // by webhook id
	billingSteps map[string][]store.BillingStep // customer ID → tier-setting events, by OccurredAt then arrival
	tierByHand   map[string]store.BillingStep   // customer ID → the latest SetCustomerTier, as a step

	sweeps sweepTable

	importsMu sync.Mutex // held by an import from BeginImport to its end
	imports   []store.Import
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		now:        time.Now,
		markets:    map[string]*marketEntry{},
		byMarketID: map[string]*marketEntry{},
		customers:  map[string]store.Customer{},
		byEmail:    map[string]string{},
		keys:       map[string]*store.APIKey{},
		keyByHash:  map[string]string{},
		keysOf:     map[string][]string{},
		depth:      map[depthKey]*timeline{},
		quota:      map[quotaKey]int{},

		billing:      map[string]store.BillingEvent{},
		billingSteps: map[string][]store.BillingStep{},
		tierByHand:   map[string]store.BillingStep{},
	}
}

// Ping reports whether ctx is still live; the store itself is always there.
func (s *Store) Ping(ctx context.Context) error {
	return live(ctx, "ping")
}

// Close does nothing: the store holds no resources but memory.
func (s *Store) Close() {}

// live returns ctx's error, if any, wrapped with the operation's name.
func live(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}

// clock returns the store's time as it is kept.
func (s *Store) clock() time.Time { return normTime(s.now()) }

// normTime returns t as every store keeps it: to the microsecond, in UTC.
func normTime(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// normTimePtr returns a copy of *t as kept, or nil.
func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

// stamp returns t as kept, or now when t is zero.
func stamp(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return normTime(t)
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// newID returns a random (version 4) UUID.
func newID() (string, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("memory: new id: %w", err)
	}
	return id.String(), nil
}
