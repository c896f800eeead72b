package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Builtin is the deterministic generator (AI_PROVIDER=builtin, the dev
// default and the fallback without an API key). It knows the four presets
// and a small grammar of plain phrases, and refuses a prompt it cannot
// read fully rather than guess: a number it did not use, an indicator it
// has no field for, a side it cannot trade.
//
// What it reads (case-insensitively, anywhere in the prompt):
//
//   - the side: "buy UP", "long DOWN", "the DOWN side";
//   - comparisons: "[field] drops below|falls below|under|< 0.35",
//     "rises above|over|> 0.6", "at least|reaches|>= 0.6", "at most|<=",
//     "crosses above|crosses below 0.5", where field is price_up (or "up
//     price", "up"), price_down, coin_price ("BTC price", "BTC is above 95000"), spread,
//     time_remaining_pct ("time remaining", "time left", "remaining
//     time") or any field beyond SPEC's five by its name
//     ("display_up above 0.6", "imbalance_up > 0.3", "coin_return_60s <
//     -0.2"), and the book's by their words ("the bid", "the best bid",
//     "the mid price", "the book imbalance", "the displayed price": that
//     field of the side bought, or of the side named, "the UP bid");
//     prices (and imbalances) may be written as percentages
//     ("below 35%") or in dollars ("below $0.35"), and prices (of a
//     side, a bid, the spread, a stop loss or take profit) in cents with
//     their unit ("below 35c", "under 35 cents", "35¢", "between 40 and
//     60 cents": 0.35, 0.4 to 0.6); a bare "35" on a price is refused
//     with the price to write, and cents are never the coin's price, a
//     fee rate or a field of another unit; a comparison without a
//     field is about the field before it, or the side's price;
//   - ranges: "[field] between 0.4 and 0.6" (field >= 0.4 and field <=
//     0.6) in the entry; an exit cannot wait for both bounds, and is
//     refused;
//   - the coin against the price to beat: "when BTC is 0.1% above the
//     price to beat" (coin_move_pct >= 0.1), "0.2% below the price to
//     beat" (coin_move_pct <= -0.2);
//   - time left: "with more than 20% left", "with 20% left", "when less
//     than 10% (of the) time remains", "in the last 10%" (percentages of
//     the market compare time_remaining_pct); "with 3 minutes left",
//     "while 5 minutes remain", "with 120 seconds left", "in the last 30
//     s", "with 1h to go" (durations compare time_remaining_s, in
//     seconds: exact, where a percentage converted with the market's
//     length was rounded); time passed, as a share of the market: "when
//     90% of the time has passed" (time_remaining_pct <= 10), "after half
//     the market", "in the second half" (<= 50), "in the first half"
//     (>= 50);
//   - resting orders (DESIGN 6): "rest a bid 1 tick above" (orderType GTC,
//     limitOffsetTicks 1), "rest a bid at the best bid", "post a maker
//     order", "GTC orders", "limit order at the bid"; "post only" (postOnly,
//     and GTC); "cancel after
//     60 s" (cancelAfterMs); "queue at the front" or "optimistic queue"
//     (queueModel FRONT), "risk-averse queue"; "include rebates"
//     (includeRebates);
//   - re-entry control: "cool down 30 s", "cooldown of 2 minutes", "a 30 s
//     cooldown", "1h cooldown", "wait 30 seconds between trades", "5m
//     between trades", "at least 15m between entries", "re-enter only
//     after 5m" (reentryCooldownMs: a duration, not the 5m, 15m or 1h
//     markets), "no cooldown" (0); a rhythm of trades, "trade every 5m",
//     "once every hour" (the same wait, with a note), while a rhythm of
//     checks, "check every 5 minutes", is no rule (the replay checks every
//     snapshot: a note says so); "every 5m markets" names markets;
//     "at most 3 entries", "at most 3 trades", "once per market", "no
//     re-entry", "one trade per market"
//     (maxEntriesPerMarket). Without a cooldown the request's or the
//     default 30 s applies (DefaultReentryCooldownMs);
//   - "buy UP at 0.45" (price_up <= 0.45), "sell at 0.55" or "exit at
//     0.2" (a target above the entry's price, a stop below it);
//   - "take profit at 0.6" (also "TP 0.6", "target 0.6"; a price) or "at 20%" (20% above the entry's
//     price threshold), "stop loss of 25%" (maxLossPercent) or "stop loss
//     at 0.2" (a price), "200 shares" (also "1 share", "position size 200"), "limit orders";
//   - costs (DESIGN 6): "with fees" (also "including Polymarket fees": the
//     market's own schedule, MARKET), "fee rate 7%" or "fee rate of 0.07"
//     (CUSTOM), "fee exponent 2", "no fees" or "fees off" (NONE), "250 ms
//     latency" or "latency of 1 s" (latencyMs), "no latency", "ignore
//     latency", "latency off" or "0 latency" (none), "no fees or latency"
//     (both).
//
// Comparisons before the first "exit", "sell", "close" or "get out" are
// entry conditions (all must hold); those after it, and take-profit and
// price stop losses, are exit conditions (any one exits): exits that must
// hold together ("exit above 0.6 and with 20% left", "exit above 0.6 with
// 20% left", "sell above 0.6 when 3 minutes remain", "exit above 0.6 after
// 10 minutes") are refused saying so, as is a crossing without a direction
// ("crosses 0.5"). With a preset the
// prompt's entry conditions, when it has any, replace the preset's, and
// likewise its exit conditions.
type Builtin struct{}

// Generate implements Generator. A prompt it cannot read is an *Error with
// code VALIDATION_ERROR on the field "prompt": the same prompt would fail
// the same way again, so it is not a generation failure to retry.
func (Builtin) Generate(ctx context.Context, req Request) (Spec, error) {
	if err := ctx.Err(); err != nil {
		return Spec{}, generationFailed(err, "generation cancelled")
	}
	var base *preset
	if req.Preset != "" {
		p, ok := presetNamed(req.Preset)
		if !ok {
			return Spec{}, invalid("preset", fmt.Sprintf("preset %q is not one of %s", req.Preset, strings.Join(Presets(), ", ")))
		}
		base = &p
	}
	pr, err := readPrompt(req.Prompt, req.MarketType, req.OrderType, base)
	if err != nil {
		return Spec{}, err
	}
	mirrored := base != nil && pr.side != base.side
	if mirrored {
		// The presets are written for UP: on the other side their
		// conditions are read of that side's prices, so the idea stays
		// the preset's (read of UP's, a DOWN position took its profit
		// where the preset cuts its loss).
		m := *base
		m.entry, m.exit = otherSide(base.entry), otherSide(base.exit)
		base = &m
	}
	st := replay.Strategy{Side: pr.side, EntryConditions: pr.entry, ExitConditions: pr.exit, OrderType: pr.order,
		PostOnly: pr.postOnly, QueueModel: pr.queue, IncludeRebates: pr.rebates}
	st.SetCosts(pr.feeModel, pr.feeRate, pr.feeExp, pr.latency)
	var from []string
	if base != nil {
		if len(st.EntryConditions) == 0 {
			st.EntryConditions = base.entry
			from = append(from, "entry")
		}
		if len(st.ExitConditions) == 0 {
			st.ExitConditions = base.exit
			from = append(from, "exit")
		}
		st.MaxLossPercent = base.maxLoss
	}
	switch {
	case len(st.EntryConditions) == 0:
		return Spec{}, invalid("prompt", "the prompt does not say when to enter: write e.g. \"buy UP when price_up drops below 0.35\", or choose a preset ("+strings.Join(Presets(), ", ")+")")
	case len(st.ExitConditions) == 0 && pr.holdsToEnd:
		return Spec{}, invalid("prompt", "a position still open settles at the market's end (1 or 0 a share) anyway, so holding to the end needs no rule; "+
			"but a strategy needs at least one exit condition: add one, e.g. \"take profit at 0.95\" or \"stop loss at 0.1\", and positions it does not close still settle at the end")
	case len(st.ExitConditions) == 0:
		return Spec{}, invalid("prompt", "the prompt does not say when to exit: write e.g. \"exit above 0.6 or with 20% left\", \"take profit at 0.6\" or \"stop loss at 0.2\", or choose a preset")
	}
	if pr.maxLoss != nil {
		st.MaxLossPercent = *pr.maxLoss
	}
	st.PositionSize = DefaultPositionSize
	if pr.size != nil {
		st.PositionSize = *pr.size
	}
	notes := pr.notes
	if base != nil {
		switch len(from) {
		case 2:
			notes = append([]string{"Built from the " + base.name + " preset: " + base.description + "."}, notes...)
		case 1:
			notes = append([]string{"The " + from[0] + " conditions come from the " + base.name + " preset."}, notes...)
		default:
			notes = append([]string{"The prompt's conditions replace those of the " + base.name + " preset; its stop loss is kept unless the prompt gives one."}, notes...)
		}
		if mirrored && len(from) > 0 {
			notes = append(notes, "The preset is written for UP; its conditions are read of "+pr.side+"'s prices here.")
		}
	}
	spec, err := finish(req, st, orderRules{pr.cooldown, pr.maxEntries, pr.offset, pr.cancel}, "")
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Field != "" {
			// The request's own values were checked before; what fails
			// here came from the prompt.
			msg := e.Message
			if req.OrderType == "" {
				msg = promptOrderType(e, pr)
			}
			return Spec{}, invalid("prompt", "in the prompt: "+msg)
		}
		return Spec{}, err
	}
	if note := droppedResting(restingDetails{pr.order, pr.offset, pr.cancel, pr.postOnly, pr.queue, pr.rebates}, req.OrderType, "prompt"); note != "" {
		notes = append(notes, note)
	}
	spec.Explanation = strings.Join(append([]string{Describe(spec.Rules)}, notes...), " ")
	return spec, nil
}

// promptOrderType is the message of e, a validator's problem with the
// prompt's rules, for a request that gives no order type. A rule of
// resting orders (restingKeys) with an order type that does not rest is
// said naming where that order type came from: the prompt's phrase ("limit
// orders"), or no phrase and the default. (The validator's message says
// "this request's orderType is LIMIT": the request did not say LIMIT; the
// prompt's "limit orders" did.) Any other problem is e's message.
func promptOrderType(e *Error, pr promptRules) string {
	if !slices.Contains(restingKeys, e.Field) || pr.order == replay.OrderGTC {
		return e.Message
	}
	const rest = `; for a resting order write "rest a bid" or "GTC orders"`
	gtcOnly := e.Field + " applies only with orderType " + replay.OrderGTC + " (a resting order); "
	switch {
	case pr.order == "":
		return gtcOnly + "the prompt names no order type, so it is " + replay.OrderMarket + " (the default)" + rest
	case pr.orderPhrase != "":
		return gtcOnly + fmt.Sprintf("the prompt's %q is orderType %s, which does not rest on the book%s", pr.orderPhrase, pr.order, rest)
	}
	return e.Message
}

// Describe says in plain words what rules do; it is the explanation of the
// built-in generator and the fallback of a model that gives none.
func Describe(r Rules) string {
	s := r.Strategy
	var b strings.Builder
	fmt.Fprintf(&b, "Buy %s when %s; exit when %s", s.Side, joinConditions(s.EntryConditions, " and "), joinConditions(s.ExitConditions, " or "))
	if len(s.ExitConditions) > 1 {
		b.WriteString(" (whichever comes first)")
	}
	shares := "shares"
	if s.PositionSize == 1 {
		shares = "share"
	}
	fmt.Fprintf(&b, ", or at the market's end. %s %s a trade with %s orders; a loss of %s%% of the entry cost forces an exit.",
		replay.FormatNum(s.PositionSize), shares, s.OrderType, replay.FormatNum(s.MaxLossPercent))
	switch s.FeeModel {
	case replay.FeeMarket:
		b.WriteString(" Every fill pays the market's taker fee.")
	case replay.FeeCustom:
		fmt.Fprintf(&b, " Every fill pays a taker fee of shares × %s × (p(1−p))^%d.", replay.FormatNum(*s.FeeRate), s.FeeExponent)
	}
	if s.LatencyMs > 0 {
		fmt.Fprintf(&b, " Orders execute %s after their signal.", duration(s.LatencyMs))
	}
	if s.OrderType == replay.OrderGTC {
		if s.LimitOffsetTicks == 0 {
			b.WriteString(" Orders rest on the book at the best bid to buy and the best ask to sell")
		} else {
			ticks := "ticks"
			if s.LimitOffsetTicks == 1 {
				ticks = "tick"
			}
			fmt.Fprintf(&b, " Orders rest on the book %d %s above the best bid to buy and below the best ask to sell", s.LimitOffsetTicks, ticks)
		}
		if s.PostOnly {
			b.WriteString(", post-only")
		}
		if s.CancelAfterMs > 0 {
			fmt.Fprintf(&b, ", cancelled after %s", duration(s.CancelAfterMs))
		}
		fmt.Fprintf(&b, "; queue model %s.", s.QueueModel)
	}
	if s.IncludeRebates {
		b.WriteString(" Estimated maker rebates count in the pnl.")
	}
	if s.ReentryCooldownMs > 0 {
		fmt.Fprintf(&b, " After an exit it waits %s before entering again.", duration(s.ReentryCooldownMs))
	}
	switch {
	case s.MaxEntriesPerMarket == 1:
		b.WriteString(" At most 1 entry a market.")
	case s.MaxEntriesPerMarket > 0:
		fmt.Fprintf(&b, " At most %d entries a market.", s.MaxEntriesPerMarket)
	}
	return b.String()
}

// DescribeChange tells in words what changed from the rules told by was
// to those told by now (both Describe's): now's sentences that was did not
// say, and was's that now no longer says; "" when they say the same.
func DescribeChange(was, now string) string {
	before, after := describedSentences(was), describedSentences(now)
	var b strings.Builder
	if added := missingFrom(after, before); len(added) > 0 {
		b.WriteString("Changed by this run's settings: " + strings.Join(added, " "))
	}
	if dropped := missingFrom(before, after); len(dropped) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("No longer: " + strings.Join(dropped, " "))
	}
	return b.String()
}

