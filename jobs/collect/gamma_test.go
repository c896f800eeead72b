package collect

import (
	"encoding/json"
	"testing"

	"github.com/updown/updown/store"
)

// TestApplyDetailsRebate reads feeSchedule.rebateRate as the market's maker
// rebate: kept when the schedule has one, null when a schedule has none
// (even over a stored value), and untouched when Gamma sends no schedule.
func TestApplyDetailsRebate(t *testing.T) {
	t.Parallel()
	stored := 0.25
	for _, tc := range []struct {
		name, body string
		before     *float64
		want       *float64
	}{
		{"schedule with a rebate", `{"feeSchedule":{"exponent":1,"rate":0.07,"takerOnly":true,"rebateRate":0.2}}`, nil, ptrTo(0.2)},
		{"string numbers", `{"feeSchedule":{"exponent":"1","rate":"0.07","rebateRate":"0.2"}}`, nil, ptrTo(0.2)},
		{"zero is a value", `{"feeSchedule":{"rate":0.07,"rebateRate":0}}`, nil, ptrTo(0.0)},
		{"schedule without a rebate", `{"feeSchedule":{"exponent":1,"rate":0.07,"takerOnly":true}}`, &stored, nil},
		{"no schedule", `{"feeType":"crypto_fees"}`, &stored, &stored},
	} {
		var g gammaMarket
		if err := json.Unmarshal([]byte(tc.body), &g); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := store.Market{MakerRebateRate: tc.before}
		applyDetails(&m, gammaFound{market: g})
		switch {
		case tc.want == nil && m.MakerRebateRate != nil:
			t.Errorf("%s: maker rebate rate %v, want null", tc.name, *m.MakerRebateRate)
		case tc.want != nil && (m.MakerRebateRate == nil || *m.MakerRebateRate != *tc.want):
			t.Errorf("%s: maker rebate rate %v, want %v", tc.name, derefOrNil(m.MakerRebateRate), *tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// derefOrNil returns *p, or nil for a nil p, for messages.
func derefOrNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
