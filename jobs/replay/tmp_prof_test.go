package replay

import (
	"testing"

	"github.com/updown/updown/store"
)

func BenchmarkTmpGTCOnly(b *testing.B) {
	m, snaps := benchMarket()
	trades := benchTrades(snaps)
	tape, _ := store.TapeOf(snaps, store.OutcomeUp)
	gtc := benchStrategy()
	gtc.OrderType = OrderGTC
	in := Input{Market: m, Tape: tape, Trades: trades, Packed: PackTrades(trades)}
	for b.Loop() {
		RunInput(in, gtc)
	}
}
func BenchmarkTmpMarketOnly(b *testing.B) {
	m, snaps := benchMarket()
	tape, _ := store.TapeOf(snaps, store.OutcomeUp)
	in := Input{Market: m, Tape: tape}
	for b.Loop() {
		RunInput(in, benchStrategy())
	}
}
