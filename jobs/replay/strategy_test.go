package replay

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

const validBody = `{"marketSlug":"btc-updown-5m-1735732800","side":"UP",
	"entryConditions":[{"field":"price_up","operator":"<","value":0.35},{"field":"time_remaining_pct","operator":">","value":20}],
	"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],
	"positionSize":100}`

// body returns validBody with the given top-level fields replaced (a nil
// value deletes the field).
func body(t *testing.T, changes map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validBody), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range changes {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func condList(n int, c map[string]any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = c
	}
	return out
}

func okCond() map[string]any {
	return map[string]any{"field": "price_up", "operator": "<", "value": 0.5}
}

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	badOp := []any{okCond(), map[string]any{"field": "price_up", "operator": "=>", "value": 0.5}}
	tests := []struct {
		name    string
		changes map[string]any
		code    string // "" for valid
		field   string
		message string // checked when set
	}{
		{name: "valid", changes: nil},
		{name: "valid LIMIT with a stop", changes: map[string]any{"orderType": "LIMIT", "maxLossPercent": 25, "side": "DOWN"}},
		{name: "bounds are inclusive", changes: map[string]any{"positionSize": 10000, "maxLossPercent": 100}},
		{name: "fractional shares", changes: map[string]any{"positionSize": 1.5, "maxLossPercent": 1}},
		{name: "null maxLossPercent takes the default", changes: map[string]any{"maxLossPercent": json.RawMessage("null")}},
		{name: "twenty conditions", changes: map[string]any{"exitConditions": condList(20, okCond())}},

		{name: "lower-case side", changes: map[string]any{"side": "up"}, code: CodeInvalidSide, field: "side",
			message: `side "up" is not one of UP, DOWN (values are case-sensitive: use "UP")`},
		{name: "unknown side", changes: map[string]any{"side": "LONG"}, code: CodeInvalidSide, field: "side",
			message: `side "LONG" is not one of UP, DOWN`},
		{name: "missing side", changes: map[string]any{"side": nil}, code: CodeInvalidSide, field: "side",
			message: `side is missing: it must be one of UP, DOWN`},
		{name: "unknown field", changes: map[string]any{"exitConditions": []any{map[string]any{"field": "volume", "operator": "<", "value": 1}}},
			code: CodeInvalidField, field: "exitConditions[0].field",
			message: `exitConditions[0].field "volume" is not one of price_up, price_down, coin_price, spread, time_remaining_pct, bid_up, bid_down, mid_up, mid_down, display_up, display_down, coin_move_pct, time_remaining_s, coin_return_60s, imbalance_up, imbalance_down`},
		{name: "missing field", changes: map[string]any{"exitConditions": []any{map[string]any{"operator": "<", "value": 1}}},
			code: CodeInvalidField, field: "exitConditions[0].field"},
		{name: "unknown operator", changes: map[string]any{"entryConditions": badOp}, code: CodeInvalidOperator, field: "entryConditions[1].operator",
			message: `entryConditions[1].operator "=>" is not one of <, >, <=, >=, ==, crosses_above, crosses_below`},
		{name: "upper-case operator", changes: map[string]any{"entryConditions": []any{map[string]any{"field": "price_up", "operator": "CROSSES_ABOVE", "value": 1}}},
			code: CodeInvalidOperator, field: "entryConditions[0].operator",
			message: `entryConditions[0].operator "CROSSES_ABOVE" is not one of <, >, <=, >=, ==, crosses_above, crosses_below (values are case-sensitive: use "crosses_above")`},
		{name: "lower-case orderType", changes: map[string]any{"orderType": "market"}, code: CodeInvalidOrderType, field: "orderType",
			message: `orderType "market" is not one of MARKET, LIMIT, GTC (values are case-sensitive: use "MARKET")`},
		{name: "missing positionSize", changes: map[string]any{"positionSize": nil}, code: CodeValidation, field: "positionSize",
			message: "positionSize is missing or 0: it must be between 1 and 10000 shares"},
		{name: "positionSize too large", changes: map[string]any{"positionSize": 10001}, code: CodeValidation, field: "positionSize",
			message: "positionSize 10001 is out of range: it must be between 1 and 10000 shares"},
		{name: "positionSize under 1", changes: map[string]any{"positionSize": 0.5}, code: CodeValidation, field: "positionSize"},
		{name: "negative positionSize", changes: map[string]any{"positionSize": -5}, code: CodeValidation, field: "positionSize"},
		{name: "explicit maxLossPercent 0", changes: map[string]any{"maxLossPercent": 0}, code: CodeValidation, field: "maxLossPercent",
			message: "maxLossPercent 0 is out of range: it must be between 1 and 100, or left out for the default 50"},
		{name: "maxLossPercent over 100", changes: map[string]any{"maxLossPercent": 100.5}, code: CodeValidation, field: "maxLossPercent"},
		{name: "empty entryConditions", changes: map[string]any{"entryConditions": []any{}}, code: CodeValidation, field: "entryConditions",
			message: "entryConditions is empty: give at least one condition"},
		{name: "missing exitConditions", changes: map[string]any{"exitConditions": nil}, code: CodeValidation, field: "exitConditions"},
		{name: "too many conditions", changes: map[string]any{"entryConditions": condList(21, okCond())}, code: CodeValidation, field: "entryConditions",
			message: "entryConditions has 21 conditions: at most 20 are allowed"},
		{name: "missing marketSlug", changes: map[string]any{"marketSlug": nil}, code: CodeValidation, field: "marketSlug"},

		// Precedence: by code first (INVALID_SIDE, INVALID_FIELD,
		// INVALID_OPERATOR, INVALID_ORDER_TYPE, VALIDATION_ERROR), then body order.
		{name: "side before everything", changes: map[string]any{"marketSlug": nil, "side": "up", "positionSize": 0,
			"entryConditions": badOp, "orderType": "x"}, code: CodeInvalidSide, field: "side"},
		{name: "field before operator", changes: map[string]any{"entryConditions": badOp,
			"exitConditions": []any{map[string]any{"field": "volume", "operator": "<", "value": 1}}}, code: CodeInvalidField, field: "exitConditions[0].field"},
		{name: "field before operator in one condition", changes: map[string]any{
			"entryConditions": []any{map[string]any{"field": "x", "operator": "y", "value": 1}}}, code: CodeInvalidField, field: "entryConditions[0].field"},
		{name: "operator before orderType", changes: map[string]any{"entryConditions": badOp, "orderType": "STOP"}, code: CodeInvalidOperator},
		{name: "orderType before VALIDATION_ERROR", changes: map[string]any{"exitConditions": []any{}, "positionSize": 0, "orderType": "STOP"},
			code: CodeInvalidOrderType},
		{name: "first in body order within a code", changes: map[string]any{"entryConditions": badOp,
			"exitConditions": []any{map[string]any{"field": "price_up", "operator": "!=", "value": 1}}}, code: CodeInvalidOperator, field: "entryConditions[1].operator"},
		{name: "marketSlug first among VALIDATION_ERRORs", changes: map[string]any{"marketSlug": nil, "positionSize": 0}, code: CodeValidation, field: "marketSlug"},
		{name: "entry list before positionSize", changes: map[string]any{"entryConditions": []any{}, "positionSize": 0}, code: CodeValidation, field: "entryConditions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Request
			if err := json.Unmarshal(body(t, tt.changes), &r); err != nil {
				t.Fatal(err)
			}
			err := r.Normalize()
			if tt.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *Error", err, err)
			}
			if e.Code != tt.code || (tt.field != "" && e.Field != tt.field) {
				t.Errorf("got %s at %q (%s), want %s at %q", e.Code, e.Field, e.Message, tt.code, tt.field)
			}
			if tt.message != "" && e.Message != tt.message {
				t.Errorf("message\n got %s\nwant %s", e.Message, tt.message)
			}
		})
	}
}

