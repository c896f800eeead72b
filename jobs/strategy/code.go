package strategy

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/updown/updown/jobs/replay"
)

// MaxCodeLength bounds a strategy code. Twenty conditions a list fit in a
// fraction of it; the bound keeps parsing cheap whatever is sent.
const MaxCodeLength = 4096

// FormatCode writes rules as a strategy code: one readable line that
// ParseCode reads back to the same rules.
//
//	coin=BTC type=15m side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 or time_remaining_pct <= 10 size=100 maxloss=25 order=MARKET
//	side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 maxloss=50 order=MARKET fees=market latency=250
//	side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 maxloss=50 order=LIMIT fees=custom feerate=0.05 feeexp=2
//	side=UP entry: coin_move_pct >= 0.1 exit: bid_up >= 0.6 size=100 maxloss=50 order=GTC postonly=true offset=1 cancel=60000 queue=front rebates=true cooldown=30000 maxentries=3
//
// Entry conditions are joined by "and" (all must hold), exit conditions by
// "or" (any one exits), so the line reads as the engine behaves. coin= and
// type= are left out when empty. r should be normalized; numbers are
// written in the shortest form that parses back to the same float64.
func FormatCode(r Rules) string {
	var b strings.Builder
	if r.Coin != "" {
		b.WriteString("coin=" + string(r.Coin) + " ")
	}
	if r.MarketType != "" {
		b.WriteString("type=" + string(r.MarketType) + " ")
	}
	s := r.Strategy
	b.WriteString("side=" + s.Side + " entry: ")
	writeConditions(&b, s.EntryConditions, " and ")
	b.WriteString(" exit: ")
	writeConditions(&b, s.ExitConditions, " or ")
	b.WriteString(" size=" + replay.FormatNum(s.PositionSize))
	if s.MaxLossPercent != 0 {
		b.WriteString(" maxloss=" + replay.FormatNum(s.MaxLossPercent))
	}
	if s.OrderType != "" {
		b.WriteString(" order=" + s.OrderType)
	}
	if s.PostOnly {
		b.WriteString(" postonly=true")
	}
	if s.LimitOffsetTicks != 0 {
		b.WriteString(" offset=" + strconv.Itoa(s.LimitOffsetTicks))
	}
	if s.CancelAfterMs != 0 {
		b.WriteString(" cancel=" + strconv.Itoa(s.CancelAfterMs))
	}
	if s.QueueModel != "" && s.QueueModel != replay.QueueRiskAverse {
		// RISK_AVERSE is what a GTC order without queue= gets.
		b.WriteString(" queue=" + strings.ToLower(s.QueueModel))
	}
	if s.IncludeRebates {
		b.WriteString(" rebates=true")
	}
	if s.FeeModel != "" {
		b.WriteString(" fees=" + strings.ToLower(s.FeeModel))
	}
	if s.FeeRate != nil {
		b.WriteString(" feerate=" + replay.FormatNum(*s.FeeRate))
	}
	if s.FeeExponent != 0 {
		b.WriteString(" feeexp=" + strconv.Itoa(s.FeeExponent))
	}
	if s.LatencyMs != 0 {
		b.WriteString(" latency=" + strconv.Itoa(s.LatencyMs))
	}
	if s.ReentryCooldownMs != 0 {
		b.WriteString(" cooldown=" + strconv.Itoa(s.ReentryCooldownMs))
	}
	if s.MaxEntriesPerMarket != 0 {
		b.WriteString(" maxentries=" + strconv.Itoa(s.MaxEntriesPerMarket))
	}
	return b.String()
}

func writeConditions(b *strings.Builder, cs []replay.Condition, joiner string) {
	for i, c := range cs {
		if i > 0 {
			b.WriteString(joiner)
		}
		b.WriteString(c.Field + " " + c.Operator + " " + replay.FormatNum(c.Value))
	}
}

