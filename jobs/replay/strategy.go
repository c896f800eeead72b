package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/updown/updown/store"
)

// Sides and order types as the wire spells them. They are case-sensitive:
// SPEC names exactly these values, and accepting "up" would give two
// spellings of one request (and two cache keys for one replay).
const (
	SideUp   = "UP"
	SideDown = "DOWN"

	OrderMarket = "MARKET"
	OrderLimit  = "LIMIT"
	// OrderGTC is a maker order that rests on the book until it fills, is
	// cancelled or the market ends (DESIGN 6, "Resting orders").
	OrderGTC = "GTC"
)

// Queue models of a resting order (DESIGN 6): RISK_AVERSE puts it behind
// the size displayed at its price when it activates; FRONT at the front
// of the queue, the optimistic bound.
const (
	QueueRiskAverse = "RISK_AVERSE"
	QueueFront      = "FRONT"
)

// Fee models (DESIGN 6): no fees, the market's recorded taker fee
// schedule, or the request's own rate and exponent.
const (
	FeeNone   = "NONE"
	FeeMarket = "MARKET"
	FeeCustom = "CUSTOM"
)

// Condition fields (SPEC 2.6).
const (
	FieldPriceUp          = "price_up"
	FieldPriceDown        = "price_down"
	FieldCoinPrice        = "coin_price"
	FieldSpread           = "spread"
	FieldTimeRemainingPct = "time_remaining_pct"

	// Fields beyond SPEC's five (DESIGN 6).
	FieldBidUp         = "bid_up"
	FieldBidDown       = "bid_down"
	FieldMidUp         = "mid_up"
	FieldMidDown       = "mid_down"
	FieldDisplayUp     = "display_up"
	FieldDisplayDown   = "display_down"
	FieldCoinMovePct   = "coin_move_pct"
	FieldTimeRemaining = "time_remaining_s"
	FieldCoinReturn60s = "coin_return_60s"
	FieldImbalanceUp   = "imbalance_up"
	FieldImbalanceDown = "imbalance_down"
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

	// Fees and latency (DESIGN 6).
	MinFeeRate         = 0
	MaxFeeRate         = 1
	MinFeeExponent     = 1
	MaxFeeExponent     = 4
	DefaultFeeExponent = 1
	// UsualMinOrderSize is Polymarket's minimum order on its up/down
	// markets, in shares (REFERENCE), which a replay measures positionSize
	// against where the market has no minimum recorded.
	UsualMinOrderSize = 5
	MaxLatencyMs      = 60_000

	// Re-entry control and resting orders (DESIGN 6).
	MaxReentryCooldownMs   = 86_400_000
	MaxEntriesPerMarketCap = 10_000
	MaxLimitOffsetTicks    = 50
	MaxCancelAfterMs       = 86_400_000
)

// Sides returns the allowed values of side, in a new slice the caller may keep.
func Sides() []string { return []string{SideUp, SideDown} }

// OrderTypes returns the allowed values of orderType.
func OrderTypes() []string { return []string{OrderMarket, OrderLimit, OrderGTC} }

// QueueModels returns the allowed values of queueModel.
func QueueModels() []string { return []string{QueueRiskAverse, QueueFront} }

// FeeModels returns the allowed values of feeModel.
func FeeModels() []string { return []string{FeeNone, FeeMarket, FeeCustom} }

// Fields returns the allowed values of a condition's field, in SPEC order.
func Fields() []string {
	return []string{FieldPriceUp, FieldPriceDown, FieldCoinPrice, FieldSpread, FieldTimeRemainingPct,
		FieldBidUp, FieldBidDown, FieldMidUp, FieldMidDown, FieldDisplayUp, FieldDisplayDown,
		FieldCoinMovePct, FieldTimeRemaining, FieldCoinReturn60s, FieldImbalanceUp, FieldImbalanceDown}
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

	// noValue records that a decoded condition had no value, or null: it
	// is refused by name rather than read as 0.
	noValue bool
}

