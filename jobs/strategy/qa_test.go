package strategy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

// TestBuiltinReadsRanges: "between 0.4 and 0.6" is both bounds of one
// field, where the grammar read neither and refused the prompt as an
// unusable number ("could not use \"0.4\""). Between an exit's bounds the
// exit would need both at once, which exit conditions (alternatives)
// cannot say: refused by name.
func TestBuiltinReadsRanges(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP when price_up is between 0.4 and 0.6, exit above 0.75",
			"side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy UP between 0.4 and 0.6, exit above 0.75",
			"side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy UP when price_up is between 40% and 60%, exit above 0.75",
			"side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy UP when up is between 40 and 60%, exit above 0.75",
			"side=UP entry: price_up >= 0.4 and price_up <= 0.6 exit: price_up > 0.75" + tail},
		{"buy DOWN when price_down is between 0.6 and 0.3 with more than 50% left, exit above 0.8",
			"side=DOWN entry: price_down >= 0.3 and price_down <= 0.6 and time_remaining_pct > 50 exit: price_down > 0.8" + tail},
		{"buy UP when time remaining is between 20% and 80% and price_up is below 0.4, exit above 0.6",
			"side=UP entry: time_remaining_pct >= 20 and time_remaining_pct <= 80 and price_up < 0.4 exit: price_up > 0.6" + tail},
		{"buy UP when the spread is between 0.05 and 0.2, exit above 0.6",
			"side=UP entry: spread >= 0.05 and spread <= 0.2 exit: price_up > 0.6" + tail},
	})
	for p, want := range map[string]string{
		"buy UP below 0.4, exit when price_up is between 0.5 and 0.6":  "exit conditions are alternatives",
		"buy UP when price_up is between 0.4 and 1.4, exit above 0.75": "more than 1",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a refusal saying %q", p, err, want)
		}
	}
}

// TestBuiltinRefusesBothSidesByEllipsis: "buy UP below 0.35 and DOWN below
// 0.35" buys both sides, each when it is cheap; read as one entry (UP
// bought when price_up < 0.35 and price_down < 0.35, which two prices
// summing to about 1 never meet), the strategy never traded, without a
// word. "UP below 0.4 and DOWN above 0.6" says one side, twice.
func TestBuiltinRefusesBothSidesByEllipsis(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.35 and DOWN below 0.35, exit above 0.5",
		"buy UP under 0.35 & DOWN under 0.35, exit above 0.5",
		"buy DOWN when it drops below 0.3 and UP below 0.3, exit above 0.5",
		"buy UP above 0.7 or DOWN above 0.7, exit above 0.9",
		// A turn to the other side is a second buy, whose condition was
		// read as an exit alone ("or price_up > 0.8"), the turn dropped.
		"buy UP when price_up < 0.4, exit above 0.6, and reverse to DOWN when price_up > 0.8",
		"buy UP below 0.4 and flip into DOWN above 0.8",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "names both sides") {
			t.Errorf("%q: %v, want a refusal saying it names both sides", p, err)
		}
	}
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP below 0.4 and DOWN above 0.6, exit above 0.7"}))
	if want := "side=UP entry: price_up < 0.4 and price_down > 0.6 exit: price_up > 0.7 size=100 maxloss=50 order=MARKET cooldown=30000"; err != nil || FormatCode(Rules{Strategy: spec.Strategy}) != want {
		t.Errorf("UP below 0.4 and DOWN above 0.6: %v %v, want %s", FormatCode(Rules{Strategy: spec.Strategy}), err, want)
	}
	// A turn to the side bought names one side: "the market flips to UP"
	// says why UP is bought, and buys nothing else.
	spec, err = Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP when price_up crosses above 0.5 (the market flips to UP), exit above 0.8"}))
	if want := "side=UP entry: price_up crosses_above 0.5 exit: price_up > 0.8 size=100 maxloss=50 order=MARKET cooldown=30000"; err != nil || FormatCode(Rules{Strategy: spec.Strategy}) != want {
		t.Errorf("flips to UP: %v %v, want %s", FormatCode(Rules{Strategy: spec.Strategy}), err, want)
	}
}