// decimal is the number syntax of a code: plain decimals with an optional
// exponent. strconv.ParseFloat alone would also take "Inf", "NaN", hex
// floats and underscores, none of which a reader of the line expects.
var decimal = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// ParseCode reads a strategy code (see FormatCode) and returns its rules,
// normalized: replay's defaults for a missing maxloss= or order=, canonical
// coin and market type (either spelling of a type is read: 1h or 1hr).
//
// The grammar, word by word (words are separated by white space):
//
//	[coin=C] [type=T] side=S entry: COND {and COND} exit: COND {or COND} size=N [maxloss=N] [order=MARKET|LIMIT|GTC]
//	    [postonly=true|false] [offset=TICKS] [cancel=MS] [queue=risk_averse|front] [rebates=true|false]
//	    [fees=none|market|custom [feerate=N] [feeexp=N]] [latency=MS] [cooldown=MS] [maxentries=N]
//	COND = FIELD OPERATOR NUMBER
//
// The optional words come in this order, each at most once. fees=,
// feerate=, feeexp= and latency= are the replay's feeModel, feeRate,
// feeExponent and latencyMs (DESIGN 6); the fee model is written in lower
// case and read in any case. The resting-order words are the replay's
// GTC fields: postonly= is postOnly, offset= limitOffsetTicks, cancel=
// cancelAfterMs, queue= queueModel (written in lower case, only when
// FRONT: a GTC order without it queues RISK_AVERSE) and rebates=
// includeRebates. cooldown= and maxentries= are the re-entry control,
// reentryCooldownMs and maxEntriesPerMarket. A word at its default (0,
// false, no limit) is not written, and reads back the same when it is.
//
// An error is an *Error whose Field is "strategy_code" and whose message
// names the word at fault ("word 7 ("=<"): expected an operator ...").
// Codes follow the replay endpoint: INVALID_SIDE, INVALID_FIELD,
// INVALID_OPERATOR, INVALID_ORDER_TYPE, else VALIDATION_ERROR.
func ParseCode(code string) (Rules, error) {
	if len(code) > MaxCodeLength {
		return Rules{}, codeError(CodeValidation, " is %d bytes long: at most %d are allowed", len(code), MaxCodeLength)
	}
	p := codeParser{words: strings.Fields(code)}
	if len(p.words) == 0 {
		return Rules{}, codeError(CodeValidation, " is empty: it reads like %q", exampleCode)
	}
	var r Rules
	if v, ok := p.optional("coin="); ok {
		c, err := parseCoin(v, true)
		if err != nil {
			return Rules{}, p.failPrev(CodeValidation, "%s", err.(*Error).Message)
		}
		r.Coin = c
	}
	if v, ok := p.optional("type="); ok {
		mt, err := parseMarketTypeField(v, true)
		if err != nil {
			return Rules{}, p.failPrev(CodeValidation, "%s", err.(*Error).Message)
		}
		r.MarketType = mt
	}
	s := &r.Strategy
	var err error
	if s.Side, err = p.required("side=", replay.CodeInvalidSide, "UP or DOWN"); err != nil {
		return Rules{}, err
	}
	if s.Side != replay.SideUp && s.Side != replay.SideDown {
		return Rules{}, p.failPrev(replay.CodeInvalidSide, "side %q is not one of UP, DOWN%s", s.Side, caseHint(s.Side, replay.Sides()))
	}
	if err := p.keyword("entry:"); err != nil {
		return Rules{}, err
	}
	if s.EntryConditions, err = p.conditions("entry", "and", "or"); err != nil {
		return Rules{}, err
	}
	if err := p.keyword("exit:"); err != nil {
		return Rules{}, err
	}
	if s.ExitConditions, err = p.conditions("exit", "or", "and"); err != nil {
		return Rules{}, err
	}
	size, err := p.required("size=", CodeValidation, "a number of shares")
	if err != nil {
		return Rules{}, err
	}
	if s.PositionSize, err = p.number(size, "size="); err != nil {
		return Rules{}, err
	}
	if v, ok := p.optional("maxloss="); ok {
		if s.MaxLossPercent, err = p.number(v, "maxloss="); err != nil {
			return Rules{}, err
		}
		if s.MaxLossPercent == 0 {
			// replay.Strategy cannot be told that 0 was written (only a
			// decoded body can), so refuse it here as /v1/replay would.
			return Rules{}, p.failPrev(CodeValidation, "maxloss=0 is out of range: it must be between 1 and 100, or left out for the default 50")
		}
	}
	if v, ok := p.optional("order="); ok {
		if !oneOf(v, replay.OrderTypes()) {
			return Rules{}, p.failPrev(replay.CodeInvalidOrderType, "order %q is not one of MARKET, LIMIT, GTC%s", v, caseHint(v, replay.OrderTypes()))
		}
		s.OrderType = v
	}
	offset, cancel, err := p.restingOrder(s)
	if err != nil {
		return Rules{}, err
	}
	if err := p.costs(s); err != nil {
		return Rules{}, err
	}
	cooldown, err := p.optionalNumber("cooldown=")
	if err != nil {
		return Rules{}, err
	}
	maxEntries, err := p.optionalNumber("maxentries=")
	if err != nil {
		return Rules{}, err
	}
	s.SetOrderRules(cooldown, maxEntries, offset, cancel)
	if !p.done() {
		return Rules{}, p.fail(CodeValidation, "unexpected %q after the strategy: the code ends with size=, maxloss=, order=, postonly=, offset=, cancel=, queue=, rebates=, "+
			"fees=, feerate=, feeexp=, latency=, cooldown= and maxentries=, in this order", p.peek())
	}
	if err := r.normalize(false); err != nil {
		// What is left is a range or a count; say it in the code's words.
		e := err.(*Error)
		return Rules{}, codeError(e.Code, ": %s", codeWords.Replace(e.Message))
	}
	return r, nil
}