// Strategy is the replay request without its market: what to buy, when to
// enter and exit, and how to fill. It is also the agent's generated_strategy.
//
// The zero MaxLossPercent and OrderType mean "not given"; Normalize replaces
// them with the defaults. A JSON body that states maxLossPercent explicitly
// as 0 is rejected instead, because a client sending 0 most likely means "no
// stop loss" and silently getting 50% would surprise them.
//
// FeeModel "" means none was asked for: the replay charges no fee and its
// answer carries no fee fields, exactly as before fees existed. "NONE" asks
// for no fees explicitly, and the answer shows every fee as 0. FeeRate and
// FeeExponent belong to CUSTOM only (Normalize sets the exponent's default
// 1 there). LatencyMs 0 is no delay.
type Strategy struct {
	Side            string      `json:"side"`
	EntryConditions []Condition `json:"entryConditions"`
	ExitConditions  []Condition `json:"exitConditions"`
	PositionSize    float64     `json:"positionSize"`
	MaxLossPercent  float64     `json:"maxLossPercent,omitempty"`
	OrderType       string      `json:"orderType,omitempty"`
	FeeModel        string      `json:"feeModel,omitempty"`
	FeeRate         *float64    `json:"feeRate,omitempty"`
	FeeExponent     int         `json:"feeExponent,omitempty"`
	LatencyMs       int         `json:"latencyMs,omitempty"`

	// Re-entry control (DESIGN 6): an entry may be decided only
	// ReentryCooldownMs after the last exit, and at most
	// MaxEntriesPerMarket entries happen (0: no limit).
	ReentryCooldownMs   int `json:"reentryCooldownMs,omitempty"`
	MaxEntriesPerMarket int `json:"maxEntriesPerMarket,omitempty"`

	// Resting orders (orderType GTC only). QueueModel is RISK_AVERSE once
	// normalized; CancelAfterMs 0 rests until filled or the market ends.
	PostOnly         bool   `json:"postOnly,omitempty"`
	LimitOffsetTicks int    `json:"limitOffsetTicks,omitempty"`
	CancelAfterMs    int    `json:"cancelAfterMs,omitempty"`
	QueueModel       string `json:"queueModel,omitempty"`
	// IncludeRebates counts estimated maker rebates in the pnl (GTC only:
	// only maker fills earn them).
	IncludeRebates bool `json:"includeRebates,omitempty"`

	// maxLossGiven records that a decoded body carried maxLossPercent, so
	// that an explicit 0 can be told from an absent field. rawExponent and
	// rawLatency hold the numbers a decoded body gave for feeExponent and
	// latencyMs, so that 1.5, 0 or 1e12 is refused by name rather than
	// truncated into an int. Normalize clears them, so normalized
	// strategies compare equal however they were made.
	maxLossGiven            bool
	rawExponent, rawLatency *float64
	// The numbers a decoded body gave for the integer rules below, and
	// whether it named postOnly at all (false with MARKET is refused too).
	rawCooldown, rawMaxEntries, rawOffset, rawCancel *float64
	postOnlyGiven                                    bool
}

// strategyKeys are the JSON keys of a Strategy; conditionKeys those of a
// Condition.
var (
	strategyKeys = []string{"side", "entryConditions", "exitConditions", "positionSize", "maxLossPercent", "orderType",
		"feeModel", "feeRate", "feeExponent", "latencyMs", "reentryCooldownMs", "maxEntriesPerMarket",
		"postOnly", "limitOffsetTicks", "cancelAfterMs", "queueModel", "includeRebates"}
	conditionKeys = []string{"field", "operator", "value"}
)

