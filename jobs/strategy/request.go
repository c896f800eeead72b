package strategy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Limits and defaults of a generation request (SPEC 8; the defaults and
// MaxPromptLength are ours: SPEC names no defaults).
const (
	MinMarketCount     = 1
	MaxMarketCount     = 100
	DefaultMarketCount = 10
	// MaxPromptLength bounds the prompt in characters: a strategy idea fits
	// in a paragraph, and the bound caps what one request costs a model.
	MaxPromptLength = 2000
	// DefaultPositionSize is the size when neither the request nor the
	// prompt (nor a preset) gives one.
	DefaultPositionSize = 100
	// DefaultReentryCooldownMs is the wait after an exit before a
	// generated strategy may enter again, when neither the request nor
	// the prompt (nor the model) says (DESIGN 6).
	DefaultReentryCooldownMs = 30_000
)

// Request is the body of POST /v1/backtest-ai/generate and /strategy, with
// the JSON names of the reference service. The optional numbers are
// pointers so that a value given explicitly (which wins over whatever the
// prompt or a model says) can be told from one left out, and an explicit 0
// is refused rather than taken for "not given".
type Request struct {
	Prompt string `json:"prompt"`
	// Preset is one of Presets(), or empty.
	Preset string `json:"preset,omitempty"`
	// Coin is BTC, ETH or SOL (default BTC).
	Coin store.Coin `json:"coin,omitempty"`
	// MarketType is 5m, 15m, 1h, 4h or 24h (1hr, 4hr, 24hr are read too;
	// default 15m). Normalize puts it in the market_type vocabulary.
	MarketType store.MarketType `json:"marketType,omitempty"`
	// MarketCount is how many of the newest resolved markets /strategy
	// backtests (1-100, default 10).
	MarketCount    *int     `json:"marketCount,omitempty"`
	PositionSize   *float64 `json:"positionSize,omitempty"`
	MaxLossPercent *float64 `json:"maxLossPercent,omitempty"`
	OrderType      string   `json:"orderType,omitempty"`
	// The replay's costs (DESIGN 6), passed to every market of a backtest;
	// given here they win over what the prompt says. The exponent and the
	// latency are read as numbers so that 1.5 is refused by name.
	FeeModel    string   `json:"feeModel,omitempty"`
	FeeRate     *float64 `json:"feeRate,omitempty"`
	FeeExponent *float64 `json:"feeExponent,omitempty"`
	LatencyMs   *float64 `json:"latencyMs,omitempty"`
	// Re-entry control and resting orders (DESIGN 6); the resting-order
	// settings need orderType GTC here. A reentryCooldownMs given here,
	// 0 included, replaces the generated strategy's default 30000.
	OrderSettings
}

// requestKeys are the JSON keys of a Request.
var requestKeys = append([]string{"prompt", "preset", "coin", "marketType", "marketCount", "positionSize", "maxLossPercent", "orderType",
	"feeModel", "feeRate", "feeExponent", "latencyMs"}, orderSettingKeys...)

// UnmarshalJSON decodes a request; a key it does not have is a
// *replay.Error (VALIDATION_ERROR) naming it.
func (r *Request) UnmarshalJSON(b []byte) error {
	if err := replay.CheckKeys(b, "", requestKeys, nil); err != nil {
		return err
	}
	type plain Request // drops the methods, so decoding does not recurse
	var p struct {
		plain
		// marketCount as any JSON number (3.0 is as whole as 3): this
		// shallower field wins over plain's.
		MarketCount *float64 `json:"marketCount,omitempty"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// The keys are the body's own, not plain's or OrderSettings'.
			te.Field = strings.TrimPrefix(strings.TrimPrefix(te.Field, "plain."), "OrderSettings.")
		}
		return err
	}
	n, err := WholeNumber(p.MarketCount, "marketCount")
	if err != nil {
		return err
	}
	p.plain.MarketCount = n
	*r = Request(p.plain)
	return nil
}

// WholeNumber reads a count given as any JSON number: 3 and 3.0 alike (a
// JSON number has no integer type; clients that compute it, in Python or
// JavaScript, may send either), while 2.5 is a *json.UnmarshalTypeError
// naming field, as encoding/json reports a fraction decoded into an int.
// Values beyond ±1e15 are clamped there, far outside every range checked.
func WholeNumber(v *float64, field string) (*int, error) {
	if v == nil {
		return nil, nil
	}
	if *v != math.Trunc(*v) {
		return nil, &json.UnmarshalTypeError{Value: "number " + strconv.FormatFloat(*v, 'g', -1, 64), Type: reflect.TypeFor[int](), Field: field}
	}
	n := int(math.Max(-1e15, math.Min(*v, 1e15)))
	return &n, nil
}

// hasCosts reports whether the request states any of the replay's costs.
func (r *Request) hasCosts() bool {
	return r.FeeModel != "" || r.FeeRate != nil || r.FeeExponent != nil || r.LatencyMs != nil
}

// costs is a strategy carrying only the request's costs, for checking them.
func (r *Request) costs() replay.Strategy {
	var st replay.Strategy
	st.SetCosts(r.FeeModel, r.FeeRate, r.FeeExponent, r.LatencyMs)
	return st
}

// Count is the number of markets to backtest (after Normalize).
func (r *Request) Count() int {
	if r.MarketCount == nil {
		return DefaultMarketCount
	}
	return *r.MarketCount
}

// Normalize validates r with SPEC's ranges and fills in the market
// defaults (coin BTC, market type 15m, 10 markets), leaving the strategy
// parameters that were not given unset for the generator to choose. An
// *Error names the first problem: INVALID_ORDER_TYPE before
// VALIDATION_ERROR (as the replay endpoint ranks its codes), then body
// order.
func (r *Request) Normalize() error {
	if r.OrderType != "" && !oneOf(r.OrderType, replay.OrderTypes()) {
		return &Error{Code: replay.CodeInvalidOrderType, Field: "orderType",
			Message: fmt.Sprintf("orderType %q is not one of MARKET, LIMIT, GTC%s", replay.ClipEcho(r.OrderType), caseHint(r.OrderType, replay.OrderTypes()))}
	}
	prompt := strings.TrimSpace(r.Prompt)
	// A prompt of no letter or digit ("\u0000", "...") says nothing: it is
	// missing, rather than a generation spent on an empty idea.
	said := strings.ContainsFunc(prompt, func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) })
	switch n := utf8.RuneCountInString(prompt); {
	case !said && r.Preset == "":
		return invalid("prompt", "prompt is missing: describe the strategy in a sentence, e.g. \"buy UP when price_up drops below 0.35, exit above 0.6\", or choose a preset ("+strings.Join(Presets(), ", ")+")")
	case n > MaxPromptLength:
		return invalid("prompt", fmt.Sprintf("prompt is %d characters long: at most %d are allowed", n, MaxPromptLength))
	}
	if r.Preset != "" {
		if _, ok := presetNamed(r.Preset); !ok {
			return invalid("preset", fmt.Sprintf("preset %q is not one of %s", replay.ClipEcho(r.Preset), strings.Join(Presets(), ", ")))
		}
	}
	// The markets are the request's coin and marketType; a prompt that
	// names them ("on ETH 5m markets") chooses them where the request does
	// not, and one that names others than the request's is refused: read
	// as the request's defaults, BTC 15m, a backtest would have run on
	// markets the user did not mean, without a word.
	coin, mt := store.BTC, store.M15
	coins, types := coinsNamed(prompt), typesNamed(prompt)
	// Markets the service has none of, named where the prompt chooses the
	// markets: read as the defaults, "DOGE markets" ran on BTC's, and
	// "weekly markets" on 15m ones, without a word.
	if w := reOtherCoin.FindString(prompt); w != "" && r.Coin == "" && len(coins) == 0 {
		return invalid("prompt", fmt.Sprintf("the prompt names %s: the service records BTC, ETH and SOL up/down markets only; name one of them (or set coin), or leave the coin out for BTC", w))
	}
	if w := reOtherType.FindString(prompt); w != "" && r.MarketType == "" && len(types) == 0 {
		return invalid("prompt", fmt.Sprintf("the prompt names %q: the service records 5m, 15m, 1hr, 4hr and 24hr markets only; name one of them (or set marketType), or leave it out for 15m", w))
	}
	switch {
	case r.Coin != "":
		c, err := parseCoin(string(r.Coin), true)
		if err != nil {
			return err
		}
		coin = c
		if len(coins) > 0 && (len(coins) > 1 || coins[0] != c) {
			return invalid("prompt", fmt.Sprintf("the prompt names %s, but coin is %s: the request's coin chooses the markets; drop one or make them agree", joinCoins(coins), c))
		}
	case len(coins) > 1:
		return invalid("prompt", fmt.Sprintf("the prompt names %s: a strategy is tested on one coin's markets; name one, or set coin", joinCoins(coins)))
	case len(coins) == 1:
		coin = coins[0]
	}
	switch {
	case r.MarketType != "":
		t, err := parseMarketTypeField(string(r.MarketType), true)
		if err != nil {
			return err
		}
		mt = t
		if len(types) > 0 && (len(types) > 1 || types[0] != t) {
			return invalid("prompt", fmt.Sprintf("the prompt names %s markets, but marketType is %s: the request's marketType chooses the markets; drop one or make them agree", joinTypes(types), t))
		}
	case len(types) > 1:
		return invalid("prompt", fmt.Sprintf("the prompt names %s markets: a strategy is tested on one market type; name one, or set marketType", joinTypes(types)))
	case len(types) == 1:
		mt = types[0]
	}
	// A count of markets the prompt names ("over the last 50 markets")
	// chooses how many, as its coin chooses which.
	if m := reMarketCount.FindStringSubmatch(strings.ToLower(prompt)); m != nil && countsMarkets(m[0], types) {
		n, _ := strconv.Atoi(m[1])
		switch {
		case n < MinMarketCount || n > MaxMarketCount:
			return invalid("prompt", fmt.Sprintf("the prompt names %d markets (%q): %d markets is out of range: a backtest takes between %d and %d", n, strings.TrimSpace(m[0]), n, MinMarketCount, MaxMarketCount))
		case r.MarketCount != nil && *r.MarketCount != n:
			return invalid("prompt", fmt.Sprintf("the prompt names %d markets, but marketCount is %d: the request's marketCount chooses how many; drop one or make them agree", n, *r.MarketCount))
		case r.MarketCount == nil:
			r.MarketCount = &n
		}
	}
	if !mt.AvailableFor(coin) {
		return invalid("marketType", fmt.Sprintf("%s markets exist for BTC only; %s has 5m, 15m and 1hr markets", mt, coin))
	}
	if n := r.MarketCount; n != nil && (*n < MinMarketCount || *n > MaxMarketCount) {
		return invalid("marketCount", fmt.Sprintf("marketCount %d is out of range: it must be between %d and %d", *n, MinMarketCount, MaxMarketCount))
	}
	if v := r.PositionSize; v != nil && !inRange(*v, replay.MinPositionSize, replay.MaxPositionSize) {
		return invalid("positionSize", fmt.Sprintf("positionSize %s is out of range: it must be between 1 and 10000 shares", replay.FormatNum(*v)))
	}
	if v := r.MaxLossPercent; v != nil && !inRange(*v, replay.MinMaxLossPercent, replay.MaxMaxLossPercent) {
		return invalid("maxLossPercent", fmt.Sprintf("maxLossPercent %s is out of range: it must be between 1 and 100", replay.FormatNum(*v)))
	}
	if r.hasCosts() {
		st := r.costs()
		if err := st.CheckCosts(); err != nil {
			return fromReplay(err)
		}
	}
	// The request's own orderType: a resting-order setting without GTC
	// here is refused, not left to a prompt that may not ask for GTC.
	if err := r.OrderSettings.Check(r.OrderType); err != nil {
		return err
	}
	r.Prompt, r.Coin, r.MarketType = prompt, coin, mt
	return nil
}

// reOtherCoin finds a coin the service has no markets of, among the
// names a prompt would give one (words with another sense, such as
// "link", "near" or "dot", are left out, and so is Chainlink, whose price
// settles the 5m and 15m markets).
var reOtherCoin = regexp.MustCompile(`(?i)\b(?:doge|dogecoin|xrp|ripple|cardano|bnb|avax|avalanche|litecoin|ltc|polkadot|matic|shib|shiba|pepe|tron|aptos|arbitrum|hyperliquid|bch|bitcoin cash)\b`)

// reOtherType finds markets of a length the service has none of.
var reOtherType = regexp.MustCompile(`(?i)\b(?:weekly|monthly|yearly|annual|1-week|one-week|30m|30-minute|2h|2-hour|12h|12-hour)\s+(?:markets?|windows?)\b`)

// reMarketCount is a number of markets to backtest: "over the last 50
// markets", "test on 20 ETH 5m markets", "on the 30 most recent hourly
// markets". Group 1 is the count.
var reMarketCount = regexp.MustCompile(`\b(?:on|over|across|for|in|using|with)\s+(?:the\s+)?(?:(?:last|latest|newest|past|previous)\s+)?(\d{1,6})\s+` +
	`(?:(?:most\s+)?(?:recent|resolved|latest|newest|past|previous)\s+)*(?:` + reCoinName + `\s+)?` +
	`(?:(?:5|15)\s*-?\s*(?:m|min|minute)s?\s+|(?:1|4|24)\s*-?\s*(?:h|hr|hour)s?\s+|(?:hourly|daily)\s+)?(?:markets|windows|rounds)\b`)

// countsMarkets reports whether a match of reMarketCount counts markets:
// "2 daily markets", whose count reads as days too, names no market type
// (typeOfPhrase), and is left for the built-in generator to refuse rather
// than read as 2 markets of the default type.
func countsMarkets(phrase string, types []store.MarketType) bool {
	return len(types) > 0 || !strings.Contains(phrase, "daily") && !strings.Contains(phrase, "hourly")
}

// coinWords are the words a prompt names each coin by, in lower case: the
// one list every regexp that reads a coin is built from (reCoinName).
var coinWords = []struct {
	coin  store.Coin
	words []string
}{
	{store.BTC, []string{"btc", "bitcoin"}},
	{store.ETH, []string{"eth", "ether", "ethereum"}},
	{store.SOL, []string{"sol", "solana"}},
}

// reCoinName is a coin by any of its words (coinWords), a group that
// captures nothing: "(?:btc|bitcoin|eth|...)".
var reCoinName = func() string {
	var words []string
	for _, c := range coinWords {
		words = append(words, c.words...)
	}
	return `(?:` + strings.Join(words, "|") + `)`
}()

// reCoinWord finds the coins a prompt names.
var reCoinWord = regexp.MustCompile(`(?i)\b(` + reCoinName + `)\b`)

// coinsNamed is the coins the prompt names, each once, in order.
func coinsNamed(prompt string) []store.Coin {
	var out []store.Coin
	for _, m := range reCoinWord.FindAllStringSubmatch(prompt, -1) {
		word := strings.ToLower(m[1])
		for _, c := range coinWords {
			if slices.Contains(c.words, word) && !slices.Contains(out, c.coin) {
				out = append(out, c.coin)
			}
		}
	}
	return out
}

// reTypeParts splits a market phrase (reMarketType) into its amount and
// unit.
var reTypeParts = regexp.MustCompile(`(?i)(\d+)\s*-?\s*(m|min|minute|h|hr|hour)`)

// typesNamed is the market types the prompt names as markets (reMarketType:
// "on 5m markets", "15-minute windows", "4h", "hourly markets", "daily
// markets"), each once, in order; a duration ("with 5m left", "cool down
// 5m", "5m between trades") names none.
func typesNamed(prompt string) []store.MarketType {
	var out []store.MarketType
	// Durations first, as the built-in generator reads them: the "5m" of
	// "with 5m left", "in the last 5m", "cool down 5m", "5m between
	// trades", "wait 15m between entries", "1h cooldown" or "cancel after
	// 5m" is time, not markets.
	text := strings.ToLower(prompt)
	for _, re := range []*regexp.Regexp{reTimeLeft, reTimeLast, reCooldown, reCancel} {
		text = re.ReplaceAllString(text, " ")
	}
	// So is a rhythm's ("trade every 5m", "check every 1h"), unless its
	// "every" is of markets ("every 5m market", "every 5m:" heading it).
	b := []byte(text)
	for _, loc := range reCadence.FindAllIndex(b, -1) {
		if markets, _, _ := cadenceAt(string(b), loc[0], loc[1]); !markets { // b as blanked so far
			for i := loc[0]; i < loc[1]; i++ {
				b[i] = ' '
			}
		}
	}
	text = string(b)
	for _, loc := range reMarketType.FindAllStringIndex(text, -1) {
		if t, ok := marketsAt(text, loc[0], loc[1]); ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// reDurationBefore and reDurationAfter are the words before and after a
// compact type ("5m", "1h") that make it a duration, not markets: "hold
// for 5m", "hold up to 5m", "wait 5m", "exit in 5m", "during the first
// 15m", "in the past 1h", "5m before the end", "a 5m gap between trades",
// "5m between trades" (read as a cooldown first: reCooldown); a gap, pause
// or break that stands between no trades is a word of the prompt ("for 5m
// gaps:", "in 5m breaks below 0.3", "for 5m between 0.3 and 0.4"). "for",
// "in" and "only" alone name the markets ("for 5m BTC:", "buy UP in 15m BTC",
// "only 5m"); after a verb of waiting or exiting they are a duration.
// "every" names them only before "markets" or heading the prompt ("every
// 15m:"); elsewhere it is a rhythm (reCadence, blanked by typesNamed).
var (
	reDurationBefore = regexp.MustCompile(`\b(?:after|within|over|under|than|least|most|about|around|past|first|last|final|next|up\s+to|` +
		`(?:(?:wait|waits|waiting|hold|holds|holding|held|keep|keeps|keeping|stay|stays|staying|pause|sleep|exit|exits|sell|close|leave)` +
		`(?:\s+(?:it|them|the\s+position|positions?|on))?(?:\s+(?:for|in|only))*))\s+$`)
	reDurationAfter = regexp.MustCompile(`^\s*(?:before|after|ago|left|remaining|to go|into|in|of|later|earlier|from|apart|` +
		`(?:(?:gaps?|pauses?|breaks?|spacing)\s+)?(?:` + reBetweenTrades + `|between\s+(?:the\s+)?entry\s+and\s+(?:the\s+)?exit))\b`)
)

// reMarketsBefore ends the text before a compact type that names the
// markets whatever follows it: "on 15m in the last 5 minutes", "on ETH 1h
// after a dip", "on the 1h of ETH", "on 5m before the end".
var reMarketsBefore = regexp.MustCompile(`\b(?:on(?:\s+the)?|` + reCoinName + `)\s+$`)

// marketsAt is the market type the match text[lo:hi] of reMarketType
// names, if it names one there: a compact type ("5m", "on BTC 1h") names
// markets unless the words around it make it a duration (reDurationBefore,
// reDurationAfter), which the built-in generator then refuses as a number
// it cannot use, rather than dropping it as a market phrase. Right after
// "on" or a coin (reMarketsBefore) it names the markets, whatever words
// follow it.
func marketsAt(text string, lo, hi int) (store.MarketType, bool) {
	t, ok := typeOfPhrase(text[lo:hi])
	if !ok || reMarketWord.MatchString(text[lo:hi]) {
		return t, ok
	}
	if reMarketsBefore.MatchString(text[max(0, lo-40):lo]) {
		return t, true
	}
	if reDurationBefore.MatchString(text[max(0, lo-40):lo]) || reDurationAfter.MatchString(text[hi:]) {
		return "", false
	}
	return t, true
}

// reMarketWord is the "markets" or "windows" that ends a long market phrase
// ("5-minute markets", "hourly windows").
var reMarketWord = regexp.MustCompile(`\b(?:markets?|windows?)$`)

// reTypeWords splits a market phrase in words ("hourly markets", "daily
// windows", "1-day markets") into its count, if any, and its word.
var reTypeWords = regexp.MustCompile(`^(?:(\d+)\s*-?\s*)?(hourly|daily|days?)\b`)

// typeOfPhrase is the market type a phrase of reMarketType names; ok is
// false when it names none. Hourly markets are the 1h ones and daily or
// one-day markets the 24h ones; "4-hourly" names 4h, and "2-day" (48h)
// none.
func typeOfPhrase(phrase string) (store.MarketType, bool) {
	var name string
	if w := reTypeWords.FindStringSubmatch(phrase); w != nil {
		n := 1
		if w[1] != "" {
			var err error
			if n, err = strconv.Atoi(w[1]); err != nil || w[2] == "daily" {
				return "", false // "2 daily markets" names no type
			}
		}
		switch w[2] {
		case "hourly":
			name = strconv.Itoa(n) + "h"
		default:
			name = strconv.Itoa(24*n) + "h"
		}
	} else {
		m := reTypeParts.FindStringSubmatch(phrase)
		if m == nil {
			return "", false
		}
		unit := "m"
		if strings.HasPrefix(m[2], "h") {
			unit = "h"
		}
		name = m[1] + unit
	}
	return ParseMarketType(name)
}

func joinCoins(cs []store.Coin) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, " and ")
}

func joinTypes(ts []store.MarketType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " and ")
}

// floatOf is n as a number a request states, nil for 0 (not given).
func floatOf(n int) *float64 {
	if n == 0 {
		return nil
	}
	f := float64(n)
	return &f
}

func inRange(v, lo, hi float64) bool { return v >= lo && v <= hi && !math.IsNaN(v) }

// orderRules are the integer rules of re-entry control and resting orders
// as a generator read them (nil: not said), for finish to merge with the
// request's and give to replay.Strategy.SetOrderRules.
type orderRules struct{ cooldown, maxEntries, offset, cancel *float64 }

// finish makes a generator's rules into a Spec for req: the request's
// explicit parameters win over what the generator chose, then the replay
// validator judges the result. rules are the generator's integer order
// rules; st's own are replaced by them.
//
// A generated strategy waits DefaultReentryCooldownMs after an exit
// unless the prompt (or the model) or the request says otherwise (DESIGN
// 6). "Otherwise" includes no cooldown: a cooldown of 0 said anywhere is a
// non-nil 0 and wins over the default, which only a nil (nothing said)
// gets. Once finished, 0 simply means no cooldown, as everywhere else a
// strategy goes (generated_strategy and strategy_code leave it out, and
// the replay reads absent as 0): the default belongs to generation only,
// and is never applied to a strategy read back.
func finish(req Request, st replay.Strategy, rules orderRules, explanation string) (Spec, error) {
	if req.PositionSize != nil {
		st.PositionSize = *req.PositionSize
	}
	if req.MaxLossPercent != nil {
		st.MaxLossPercent = *req.MaxLossPercent
	}
	req.OrderSettings.merge(&st, req.OrderType, &rules)
	if req.FeeModel != "" {
		// The request's model replaces the generator's, with its own rate
		// and exponent (none unless CUSTOM).
		lat := floatOf(st.LatencyMs)
		st.SetCosts(req.FeeModel, req.FeeRate, req.FeeExponent, lat)
	}
	if req.LatencyMs != nil {
		st.SetCosts(st.FeeModel, st.FeeRate, floatOf(st.FeeExponent), req.LatencyMs)
	}
	if rules.cooldown == nil {
		d := float64(DefaultReentryCooldownMs)
		rules.cooldown = &d
	}
	st.SetOrderRules(rules.cooldown, rules.maxEntries, rules.offset, rules.cancel)
	s := Spec{Rules: Rules{Coin: req.Coin, MarketType: req.MarketType, Strategy: st}, Explanation: explanation}
	if err := s.Normalize(); err != nil {
		return Spec{}, err
	}
	return s, nil
}
