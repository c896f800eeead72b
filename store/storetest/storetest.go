// Package storetest is the conformance suite every store.Store
// implementation passes. An implementation's tests call Run with a factory
// that returns a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s := memory.New()
//			t.Cleanup(s.Close)
//			return s
//		})
//	}
//
// The suite pins down the contract written in package store's doc comments
// and the points those comments leave open (see the test names and the
// comments on each test). Numbers it writes have at most six decimals and
// times are compared after truncation to the microsecond, so a store may pack
// numbers to 1e-6 and times to the microsecond.
package storetest

import (
	"testing"

	"github.com/updown/updown/store"
)

// test is one conformance test. It gets a fresh, empty store of its own.
type test struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// Run runs the conformance suite. newStore must return a fresh, empty store
// each time it is called and register the store's cleanup with the t it is
// given; the suite calls it once per test, from parallel tests.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Markets", marketTests()},
		{"Snapshots", snapshotTests()},
		{"Tapes", tapeTests()},
		{"Trades", tradeTests()},
		{"TradeRanges", tradeRangeTests()},
		{"Gaps", gapTests()},
		{"AppendCounts", appendCountTests()},
		{"Customers", customerTests()},
		{"APIKeys", apiKeyTests()},
		{"Depth", depthTests()},
		{"Quota", quotaTests()},
		{"Billing", billingTests()},
		{"Sweeps", sweepTests()},
		{"Imports", importTests()},
		{"DataVersions", dataVersionTests()},
		{"Concurrency", concurrencyTests()},
		{"Store", storeTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, newStore(t))
				})
			}
		})
	}
}
