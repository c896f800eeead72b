package collect

import (
	"encoding/json"
	"testing"

	"github.com/updown/updown/store"
)

// TestTradeBestMatchAsReported: a spot trade keeps isBestMatch as Binance
// sent it, and one without the field keeps it unknown, which the api then
// leaves out; before, a spot trade without it was recorded as a best match,
// a true Binance never said. Futures trades never carry it.
func TestTradeBestMatchAsReported(t *testing.T) {
	t.Parallel()
	const fields = `"id":28457,"price":"4.00000100","qty":"12.00000000","quoteQty":"48.000012","time":1499865549590,"isBuyerMaker":true`
	for _, tc := range []struct {
		name string
		kind store.ExchangeKind
		json string
		want string // "true", "false" or "" for unknown
	}{
		{"spot, true", store.Spot, `{` + fields + `,"isBestMatch":true}`, "true"},
		{"spot, false", store.Spot, `{` + fields + `,"isBestMatch":false}`, "false"},
		{"spot, not reported", store.Spot, `{` + fields + `}`, ""},
		{"spot, null", store.Spot, `{` + fields + `,"isBestMatch":null}`, ""},
		{"futures", store.Future, `{` + fields + `}`, ""},
		{"futures that says it", store.Future, `{` + fields + `,"isBestMatch":true}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var raw binanceTrade
			if err := json.Unmarshal([]byte(tc.json), &raw); err != nil {
				t.Fatal(err)
			}
			tr, err := raw.trade(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if tr.IsBestMatch != nil {
				got = "false"
				if *tr.IsBestMatch {
					got = "true"
				}
			}
			if got != tc.want {
				t.Errorf("isBestMatch recorded as %q, want %q (\"\": unknown)", got, tc.want)
			}
		})
	}
}
