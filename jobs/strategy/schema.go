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
			"field":    map[string]any{"type": "string", "enum": replay.Fields(), "description": "What the condition reads at each snapshot."},
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
			"orderType":       map[string]any{"type": "string", "enum": replay.OrderTypes()},
			// Strict mode wants every property, so "no fees" and "no
			// delay" are answers too: NONE, null, null, 0.
			"feeModel": map[string]any{"type": "string", "enum": replay.FeeModels(),
				"description": "NONE unless the user asks to count fees: MARKET for the market's own taker fees (Polymarket's), CUSTOM for a rate the user gives."},
			"feeRate":     map[string]any{"type": []string{"number", "null"}, "description": "CUSTOM only: the fee rate, 0 to 1 (7% is 0.07); null otherwise."},
			"feeExponent": map[string]any{"type": []string{"integer", "null"}, "description": "CUSTOM only: the exponent of p(1-p) in the fee, 1 to 4 (usually 1); null otherwise."},
			"latencyMs":   map[string]any{"type": "integer", "description": "The order delay to simulate, in milliseconds, 0 to 60000; 0 unless the user mentions latency or delay."},
			"explanation": map[string]any{"type": "string", "description": "One or two sentences on what the strategy does and why."},
		},
		"required": []string{"side", "entryConditions", "exitConditions", "positionSize", "maxLossPercent", "orderType",
			"feeModel", "feeRate", "feeExponent", "latencyMs", "explanation"},
		"additionalProperties": false,
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("strategy: schema does not encode: " + err.Error()) // static data: cannot happen
	}
	return b
}