// describedSentences splits Describe's words into their sentences.
func describedSentences(s string) []string {
	var out []string
	for _, part := range strings.SplitAfter(s, ". ") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// missingFrom is the sentences of a that b does not hold, in a's order.
func missingFrom(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// duration writes a number of milliseconds as a reader takes it in: whole
// hours, minutes or seconds in those units ("30 s", "2 min", "24 h"), any
// other in ms ("1500 ms").
func duration(ms int) string {
	switch {
	case ms == 0:
		return "0 ms"
	case ms%3_600_000 == 0:
		return strconv.Itoa(ms/3_600_000) + " h"
	case ms%60_000 == 0:
		return strconv.Itoa(ms/60_000) + " min"
	case ms%1000 == 0:
		return strconv.Itoa(ms/1000) + " s"
	}
	return strconv.Itoa(ms) + " ms"
}

func joinConditions(cs []replay.Condition, joiner string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Field + " " + c.Operator + " " + replay.FormatNum(c.Value)
	}
	return strings.Join(parts, joiner)
}

// promptRules is what readPrompt found.
type promptRules struct {
	side        string
	entry, exit []replay.Condition
	maxLoss     *float64
	size        *float64
	order       string
	// orderPhrase is the phrase that named order ("limit orders"), if
	// one did.
	orderPhrase string
	notes       []string
	// holdsToEnd is a prompt that says to hold to the market's end
	// (reHoldToEnd), which needs no exit rule.
	holdsToEnd bool

	feeModel                 string
	feeRate, feeExp, latency *float64

	// Resting orders and re-entry control, the numbers as SetOrderRules
	// takes them (nil: not in the prompt).
	postOnly, rebates                    bool
	queue                                string
	offset, cancel, cooldown, maxEntries *float64
}

// placed is a condition and where in the prompt it was written: phrases
// are read kind by kind, and the conditions are put back in the prompt's
// order at the end.
type placed struct {
	at int
	c  replay.Condition
}

func inOrder(ps []placed) []replay.Condition {
	slices.SortStableFunc(ps, func(a, b placed) int { return a.at - b.at })
	out := make([]replay.Condition, len(ps))
	for i, p := range ps {
		out[i] = p.c
	}
	return out
}

// The grammar. Compiled once; regexps are safe for concurrent use.
const (
	reNum = `\$?(-?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+))`
	reOps = `crosses above|crosses over|breaks above|crosses below|crosses under|breaks below|` +
		`is at or above|at or above|at least|reaches|hits|is at or below|at or below|at most|` +
		`drops below|drops under|falls below|falls under|dips below|dips under|goes below|goes under|sinks below|is below|is under|below|under|less than|lower than|` +
		`rises above|rises over|goes above|goes over|climbs above|is above|is over|above|over|more than|greater than|higher than|exceeds|` +
		`equals|is exactly`
	reUnit = `(%|percent|minutes?|mins?|m|hours?|hrs?|h|seconds?|secs?|s)`
	// reFeeKind is the words that may stand before "fees" ("Polymarket
	// taker fees").
	reFeeKind = `(?:polymarket(?:'s)?\s+|market(?:'s)?\s+|taker\s+|trading\s+)*`
	// reStopWord and reTakeWord name a stop loss and a take profit.
	reStopWord = `(?:stop[- ]?loss|sl|stop(?:[- ]?out)?)`
	reTakeWord = `(?:take[- ]?profits?|tp|(?:profit|price)\s+target|target)`
	// reTicksAbove is a number of ticks above a price ("2 ticks above");
	// group 1 is the number.
	reTicksAbove = reNum + `\s+ticks?\s+(?:above|over|better\s+than)`
	// reDur is a duration's unit.
	reDur = `(ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)`
	// reBetweenTrades is what a cooldown stands between ("between
	// trades", "between each entry", "between consecutive trades"); "1h
	// between entry and exit" is a holding time, which no rule says.
	reBetweenTrades = `between\s+(?:(?:each|every)\s+(?:trade|entry|position)|(?:two\s+|consecutive\s+|successive\s+)?(?:trades|entries|re-?entries|positions))\b`
)

// reField is a condition's field by its name or in words ("up price",
// "BTC's price"); group 1.
var reField = `(bid[ _]up|bid[ _]down|mid[ _]up|mid[ _]down|display[ _]up|display[ _]down|coin[ _]move[ _]pct|` +
	`time[ _]remaining[ _]s|coin[ _]return[ _]60s|imbalance[ _]up|imbalance[ _]down|price[ _]up|up[ _]price|price of up|price[ _]down|down[ _]price|price of down|coin[ _]price|` +
	reCoinName + `(?:'s)? price|spread|time[ _]remaining(?:[ _]pct)?|time left|remaining time|up|down)`

// bothSides refuses a prompt that buys both outcomes.
const bothSides = "the prompt names both sides, UP and DOWN: a strategy buys one"

var (
	reUnsupported = regexp.MustCompile(`\b(rsi|macd|moving averages?|ema|sma|bollinger(?: bands?)?|vwap|volume|stochastic|atr|fibonacci|sentiment|news|order ?books?|funding rates?|open interest|candles?|trailing|` +
		// Conditions no field says, nor a number: read as nothing, the
		// strategy traded whatever the volatility, trend or day.
		`volatil(?:e|ity)|trend(?:s|ing|ed)?|(?:il)?liquid(?:ity)?|big (?:drop|move|jump|spike|dip|rally)|crash(?:es|ed)?|pumps?|dumps?|` +
		`weekdays?|weekends?|overnight|(?:us|u\.s\.|asia|asian|europe|european|london|new york|ny) (?:hours|session|open)|trading hours)\b`)
	reShort = regexp.MustCompile(`\b(short|sell short|shorting)\b`)
	// reSizing is a size that changes trade by trade, or a share of a
	// balance: "compound the winnings", "double down", "scale in",
	// "average down", "50% of my balance".
	reSizing = regexp.MustCompile(`\b(?:compound(?:s|ed|ing)?|doubl(?:e|es|ing)\s+down|(?:anti-?)?martingale|scal(?:e|es|ing)\s+(?:in|out|into)|` +
		`averag(?:e|es|ing)\s+down|pyramid(?:s|ing)?|kelly|(?:of|my|the)\s+(?:balance|bankroll|capital|portfolio))\b`)
	// reHedge is a hedge or an arbitrage, which buys both sides.
	reHedge = regexp.MustCompile(`\b(?:hedg(?:e|es|ed|ing)|arbitrage|arbitraging|arb|arbs|arbing)\b`)
	// reMovePct is a change in percent ("BTC is up more than 0.5%",
	// "falls 1% in the last 60 seconds", "moves over 2%"): no field a
	// phrase reads, while its percentage was read as the side's price
	// (price_up > 0.005) and its time as the time left. A level in percent
	// ("drops below 35%", "rises over 60%") is no change.
	reMovePct = regexp.MustCompile(`\b(?:(?:(?:is|are|was|has\s+been|goes|went)\s+(?:up|down)|mov(?:e|es|ed|ing)(?:\s+(?:up|down))?)\s+(?:by\s+)?` +
		`(?:(?:more\s+than|at\s+least|less\s+than|over|under|above|below)\s+)?|` +
		`(?:ris(?:e|es|en|ing)|rose|fall(?:s|en|ing)?|fell|drop(?:s|ped|ping)?|dip(?:s|ped|ping)?|gain(?:s|ed|ing)?|los(?:e|es|t|ing)|jump(?:s|ed|ing)?|` +
		`climb(?:s|ed|ing)?|sink(?:s|ing)?|sank|spike(?:s|d)?|pump(?:s|ed|ing)?|dump(?:s|ed|ing)?|surg(?:e|es|ed|ing)|plung(?:e|es|ed|ing)|rall(?:y|ies|ied))\s+` +
		`(?:by\s+)?(?:(?:more\s+than|at\s+least|less\s+than)\s+)?)` + reNum + `\s*(?:%|percent)`)
	// reDistanceFromStart is an amount that is no percentage away from the
	// market's start ("$50 above the start price", "100 above the open"):
	// a distance no field holds (coin_move_pct is a percentage, reCoinMove),
	// whose amount was read as the coin's price itself (coin_price > 50).
	reDistanceFromStart = regexp.MustCompile(`(?:\$\s*)?\d[\d,]*(?:\.\d+)?\s*(?:\$|dollars?|usd|bucks|points?|c|cents?|¢)?\s+` +
		`(?:above|over|below|under|higher\s+than|lower\s+than)\s+(?:the\s+|its\s+)?(?:market'?s\s+)?` +
		`(?:price\s+to\s+beat|strike(?:\s+price)?|start(?:ing)?(?:\s+price)?|open(?:ing)?(?:\s+price)?|initial\s+price|reference\s+price|beginning)\b`)
	// reAgainst is a bet against a side ("bet against UP", "fade UP");
	// group 1 is the side.
	reAgainst = regexp.MustCompile(`\b(?:bet(?:s|ting)?\s+against|go(?:es|ing)?\s+against|fade|fades|fading)\s+(?:the\s+)?(up|down)\b`)
	// reYesNo is a buy of YES or NO ("buy NO", "the yes side"); group 1 is
	// a word after "no" that makes it no outcome ("buy no more than").
	reYesNo = regexp.MustCompile(`\b(?:buy|long|back|bet on)\s+(?:the\s+)?(?:yes|no)\b(\s+(?:more|less|fewer|later|earlier|sooner|than|matter)\b)?|` +
		`\bthe\s+(?:yes|no)\s+(?:side|token|outcome|shares?)\b`)
	// reProfitCompare is a comparison of the position's profit or loss
	// ("exit when profit reaches 20%"), which no field says: group 1 is a
	// "stop", "take" or "cut" before it, whose phrases read their own
	// ("stop loss below 0.2", "take profit above 0.6").
	reProfitCompare = regexp.MustCompile(`(\b(?:stop|take|cut(?:\s+(?:the|my|our|your))?)[- ]?)?\b(profits?|gains?|loss(?:es)?|pnl|p&l|returns?|drawdown)\s+` +
		`(?:(?:is|are|goes|go|gets|get)\s+)?(?:\b(?:` + reOps + `)\b|<=|>=|==|<|>)`)
	// reBothSides is a buy of both outcomes in one phrase ("buy UP and
	// DOWN"), which reSide reads as its first side alone.
	reBothSides = regexp.MustCompile(`\b(?:buy|long|back|bet on)\s+(?:the\s+)?(?:up|down)\s+(?:and|&|or|\+|/)\s+(?:the\s+)?(?:up|down)\b|\b(?:buy|back|bet on)\s+both\s+(?:sides|outcomes|tokens)\b`)
	// reTurn is a turn to a side ("reverse to DOWN", "flip into UP"): to
	// the other side than the one bought it is a second buy, whose
	// condition was read as an exit alone; to the same side ("the market
	// flips to UP") it buys nothing else.
	reTurn = regexp.MustCompile(`\b(?:revers(?:e|es|ed|ing)|flip(?:s|ped|ping)?|switch(?:es|ed|ing)?|rotat(?:e|es|ed|ing))\s+(?:the\s+position\s+)?(?:to|into|over\s+to)\s+(?:the\s+)?(up|down)\b`)
	reSide = regexp.MustCompile(`\b(?:buy|long|back|bet on|go long(?: on)?)\s+(?:the\s+)?(up|down)\b|\bthe\s+(up|down)\s+(?:side|token|outcome)\b`)
	// A stop loss and a take profit, also as traders write them: "SL 20%",
	// "stop 0.2", "stop-out at 0.3", "TP 0.6", "target 0.6", "profit
	// target of 0.6".
	reStopPct   = regexp.MustCompile(`\b` + reStopWord + `(?:\s+(?:of|at|is))?\s+` + reNum + `\s*(?:%|percent)|` + reNum + `\s*(?:%|percent)\s+stop[- ]?loss\b`)
	reStopPrice = regexp.MustCompile(`\b` + reStopWord + `(?:\s+(?:of|at|is|below|under))?\s+` + reNum)
	reTakePct   = regexp.MustCompile(`\b` + reTakeWord + `(?:\s+(?:of|at|is|when|above))?\s+` + reNum + `\s*(?:%|percent)`)
	reTakePrice = regexp.MustCompile(`\b` + reTakeWord + `(?:\s+(?:of|at|is|when|above))?\s+` + reNum)
	// reShares is the shares a trade buys: "200 shares", "1 share", "5
	// contracts", "position size 50", "trade size of 20 shares". Group 1
	// or 2 is the number.
	reShares = regexp.MustCompile(reNum + `\s+(?:shares?|contracts?)\b|` +
		`\b(?:position|trade)\s+size(?:\s+(?:of|is))?\s*:?\s*` + reNum + `(?:\s+(?:shares?|contracts?)\b)?`)
	reOrder = regexp.MustCompile(`\b(limit|market) orders?\b`)
	// reMoneyAfter and reShareUnitAfter are a unit written after a size's
	// number that makes it no count of shares: money ("50 dollars"), a
	// share of something ("10%").
	reMoneyAfter     = regexp.MustCompile(`^\s*(?:dollars?|usdc?|bucks)\b`)
	reShareUnitAfter = regexp.MustCompile(`^\s*(?:%|percent\b)`)
	// reFeeRate is a fee rate: "fee rate 7%", "fee rate: 0.07", "2% fees",
	// "taker fee 7%", "fees of 2%" (a percentage: "fees of 2" is no rate).
	reFeeRate = regexp.MustCompile(`\b(?:taker\s+)?fee[ -]?rate(?:\s*:\s*|(?:\s+(?:of|is|at))?\s+)` + reNum + `\s*(%|percent)?|` + reNum + `\s*(%|percent)\s+(?:taker\s+)?fees?\b|` +
		`\b(?:taker\s+)?fees?(?:\s*:\s*|(?:\s+(?:of|is|at))?\s+)` + reNum + `\s*(%|percent)`)
	reFeeExp   = regexp.MustCompile(`\bfee[ -]?exponent(?:\s+(?:of|is))?\s+` + reNum)
	reWithFees = regexp.MustCompile(`\b(?:with|including|include|counting|count|after|paying|pay)\s+(?:the\s+)?(?:polymarket(?:'s)?\s+|market(?:'s)?\s+|taker\s+|trading\s+)*fees\b`)
	// reNoLatency and reNoFees switch a cost off ("no latency", "ignore
	// latency", "latency off"); reNoCosts both ("no fees or latency",
	// "ignoring fees and latency", "fees and latency off").
	reNoLatency = regexp.MustCompile(`\b(?:no|without(?:\s+any)?|zero|ignore|ignoring)\s+(?:the\s+)?(?:order\s+)?(?:latency|delay|lag)\b|` +
		`\b(?:order\s+)?(?:latency|delay|lag)\s+(?:off|disabled)\b`)
	// reZeroLatency is a latency of 0 without a unit, which needs none:
	// "with 0 latency", "0 delay", "latency: 0", "latency of 0".
	reZeroLatency = regexp.MustCompile(`\b0(?:\.0+)?\s+(?:order\s+)?(?:latency|delay|lag)\b|` +
		`\b(?:order\s+)?(?:latency|delay|lag)(?:\s*[:=]\s*|\s+(?:of|is|at)\s+|\s+)0(?:\.0+)?\b`)
	reNoFees  = regexp.MustCompile(`\b(?:without|no|ignore|ignoring|zero)\s+(?:the\s+)?` + reFeeKind + `fees\b|\b` + reFeeKind + `fees\s+(?:off|disabled)\b`)
	reNoCosts = regexp.MustCompile(`\b(?:without|no|ignore|ignoring|zero)\s+(?:the\s+)?(?:` +
		reFeeKind + `fees\s+(?:or|and|&|nor)\s+(?:order\s+)?(?:latency|delay|lag)|(?:order\s+)?(?:latency|delay|lag)\s+(?:or|and|&|nor)\s+(?:the\s+)?` + reFeeKind + `fees)\b|` +
		`\b(?:` + reFeeKind + `fees\s+(?:and|&)\s+(?:order\s+)?(?:latency|delay|lag)|(?:order\s+)?(?:latency|delay|lag)\s+(?:and|&)\s+` + reFeeKind + `fees)\s+(?:off|disabled)\b`)
	reLatency = regexp.MustCompile(reNum + `\s*(ms|milliseconds?|s|secs?|seconds?)\s+(?:of\s+)?(?:order\s+)?(?:latency|delay|lag)\b|` +
		`\b(?:latency|delay|lag)(?:\s*:\s*|\s+(?:of\s+)?)` + reNum + `\s*(ms|milliseconds?|s|secs?|seconds?)\b`)
	reMarketType = regexp.MustCompile(`\b(?:5|15)\s*-?\s*(?:m|min|minute)s?\s+(?:markets?|windows?)\b|\b(?:5|15)(?:m|min)\b|\b(?:1|4|24)\s*-?\s*(?:h|hr|hour)s?\s+(?:markets?|windows?)\b|\b(?:1|4|24)(?:h|hr)\b|` +
		// The hourly and daily markets in words (typesNamed reads them as 1h and 24h).
		`(?:\b\d+\s*-?\s*)?\b(?:hourly|daily)\s+(?:markets?|windows?)\b|\b\d+\s*-?\s*days?\s+(?:markets?|windows?)\b`)
	reExitWord = regexp.MustCompile(`\b(exit|sell|close|get out|leave|cash out|(?:take[- ]?profits?|stop[- ]?loss(?:es)?|cut (?:the |my )?loss(?:es)?)\s+(?:when|if|once|as soon as)|` +
		// "cut losses below 0.2" is an exit's comparison wherever it
		// stands, as "stop loss below 0.2" is (reStopPrice).
		`cut (?:(?:the|my|our|your) )?loss(?:es)?)\b`)
	reTimeLeft = regexp.MustCompile(`(?:\bwith\s+)?(?:\b(more than|over|at least|less than|under|at most|only|fewer than)\s+)?` + reNum + `\s*` + reUnit + `\s+(?:(?:of\s+)?(?:the\s+)?(?:time|market|window)\s+)?(?:(?:is|are)\s+)?(?:left|remaining|remains?|to go)\b`)
	reTimeLast = regexp.MustCompile(`\bin the (last|final|first) ` + reNum + `\s*` + reUnit + `(?:\s+of\s+(?:the\s+)?(?:time|market|window))?`)
	reCompare  = regexp.MustCompile(`(?:\b` + reField + `\s+)?(?:(?:is|goes|gets|trades|stays)\s+)?(?:\b(` + reOps + `)\b|(<=|>=|==|<|>))\s*` + reNum + `(\s*(?:%|percent))?`)
	reDigit    = regexp.MustCompile(`[0-9]`)
	// reVagueTime is a time in the market without an amount: "early in the
	// market", "near the end", "at the open", "halfway through".
	reVagueTime = regexp.MustCompile(`\b(?:early|late|later|earlier)\s+(?:in|into)\s+(?:the\s+)?(?:market|window|round)\b|` +
		`\b(?:near|close\s+to|towards?|approaching)\s+(?:the\s+)?(?:end|close|expiry|expiration|resolution|settlement|open|start)\b|` +
		`\b(?:at|after|right\s+after|just\s+after|soon\s+after)\s+(?:the\s+)?(?:market(?:'s)?\s+)?(?:open|opening|start|beginning)\b|` +
		`\b(?:start|beginning|open|opening)\s+of\s+the\s+(?:market|window|round)\b|\bhalf[- ]?way\b|\bmid[- ]?way\b`)
	// reEllipsisSide is a side compared right after another comparison,
	// by its bare name: the "and DOWN below 0.35" of "buy UP below 0.35
	// and DOWN below 0.35". Groups: 1 the number before, 2 the side, 3
	// its operator in words or 4 as a symbol.
	reEllipsisSide = regexp.MustCompile(reNum + `\s*(?:%|percent)?\s*,?\s*(?:\band\b|&|\bor\b)\s+(?:the\s+)?(up|down)\s+` +
		`(?:(?:is|goes|gets|trades)\s+)?(?:\b(` + reOps + `)\b|(<=|>=|<|>))`)
	// reRange is both bounds of a field: "price_up is between 0.4 and
	// 0.6", "between 40 and 60%". Groups: 1 the field, 2 and 4 the bounds,
	// 3 and 5 their percent signs.
	reRange = regexp.MustCompile(`(?:\b` + reField + `\s+)?(?:(?:is|goes|gets|trades|stays|stay|remains?)\s+)?\bbetween\s+` +
		reNum + `(\s*(?:%|percent))?\s+(?:and|&)\s+` + reNum + `(\s*(?:%|percent))?`)
	// reCents is an amount in cents ("95c", "95 cents", "95¢"): a price
	// in cents is rewritten as the price in dollars it is before the
	// grammar reads the prompt (centsAsPrices), and any other refused.
	// Group 1 is the amount as written, group 2 its number.
	reCents = regexp.MustCompile(`(?:^|[^a-z0-9_.$-])(` + reNum + `\s*(?:¢|cents?\b|c\b))`)
	// reComparedBefore ends text that compares a field, or the coin by its
	// name, with what follows: "when BTC price is above ", "imbalance_up >
	// ", "when ETH is above ". Group 1 is the field (reField); without it
	// the coin's price by another name ("price of bitcoin") or the coin by
	// its name, with a verb, is compared.
	// Only what stands right before the amount is its subject: in "buy UP
	// on BTC when it drops below 40c" the coin is not what is compared.
	// reFeeBefore and reFeeAfter are the words of a fee rate before or
	// after an amount ("fee rate of 2c", "2c taker fee").
	reFeeBefore      = regexp.MustCompile(`\b(?:taker\s+)?fee[ -]?rate(?:\s+(?:of|is|at))?\s*$`)
	reFeeAfter       = regexp.MustCompile(`^\s*(?:taker\s+)?fees?\b`)
	reComparedBefore = regexp.MustCompile(`(?:` +
		`(?:\b` + reField + `|\bprice of (?:the )?(?:` + reCoinName + `|coin))(?:'s)?` +
		`\s*(?:(?:is|goes|gets|trades|stays)\s+)?(?:(?:\b(?:` + reOps + `|at|of|is|to)\b|<=|>=|==|=|<|>)\s*)?` +
		// The coin by its bare name is compared only with a verb of its
		// own ("ETH is above "): "on BTC at " and "BTC below " name the
		// market, whose price of UP a cents amount means.
		`|\b(?:the )?(?:coin|` + reCoinName + `)(?:'s)?\s+(?:is|goes|gets|trades|stays)\s+(?:(?:\b(?:` + reOps + `)\b|<=|>=|==|=|<|>)\s*)?` +
		// Or with a verb that compares ("BTC drops below "), which
		// coinBefore reads as the coin's price too.
		`|\b(?:the )?(?:coin|` + reCoinName + `)(?:'s)?\s+(?:drops|falls|dips|sinks|rises|climbs|crosses|breaks|reaches|hits|exceeds)\b(?:\s+(?:above|over|below|under))?\s*` +
		`)$`)
	// Numbers in words, which the grammar does not read: left over, they
	// are refused as a leftover digit is, not dropped.
	reNumberWord = regexp.MustCompile(`\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|` +
		`hundred|thousand|dozen|half|halves|quarters?|thirds?|double|twice|triple|thrice)\b`)
	// reFieldNamed finds a field's name where a comparison could have read
	// it.
	reFieldNamed = regexp.MustCompile(`\b` + reField + `\b`)
	// "a minute", "an hour": one of a unit, in words.
	reArticleTime = regexp.MustCompile(`\ban?\s+(?:millisecond|second|sec|minute|min|hour|hr|day)\b`)
	reNegation    = regexp.MustCompile(`\b(?:not|never|unless|except)\b|n['’]t\b`)
	reOr          = regexp.MustCompile(`\bor\b`)
	reAnd         = regexp.MustCompile(`\band\b`)
	// reRestricts finds a word that makes the condition after it one on
	// the exit before it ("exit above 0.6 when spread < 0.1", "... only in
	// the last 10%"); reSeparated a mark that lists the two apart ("exit
	// above 0.6, in the last 10%").
	reRestricts = regexp.MustCompile(`\b(?:only|but|provided|as long as|so long as|whenever|when|while|if|once|with|during|unless)\b`)
	reSeparated = regexp.MustCompile(`[,;/]|\botherwise\b`)
	reDownField = regexp.MustCompile(`\b(?:price|bid|mid|display|imbalance)[ _]down\b|\bdown price\b`)
	// reBareDown is DOWN's price by its bare name, compared ("when down
	// is below 0.3"); group 1 is a verb before it, whose "down" is a
	// direction ("goes down below"), not the field.
	reBareDown = regexp.MustCompile(`(\b(?:go|goes|going|went|gone|drops?|dropped|falls?|fell|comes?|came|moves?|moved|trades?|traded|turns?|turned|ticks?|is|gets?|got)\s+)?` +
		`\bdown\s+(?:(?:is|goes|gets|trades|stays)\s+)?(?:\b(?:` + reOps + `)\b|<=|>=|==|<|>)`)
	// reVerbSubject ends the text before a word of reProfitCompare whose
	// subject is a field, "it" or a price ("it returns above 0.5", "the price
	// gains over 0.6"): there the word is a verb, not the position's
	// profit.
	reVerbSubject = regexp.MustCompile(`(?:\b` + reField + `|\bit|\bprice)\s+$`)
	// reSideByMarket is a side chosen market by market, which a strategy
	// cannot say: it buys the side it names.
	reSideByMarket = regexp.MustCompile(`\b(?:favou?rites?|underdogs?|whichever\s+(?:side|outcome|token)|either\s+(?:side|outcome|token)|` +
		`the\s+(?:cheaper|cheapest|dearer|more\s+expensive|most\s+expensive|leading|losing|winning|likelier|less\s+likely|more\s+likely)\s+(?:side|outcome|token))\b`)

	// Resting orders and re-entry control (DESIGN 6).
	//
	// reGTC is a resting order: "rest a bid 1 tick above", "post a maker
	// order at the best bid", "GTC orders", and a limit order placed at or
	// above the bid ("limit order at the bid", "limit orders 2 ticks above
	// the best bid"), which rests too: a GTC, not the LIMIT order that
	// takes the ask at once. Group 1 or 2 is the ticks above the bid.
	reGTC = regexp.MustCompile(`\b(?:rest|post)(?:s|ing)?\s+(?:(?:a|an|the|our|my)\s+)?(?:(?:maker|limit|gtc)\s+)?(?:bid|order|buy)s?\b` +
		`(?:\s+` + reTicksAbove + `(?:\s+the\s+best\s+bid)?|\s+at\s+the\s+best\s+bid)?|` +
		`\blimit\s+(?:buy\s+)?(?:orders?|bids?)\s+(?:at\s+the\s+(?:best\s+)?bid|` + reTicksAbove + `\s+the\s+(?:best\s+)?bid)\b|` +
		`\b(?:maker|gtc|resting)\s+(?:bid|order)s?\b|\bgtc\b`)
	rePostOnly   = regexp.MustCompile(`\bpost[- ]?only\b`)
	reCancel     = regexp.MustCompile(`\bcancel(?:\s+(?:it|them|the\s+order|the\s+bid|unfilled\s+orders?|orders?))?\s+(?:after|in)\s+` + reNum + `\s*` + reDur + `\b`)
	reQueueFront = regexp.MustCompile(`\bqueue\s+at\s+the\s+front\b|\bfront\s+of\s+the\s+queue\b|\boptimistic\s+queue(?:\s+model)?\b`)
	reQueueBack  = regexp.MustCompile(`\b(?:risk[- ]averse|pessimistic|conservative)\s+queue(?:\s+model)?\b|\bback\s+of\s+the\s+queue\b`)
	reRebates    = regexp.MustCompile(`\b(?:with|include|including|count|counting)\s+(?:the\s+)?(?:maker\s+)?rebates\b`)
	// reCooldown is a wait after an exit before the next entry, in its
	// many words: "cool down 30 s", "cooldown: 5m", "cooldown period of 5m",
	// "a 5-minute cooldown", "wait 30 s between trades", "pause 1h between
	// each entry", "5m between trades", "at least 15m between entries",
	// "a 5m gap between trades", "re-enter only after 5m", "trades 5m
	// apart", "space trades by 5m". Each
	// alternative has its amount and unit as a pair of groups (the first
	// pair that matched is the cooldown: cooldownOf). Its "5m" or "1h" is
	// time, not markets (typesNamed).
	reCooldown = regexp.MustCompile(`\bcool(?:[- ]?down|ing[- ]off)(?:\s+(?:period|time))?(?:\s*:\s*|(?:\s+(?:of|for|is))?\s+)` + reNum + `\s*` + reDur + `\b|` +
		reNum + `\s*-?\s*` + reDur + `\s+cool(?:[- ]?down|ing[- ]off)\b|` +
		`\b(?:wait|pause)(?:\s+(?:at\s+least|for))?\s+` + reNum + `\s*` + reDur + `\s+(?:` + reBetweenTrades + `|after\s+(?:each\s+|an\s+|every\s+)?(?:trade|exit)s?|before\s+(?:re-?entering|entering\s+again))|` +
		`(?:\bat\s+least\s+)?` + reNum + `\s*-?\s*` + reDur + `\s+(?:(?:of\s+)?(?:wait(?:ing)?|gap|pause|break)\s+)?` + reBetweenTrades + `|` +
		`\bre-?enter(?:ing)?\s+(?:only\s+)?after\s+(?:at\s+least\s+)?` + reNum + `\s*` + reDur + `\b|` +
		`\b(?:trades|entries)\s+(?:at\s+least\s+)?` + reNum + `\s*` + reDur + `\s+apart\b|` +
		`\bspace(?:d)?\s+(?:out\s+)?(?:the\s+)?(?:trades|entries)(?:\s+out)?\s+(?:by\s+)?(?:at\s+least\s+)?` + reNum + `\s*` + reDur + `(?:\s+apart)?\b`)
	// reCadence is a rhythm said with "every": "trade every 5m", "check
	// every 5 minutes", "once every 15m", "at most one trade every hour".
	// It is time, not markets (cadenceAt tells the "every 5m markets" that
	// name them): a rhythm of trades is the wait between them (as "trades
	// 5m apart"), and a rhythm of checks no rule the replay has, which
	// checks the conditions on every snapshot. Groups: 1 the amount and 2
	// its unit, or 3 a unit in words ("every hour").
	reCadence = regexp.MustCompile(`(?:\b(?:at\s+most\s+)?(?:once|(?:one|1|a|a\s+single)\s+(?:trade|entry|bet|position))\s+)?\bevery\s+(?:` +
		reNum + `\s*-?\s*` + reDur + `|(second|sec|minute|min|hour|hr))\b`)
	// reCadenceMarkets starts the text after "every 5m" that makes it the
	// markets: "every 5m market", "every 1h BTC window".
	reCadenceMarkets = regexp.MustCompile(`^\s*(?:` + reCoinName + `\s+)?(?:up[/ -]?(?:or[ -])?down\s+)?(?:markets?|windows?|rounds?)\b`)
	// reCheckVerb is a verb of looking, whose rhythm ("check every 5
	// minutes") is one of checks, not of trades.
	reCheckVerb = regexp.MustCompile(`\b(?:re-?)?(?:check|checks|checking|evaluate|evaluates|evaluating|look|looks|looking|poll|polls|polling|` +
		`scan|scans|scanning|monitor|monitors|monitoring|watch|watches|watching|sample|samples|sampling|refresh|refreshes|refreshing)\b`)
	// reClauseEnd ends a clause: what stands before it is not the verb of
	// a rhythm after it (a full stop, not a decimal point: "0.45").
	reClauseEnd = regexp.MustCompile(`[;:,!?\n]|\.(?:\s|$)`)
	// reTimeBeforeWait ends the text before a cooldown that also reads as
	// the amount of a time in the market: "in the last 5 minutes between
	// trades" ("with 5m between trades" is a wait: no time in the market
	// is said with "with" but the time left).
	reTimeBeforeWait = regexp.MustCompile(`\b(?:in\s+)?(?:the\s+)?(?:last|first|final)\s+$`)
	reNoCooldown     = regexp.MustCompile(`\b(?:no|without(?:\s+a)?|zero)\s+cool[- ]?downs?\b`)
	reMaxEntries     = regexp.MustCompile(`\b(?:at most|no more than|never more than|not more than|up to|max(?:imum)?(?:\s+of)?)\s+` + reNum + `\s+(?:entries|entry|trades?|times)(?:\s+(?:per|a|each|in each)\s+market)?\b|` +
		reNum + `\s+(?:entries|entry|trades?)\s+(?:per|a|each|in each)\s+market\b`)
	reOnce = regexp.MustCompile(`\b(?:only\s+)?once\s+(?:per|a|each|in each)\s+market\b|` +
		// No re-entry: one entry a market ("no re-entry", "don't re-enter",
		// "only one trade per market").
		`\b(?:no|without(?:\s+any)?)\s+re-?entr(?:y|ies)\b|\b(?:never|don['’]?t|do\s+not|does\s+not|doesn['’]?t|without)\s+re-?enter(?:ing)?\b|` +
		`\b(?:only\s+)?(?:one|a\s+single|a|single)\s+(?:trade|entry|position)\s+(?:per|a|each|in each)\s+market\b`)
	// reFromTheStrike follows a change in percent that is the coin's move
	// from the price to beat ("moves 0.1% above the price to beat"), which
	// coin_move_pct holds (reCoinMove).
	reFromTheStrike = regexp.MustCompile(`^\s+(?:above|over|below|under)\s+(?:the\s+)?(?:price\s+to\s+beat|strike(?:\s+price)?)\b`)
	reCoinMove      = regexp.MustCompile(`(?:\b(?:` + reCoinName + `|the\s+coin|coin)(?:'s)?(?:\s+price)?\s+(?:is\s+)?)?` + reNum +
		`\s*(?:%|percent)\s+(above|over|below|under)\s+(?:the\s+)?(?:price\s+to\s+beat|strike(?:\s+price)?)\b`)
)

// changeInPercent is the first change in percent of b (reMovePct) that is
// not a move from the price to beat (reFromTheStrike), nil when none.
func changeInPercent(b []byte) []byte {
	for _, m := range reMovePct.FindAllIndex(b, -1) {
		if !reFromTheStrike.Match(b[m[1]:]) {
			return b[m[0]:m[1]]
		}
	}
	return nil
}

// reAfterDuration is a time after something, without what it counts from
// ("after 10 minutes", "once 30 s have passed"); reCrossBare a crossing
// without a direction ("crosses 0.5"), group 1 its amount.
var (
	reAfterDuration = regexp.MustCompile(`\b(?:after|once|when|within)\s+(?:at\s+least\s+)?(?:-?\d+(?:\.\d+)?|\.\d+)\s*` + reDur + `\b(?:\s+(?:have|has)\s+(?:passed|elapsed|gone\s+by))?|` +
		`(?:-?\d+(?:\.\d+)?|\.\d+)\s*` + reDur + `\s+(?:have|has)\s+(?:passed|elapsed|gone\s+by)\b`)
	reCrossBare = regexp.MustCompile(`\b(?:cross(?:es|ed|ing)?|breaks?|broke|breaking)\s+(?:the\s+)?(?:level\s+(?:of\s+)?)?(?:\$)?(-?(?:\d+(?:\.\d+)?|\.\d+))`)
)

// reHoldToEnd is a hold to the market's end ("hold to expiry", "exit at
// the close", "let it ride to settlement"), which every position without
// an exit does.
var reHoldToEnd = regexp.MustCompile(`\b(?:hold|holds|holding|keep|keeps|ride|rides|riding|exit|sell|close)\b[^.;]*?\b(?:to|until|till|into|through|at)\s+` +
	`(?:the\s+)?(?:market(?:'s)?\s+)?(?:expiry|expiration|resolution|settlement|maturity|end|close|finish)\b|` +
	`\buntil\s+(?:the\s+)?market\s+(?:ends|closes|resolves|settles|expires)\b`)

// promptText is the lower-cased prompt; what a phrase uses is blanked, so
// that no later phrase reads it again and what is left over shows.
type promptText struct{ b []byte }

// take calls fn with the position and groups of every match of re in
// [lo, hi) and blanks the matches fn accepts.
func (t *promptText) take(re *regexp.Regexp, lo, hi int, fn func(at int, m []string) (bool, error)) error {
	for _, loc := range re.FindAllSubmatchIndex(t.b[lo:hi], -1) {
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = string(t.b[lo+loc[2*i] : lo+loc[2*i+1]])
			}
		}
		ok, err := fn(lo+loc[0], m)
		if err != nil {
			return err
		}
		if ok {
			for i := lo + loc[0]; i < lo+loc[1]; i++ {
				t.b[i] = ' '
			}
		}
	}
	return nil
}

