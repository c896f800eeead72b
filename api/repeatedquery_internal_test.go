package api

import (
	"slices"
	"testing"

	"github.com/updown/updown/store/memory"
)

// TestScalarQueryIsFoundOnce: an operation's scalar query parameters,
// which every request with a & is checked against (rejectRepeatedQuery),
// are found once and kept, where every such request built their set
// again. Not parallel: AllocsPerRun.
func TestScalarQueryIsFoundOnce(t *testing.T) {
	s, err := New(Config{Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	op := s.OpenAPI().Paths["/v1/markets"].Get
	if op == nil {
		t.Fatal("no GET /v1/markets operation")
	}
	names := s.scalarQuery(op)
	for _, want := range []string{"coin", "limit", "offset", "market_type"} {
		if !slices.Contains(names, want) {
			t.Errorf("scalar query parameters %v lack %s", names, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { s.scalarQuery(op) }); allocs != 0 {
		t.Errorf("finding an operation's scalar query parameters again allocated %.0f times a request, want none: they are kept", allocs)
	}
	if err := checkRepeatedQuery(names, "coin=BTC&limit=1&coin=ETH"); err == nil || err.Details["errors"] == nil {
		t.Errorf("coin given twice: %v, want its VALIDATION_ERROR", err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = checkRepeatedQuery(names, "utm=a&utm=b") }); allocs != 0 {
		t.Errorf("a query of no scalar parameter of the operation allocated %.0f times, want none", allocs)
	}
}
