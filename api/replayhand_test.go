package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Hand-made markets replayed through the real router and a real Asynq
// worker: every figure below is worked out by hand from DESIGN 6, and the
// answer must carry it as the engine computes it, after the store's round
// trip of the tape (books with levels of size 0 or less, which are no levels, a crossed book,
// snapshots without books, equal times) and the queue's of the result.

// handStart is the start of the hand-made markets: a 5m market whose
// snapshots at second s are 50000+s in coin price.
var handStart = time.Date(2026, 4, 29, 9, 0, 0, 0, time.UTC)

func handAt(ms int) time.Time { return handStart.Add(time.Duration(ms) * time.Millisecond) }

func handTime(ms int) string { return handAt(ms).UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

type handLevel = store.Level

func hl(p, s float64) handLevel { return handLevel{Price: p, Size: s} }

func handSnap(ms int, up, down float64, bids, asks []handLevel) store.Snapshot {
	s := store.Snapshot{Time: handAt(ms), CoinPrice: 50000 + float64(ms)/1000, PriceUp: up, PriceDown: down}
	if bids != nil || asks != nil {
		s.BookUp = &store.Book{Bids: bids, Asks: asks}
	}
	return s
}

// handTrade is what a trade event shows, in the order of SPEC 2.6.
type handTrade struct {
	typ, reason                         string
	ms                                  int
	price, fill, shares, slip, fee, pnl float64
	cum                                 float64
}

type handCase struct {
	name   string
	winner string
	fees   bool // the market's schedule: rate 0.07, exponent 1, rebate rate 0.2
	snaps  []store.Snapshot
	trades []store.MarketTrade
	body   map[string]any
	want   []handTrade
	perf   map[string]float64
}

func handCases() []handCase {
	cond := func(f, op string, v float64) []map[string]any {
		return []map[string]any{{"field": f, "operator": op, "value": v}}
	}
	never := cond("price_up", ">", 2)
	tr := func(ms int, outcome, side string, price, size float64, hash string) store.MarketTrade {
		return store.MarketTrade{Time: handAt(ms), Outcome: outcome, Price: price, Size: size, Side: side, TxHash: hash}
	}
	U, D := store.OutcomeUp, store.OutcomeDown
	return []handCase{{
		// Three round trips: a win, one with pnl 0 (neither winning nor
		// losing, but a trade), and a loss settled at MARKET_END. Fills
		// without a book (or without bids) are at the snapshot's price.
		name: "win, zero and market end", winner: "Down",
		snaps: []store.Snapshot{
			handSnap(0, 0.50, 0.50, nil, nil),
			handSnap(10_000, 0.60, 0.40, nil, nil),
			handSnap(20_000, 0.50, 0.50, nil, nil),
			handSnap(30_000, 0.60, 0.40, []handLevel{hl(0.50, 100)}, []handLevel{hl(0.60, 100)}),
			handSnap(40_000, 0.45, 0.55, nil, nil),
			handSnap(50_000, 0.40, 0.60, nil, nil),
		},
		body: map[string]any{"side": "UP", "positionSize": 10,
			"entryConditions": cond("price_up", "<=", 0.5), "exitConditions": cond("price_up", ">=", 0.6)},
		want: []handTrade{
			{"ENTRY", "SIGNAL", 0, 0.5, 0.5, 10, 0, 0, 0, 0},
			{"EXIT", "SIGNAL", 10_000, 0.6, 0.6, 10, 0, 0, 1, 1},
			{"ENTRY", "SIGNAL", 20_000, 0.5, 0.5, 10, 0, 0, 0, 1},
			{"EXIT", "SIGNAL", 30_000, 0.6, 0.5, 10, 0.1, 0, 0, 1},
			{"ENTRY", "SIGNAL", 40_000, 0.45, 0.45, 10, 0, 0, 0, 1},
			{"EXIT", "MARKET_END", 300_000, 0, 0, 10, 0, 0, -4.5, -3.5},
		},
		perf: map[string]float64{"total_pnl": -3.5, "total_pnl_percent": -24.137931, "total_fees": 0,
			"max_drawdown": 4.5, "max_drawdown_percent": 40.909091, "total_trades": 3, "winning_trades": 1,
			"losing_trades": 1, "win_rate": 33.333333, "avg_trade_pnl": -1.166667, "best_trade": 1, "worst_trade": -4.5,
			"time_in_position_pct": 60},
	}, {
		// LIMIT orders, a custom fee of 0.1·p(1−p): an entry that buys the
		// 4 shares at its limit past levels that are not levels; an
		// all-or-none exit on a crossed book that waits for the bid to
		// hold the whole position; an entry without a book; a MAX_LOSS exit
		// (always MARKET) that sells past the recorded bids at the worst.
		name: "limit, odd levels, crossed book, max loss", winner: "Down",
		snaps: []store.Snapshot{
			handSnap(0, 0.50, 0.50, []handLevel{hl(0.49, 0), hl(0.48, 50)}, []handLevel{hl(0.50, 0), hl(0.50, -5), hl(0.50, 4), hl(0.51, 100)}),
			handSnap(10_000, 0.60, 0.40, []handLevel{hl(0.62, 3), hl(0.61, 10)}, []handLevel{hl(0.60, 10)}),
			handSnap(20_000, 0.60, 0.40, []handLevel{hl(0.62, 4)}, []handLevel{hl(0.60, 10)}),
			handSnap(30_000, 0.50, 0.50, nil, nil),
			handSnap(40_000, 0.30, 0.70, []handLevel{hl(0.29, -10), hl(0.20, 0)}, []handLevel{hl(0.30, 5)}),
			handSnap(50_000, 0.25, 0.75, []handLevel{hl(0.24, 2)}, []handLevel{hl(0.25, 5)}),
		},
		body: map[string]any{"side": "UP", "positionSize": 10, "orderType": "LIMIT", "feeModel": "CUSTOM", "feeRate": 0.1,
			"entryConditions": cond("price_up", "<=", 0.5), "exitConditions": cond("price_up", ">=", 0.6)},
		want: []handTrade{
			// 4 × 0.1 × 0.25
			{"ENTRY", "SIGNAL", 0, 0.5, 0.5, 4, 0, 0.1, 0, 0},
			// 4 × 0.1 × 0.62 × 0.38 = 0.09424; 4 × 0.12 − 0.1 − 0.09424
			{"EXIT", "SIGNAL", 20_000, 0.6, 0.62, 4, -0.02, 0.09424, 0.28576, 0.28576},
			{"ENTRY", "SIGNAL", 30_000, 0.5, 0.5, 10, 0, 0.25, 0, 0.28576},
			// mark 0.24: loss 5.25 − 2.4 ≥ 2.625; 10 × 0.1 × 0.24 × 0.76
			{"EXIT", "MAX_LOSS", 50_000, 0.25, 0.24, 10, 0.01, 0.1824, -3.0324, -2.74664},
		},
		perf: map[string]float64{"total_pnl": -2.74664, "total_pnl_percent": -37.369252, "total_fees": 0.62664,
			"max_drawdown": 3.12664, "max_drawdown_percent": 30.121773, "total_trades": 2, "winning_trades": 1,
			"losing_trades": 1, "win_rate": 50, "best_trade": 0.28576, "worst_trade": -3.0324, "time_in_position_pct": 80},
	}, {
		// Latency 1 s: the entry lands on the first snapshot at or after
		// 1 s (not the one at the same instant as the decision); the
		// MAX_LOSS decided at 1.5 s walks the book at 2.5 s, priced
		// against 1.5 s; the entry decided at 3 s never executes.
		name: "latency and max loss", winner: "Up",
		snaps: []store.Snapshot{
			handSnap(0, 0.50, 0.50, []handLevel{hl(0.49, 100)}, []handLevel{hl(0.50, 100)}),
			handSnap(0, 0.50, 0.50, nil, nil),
			handSnap(1000, 0.52, 0.48, nil, []handLevel{hl(0.52, 100)}),
			handSnap(1500, 0.40, 0.60, []handLevel{hl(0.38, 100)}, []handLevel{hl(0.40, 100)}),
			handSnap(2000, 0.45, 0.55, []handLevel{hl(0.44, 100)}, []handLevel{hl(0.45, 100)}),
			handSnap(2500, 0.48, 0.52, []handLevel{hl(0.47, 4), hl(0.46, 2)}, []handLevel{hl(0.48, 100)}),
			handSnap(3000, 0.50, 0.50, nil, nil),
		},
		body: map[string]any{"side": "UP", "positionSize": 10, "latencyMs": 1000, "maxLossPercent": 20,
			"entryConditions": cond("price_up", "<=", 0.5), "exitConditions": never},
		want: []handTrade{
			{"ENTRY", "SIGNAL", 1000, 0.5, 0.52, 10, 0.02, 0, 0, 0},
			// 4 × 0.47 + 6 × 0.46 = 4.64
			{"EXIT", "MAX_LOSS", 2500, 0.4, 0.464, 10, -0.064, 0, -0.56, -0.56},
		},
		perf: map[string]float64{"total_pnl": -0.56, "total_pnl_percent": -10.769231, "max_drawdown": 1.4,
			"max_drawdown_percent": 14, "total_trades": 1, "losing_trades": 1, "time_in_position_pct": 50},
	}, {
		// The crypto fee curve of a MARKET entry that walks two levels and
		// a thin MARKET exit: 0.07·p(1−p) a share, summed per fill and
		// rounded down to 5 decimals.
		name: "market fees", winner: "Up", fees: true,
		snaps: []store.Snapshot{
			handSnap(0, 0.52, 0.48, []handLevel{hl(0.51, 100)}, []handLevel{hl(0.52, 3), hl(0.53, 10)}),
			handSnap(10_000, 0.70, 0.30, []handLevel{hl(0.69, 5), hl(0.68, 1)}, []handLevel{hl(0.70, 10)}),
		},
		body: map[string]any{"side": "UP", "positionSize": 7, "feeModel": "MARKET",
			"entryConditions": cond("price_up", "<=", 0.52), "exitConditions": cond("price_up", ">=", 0.7)},
		want: []handTrade{
			// 3 × 0.52 + 4 × 0.53 = 3.68; 0.07 × (3 × 0.2496 + 4 × 0.2491) = 0.122164
			{"ENTRY", "SIGNAL", 0, 0.52, 0.525714, 7, 0.005714, 0.12216, 0, 0},
			// 5 × 0.69 + 2 × 0.68 = 4.81; 0.07 × (5 × 0.2139 + 2 × 0.2176) = 0.105329
			{"EXIT", "SIGNAL", 10_000, 0.7, 0.687143, 7, 0.012857, 0.10532, 1.13 - 0.12216 - 0.10532, 1.13 - 0.12216 - 0.10532},
		},
		perf: map[string]float64{"total_pnl": 0.90252, "total_fees": 0.22748, "total_trades": 1, "winning_trades": 1,
			"win_rate": 100, "time_in_position_pct": 100,
			// entry equity 7 + 7 × (0.51 − 0.525714) − 0.12216
			"max_drawdown": 0.23216, "max_drawdown_percent": 3.316571},
	}, {
		// A resting BUY at the bid 0.40 behind 100 shown: taker sales at
		// 0.40 work the queue off (one match recorded on both outcomes
		// counts once), a taker buy and a sale above the limit never
		// count, a sale under it counts whole, a crossing ask counts at its
		// snapshot only; it fills whole at 14 s. The SELL placed at 15 s
		// at the ask 0.60 is still short at end_time and expires; the
		// position settles at 1.
		name: "resting orders", winner: "Up", fees: true,
		snaps: []store.Snapshot{
			handSnap(0, 0.42, 0.58, []handLevel{hl(0.40, 100)}, []handLevel{hl(0.42, 100)}),
			handSnap(5000, 0.42, 0.58, []handLevel{hl(0.40, 20)}, []handLevel{hl(0.42, 100)}),
			handSnap(10_000, 0.41, 0.59, []handLevel{hl(0.40, 10)}, []handLevel{hl(0.39, 1), hl(0.41, 100)}),
			handSnap(15_000, 0.60, 0.40, []handLevel{hl(0.58, 50)}, []handLevel{hl(0.60, 30)}),
			handSnap(20_000, 0.55, 0.45, []handLevel{hl(0.54, 50)}, []handLevel{hl(0.55, 10), hl(0.60, 5)}),
		},
		trades: []store.MarketTrade{
			tr(2000, U, store.SideSell, 0.40, 60, ""),   // Q 100 → 40
			tr(3000, U, store.SideSell, 0.40, 45, "h1"), // Q 0, 5 counted
			tr(3000, D, store.SideBuy, 0.60, 45, "h1"),  // its twin: once
			tr(6000, U, store.SideBuy, 0.40, 100, ""),   // a taker buy
			tr(7000, U, store.SideSell, 0.41, 100, ""),  // above the limit
			tr(8000, U, store.SideSell, 0.39, 3, ""),    // 8 (and 1 crossing at 10 s: 9, not kept)
			tr(12_000, U, store.SideSell, 0.40, 1, ""),  // 9
			tr(14_000, U, store.SideSell, 0.40, 1, ""),  // 10: filled
			tr(16_000, D, store.SideSell, 0.40, 20, ""), // the SELL's Q 30 → 10
			tr(17_000, U, store.SideBuy, 0.60, 15, ""),  // Q 0, 5 counted
			tr(22_000, U, store.SideBuy, 0.61, 4, ""),   // 9 of 10
		},
		body: map[string]any{"side": "UP", "positionSize": 10, "orderType": "GTC",
			"entryConditions": cond("price_up", ">=", 0.42), "exitConditions": cond("price_up", ">=", 0.6)},
		want: []handTrade{
			{"ENTRY", "SIGNAL", 14_000, 0.4, 0.4, 10, 0, 0, 0, 0},
			{"EXIT", "MARKET_END", 300_000, 1, 1, 10, 0, 0, 6, 6},
		},
		perf: map[string]float64{"total_pnl": 6, "total_pnl_percent": 150, "total_fees": 0, "max_drawdown": 0.4,
			"max_drawdown_percent": 3.389831, "time_in_position_pct": 30, "orders_placed": 2, "orders_filled": 1,
			"orders_expired": 1, "orders_cancelled": 0, "orders_rejected": 0,
			// 10 × 0.07 × 0.24 × 0.2
			"total_maker_rebates": 0.0336},
	}, {
		// A resting BUY decided at 0 s activates at 0.5 s on a recorded
		// book whose levels all have size 0: no level on its side, so no
		// queue ahead; the sale at its limit at 0.7 s fills it.
		name: "resting order on a book of empty levels", winner: "Up",
		snaps: []store.Snapshot{
			handSnap(0, 0.42, 0.58, []handLevel{hl(0.40, 100)}, []handLevel{hl(0.42, 100)}),
			handSnap(500, 0.42, 0.58, []handLevel{hl(0.40, 0)}, []handLevel{hl(0.42, 0)}),
			handSnap(1000, 0.42, 0.58, []handLevel{hl(0.40, 100)}, []handLevel{hl(0.42, 100)}),
		},
		trades: []store.MarketTrade{tr(700, U, store.SideSell, 0.40, 10, "")},
		body: map[string]any{"side": "UP", "positionSize": 10, "orderType": "GTC", "latencyMs": 500,
			"entryConditions": cond("price_up", ">=", 0.42), "exitConditions": never},
		want: []handTrade{
			{"ENTRY", "SIGNAL", 700, 0.4, 0.4, 10, 0, 0, 0, 0},
			{"EXIT", "MARKET_END", 300_000, 1, 1, 10, 0, 0, 6, 6},
		},
		perf: map[string]float64{"total_pnl": 6, "orders_placed": 1, "orders_filled": 1, "orders_expired": 0},
	}}
}

func TestReplayHandMarketsThroughRouter(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	for k, c := range handCases() {
		start := handStart.Add(time.Duration(k) * 24 * time.Hour)
		shift := start.Sub(handStart)
		m := store.Market{Slug: fmt.Sprintf("btc-updown-5m-%d", start.Unix()), MarketID: fmt.Sprintf("hand-%d", k),
			EventID: fmt.Sprintf("hand-ev-%d", k), Coin: store.BTC, MarketType: store.M5, StartTime: start,
			EndTime: start.Add(5 * time.Minute), ConditionID: "0xhand", ClobTokenUp: "h1", ClobTokenDown: "h2",
			Winner: ptr(c.winner), CoinPriceStart: ptr(50000.0), ResolvedAt: ptr(start.Add(6 * time.Minute))}
		if c.fees {
			m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate, m.FeeType = ptr(0.07), ptr(1), ptr(0.2), store.FeeTypeCryptoV2
		}
		if err := q.store.UpsertMarkets(t.Context(), []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		for i := range c.snaps {
			c.snaps[i].Time = c.snaps[i].Time.Add(shift)
		}
		for i := range c.trades {
			c.trades[i].Time = c.trades[i].Time.Add(shift)
		}
		// Snapshots at one instant are one row each in time order: the
		// store keeps the first; a tape with equal times is the engine's
		// (jobs/replay tests it), so the second is dropped here.
		var snaps []store.Snapshot
		for _, s := range c.snaps {
			if len(snaps) > 0 && s.Time.Equal(snaps[len(snaps)-1].Time) {
				continue
			}
			snaps = append(snaps, s)
		}
		if _, err := q.store.AppendSnapshots(t.Context(), m.Slug, snaps); err != nil {
			t.Fatal(err)
		}
		if len(c.trades) > 0 {
			if _, err := q.store.AppendMarketTrades(t.Context(), m.Slug, c.trades); err != nil {
				t.Fatal(err)
			}
		}
		c.body["marketSlug"] = m.Slug
		body, _ := json.Marshal(c.body)
		r := b.replay(store.Enterprise, string(body))
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, r.status, r.body)
		}
		var env struct {
			Data struct {
				replay.Result
				Performance map[string]any `json:"performance"`
			}
		}
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		got := env.Data
		if len(got.Trades) != len(c.want) {
			t.Errorf("%s: %d trade events, want %d: %s", c.name, len(got.Trades), len(c.want), r.body)
			continue
		}
		near := func(what string, got, want float64) {
			t.Helper()
			if math.Abs(got-want) > 1e-6 {
				t.Errorf("%s: %s = %v, want %v", c.name, what, got, want)
			}
		}
		for i, w := range c.want {
			g := got.Trades[i]
			if g.Type != w.typ || g.Reason != w.reason || g.Time != handTime(w.ms+int(shift/time.Millisecond)) {
				t.Errorf("%s: trade %d is %s %s at %s, want %s %s at %s", c.name, i, g.Type, g.Reason, g.Time,
					w.typ, w.reason, handTime(w.ms+int(shift/time.Millisecond)))
			}
			at := fmt.Sprintf("trade %d ", i)
			near(at+"price", g.Price, w.price)
			near(at+"fill_price", g.FillPrice, w.fill)
			near(at+"shares", g.Shares, w.shares)
			near(at+"slippage", g.Slippage, w.slip)
			near(at+"fee", g.Fee, w.fee)
			near(at+"position_pnl", g.PositionPnL, w.pnl)
			near(at+"cumulative_pnl", g.CumulativePnL, w.cum)
		}
		for k, want := range c.perf {
			v, ok := got.Performance[k].(float64)
			if !ok {
				t.Errorf("%s: performance.%s = %v, want %v", c.name, k, got.Performance[k], want)
				continue
			}
			near("performance."+k, v, want)
		}
	}
}