// reCostWord finds a word of costs (fees, rebates, latency) that the cost
// phrases left unread, and costHints says how to write each (by its word
// without a plural s).
var (
	reCostWord = regexp.MustCompile(`\b(fees?|rebates?|latency|delay|lag)\b`)
	costHints  = map[string]string{
		"fee":     `"with fees" for the market's own taker fees, "fee rate 7%" for a rate of your own, or "no fees"; or leave it out and set feeModel`,
		"rebate":  `"with rebates" to count the estimated maker rebates in the pnl; or leave it out and set includeRebates`,
		"latency": `the delay with its unit ("250 ms latency") or "no latency"; or leave it out and set latencyMs`,
		"delay":   `the delay with its unit ("250 ms latency") or "no latency"; or leave it out and set latencyMs`,
		"lag":     `the delay with its unit ("250 ms latency") or "no latency"; or leave it out and set latencyMs`,
	}
)

// reCompactType is a compact market type ("5m", "15min", "1h", "4hr") at
// the start of the text, and isWordByte tells a letter, digit or
// underscore: a compact type starts no word.
var reCompactType = regexp.MustCompile(`^(?:(?:5|15)(?:m|min)|(?:1|4|24)(?:h|hr))\b`)

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// reOrderWord finds a word of resting orders that their phrases left
// unread, and orderHints says how to write each.
var (
	reOrderWord = regexp.MustCompile(`\b(makers?|cancel)\b`)
	orderHints  = map[string]string{
		"maker":  `"rest a bid" (a GTC maker order), with "post only" to never take; or leave it out and set orderType GTC`,
		"cancel": `"cancel after 60 s" with a resting order; or leave it out and set cancelAfterMs`,
	}
)

