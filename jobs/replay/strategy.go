package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sides and order types as the wire spells them. They are case-sensitive:
// SPEC names exactly these values, and accepting "up" would give two
// spellings of one request (and two cache keys for one replay).
const (
	SideUp   = "UP"
	SideDown = "DOWN"

	OrderMarket = "MARKET"
	OrderLimit  = "LIMIT"
)

// Condition fields (SPEC 2.6).
const (
	FieldPriceUp          = "price_up"
	FieldPriceDown        = "price_down"
	FieldCoinPrice        = "coin_price"
	FieldSpread           = "spread"
	FieldTimeRemainingPct = "time_remaining_pct"
)

// Condition operators (SPEC 2.6).
const (
	OpLess           = "<"
	OpGreater        = ">"
	OpLessOrEqual    = "<="
	OpGreaterOrEqual = ">="
	OpEqual          = "=="
	OpCrossesAbove   = "crosses_above"
	OpCrossesBelow   = "crosses_below"
)

// Limits on a strategy (SPEC 4.2 and 8). MaxConditions is ours: it bounds
// the work per snapshot and no sensible strategy needs more.
const (
	MinPositionSize       = 1
	MaxPositionSize       = 10000
	MinMaxLossPercent     = 1
	MaxMaxLossPercent     = 100
	DefaultMaxLossPercent = 50
	MaxConditions         = 20
)

// Sides returns the allowed values of side, in a new slice the caller may keep.
func Sides() []string { return []string{SideUp, SideDown} }

// OrderTypes returns the allowed values of orderType.
func OrderTypes() []string { return []string{OrderMarket, OrderLimit} }

// Fields returns the allowed values of a condition's field, in SPEC order.
func Fields() []string {
	return []string{FieldPriceUp, FieldPriceDown, FieldCoinPrice, FieldSpread, FieldTimeRemainingPct}
}

// Operators returns the allowed values of a condition's operator, in SPEC order.
func Operators() []string {
	return []string{OpLess, OpGreater, OpLessOrEqual, OpGreaterOrEqual, OpEqual, OpCrossesAbove, OpCrossesBelow}
}

// Condition compares one field of a snapshot with a value.
type Condition struct {
	Field    string  `json:"field"`
	Operator string  `json:"operator"`
	Value    float64 `json:"value"`
}

// Strategy is the replay request without its market: what to buy, when to
// enter and exit, and how to fill. It is also the agent's generated_strategy.
//
// The zero MaxLossPercent and OrderType mean "not given"; Normalize replaces
// them with the defaults. A JSON body that states maxLossPercent explicitly
// as 0 is rejected instead, because a client sending 0 most likely means "no
// stop loss" and silently getting 50% would surprise them.
type Strategy struct {
	Side            string      `json:"side"`
	EntryConditions []Condition `json:"entryConditions"`
	ExitConditions  []Condition `json:"exitConditions"`
	PositionSize    float64     `json:"positionSize"`
	MaxLossPercent  float64     `json:"maxLossPercent,omitempty"`
	OrderType       string      `json:"orderType,omitempty"`

	// maxLossGiven records that a decoded body carried maxLossPercent, so
	// that an explicit 0 can be told from an absent field. Normalize clears
	// it, so normalized strategies compare equal however they were made.
	maxLossGiven bool
}

