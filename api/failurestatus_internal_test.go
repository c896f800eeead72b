package api

import (
	"net/http"
	"testing"
)

// TestJobFailureStatus: the codes a job's failure carries answer with
// SPEC 7's statuses; a job whose database was down on every attempt
// (SERVICE_UNAVAILABLE) is a 503 to retry, not a 400 or a 500.
func TestJobFailureStatus(t *testing.T) {
	for code, want := range map[string]int{
		CodeServiceUnavailable:          http.StatusServiceUnavailable,
		CodeInternal:                    http.StatusInternalServerError,
		CodeMarketNotFound:              http.StatusNotFound,
		"AI_STRATEGY_GENERATION_FAILED": http.StatusBadGateway,
		CodeTierRequired:                http.StatusForbidden,
		"INVALID_FIELD":                 http.StatusBadRequest,
	} {
		if got := failureStatus(code); got != want {
			t.Errorf("a job failing with %s answers %d, want %d", code, got, want)
		}
	}
}