// TestBuiltinComparesTheCoinByName: "when BTC is above 95000" compares
// the coin's price, where the grammar read the side's price (price_up >
// 95000) and refused the prompt as a price above 1. The coin's bare name
// without a verb names the markets ("buy UP on BTC below 0.4").
func TestBuiltinComparesTheCoinByName(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	for _, tc := range []struct{ prompt, code string }{
		{"buy UP when btc is above 95000, exit above 0.6",
			"side=UP entry: coin_price > 95000 exit: price_up > 0.6" + tail},
		{"buy UP when bitcoin trades above 95,000 and below 96000, exit above 0.6",
			"side=UP entry: coin_price > 95000 and coin_price < 96000 exit: price_up > 0.6" + tail},
		{"buy UP on ETH when ETH is above 3000, exit above 0.6",
			"side=UP entry: coin_price > 3000 exit: price_up > 0.6" + tail},
		{"buy UP when btc > 95000 and up < 0.5, exit above 0.6",
			"side=UP entry: coin_price > 95000 and price_up < 0.5 exit: price_up > 0.6" + tail},
		{"buy DOWN when SOL drops below 150, sell when price_down is above 0.7",
			"side=DOWN entry: coin_price < 150 exit: price_down > 0.7" + tail},
		{"buy UP on BTC below 0.4, exit above 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
		// A range of the coin by its name, too.
		{"buy UP when ETH is between 3000 and 3100, exit above 0.6",
			"side=UP entry: coin_price >= 3000 and coin_price <= 3100 exit: price_up > 0.6" + tail},
		{"buy UP on BTC between 0.4 and 0.5, exit above 0.6",
			"side=UP entry: price_up >= 0.4 and price_up <= 0.5 exit: price_up > 0.6" + tail},
		{"buy UP on BTC < 0.4, exit above 0.6",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6" + tail},
	} {
		req := normalized(t, Request{Prompt: tc.prompt})
		spec, err := Builtin{}.Generate(context.Background(), req)
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code {
			t.Errorf("%q\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
	}
}

// TestBuiltinReadsBuyAtSellAt: "buy UP at 0.45, sell at 0.55" is a
// trader's way to say an entry at that price or better and an exit at the
// target; an exit price below the entry's is a stop. The grammar refused
// them as unusable numbers ("could not use \"0.45,\"").
func TestBuiltinReadsBuyAtSellAt(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP at 0.45, sell at 0.55",
			"side=UP entry: price_up <= 0.45 exit: price_up >= 0.55" + tail},
		{"buy UP at 45%, sell at 55%",
			"side=UP entry: price_up <= 0.45 exit: price_up >= 0.55" + tail},
		{"buy DOWN at 0.3 with more than 50% left, sell at 0.5 or at 0.2",
			"side=DOWN entry: price_down <= 0.3 and time_remaining_pct > 50 exit: price_down >= 0.5 or price_down <= 0.2" + tail},
		{"buy UP below 0.4, exit at 0.6 or with 10% left",
			"side=UP entry: price_up < 0.4 exit: price_up >= 0.6 or time_remaining_pct <= 10" + tail},
		{"buy UP on ETH at 0.4, close at 0.25",
			"side=UP entry: price_up <= 0.4 exit: price_up <= 0.25" + tail},
	})
	// An exit price with no entry price to tell a target from a stop, or
	// at the entry's own price, is refused by name.
	for _, p := range []string{"buy UP when btc is above 95000, sell at 0.7", "buy UP at 0.5, sell at 0.5"} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "take profit at") {
			t.Errorf("%q: %v, want a refusal pointing to \"take profit at\"", p, err)
		}
	}
}

// TestBuiltinRefusesTimeWithoutAnAmount: "early in the market", "near
// the end", "at the open" say when to trade without saying how much time:
// the grammar dropped them without a word, and the strategy traded all
// market long. They are refused with how to say the time.
func TestBuiltinRefusesTimeWithoutAnAmount(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.4 early in the market, exit above 0.6",
		"buy UP below 0.4 late in the window, exit above 0.6",
		"buy UP below 0.4 near the end, exit above 0.6",
		"buy UP below 0.4 near expiry, exit above 0.6",
		"buy UP below 0.4, exit above 0.6 or near the close",
		"buy UP below 0.4 right after the open, exit above 0.6",
		"buy UP below 0.4 at the open, exit above 0.6",
		"buy UP when price_up < 0.4 at the start of the market, exit above 0.6",
		"buy UP below 0.4 at the beginning of the window, exit above 0.6",
		"buy UP below 0.4, exit above 0.6, at market open only",
		"buy UP below 0.4 halfway through, exit above 0.6",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "of time in the market it reads an amount") {
			t.Errorf("%q: %v, want a refusal asking for an amount of time", p, err)
		}
	}
	// With an amount, the same words are read.
	for p, code := range map[string]string{
		"buy UP below 0.4 in the first 20% of the market, exit above 0.6": "side=UP entry: price_up < 0.4 and time_remaining_pct >= 80 exit: price_up > 0.6",
		"buy UP below 0.4, exit above 0.6 or with 2 minutes left":         "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_s <= 120",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if got := FormatCode(Rules{Strategy: spec.Strategy}); err != nil || !strings.HasPrefix(got, code) {
			t.Errorf("%q: %s %v, want %s ...", p, got, err, code)
		}
	}
}

