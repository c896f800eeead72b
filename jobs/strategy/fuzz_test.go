package strategy

import (
	"reflect"
	"testing"
)

// FuzzParseStrategyCode: ParseCode never panics, and whatever it accepts
// round-trips: parsing its formatted code gives the same rules, whose
// format is the same code.
func FuzzParseStrategyCode(f *testing.F) {
	for _, seed := range []string{
		"side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET",
		"coin=ETH type=1h side=DOWN entry: price_down crosses_below 0.4 exit: price_down > 0.55 or spread >= 0.2 size=1",
		"side=UP entry: coin_price == -0 exit: coin_price >= 1e21 size=1e1 maxloss=100 order=LIMIT",
		"side=UP entry: price_up < .5 exit: price_up > 5. size=+1",
		"side=UP entry: price_up <",
		"coin= type= side=",
		"side=UP entry: price_up < 1 or",
		"\xff side=UP",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100 fees=market latency=250",
		"side=DOWN entry: price_down < 0.35 exit: price_down >= 0.6 size=1 order=LIMIT fees=CUSTOM feerate=.07 feeexp=2.0 latency=60000",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=1 fees=none latency=0",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=1 fees=custom feeexp=1.5",
		"side=UP entry: coin_move_pct >= 0.1 and imbalance_up > 0.3 exit: display_up >= 0.6 or time_remaining_s <= 120 size=100 " +
			"order=GTC postonly=true offset=1 cancel=60000 queue=front rebates=true cooldown=30000 maxentries=3",
		"side=DOWN entry: bid_down < 0.4 and mid_down < .45 and coin_return_60s < -0.2 exit: imbalance_down < -0.5 size=1 " +
			"order=GTC postonly=FALSE offset=0 queue=RISK_AVERSE rebates=false fees=market latency=100 cooldown=0",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=1 order=MARKET rebates=true maxentries=10000",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=1 order=LIMIT postonly=false",
		"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=1 order=GTC offset=1.5 cancel=0 cooldown=-1 maxentries=1e9",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		r, err := ParseCode(code)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T, want *Error", err)
			}
			return
		}
		formatted := FormatCode(r)
		again, err := ParseCode(formatted)
		if err != nil {
			t.Fatalf("%q parsed, but its format %q does not: %v", code, formatted, err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("%q: round trip changed the rules:\n%+v\n%+v", code, r, again)
		}
		if f2 := FormatCode(again); f2 != formatted {
			t.Fatalf("format not stable: %q vs %q", formatted, f2)
		}
	})
}
