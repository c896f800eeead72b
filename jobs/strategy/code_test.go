package strategy

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

func cond(f, op string, v float64) replay.Condition {
	return replay.Condition{Field: f, Operator: op, Value: v}
}

// TestDesignExampleCode reads DESIGN 8's example code and writes it back
// byte for byte.
func TestDesignExampleCode(t *testing.T) {
	const code = "side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET"
	r, err := ParseCode(code)
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{Strategy: replay.Strategy{Side: "UP",
		EntryConditions: []replay.Condition{cond("price_up", "<", 0.35), cond("time_remaining_pct", ">", 20)},
		ExitConditions:  []replay.Condition{cond("price_up", ">=", 0.6)},
		PositionSize:    100, MaxLossPercent: 25, OrderType: "MARKET"}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("parsed %+v\nwant   %+v", r, want)
	}
	if got := FormatCode(r); got != code {
		t.Errorf("format = %q\nwant     %q", got, code)
	}
}

func TestParseCodeCanonicalizes(t *testing.T) {
	cases := []struct{ in, out string }{
		// Defaults for maxloss and order, as /v1/replay applies them.
		{"side=DOWN entry: price_down < 0.4 exit: price_down > 0.6 size=5",
			"side=DOWN entry: price_down < 0.4 exit: price_down > 0.6 size=5 maxloss=50 order=MARKET"},
		// Coin and type in either case and either spelling of the type.
		{"coin=eth type=1H side=UP entry: spread <= 0.1 exit: spread >= 0.3 size=1 maxloss=1 order=LIMIT",
			"coin=ETH type=1hr side=UP entry: spread <= 0.1 exit: spread >= 0.3 size=1 maxloss=1 order=LIMIT"},
		// White space is free; numbers are written shortest.
		{"  side=UP\tentry:  coin_price crosses_above 9.50e4   exit: coin_price crosses_below 0095000.0 size=+10 order=MARKET\n",
			"side=UP entry: coin_price crosses_above 95000 exit: coin_price crosses_below 95000 size=10 maxloss=50 order=MARKET"},
		{"side=UP entry: price_up == -0 and price_up > .5 exit: price_up < 1e-7 size=10000",
			"side=UP entry: price_up == 0 and price_up > 0.5 exit: price_up < 1e-07 size=10000 maxloss=50 order=MARKET"},
	}
	for _, tc := range cases {
		r, err := ParseCode(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := FormatCode(r); got != tc.out {
			t.Errorf("%q\n formats as %q\n want       %q", tc.in, got, tc.out)
		}
	}
}

func TestParseCodeErrors(t *testing.T) {
	cases := []struct{ in, code, msg string }{
		{"", CodeValidation, "strategy_code is empty: it reads like"},
		{strings.Repeat("x ", MaxCodeLength), CodeValidation, "strategy_code is 8192 bytes long"},
		{"side=SIDEWAYS entry: price_up < 1 exit: price_up > 1 size=1", "INVALID_SIDE", `word 1 ("side=SIDEWAYS"): side "SIDEWAYS" is not one of UP, DOWN`},
		{"side=up entry: price_up < 1 exit: price_up > 1 size=1", "INVALID_SIDE", `case-sensitive: use "UP"`},
		{"entry: price_up < 1 exit: price_up > 1 size=1", "INVALID_SIDE", "expected side="},
		{"side=UP entry: volume < 1 exit: price_up > 1 size=1", "INVALID_FIELD", `word 3 ("volume"): "volume" is not a condition field`},
		{"side=UP entry: price_up =< 1 exit: price_up > 1 size=1", "INVALID_OPERATOR", `word 4 ("=<"): expected an operator after price_up`},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=1 order=STOP", "INVALID_ORDER_TYPE", `order "STOP" is not one of MARKET, LIMIT`},
		{"side=UP entry: price_up < abc exit: price_up > 1 size=1", CodeValidation, `word 5 ("abc"): expected a number after price_up <`},
		{"side=UP entry: price_up < NaN exit: price_up > 1 size=1", CodeValidation, "expected a number"},
		{"side=UP entry: price_up < 0x1p-2 exit: price_up > 1 size=1", CodeValidation, "expected a number"},
		{"side=UP entry: price_up < 1e999 exit: price_up > 1 size=1", CodeValidation, "out of range"},
		{"side=UP entry: exit: price_up > 1 size=1", CodeValidation, `word 3 ("exit:"): expected an entry condition`},
		{"side=UP entry: price_up < 1 or price_up > 2 exit: price_up > 1 size=1", CodeValidation, `entry conditions must all hold: join them with "and"`},
		{"side=UP entry: price_up < 1 exit: price_up > 1 and price_up < 0 size=1", CodeValidation, `exit conditions are alternatives`},
		{"side=UP entry: price_up < 1 exit: price_up > 1", CodeValidation, "at the end: expected size="},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=0", CodeValidation, "size is missing or 0"},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=10001", CodeValidation, "size 10001 is out of range"},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=1 maxloss=0", CodeValidation, "maxloss=0 is out of range"},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=1 maxloss=101", CodeValidation, "maxloss 101 is out of range"},
		{"side=UP entry: price_up < 1 exit: price_up > 1 size=1 extra", CodeValidation, `word 11 ("extra"): unexpected "extra"`},
		{"coin=DOGE side=UP entry: price_up < 1 exit: price_up > 1 size=1", CodeValidation, `coin "DOGE" is not one of BTC, ETH, SOL`},
		{"coin=ETH type=4h side=UP entry: price_up < 1 exit: price_up > 1 size=1", CodeValidation, "4hr markets exist for BTC only"},
		{"side=UP size=1 entry: price_up < 1 exit: price_up > 1", CodeValidation, `word 2 ("size=1"): expected "entry:"`},
		{strings.Repeat("x", MaxCodeLength+1), CodeValidation, "at most 4096"},
		{"side=UP entry: " + strings.Repeat("price_up < 1 and ", 20) + "price_up < 1 exit: price_up > 1 size=1", CodeValidation, "at most 20"},
	}
	for _, tc := range cases {
		_, err := ParseCode(tc.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%.60q: error %v, want *Error", tc.in, err)
			continue
		}
		if e.Code != tc.code || e.Field != "strategy_code" || !strings.Contains(e.Message, tc.msg) || !strings.HasPrefix(e.Message, "strategy_code") ||
			strings.Count(e.Message, "strategy_code") != 1 || strings.Contains(e.Message, "strategy_code :") {
			t.Errorf("%.60q:\n got %s %s %q\nwant %s strategy_code ...%q...", tc.in, e.Code, e.Field, e.Message, tc.code, tc.msg)
		}
	}
}