// TestBuiltinHoldToTheEndSaysWhy: "hold to expiry" with no exit condition
// was refused as if the prompt said nothing of exits ("does not say when
// to exit"); the refusal says that holding to the end is what a position
// does anyway, and that a strategy still needs one exit condition.
func TestBuiltinHoldToTheEndSaysWhy(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.4 and hold to expiry",
		"buy UP below 0.4, hold until resolution",
		"buy UP below 0.4 in the last 30 seconds, exit at the close",
		"buy DOWN below 0.3 and let it ride to settlement",
		"buy UP below 0.4, hold it until the market ends",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "settles at the market's end") || !strings.Contains(err.Error(), "at least one exit condition") {
			t.Errorf("%q: %v, want a refusal saying a position settles at the end and one exit condition is needed", p, err)
		}
	}
}

// TestBuiltinRefusesConditionsWithoutAField: "when volatility is high",
// "when BTC is trending up", "on weekdays" are conditions no field says
// (and no number): the grammar dropped them without a word, and the
// strategy traded whatever the volatility, trend or day. They are refused
// as the indicators are.
func TestBuiltinRefusesConditionsWithoutAField(t *testing.T) {
	t.Parallel()
	for p, word := range map[string]string{
		"buy UP below 0.4 when volatility is high, exit above 0.6": "volatility",
		"buy UP below 0.4 in volatile markets, exit above 0.6":     "volatile",
		"buy UP below 0.4 when BTC is trending up, exit above 0.6": "trending",
		"buy UP below 0.4 if the market is liquid, exit above 0.6": "liquid",
		"buy UP below 0.4 when liquidity is thin, exit above 0.6":  "liquidity",
		"buy UP below 0.4 after a big drop, exit above 0.6":        "big drop",
		"buy UP below 0.4 after a crash in BTC, exit above 0.6":    "crash",
		"buy UP below 0.4 on weekdays, exit above 0.6":             "weekdays",
		"buy UP below 0.4 during US hours, exit above 0.6":         "us hours",
		"buy UP below 0.4 in the Asian session, exit above 0.6":    "asian session",
		"buy UP below 0.4 overnight only, exit above 0.6":          "overnight",
		"buy UP below 0.4 unless there is a pump, exit above 0.6":  "pump",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), `cannot use "`+word+`"`) {
			t.Errorf("%q: %v, want a refusal saying it cannot use %q", p, err, word)
		}
	}
	// The words of the presets and of the prices' moves are still read.
	for _, req := range []Request{{Prompt: "momentum", Preset: "momentum_entry"}, {Prompt: "buy UP when it dips below 0.4, exit when it drops below 0.2"}} {
		if _, err := (Builtin{}).Generate(context.Background(), normalized(t, req)); err != nil {
			t.Errorf("%+v: %v", req, err)
		}
	}
}

// TestBuiltinRefusesBetsAgainstASide: "bet against UP when it is above
// 0.7" and "fade UP" mean the other side, and "buy NO" names an outcome
// these markets do not have: read with no side named, each bought UP, the
// opposite of the idea, without a word. They are refused as "short UP"
// is, with the side to write.
func TestBuiltinRefusesBetsAgainstASide(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"bet against UP when it is above 0.7, exit below 0.5":   "to bet against UP, buy DOWN",
		"fade UP above 0.7, exit when price_up is below 0.5":    "to bet against UP, buy DOWN",
		"fade the DOWN side above 0.7, exit below 0.5":          "to bet against DOWN, buy UP",
		"go against down when price_down > 0.7, exit below 0.5": "to bet against DOWN, buy UP",
		"buy NO when price_up > 0.7, exit when price_up < 0.5":  "outcomes are UP and DOWN",
		"buy YES below 0.4, sell above 0.6":                     "outcomes are UP and DOWN",
		"buy the no side when price_up > 0.7, exit below 0.5":   "outcomes are UP and DOWN",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a refusal saying %q", p, err, want)
		}
	}
}

