package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestReadsInFlight: READS_IN_FLIGHT reads as JOBS_IN_FLIGHT does, and a
// bad pair names the variable.
func TestReadsInFlight(t *testing.T) {
	t.Setenv("READS_IN_FLIGHT", "PRO=2, ENTERPRISE=32,starter=0")
	caps, err := readsInFlight()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[store.Tier]int{store.Pro: 2, store.Enterprise: 32, store.Starter: 0}; !maps.Equal(caps, want) {
		t.Errorf("caps = %v, want %v", caps, want)
	}
	t.Setenv("READS_IN_FLIGHT", "PRO=-1")
	if _, err := readsInFlight(); err == nil || !strings.Contains(err.Error(), "READS_IN_FLIGHT") {
		t.Errorf("PRO=-1: %v", err)
	}
	t.Setenv("READS_IN_FLIGHT", "PRO=2,pro=3")
	if _, err := readsInFlight(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("PRO given twice: %v", err)
	}
	t.Setenv("READS_IN_FLIGHT", "")
	if caps, err := readsInFlight(); caps != nil || err != nil {
		t.Errorf("unset: %v, %v", caps, err)
	}
}

// TestWorkerMemory: WORKER_MEMORY_MB reads MiB, and a number whose bytes
// an int64 cannot hold is refused rather than wrapped around.
func TestWorkerMemory(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int64
		ok   bool
	}{{"", 0, true}, {"512", 512 << 20, true}, {"8796093022207", 8796093022207 << 20, true},
		{"8796093022208", 0, false}, {"-1", 0, false}, {"lots", 0, false}} {
		t.Setenv("WORKER_MEMORY_MB", tc.v)
		got, err := workerMemory()
		if (err == nil) != tc.ok || got != tc.want || got < 0 {
			t.Errorf("WORKER_MEMORY_MB=%q: %d, %v; want %d (ok %v)", tc.v, got, err, tc.want, tc.ok)
		}
	}
}

// TestBillingProductTiers: BILLING_PRODUCT_TIERS reads PRODUCT=TIER pairs
// (tiers in any case), and a bad pair, or a product given twice, names
// the variable.
func TestBillingProductTiers(t *testing.T) {
	t.Setenv("BILLING_PRODUCT_TIERS", "pdt_abc=PRO, pdt_def = enterprise")
	tiers, err := billingProductTiers()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]store.Tier{"pdt_abc": store.Pro, "pdt_def": store.Enterprise}; !maps.Equal(tiers, want) {
		t.Errorf("tiers = %v, want %v", tiers, want)
	}
	for _, bad := range []string{"pdt_abc=GOLD", "pdt_abc", "=PRO", "pdt_abc=PRO,pdt_abc=SUITE"} {
		t.Setenv("BILLING_PRODUCT_TIERS", bad)
		if _, err := billingProductTiers(); err == nil || !strings.Contains(err.Error(), "BILLING_PRODUCT_TIERS") {
			t.Errorf("%q: %v, want an error naming BILLING_PRODUCT_TIERS", bad, err)
		}
	}
	t.Setenv("BILLING_PRODUCT_TIERS", "")
	if tiers, err := billingProductTiers(); tiers != nil || err != nil {
		t.Errorf("unset: %v, %v", tiers, err)
	}
}