// UnmarshalJSON decodes a strategy object (see DecodeStrategy).
func (s *Strategy) UnmarshalJSON(b []byte) error {
	st, err := DecodeStrategy(b)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// DecodeStrategy decodes the JSON object b as a strategy. The object may
// also carry the keys named in other (those of an object the strategy is
// part of, such as a request's marketSlug); any other key, at the top or in
// a condition, is an *Error with code VALIDATION_ERROR naming it. Type
// errors are *json.UnmarshalTypeError with the JSON path of the value
// ("entryConditions[1].value"). It remembers what Validate needs to tell
// an absent value from an explicit one.
func DecodeStrategy(b []byte, other ...string) (Strategy, error) {
	if string(bytes.TrimSpace(b)) == "null" {
		return Strategy{}, nil
	}
	if err := CheckKeys(b, "", strategyKeys, other); err != nil {
		return Strategy{}, err
	}
	var w struct {
		Side            string            `json:"side"`
		EntryConditions []json.RawMessage `json:"entryConditions"`
		ExitConditions  []json.RawMessage `json:"exitConditions"`
		PositionSize    float64           `json:"positionSize"`
		MaxLossPercent  *float64          `json:"maxLossPercent"`
		OrderType       string            `json:"orderType"`
		FeeModel        string            `json:"feeModel"`
		FeeRate         *float64          `json:"feeRate"`
		FeeExponent     *float64          `json:"feeExponent"`
		LatencyMs       *float64          `json:"latencyMs"`

		ReentryCooldownMs   *float64 `json:"reentryCooldownMs"`
		MaxEntriesPerMarket *float64 `json:"maxEntriesPerMarket"`
		PostOnly            *bool    `json:"postOnly"`
		LimitOffsetTicks    *float64 `json:"limitOffsetTicks"`
		CancelAfterMs       *float64 `json:"cancelAfterMs"`
		QueueModel          string   `json:"queueModel"`
		IncludeRebates      bool     `json:"includeRebates"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Struct = "Strategy"
		}
		return Strategy{}, err
	}
	s := Strategy{Side: w.Side, PositionSize: w.PositionSize, OrderType: w.OrderType}
	s.SetCosts(w.FeeModel, w.FeeRate, w.FeeExponent, w.LatencyMs)
	s.SetOrderRules(w.ReentryCooldownMs, w.MaxEntriesPerMarket, w.LimitOffsetTicks, w.CancelAfterMs)
	if w.PostOnly != nil {
		s.PostOnly, s.postOnlyGiven = *w.PostOnly, true
	}
	s.QueueModel, s.IncludeRebates = w.QueueModel, w.IncludeRebates
	var err error
	if s.EntryConditions, err = decodeConditions(w.EntryConditions, "entryConditions"); err != nil {
		return Strategy{}, err
	}
	if s.ExitConditions, err = decodeConditions(w.ExitConditions, "exitConditions"); err != nil {
		return Strategy{}, err
	}
	if w.MaxLossPercent != nil {
		s.MaxLossPercent, s.maxLossGiven = *w.MaxLossPercent, true
	}
	return s, nil
}

func decodeConditions(raws []json.RawMessage, name string) ([]Condition, error) {
	if raws == nil {
		return nil, nil
	}
	out := make([]Condition, len(raws))
	for i, raw := range raws {
		path := fmt.Sprintf("%s[%d]", name, i)
		if string(raw) == "null" {
			out[i].noValue = true
			continue
		}
		if err := CheckKeys(raw, path, conditionKeys, nil); err != nil {
			return nil, err
		}
		var w struct {
			Field    string   `json:"field"`
			Operator string   `json:"operator"`
			Value    *float64 `json:"value"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Struct, te.Field = "Condition", strings.TrimSuffix(path+"."+te.Field, ".")
			}
			return nil, err
		}
		out[i] = Condition{Field: w.Field, Operator: w.Operator}
		if w.Value == nil {
			out[i].noValue = true
		} else {
			out[i].Value = *w.Value
		}
	}
	return out, nil
}

