package collect

import (
	"encoding/json"
	"fmt"
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

// TestApplyDetailsFeeType keeps Gamma's feeType, and takes the first
// crypto fee type without a schedule as the schedule it names (rate 0.25,
// exponent 2); a schedule given wins, and fees Gamma says are off are not
// invented.
func TestApplyDetailsFeeType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, stored, wantType string
		wantRate                     *float64
		wantExp                      *int
	}{
		{"v2 with its schedule", `{"feeType":"crypto_fees_v2","feeSchedule":{"exponent":1,"rate":0.07}}`, "", "crypto_fees_v2", ptrTo(0.07), ptrTo(1)},
		{"v1 without a schedule", `{"feeType":"crypto_fees","feesEnabled":true}`, "", "crypto_fees", ptrTo(0.25), ptrTo(2)},
		{"v1, fees not said", `{"feeType":"crypto_fees"}`, "", "crypto_fees", ptrTo(0.25), ptrTo(2)},
		{"v1 with fees off", `{"feeType":"crypto_fees","feesEnabled":false}`, "", "crypto_fees", nil, nil},
		{"v1 with a schedule", `{"feeType":"crypto_fees","feeSchedule":{"exponent":2,"rate":0.2}}`, "", "crypto_fees", ptrTo(0.2), ptrTo(2)},
		{"no type keeps the stored one", `{}`, "crypto_fees_v2", "crypto_fees_v2", nil, nil},
	} {
		var g gammaMarket
		if err := json.Unmarshal([]byte(tc.body), &g); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := store.Market{FeeType: tc.stored}
		applyDetails(&m, gammaFound{market: g})
		if m.FeeType != tc.wantType || fmt.Sprint(derefOrNil(m.TakerFeeRate)) != fmt.Sprint(derefOrNil(tc.wantRate)) ||
			fmt.Sprint(derefOrNil(m.FeeExponent)) != fmt.Sprint(derefOrNil(tc.wantExp)) {
			t.Errorf("%s: type %q rate %v exponent %v, want %q %v %v", tc.name, m.FeeType, derefOrNil(m.TakerFeeRate), derefOrNil(m.FeeExponent),
				tc.wantType, derefOrNil(tc.wantRate), derefOrNil(tc.wantExp))
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