// UnmarshalJSON decodes a strategy, remembering whether maxLossPercent was
// present (see Strategy).
func (s *Strategy) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	type plain Strategy // drops the methods, so decoding does not recurse
	var w struct {
		plain
		// Shallower than plain's field of the same name, so it wins.
		MaxLossPercent *float64 `json:"maxLossPercent"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		// Name the offending value by its JSON path, not through the alias.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = strings.TrimPrefix(te.Field, "plain.")
			if te.Struct == "" {
				te.Struct = "Strategy"
			}
		}
		return err
	}
	*s = Strategy(w.plain)
	if w.MaxLossPercent != nil {
		s.MaxLossPercent, s.maxLossGiven = *w.MaxLossPercent, true
	}
	return nil
}

// Request is the body of POST /v1/replay (SPEC 4.2).
type Request struct {
	MarketSlug string `json:"marketSlug"`
	Strategy
}

// UnmarshalJSON decodes a request. It exists because the embedded
// Strategy's UnmarshalJSON would otherwise be promoted and decode the whole
// body into the strategy, dropping marketSlug. Unknown fields are ignored.
func (r *Request) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var slug struct {
		MarketSlug string `json:"marketSlug"`
	}
	if err := json.Unmarshal(b, &slug); err != nil {
		return err
	}
	var s Strategy
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = Request{MarketSlug: slug.MarketSlug, Strategy: s}
	return nil
}

// Validate reports the first problem with the strategy, as an *Error, or nil.
// It does not change s.
//
// "First" follows a fixed precedence so that the same bad request always
// gets the same answer: by code, INVALID_SIDE, INVALID_FIELD,
// INVALID_OPERATOR, INVALID_ORDER_TYPE, then VALIDATION_ERROR (SPEC 7's
// order, DESIGN 5); within a code, the first offending value in body order
// (marketSlug, side, entryConditions by index, exitConditions by index,
// positionSize, maxLossPercent, orderType).
func (s *Strategy) Validate() error {
	var p problems
	s.check(&p)
	return p.err()
}

// Normalize validates s and then applies the defaults (maxLossPercent 50,
// orderType MARKET). The condition slices are replaced by copies, so a
// normalized strategy never shares memory with the value it came from.
// Normalizing twice changes nothing.
func (s *Strategy) Normalize() error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.applyDefaults()
	return nil
}

// Validate is Strategy.Validate plus the check of marketSlug.
func (r *Request) Validate() error {
	var p problems
	if r.MarketSlug == "" {
		p.add(CodeValidation, "marketSlug", "marketSlug is missing: give the slug of a resolved market")
	}
	r.Strategy.check(&p)
	return p.err()
}

// Normalize validates r and applies the strategy's defaults.
func (r *Request) Normalize() error {
	if err := r.Validate(); err != nil {
		return err
	}
	r.Strategy.applyDefaults()
	return nil
}

// applyDefaults fills in what a valid s left out and replaces the
// condition slices by canonical copies.
func (s *Strategy) applyDefaults() {
	if s.MaxLossPercent == 0 {
		s.MaxLossPercent = DefaultMaxLossPercent
	}
	if s.OrderType == "" {
		s.OrderType = OrderMarket
	}
	s.maxLossGiven = false
	s.EntryConditions = canonicalConditions(s.EntryConditions)
	s.ExitConditions = canonicalConditions(s.ExitConditions)
}

// canonicalConditions copies cs, turning -0 into 0 so that equal strategies
// encode to equal bytes (the queue deduplicates on a hash of them).
func canonicalConditions(cs []Condition) []Condition {
	out := make([]Condition, len(cs))
	for i, c := range cs {
		if c.Value == 0 {
			c.Value = 0
		}
		out[i] = c
	}
	return out
}

// check adds every problem of s to p, in body order.
func (s *Strategy) check(p *problems) {
	switch s.Side {
	case SideUp, SideDown:
	case "":
		p.add(CodeInvalidSide, "side", "side is missing: it must be one of UP, DOWN")
	default:
		p.add(CodeInvalidSide, "side", "side %q is not one of UP, DOWN%s", s.Side, caseHint(s.Side, Sides()))
	}
	checkConditions(p, "entryConditions", s.EntryConditions)
	checkConditions(p, "exitConditions", s.ExitConditions)

	const sizeRule = "it must be between 1 and 10000 shares"
	switch ps := s.PositionSize; {
	case !finite(ps):
		p.add(CodeValidation, "positionSize", "positionSize is not a finite number: "+sizeRule)
	case ps == 0:
		p.add(CodeValidation, "positionSize", "positionSize is missing or 0: "+sizeRule)
	case ps < MinPositionSize || ps > MaxPositionSize:
		p.add(CodeValidation, "positionSize", "positionSize %s is out of range: "+sizeRule, num(ps))
	}

	const lossRule = "it must be between 1 and 100, or left out for the default 50"
	switch ml := s.MaxLossPercent; {
	case !finite(ml):
		p.add(CodeValidation, "maxLossPercent", "maxLossPercent is not a finite number: "+lossRule)
	case ml == 0 && !s.maxLossGiven:
		// absent: the default applies
	case ml < MinMaxLossPercent || ml > MaxMaxLossPercent:
		p.add(CodeValidation, "maxLossPercent", "maxLossPercent %s is out of range: "+lossRule, num(ml))
	}

	switch s.OrderType {
	case "", OrderMarket, OrderLimit:
	default:
		p.add(CodeInvalidOrderType, "orderType", "orderType %q is not one of MARKET, LIMIT%s", s.OrderType, caseHint(s.OrderType, OrderTypes()))
	}
}

func checkConditions(p *problems, name string, cs []Condition) {
	switch {
	case len(cs) == 0:
		p.add(CodeValidation, name, "%s is empty: give at least one condition", name)
	case len(cs) > MaxConditions:
		p.add(CodeValidation, name, "%s has %d conditions: at most %d are allowed", name, len(cs), MaxConditions)
	}
	for i, c := range cs {
		if _, ok := parseField(c.Field); !ok {
			path := fmt.Sprintf("%s[%d].field", name, i)
			if c.Field == "" {
				p.add(CodeInvalidField, path, "%s is missing: it must be one of %s", path, strings.Join(Fields(), ", "))
			} else {
				p.add(CodeInvalidField, path, "%s %q is not one of %s%s", path, c.Field, strings.Join(Fields(), ", "), caseHint(c.Field, Fields()))
			}
		}
		if _, ok := parseOperator(c.Operator); !ok {
			path := fmt.Sprintf("%s[%d].operator", name, i)
			if c.Operator == "" {
				p.add(CodeInvalidOperator, path, "%s is missing: it must be one of %s", path, strings.Join(Operators(), ", "))
			} else {
				p.add(CodeInvalidOperator, path, "%s %q is not one of %s%s", path, c.Operator, strings.Join(Operators(), ", "), caseHint(c.Operator, Operators()))
			}
		}
		if !finite(c.Value) {
			path := fmt.Sprintf("%s[%d].value", name, i)
			p.add(CodeValidation, path, "%s is not a finite number", path)
		}
	}
}

// caseHint says which allowed value v matches but for case, if any.
func caseHint(v string, allowed []string) string {
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return fmt.Sprintf(" (values are case-sensitive: use %q)", a)
		}
	}
	return ""
}

// problems keeps the highest-precedence problem seen; problems are added in
// body order, so among equals the first added wins.
type problems struct{ first *Error }

func (p *problems) add(code, field, format string, args ...any) {
	if p.first != nil && codeRank(p.first.Code) <= codeRank(code) {
		return
	}
	p.first = &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// err returns the kept problem; a nil *Error must not become a non-nil error.
func (p *problems) err() error {
	if p.first == nil {
		return nil
	}
	return p.first
}

// num formats x for a message: plain decimal, no exponent for everyday sizes.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// field indexes a snapshot's condition values in the engine.
type field uint8

const (
	fPriceUp field = iota
	fPriceDown
	fCoinPrice
	fSpread
	fTimeRemaining
	numFields
)

func parseField(s string) (field, bool) {
	switch s {
	case FieldPriceUp:
		return fPriceUp, true
	case FieldPriceDown:
		return fPriceDown, true
	case FieldCoinPrice:
		return fCoinPrice, true
	case FieldSpread:
		return fSpread, true
	case FieldTimeRemainingPct:
		return fTimeRemaining, true
	}
	return 0, false
}

// operator is a condition operator in the engine.
type operator uint8

const (
	opLess operator = iota
	opGreater
	opLessOrEqual
	opGreaterOrEqual
	opEqual
	opCrossesAbove
	opCrossesBelow
)

func parseOperator(s string) (operator, bool) {
	switch s {
	case OpLess:
		return opLess, true
	case OpGreater:
		return opGreater, true
	case OpLessOrEqual:
		return opLessOrEqual, true
	case OpGreaterOrEqual:
		return opGreaterOrEqual, true
	case OpEqual:
		return opEqual, true
	case OpCrossesAbove:
		return opCrossesAbove, true
	case OpCrossesBelow:
		return opCrossesBelow, true
	}
	return 0, false
}
