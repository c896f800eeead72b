package strategy

import (
	"encoding/json"

	"github.com/updown/updown/jobs/replay"
)

// schemaName names the structured output in the request to the model.
const schemaName = "replay_strategy"

// Schema returns the JSON schema of a model's answer: the replay rules and
// an explanation. It is written by hand because strict structured output
// wants every property listed in required and additionalProperties false
// at every level, and go-openai's generator mishandles that (REFERENCE).
// Ranges are not in the schema (strict mode rejects minimum, maximum and
// minItems); the replay validator checks them, and the one repair round
// tells the model what it broke. The enums come from package replay, so the
// schema cannot drift from what the engine accepts.
func Schema() json.RawMessage {
	condition := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"field":    map[string]any{"type": "string", "enum": replay.Fields(), "description": fieldDoc},
			"operator": map[string]any{"type": "string", "enum": replay.Operators()},
			"value":    map[string]any{"type": "number"},
		},
		"required":             []string{"field", "operator", "value"},
		"additionalProperties": false,
	}
	conditions := func(doc string) map[string]any {
		return map[string]any{"type": "array", "items": condition, "description": doc}
	}
	s := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"side":            map[string]any{"type": "string", "enum": replay.Sides(), "description": "The outcome token to buy."},
			"entryConditions": conditions("1 to 20 conditions; the strategy enters when all hold."),
			"exitConditions":  conditions("1 to 20 conditions; the strategy exits when any holds."),
			"positionSize":    map[string]any{"type": "number", "description": "Shares per trade, 1 to 10000."},
			"maxLossPercent":  map[string]any{"type": "number", "description": "Forced exit when the position has lost this percent of its cost, 1 to 100."},
			"orderType": map[string]any{"type": "string", "enum": replay.OrderTypes(),
				"description": "MARKET takes the book; LIMIT takes only at the signal's price or better; GTC rests a maker order on the book (at the best bid plus limitOffsetTicks to buy) until trades fill it."},
			// Strict mode wants every property, so "no fees" and "no
			// delay" are answers too: NONE, null, null, 0.
			"feeModel": map[string]any{"type": "string", "enum": replay.FeeModels(),
				"description": "NONE unless the user asks to count fees: MARKET for the market's own taker fees (Polymarket's), CUSTOM for a rate the user gives."},
			"feeRate":     map[string]any{"type": []string{"number", "null"}, "description": "CUSTOM only: the fee rate, 0 to 1 (7% is 0.07); null otherwise."},
			"feeExponent": map[string]any{"type": []string{"integer", "null"}, "description": "CUSTOM only: the exponent of p(1-p) in the fee, 1 to 4 (usually 1); null otherwise."},
			"latencyMs":   map[string]any{"type": "integer", "description": "The order delay to simulate, in milliseconds, 0 to 60000; 0 unless the user mentions latency or delay."},
			// Re-entry control and resting orders (DESIGN 6): where absent
			// means something (no limit, no cancel, not GTC) the answer is
			// null; false and 0 are the defaults of the others, and are
			// read as absent with MARKET or LIMIT (readAnswer).
			"reentryCooldownMs": map[string]any{"type": "integer",
				"description": "Milliseconds to wait after an exit before entering again, 0 to 86400000. 30000 (30 s) unless the user asks for another wait; 0 only if the user wants no cooldown."},
			"maxEntriesPerMarket": map[string]any{"type": []string{"integer", "null"},
				"description": "At most this many entries in one market, 1 to 10000; null for no limit unless the user sets one."},
			"postOnly": map[string]any{"type": "boolean",
				"description": "GTC only: reject an order that would cross the book instead of letting it take. false unless the user asks for post-only."},
			"limitOffsetTicks": map[string]any{"type": "integer",
				"description": "GTC only: a buy rests this many ticks (0.01) above the best bid, a sell below the best ask, 0 to 50; 0 otherwise."},
			"cancelAfterMs": map[string]any{"type": []string{"integer", "null"},
				"description": "GTC only: cancel a resting order this many milliseconds after its signal, 1 to 86400000; null to rest until filled or the market ends."},
			"queueModel": map[string]any{"type": []string{"string", "null"}, "enum": append(anySlice(replay.QueueModels()), nil),
				"description": "GTC only: RISK_AVERSE (the order waits behind the size displayed at its price) or FRONT (at the front of the queue, the optimistic bound); null otherwise, or for the default RISK_AVERSE."},
			"includeRebates": map[string]any{"type": "boolean",
				"description": "Count the estimated maker rebates of GTC fills in the pnl; false unless the user asks."},
			"explanation": map[string]any{"type": "string", "description": "One or two sentences on what the strategy does and why."},
		},
		"required": []string{"side", "entryConditions", "exitConditions", "positionSize", "maxLossPercent", "orderType",
			"feeModel", "feeRate", "feeExponent", "latencyMs",
			"reentryCooldownMs", "maxEntriesPerMarket", "postOnly", "limitOffsetTicks", "cancelAfterMs", "queueModel", "includeRebates",
			"explanation"},
		"additionalProperties": false,
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("strategy: schema does not encode: " + err.Error()) // static data: cannot happen
	}
	return b
}

// fieldDoc says what each condition field means (DESIGN 6), briefly.
const fieldDoc = "What the condition reads at each snapshot. price_up, price_down: the side's price (best ask), 0 to 1. " +
	"coin_price: the coin's price in USD. spread: |price_up - price_down|. time_remaining_pct: percent of the window left (\"with 20% left\"). " +
	"bid_up, bid_down: the best bid (what a sale gets now). mid_up, mid_down: (best bid + best ask) / 2. " +
	"display_up, display_down: the price Polymarket shows (the mid, or the last trade when the spread is over 0.10). " +
	"coin_move_pct: percent the coin has moved from the price to beat (>= 0 exactly while UP is winning). " +
	"time_remaining_s: seconds left (time left said as a duration: \"with 2 minutes left\" is time_remaining_s <= 120). coin_return_60s: the coin's percent change over the last 60 seconds. " +
	"imbalance_up, imbalance_down: (bid size - ask size) / (bid size + ask size) of the side's book, -1 to 1."

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