// CheckKeys reports the first key of the JSON object b (in body order)
// that is neither in known nor in other, as an *Error with code
// VALIDATION_ERROR whose Field is the key's path inside path. Keys match
// without regard to case, as encoding/json matches them. Anything but an
// object is left for the decoder to judge.
func CheckKeys(b []byte, path string, known, other []string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // the decoder reports bad JSON itself
		}
		key, _ := tok.(string)
		if !hasFold(known, key) && !hasFold(other, key) {
			field := ClipEcho(key)
			if path != "" {
				field = path + "." + ClipEcho(key)
			}
			whose := "the body's"
			if path != "" {
				whose = path + "'s"
			}
			return &Error{Code: CodeValidation, Field: field,
				Message: fmt.Sprintf("unknown field %q: %s fields are %s", field, whose, strings.Join(append(append([]string{}, other...), known...), ", "))}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

func hasFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// Request is the body of POST /v1/replay (SPEC 4.2).
//
// TradesOffset and TradesLimit page through the trade events of a replay
// whose answer lists more than MaxTradeEvents (Window): a replay is a pure
// function, so each page replays the market again and lists the events
// from TradesOffset on, at most TradesLimit of them.
type Request struct {
	MarketSlug   string `json:"marketSlug"`
	TradesOffset int    `json:"tradesOffset,omitempty"`
	TradesLimit  int    `json:"tradesLimit,omitempty"`
	Strategy

	// The numbers a decoded body gave for the paging fields.
	rawTradesOffset, rawTradesLimit *float64
}

// Window is the trade events the request's answer lists.
func (r *Request) Window() TradeWindow {
	if r.TradesOffset == 0 && r.TradesLimit == 0 && r.rawTradesOffset == nil && r.rawTradesLimit == nil {
		return TradeWindow{}
	}
	w := TradeWindow{Paged: true, Offset: r.TradesOffset, Limit: r.TradesLimit}
	if w.Limit == 0 {
		w.Limit = MaxTradeEvents
	}
	return w
}

// DescriptiveKeys are the keys of the Backtest AI agent's
// generated_strategy beyond the strategy's own (coin, marketType and its
// explanation): a replay body takes them, so that generated_strategy with a
// marketSlug added replays as it is ("replay-ready rules", SPEC 2.7). They
// describe the strategy and change nothing in its replay, which runs on
// the marketSlug's market whatever coin and marketType say.
var DescriptiveKeys = []string{"coin", "marketType", "explanation"}

// RequestKeys are the keys of a replay body beside its strategy's: the
// market, the paging of its trades, and DescriptiveKeys.
var RequestKeys = append([]string{"marketSlug", "tradesOffset", "tradesLimit"}, DescriptiveKeys...)

// UnmarshalJSON decodes a request. It exists because the embedded
// Strategy's UnmarshalJSON would otherwise be promoted and decode the whole
// body into the strategy, dropping marketSlug. A key that is neither
// marketSlug nor the strategy's is an *Error naming it.
func (r *Request) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var slug struct {
		MarketSlug   string   `json:"marketSlug"`
		TradesOffset *float64 `json:"tradesOffset"`
		TradesLimit  *float64 `json:"tradesLimit"`
		// The agent's descriptive keys (DescriptiveKeys): read only so
		// that one of another type than a string is refused by name.
		Coin        *string `json:"coin"`
		MarketType  *string `json:"marketType"`
		Explanation *string `json:"explanation"`
	}
	if err := json.Unmarshal(b, &slug); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Struct = "Request"
		}
		return err
	}
	s, err := DecodeStrategy(b, RequestKeys...)
	if err != nil {
		return err
	}
	*r = Request{MarketSlug: slug.MarketSlug, Strategy: s, rawTradesOffset: slug.TradesOffset, rawTradesLimit: slug.TradesLimit}
	if v := slug.TradesOffset; v != nil && *v == math.Trunc(*v) && *v >= 0 && *v <= MaxTradesOffset {
		r.TradesOffset = int(*v)
	}
	if v := slug.TradesLimit; v != nil && *v == math.Trunc(*v) && *v >= 1 && *v <= MaxTradeEvents {
		r.TradesLimit = int(*v)
	}
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
	for _, f := range []struct {
		name   string
		v      int
		raw    *float64
		lo, hi float64
		rule   string
	}{
		{"tradesOffset", r.TradesOffset, r.rawTradesOffset, 0, MaxTradesOffset, "it must be a whole number of trade events from 0"},
		{"tradesLimit", r.TradesLimit, r.rawTradesLimit, 1, MaxTradeEvents, "it must be a whole number from 1 to 1000"},
	} {
		v, given := float64(f.v), f.v != 0
		if f.raw != nil {
			v, given = *f.raw, true
		}
		if given && (!finite(v) || v != math.Trunc(v) || v < f.lo || v > f.hi) {
			p.add(CodeValidation, f.name, "%s %s is not allowed: %s", f.name, FormatNum(v), f.rule)
		}
	}
	return p.err()
}

