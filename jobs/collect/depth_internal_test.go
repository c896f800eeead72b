package collect

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestDepthMidIsTheDecimalMid: a depth snapshot's coin price is the mid of
// the best bid and ask Binance sent as decimal strings, stored as the
// float nearest that decimal, so that history serves 67124.04 and not the
// float sum's 67124.04000000001.
func TestDepthMidIsTheDecimalMid(t *testing.T) {
	t.Parallel()
	cases := []struct{ bid, ask, want string }{
		{"67124.03000000", "67124.05000000", "67124.04"},
		{"67123.51000000", "67123.53000000", "67123.52"},
		{"0.10000000", "0.20000000", "0.15"},
		{"4.00000000", "4.00000200", "4.000001"},
		{"95123.45000000", "95123.46000000", "95123.455"},
		{"4.00000001", "4.00000002", "4.000000015"},
	}
	for _, c := range cases {
		var d binanceDepth
		raw := `{"lastUpdateId":1,"bids":[["` + c.bid + `","1.5"]],"asks":[["` + c.ask + `","2.5"]]}`
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		s, err := d.snapshot(store.BTC, store.Spot, time.Unix(1795935959, 0), 20)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := strconv.ParseFloat(c.want, 64)
		if s.CoinPrice != want {
			t.Errorf("bid %s, ask %s: coin price %s, want %s", c.bid, c.ask, strconv.FormatFloat(s.CoinPrice, 'g', -1, 64), c.want)
		}
	}
}