// readPrompt applies the grammar to a prompt for markets of type mt;
// orderType is the request's ("" when it gives none).
func readPrompt(prompt string, mt store.MarketType, orderType string, base *preset) (pr promptRules, err error) {
	// lower is the prompt lower-cased, as written: the phrases blank what
	// they read in t, and some look at the words around them in lower.
	lower := strings.ToLower(prompt)
	t := &promptText{b: []byte(lower)}
	pr.holdsToEnd = reHoldToEnd.MatchString(lower)
	refuse := func(format string, args ...any) error { return invalid("prompt", fmt.Sprintf(format, args...)) }

	if m := reUnsupported.Find(t.b); m != nil {
		return pr, refuse("the built-in generator cannot use %q: conditions compare one of %s with a number", m, strings.Join(replay.Fields(), ", "))
	}
	for _, loc := range reProfitCompare.FindAllSubmatchIndex(t.b, -1) {
		m := [][]byte{t.b[loc[0]:loc[1]], nil, t.b[loc[4]:loc[5]]}
		if loc[2] >= 0 {
			m[1] = t.b[loc[2]:loc[3]]
		}
		if len(m[1]) == 0 && !reVerbSubject.Match(t.b[:loc[0]]) {
			return pr, refuse("the built-in generator cannot read a condition that compares the position's %q: conditions compare a market's fields "+
				"(%s) with a number; for a target or a limit on the position write e.g. \"take profit at 20%%\" or \"stop loss of 20%%\"",
				m[2], strings.Join(replay.Fields(), ", "))
		}
	}
	if m := reSideByMarket.Find(t.b); m != nil {
		return pr, refuse("the built-in generator cannot choose the side market by market (%q): a strategy buys the side it names; write \"buy UP ...\" or \"buy DOWN ...\"", m)
	}
	if reShort.Match(t.b) {
		return pr, refuse("strategies only buy: to bet against UP, buy DOWN (\"buy DOWN when price_down drops below 0.4\")")
	}
	// A bet against a side, or on an outcome these markets do not have:
	// read with no side named, each bought UP, whatever the idea.
	if m := reAgainst.FindSubmatch(t.b); m != nil {
		side, other := strings.ToUpper(string(m[1])), replay.SideUp
		if side == replay.SideUp {
			other = replay.SideDown
		}
		return pr, refuse("strategies buy a side: to bet against %s, buy %s (\"buy %s when price_%s drops below 0.4\")", side, other, other, strings.ToLower(other))
	}
	for _, m := range reYesNo.FindAllSubmatch(t.b, -1) {
		if len(m[1]) == 0 {
			return pr, refuse("these markets' outcomes are UP and DOWN, not YES and NO: write \"buy UP ...\" (the coin ends at or above its start) or \"buy DOWN ...\"")
		}
	}
	if m := reSizing.Find(t.b); m != nil {
		return pr, refuse("the built-in generator cannot read %q: every trade buys the same number of shares (positionSize: \"200 shares\", or set it), "+
			"so a size that changes trade by trade, or a share of a balance, cannot be expressed", m)
	}
	if m := changeInPercent(t.b); m != nil {
		return pr, refuse("the built-in generator cannot read %q: a change in percent is no field it reads from words; of the coin's moves it reads the one from the price to beat "+
			"(\"when BTC is 0.1%% above the price to beat\", coin_move_pct) and, by its name, the change over the last 60 seconds (\"coin_return_60s > 0.5\"); "+
			"a price in percent is a level (\"drops below 35%%\")", m)
	}
	if m := reDistanceFromStart.Find(t.b); m != nil {
		return pr, refuse("the built-in generator cannot read %q: of a move from the market's start it reads the coin's, in percent (\"when BTC is 0.1%% above the price to beat\", coin_move_pct); "+
			"an amount in dollars or of a token's price from its start is no field, and conditions compare a field with a fixed number", m)
	}
	if m := reHedge.Find(t.b); m != nil {
		return pr, refuse("the prompt asks for %q, which buys both sides: a strategy buys one side (UP or DOWN), so a hedge or an arbitrage cannot be expressed; backtest each side on its own", m)
	}
	if reBothSides.Match(t.b) {
		return pr, refuse(bothSides)
	}
	turns := reTurn.FindAllSubmatch(t.b, -1) // checked against the side bought, once it is known
	// Prices in cents ("below 40c", "under 40 cents", "40¢") are read as
	// the prices they are, in dollars, before any phrase reads a number:
	// the grammar would read the number and leave the unit (95c refused
	// as 95, or 0.95c read as 0.95, its "c" dropped).
	if prompt, t.b, err = centsAsPrices(prompt, t.b, refuse); err != nil {
		return pr, err
	}
	lower = string(t.b) // its cents rewritten too, nothing blanked yet
	all := len(t.b)

	// The side first: fields without a name default to its price.
	type buy struct {
		at     int
		phrase string
	}
	var buys []buy // "buy UP" and the like, where they stand
	err = t.take(reSide, 0, all, func(at int, m []string) (bool, error) {
		if m[1] != "" {
			buys = append(buys, buy{at, m[0]})
		}
		side := strings.ToUpper(m[1] + m[2])
		if pr.side != "" && pr.side != side {
			return false, refuse(bothSides)
		}
		pr.side = side
		return true, nil
	})
	if err != nil {
		return pr, err
	}
	// With no side named, an entry that compares DOWN's price buys DOWN:
	// the entry is the text before the first exit word (as it is read
	// below), so that an exit on DOWN's price ("exit when down is above
	// 0.7") does not choose the side.
	entryText := t.b
	if loc := reExitWord.FindIndex(t.b); loc != nil {
		entryText = t.b[:loc[0]]
	}
	side := pr.side
	switch {
	case side != "":
	case base != nil:
		side = base.side
	case reDownField.Match(entryText), bareDown(entryText):
		side = replay.SideDown
	default:
		side = replay.SideUp
	}
	pr.side = side
	for _, m := range turns {
		if strings.ToUpper(string(m[1])) != side {
			return pr, refuse(bothSides)
		}
	}
	sidePrice := replay.FieldPriceUp
	if side == replay.SideDown {
		sidePrice = replay.FieldPriceDown
	}

	// Phrases that mean the same wherever they stand.
	var entry, exit []placed
	var takePct *float64
	takeAt := 0
	types := typesNamed(prompt) // the markets' windows the prompt names, for every count of markets
	steps := []struct {
		re *regexp.Regexp
		fn func(at int, m []string) (bool, error)
	}{
		// The count of markets, which Normalize read: "over 50 markets" is
		// no price above 50.
		{reMarketCount, func(_ int, m []string) (bool, error) { return countsMarkets(m[0], types), nil }},
		// Costs first: "15 ms" must not read as a 15m market, nor "7%" as
		// anything else.
		{reLatency, func(_ int, m []string) (bool, error) {
			v, _ := number(m[1] + m[3])
			if unit := m[2] + m[4]; !strings.HasPrefix(unit, "m") {
				v *= 1000
			}
			if v != math.Trunc(v) || v > replay.MaxLatencyMs {
				return false, refuse("a latency of %s ms is not allowed: it must be a whole number of milliseconds up to 60000 (one minute)", replay.FormatNum(v))
			}
			pr.latency = &v
			return true, nil
		}},
		{reFeeRate, func(_ int, m []string) (bool, error) {
			v, _ := number(m[1] + m[3] + m[5])
			written, most := replay.FormatNum(v), "1"
			if m[2] != "" || m[4] != "" || m[6] != "" {
				v = roundTo(v/100, 8)
				written, most = written+"%", "100%"
			}
			if v > 1 {
				return false, refuse("a fee rate of %s is more than %s: write it as a percentage (\"fee rate 7%%\") or a fraction (\"fee rate 0.07\")", written, most)
			}
			pr.feeModel, pr.feeRate = replay.FeeCustom, &v
			return true, nil
		}},
		{reFeeExp, func(_ int, m []string) (bool, error) {
			v, _ := number(m[1])
			if v != math.Trunc(v) || v < replay.MinFeeExponent || v > replay.MaxFeeExponent {
				return false, refuse("a fee exponent of %s is not allowed: it must be a whole number from 1 to 4", replay.FormatNum(v))
			}
			pr.feeExp = &v
			return true, nil
		}},
		{reNoCosts, func(int, []string) (bool, error) {
			if pr.feeModel == "" {
				pr.feeModel = replay.FeeNone
			}
			return true, nil // no latency: the default
		}},
		{reNoFees, func(int, []string) (bool, error) {
			if pr.feeModel == "" {
				pr.feeModel = replay.FeeNone
			}
			return true, nil
		}},
		{reWithFees, func(int, []string) (bool, error) {
			if pr.feeModel == "" {
				pr.feeModel = replay.FeeMarket
			}
			return true, nil
		}},
		{reNoLatency, func(int, []string) (bool, error) { return true, nil }}, // none: the default
		{reZeroLatency, func(at int, m []string) (bool, error) {
			// Not the 0 of "latency of 0.5" (no latency of a whole
			// number of ms), left to be refused as a number.
			if rest := t.b[at+len(m[0]):]; len(rest) > 1 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' {
				return false, nil
			}
			return true, nil // none: the default
		}},
		// Re-entry control and resting orders before the comparisons and
		// market types: "at most 3 trades" is not a price, nor "cool down 5
		// minutes" a 5m market.
		{reNoCooldown, func(int, []string) (bool, error) {
			pr.cooldown = new(float64) // 0: no cooldown, not the default
			return true, nil
		}},
		{reCooldown, func(at int, m []string) (bool, error) {
			if reTimeBeforeWait.Match(t.b[:at]) {
				return false, refuse("%q reads both as a time in the market and as a wait between trades: say them apart, e.g. \"in the last 5 minutes, with 5m between trades\"",
					strings.TrimSpace(string(t.b[reTimeBeforeWait.FindIndex(t.b[:at])[0]:at])+m[0]))
			}
			amount, unit := cooldownOf(m)
			ms := millis(amount, unit)
			if ms != math.Trunc(ms) || ms < 0 || ms > replay.MaxReentryCooldownMs {
				return false, refuse("a cooldown of %s ms is not allowed: it must be a whole number of milliseconds from 0 to 86400000 (a day)", replay.FormatNum(ms))
			}
			pr.cooldown = &ms
			return true, nil
		}},
		// A rhythm before the entry caps: "at most 1 trade every 5m" is
		// a wait between trades, not one entry a market.
		{reCadence, func(at int, m []string) (bool, error) {
			// Read in the prompt as written: the phrases taken so far
			// ("buy UP every 5m:") are blanked in t.b.
			markets, check, phrase := cadenceAt(lower, at, at+len(m[0]))
			if markets {
				return false, nil
			}
			if len(prompt) == len(t.b) {
				phrase = strings.TrimSpace(prompt[at+len(m[0])-len(phrase) : at+len(m[0])])
			}
			if check {
				pr.notes = append(pr.notes, fmt.Sprintf("The prompt's %q is no rule of the strategy: the replay checks the conditions on every recorded snapshot, so it may enter or exit between such checks.", phrase))
				return true, nil
			}
			amount, unit := m[1], m[2]
			if m[3] != "" {
				amount, unit = "1", m[3]
			}
			ms := millis(amount, unit)
			if ms != math.Trunc(ms) || ms < 0 || ms > replay.MaxReentryCooldownMs {
				return false, refuse("%q reads as a wait of %s ms between trades, which is not allowed: it must be a whole number of milliseconds from 0 to 86400000 (a day)", phrase, replay.FormatNum(ms))
			}
			if pr.cooldown != nil && *pr.cooldown != ms {
				return false, refuse("the prompt gives two waits between trades, a cooldown of %s and %q: name one", duration(int(*pr.cooldown)), phrase)
			}
			pr.cooldown = &ms
			pr.notes = append(pr.notes, fmt.Sprintf("The prompt's %q is read as a wait of %s after each exit before the next entry (the replay has no schedule of trades; it checks the conditions on every snapshot).", phrase, duration(int(ms))))
			return true, nil
		}},
		{reMaxEntries, func(_ int, m []string) (bool, error) {
			v, _ := number(m[1] + m[2])
			if v != math.Trunc(v) || v < 1 || v > replay.MaxEntriesPerMarketCap {
				return false, refuse("at most %s entries is not allowed: it must be a whole number from 1 to 10000", replay.FormatNum(v))
			}
			pr.maxEntries = &v
			return true, nil
		}},
		{reOnce, func(int, []string) (bool, error) {
			one := 1.0
			pr.maxEntries = &one
			return true, nil
		}},
		{rePostOnly, func(int, []string) (bool, error) {
			pr.postOnly = true
			return true, nil
		}},
		// "rest a bid", and "a limit order at the bid", which rests
		// there: a GTC, not the LIMIT order that takes the ask at once.
		{reGTC, func(_ int, m []string) (bool, error) {
			pr.order = replay.OrderGTC
			ticks := m[1] + m[2]
			if ticks == "" {
				return true, nil
			}
			v, _ := number(ticks)
			if v != math.Trunc(v) || v < 0 || v > replay.MaxLimitOffsetTicks {
				return false, refuse("a resting order %s ticks above the best bid is not allowed: it must be a whole number of ticks from 0 to 50", replay.FormatNum(v))
			}
			pr.offset = &v
			return true, nil
		}},
		{reCancel, func(_ int, m []string) (bool, error) {
			ms := millis(m[1], m[2])
			if ms != math.Trunc(ms) || ms < 1 || ms > replay.MaxCancelAfterMs {
				return false, refuse("cancelling after %s ms is not allowed: it must be a whole number of milliseconds from 1 to 86400000 (a day)", replay.FormatNum(ms))
			}
			pr.cancel = &ms
			return true, nil
		}},
		{reQueueFront, func(int, []string) (bool, error) {
			pr.queue = replay.QueueFront
			return true, nil
		}},
		{reQueueBack, func(int, []string) (bool, error) {
			pr.queue = replay.QueueRiskAverse
			return true, nil
		}},
		{reRebates, func(int, []string) (bool, error) {
			pr.rebates = true
			return true, nil
		}},
		{reStopPct, func(_ int, m []string) (bool, error) {
			v, _ := number(m[1] + m[2])
			if v < replay.MinMaxLossPercent || v > replay.MaxMaxLossPercent {
				return false, refuse("a stop loss of %s%% is out of range: it must be between 1%% and 100%% of the entry cost", replay.FormatNum(v))
			}
			pr.maxLoss = &v
			return true, nil
		}},
		{reTakePct, func(at int, m []string) (bool, error) {
			v, _ := number(m[1])
			takePct, takeAt = &v, at
			return true, nil
		}},
		{reStopPrice, func(at int, m []string) (bool, error) {
			v, err := priceValue(m[0], m[1], "stop loss", refuse)
			exit = append(exit, placed{at, replay.Condition{Field: sidePrice, Operator: replay.OpLessOrEqual, Value: v}})
			return err == nil, err
		}},
		{reTakePrice, func(at int, m []string) (bool, error) {
			v, err := priceValue(m[0], m[1], "take profit", refuse)
			exit = append(exit, placed{at, replay.Condition{Field: sidePrice, Operator: replay.OpGreaterOrEqual, Value: v}})
			return err == nil, err
		}},
		{reShares, func(at int, m []string) (bool, error) {
			rest := t.b[at+len(m[0]):]
			if strings.Contains(m[0], "$") || reMoneyAfter.Match(rest) {
				// "position size $50" or "50 dollars" is money, which no field holds.
				return false, refuse("%q is an amount of money: a trade's size is a number of shares (\"200 shares\"), or set positionSize", strings.TrimSpace(m[0]+string(reMoneyAfter.Find(rest))))
			}
			if u := reShareUnitAfter.Find(rest); u != nil || magnitudeSuffix(rest) {
				// "position size 10%" (of what?), "position size 100k": the
				// number alone would be a size the prompt never gave.
				if u == nil {
					n := 0
					for n < len(rest) && rest[n] >= 'a' && rest[n] <= 'z' {
						n++
					}
					u = rest[:n] // the magnitude: "k" of "100k"
				}
				return false, refuse("the built-in generator cannot use %q as a trade's size: give it as a whole number of shares (\"200 shares\"), or set positionSize",
					strings.TrimSpace(m[0]+string(u)))
			}
			v, _ := number(m[1] + m[2]) // one of them is empty
			if v < replay.MinPositionSize || v > replay.MaxPositionSize {
				return false, refuse("%s shares is out of range: a trade must be between 1 and 10000 shares", replay.FormatNum(v))
			}
			pr.size = &v
			return true, nil
		}},
		{reOrder, func(_ int, m []string) (bool, error) {
			o := strings.ToUpper(m[1])
			if pr.order != "" && pr.order != o {
				// One would be kept without a word ("market orders for
				// entry and limit orders for exit").
				return false, refuse("the prompt names %s and %s orders: a strategy uses one order type for its entries and exits; name one, or set orderType", pr.order, o)
			}
			pr.order, pr.orderPhrase = o, strings.TrimSpace(m[0])
			return true, nil
		}},
	}
	for _, s := range steps {
		if err := t.take(s.re, 0, all, s.fn); err != nil {
			return pr, err
		}
	}
	if pr.postOnly && pr.order == "" {
		pr.order = replay.OrderGTC // only a resting order can be post-only
	}

	// Entry before the first exit word, exit after it. Time left is read
	// before market phrases, so that "with 5 minutes left" is time left
	// (see readTimeLeft), not the "5 minutes" of a market type.
	// A stop loss or take profit left after their own phrases ("stop loss
	// when price_up falls below 0.2") starts the exits too, else its
	// comparison was an entry condition.
	split := all
	if loc := reExitWord.FindIndex(t.b); loc != nil {
		split = loc[0]
	}
	for _, b := range buys {
		if b.at > split && reCompare.Match(t.b[b.at:]) {
			// Its conditions would be read as exits ("buy UP below 0.3"
			// as the exit price_up < 0.3). One with no condition after it
			// ("then buy UP again after a 30 s cooldown") says what the
			// strategy does anyway.
			return pr, refuse("the prompt says to buy after it says when to exit (%q): a strategy has one set of entry conditions, "+
				"written before its exits, and after an exit it enters again on those by itself", b.phrase)
		}
	}
	segments := []struct {
		lo, hi int
		exit   bool
	}{{0, split, false}, {split, all, true}}
	// Where the exit segment's comparisons stand ("and" between two of
	// them is refused below).
	exitCompared := map[int]bool{}
	// Where the exit segment's times passed stand ("when 90% of the time
	// has passed"), which read as a condition on the exit before them
	// unless an "or" stands between.
	exitPassed := map[int]bool{}
	for _, seg := range segments {
		conds := &entry
		if seg.exit {
			conds = &exit
		}
		// mark records the exit conditions read since n.
		mark := func(n int, set map[int]bool) {
			if seg.exit {
				for _, p := range (*conds)[n:] {
					set[p.at] = true
				}
			}
		}
		n := len(*conds)
		if err := readTimePassed(t, seg.lo, seg.hi, seg.exit, conds, refuse); err != nil {
			return pr, err
		}
		mark(n, exitPassed)
		mark(n, exitCompared)
		n = len(*conds)
		if err := readTimeLeft(t, seg.lo, seg.hi, seg.exit, mt, conds, refuse); err != nil {
			return pr, err
		}
		mark(n, exitCompared)
		n = len(*conds)
		err := t.take(reCoinMove, seg.lo, seg.hi, func(at int, m []string) (bool, error) {
			v, _ := number(m[1])
			c := replay.Condition{Field: replay.FieldCoinMovePct, Operator: replay.OpGreaterOrEqual, Value: v}
			if m[2] == "below" || m[2] == "under" {
				c = replay.Condition{Field: replay.FieldCoinMovePct, Operator: replay.OpLessOrEqual, Value: -v}
			}
			*conds = append(*conds, placed{at, c})
			return true, nil
		})
		if err != nil {
			return pr, err
		}
		mark(n, exitCompared)
		last := ""
		if seg.exit {
			last = firstPriceField(inOrder(entry), sidePrice)
		}
		// A range first ("between 0.4 and 0.6"): read as two comparisons,
		// its "0.4" was left over.
		err = t.take(reRange, seg.lo, seg.hi, func(at int, m []string) (bool, error) {
			if seg.exit {
				return false, refuse("%q as an exit needs both of its bounds at once, but exit conditions are alternatives (any one exits the position): "+
					"write the bound that should exit (\"exit above 0.6\", \"exit below 0.2\")", strings.TrimSpace(m[0]))
			}
			field := sidePrice
			if m[1] != "" {
				field = fieldNamed(m[1])
			} else if w := reLastTradeBefore.Find(t.b[:at]); w != nil {
				return false, refuse(lastTradeRefusal, strings.TrimSpace(string(w)))
			} else if f := bookFieldBefore(t.b[:at], sidePrice); f != "" {
				field = f
			} else if coinBefore(t.b[:at], m[0], m[2]) {
				field = replay.FieldCoinPrice
			}
			percent := m[3] != "" || m[5] != ""
			lo, loErr := number(m[2])
			hi, hiErr := number(m[4])
			if loErr != nil || hiErr != nil {
				return false, refuse("%q is not a range of numbers", strings.TrimSpace(m[0]))
			}
			a, b := m[2], m[4]
			if lo > hi {
				a, b = b, a
			}
			for i, bound := range []struct{ op, amount string }{{replay.OpGreaterOrEqual, a}, {replay.OpLessOrEqual, b}} {
				c, _, err := comparison(field, bound.op, bound.amount, percent, strings.Contains(m[0], "$"+bound.amount), refuse)
				if err != nil {
					return false, err
				}
				entry = append(entry, placed{at + i, c})
			}
			last = field
			return true, nil
		})
		if err != nil {
			return pr, err
		}
		err = t.take(reCompare, seg.lo, seg.hi, func(at int, m []string) (bool, error) {
			if magnitudeSuffix(t.b[at+len(m[0]):]) {
				// "$100k", "1.5m": the number is not the one written.
				// Left untaken, it is refused as a leftover.
				return false, nil
			}
			if seg.exit {
				exitCompared[at] = true
			}
			field := last
			if m[1] != "" {
				field = fieldNamed(m[1])
			} else if w := reLastTradeBefore.Find(t.b[:at]); w != nil {
				return false, refuse(lastTradeRefusal, strings.TrimSpace(string(w)))
			} else if f := bookFieldBefore(t.b[:at], sidePrice); f != "" {
				field = f
			} else if coinBefore(t.b[:at], m[0], m[4]) {
				field = replay.FieldCoinPrice
			}
			if field == "" {
				field = sidePrice
			}
			op := m[3]
			if op == "" {
				op = opNamed(m[2])
			}
			c, note, err := comparison(field, op, m[4], m[5] != "", strings.Contains(m[0], "$"+m[4]), refuse)
			if err != nil {
				return false, err
			}
			if note != "" {
				pr.notes = append(pr.notes, note)
			}
			*conds = append(*conds, placed{at, c})
			last = field
			return true, nil
		})
		if err != nil {
			return pr, err
		}
	}

	// "buy UP at 0.45": the side's price at that or better; "sell at
	// 0.55": a target above the entry's price, a stop below it.
	if err := readAtPrices(t, lower, sidePrice, &entry, &exit, refuse); err != nil {
		return pr, err
	}

	// Market phrases ("on 15m markets", "5-minute windows", "4h"): the
	// request chooses the markets. A compact type, or an amount and its
	// unit followed by "markets" or "windows": a bare "5 minutes" is time,
	// read above ("with 5 minutes left"), or a number the grammar cannot
	// use, never dropped.
	// A phrase that names no market type ("2-day markets"), or a compact
	// type that is a duration ("hold for 5m"), is left, for its number to
	// be refused below.
	if err := t.take(reMarketType, 0, all, func(at int, m []string) (bool, error) {
		_, ok := marketsAt(lower, at, at+len(m[0]))
		return ok, nil
	}); err != nil {
		return pr, err
	}

	pr.entry = inOrder(entry)
	// "buy UP below 0.35 and DOWN below 0.35" buys both sides, each when
	// it is cheap: read as one entry, UP was bought when both were below
	// 0.35, which two prices summing to about 1 never are.
	if buys != nil {
		for _, m := range reEllipsisSide.FindAllStringSubmatchIndex(lower[:min(split, len(lower))], -1) {
			other := strings.ToUpper(lower[m[4]:m[5]])
			if other == side {
				continue
			}
			var op string
			if m[6] >= 0 {
				op = opNamed(lower[m[6]:m[7]])
			} else {
				op = lower[m[8]:m[9]] // a symbol is the operator's own name
			}
			for _, c := range pr.entry {
				if c.Field == sidePrice && downward(c.Operator) == downward(op) {
					return pr, refuse("the prompt names both sides, UP and DOWN (%q reads as a second buy): a strategy buys one; backtest each side on its own, "+
						"or, if %s's price is a condition of buying %s, name it as a field (\"price_%s\")",
						strings.TrimSpace(lower[m[0]:m[1]]), other, side, strings.ToLower(other))
				}
			}
		}
	}
	if takePct != nil {
		c, note, err := takeProfitPercent(*takePct, pr.entry, sidePrice, refuse)
		if err != nil {
			return pr, err
		}
		exit = append(exit, placed{takeAt, c})
		pr.notes = append(pr.notes, note)
	}
	pr.exit = inOrder(exit)

	// A negation or an "or" between entry conditions (which must all
	// hold) has no phrase here: the comparisons read without it would be
	// the opposite strategy ("not above 0.35" as above 0.35).
	if loc := reNegation.FindIndex(t.b); loc != nil {
		return pr, refuse("the built-in generator cannot read %q: write the condition itself (\"at most 0.35\" rather than \"not above 0.35\") and leave out what should not happen",
			quoteAround(prompt, t.b, loc[0]))
	}
	for i := 1; i < len(entry); i++ {
		if reOr.Match(t.b[entry[i-1].at:entry[i].at]) {
			return pr, refuse("the built-in generator cannot read \"or\" between entry conditions: a strategy enters when all of them hold (\"and\"); backtest each alternative on its own")
		}
	}
	// Entry conditions no snapshot can meet together ("below 0.4 ... more
	// than 0.5 left", the latter read as price_up > 0.5): the strategy
	// would never trade, and the backtest would say nothing of the idea.
	if a, b, ok := neverTogether(pr.entry); ok {
		var sb strings.Builder
		writeConditions(&sb, []replay.Condition{a, b}, " and ")
		return pr, refuse("the entry conditions %s can never hold at once, so the strategy would never enter; check how the prompt's numbers were read", sb.String())
	}
	// An exit that holds at every entry ("buy UP below 0.4 ... stop loss
	// at 0.5"): each position would be sold as soon as it is bought.
	if e, x, ok := exitWithEntry(pr.entry, pr.exit); ok {
		var in, out strings.Builder
		writeConditions(&in, []replay.Condition{e}, "")
		writeConditions(&out, []replay.Condition{x}, "")
		return pr, refuse("the exit %s holds whenever the entry %s does, so every position would be sold as soon as it is bought; check the prompt's numbers "+
			"(a stop loss is below the entry's price, a target above it)", out.String(), in.String())
	}
	// Likewise "and" between two exit comparisons of different fields
	// ("exit when price_up > 0.6 and time_remaining_pct < 50"): exit
	// conditions are alternatives, and read as such the strategy would
	// exit on either. Between separate exit rules ("take profit at 0.6 and
	// stop loss at 0.2"), or bounds of one field ("exit above 0.6 and below
	// 0.2"), it lists them.
	for i := 1; i < len(exit); i++ {
		a, b := exit[i-1], exit[i]
		if exitCompared[a.at] && exitCompared[b.at] && a.c.Field != b.c.Field && reAnd.Match(t.b[a.at:b.at]) {
			return pr, refuse("the built-in generator cannot read \"and\" between exit conditions: a strategy exits when any one of them holds (\"or\"), " +
				"so it cannot wait for several at once; write \"or\" if either should exit")
		}
		// "exit above 0.6 when 90% of the time has passed": the time is
		// a condition on the price's exit, which alternatives cannot say.
		if exitCompared[a.at] && exitCompared[b.at] && (exitPassed[a.at] || exitPassed[b.at]) && !reOr.Match(t.b[a.at:b.at]) {
			return pr, refuse("the built-in generator cannot read a time passed as a condition on another exit: a strategy exits when any one of its exit conditions holds, " +
				"so it cannot wait for several at once; write them as separate exits joined by \"or\" (\"exit above 0.6 or when 90%% of the time has passed\") if either should exit")
		}
		// "exit above 0.6 with 20% left", "sell above 0.6 when only 3
		// minutes remain", "exit above 0.6 only in the last 10%": one exit
		// with a condition on it, both to hold, which alternatives cannot
		// say (read as such the strategy would exit on either). Exits are
		// alternatives where "or" or an exit word of their own stands
		// between ("exit above 0.6 or with 20% left", "sell above 0.6,
		// close in the last 10%"), or a comma, semicolon, slash or
		// "otherwise" with no word that restricts ("exit above 0.6, in the
		// last 10%"); anything else is refused rather than guessed.
		between := t.b[a.at:b.at]
		listed := reOr.Match(between) || reExitWord.Match(between) || reSeparated.Match(between) && !reRestricts.Match(between)
		if exitCompared[a.at] && exitCompared[b.at] && a.c.Field != b.c.Field && !listed {
			var sb strings.Builder
			writeConditions(&sb, []replay.Condition{a.c, b.c}, " and ")
			return pr, refuse("the built-in generator reads the exit as %s, both to hold, but a strategy exits when any one of its exit conditions holds (\"or\"), "+
				"so it cannot wait for several at once; write \"or\" between them if either should exit (\"exit above 0.6 or with 20%% left\")", sb.String())
		}
	}
	// What the grammar cannot read, said by name rather than as a number
	// left over: a time after something ("exit above 0.6 after 10
	// minutes"), and a crossing without a direction ("crosses 0.5").
	if m := reAfterDuration.FindIndex(t.b); m != nil {
		phrase := strings.TrimSpace(string(t.b[m[0]:m[1]]))
		// An exit before it, with no "or" between, is what it would
		// have to hold together with.
		with := false
		for _, e := range exit {
			with = with || e.at < m[0] && e.at >= split && !reOr.Match(t.b[e.at:m[0]])
		}
		switch {
		case m[0] >= split && with:
			return pr, refuse("the built-in generator cannot read %q in the exit: exit conditions are alternatives (any one exits the position), so an exit cannot wait for a time "+
				"and another condition together, and the time a position has been held is no field; write separate exits joined by \"or\" (\"exit above 0.6 or with 5 minutes left\"), "+
				"with the time in the market as what is left or has passed (\"with 5 minutes left\", \"when 90%% of the time has passed\")", phrase)
		default:
			return pr, refuse("the built-in generator cannot tell what %q counts from: the time a position has been held is no field; of time in the market it reads what is left "+
				"(\"with 5 minutes left\") or the share that has passed (\"when 50%% of the time has passed\"), and a wait after each exit is a cooldown (\"cool down 10 minutes\")", phrase)
		}
	}
	if m := reCrossBare.FindSubmatchIndex(t.b); m != nil {
		amount := string(t.b[m[2]:m[3]])
		return pr, refuse("%q needs a direction: write \"crosses above %s\" or \"crosses below %s\" (or \"rises above %s\", \"falls below %s\")",
			strings.TrimSpace(string(t.b[m[0]:m[1]])), amount, amount, amount, amount)
	}

	// A time in the market without an amount ("early in the market",
	// "near the end", "at the open"): read as nothing, the strategy traded
	// all market long.
	if m := reVagueTime.Find(t.b); m != nil {
		return pr, refuse("the built-in generator cannot read %q: of time in the market it reads an amount (\"in the first 20%%\", \"with more than 5 minutes left\", "+
			"\"in the last 2 minutes\", \"exit with 10%% left\"); say how much", strings.TrimSpace(string(m)))
	}
	if loc := reDigit.FindIndex(t.b); loc != nil {
		if m := reCompactType.Find(t.b[loc[0]:]); m != nil && (loc[0] == 0 || !isWordByte(t.b[loc[0]-1])) {
			// A market type the words around it make a duration ("hold
			// for 5m"): said so, the refusal does not read as if the
			// markets were not supported.
			if mt, ok := typeOfPhrase(string(m)); ok {
				return pr, refuse("the built-in generator reads %q there as a duration, not the markets, and cannot use that duration: "+
					"for the %s markets write \"on %s markets\" (or set marketType); of time it reads what is left (\"with 20%% left\", \"in the last 5 minutes\") "+
					"and a wait between trades (\"5m between trades\", \"cool down 5m\")", string(m), mt, m)
			}
		}
		return pr, refuse("the built-in generator could not use %q in the prompt; it reads phrases such as \"buy UP when price_up drops below 0.35\", \"exit above 0.6 or with 20%% left\", \"take profit at 0.6\" and \"stop loss of 25%%\"",
			quoteAround(prompt, t.b, loc[0]))
	}
	// A cost the phrases above could not read ("with 250 ms latency and
	// fees", "fees included", "with latency") is refused, not dropped:
	// read without it, the backtest would leave out what the prompt asked
	// for.
	if m := reCostWord.FindSubmatch(t.b); m != nil {
		word := string(m[1])
		return pr, refuse("the built-in generator could not read what the prompt says of %q: write %s", word, costHints[strings.TrimSuffix(word, "s")])
	}
	// So is an order word ("as a maker", "cancel unfilled bids"): read
	// without it, the strategy would take the book, or rest for good. A
	// "maker" is read where the order rests anyway (GTC, said in the prompt
	// or the request: "rest a bid ... as a maker", "GTC as a maker").
	gtc := pr.order == replay.OrderGTC || orderType == replay.OrderGTC
	for _, m := range reOrderWord.FindAllSubmatch(t.b, -1) {
		word := strings.TrimSuffix(string(m[1]), "s")
		if word == "maker" && gtc {
			continue
		}
		return pr, refuse("the built-in generator could not read what the prompt says of %q: write %s", m[1], orderHints[word])
	}
	// A field named that no condition read: the number meant for it went
	// to another field ("the spread widens above 0.1" read as the side's
	// price above 0.1), or nowhere. (A bare "up" or "down" names a side.)
	for _, m := range reFieldNamed.FindAllSubmatchIndex(t.b, -1) {
		if w := string(t.b[m[2]:m[3]]); w != "up" && w != "down" {
			return pr, refuse("the prompt names %q but no condition reads it: put the comparison right after the field (\"spread above 0.1\", \"price_down below 0.4\")",
				strings.TrimSpace(string(t.b[m[0]:m[1]])))
		}
	}
	if loc := reArticleTime.FindIndex(t.b); loc != nil {
		return pr, refuse("the built-in generator could not use %q in the prompt: it reads numbers written in digits (\"cooldown of 60 s\", \"with 1 minute left\")",
			strings.TrimSpace(string(t.b[loc[0]:loc[1]])))
	}
	if loc := reNumberWord.FindIndex(t.b); loc != nil {
		return pr, refuse("the built-in generator could not use %q in the prompt: it reads numbers written in digits (\"stop loss of 10%%\", \"with more than 50%% left\", \"200 shares\")",
			quoteAround(prompt, t.b, loc[0]))
	}
	return pr, nil
}

