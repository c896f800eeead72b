package replay

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// FuzzValidate decodes arbitrary bodies as replay requests. Validation must
// never panic, must answer with an *Error of a replay code or accept, and an
// accepted strategy must replay without error into finite numbers.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		validBody,
		`{}`,
		`null`,
		`[]`,
		`{"marketSlug":"x","side":"DOWN","entryConditions":[{"field":"spread","operator":"crosses_below","value":0.05}],` +
			`"exitConditions":[{"field":"time_remaining_pct","operator":"<=","value":10}],"positionSize":10000,"maxLossPercent":100,"orderType":"LIMIT"}`,
		`{"marketSlug":"x","side":"up","entryConditions":[{"field":"price","operator":"=>"}],"exitConditions":[],"positionSize":0,"maxLossPercent":0,"orderType":"market"}`,
		`{"marketSlug":"x","side":"UP","entryConditions":[{"field":"coin_price","operator":">","value":1e308}],` +
			`"exitConditions":[{"field":"price_up","operator":"==","value":-1e-308}],"positionSize":1,"maxLossPercent":1}`,
		`{"side":"UP","entryConditions":null,"exitConditions":[null],"positionSize":-1e400}`,
		`{"marketSlug":"x","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.6}],` +
			`"exitConditions":[{"field":"price_up","operator":">","value":0.55}],"positionSize":1.000001,"maxLossPercent":null}`,
		`{"marketSlug":"x","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.6}],` +
			`"exitConditions":[{"field":"price_up","operator":">","value":0.55}],"positionSize":100,"feeModel":"MARKET","latencyMs":250}`,
		`{"marketSlug":"x","side":"DOWN","entryConditions":[{"field":"price_down","operator":"<","value":0.6}],` +
			`"exitConditions":[{"field":"price_down","operator":">","value":0.55}],"positionSize":7,"orderType":"LIMIT","feeModel":"CUSTOM","feeRate":0.3,"feeExponent":3,"latencyMs":1e3}`,
		`{"marketSlug":"x","side":"UP","entryConditions":[{"field":"price_up","operator":"<"}],"exitConditions":[{"val":1}],"feeModel":"CUSTOM","feeExponent":0.5,"latencyMs":-0}`,
	} {
		f.Add([]byte(seed))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	m, snaps := randomMarket(rng, 200)
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if json.Unmarshal(body, &r) != nil {
			return // the api answers undecodable bodies itself
		}
		if err := r.Normalize(); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Message == "" || e.Field == "" {
				t.Fatalf("rejection %#v is not a replay *Error naming a field", err)
			}
			switch e.Code {
			case CodeInvalidSide, CodeInvalidField, CodeInvalidOperator, CodeInvalidOrderType, CodeValidation:
			default:
				t.Fatalf("rejection with code %s", e.Code)
			}
			return
		}
		again := r
		if err := again.Normalize(); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("normalizing %+v again gave %+v, %v", r, again, err)
		}
		res, err := Run(m, snaps, r.Strategy)
		if err != nil {
			t.Fatalf("accepted strategy %+v failed: %v", r.Strategy, err)
		}
		checkFinite(t, "fuzz", reflect.ValueOf(res))
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	})
}