// costs reads the optional fees=, feerate=, feeexp= and latency= words
// into s; the replay validator judges them with the rest.
func (p *codeParser) costs(s *replay.Strategy) error {
	var model string
	if v, ok := p.optional("fees="); ok {
		model = strings.ToUpper(v)
		if !oneOf(model, replay.FeeModels()) {
			return p.failPrev(CodeValidation, "fees %q is not one of none, market, custom", v)
		}
	}
	var nums [3]*float64 // feerate=, feeexp=, latency=
	for i, key := range []string{"feerate=", "feeexp=", "latency="} {
		var err error
		if nums[i], err = p.optionalNumber(key); err != nil {
			return err
		}
	}
	s.SetCosts(model, nums[0], nums[1], nums[2])
	return nil
}

// restingOrder reads the optional postonly=, offset=, cancel=, queue= and
// rebates= words: the booleans and the queue model into s, the numbers
// returned as written (nil when absent) for SetOrderRules, so that the
// replay validator judges 1.5 or a GTC word with another order type.
func (p *codeParser) restingOrder(s *replay.Strategy) (offset, cancel *float64, err error) {
	if v, ok := p.optional("postonly="); ok {
		if s.PostOnly, err = p.boolean(v, "postonly="); err != nil {
			return nil, nil, err
		}
		if s.OrderType != replay.OrderGTC {
			// Even postonly=false: /v1/replay refuses postOnly with
			// another order type, whatever its value.
			return nil, nil, p.failPrev(CodeValidation, "postonly applies only with order=GTC (a resting order)")
		}
	}
	if offset, err = p.optionalNumber("offset="); err != nil {
		return nil, nil, err
	}
	if cancel, err = p.optionalNumber("cancel="); err != nil {
		return nil, nil, err
	}
	if v, ok := p.optional("queue="); ok {
		s.QueueModel = strings.ToUpper(v)
		if !oneOf(s.QueueModel, replay.QueueModels()) {
			return nil, nil, p.failPrev(CodeValidation, "queue %q is not one of risk_averse, front", v)
		}
	}
	if v, ok := p.optional("rebates="); ok {
		if s.IncludeRebates, err = p.boolean(v, "rebates="); err != nil {
			return nil, nil, err
		}
	}
	return offset, cancel, nil
}