// otherSide returns cs with every field of one side read of the other's
// (price_up as price_down, bid_down as bid_up, ...); fields of both sides
// or of neither (spread, time, the coin's price) stay.
func otherSide(cs []replay.Condition) []replay.Condition {
	out := make([]replay.Condition, len(cs))
	for i, c := range cs {
		if f, ok := strings.CutSuffix(c.Field, "_up"); ok && oneOf(f+"_down", replay.Fields()) {
			c.Field = f + "_down"
		} else if f, ok := strings.CutSuffix(c.Field, "_down"); ok && oneOf(f+"_up", replay.Fields()) {
			c.Field = f + "_up"
		}
		out[i] = c
	}
	return out
}

// bounds is the values a condition admits: lo to hi, each end included
// or not.
type bounds struct {
	lo, hi         float64
	loOpen, hiOpen bool
}

// boundsOf is the values c admits; ok is false for a crossing, which
// compares with the previous snapshot too.
func boundsOf(c replay.Condition) (b bounds, ok bool) {
	inf := math.Inf(1)
	switch c.Operator {
	case replay.OpLess:
		return bounds{-inf, c.Value, true, true}, true
	case replay.OpLessOrEqual:
		return bounds{-inf, c.Value, true, false}, true
	case replay.OpGreater:
		return bounds{c.Value, inf, true, true}, true
	case replay.OpGreaterOrEqual:
		return bounds{c.Value, inf, false, true}, true
	case replay.OpEqual:
		return bounds{c.Value, c.Value, false, false}, true
	}
	return bounds{}, false
}

