package book

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkDecoder decodes frames shaped as the market channel sends them
// (realdata/ws): price changes of one to three levels, trades, tick
// changes and, now and then, a book of 40 levels a side, with the long
// ids of real tokens and markets; it reports the time a frame takes.
func BenchmarkDecoder(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 2))
	const market = "0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1"
	tokens := []string{"52114319501245915516055106046884209969926127482827954674443846427813813222426",
		"71321045679252212594626385532706912750332728571942532289631379312455583992563"}
	price := func() string { return fmt.Sprintf("0.%02d", 1+rng.IntN(98)) }
	var frames [][]byte
	for i := range 1000 {
		ts := 1747008000000 + int64(i)*150
		tok := tokens[rng.IntN(2)]
		var f string
		switch r := rng.IntN(100); {
		case r < 70:
			var ch []string
			for range 1 + rng.IntN(3) {
				ch = append(ch, fmt.Sprintf(`{"asset_id":%q,"price":%q,"size":"%d.%02d","side":%q,"hash":"bf32b3746fff40c76c98021b7f3f07261169dd26","best_bid":%q,"best_ask":%q}`,
					tok, price(), rng.IntN(5000), rng.IntN(100), []string{"BUY", "SELL"}[rng.IntN(2)], price(), price()))
			}
			f = fmt.Sprintf(`{"market":%q,"price_changes":[%s],"timestamp":"%d","event_type":"price_change"}`, market, strings.Join(ch, ","), ts)
		case r < 90:
			f = fmt.Sprintf(`{"asset_id":%q,"event_type":"last_trade_price","fee_rate_bps":"0","market":%q,"price":%q,"side":"BUY","size":"%d","timestamp":"%d","transaction_hash":"0x%064x"}`,
				tok, market, price(), 1+rng.IntN(900), ts, rng.Uint64())
		case r < 98:
			f = fmt.Sprintf(`{"event_type":"tick_size_change","asset_id":%q,"market":%q,"old_tick_size":"0.01","new_tick_size":"0.001","timestamp":"%d"}`, tok, market, ts)
		default:
			var bids, asks []string
			for k := range 40 {
				bids = append(bids, fmt.Sprintf(`{"price":"0.%02d","size":"%d"}`, 1+k, 1+rng.IntN(9000)))
				asks = append(asks, fmt.Sprintf(`{"price":"0.%02d","size":"%d"}`, 99-k, 1+rng.IntN(9000)))
			}
			f = fmt.Sprintf(`{"event_type":"book","asset_id":%q,"market":%q,"bids":[%s],"asks":[%s],"timestamp":"%d","hash":"0x1"}`,
				tok, market, strings.Join(bids, ","), strings.Join(asks, ","), ts)
		}
		frames = append(frames, []byte(f))
	}
	var d Decoder
	var out []Event
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var err error
		if out, err = d.DecodeAppend(out[:0], frames[n%len(frames)]); err != nil {
			b.Fatal(err)
		}
		n++
	}
}
