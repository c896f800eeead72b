package replay

import (
	"os"
	"testing"

	"github.com/updown/updown/store"
)

//go:noinline
func cgRun(in Input, s Strategy) int {
	r, _ := RunInput(in, s)
	return r.Performance.TotalTrades
}

func TestZZCallgrind(t *testing.T) {
	if os.Getenv("ZZCG") == "" {
		t.Skip()
	}
	m, snaps := benchMarket()
	trades := benchTrades(snaps)
	tape, _ := store.TapeOf(snaps, store.OutcomeUp)
	in := Input{Market: m, Tape: tape, Trades: trades, Packed: PackTrades(trades)}
	s := benchStrategy()
	if os.Getenv("ZZCG") == "gtc" {
		s.OrderType = OrderGTC
	}
	_, _ = RunInput(in, s)
	for range 3 {
		cgRun(in, s)
	}
}
