// Package strategy is the Backtest AI agent's generation side (SPEC 4.4,
// DESIGN 8): the request of /v1/backtest-ai/generate and /strategy, the
// generated strategy (Spec, answered as generated_strategy), its one-line
// text form (FormatCode, ParseCode: the strategy_code), and two generators
// behind one interface: Builtin, a deterministic grammar with four presets,
// and OpenAI, a model behind any OpenAI-compatible API asked for
// JSON-schema structured output. Both are judged by the replay validator,
// so a generated strategy is exactly what POST /v1/replay accepts.
//
// It knows nothing of queues or HTTP: the worker runs a generator for a
// TaskType task, and the api validates requests and answers the errors.
//
// Decisions where SPEC and DESIGN are silent, pinned by the tests:
//
//   - marketType is read in both vocabularies (1h and 1hr, 4h and 4hr, 24h
//     and 24hr) and case-insensitively, as coin is; answers use the
//     markets' market_type (1hr), so a generated strategy names its markets
//     as the market objects do.
//   - Defaults: coin BTC, market type 15m, 10 markets, 100 shares; stop loss
//     and order type default as in the replay (50%, MARKET). The request's
//     explicit positionSize, maxLossPercent and orderType win over the
//     prompt, a preset and a model.
//   - A prompt is required (1 to 2,000 characters), preset or not.
//   - The built-in generator refuses what it cannot read with a 400
//     VALIDATION_ERROR on the prompt, not a 502: it is deterministic, so a
//     retry cannot help. A model that fails (timeout, HTTP error, refusal,
//     two invalid answers) is 502 AI_STRATEGY_GENERATION_FAILED.
//   - A model answer that does not validate gets one repair round: the
//     model sees its answer and the validator's message. Transport errors
//     get none: the 502 tells the client to retry with backoff.
//   - The strategy code carries the rules and, when known, the coin and
//     market type, not the explanation: ParseCode(FormatCode(r)) == r holds
//     for Rules, and a Spec read from a code is explained by Describe.
//   - In a code, entry conditions are joined by "and" and exit conditions
//     by "or", because that is how the engine combines them; a code joining
//     them the other way is refused rather than silently reinterpreted.
//   - A generated strategy waits DefaultReentryCooldownMs (30 s) after an
//     exit unless the prompt, the model or the request says otherwise
//     (DESIGN 6). Only "nothing said" (a nil cooldown) gets the default;
//     a said 0 is no cooldown. The default belongs to generation: once
//     generated, 0 and absent are the same (no cooldown), and a strategy
//     read back (generatedStrategy, strategy_code) is never given it.
//   - The request's resting-order settings (postOnly, limitOffsetTicks,
//     cancelAfterMs, queueModel) need its orderType GTC, as /v1/replay
//     needs them with GTC; a request orderType MARKET or LIMIT drops the
//     prompt's or model's resting-order details, and the explanation says
//     which.
package strategy