// optionalNumber reads an optional numeric key=value word: nil when it
// is not next.
func (p *codeParser) optionalNumber(key string) (*float64, error) {
	v, ok := p.optional(key)
	if !ok {
		return nil, nil
	}
	n, err := p.number(v, key)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// boolean reads the value of a key=true|false word, in any case.
func (p *codeParser) boolean(w, key string) (bool, error) {
	switch strings.ToLower(w) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.failPrev(CodeValidation, "expected true or false after %s", key)
}

// exampleCode shows the grammar in messages.
const exampleCode = "side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET"

// codeParser walks the words of a code.
type codeParser struct {
	words []string
	pos   int
}

func (p *codeParser) done() bool { return p.pos >= len(p.words) }

func (p *codeParser) peek() string {
	if p.done() {
		return ""
	}
	return p.words[p.pos]
}

// optional consumes a key=value word with the given key, if it is next.
func (p *codeParser) optional(key string) (string, bool) {
	if w := p.peek(); strings.HasPrefix(w, key) {
		p.pos++
		return w[len(key):], true
	}
	return "", false
}

// required consumes the key=value word that must come next.
func (p *codeParser) required(key, code, what string) (string, error) {
	v, ok := p.optional(key)
	if !ok {
		return "", p.fail(code, "expected %s followed by %s", key, what)
	}
	if v == "" {
		return "", p.failPrev(code, "%s needs %s", key, what)
	}
	return v, nil
}

func (p *codeParser) keyword(kw string) error {
	if p.peek() != kw {
		return p.fail(CodeValidation, "expected %q", kw)
	}
	p.pos++
	return nil
}

// conditions reads COND {joiner COND}. A list joined by the other list's
// joiner is refused with the reason, since it would mean something the
// engine does not do.
func (p *codeParser) conditions(list, joiner, wrong string) ([]replay.Condition, error) {
	var cs []replay.Condition
	for {
		c, err := p.condition(list)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
		switch p.peek() {
		case joiner:
			p.pos++
		case wrong:
			if list == "entry" {
				return nil, p.fail(CodeValidation, "entry conditions must all hold: join them with \"and\"")
			}
			return nil, p.fail(CodeValidation, "exit conditions are alternatives (any one exits): join them with \"or\"")
		default:
			return cs, nil
		}
	}
}

func (p *codeParser) condition(list string) (replay.Condition, error) {
	field := p.peek()
	if field == "" || strings.HasSuffix(field, ":") || strings.Contains(field, "=") {
		return replay.Condition{}, p.fail(CodeValidation, "expected an %s condition such as \"price_up < 0.35\"", list)
	}
	if !oneOf(field, replay.Fields()) {
		return replay.Condition{}, p.fail(replay.CodeInvalidField, "%q is not a condition field: use one of %s%s", field, strings.Join(replay.Fields(), ", "), caseHint(field, replay.Fields()))
	}
	p.pos++
	op := p.peek()
	if !oneOf(op, replay.Operators()) {
		return replay.Condition{}, p.fail(replay.CodeInvalidOperator, "expected an operator after %s: one of %s", field, strings.Join(replay.Operators(), ", "))
	}
	p.pos++
	v, err := p.number(p.peek(), field+" "+op)
	if err != nil {
		return replay.Condition{}, err
	}
	p.pos++
	return replay.Condition{Field: field, Operator: op, Value: v}, nil
}

// number parses a numeric word; after names what the number belongs to.
func (p *codeParser) number(w, after string) (float64, error) {
	fail := p.fail
	if strings.HasSuffix(after, "=") {
		fail = p.failPrev // the number is inside the key=value word just read
	}
	if !decimal.MatchString(w) {
		return 0, fail(CodeValidation, "expected a number after %s, such as 0.35", after)
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fail(CodeValidation, "the number after %s is out of range", after)
	}
	return v, nil
}

// fail reports a problem at the next word (or at the end of the code).
func (p *codeParser) fail(code, format string, args ...any) *Error {
	return p.failAt(p.pos, code, format, args...)
}

// failPrev reports a problem at the word just consumed.
func (p *codeParser) failPrev(code, format string, args ...any) *Error {
	return p.failAt(p.pos-1, code, format, args...)
}

func (p *codeParser) failAt(i int, code, format string, args ...any) *Error {
	where := "at the end"
	if i < len(p.words) {
		where = fmt.Sprintf("at word %d (%q)", i+1, p.words[i])
	}
	return codeError(code, " %s: %s", where, fmt.Sprintf(format, args...))
}

// codeWords renames the replay validator's JSON names to the code's.
var codeWords = strings.NewReplacer("positionSize", "size", "maxLossPercent", "maxloss",
	"entryConditions", "entry", "exitConditions", "exit", "marketType", "type",
	"feeModel", "fees", "feeRate", "feerate", "feeExponent", "feeexp", "latencyMs", "latency",
	"reentryCooldownMs", "cooldown", "maxEntriesPerMarket", "maxentries", "postOnly", "postonly",
	"limitOffsetTicks", "offset", "cancelAfterMs", "cancel", "queueModel", "queue", "includeRebates", "rebates",
	"orderType", "order")

// caseHint says which allowed value v matches but for case, if any.
func caseHint(v string, allowed []string) string {
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return fmt.Sprintf(" (values are case-sensitive: use %q)", a)
		}
	}
	return ""
}

func codeError(code, format string, args ...any) *Error {
	return &Error{Code: code, Field: "strategy_code", Message: "strategy_code" + fmt.Sprintf(format, args...)}
}

func oneOf(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}