// TestBuiltinReadsTraderShorthand: "TP 50%, SL 20%", "tp 0.6, sl 0.2",
// "target 0.6, stop 0.2" are a take profit and a stop loss as traders
// write them; the grammar refused them as unusable numbers.
func TestBuiltinReadsTraderShorthand(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"buy UP below 0.4, TP 50%, SL 20%":                     "side=UP entry: price_up < 0.4 exit: price_up >= 0.6 size=100 maxloss=20 order=MARKET cooldown=30000",
		"buy UP below 0.4, tp 0.6, sl 0.2":                     "side=UP entry: price_up < 0.4 exit: price_up >= 0.6 or price_up <= 0.2 size=100 maxloss=50 order=MARKET cooldown=30000",
		"buy UP below 0.4, target 0.6, stop 0.2":               "side=UP entry: price_up < 0.4 exit: price_up >= 0.6 or price_up <= 0.2 size=100 maxloss=50 order=MARKET cooldown=30000",
		"buy UP below 0.4, exit above 0.65, stop at 0.2":       "side=UP entry: price_up < 0.4 exit: price_up > 0.65 or price_up <= 0.2 size=100 maxloss=50 order=MARKET cooldown=30000",
		"buy DOWN below 0.3, profit target of 0.5, stop 15%":   "side=DOWN entry: price_down < 0.3 exit: price_down >= 0.5 size=100 maxloss=15 order=MARKET cooldown=30000",
		"buy UP below 0.4, price target 0.55, stop-out at 0.3": "side=UP entry: price_up < 0.4 exit: price_up >= 0.55 or price_up <= 0.3 size=100 maxloss=50 order=MARKET cooldown=30000",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if got := FormatCode(Rules{Strategy: spec.Strategy}); err != nil || got != want {
			t.Errorf("%q:\n got %s %v\nwant %s", p, got, err, want)
		}
	}
}

// TestBuiltinNoReentryIsOneEntry: "no re-entry" is one entry a market; it
// was dropped without a word (the strategy re-entered after 30 s), and
// "don't re-enter" was refused as a negation it cannot read.
func TestBuiltinNoReentryIsOneEntry(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.4, exit above 0.6, no re-entry",
		"buy UP below 0.4, exit above 0.6, no reentries",
		"buy UP below 0.4, exit above 0.6, don't re-enter",
		"buy UP below 0.4, exit above 0.6 and never re-enter",
		"buy UP below 0.4, exit above 0.6 without re-entering",
		"buy UP below 0.4, exit above 0.6, only one trade per market",
		"buy UP below 0.4, exit above 0.6, a single entry per market",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err != nil || spec.Strategy.MaxEntriesPerMarket != 1 {
			t.Errorf("%q: %s %v, want maxEntriesPerMarket 1", p, FormatCode(Rules{Strategy: spec.Strategy}), err)
		}
	}
}

// TestBuiltinLimitAtTheBidRests: "a limit order at the bid" is a bid
// resting on the book (GTC), not a LIMIT order, which takes the ask at
// once (DESIGN 6): read as LIMIT, the strategy paid the spread it meant to
// earn, without a word; "2 ticks above the bid" was refused.
func TestBuiltinLimitAtTheBidRests(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"buy UP below 0.4, exit above 0.6, limit order at the bid":                          "order=GTC cooldown=30000",
		"buy UP below 0.4 with limit orders at the best bid, exit above 0.6":                "order=GTC cooldown=30000",
		"buy UP below 0.4, exit above 0.6, place limit orders 2 ticks above the bid":        "order=GTC offset=2 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, limit bids 1 tick above the best bid, post only": "order=GTC postonly=true offset=1 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, limit orders":                                    "order=LIMIT cooldown=30000",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if got := FormatCode(Rules{Strategy: spec.Strategy}); err != nil || !strings.HasSuffix(got, want) {
			t.Errorf("%q: %s %v, want ... %s", p, got, err, want)
		}
	}
}

// TestBuiltinReadsEntryCaps: "2 trades per market" and "never more than 2
// trades per market" cap the entries; the first was refused as an
// unusable number, the second as a price of 2 ("for 2 cents write 0.02").
func TestBuiltinReadsEntryCaps(t *testing.T) {
	t.Parallel()
	for p, n := range map[string]int{
		"buy UP below 0.4, exit above 0.6, 2 trades per market":                 2,
		"buy UP below 0.4, exit above 0.6, 3 entries a market":                  3,
		"buy UP below 0.4, exit above 0.6, never more than 2 trades per market": 2,
		"buy UP below 0.4, exit above 0.6, not more than 4 entries per market":  4,
		"buy UP below 0.4, exit above 0.6, max 5 trades per market":             5,
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err != nil || spec.Strategy.MaxEntriesPerMarket != n {
			t.Errorf("%q: %s %v, want maxEntriesPerMarket %d", p, FormatCode(Rules{Strategy: spec.Strategy}), err, n)
		}
	}
}