// randomRules makes valid normalized rules with awkward numbers: tiny,
// huge, negative, subnormal, many digits.
func randomRules(r *rand.Rand) Rules {
	values := []float64{0, 1, -1, 0.35, 1e-7, 5e-324, 1e21, 1e300, -123456.789, math.Nextafter(0.1, 1), 1.0 / 3}
	value := func() float64 {
		if r.IntN(2) == 0 {
			return values[r.IntN(len(values))]
		}
		return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(r.IntN(0x7fe))<<52) // any finite float
	}
	conds := func() []replay.Condition {
		cs := make([]replay.Condition, 1+r.IntN(replay.MaxConditions))
		for i := range cs {
			cs[i] = cond(replay.Fields()[r.IntN(len(replay.Fields()))], replay.Operators()[r.IntN(7)], value())
		}
		return cs
	}
	rules := Rules{Strategy: replay.Strategy{
		Side:            replay.Sides()[r.IntN(2)],
		EntryConditions: conds(),
		ExitConditions:  conds(),
		PositionSize:    1 + r.Float64()*9999,
		MaxLossPercent:  1 + r.Float64()*99,
		OrderType:       replay.OrderTypes()[r.IntN(3)],
	}}
	switch r.IntN(4) { // the replay's costs, a model with each of its fields
	case 1:
		rules.Strategy.FeeModel = replay.FeeModels()[r.IntN(2)]
	case 2:
		rate := []float64{0, 1, 0.07, r.Float64()}[r.IntN(4)]
		rules.Strategy.FeeModel, rules.Strategy.FeeRate, rules.Strategy.FeeExponent = replay.FeeCustom, &rate, r.IntN(5)
	}
	if r.IntN(2) == 0 {
		rules.Strategy.LatencyMs = r.IntN(replay.MaxLatencyMs + 1)
	}
	// Re-entry control and resting orders, each at its default, at an
	// edge or anywhere in its range; as a body states them (nil when
	// absent, also 0 stated explicitly).
	whole := func(lo, hi int) *float64 {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return ptr(float64([]int{lo, hi}[r.IntN(2)]))
		}
		return ptr(float64(lo + r.IntN(hi-lo+1)))
	}
	var offset, cancel *float64
	st := &rules.Strategy
	if st.OrderType == replay.OrderGTC {
		offset, cancel = whole(0, replay.MaxLimitOffsetTicks), whole(1, replay.MaxCancelAfterMs)
		st.PostOnly = r.IntN(2) == 0
		st.QueueModel = []string{"", replay.QueueRiskAverse, replay.QueueFront}[r.IntN(3)]
		st.IncludeRebates = r.IntN(3) == 0
	}
	st.SetOrderRules(whole(0, replay.MaxReentryCooldownMs), whole(1, replay.MaxEntriesPerMarketCap), offset, cancel)
	if r.IntN(3) > 0 {
		rules.Coin = store.BTC
		rules.MarketType = store.MarketTypes[r.IntN(len(store.MarketTypes))]
	}
	if err := rules.normalize(false); err != nil {
		panic(err)
	}
	return rules
}

func TestCodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for range 2000 {
		want := randomRules(r)
		code := FormatCode(want)
		got, err := ParseCode(code)
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", code, got, want)
		}
		if again := FormatCode(got); again != code {
			t.Fatalf("format is not stable: %q then %q", code, again)
		}
	}
}