// and is the values both a and b admit.
func (a bounds) and(b bounds) bounds {
	if b.lo > a.lo || b.lo == a.lo && b.loOpen {
		a.lo, a.loOpen = b.lo, b.loOpen
	}
	if b.hi < a.hi || b.hi == a.hi && b.hiOpen {
		a.hi, a.hiOpen = b.hi, b.hiOpen
	}
	return a
}

// empty reports whether no value is admitted.
func (a bounds) empty() bool { return a.lo > a.hi || a.lo == a.hi && (a.loOpen || a.hiOpen) }

// within reports whether every value a admits, b admits too.
func (a bounds) within(b bounds) bool {
	loIn := a.lo > b.lo || a.lo == b.lo && (a.loOpen || !b.loOpen)
	hiIn := a.hi < b.hi || a.hi == b.hi && (a.hiOpen || !b.hiOpen)
	return loIn && hiIn
}

// neverTogether returns two conditions on one field that no value meets
// at once (price_up < 0.4 and price_up > 0.5); crosses_* conditions are
// left out (they compare with the previous snapshot too).
func neverTogether(cs []replay.Condition) (replay.Condition, replay.Condition, bool) {
	for i, a := range cs {
		ba, ok := boundsOf(a)
		if !ok {
			continue
		}
		for _, b := range cs[i+1:] {
			bb, ok := boundsOf(b)
			if !ok || a.Field != b.Field {
				continue
			}
			if ba.and(bb).empty() {
				return a, b, true
			}
		}
	}
	return replay.Condition{}, replay.Condition{}, false
}

// exitWithEntry returns an exit condition that holds whenever the entry
// conditions do (entry price_up < 0.4, "stop loss at 0.5": price_up <=
// 0.5), with the entry condition that bounds its field: every position
// would be closed as soon as it is opened, a slip in the prompt's numbers
// rather than a strategy.
func exitWithEntry(entry, exit []replay.Condition) (replay.Condition, replay.Condition, bool) {
	for _, x := range exit {
		bx, ok := boundsOf(x)
		if !ok {
			continue
		}
		inf := math.Inf(1)
		in, bounded := bounds{-inf, inf, true, true}, false
		var by replay.Condition
		for _, e := range entry {
			if be, ok := boundsOf(e); ok && e.Field == x.Field {
				in, bounded, by = in.and(be), true, e
			}
		}
		if bounded && !in.empty() && in.within(bx) {
			return by, x, true
		}
	}
	return replay.Condition{}, replay.Condition{}, false
}

// readTimeLeft reads "with 20% left" and "in the last 10%" phrases of one
// segment. A bare amount ("with 20% left") means "while at least that much
// is left" before the exit word and "once no more than that is left" after
// it.
func readTimeLeft(t *promptText, lo, hi int, exit bool, mt store.MarketType, conds *[]placed, refuse func(string, ...any) error) error {
	err := t.take(reTimeLeft, lo, hi, func(at int, m []string) (bool, error) {
		field, v, err := timeLeft(m[2], m[3], mt, refuse)
		if err != nil {
			return false, err
		}
		var op string
		switch m[1] {
		case "more than", "over":
			op = replay.OpGreater
		case "at least":
			op = replay.OpGreaterOrEqual
		case "less than", "under", "fewer than":
			op = replay.OpLess
		case "at most", "only":
			op = replay.OpLessOrEqual
		default:
			op = replay.OpGreaterOrEqual
			if exit {
				op = replay.OpLessOrEqual
			}
		}
		if exit && (op == replay.OpGreater || op == replay.OpGreaterOrEqual) {
			return false, exitsAtOnce(m[0], refuse)
		}
		*conds = append(*conds, placed{at, replay.Condition{Field: field, Operator: op, Value: v}})
		return true, nil
	})
	if err != nil {
		return err
	}
	return t.take(reTimeLast, lo, hi, func(at int, m []string) (bool, error) {
		field, v, err := timeLeft(m[2], m[3], mt, refuse)
		if err != nil {
			return false, err
		}
		c := replay.Condition{Field: field, Operator: replay.OpLessOrEqual, Value: v}
		if m[1] == "first" {
			all := 100.0
			if field == replay.FieldTimeRemaining {
				all = mt.Duration().Seconds()
			}
			c = replay.Condition{Field: field, Operator: replay.OpGreaterOrEqual, Value: roundTo(all-v, 6)}
			if exit {
				return false, exitsAtOnce(m[0], refuse)
			}
		}
		*conds = append(*conds, placed{at, c})
		return true, nil
	})
}

// Time passed, as a share of the market: "when 90% of the time has
// passed", "once half the market has elapsed", "after half the market",
// "after the first 20% of the window", "in the second half". Each
// alternative has three groups: "first" ("in the first half": while at
// least half is left; "after the first 20%" is the share passed), "half"
// or a percentage, and the percentage's amount.
const (
	reShareOf     = `(?:of\s+)?(?:the\s+)?(?:time|market|window|round)(?:'s\s+time)?`
	reShare       = `(half|` + reNum + `\s*(?:%|percent))`
	reSharePassed = `\s+(?:has|have|is)\s+(?:passed|elapsed|gone(?:\s+by)?|run|gone\s+past|over|done)\b`
)

