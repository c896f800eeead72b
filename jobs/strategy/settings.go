package strategy

import (
	"fmt"
	"strings"

	"github.com/updown/updown/jobs/replay"
)

// OrderSettings are the agent's settings of re-entry control and resting
// orders (DESIGN 6), as a request states them: nil or "" when not given.
// Given, each wins over what the prompt, the model or the strategy says,
// as the cost settings do. The numbers are read as numbers so that 1.5 is
// refused by name; an explicit 0 (reentryCooldownMs: 0, no cooldown) is
// a value, not "not given".
type OrderSettings struct {
	ReentryCooldownMs   *float64 `json:"reentryCooldownMs,omitempty"`
	MaxEntriesPerMarket *float64 `json:"maxEntriesPerMarket,omitempty"`
	PostOnly            *bool    `json:"postOnly,omitempty"`
	LimitOffsetTicks    *float64 `json:"limitOffsetTicks,omitempty"`
	CancelAfterMs       *float64 `json:"cancelAfterMs,omitempty"`
	QueueModel          string   `json:"queueModel,omitempty"`
	IncludeRebates      *bool    `json:"includeRebates,omitempty"`
}

// orderSettingKeys are the JSON keys of OrderSettings.
var orderSettingKeys = []string{"reentryCooldownMs", "maxEntriesPerMarket", "postOnly", "limitOffsetTicks", "cancelAfterMs", "queueModel", "includeRebates"}

// OrderSettingKeys returns the JSON keys of OrderSettings, for a body that
// embeds them to list among its own.
func OrderSettingKeys() []string { return append([]string(nil), orderSettingKeys...) }

// Check reports the first problem of the settings, as an *Error naming
// the field, for a strategy whose order type will be orderType (""
// is MARKET): the replay validator judges them exactly as POST /v1/replay
// judges the same fields, the resting-order ones allowed with GTC only
// (postOnly even when false).
func (o *OrderSettings) Check(orderType string) error {
	always := []replay.Condition{{Field: replay.FieldPriceUp, Operator: replay.OpGreaterOrEqual, Value: 0}}
	st := replay.Strategy{Side: replay.SideUp, EntryConditions: always, ExitConditions: always, PositionSize: replay.MinPositionSize,
		OrderType: orderType, QueueModel: o.QueueModel, IncludeRebates: o.IncludeRebates != nil && *o.IncludeRebates,
		PostOnly: o.PostOnly != nil} // given at all: false with MARKET is refused too
	st.SetOrderRules(o.ReentryCooldownMs, o.MaxEntriesPerMarket, o.LimitOffsetTicks, o.CancelAfterMs)
	if err := st.Validate(); err != nil {
		return fromReplay(err)
	}
	return nil
}

// Apply puts orderType (when not empty) and the given settings into st, a
// strategy as read back (a parsed code, or a normalized one), as the
// settings of /v1/backtest-ai/run replace a strategy's. A MARKET or LIMIT
// orderType drops st's resting-order fields, which belong to GTC.
//
// st's integer rules are carried over by value: a decoded strategy whose
// own numbers are out of range (1.5) must be judged before, or they are
// lost.
func (o *OrderSettings) Apply(st *replay.Strategy, orderType string) {
	rules := orderRules{floatOf(st.ReentryCooldownMs), floatOf(st.MaxEntriesPerMarket), floatOf(st.LimitOffsetTicks), floatOf(st.CancelAfterMs)}
	o.merge(st, orderType, &rules)
	st.SetOrderRules(rules.cooldown, rules.maxEntries, rules.offset, rules.cancel)
}

// merge puts orderType (when not empty) and the given settings into st and
// rules, the integer rules for SetOrderRules.
func (o *OrderSettings) merge(st *replay.Strategy, orderType string, rules *orderRules) {
	if orderType != "" {
		st.OrderType = orderType
		if orderType != replay.OrderGTC {
			// The settings' order type wins, and with it go the
			// strategy's details of a resting order.
			st.PostOnly, st.QueueModel, st.IncludeRebates = false, "", false
			rules.offset, rules.cancel = nil, nil
		}
	}
	if o.ReentryCooldownMs != nil {
		rules.cooldown = o.ReentryCooldownMs
	}
	if o.MaxEntriesPerMarket != nil {
		rules.maxEntries = o.MaxEntriesPerMarket
	}
	if o.LimitOffsetTicks != nil {
		rules.offset = o.LimitOffsetTicks
	}
	if o.CancelAfterMs != nil {
		rules.cancel = o.CancelAfterMs
	}
	if o.PostOnly != nil {
		st.PostOnly = *o.PostOnly
	}
	if o.QueueModel != "" {
		st.QueueModel = o.QueueModel
	}
	if o.IncludeRebates != nil {
		st.IncludeRebates = *o.IncludeRebates
	}
}

// restingKeys are the JSON keys of a resting order's details, which
// apply with orderType GTC only.
var restingKeys = []string{"postOnly", "limitOffsetTicks", "cancelAfterMs", "queueModel", "includeRebates"}

// restingDetails are a generator's details of a resting order, as it read
// them (the prompt) or was answered them (a model): the order type, the
// offset and cancel numbers (nil: not said), postOnly, the queue model
// ("": not said) and whether maker rebates are counted.
type restingDetails struct {
	order          string
	offset, cancel *float64
	postOnly       bool
	queue          string
	rebates        bool
}

// droppedResting is the note saying which of d, the details of a resting
// order from the prompt or the model's answer (from), the request's
// orderType (MARKET or LIMIT, which wins: merge) dropped, "" when none:
// they were dropped without a word.
func droppedResting(d restingDetails, orderType, from string) string {
	if orderType == "" || orderType == replay.OrderGTC {
		return ""
	}
	var dropped []string
	if d.order == replay.OrderGTC {
		dropped = append(dropped, "a resting (GTC) order")
	}
	if d.offset != nil {
		ticks := "ticks"
		if *d.offset == 1 {
			ticks = "tick"
		}
		dropped = append(dropped, fmt.Sprintf("%s %s above the best bid", replay.FormatNum(*d.offset), ticks))
	}
	if d.postOnly {
		dropped = append(dropped, "post only")
	}
	if d.cancel != nil {
		dropped = append(dropped, "cancel after "+duration(int(*d.cancel)))
	}
	switch d.queue {
	case replay.QueueFront:
		dropped = append(dropped, "queue at the front")
	case replay.QueueRiskAverse:
		dropped = append(dropped, "queue at the back (risk-averse)")
	}
	if d.rebates {
		dropped = append(dropped, "include rebates")
	}
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("The resting-order details of the %s (%s) are dropped: this request's orderType %s wins over the %s, "+
		"and does not rest on the book; set orderType GTC to keep them.", from, strings.Join(dropped, ", "), orderType, from)
}
