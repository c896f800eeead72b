package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/updown/updown/store"
)

// TestPackedTradesSameAnswer: trades packed once (Input.Packed) and shared
// by many replays, of both outcomes and on two goroutines at once, give
// every replay the answer it gets packing the trades itself, byte for
// byte.
func TestPackedTradesSameAnswer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 1))
	for c := range 40 {
		m, snaps := randomMarket(rng, 2+rng.IntN(300))
		if rng.IntN(2) == 0 {
			repeatBooks(rng, snaps)
		}
		trades := randomTrades(rng, snaps)
		packed := PackTrades(trades)
		if packed.Len() != len(trades) {
			t.Fatalf("case %d: Len %d of %d trades", c, packed.Len(), len(trades))
		}
		strategies := make([]Strategy, 8)
		for k := range strategies {
			s := randomStrategyExtended(rng, snaps[0].CoinPrice)
			if k%2 == 0 {
				s.OrderType = OrderGTC
			}
			strategies[k] = s
		}
		want := make([][]byte, len(strategies))
		ins := make([]Input, len(strategies))
		for k, s := range strategies {
			want[k] = answer(t, inputOf(t, m, snaps, trades, s), s)
			ins[k] = inputOf(t, m, snaps, nil, s)
			ins[k].Packed = packed
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*len(strategies))
		for range 2 {
			wg.Go(func() {
				for k, s := range strategies {
					if got := answer(t, ins[k], s); !bytes.Equal(got, want[k]) {
						errs <- fmt.Errorf("case %d, strategy %d (%s, %s): packed\n%s\nunpacked\n%s", c, k, s.Side, s.OrderType, got, want[k])
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// answer is the JSON of a replay of s over in, or of its error.
func answer(t *testing.T, in Input, s Strategy) []byte {
	r, err := RunWindow(in, s, fullWindow)
	if err != nil {
		return []byte(err.Error())
	}
	b, err := r.AppendJSON(nil)
	if err != nil {
		t.Error(err)
	}
	return b
}

// TestPackTradesBytes: the estimate grows with the trades and their hashes.
func TestPackTradesBytes(t *testing.T) {
	t.Parallel()
	one := []store.MarketTrade{mtrade(0, "Up", "BUY", 0.5, 10, "")}
	two := append(one, mtrade(1, "Down", "SELL", 0.5, 10, "0xabcdef"))
	if a, b := PackTrades(nil).Bytes(), PackTrades(one).Bytes(); a != 0 || b <= a {
		t.Errorf("Bytes: none %d, one %d", a, b)
	}
	if a, b := PackTrades(one).Bytes(), PackTrades(two).Bytes(); b <= a {
		t.Errorf("Bytes: one %d, two %d", a, b)
	}
}

// TestTradesOutOfTimeOrder: trades given out of time order are walked in
// it, each instant's as given: a replay of the trades with their halves
// swapped answers as one of the trades in order.
func TestTradesOutOfTimeOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 2))
	for c := range 30 {
		m, snaps := randomMarket(rng, 20+rng.IntN(200))
		trades := randomTrades(rng, snaps)
		k := len(trades) / 2
		for k > 0 && k < len(trades) && trades[k].Time.Equal(trades[k-1].Time) {
			k++
		}
		if k == 0 || k >= len(trades) {
			continue
		}
		swapped := append(slices.Clone(trades[k:]), trades[:k]...)
		s := randomStrategyExtended(rng, snaps[0].CoinPrice)
		s.OrderType = OrderGTC
		want := answer(t, inputOf(t, m, snaps, trades, s), s)
		in := inputOf(t, m, snaps, nil, s)
		in.Packed = PackTrades(swapped)
		if got := answer(t, in, s); !bytes.Equal(got, want) {
			t.Fatalf("case %d: trades out of order\n%s\nin order\n%s", c, got, want)
		}
		if got := answer(t, inputOf(t, m, snaps, swapped, s), s); !bytes.Equal(got, want) {
			t.Fatalf("case %d: trades out of order, packed by the replay\n%s\nin order\n%s", c, got, want)
		}
	}
}
