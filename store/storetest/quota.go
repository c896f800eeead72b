package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func quotaTests() []test {
	return []test{
		{"ReserveUpToLimit", testReserveUpToLimit},
		{"MonthsAndCustomersApart", testQuotaMonthsApart},
		{"Release", testQuotaRelease},
		{"UnlimitedAndZero", testQuotaUnlimitedAndZero},
		{"UnknownCustomer", testQuotaUnknownCustomer},
		{"ConcurrentReserve", testQuotaConcurrent},
	}
}

var quotaMonth = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)

func testReserveUpToLimit(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := createCustomer(t, s, newCustomer("quota"))
	for want := 1; want <= 3; want++ {
		used, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth.Add(time.Duration(want)*time.Hour), 3)
		if err != nil || used != want {
			t.Fatalf("reserve %d: used %d, err %v", want, used, err)
		}
	}
	used, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 3)
	if !errors.Is(err, store.ErrQuotaExceeded) || used != 3 {
		t.Fatalf("fourth reserve of 3: used %d, err %v; want 3 and ErrQuotaExceeded", used, err)
	}
	if n, err := s.AIGenerationsUsed(ctx, c.ID, quotaMonth.AddDate(0, 0, 20)); err != nil || n != 3 {
		t.Errorf("used later in the month = %d, %v; want 3", n, err)
	}
}

func testQuotaMonthsApart(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := createCustomer(t, s, newCustomer("qa"))
	b := createCustomer(t, s, newCustomer("qb"))
	if _, err := s.ReserveAIGeneration(ctx, a.ID, quotaMonth, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveAIGeneration(ctx, a.ID, quotaMonth.AddDate(0, 1, 0), 1); err != nil {
		t.Errorf("next month is a fresh quota: %v", err)
	}
	if _, err := s.ReserveAIGeneration(ctx, b.ID, quotaMonth, 1); err != nil {
		t.Errorf("another customer has its own quota: %v", err)
	}
	if n, _ := s.AIGenerationsUsed(ctx, a.ID, quotaMonth.AddDate(0, -1, 0)); n != 0 {
		t.Errorf("previous month used = %d, want 0", n)
	}
}

func testQuotaRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := createCustomer(t, s, newCustomer("qr"))
	if _, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseAIGeneration(ctx, c.ID, quotaMonth); err != nil {
		t.Fatal(err)
	}
	if used, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 1); err != nil || used != 1 {
		t.Errorf("reserve after release: %d %v", used, err)
	}
	for i := 0; i < 3; i++ { // never below zero
		if err := s.ReleaseAIGeneration(ctx, c.ID, quotaMonth); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.AIGenerationsUsed(ctx, c.ID, quotaMonth); n != 0 {
		t.Errorf("used after over-release = %d, want 0", n)
	}
}

func testQuotaUnlimitedAndZero(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := createCustomer(t, s, newCustomer("qu"))
	for i := 1; i <= 7; i++ {
		if used, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, -1); err != nil || used != i {
			t.Fatalf("unlimited reserve %d: %d %v", i, used, err)
		}
	}
	z := createCustomer(t, s, newCustomer("qz"))
	if used, err := s.ReserveAIGeneration(ctx, z.ID, quotaMonth, 0); !errors.Is(err, store.ErrQuotaExceeded) || used != 0 {
		t.Errorf("limit 0: %d %v", used, err)
	}
}

func testQuotaUnknownCustomer(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, id := range []string{"00000000-0000-4000-8000-000000000000", "not-a-uuid"} {
		if _, err := s.ReserveAIGeneration(ctx, id, quotaMonth, 5); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("reserve for %s: %v, want ErrNotFound", id, err)
		}
		if _, err := s.AIGenerationsUsed(ctx, id, quotaMonth); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("used for %s: %v, want ErrNotFound", id, err)
		}
	}
}

// testQuotaConcurrent: 20 callers against 1 remaining take exactly one.
func testQuotaConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := createCustomer(t, s, newCustomer("qc"))
	if _, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 5); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 5); err != nil {
			t.Fatal(err)
		}
	}
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ReserveAIGeneration(ctx, c.ID, quotaMonth, 5)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrQuotaExceeded):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 19 {
		t.Errorf("20 concurrent reserves of the last one: %d granted, %d refused", ok.Load(), refused.Load())
	}
	if n, _ := s.AIGenerationsUsed(ctx, c.ID, quotaMonth); n != 5 {
		t.Errorf("used = %d, want 5", n)
	}
}