var reTimePassed = regexp.MustCompile(`(?:\b(?:when|once|after|as\s+soon\s+as|by\s+the\s+time)\s+)?(?:the\s+)?(first\s+)?` + reShare + `\s+` + reShareOf + reSharePassed + `|` +
	`\bafter\s+(?:the\s+)?(first\s+)?` + reShare + `\s+` + reShareOf + `\b|` +
	`\b(?:in|during)\s+the\s+(first\s+|second\s+|last\s+|final\s+)(half)(?:\s+of\s+(?:the\s+)?(?:time|market|window|round))?\b()`)

// readTimePassed reads reTimePassed in one segment as time_remaining_pct:
// after a share of the market has passed, at most the rest is left (<=);
// in its first share, at least the rest is (>=), which an exit cannot say
// (exitsAtOnce).
func readTimePassed(t *promptText, lo, hi int, exit bool, conds *[]placed, refuse func(string, ...any) error) error {
	return t.take(reTimePassed, lo, hi, func(at int, m []string) (bool, error) {
		share, amount := m[2]+m[5]+m[8], m[3]+m[6]+m[9]
		v := 50.0
		if share != "half" {
			v, _ = number(amount)
			if v > 100 {
				return false, refuse("%s%% of the market is more than all of it", replay.FormatNum(v))
			}
		}
		c := replay.Condition{Field: replay.FieldTimeRemainingPct, Operator: replay.OpLessOrEqual, Value: roundTo(100-v, 6)}
		if strings.TrimSpace(m[7]) == "first" {
			// "in the first half": while the first share lasts.
			if exit {
				return false, exitsAtOnce(m[0], refuse)
			}
			c.Operator = replay.OpGreaterOrEqual
		}
		*conds = append(*conds, placed{at, c})
		return true, nil
	})
}

// exitsAtOnce refuses an exit condition on time that holds from the
// market's start ("exit ... with more than 20% left", "in the first 10%"):
// as an exit, which any one condition triggers, it closes every position
// entered earlier than that on the next snapshot, which no one means.
func exitsAtOnce(phrase string, refuse func(string, ...any) error) error {
	return refuse("%q as an exit condition exits as soon as the position is open, from the market's start until then: exit conditions are alternatives, "+
		"each enough on its own. To enter only then, put it before the exit; to exit when little time is left, write e.g. \"exit with 20%% left\"", strings.TrimSpace(phrase))
}

// timeLeft reads an amount of time left as the field that says it: a
// percentage of the market time_remaining_pct, a duration (seconds,
// minutes, hours) time_remaining_s in seconds. A duration converted to a
// percentage of the market was rounded ("with 2 minutes left" on a 15m
// market, 13.333333), and missed the snapshot at exactly 2:00 left, whose
// percentage is 13.3333333333...; in seconds it is exact (120).
func timeLeft(amount, unit string, mt store.MarketType, refuse func(string, ...any) error) (string, float64, error) {
	v, _ := number(amount)
	if unit == "%" || unit == "percent" {
		if v > 100 {
			return "", 0, refuse("%s%% of the market is more than all of it", replay.FormatNum(v))
		}
		return replay.FieldTimeRemainingPct, v, nil
	}
	total := mt.Duration().Seconds()
	if strings.HasPrefix(unit, "s") {
		if total == 0 || v > total {
			return "", 0, refuse("%s seconds is longer than a %s market", replay.FormatNum(v), mt)
		}
		return replay.FieldTimeRemaining, v, nil
	}
	minutes := v
	if strings.HasPrefix(unit, "h") {
		minutes = v * 60
	}
	if total == 0 || minutes*60 > total {
		return "", 0, refuse("%s minutes is longer than a %s market", replay.FormatNum(minutes), mt)
	}
	return replay.FieldTimeRemaining, roundTo(minutes*60, 6), nil
}

// cadenceAt reads the match text[lo:hi] of reCadence: markets is true
// where it names the markets ("every 5m markets", or "every 5m:" heading
// the prompt or a sentence); check is true for a rhythm of checks (a verb
// of looking before it in its clause: "check every 5 minutes"); phrase is
// the clause up to the match's end, for a note.
func cadenceAt(text string, lo, hi int) (markets, check bool, phrase string) {
	start := 0
	if locs := reClauseEnd.FindAllStringIndex(text[:lo], -1); len(locs) > 0 {
		start = locs[len(locs)-1][1]
	}
	clause := text[start:lo]
	rest := text[hi:]
	if reCadenceMarkets.MatchString(rest) {
		return true, false, ""
	}
	heading := strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":") && strings.HasPrefix(text[lo:hi], "every") &&
		!strings.ContainsFunc(clause, func(c rune) bool { return c >= 'a' && c <= 'z' })
	if heading {
		return true, false, ""
	}
	return false, reCheckVerb.MatchString(clause), strings.TrimSpace(text[start:hi])
}

// cooldownOf is the amount and unit of a match of reCooldown: the first of
// its alternatives' pairs of groups that matched.
func cooldownOf(m []string) (amount, unit string) {
	for i := 1; i+1 < len(m); i += 2 {
		if m[i] != "" {
			return m[i], m[i+1]
		}
	}
	return "", ""
}

// millis reads an amount of time as milliseconds.
func millis(amount, unit string) float64 {
	v, _ := number(amount)
	switch {
	case unit == "ms" || strings.HasPrefix(unit, "milli"):
	case strings.HasPrefix(unit, "s"):
		v *= 1000
	case strings.HasPrefix(unit, "h"):
		v *= 3_600_000
	default: // minutes
		v *= 60_000
	}
	return roundTo(v, 6)
}

// comparison builds a condition, reading prices written as percentages;
// dollar is whether the amount was written with a dollar sign.
func comparison(field, op, amount string, percent, dollar bool, refuse func(string, ...any) error) (replay.Condition, string, error) {
	v, err := number(amount)
	if err != nil {
		return replay.Condition{}, "", refuse("%q is not a number", amount)
	}
	c := replay.Condition{Field: field, Operator: op, Value: v}
	written := writtenAs(v, percent, dollar)
	switch {
	case priceField(field):
		if v < 0 {
			return c, "", refuse("%s is a price between 0 and 1: %s is below 0, so the condition could never hold as written", field, written)
		}
		if percent {
			c.Value = roundTo(v/100, 6)
			if c.Value > 1 {
				return c, "", refuse("%s is a price between 0 and 1 (0%% to 100%%), and the prompt's %s is more than 100%%", field, written)
			}
			return c, "", nil
		}
		if v > 1 {
			if cents, ok := asCents(v, dollar); ok {
				return c, "", refuse("%s is a price between 0 and 1, and the prompt's %s is more than 1: for %s cents write %s (or %s%%)",
					field, written, replay.FormatNum(v), cents, replay.FormatNum(v))
			}
			return c, "", refuse("%s is a price between 0 and 1 (0.35 for 35 cents, or 35%%), and the prompt's %s is more than %s", field, written, writtenAs(1, false, dollar))
		}
	case field == replay.FieldTimeRemainingPct:
		if v > 100 || v < 0 {
			return c, "", refuse("time_remaining_pct is a percentage from 0 to 100: %s is outside", replay.FormatNum(v))
		}
	case field == replay.FieldCoinPrice:
		if percent {
			return c, "", refuse("coin_price compares with a price in dollars; a change of %s%% cannot be expressed as a condition", replay.FormatNum(v))
		}
	case field == replay.FieldImbalanceUp || field == replay.FieldImbalanceDown:
		if percent {
			c.Value = roundTo(v/100, 6)
		}
		if math.Abs(c.Value) > 1 {
			return c, "", refuse("%s is between -1 and 1 (all asks to all bids): %s is outside", field, written)
		}
	case field == replay.FieldTimeRemaining:
		if percent {
			return c, "", refuse("time_remaining_s counts seconds: for a percentage of the market use time_remaining_pct")
		}
	}
	return c, "", nil
}

// takeProfitPercent approximates "take profit at 20%" with an exit price:
// 20% above the entry's price threshold, the most the entry can pay.
func takeProfitPercent(pct float64, entry []replay.Condition, sidePrice string, refuse func(string, ...any) error) (replay.Condition, string, error) {
	for _, c := range entry {
		if c.Field != sidePrice || !downward(c.Operator) {
			continue
		}
		exact := roundTo(c.Value*(1+pct/100), 4)
		if exact > 1 {
			// Capped at 0.99, it was a different take profit, explained
			// as this one.
			return replay.Condition{}, "", refuse("a take profit of %s%% above the entry threshold %s is the price %s, which no price reaches (they end at 1): "+
				"give a smaller take profit, or an exit price (\"take profit at 0.95\")", replay.FormatNum(pct), replay.FormatNum(c.Value), replay.FormatNum(exact))
		}
		target := math.Min(0.99, exact)
		if target <= c.Value {
			return replay.Condition{}, "", refuse("a take profit of %s%% is too small to be a price above the entry's %s", replay.FormatNum(pct), replay.FormatNum(c.Value))
		}
		note := fmt.Sprintf("The take profit of %s%% is the exit price %s: %s%% above the entry threshold %s (conditions compare prices, not gains, so an entry below the threshold takes a little more).",
			replay.FormatNum(pct), replay.FormatNum(target), replay.FormatNum(pct), replay.FormatNum(c.Value))
		if target < exact {
			note = fmt.Sprintf("The take profit of %s%% above the entry threshold %s is %s, capped at the exit price %s.",
				replay.FormatNum(pct), replay.FormatNum(c.Value), replay.FormatNum(exact), replay.FormatNum(target))
		}
		return replay.Condition{Field: sidePrice, Operator: replay.OpGreaterOrEqual, Value: target}, note, nil
	}
	return replay.Condition{}, "", refuse("a take profit of %s%% needs an entry price to count from, such as \"buy UP when price_up drops below 0.35\"; or give the exit price: \"take profit at 0.6\"", replay.FormatNum(pct))
}

// priceValue reads a price (0 to 1) of a stop loss or take profit (what),
// from its phrase and the amount in it.
func priceValue(phrase, amount, what string, refuse func(string, ...any) error) (float64, error) {
	v, _ := number(amount)
	if v <= 1 {
		return v, nil
	}
	dollar := strings.Contains(phrase, "$"+amount)
	written := writtenAs(v, false, dollar)
	// The number's other reading, as a percentage: of the entry cost
	// lost, or of the entry's price gained; the number itself as the
	// example when it can be one.
	example := "25"
	if what == "take profit" {
		example = "20"
	}
	if !dollar && v <= replay.MaxMaxLossPercent {
		example = replay.FormatNum(v)
	}
	pct := fmt.Sprintf("for a loss of the entry cost write a percentage (\"stop loss of %s%%\")", example)
	if what == "take profit" {
		pct = fmt.Sprintf("for a gain over the entry's price write a percentage (\"take profit at %s%%\")", example)
	}
	if cents, ok := asCents(v, dollar); ok {
		return v, refuse("a %s at %s is a price, and prices are between 0 and 1: for %s cents write \"%s at %s\"; %s", what, written, replay.FormatNum(v), what, cents, pct)
	}
	return v, refuse("a %s at %s is a price, and prices are between 0 and 1 (0.35 for 35 cents): %s is more than %s; %s",
		what, written, written, writtenAs(1, false, dollar), pct)
}

// asCents is v read as cents, a price ("0.35" of 35), when the prompt
// evidently meant cents (or a percentage, the same price): a whole number
// from 2 to 99 written without a dollar sign. Other numbers above 1 (950,
// 1.5, $95) are no price in cents anyone writes, and a refusal that
// suggests one ("did you mean 9.5?") suggests what was not meant; nor is
// 100, whose price 1 no price passes ("stop loss at 1" exits at once).
func asCents(v float64, dollar bool) (string, bool) {
	if dollar || v != math.Trunc(v) || v < 2 || v > 99 {
		return "", false
	}
	return replay.FormatNum(roundTo(v/100, 6)), true
}

// writtenAs is an amount as the prompt wrote it, for a refusal: with its
// percent or dollar sign.
func writtenAs(v float64, percent, dollar bool) string {
	s := replay.FormatNum(v)
	switch {
	case percent:
		return s + "%"
	case dollar && v < 0:
		return "-$" + s[1:]
	case dollar:
		return "$" + s
	}
	return s
}

// reCentsRangeBefore ends the text before the upper bound of a range
// written in cents ("between 40 and 60 cents"), whose unit is the lower
// bound's too. Group 1 is the lower bound as written, 2 its number and 3
// its unit, if it has one.
var reCentsRangeBefore = regexp.MustCompile(`\bbetween\s+(` + reNum + `(\s*(?:%|percent|¢|cents?\b|c\b))?)\s+(?:and|&)\s+$`)

// centsAsPrices rewrites the prices a prompt writes in cents ("40c", "40
// cents", "40¢"; "between 40 and 60 cents", whose unit is both bounds')
// as the prices in dollars they are ("0.4"), in the prompt and in its
// lower-cased text: a whole or decimal number of cents from 1 to 99.99
// of a price (a side's, a bid's, the spread, a stop loss's or take
// profit's). What is no price is refused as before (centsRefusal): the
// coin's price, a fee rate, a field of another unit, and amounts no one
// writes as a price in cents ("100c", "950c", "0.95c", "$40c"). A bare
// number ("below 40") stays a number, refused on a price (comparison).
// The prompt is rewritten only where its lower-cased text has the same
// positions.
func centsAsPrices(prompt string, lower []byte, refuse func(string, ...any) error) (string, []byte, error) {
	type edit struct {
		lo, hi int
		to     string
	}
	var edits []edit
	// price reads one amount in cents, written as written, as a price in
	// dollars; subject is what it is an amount of (centsSubject).
	price := func(written, amount, subject string) (string, error) {
		v, err := number(amount)
		if err != nil || subject != "" || strings.Contains(written, "$") || v < 1 || v >= 100 {
			return "", refuse("%s", centsRefusal(written, amount, subject))
		}
		return replay.FormatNum(roundTo(v/100, 6)), nil
	}
	for _, m := range reCents.FindAllSubmatchIndex(lower, -1) {
		written, amount := string(lower[m[2]:m[3]]), string(lower[m[4]:m[5]])
		to, err := price(written, amount, centsSubject(lower[:m[2]], lower[m[3]:]))
		if err != nil {
			return prompt, lower, err
		}
		if r := reCentsRangeBefore.FindSubmatchIndex(lower[:m[2]]); r != nil && r[6] < 0 {
			// "between 40 and 60 cents": the lower bound is in cents too.
			first, firstAmount := string(lower[r[2]:r[3]]), string(lower[r[4]:r[5]])
			if strings.Contains(first, "$") {
				return prompt, lower, refuse("%q writes one bound in dollars and the other in cents: write both the same way (\"between 0.4 and 0.6\", \"between 40c and 60c\")",
					strings.TrimSpace(string(lower[r[0]:m[3]])))
			}
			lowTo, err := price(first+" cents", firstAmount, "")
			if err != nil {
				return prompt, lower, err
			}
			edits = append(edits, edit{r[2], r[3], lowTo})
		} else if r != nil && !reCents.Match(lower[r[2]-1:r[3]]) {
			// "between 40% and 60 cents": which unit is meant is not
			// said.
			return prompt, lower, refuse("%q writes its bounds in different units: write both the same way (\"between 40c and 60c\", \"between 40%% and 60%%\")",
				strings.TrimSpace(string(lower[r[0]:m[3]])))
		}
		edits = append(edits, edit{m[2], m[3], to})
	}
	if edits == nil {
		return prompt, lower, nil
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.lo - b.lo })
	same := len(prompt) == len(lower)
	var p, l strings.Builder
	at := 0
	for _, e := range edits {
		l.Write(lower[at:e.lo])
		l.WriteString(e.to)
		if same {
			p.WriteString(prompt[at:e.lo])
			p.WriteString(e.to)
		}
		at = e.hi
	}
	l.Write(lower[at:])
	if !same {
		return prompt, []byte(l.String()), nil
	}
	p.WriteString(prompt[at:])
	return p.String(), []byte(l.String()), nil
}