// Normalize validates r and applies the strategy's defaults.
func (r *Request) Normalize() error {
	if err := r.Validate(); err != nil {
		return err
	}
	r.Strategy.applyDefaults()
	if r.rawTradesOffset != nil || r.rawTradesLimit != nil {
		// An explicit window, even [0, 1000), is a page: keep it so.
		w := r.Window()
		r.TradesOffset, r.TradesLimit = w.Offset, w.Limit
	}
	r.rawTradesOffset, r.rawTradesLimit = nil, nil
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
	if v := s.rawExponent; v != nil {
		s.FeeExponent = int(*v)
	}
	if v := s.rawLatency; v != nil {
		s.LatencyMs = int(*v)
	}
	s.rawExponent, s.rawLatency = nil, nil
	for _, f := range s.wholeRules() {
		if f.raw != nil {
			*f.val = int(*f.raw)
		}
	}
	s.rawCooldown, s.rawMaxEntries, s.rawOffset, s.rawCancel, s.postOnlyGiven = nil, nil, nil, nil, false
	if s.OrderType == OrderGTC && s.QueueModel == "" {
		s.QueueModel = QueueRiskAverse
	}
	if s.FeeRate != nil {
		r := *s.FeeRate + 0 // a copy of its own, and -0 becomes 0
		s.FeeRate = &r
	}
	if s.FeeModel == FeeCustom && s.FeeExponent == 0 {
		s.FeeExponent = DefaultFeeExponent
	}
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

// Outcome is the outcome whose books the replay reads: the side's
// (store.OutcomeUp or store.OutcomeDown).
func (s *Strategy) Outcome() string {
	if s.Side == SideDown {
		return store.OutcomeDown
	}
	return store.OutcomeUp
}

// Needs is what a replay of a strategy reads beyond the tape of its side.
type Needs struct {
	// OtherBook: a condition reads the book of the outcome the strategy
	// does not trade (its bid, mid, display price or imbalance).
	OtherBook bool
	// Trades: the market's recorded trades, for display prices and for
	// the evidence that fills resting orders.
	Trades bool
}

// Needs reports what a replay of s reads beyond its side's tape.
func (s *Strategy) Needs() Needs {
	n := Needs{Trades: s.OrderType == OrderGTC}
	for _, cs := range [][]Condition{s.EntryConditions, s.ExitConditions} {
		for _, c := range cs {
			f, _ := parseField(c.Field)
			if bookOf(f) != 0 && (bookOf(f) == bookUp) != (s.Side != SideDown) {
				n.OtherBook = true
			}
			if f == fDisplayUp || f == fDisplayDown {
				n.Trades = true
			}
		}
	}
	return n
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
		p.add(CodeValidation, "positionSize", "positionSize %s is out of range: "+sizeRule, FormatNum(ps))
	}

	const lossRule = "it must be between 1 and 100, or left out for the default 50"
	switch ml := s.MaxLossPercent; {
	case !finite(ml):
		p.add(CodeValidation, "maxLossPercent", "maxLossPercent is not a finite number: "+lossRule)
	case ml == 0 && !s.maxLossGiven:
		// absent: the default applies
	case ml < MinMaxLossPercent || ml > MaxMaxLossPercent:
		p.add(CodeValidation, "maxLossPercent", "maxLossPercent %s is out of range: "+lossRule, FormatNum(ml))
	}

	switch s.OrderType {
	case "", OrderMarket, OrderLimit, OrderGTC:
	default:
		p.add(CodeInvalidOrderType, "orderType", "orderType %q is not one of MARKET, LIMIT, GTC%s", s.OrderType, caseHint(s.OrderType, OrderTypes()))
	}
	s.checkCosts(p)
	s.checkOrderRules(p)
}

