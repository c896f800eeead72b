package strategy_test

import (
	"errors"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
)

// TestRequestValidationNumbers: a generation request's validation message
// writes the number it refuses as a replay's does: 1e308 is "1e+308",
// where it was 309 digits, and an ordinary number reads as written.
func TestRequestValidationNumbers(t *testing.T) {
	t.Parallel()
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name           string
		req            strategy.Request
		field, message string
	}{
		{"huge positionSize", strategy.Request{Prompt: "x", PositionSize: f(1e308)}, "positionSize",
			"positionSize 1e+308 is out of range: it must be between 1 and 10000 shares"},
		{"huge maxLossPercent", strategy.Request{Prompt: "x", MaxLossPercent: f(-1e308)}, "maxLossPercent",
			"maxLossPercent -1e+308 is out of range: it must be between 1 and 100"},
		{"huge latencyMs", strategy.Request{Prompt: "x", LatencyMs: f(1e308)}, "latencyMs",
			"latencyMs 1e+308 is not allowed: it must be a whole number of milliseconds from 0 to 60000"},
		{"maxLossPercent 0.55", strategy.Request{Prompt: "x", MaxLossPercent: f(0.55)}, "maxLossPercent",
			"maxLossPercent 0.55 is out of range: it must be between 1 and 100"},
		{"latencyMs 0.001", strategy.Request{Prompt: "x", LatencyMs: f(0.001)}, "latencyMs",
			"latencyMs 0.001 is not allowed: it must be a whole number of milliseconds from 0 to 60000"},
	} {
		req := tc.req
		var e *strategy.Error
		if err := req.Normalize(); !errors.As(err, &e) || e.Code != replay.CodeValidation || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("%s: %v, want VALIDATION_ERROR at %s: %s", tc.name, err, tc.field, tc.message)
		}
	}
}