// TestBuiltinReadsCostsAsWritten: "taker fee 7%", "fees of 2%" and
// "latency: 300ms" state a fee rate and a latency; the grammar refused
// them as unusable numbers.
func TestBuiltinReadsCostsAsWritten(t *testing.T) {
	t.Parallel()
	const head = "side=UP entry: price_up < 0.4 exit: price_up > 0.6 size=100 maxloss=50 order=MARKET "
	for p, want := range map[string]string{
		"buy UP below 0.4, exit above 0.6, taker fee 7%":             "fees=custom feerate=0.07 feeexp=1 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, fees of 2%":               "fees=custom feerate=0.02 feeexp=1 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, a fee of 1.5 percent":     "fees=custom feerate=0.015 feeexp=1 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, latency: 300ms":           "latency=300 cooldown=30000",
		"buy UP below 0.4, exit above 0.6, fee rate: 3%, delay: 1 s": "fees=custom feerate=0.03 feeexp=1 latency=1000 cooldown=30000",
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if got := FormatCode(Rules{Strategy: spec.Strategy}); err != nil || got != head+want {
			t.Errorf("%q:\n got %s %v\nwant %s", p, got, err, head+want)
		}
	}
}

// TestDescribeOneEntry: one entry a market is said in the singular ("At
// most 1 entries a market" read as a slip in the explanation).
func TestDescribeOneEntry(t *testing.T) {
	t.Parallel()
	spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: "buy UP below 0.4, exit above 0.6, once per market"}))
	if err != nil || !strings.Contains(spec.Explanation, "At most 1 entry a market.") {
		t.Errorf("%q %v, want it to say \"At most 1 entry a market.\"", spec.Explanation, err)
	}
}

// TestBuiltinRefusesHedges: "hedge with DOWN" and "arbitrage UP and DOWN"
// buy both sides; the grammar dropped them without a word and bought UP
// alone.
func TestBuiltinRefusesHedges(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.4, exit above 0.6 and hedge with DOWN",
		"buy UP below 0.4, exit above 0.6, hedging the position",
		"buy UP below 0.4, exit above 0.6, arbitrage UP and DOWN",
		"arb the two sides when price_up < 0.4, exit above 0.6",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "a strategy buys one side") {
			t.Errorf("%q: %v, want a refusal saying a strategy buys one side", p, err)
		}
	}
}

// TestBuiltinRefusesSizingRules: "compound the winnings", "double down
// after a loss", "scale in", "average down" change the size trade by
// trade, which no rule says (a strategy trades positionSize shares each
// time); dropped without a word, or refused as an unusable number.
func TestBuiltinRefusesSizingRules(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"buy UP below 0.4, exit above 0.6, compound the winnings",
		"buy UP below 0.4, exit above 0.6, double down after a loss",
		"buy UP below 0.4, exit above 0.6, average down at 0.3",
		"buy UP below 0.4, exit above 0.6, scale in at 0.35 and 0.3",
		"buy UP below 0.4, exit above 0.6, martingale",
		"buy UP below 0.4, exit above 0.6, pyramid into winners",
		"buy UP below 0.4, exit above 0.6, use 50% of my balance",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), "the same number of shares") {
			t.Errorf("%q: %v, want a refusal saying every trade is the same number of shares", p, err)
		}
	}
}