// SetOrderRules sets the integer rules of re-entry and resting orders as a
// request states them (nil for absent), so that Validate judges 1.5 or
// 1e12 by name as it does for a decoded body.
func (s *Strategy) SetOrderRules(reentryCooldownMs, maxEntriesPerMarket, limitOffsetTicks, cancelAfterMs *float64) {
	s.rawCooldown, s.rawMaxEntries, s.rawOffset, s.rawCancel = reentryCooldownMs, maxEntriesPerMarket, limitOffsetTicks, cancelAfterMs
	for _, f := range s.wholeRules() {
		*f.val = 0
		if v := f.raw; v != nil && *v == math.Trunc(*v) && *v >= f.lo && *v <= f.hi {
			*f.val = int(*v)
		}
	}
}

// wholeRule is an integer field of the strategy with its bounds and the
// number a decoded body gave for it.
type wholeRule struct {
	name   string
	val    *int
	raw    *float64
	lo, hi float64
	gtc    bool // allowed with orderType GTC only
	rule   string
}

func (s *Strategy) wholeRules() []wholeRule {
	return []wholeRule{
		{"reentryCooldownMs", &s.ReentryCooldownMs, s.rawCooldown, 0, MaxReentryCooldownMs, false,
			"it must be a whole number of milliseconds from 0 to 86400000 (a day)"},
		{"maxEntriesPerMarket", &s.MaxEntriesPerMarket, s.rawMaxEntries, 1, MaxEntriesPerMarketCap, false,
			"it must be a whole number from 1 to 10000, or left out for no limit"},
		{"limitOffsetTicks", &s.LimitOffsetTicks, s.rawOffset, 0, MaxLimitOffsetTicks, true,
			"it must be a whole number of ticks from 0 to 50"},
		{"cancelAfterMs", &s.CancelAfterMs, s.rawCancel, 1, MaxCancelAfterMs, true,
			"it must be a whole number of milliseconds from 1 to 86400000, or left out to rest until filled or the market ends"},
	}
}

// checkOrderRules checks re-entry control and the resting-order fields
// (DESIGN 6): each in range, and the resting-order fields with GTC only.
func (s *Strategy) checkOrderRules(p *problems) {
	gtc := s.OrderType == OrderGTC
	known := s.OrderType == "" || s.OrderType == OrderMarket || s.OrderType == OrderLimit || gtc
	for _, f := range s.wholeRules() {
		v, given := float64(*f.val), *f.val != 0
		if f.raw != nil {
			v, given = *f.raw, true
		}
		switch {
		case !given:
		case f.gtc && known && !gtc:
			p.add(CodeValidation, f.name, "%s applies only with orderType GTC (a resting order); %s", f.name, orderTypeNamed(s.OrderType))
		case !finite(v) || v != math.Trunc(v) || v < f.lo || v > f.hi:
			p.add(CodeValidation, f.name, "%s %s is not allowed: %s", f.name, FormatNum(v), f.rule)
		}
		if f.name == "maxEntriesPerMarket" && (s.PostOnly || s.postOnlyGiven) && known && !gtc {
			// postOnly comes between maxEntriesPerMarket and
			// limitOffsetTicks in body order.
			p.add(CodeValidation, "postOnly", "postOnly applies only with orderType GTC (a resting order); %s", orderTypeNamed(s.OrderType))
		}
	}
	switch {
	case s.QueueModel == "":
	case known && !gtc:
		p.add(CodeValidation, "queueModel", "queueModel applies only with orderType GTC (a resting order); %s", orderTypeNamed(s.OrderType))
	case s.QueueModel != QueueRiskAverse && s.QueueModel != QueueFront:
		p.add(CodeValidation, "queueModel", "queueModel %q is not one of RISK_AVERSE, FRONT%s", s.QueueModel, caseHint(s.QueueModel, QueueModels()))
	}
	if s.IncludeRebates && known && !gtc {
		// Only a resting order's maker fills earn rebates: with MARKET or
		// LIMIT every fill is a taker's, and the pnl asked for would be
		// the pnl without them. (false is what every taker order has.)
		p.add(CodeValidation, "includeRebates", "includeRebates applies only with orderType GTC (a resting order: only maker fills earn rebates); %s", orderTypeNamed(s.OrderType))
	}
}

