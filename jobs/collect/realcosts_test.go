package collect

import (
	"math"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// A replay over real payloads, its costs worked out by hand: the market as
// the collector records it from the live Gamma event (fee schedule rate
// 0.07, exponent 1) and the live CLOB book of its UP token, read the
// collector's way (best first). A MARKET buy of 30 UP walks the real asks
// and a MARKET sell of the 30 walks the real bids, each level paying
// shares × 0.07 × p(1 − p), summed and rounded down to 5 decimals.
func TestRealBookReplayCosts(t *testing.T) {
	t.Parallel()
	var events []gammaEvent
	decodeReal(t, realGamma[0], &events)
	ev := events[0]
	start, end := NewPolymarketScheme().Window(store.BTC, store.M5, time.Date(2026, 5, 12, 11, 12, 49, 0, time.UTC))
	m, _, err := toMarket(gammaFound{market: ev.Markets[0], event: ev}, store.BTC, store.M5, start, end)
	if err != nil {
		t.Fatal(err)
	}
	down := store.OutcomeDown
	m.Winner = &down // settled for the replay; the payload is of an open market
	var b clobBook
	decodeReal(t, realCLOB[0], &b)
	bk, err := b.book(100)
	if err != nil {
		t.Fatal(err)
	}
	at := func(sec int) store.Snapshot {
		return store.Snapshot{Time: start.Add(time.Duration(sec) * time.Second), CoinPrice: 80000, PriceUp: 0.25, PriceDown: 0.76, BookUp: &bk}
	}
	// 11:12:49 has 43.7% of the window left, 11:13:00 40%.
	snaps := []store.Snapshot{at(169), at(180)}
	s := replay.Strategy{Side: replay.SideUp, PositionSize: 30, FeeModel: replay.FeeMarket,
		EntryConditions: []replay.Condition{{Field: replay.FieldPriceUp, Operator: replay.OpLessOrEqual, Value: 0.25}},
		ExitConditions:  []replay.Condition{{Field: replay.FieldTimeRemainingPct, Operator: replay.OpLess, Value: 42}}}
	r, err := replay.Run(m, snaps, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trades) != 2 || r.Trades[1].Reason != replay.ReasonSignal {
		t.Fatalf("trades %+v, want an entry and a SIGNAL exit", r.Trades)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s = %.6f, want %.6f", what, got, want)
		}
	}
	en, ex := r.Trades[0], r.Trades[1]
	// asks best first: 0.25×5, 0.27×6, 0.28×15, 0.29×25:
	// 5 × 0.25 + 6 × 0.27 + 15 × 0.28 + 4 × 0.29 = 1.25 + 1.62 + 4.20 + 1.16 = 8.23
	near("entry fill", en.FillPrice, 8.23/30)
	// 0.07 × (5 × 0.1875 + 6 × 0.1971 + 15 × 0.2016 + 4 × 0.2059)
	//   = 0.065625 + 0.082782 + 0.21168 + 0.057652 = 0.417739 → 0.41773
	near("entry fee", en.Fee, 0.41773)
	// bids best first: 0.24×25, 0.23×20: 25 × 0.24 + 5 × 0.23 = 6 + 1.15 = 7.15
	near("exit fill", ex.FillPrice, 7.15/30)
	// 0.07 × (25 × 0.1824 + 5 × 0.1771) = 0.3192 + 0.061985 = 0.381185 → 0.38118
	near("exit fee", ex.Fee, 0.38118)
	// 7.15 − 8.23 − 0.41773 − 0.38118
	near("pnl", ex.PositionPnL, -1.87891)
	near("total_fees", r.Performance.TotalFees, 0.79891)
}