// TestPromptNamesItsMarketCount: "over the last 50 markets" chooses how
// many markets /strategy backtests, as "on ETH 5m markets" chooses which:
// the grammar refused it as an unusable number ("could not use \"50\"").
// A count other than the request's is refused, as a coin is.
func TestPromptNamesItsMarketCount(t *testing.T) {
	t.Parallel()
	const rules = "buy UP below 0.4, exit above 0.6"
	for _, tc := range []struct {
		prompt   string
		count    *int // the request's
		want     int
		wantType store.MarketType
		refused  string
	}{
		{prompt: rules + ", over the last 50 markets", want: 50, wantType: store.M15},
		{prompt: rules + ", test on 20 ETH 5m markets", want: 20, wantType: store.M5},
		{prompt: "backtest on the 30 most recent hourly markets: " + rules, want: 30, wantType: store.H1},
		{prompt: rules + " across 5 markets", count: ptr(5), want: 5, wantType: store.M15},
		{prompt: rules + " across 5 markets", count: ptr(10), refused: "the prompt names 5 markets, but marketCount is 10"},
		{prompt: rules + ", over the last 500 markets", refused: "500 markets is out of range"},
		{prompt: rules, want: DefaultMarketCount, wantType: store.M15},
	} {
		req := Request{Prompt: tc.prompt, MarketCount: tc.count}
		err := req.Normalize()
		if tc.refused != "" {
			if e, ok := errors.AsType[*Error](err); !ok || e.Field != "prompt" || !strings.Contains(e.Message, tc.refused) {
				t.Errorf("%q: %v, want a refusal of the prompt saying %q", tc.prompt, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if req.Count() != tc.want || req.MarketType != tc.wantType {
			t.Errorf("%q: %d %s markets, want %d %s", tc.prompt, req.Count(), req.MarketType, tc.want, tc.wantType)
		}
		if _, err := (Builtin{}).Generate(context.Background(), req); err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
		}
	}
}

// TestBuiltinReadsTimePassed: time said as the share of the market that
// has passed ("when 90% of the time has passed", "after half the
// market") is the rest left, time_remaining_pct: it was refused as an
// unusable "90%" or "half".
func TestBuiltinReadsTimePassed(t *testing.T) {
	t.Parallel()
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP below 0.4 when 90% of the time has passed, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 10 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 after half the market, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 50 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 once half of the window has elapsed, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 50 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 after the first 20% of the market, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 80 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 when the first 20 percent of the market has gone by, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 80 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 in the second half, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct <= 50 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4 in the first half of the market, exit above 0.6",
			"side=UP entry: price_up < 0.4 and time_remaining_pct >= 50 exit: price_up > 0.6" + tail},
		{"buy UP below 0.4, exit above 0.6 or when 90% of the market has passed",
			"side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
	})
	for p, want := range map[string]string{
		"buy UP below 0.4, exit above 0.6 or in the first half":             "exits as soon as the position is open",
		"buy UP below 0.4 when 150% of the time has passed, exit above 0.6": "150% of the market is more than all of it",
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: p}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a refusal saying %q", p, err, want)
		}
	}
}

