package strategy

import (
	"fmt"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// outOfDomain finds a condition of r whose value lies outside what its
// field can be on the markets of r (a price above 1, a percentage of the
// market above 100, more seconds left than the market lasts): a condition
// that always or never holds, which no one asks for. The replay validator
// takes any finite number; a model's answer is held to the field's range,
// as the built-in grammar holds a prompt's numbers (comparison).
func outOfDomain(r Rules) *Error {
	for _, list := range []struct {
		name  string
		conds []replay.Condition
	}{{"entryConditions", r.Strategy.EntryConditions}, {"exitConditions", r.Strategy.ExitConditions}} {
		for i, c := range list.conds {
			lo, hi, what, ok := fieldDomain(c.Field, r.MarketType)
			if !ok || c.Value >= lo-1e-9 && c.Value <= hi+1e-9 {
				continue
			}
			path := fmt.Sprintf("%s[%d].value", list.name, i)
			return invalid(path, fmt.Sprintf("%s %s is outside %s's range, %s: the condition %s %s %s always or never holds",
				path, replay.FormatNum(c.Value), c.Field, what, c.Field, c.Operator, replay.FormatNum(c.Value)))
		}
	}
	return nil
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