func TestValidateNonFinite(t *testing.T) {
	t.Parallel()
	base := strategy(SideUp, 10, conds(cond(FieldPriceUp, OpLess, 0.5)), never())
	tests := []struct {
		name  string
		edit  func(*Strategy)
		field string
	}{
		{"NaN value", func(s *Strategy) { s.EntryConditions = conds(cond(FieldPriceUp, OpLess, math.NaN())) }, "entryConditions[0].value"},
		{"Inf positionSize", func(s *Strategy) { s.PositionSize = math.Inf(1) }, "positionSize"},
		{"NaN maxLossPercent", func(s *Strategy) { s.MaxLossPercent = math.NaN() }, "maxLossPercent"},
	}
	for _, tt := range tests {
		s := base
		tt.edit(&s)
		var e *Error
		err := s.Normalize()
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != tt.field || err.Error() != e.Message {
			t.Errorf("%s: got %v, want VALIDATION_ERROR at %s", tt.name, err, tt.field)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	var r Request
	if err := json.Unmarshal([]byte(validBody), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	if r.MarketSlug != "btc-updown-5m-1735732800" || r.MaxLossPercent != DefaultMaxLossPercent || r.OrderType != OrderMarket {
		t.Fatalf("defaults not applied: %+v", r)
	}
	again := r
	if err := again.Normalize(); err != nil || !reflect.DeepEqual(again, r) {
		t.Errorf("normalizing twice changed %+v into %+v (%v)", r, again, err)
	}

	// A normalized strategy compares equal however it was made: decoded with
	// an explicit maxLossPercent, or built in Go.
	var decoded Strategy
	if err := json.Unmarshal([]byte(`{"side":"DOWN","entryConditions":[{"field":"spread","operator":"==","value":-0}],
		"exitConditions":[{"field":"coin_price","operator":"crosses_below","value":95000}],"positionSize":5,"maxLossPercent":25}`), &decoded); err != nil {
		t.Fatal(err)
	}
	built := Strategy{Side: SideDown, PositionSize: 5, MaxLossPercent: 25,
		EntryConditions: conds(cond(FieldSpread, OpEqual, 0)),
		ExitConditions:  conds(cond(FieldCoinPrice, OpCrossesBelow, 95000))}
	for _, s := range []*Strategy{&decoded, &built} {
		if err := s.Normalize(); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(decoded, built) {
		t.Errorf("decoded %+v\n  built %+v", decoded, built)
	}
	if math.Signbit(decoded.EntryConditions[0].Value) {
		t.Error("-0 survived Normalize")
	}

	// Normalize copies the condition slices.
	orig := strategy(SideUp, 1, conds(cond(FieldPriceUp, OpLess, 0.5)), never())
	n := orig
	if err := n.Normalize(); err != nil {
		t.Fatal(err)
	}
	n.EntryConditions[0].Value = 0.9
	if orig.EntryConditions[0].Value != 0.5 {
		t.Error("Normalize shares the condition slice with its input")
	}
}

// TestRequestJSON checks the wire shape both ways: marketSlug and the
// strategy's fields side by side, and a normalized request round-trips.
func TestRequestJSON(t *testing.T) {
	t.Parallel()
	var r Request
	if err := json.Unmarshal([]byte(validBody), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<" legible; the escaped form decodes the same
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	b := []byte(strings.TrimSpace(buf.String()))
	const want = `{"marketSlug":"btc-updown-5m-1735732800","side":"UP",` +
		`"entryConditions":[{"field":"price_up","operator":"<","value":0.35},{"field":"time_remaining_pct","operator":">","value":20}],` +
		`"exitConditions":[{"field":"price_up","operator":">=","value":0.6}],"positionSize":100,"maxLossPercent":50,"orderType":"MARKET"}`
	if string(b) != want {
		t.Errorf("encoded\n got %s\nwant %s", b, want)
	}
	var back Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Normalize(); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("round trip gave %+v (%v), want %+v", back, err, r)
	}
	for body, field := range map[string]string{
		`{"side":5}`:                               "side",
		`{"positionSize":"10"}`:                    "positionSize",
		`{"exitConditions":[{"value":"0.5"}]}`:     "exitConditions[0].value",
		`{"marketSlug":1,"maxLossPercent":"high"}`: "marketSlug",
	} {
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(body), &back); !errors.As(err, &te) || te.Field != field {
			t.Errorf("%s: %v, want a type error at %s", body, err, field)
		}
	}
}

func TestAllowedValues(t *testing.T) {
	t.Parallel()
	for _, f := range Fields() {
		for _, op := range Operators() {
			s := strategy(SideUp, 1, conds(cond(f, op, 1)), never())
			if err := s.Validate(); err != nil {
				t.Errorf("%s %s: %v", f, op, err)
			}
		}
	}
	for _, side := range Sides() {
		for _, ot := range OrderTypes() {
			s := strategy(side, 1, never(), never())
			s.OrderType = ot
			if err := s.Validate(); err != nil {
				t.Errorf("%s %s: %v", side, ot, err)
			}
		}
	}
	Fields()[0] = "mutated"
	if Fields()[0] != FieldPriceUp {
		t.Error("Fields returns shared state")
	}
	if got := strings.Join(Operators(), " "); got != "< > <= >= == crosses_above crosses_below" {
		t.Errorf("Operators() = %s", got)
	}
}

// TestRequestCosts checks feeModel, feeRate, feeExponent and latencyMs
// (DESIGN 6): each problem is a VALIDATION_ERROR naming its field.
func TestRequestCosts(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name    string
		changes map[string]any
		field   string // "" for valid
		message string // checked when set
	}{
		{name: "MARKET with latency", changes: map[string]any{"feeModel": "MARKET", "latencyMs": 250}},
		{name: "NONE", changes: map[string]any{"feeModel": "NONE"}},
		{name: "CUSTOM with a rate", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0.07}},
		{name: "CUSTOM bounds", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 1, "feeExponent": 4, "latencyMs": 60000}},
		{name: "CUSTOM zero rate", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0, "feeExponent": 1}},
		{name: "integral floats", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0.5, "feeExponent": raw("2.0"), "latencyMs": raw("250.0")}},
		{name: "null latency", changes: map[string]any{"latencyMs": raw("null")}},

		{name: "unknown model", changes: map[string]any{"feeModel": "POLYMARKET"}, field: "feeModel",
			message: `feeModel "POLYMARKET" is not one of NONE, MARKET, CUSTOM`},
		{name: "lower-case model", changes: map[string]any{"feeModel": "market"}, field: "feeModel",
			message: `feeModel "market" is not one of NONE, MARKET, CUSTOM (values are case-sensitive: use "MARKET")`},
		{name: "CUSTOM without a rate", changes: map[string]any{"feeModel": "CUSTOM"}, field: "feeRate"},
		{name: "rate over 1", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 1.5}, field: "feeRate",
			message: "feeRate 1.5 is out of range: it must be between 0 and 1 (0.07 is Polymarket's crypto rate)"},
		{name: "negative rate", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": -0.01}, field: "feeRate"},
		{name: "rate with MARKET", changes: map[string]any{"feeModel": "MARKET", "feeRate": 0.07}, field: "feeRate",
			message: "feeRate applies only with feeModel CUSTOM (MARKET takes the market's own rate)"},
		{name: "rate without a model", changes: map[string]any{"feeRate": 0.07}, field: "feeRate"},
		{name: "exponent with NONE", changes: map[string]any{"feeModel": "NONE", "feeExponent": 1}, field: "feeExponent"},
		{name: "exponent 0", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0.1, "feeExponent": 0}, field: "feeExponent",
			message: "feeExponent 0 is not allowed: it must be a whole number from 1 to 4, or left out for the default 1"},
		{name: "exponent 5", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0.1, "feeExponent": 5}, field: "feeExponent"},
		{name: "fractional exponent", changes: map[string]any{"feeModel": "CUSTOM", "feeRate": 0.1, "feeExponent": 1.5}, field: "feeExponent"},
		{name: "negative latency", changes: map[string]any{"latencyMs": -1}, field: "latencyMs",
			message: "latencyMs -1 is not allowed: it must be a whole number of milliseconds from 0 to 60000"},
		{name: "latency over a minute", changes: map[string]any{"latencyMs": 60001}, field: "latencyMs"},
		{name: "fractional latency", changes: map[string]any{"latencyMs": 2.5}, field: "latencyMs"},
		{name: "huge latency", changes: map[string]any{"latencyMs": 1e300}, field: "latencyMs"},
		{name: "condition without value", changes: map[string]any{"exitConditions": []any{map[string]any{"field": "price_up", "operator": "<"}}},
			field: "exitConditions[0].value", message: "exitConditions[0].value is missing: give the number the field is compared with"},
		{name: "condition with null value", changes: map[string]any{"entryConditions": []any{okCond(), map[string]any{"field": "price_up", "operator": "<", "value": nil}}},
			field: "entryConditions[1].value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := body(t, tt.changes)
			var r Request
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			err := r.Normalize()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				again := r
				if err := again.Normalize(); err != nil || !reflect.DeepEqual(again, r) {
					t.Errorf("normalizing twice: %+v, %v", again, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != tt.field {
				t.Fatalf("got %v, want VALIDATION_ERROR at %s", err, tt.field)
			}
			if tt.message != "" && e.Message != tt.message {
				t.Errorf("message\n got %s\nwant %s", e.Message, tt.message)
			}
		})
	}
}

