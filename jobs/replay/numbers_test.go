package replay_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
)

// TestValidationNumbers: a replay validation message writes the number it
// refuses as a sweep's does, in plain decimals where they are short (0.55,
// 10001, 0.001) and with an exponent where they would run to hundreds of
// digits: 1e308 is "1e+308", where it was 309 digits.
func TestValidationNumbers(t *testing.T) {
	t.Parallel()
	base := `{"marketSlug":"btc-updown-5m-1735732800","side":"UP",` +
		`"entryConditions":[{"field":"price_up","operator":"<","value":0.35}],` +
		`"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100`
	for _, tc := range []struct {
		name, extra, field, message string
	}{
		{"huge positionSize", `,"positionSize":1e308`, "positionSize",
			"positionSize 1e+308 is out of range: it must be between 1 and 10000 shares"},
		{"huge negative positionSize", `,"positionSize":-1e308`, "positionSize",
			"positionSize -1e+308 is out of range: it must be between 1 and 10000 shares"},
		{"tiny positionSize", `,"positionSize":1e-300`, "positionSize",
			"positionSize 1e-300 is out of range: it must be between 1 and 10000 shares"},
		{"huge maxLossPercent", `,"maxLossPercent":1e308`, "maxLossPercent",
			"maxLossPercent 1e+308 is out of range: it must be between 1 and 100, or left out for the default 50"},
		{"huge feeRate", `,"feeModel":"CUSTOM","feeRate":1e308`, "feeRate",
			"feeRate 1e+308 is out of range: it must be between 0 and 1 (0.07 is Polymarket's crypto rate)"},
		{"huge feeExponent", `,"feeModel":"CUSTOM","feeRate":0.07,"feeExponent":1e308`, "feeExponent",
			"feeExponent 1e+308 is not allowed: it must be a whole number from 1 to 4, or left out for the default 1"},
		{"huge latencyMs", `,"latencyMs":1e308`, "latencyMs",
			"latencyMs 1e+308 is not allowed: it must be a whole number of milliseconds from 0 to 60000"},
		{"huge tradesLimit", `,"tradesLimit":1e308`, "tradesLimit",
			"tradesLimit 1e+308 is not allowed: it must be a whole number from 1 to 1000"},

		// Ordinary numbers read as they did.
		{"positionSize 10001", `,"positionSize":10001`, "positionSize",
			"positionSize 10001 is out of range: it must be between 1 and 10000 shares"},
		{"maxLossPercent 0.55", `,"maxLossPercent":0.55`, "maxLossPercent",
			"maxLossPercent 0.55 is out of range: it must be between 1 and 100, or left out for the default 50"},
		{"latencyMs 0.001", `,"latencyMs":0.001`, "latencyMs",
			"latencyMs 0.001 is not allowed: it must be a whole number of milliseconds from 0 to 60000"},
		{"feeRate 100", `,"feeModel":"CUSTOM","feeRate":100`, "feeRate",
			"feeRate 100 is out of range: it must be between 0 and 1 (0.07 is Polymarket's crypto rate)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r replay.Request
			if err := json.Unmarshal([]byte(base+tc.extra+"}"), &r); err != nil {
				t.Fatal(err)
			}
			var e *replay.Error
			if err := r.Validate(); !errors.As(err, &e) || e.Code != replay.CodeValidation || e.Field != tc.field {
				t.Fatalf("%v, want a VALIDATION_ERROR at %s", err, tc.field)
			}
			if e.Message != tc.message {
				t.Errorf("message\n got %.200s\nwant %s", e.Message, tc.message)
			}
			if strings.Contains(e.Message, "0000000000") {
				t.Errorf("message writes the number in %d characters", len(e.Message))
			}
		})
	}
}