func orderTypeNamed(t string) string {
	if t == "" {
		return "this request's orderType is MARKET (the default)"
	}
	return fmt.Sprintf("this request's orderType is %s", t)
}

// SetCosts sets the fee model and latency as a request states them: the
// numbers as given (nil for absent), so that Validate judges 1.5 or 1e12
// by name as it does for a decoded body. A nil rate clears the rate.
func (s *Strategy) SetCosts(model string, rate, exponent, latencyMs *float64) {
	s.FeeModel, s.FeeRate = model, rate
	s.FeeExponent, s.LatencyMs, s.rawExponent, s.rawLatency = 0, 0, exponent, latencyMs
	if v := exponent; v != nil && *v == math.Trunc(*v) && *v >= MinFeeExponent && *v <= MaxFeeExponent {
		s.FeeExponent = int(*v)
	}
	if v := latencyMs; v != nil && *v == math.Trunc(*v) && *v >= 0 && *v <= MaxLatencyMs {
		s.LatencyMs = int(*v)
	}
}

// CheckCosts reports the first problem with the fee model and latency
// alone, as an *Error, or nil.
func (s *Strategy) CheckCosts() error {
	var p problems
	s.checkCosts(&p)
	return p.err()
}

// checkCosts checks the fee model and the latency (DESIGN 6).
func (s *Strategy) checkCosts(p *problems) {
	custom := s.FeeModel == FeeCustom
	switch s.FeeModel {
	case "", FeeNone, FeeMarket, FeeCustom:
	default:
		p.add(CodeValidation, "feeModel", "feeModel %q is not one of NONE, MARKET, CUSTOM%s", s.FeeModel, caseHint(s.FeeModel, FeeModels()))
		custom = true // judge feeRate and feeExponent on their own
	}

	const rateRule = "it must be between 0 and 1 (0.07 is Polymarket's crypto rate)"
	switch r := s.FeeRate; {
	case r != nil && !custom:
		p.add(CodeValidation, "feeRate", "feeRate applies only with feeModel CUSTOM (MARKET takes the market's own rate)")
	case r == nil && s.FeeModel == FeeCustom:
		p.add(CodeValidation, "feeRate", "feeRate is missing: feeModel CUSTOM needs a rate; "+rateRule)
	case r == nil:
	case !finite(*r) || *r < MinFeeRate || *r > MaxFeeRate:
		p.add(CodeValidation, "feeRate", "feeRate %s is out of range: "+rateRule, FormatNum(*r))
	}

	const expRule = "it must be a whole number from 1 to 4, or left out for the default 1"
	exp, given := float64(s.FeeExponent), s.FeeExponent != 0
	if s.rawExponent != nil {
		exp, given = *s.rawExponent, true
	}
	switch {
	case !given:
	case !custom:
		p.add(CodeValidation, "feeExponent", "feeExponent applies only with feeModel CUSTOM (MARKET takes the market's own exponent)")
	case !finite(exp) || exp != math.Trunc(exp) || exp < MinFeeExponent || exp > MaxFeeExponent:
		p.add(CodeValidation, "feeExponent", "feeExponent %s is not allowed: "+expRule, FormatNum(exp))
	}

	const latencyRule = "it must be a whole number of milliseconds from 0 to 60000"
	lat := float64(s.LatencyMs)
	if s.rawLatency != nil {
		lat = *s.rawLatency
	}
	if !finite(lat) || lat != math.Trunc(lat) || lat < 0 || lat > MaxLatencyMs {
		p.add(CodeValidation, "latencyMs", "latencyMs %s is not allowed: "+latencyRule, FormatNum(lat))
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
				p.add(CodeInvalidField, path, "%s %q is not one of %s%s", path, ClipEcho(c.Field), strings.Join(Fields(), ", "), caseHint(c.Field, Fields()))
			}
		}
		if _, ok := parseOperator(c.Operator); !ok {
			path := fmt.Sprintf("%s[%d].operator", name, i)
			if c.Operator == "" {
				p.add(CodeInvalidOperator, path, "%s is missing: it must be one of %s", path, strings.Join(Operators(), ", "))
			} else {
				p.add(CodeInvalidOperator, path, "%s %q is not one of %s%s", path, ClipEcho(c.Operator), strings.Join(Operators(), ", "), caseHint(c.Operator, Operators()))
			}
		}
		switch path := fmt.Sprintf("%s[%d].value", name, i); {
		case c.noValue:
			p.add(CodeValidation, path, "%s is missing: give the number the field is compared with", path)
		case !finite(c.Value):
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

// FormatNum writes x as a message says it: in plain decimals (0.55, 100,
// 0.001), but with an exponent where plain decimals would run to dozens of
// digits (1e+308, 1e-07), as JavaScript writes numbers. The validation
// messages of replays, sweeps and strategy requests all write their
// numbers with it, so that one number reads the same in each; a
// strategy's code (jobs/strategy's FormatCode) writes its numbers with it
// too, a syntax its parser reads back.
func FormatNum(x float64) string {
	if a := math.Abs(x); a != 0 && (a >= 1e21 || a < 1e-6) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// field indexes a snapshot's condition values in the engine.
type field uint8

const (
	fPriceUp field = iota
	fPriceDown
	fCoinPrice
	fSpread
	fTimeRemaining
	fBidUp
	fBidDown
	fMidUp
	fMidDown
	fDisplayUp
	fDisplayDown
	fCoinMove
	fTimeRemainingS
	fCoinReturn60s
	fImbalanceUp
	fImbalanceDown
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
	case FieldBidUp:
		return fBidUp, true
	case FieldBidDown:
		return fBidDown, true
	case FieldMidUp:
		return fMidUp, true
	case FieldMidDown:
		return fMidDown, true
	case FieldDisplayUp:
		return fDisplayUp, true
	case FieldDisplayDown:
		return fDisplayDown, true
	case FieldCoinMovePct:
		return fCoinMove, true
	case FieldTimeRemaining:
		return fTimeRemainingS, true
	case FieldCoinReturn60s:
		return fCoinReturn60s, true
	case FieldImbalanceUp:
		return fImbalanceUp, true
	case FieldImbalanceDown:
		return fImbalanceDown, true
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

// JSONKind is the JSON kind a value of Go type t is read from (number,
// string, array, boolean or object), for the message of a value of the
// wrong kind (json.UnmarshalTypeError.Type).
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	}
	return "object"
}

// WithArticle is a kind as a message names it after "must be": "a
// number", "an object", "an array".
func WithArticle(kind string) string {
	if kind != "" && strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// MaxEcho is the most of a client's identifier or value an error message
// echoes (ClipEcho).
const MaxEcho = 128

// ClipEcho cuts a client's field name or value, as an error echoes it, to
// MaxEcho bytes marked with "…" (Clip): a 300 KB key is not a 300 KB
// message, and what the message says after it (the values allowed) is not
// lost to a cut of the whole.
func ClipEcho(s string) string { return Clip(s, MaxEcho) }

// Clip cuts s to at most n bytes, at a rune's start, and marks a cut with
// "…" (three bytes more: a cut s is at most n+3 bytes).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