// TestNormalizeCosts pins the canonical form: CUSTOM gets exponent 1, an
// explicit latency of 0 is the same request as none.
func TestNormalizeCosts(t *testing.T) {
	t.Parallel()
	var a, b Request
	if err := json.Unmarshal(body(t, map[string]any{"feeModel": "CUSTOM", "feeRate": 0.07, "latencyMs": 0}), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body(t, map[string]any{"feeModel": "CUSTOM", "feeRate": 0.07, "feeExponent": 1}), &b); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Request{&a, &b} {
		if err := r.Normalize(); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, b) || a.FeeExponent != 1 || *a.FeeRate != 0.07 {
		t.Errorf("%+v\n%+v", a, b)
	}
	got, _ := json.Marshal(a)
	if !strings.Contains(string(got), `"feeModel":"CUSTOM","feeRate":0.07,"feeExponent":1}`) {
		t.Errorf("encoded %s", got)
	}
}

// TestUnknownKeys: a key the request does not have is a VALIDATION_ERROR
// naming it, at the top or in a condition (issue 16, item 14).
func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, field string
	}{
		{`{"marketSlug":"x","side":"UP","foo":1}`, "foo"},
		{`{"marketSlug":"x","maxLossPct":5,"side":"UP"}`, "maxLossPct"},
		{`{"side":"UP","entryConditions":[{"field":"price_up","operator":"<","val":0.6}]}`, "entryConditions[0].val"},
		{`{"side":"UP","exitConditions":[{"field":"price_up","operator":"<","value":0.6},{"field":"price_up","operator":"<","value":0.6,"x":{}}]}`, "exitConditions[1].x"},
	}
	for _, tt := range tests {
		var r Request
		err := json.Unmarshal([]byte(tt.body), &r)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != tt.field || !strings.Contains(e.Message, "unknown field") {
			t.Errorf("%s: got %v, want VALIDATION_ERROR at %s", tt.body, err, tt.field)
		}
	}
	// Keys match without regard to case, as encoding/json reads them.
	var r Request
	if err := json.Unmarshal([]byte(`{"MarketSlug":"x","SIDE":"UP"}`), &r); err != nil || r.MarketSlug != "x" || r.Side != "UP" {
		t.Errorf("case-insensitive keys: %+v, %v", r, err)
	}
	// A strategy inside another object may carry that object's keys.
	if _, err := DecodeStrategy([]byte(`{"side":"UP","coin":"BTC"}`), "coin"); err != nil {
		t.Errorf("DecodeStrategy with other keys: %v", err)
	}
	if _, err := DecodeStrategy([]byte(`{"side":"UP","coin":"BTC"}`)); err == nil {
		t.Error("DecodeStrategy took a key it was not told of")
	}
}
