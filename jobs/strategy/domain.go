package strategy

import (
	"fmt"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// OutOfDomain finds a condition of r whose value lies outside what its
// field can be on the markets of r (a price above 1, a percentage of the
// market above 100, more seconds left than the market lasts): a condition
// that always or never holds, which no one asks for. The replay validator
// takes any finite number; a model's answer is held to the field's range,
// as the built-in grammar holds a prompt's numbers (comparison).
func OutOfDomain(r Rules) *Error {
	return outOfDomain(r, func(string, replay.Condition, bool) (string, bool) { return "always or never holds", true })
}

// Untradable finds a condition of r outside its field's range that POST
// /v1/backtest-ai/run refuses. A fixed range's (a price of 40, a slip for
// 0.4; a percentage of 150) is refused as a model's is. The seconds left
// depend on the markets run, which /run may change from the strategy's
// (its code says type=15m, the body marketType 5m): there the condition
// is refused only when it makes the strategy meaningless, an entry
// condition that never holds (no market is ever entered) or an exit one
// that always holds (every position sold as it is bought). One that
// always holds in an entry ("in the last 10 minutes", time_remaining_s
// <= 600, on 5m markets) reads as "any time", and never in an exit as no
// exit, as they did before such conditions were judged.
func Untradable(r Rules) *Error {
	return outOfDomain(r, func(list string, c replay.Condition, always bool) (string, bool) {
		switch {
		case c.Field != replay.FieldTimeRemaining:
			return "always or never holds", true
		case list == "entryConditions" && !always:
			return "never holds, so no market is ever entered", true
		case list == "exitConditions" && always:
			return "always holds, so every position is sold as soon as it is bought", true
		}
		return "", false
	})
}

// outOfDomain finds the first condition of r whose value lies outside its
// field's range and that refuses (given its list's name, the condition and
// whether it always holds) says is refused, in what words.
func outOfDomain(r Rules, refuses func(list string, c replay.Condition, always bool) (string, bool)) *Error {
	for _, list := range []struct {
		name  string
		conds []replay.Condition
	}{{"entryConditions", r.Strategy.EntryConditions}, {"exitConditions", r.Strategy.ExitConditions}} {
		for i, c := range list.conds {
			lo, hi, what, ok := fieldDomain(c.Field, r.MarketType)
			if !ok || c.Value >= lo-1e-9 && c.Value <= hi+1e-9 {
				continue
			}
			words, refused := refuses(list.name, c, alwaysHolds(c, hi))
			if !refused {
				continue
			}
			path := fmt.Sprintf("%s[%d].value", list.name, i)
			return invalid(path, fmt.Sprintf("%s %s is outside %s's range, %s: the condition %s %s %s %s",
				path, replay.FormatNum(c.Value), c.Field, what, c.Field, c.Operator, replay.FormatNum(c.Value), words))
		}
	}
	return nil
}

// alwaysHolds tells whether c, whose value lies outside its field's range
// (above hi or below its low end), holds at every tick; otherwise it holds
// at none: a field never equals nor crosses a value it cannot reach.
func alwaysHolds(c replay.Condition, hi float64) bool {
	above := c.Value > hi
	switch c.Operator {
	case replay.OpLess, replay.OpLessOrEqual:
		return above
	case replay.OpGreater, replay.OpGreaterOrEqual:
		return !above
	}
	return false
}

// fieldDomain is the range of a field's values on markets of type mt, and
// the range in words; ok is false for a field without one it can tell.
func fieldDomain(field string, mt store.MarketType) (lo, hi float64, what string, ok bool) {
	switch {
	case priceField(field):
		return 0, 1, "0 to 1", true
	case field == replay.FieldTimeRemainingPct:
		return 0, 100, "0 to 100", true
	case field == replay.FieldImbalanceUp || field == replay.FieldImbalanceDown:
		return -1, 1, "-1 to 1", true
	case field == replay.FieldTimeRemaining:
		if s := mt.Duration().Seconds(); s > 0 {
			return 0, s, fmt.Sprintf("0 to %s (a %s market)", replay.FormatNum(s), mt), true
		}
	case field == replay.FieldCoinPrice:
		return 0, 1e15, "above 0 (in USD)", true
	}
	return 0, 0, "", false
}
