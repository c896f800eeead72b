package replay

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// Hand-built markets run from t0 for 100 s, so a snapshot at second s has
// time_remaining_pct 100-s, and its coin price is 50000+s.
var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func ts(sec int) string { return formatTime(at(sec)) }

func market(winner string) store.Market {
	return store.Market{
		Slug:       "btc-updown-5m-1735732800",
		Coin:       store.BTC,
		MarketType: store.M5,
		StartTime:  t0,
		EndTime:    at(100),
		Winner:     &winner,
	}
}

func snap(sec int, up, down float64) store.Snapshot {
	return store.Snapshot{Time: at(sec), CoinPrice: 50000 + float64(sec), PriceUp: up, PriceDown: down}
}

// withUp and withDown attach a book to a snapshot.
func withUp(s store.Snapshot, b *store.Book) store.Snapshot   { s.BookUp = b; return s }
func withDown(s store.Snapshot, b *store.Book) store.Snapshot { s.BookDown = b; return s }

// lv is a price level; book builds one from bids and asks.
func lv(price, size float64) store.Level { return store.Level{Price: price, Size: size} }

func book(bids, asks []store.Level) *store.Book { return &store.Book{Bids: bids, Asks: asks} }

func levels(l ...store.Level) []store.Level { return l }

func cond(f, op string, v float64) Condition { return Condition{Field: f, Operator: op, Value: v} }

func conds(c ...Condition) []Condition { return c }

func strategy(side string, size float64, entry, exit []Condition) Strategy {
	return Strategy{Side: side, PositionSize: size, EntryConditions: entry, ExitConditions: exit}
}

// never is an exit condition that never holds.
func never() []Condition { return conds(cond(FieldPriceUp, OpGreater, 2)) }

func entryEv(sec int, price, fill, shares, cum float64) TradeEvent {
	return TradeEvent{Type: TradeEntry, Reason: ReasonSignal, Time: ts(sec), Price: price, FillPrice: fill,
		Shares: shares, Slippage: round6(fill - price), CumulativePnL: cum, CoinPrice: 50000 + float64(sec)}
}

func exitEv(reason string, sec int, price, fill, shares, pnl, cum float64) TradeEvent {
	return TradeEvent{Type: TradeExit, Reason: reason, Time: ts(sec), Price: price, FillPrice: fill,
		Shares: shares, Slippage: round6(price - fill), PositionPnL: pnl, CumulativePnL: cum, CoinPrice: 50000 + float64(sec)}
}

func point(sec int, pnl, unrealized, price float64, in bool) EquityPoint {
	return EquityPoint{Time: ts(sec), PnL: pnl, UnrealizedPnL: unrealized, Price: price,
		CoinPrice: 50000 + float64(sec), InPosition: in}
}

// inputOf is what a store gives a replay of s: the tapes of both outcomes
// (the side's first) and the trades.
func inputOf(t *testing.T, m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, s Strategy) Input {
	t.Helper()
	other := store.OutcomeUp
	if s.Outcome() == store.OutcomeUp {
		other = store.OutcomeDown
	}
	side, err := store.TapeOf(snaps, s.Outcome())
	if err != nil {
		t.Fatal(err)
	}
	o, err := store.TapeOf(snaps, other)
	if err != nil {
		t.Fatal(err)
	}
	return Input{Market: m, Tape: side, Other: o, Trades: trades}
}

// fullWindow lists every trade event, however many: what the invariant and
// reference tests compare.
var fullWindow = TradeWindow{Paged: true, Limit: math.MaxInt}

// runFull replays s with every trade event listed.
func runFull(t *testing.T, m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, s Strategy) (Result, error) {
	t.Helper()
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	return RunWindow(inputOf(t, m, snaps, trades, s), s, fullWindow)
}

// checkUnlisted checks that the replays that keep no list of events, the
// performance alone (PerformanceOf) and the sums of the round trips
// (TradeSums), give the figures of r, the full replay of the same input,
// and the sums of the round trips paired from the events a replay that
// keeps them all recorded.
func checkUnlisted(t *testing.T, name string, in Input, s Strategy, r Result) {
	t.Helper()
	perf, err := PerformanceOf(in, s)
	if err != nil {
		t.Fatalf("%s: PerformanceOf: %v", name, err)
	}
	if got, want := mustJSON(t, perf), mustJSON(t, r.Performance); !bytes.Equal(got, want) {
		t.Fatalf("%s: PerformanceOf:\n%s\nthe replay's performance:\n%s", name, got, want)
	}
	sperf, sums, err := TradeSums(in, s)
	if err != nil {
		t.Fatalf("%s: TradeSums: %v", name, err)
	}
	if got, want := mustJSON(t, sperf), mustJSON(t, r.Performance); !bytes.Equal(got, want) {
		t.Fatalf("%s: TradeSums' performance:\n%s\nthe replay's performance:\n%s", name, got, want)
	}
	e, _, err := replayInput(in, s, keepAll)
	if err != nil {
		t.Fatal(err)
	}
	defer e.release()
	var trips []RoundTrip
	var entry *event
	for k := range e.events {
		ev := &e.events[k]
		if !ev.exit {
			entry = ev
			continue
		}
		if entry == nil {
			t.Fatalf("%s: an EXIT event with no ENTRY before it", name)
		}
		trips = append(trips, RoundTrip{EntryFill: round6(entry.fill), EntryMid: round6(entry.mid), PnL: round6(ev.pnl),
			Fees: round6(entry.fee + ev.fee), Won: e.settle})
		entry = nil
	}
	if len(trips) != r.Performance.TotalTrades {
		t.Fatalf("%s: %d round trips paired from the events, %d trades", name, len(trips), r.Performance.TotalTrades)
	}
	if got, want := mustJSON(t, sums), mustJSON(t, SumTrips(trips)); !bytes.Equal(got, want) {
		t.Fatalf("%s: TradeSums:\n%s\nthe sums of the events' round trips:\n%s", name, got, want)
	}
}