// TestBuiltinSaysWhyExitsTogetherAndBareCrossings: an exit that waits for
// a time and a price together ("exit above 0.6 after 10 minutes"), which
// exit conditions (alternatives) cannot say, and a crossing without a
// direction ("crosses 0.5") were refused as an unusable number ("could
// not use \"10\""), and "and", "with" or "when" between a price exit and
// a time left was read as "or". The refusals say why; crossings with a
// direction, and exits joined by "or", are read.
func TestBuiltinSaysWhyExitsTogetherAndBareCrossings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, want string }{
		{"buy UP below 0.4, exit above 0.6 after 10 minutes", `cannot read "after 10 minutes" in the exit: exit conditions are alternatives (any one exits the position)`},
		{"buy UP below 0.4, exit above 0.6 once 30 s have passed", `cannot read "once 30 s have passed" in the exit: exit conditions are alternatives`},
		{"buy UP below 0.4 after 10 minutes, exit above 0.6", `cannot tell what "after 10 minutes" counts from`},
		{"buy UP below 0.4, exit after 10 minutes", `cannot tell what "after 10 minutes" counts from`},
		{"buy UP below 0.4, exit above 0.6 when 90% of the time has passed", `cannot read a time passed as a condition on another exit`},
		{"buy UP below 0.4, exit above 0.6 and with 20% left", `cannot read "and" between exit conditions`},
		// "X with Y" and "X when Y" are one exit with a condition on it,
		// both to hold: they were read as "or", exiting on either.
		{"buy UP below 0.4, exit above 0.6 with 20% left", `reads the exit as price_up > 0.6 and time_remaining_pct <= 20, both to hold`},
		{"buy UP below 0.4, exit above 0.6 when 20% is left", `reads the exit as price_up > 0.6 and time_remaining_pct <= 20, both to hold`},
		{"buy UP below 0.4, sell above 0.6 when only 3 minutes remain", `reads the exit as price_up > 0.6 and time_remaining_s <= 180, both to hold`},
		{"buy UP below 0.4, exit above 0.6 with less than 20% left", `reads the exit as price_up > 0.6 and time_remaining_pct < 20, both to hold`},
		{"buy UP below 0.4, exit in the last 10% when price_up is above 0.6", `reads the exit as time_remaining_pct <= 10 and price_up > 0.6, both to hold`},
		{"buy UP below 0.4, exit above 0.6 when spread < 0.1", `reads the exit as price_up > 0.6 and spread < 0.1, both to hold`},
		{"buy UP below 0.4, exit above 0.6 or below 0.2 with 20% left", `reads the exit as price_up < 0.2 and time_remaining_pct <= 20, both to hold`},
		// A word that restricts, with or without a comma, joins them too.
		{"buy UP below 0.4, exit above 0.6 only in the last 10%", `reads the exit as price_up > 0.6 and time_remaining_pct <= 10, both to hold`},
		{"buy UP below 0.4, exit above 0.6 but only in the last 10%", `reads the exit as price_up > 0.6 and time_remaining_pct <= 10, both to hold`},
		{"buy UP below 0.4, exit above 0.6 as long as we are in the last 10%", `reads the exit as price_up > 0.6 and time_remaining_pct <= 10, both to hold`},
		{"buy UP below 0.4, exit above 0.6 provided spread < 0.1", `reads the exit as price_up > 0.6 and spread < 0.1, both to hold`},
		{"buy UP below 0.4, exit above 0.6 whenever spread < 0.1", `reads the exit as price_up > 0.6 and spread < 0.1, both to hold`},
		{"buy UP below 0.4, exit above 0.6, but only when spread < 0.1", `reads the exit as price_up > 0.6 and spread < 0.1, both to hold`},
		{"buy UP below 0.4, exit above 0.6, when 10% remains", `reads the exit as price_up > 0.6 and time_remaining_pct <= 10, both to hold`},
		{"buy UP when up crosses 0.5, exit above 0.7", `"crosses 0.5" needs a direction: write "crosses above 0.5" or "crosses below 0.5"`},
		{"buy UP when price_up crosses 0.5, exit above 0.7", `"crosses 0.5" needs a direction`},
		{"buy UP below 0.4, exit when it breaks 0.6", `"breaks 0.6" needs a direction`},
	} {
		_, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%q: %v, want VALIDATION_ERROR of prompt saying %q", tc.prompt, err, tc.want)
		}
	}
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP when up crosses above 0.5, exit when it crosses below 0.4", "side=UP entry: price_up crosses_above 0.5 exit: price_up crosses_below 0.4" + tail},
		{"buy UP below 0.4, exit above 0.6 or when 90% of the time has passed", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
		{"buy UP below 0.4, exit above 0.6 or with 20% left", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 20" + tail},
		{"buy UP below 0.4, exit above 0.6, or with 20% left", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 20" + tail},
		{"buy UP below 0.4, exit with 20% left or above 0.6", "side=UP entry: price_up < 0.4 exit: time_remaining_pct <= 20 or price_up > 0.6" + tail},
		// Exits with an exit word of their own are separate rules.
		{"buy UP below 0.4, sell above 0.6, close in the last 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
		// A comma, a semicolon or no joining word lists alternatives.
		{"buy UP below 0.4, exit above 0.6, in the last 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
		{"buy UP below 0.4, exit above 0.6; in the last 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
		{"buy UP below 0.4, exit above 0.6 otherwise in the last 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
		{"buy UP below 0.4, exit above 0.8 or below 0.3, in the final 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.8 or price_up < 0.3 or time_remaining_pct <= 10" + tail},
		{"buy UP below 0.4, exit above 0.6 / in the last 10%", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or time_remaining_pct <= 10" + tail},
	})
}

// TestBuiltinRefusesADistanceFromTheStart: an amount that is no
// percentage away from the market's start ("$50 above the start price")
// is a distance no field holds; its number was read as the coin's price
// itself (coin_price > 50, true of every BTC snapshot). The percentage
// from the price to beat is still read.
func TestBuiltinRefusesADistanceFromTheStart(t *testing.T) {
	t.Parallel()
	for _, prompt := range []string{
		"buy up when BTC is more than $50 above the start price, exit above 0.8",
		"buy up when BTC is more than 100 above the open, exit above 0.8",
		"buy down when ETH is at least 5 dollars below the opening price, exit above 0.7",
		"buy UP when price_up is 0.1 above its starting price, exit above 0.8",
	} {
		req := normalized(t, Request{Prompt: prompt})
		spec, err := Builtin{}.Generate(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, "of a move from the market's start it reads the coin's, in percent") {
			t.Errorf("%q: %v (%s), want a refusal naming the distance", prompt, err, FormatCode(spec.Rules))
		}
	}
	req := normalized(t, Request{Prompt: "buy up when BTC is 0.1% above the price to beat, exit above 0.8"})
	spec, err := Builtin{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := FormatCode(Rules{Strategy: spec.Strategy}), "side=UP entry: coin_move_pct >= 0.1 exit: price_up > 0.8 size=100 maxloss=50 order=MARKET cooldown=30000"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestBuiltinRefusesAChangeInPercent: a change in percent ("BTC is up more
// than 0.5%", "fade moves over 2% in the last 5 minutes") is no field a
// phrase reads; its percentage was read as the side's price (price_up >
// 0.005, an entry at almost any price) and its time span as the time left.
// A price in percent is a level, still read.
func TestBuiltinRefusesAChangeInPercent(t *testing.T) {
	t.Parallel()
	for _, prompt := range []string{
		"buy UP when BTC is up more than 0.5% in the last 60 seconds, exit above 0.7",
		"buy UP when bitcoin is up over 1%, exit above 0.7",
		"buy DOWN when BTC falls more than 1% in the last 60 seconds, exit above 0.7",
		"fade moves over 2% in the last 5 minutes, exit above 0.6",
		"buy UP when the coin rose more than 0.2% in the last 60s, exit above 0.7",
		"buy UP when price_up drops 10%, exit above 0.6",
	} {
		req := normalized(t, Request{Prompt: prompt})
		spec, err := Builtin{}.Generate(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || e.Field != "prompt" || !strings.Contains(e.Message, "a change in percent is no field it reads from words") {
			t.Errorf("%q: %v (%s), want a refusal naming the change", prompt, err, FormatCode(spec.Rules))
		}
	}
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP when price_up drops below 35% in the last 5 minutes, exit above 60%",
			"side=UP entry: price_up < 0.35 and time_remaining_s <= 300 exit: price_up > 0.6" + tail},
		{"buy UP when it rises over 60%, exit above 80%", "side=UP entry: price_up > 0.6 exit: price_up > 0.8" + tail},
		// A move from the price to beat is coin_move_pct's, read as before.
		{"buy UP when BTC moves 0.1% above the price to beat, exit above 0.8", "side=UP entry: coin_move_pct >= 0.1 exit: price_up > 0.8" + tail},
		{"buy UP when BTC jumps 0.3% over the strike price, exit above 0.8", "side=UP entry: coin_move_pct >= 0.3 exit: price_up > 0.8" + tail},
		{"buy DOWN when BTC falls 0.1% below the price to beat, exit above 0.8", "side=DOWN entry: coin_move_pct <= -0.1 exit: price_down > 0.8" + tail},
		{"buy UP below 0.4, exit above 0.6 or when BTC moves 0.2% below the price to beat", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or coin_move_pct <= -0.2" + tail},
	})
}

// TestBuiltinRefusesAnExitAtEveryEntry: an exit that holds whenever the
// entry does ("buy UP below 0.4 ... stop loss at 0.5") sells every
// position as soon as it is bought: a slip in the numbers, refused naming
// both, where it was backtested as the strategy. An exit that holds at
// only some entries, or on another field, is read.
func TestBuiltinRefusesAnExitAtEveryEntry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, msg string }{
		{"buy UP when price_up < 0.4, exit above 0.6, stop loss at 0.5", "the exit price_up <= 0.5 holds whenever the entry price_up < 0.4 does"},
		{"buy DOWN when price_down is between 0.3 and 0.4, take profit at 0.25", "the exit price_down >= 0.25 holds whenever the entry price_down <= 0.4 does"},
		{"buy UP when price_up > 0.6, exit above 0.5", "the exit price_up > 0.5 holds whenever the entry price_up > 0.6 does"},
	} {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeValidation || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%q: %v (%s), want a refusal saying %q", tc.prompt, err, FormatCode(spec.Rules), tc.msg)
		}
	}
	const tail = " size=100 maxloss=50 order=MARKET cooldown=30000"
	wantCodes(t, []promptCode{
		{"buy UP when price_up < 0.4, exit above 0.6 or below 0.2", "side=UP entry: price_up < 0.4 exit: price_up > 0.6 or price_up < 0.2" + tail},
		{"buy UP at 0.45, sell at 0.4", "side=UP entry: price_up <= 0.45 exit: price_up <= 0.4" + tail},
		{"buy UP when price_up < 0.4, exit when price_down < 0.5", "side=UP entry: price_up < 0.4 exit: price_down < 0.5" + tail},
	})
}

// promptCode is a prompt and the strategy code the built-in generator
// reads it as.
type promptCode struct{ prompt, code string }

// wantCodes checks that the built-in generator reads each prompt as its
// code, with the request's defaults.
func wantCodes(t *testing.T, cases []promptCode) {
	t.Helper()
	for _, tc := range cases {
		spec, err := Builtin{}.Generate(context.Background(), normalized(t, Request{Prompt: tc.prompt}))
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if got := FormatCode(Rules{Strategy: spec.Strategy}); got != tc.code {
			t.Errorf("%q\n got %s\nwant %s", tc.prompt, got, tc.code)
		}
	}
}
