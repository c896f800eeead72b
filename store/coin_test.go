package store_test

import (
	"testing"

	"github.com/updown/updown/store"
)

// TestParseCoin: a coin is BTC, ETH or SOL in any ASCII case, and nothing
// that only strings.ToUpper maps onto one (ſ, the long s, upper-cases to S).
func TestParseCoin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want store.Coin
		ok   bool
	}{
		{"btc", store.BTC, true},
		{"Eth", store.ETH, true},
		{"SOL", store.SOL, true},
		{"ſol", "", false},
		{"ſOL", "", false},
		{"doge", "", false},
		{"", "", false},
		{" btc", "", false},
	} {
		got, ok := store.ParseCoin(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseCoin(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