// feeRateSubject is centsSubject's answer for a fee rate.
const feeRateSubject = "fee rate"

// centsSubject is what an amount in cents, between the texts before and
// after it, is an amount of: feeRateSubject, the field compared with it
// (comparedBefore), or "" for a price (a side's, a stop loss's or a take
// profit's).
func centsSubject(before, after []byte) string {
	if reFeeBefore.Match(before) || reFeeAfter.Match(after) {
		return feeRateSubject
	}
	if f := comparedBefore(before); f != "" && !priceField(f) {
		return f
	}
	return ""
}

// centsRefusal says why an amount in cents (written, with its number
// amount) is refused, and how to write it when it is a price; subject is
// what it is an amount of (centsSubject).
func centsRefusal(written, amount, subject string) string {
	v, _ := number(amount)
	const reads = "the built-in generator reads prices in dollars, between 0 and 1, not in cents"
	switch subject {
	case "":
	case replay.FieldCoinPrice:
		return fmt.Sprintf("the built-in generator reads the coin's price in dollars (\"BTC price above 95000\"), not in cents: it cannot use %q", written)
	case feeRateSubject:
		return fmt.Sprintf("a fee rate is a rate, not an amount in cents: the built-in generator cannot use %q; "+
			"write it as a percentage (\"fee rate 7%%\") or a fraction (\"fee rate 0.07\")", written)
	default:
		return fmt.Sprintf("%s is %s, not an amount in cents: the built-in generator cannot use %q", subject, fieldTakes(subject), written)
	}
	switch {
	case v >= 1 && v < 100 && !strings.Contains(written, "$"):
		return fmt.Sprintf("%s: for %q write %s", reads, written, replay.FormatNum(roundTo(v/100, 6)))
	case v == 100:
		// A price of 1, which no price passes: no price anyone means.
		return fmt.Sprintf("%s (0.35 for 35 cents): %q is a whole dollar, where prices end", reads, written)
	case v > 100:
		return fmt.Sprintf("%s (0.35 for 35 cents): %q is more than a dollar, and prices end at 1", reads, written)
	default:
		return fmt.Sprintf("%s (0.35 for 35 cents): %q is not an amount of cents it can read; write the price in dollars", reads, written)
	}
}

// comparedBefore is the field that text before an amount compares with
// it (reComparedBefore), coin_price for the coin by its name; "" when the
// text ends in no comparison of a field.
func comparedBefore(before []byte) string {
	m := reComparedBefore.FindSubmatch(before)
	switch {
	case m == nil:
		return ""
	case len(m[1]) > 0:
		return fieldNamed(string(m[1]))
	default:
		return replay.FieldCoinPrice
	}
}

// priceField reports whether field is a price, from 0 to 1.
func priceField(field string) bool {
	switch field {
	case replay.FieldPriceUp, replay.FieldPriceDown, replay.FieldSpread, replay.FieldBidUp, replay.FieldBidDown,
		replay.FieldMidUp, replay.FieldMidDown, replay.FieldDisplayUp, replay.FieldDisplayDown:
		return true
	}
	return false
}

// fieldTakes says what a field that is no price takes, for a refusal.
func fieldTakes(field string) string {
	switch field {
	case replay.FieldImbalanceUp, replay.FieldImbalanceDown:
		return "a number from -1 to 1 (all asks to all bids)"
	case replay.FieldTimeRemainingPct:
		return "a percentage of the market from 0 to 100"
	case replay.FieldTimeRemaining:
		return "a number of seconds"
	case replay.FieldCoinMovePct:
		return "a percentage from the price to beat"
	case replay.FieldCoinReturn60s:
		return "a percentage change over 60 seconds"
	}
	return "no price"
}

// bareDown reports whether the prompt compares DOWN's price by its bare
// name ("when down is below 0.3"; reBareDown).
func bareDown(b []byte) bool {
	for _, m := range reBareDown.FindAllSubmatch(b, -1) {
		if len(m[1]) == 0 {
			return true
		}
	}
	return false
}

// reCoinBefore ends the text before a comparison that the coin by its
// bare name stands right before ("when BTC is above 95000"), and reVerbOp
// starts a comparison with a verb of its own ("is above", "drops below").
var (
	reCoinBefore = regexp.MustCompile(`\b` + reCoinName + `(?:'s)?\s+$`)
	reVerbOp     = regexp.MustCompile(`^(?:is|goes|gets|trades|stays|drops|falls|dips|sinks|rises|climbs|crosses|breaks|reaches|hits|exceeds)\b`)
)

// coinBefore reports whether a comparison (match, of the amount) compares
// the coin named by its bare name right before it (text before the
// match): with a verb ("BTC is above 95000", "SOL drops below 150"), or
// with an amount no price reaches ("BTC > 95000"). Without either, the
// name is the markets' ("buy UP on BTC below 0.4": UP's price).
func coinBefore(before []byte, match, amount string) bool {
	if !reCoinBefore.Match(before) {
		return false
	}
	if reVerbOp.MatchString(match) {
		return true
	}
	v, err := number(amount)
	return err == nil && v > 1
}

// reBookWordBefore ends text that names a book figure without its side
// right before a comparison: "the bid is", "the best bid", "UP's mid
// price", "the book imbalance", "the displayed price of DOWN". Group 1 or
// 3 is the side, when named; group 2 the figure.
var reBookWordBefore = regexp.MustCompile(`(?:\b(up|down)(?:'s)?\s+)?\b(?:best\s+)?(bid|mid(?:[- ]?point)?|(?:book\s+)?imbalance|display(?:ed)?\s+price|shown\s+price)` +
	`(?:\s+price)?(?:\s+(?:of|on)\s+(?:the\s+)?(up|down)(?:\s+(?:side|token|outcome))?)?\s*$`)

// reOrderBidBefore ends text where "bid" is the order the strategy
// places, not the book's best bid: "with a limit bid below 0.4", "place a
// bid under 0.35", "at the bid below 0.4" mean paying at most that, the
// side's price (its ask), as they were read before book words were.
// reBookBidBefore is the book's: "the bid", "the best bid", "UP's bid",
// "the bid of DOWN"; a bare "bid" (its words before taken by other
// readings: "post only bid") stays the order's.
var (
	reOrderBidBefore = regexp.MustCompile(`\b(?:an?|limit|at(?:\s+the)?|post[- ]only|my|our)\s+(?:best\s+)?bid\s*$`)
	reBookBidBefore  = regexp.MustCompile(`\b(?:the|best|up|down|up's|down's)\s+bid(?:\s+price)?(?:\s+(?:of|on)\s+(?:the\s+)?(?:up|down)(?:\s+(?:side|token|outcome))?)?\s*$`)
)

// reLastTradeBefore ends text that names the last trade's price right
// before a comparison ("when the last trade is below", "the last traded
// price"): no field holds it, and it was read as the side's price.
var reLastTradeBefore = regexp.MustCompile(`\b(?:the\s+)?(?:last|latest|most\s+recent)\s+(?:trade[ds]?|fill|print|traded\s+price)(?:\s+price)?\s*$`)

// lastTradeRefusal says why a comparison of the last trade is refused.
const lastTradeRefusal = "the built-in generator cannot compare %q: no field holds the last trade's price; " +
	"price_up and price_down are the best ask, bid_up and bid_down the best bid, and display_up and display_down the price Polymarket shows " +
	"(the last trade when best ask − best bid is over 0.10, else the mid): name one of them"

// bookFieldBefore is the field a comparison compares when the text right
// before it (before) names a figure of the book by its word alone ("when
// the bid is above 0.3"): that field of the side it names, else of the
// side bought (sidePrice's). Read as the side's price, as they were, "the
// bid" was the ask and "the book imbalance above 0.3" a price above 0.3.
// "" when before names none.
func bookFieldBefore(before []byte, sidePrice string) string {
	m := reBookWordBefore.FindSubmatch(before)
	if m == nil || string(m[2]) == "bid" && (!reBookBidBefore.Match(before) || reOrderBidBefore.Match(before)) {
		return ""
	}
	side := "up"
	if sidePrice == replay.FieldPriceDown {
		side = "down"
	}
	if len(m[1]) > 0 {
		side = string(m[1])
	} else if len(m[3]) > 0 {
		side = string(m[3])
	}
	var field string
	switch w := string(m[2]); {
	case w == "bid":
		field = "bid_"
	case strings.HasPrefix(w, "mid"):
		field = "mid_"
	case strings.HasSuffix(w, "imbalance"):
		field = "imbalance_"
	default:
		field = "display_"
	}
	return field + side
}

// reBuyAt and reSellAt are an entry and an exit at a price ("buy UP at
// 0.45", "sell at 0.55"), reOrAt one more exit price after it ("or at
// 0.2"). Group 1 is the "at" and its amount (2) and percent sign (3).
var (
	reBuyAt = regexp.MustCompile(`\b(?:buy|long|back|bet on|go long(?: on)?)\s+(?:the\s+)?(?:(?:up|down)\s+)?(?:(?:side|token|outcome)\s+)?` +
		`(?:on\s+(?:the\s+)?` + reCoinName + `\s+)?(at\s+` + reNum + `(\s*(?:%|percent))?)`)
	reSellAt = regexp.MustCompile(`\b(?:exit|sell|close|get out|cash out)(?:\s+(?:it|them|the\s+position|up|down))?\s+(at\s+` + reNum + `(\s*(?:%|percent))?)`)
	reOrAt   = regexp.MustCompile(`^\s*,?\s*or\s+(at\s+` + reNum + `(\s*(?:%|percent))?)`)
)

// readAtPrices reads reBuyAt as an entry at the side's price or better
// (sidePrice <= the price) and reSellAt as an exit: at or above the price
// when it is above the entry's price bound (a target), at or below it when
// it is below (a stop). An exit price with no entry price bound, or at the
// bound, is refused: which it is cannot be told. lower is the prompt
// lower-cased, as t was before phrases blanked what they read.
func readAtPrices(t *promptText, lower, sidePrice string, entry, exit *[]placed, refuse func(string, ...any) error) error {
	// take reads the "at" of a match at [lo, hi) as a condition of the
	// side's price, unless a phrase took it already.
	take := func(lo, hi, amountLo, amountHi int, percent bool, op func(float64) (string, error), to *[]placed) error {
		if string(t.b[lo:hi]) != lower[lo:hi] {
			return nil
		}
		amount := lower[amountLo:amountHi]
		c, _, err := comparison(sidePrice, replay.OpLessOrEqual, amount, percent, strings.Contains(lower[lo:hi], "$"), refuse)
		if err != nil {
			return err
		}
		if c.Operator, err = op(c.Value); err != nil {
			return err
		}
		*to = append(*to, placed{lo, c})
		for i := lo; i < hi; i++ {
			t.b[i] = ' '
		}
		return nil
	}
	for _, m := range reBuyAt.FindAllStringSubmatchIndex(lower, -1) {
		if err := take(m[2], m[3], m[4], m[5], m[6] >= 0, func(float64) (string, error) { return replay.OpLessOrEqual, nil }, entry); err != nil {
			return err
		}
	}
	// The entry's bound on the side's price, which tells a target from a
	// stop: the exits taken below leave the entry as it is.
	bound, hasBound := 0.0, false
	for _, c := range inOrder(slices.Clone(*entry)) {
		if c.Field == sidePrice && downward(c.Operator) {
			bound, hasBound = c.Value, true
		}
	}
	for _, m := range reSellAt.FindAllStringSubmatchIndex(lower, -1) {
		op := func(v float64) (string, error) {
			switch {
			case hasBound && v > bound:
				return replay.OpGreaterOrEqual, nil
			case hasBound && v < bound:
				return replay.OpLessOrEqual, nil
			}
			w := replay.FormatNum(v)
			if hasBound {
				return "", refuse("\"at %s\" as an exit is the entry's own price, neither a target nor a stop: write \"take profit at\" a higher price or \"stop loss at\" a lower one", w)
			}
			return "", refuse("\"at %s\" as an exit is a target or a stop, and the entry names no price of %s to tell which: write \"take profit at %s\" or \"stop loss at %s\"", w, sidePrice, w, w)
		}
		spans := [][]int{m}
		for end := m[1]; ; {
			n := reOrAt.FindStringSubmatchIndex(lower[end:])
			if n == nil {
				break
			}
			for i := range n {
				if n[i] >= 0 {
					n[i] += end
				}
			}
			spans, end = append(spans, n), n[1]
		}
		for _, n := range spans {
			if err := take(n[2], n[3], n[4], n[5], n[6] >= 0, op, exit); err != nil {
				return err
			}
		}
	}
	return nil
}

// downward reports whether op holds below its value (<, <=,
// crosses_below).
func downward(op string) bool {
	return op == replay.OpLess || op == replay.OpLessOrEqual || op == replay.OpCrossesBelow
}

func firstPriceField(cs []replay.Condition, def string) string {
	for _, c := range cs {
		if c.Field == replay.FieldPriceUp || c.Field == replay.FieldPriceDown {
			return c.Field
		}
	}
	return def
}

func fieldNamed(s string) string {
	if named := strings.ReplaceAll(s, " ", "_"); oneOf(named, replay.Fields()) {
		return named // a field by its own name
	}
	s = strings.ReplaceAll(s, "_", " ")
	switch {
	case s == "up" || strings.Contains(s, "price up") || s == "up price" || s == "price of up":
		return replay.FieldPriceUp
	case s == "down" || strings.Contains(s, "price down") || s == "down price" || s == "price of down":
		return replay.FieldPriceDown
	case s == "spread":
		return replay.FieldSpread
	case strings.HasPrefix(s, "time remaining"), s == "time left", s == "remaining time":
		return replay.FieldTimeRemainingPct
	default: // coin price, btc price, bitcoin's price, ...
		return replay.FieldCoinPrice
	}
}

func opNamed(s string) string {
	switch s {
	case "crosses above", "crosses over", "breaks above":
		return replay.OpCrossesAbove
	case "crosses below", "crosses under", "breaks below":
		return replay.OpCrossesBelow
	case "is at or above", "at or above", "at least", "reaches", "hits":
		return replay.OpGreaterOrEqual
	case "is at or below", "at or below", "at most":
		return replay.OpLessOrEqual
	case "equals", "is exactly":
		return replay.OpEqual
	case "rises above", "rises over", "goes above", "goes over", "climbs above", "is above", "is over", "above", "over",
		"more than", "greater than", "higher than", "exceeds":
		return replay.OpGreater
	default:
		return replay.OpLess
	}
}

// magnitudeSuffix reports whether rest, the text right after a number,
// starts with a magnitude suffix written onto it ("k" of "100k", "m",
// "mm", "b", "bn"), which the grammar does not read: the number without it
// would be a thousand times (or more) off.
func magnitudeSuffix(rest []byte) bool {
	n := 0
	for n < len(rest) && rest[n] >= 'a' && rest[n] <= 'z' {
		n++
	}
	switch string(rest[:n]) {
	case "k", "m", "mm", "mn", "b", "bn":
		return true
	}
	return false
}

// number reads a number of the grammar ("1,000", "$95000", ".35").
func number(s string) (float64, error) {
	return strconv.ParseFloat(strings.NewReplacer(",", "", "$", "").Replace(s), 64)
}

func roundTo(x float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(x*p) / p
}

// quoteAround quotes the word around byte i of the prompt for a message.
func quoteAround(prompt string, work []byte, i int) string {
	lo, hi := i, i
	for lo > 0 && work[lo-1] != ' ' {
		lo--
	}
	for hi < len(work) && work[hi] != ' ' {
		hi++
	}
	if len(prompt) == len(work) {
		return strings.TrimSpace(prompt[lo:hi])
	}
	return strings.TrimSpace(string(work[lo:hi]))
}
