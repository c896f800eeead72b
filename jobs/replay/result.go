package replay

import (
	"fmt"
	"math"
	"time"

	"github.com/updown/updown/store"
)

// MaxCurvePoints bounds the equity curve (DESIGN 6).
const MaxCurvePoints = 1000

// MaxTradeEvents bounds the trade events an answer lists: past it, the
// first and the last MaxTradeEvents/2 are listed, trades_truncated is set,
// and performance.trade_events counts them all; tradesOffset and
// tradesLimit page through the rest. A 24hr replay that trades on every
// snapshot would otherwise answer 50 MB, held in Redis for reuse and in
// the api for every client that reads it slowly.
const MaxTradeEvents = 1000

// MaxTradesOffset bounds a page's first event: more than a 24hr market's
// snapshots, each with an entry and an exit.
const MaxTradesOffset = 1_000_000

// TradeWindow selects the trade events an answer lists. The zero window
// lists them all up to MaxTradeEvents, then the first and last half; a
// paged one lists the events from Offset on, at most Limit.
type TradeWindow struct {
	Paged         bool
	Offset, Limit int
}

// pick returns the indices of the listed events out of n, and whether any
// were left out.
func (w TradeWindow) pick(n int) (lo1, hi1, lo2, hi2 int, truncated bool) {
	if w.Paged {
		lo := min(w.Offset, n)
		hi := min(lo+w.Limit, n)
		return lo, hi, hi, hi, lo > 0 || hi < n
	}
	if n <= MaxTradeEvents {
		return 0, n, n, n, false
	}
	half := MaxTradeEvents / 2
	return 0, half, n - half, n, true
}

// timeLayout is RFC 3339 in UTC with a fixed six-digit fraction: the store
// keeps microseconds, and a fixed width keeps every time the same shape.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Result is a replay's outcome, SPEC 2.6's replay result (the `data` of the
// response). Every number is finite and rounded to 6 decimals.
type Result struct {
	Market         MarketSummary   `json:"market"`
	Strategy       StrategySummary `json:"strategy"`
	Performance    Performance     `json:"performance"`
	Trades         []TradeEvent    `json:"trades"`
	PnLCurve       []EquityPoint   `json:"pnl_curve"`
	TotalSnapshots int             `json:"total_snapshots"`
	// Orders lists a GTC strategy's orders (at most MaxOrders; the
	// performance counters count them all), [] when it placed none.
	// Absent (nil) for MARKET and LIMIT.
	Orders []OrderEvent `json:"orders,omitzero"`
	// Warnings says what the replay could not do as asked, e.g. fill
	// resting orders from trades on a market that recorded none.
	Warnings []string `json:"warnings,omitempty"`
	// TradesTruncated says that trades lists some of the replay's trade
	// events only (see MaxTradeEvents); performance.trade_events counts
	// them all.
	TradesTruncated bool `json:"trades_truncated,omitempty" doc:"Set when trades lists some of the trade events only: the first and last 500 of more than 1,000, or the page tradesOffset and tradesLimit asked for. performance.trade_events counts them all."`
	// OrdersTruncated says that orders lists the first MaxOrders of a GTC
	// strategy's order actions only; the orders_* counters count them all.
	OrdersTruncated bool `json:"orders_truncated,omitempty" doc:"Set when orders lists the first 1,000 order actions only; performance.orders_placed, orders_filled, orders_rejected, orders_cancelled and orders_expired count them all."`
}

// OrderEvent is one action on a GTC strategy's order (DESIGN 6): PLACED
// at the decision, then FILLED, REJECTED, CANCELLED or EXPIRED. Price is
// the order's limit, or the fill price of a FILLED.
type OrderEvent struct {
	Time   string  `json:"time"`
	Action string  `json:"action" enum:"PLACED,FILLED,REJECTED,CANCELLED,EXPIRED"`
	Side   string  `json:"side" enum:"BUY,SELL"`
	Price  float64 `json:"price"`
	Shares float64 `json:"shares"`
	Reason string  `json:"reason" enum:"SIGNAL,TRADE,CROSS,TAKER,POST_ONLY,CANCEL_AFTER,MAX_LOSS,NO_FILL,MARKET_END"`
}

// MarketSummary names the replayed market.
type MarketSummary struct {
	Slug       string `json:"slug"`
	MarketType string `json:"market_type"`
	Winner     string `json:"winner"`
	StartTime  string `json:"start_time"`
	EndTime    string `json:"end_time"`
}

// StrategySummary echoes the normalized strategy: feeModel (NONE when none
// was named) and latencyMs always, feeRate and feeExponent when a fee
// schedule applied (the request's under CUSTOM, the market's under MARKET,
// rate 0 for a market without one; feeType, the market's fee type under
// MARKET where it has one: "crypto_fees" multiplies each fee by the fill's
// price once more), and the re-entry and resting-order
// rules when they were given.
type StrategySummary struct {
	Side                string   `json:"side"`
	PositionSize        float64  `json:"positionSize"`
	OrderType           string   `json:"orderType"`
	EntryConditionCount int      `json:"entryConditionCount"`
	ExitConditionCount  int      `json:"exitConditionCount"`
	FeeModel            string   `json:"feeModel,omitempty" enum:"NONE,MARKET,CUSTOM"`
	FeeRate             *float64 `json:"feeRate,omitempty"`
	FeeExponent         *int     `json:"feeExponent,omitempty"`
	FeeType             string   `json:"feeType,omitempty"`
	LatencyMs           *int     `json:"latencyMs,omitempty"`
	ReentryCooldownMs   int      `json:"reentryCooldownMs,omitempty"`
	MaxEntriesPerMarket int      `json:"maxEntriesPerMarket,omitempty"`
	PostOnly            bool     `json:"postOnly,omitempty"`
	LimitOffsetTicks    int      `json:"limitOffsetTicks,omitempty"`
	CancelAfterMs       int      `json:"cancelAfterMs,omitempty"`
	QueueModel          string   `json:"queueModel,omitempty"`
	IncludeRebates      bool     `json:"includeRebates,omitempty"`
}

// Performance sums up the replay's trades and equity (DESIGN 6).
type Performance struct {
	TotalPnL        float64 `json:"total_pnl" doc:"Realized pnl in dollars, fees (and, with includeRebates, maker rebates) included."`
	TotalPnLPercent float64 `json:"total_pnl_percent" doc:"total_pnl as a percentage of the summed entry costs (shares × entry fill + entry fee) of every trade."`
	// TotalFees sums the taker fees of every fill (0 without a fee model).
	TotalFees          float64 `json:"total_fees" doc:"Taker fees paid on every fill, in dollars (0 under feeModel NONE; makers pay none)."`
	MaxDrawdown        float64 `json:"max_drawdown" doc:"Largest peak-to-trough fall of equity (positionSize + realized + unrealized pnl), in dollars."`
	MaxDrawdownPercent float64 `json:"max_drawdown_percent" doc:"max_drawdown as a percentage of the equity peak it fell from."`
	TotalTrades        int     `json:"total_trades"`
	WinningTrades      int     `json:"winning_trades"`
	LosingTrades       int     `json:"losing_trades"`
	WinRate            float64 `json:"win_rate"`
	AvgTradePnL        float64 `json:"avg_trade_pnl"`
	BestTrade          float64 `json:"best_trade"`
	WorstTrade         float64 `json:"worst_trade"`
	TimeInPositionPct  float64 `json:"time_in_position_pct"`
	FinalMarketOutcome string  `json:"final_market_outcome"`

	// TradeEvents counts every trade event when the answer lists some
	// only (Result.TradesTruncated).
	TradeEvents *int `json:"trade_events,omitempty" doc:"Every trade event of the replay, when trades lists some only."`

	// A GTC strategy's order counters and estimated maker rebates.
	OrdersPlaced      *int     `json:"orders_placed,omitempty"`
	OrdersFilled      *int     `json:"orders_filled,omitempty"`
	OrdersRejected    *int     `json:"orders_rejected,omitempty"`
	OrdersCancelled   *int     `json:"orders_cancelled,omitempty"`
	OrdersExpired     *int     `json:"orders_expired,omitempty"`
	TotalMakerRebates *float64 `json:"total_maker_rebates,omitempty" doc:"Estimated maker rebates of every maker fill, in dollars; in total_pnl only with includeRebates."`
}

// TradeEvent is an ENTRY or an EXIT. Price is the snapshot's price of the
// side (the settlement price for MARKET_END), FillPrice what was paid or
// received per share, Slippage the per-share cost of the difference.
type TradeEvent struct {
	Type      string  `json:"type"`
	Reason    string  `json:"reason"`
	Time      string  `json:"time"`
	Price     float64 `json:"price"`
	FillPrice float64 `json:"fill_price"`
	Shares    float64 `json:"shares"`
	Slippage  float64 `json:"slippage"`
	// Fee is the taker fee paid on this fill (0 under NONE, for a maker
	// fill and at MARKET_END).
	Fee           float64 `json:"fee"`
	PositionPnL   float64 `json:"position_pnl"`
	CumulativePnL float64 `json:"cumulative_pnl"`
	CoinPrice     float64 `json:"coin_price"`
	// Liquidity and MakerRebate are a GTC strategy's: TAKER or MAKER for
	// a fill (absent at MARKET_END), and a maker fill's estimated rebate.
	Liquidity   string   `json:"liquidity,omitempty" enum:"TAKER,MAKER"`
	MakerRebate *float64 `json:"maker_rebate,omitempty"`
}

// EquityPoint is the replay's state after the action at one snapshot. PnL
// is realized plus unrealized (equity less positionSize); UnrealizedPnL the
// open position marked at the best bid; Price the side's snapshot price.
type EquityPoint struct {
	Time          string  `json:"time"`
	PnL           float64 `json:"pnl"`
	UnrealizedPnL float64 `json:"unrealized_pnl"`
	Price         float64 `json:"price"`
	CoinPrice     float64 `json:"coin_price"`
	InPosition    bool    `json:"in_position"`
}

// result renders what replay recorded. Rounding happens here and only here,
// so no rounding error accumulates in the arithmetic.
func (e *engine) result(m store.Market, s Strategy, w TradeWindow) Result {
	r := Result{
		Market: MarketSummary{
			Slug:       m.Slug,
			MarketType: string(m.MarketType),
			Winner:     *m.Winner,
			StartTime:  formatTime(m.StartTime),
			EndTime:    formatTime(m.EndTime),
		},
		Strategy: StrategySummary{
			Side:                s.Side,
			PositionSize:        round6(s.PositionSize),
			OrderType:           s.OrderType,
			EntryConditionCount: len(s.EntryConditions),
			ExitConditionCount:  len(s.ExitConditions),
		},
		TotalSnapshots: len(e.ticks),
	}
	r.Strategy.FeeModel = s.FeeModel
	if r.Strategy.FeeModel == "" {
		r.Strategy.FeeModel = FeeNone
	}
	if s.FeeModel == FeeMarket || s.FeeModel == FeeCustom {
		rate, exp := e.fee.rate, int(e.fee.exp)
		r.Strategy.FeeRate, r.Strategy.FeeExponent = &rate, &exp
		if s.FeeModel == FeeMarket {
			r.Strategy.FeeType = m.FeeType
		}
	}
	lat := s.LatencyMs
	r.Strategy.LatencyMs = &lat
	r.Strategy.ReentryCooldownMs, r.Strategy.MaxEntriesPerMarket = s.ReentryCooldownMs, s.MaxEntriesPerMarket
	r.Strategy.PostOnly, r.Strategy.LimitOffsetTicks, r.Strategy.CancelAfterMs = s.PostOnly, s.LimitOffsetTicks, s.CancelAfterMs
	r.Strategy.QueueModel, r.Strategy.IncludeRebates = s.QueueModel, s.IncludeRebates
	lo1, hi1, lo2, hi2, truncated := w.pick(len(e.events))
	r.Trades = make([]TradeEvent, 0, hi1-lo1+hi2-lo2)
	for _, ev := range e.events[lo1:hi1] {
		r.Trades = append(r.Trades, e.tradeEvent(m, ev))
	}
	for _, ev := range e.events[lo2:hi2] {
		r.Trades = append(r.Trades, e.tradeEvent(m, ev))
	}
	r.Performance = e.performance(m)
	if truncated {
		n := len(e.events)
		r.TradesTruncated, r.Performance.TradeEvents = true, &n
	}
	r.PnLCurve = e.curve(m)
	if s.FeeModel == FeeMarket && m.TakerFeeRate == nil {
		r.Warnings = append(r.Warnings, "this market has no recorded taker fee schedule (Polymarket gave none when it was recorded or imported): feeModel MARKET charged no fee; feeModel CUSTOM sets one, and the service's operator can fill it from Polymarket with updown markets fill-fees")
	}
	// Polymarket refuses an order under the market's minimum (REFERENCE: 5
	// shares on its up/down markets, the measure where an import recorded
	// none); the replay fills it all the same, so it says so.
	least, whose := float64(UsualMinOrderSize), "Polymarket's usual minimum order size of %s shares (this market has none recorded)"
	if x := m.MinOrderSize; x != nil && finite(*x) {
		least, whose = *x, "this market's minimum order size of %s shares"
	}
	if s.PositionSize < least-tolerance && (len(e.events) > 0 || e.rest.counts[0] > 0) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("positionSize %s is under "+whose+": Polymarket refuses smaller orders, so these trades could not have been placed as sized",
			FormatNum(s.PositionSize), FormatNum(least)))
	} else if q, ok := e.smallestSell(least); ok {
		// A partial entry (a thin book, a LIMIT's limit) left a position
		// under the minimum, and its exit sold it in one order.
		r.Warnings = append(r.Warnings, fmt.Sprintf("a sell order of %s shares is under "+whose+" (a partial entry left that position): Polymarket refuses smaller orders, so that exit could not have been placed as replayed",
			FormatNum(round6(q)), FormatNum(least)))
	}
	if e.rest.on {
		r.Orders = make([]OrderEvent, len(e.rest.orders))
		for k, a := range e.rest.orders {
			side := OrderSell
			if a.buy {
				side = OrderBuy
			}
			r.Orders[k] = OrderEvent{Time: formatTime(time.Unix(0, a.ns)), Action: a.action, Side: side,
				Price: round6(a.price), Shares: round6(a.shares), Reason: a.reason}
		}
		if n := e.rest.actions(); n > len(e.rest.orders) {
			r.OrdersTruncated = true
			r.Warnings = append(r.Warnings, fmt.Sprintf("orders lists the first %d of %d order actions; the orders_* counters count them all", len(e.rest.orders), n))
		}
		if e.rest.noTrades {
			r.Warnings = append(r.Warnings, "this market has no recorded trades: resting orders filled only where the book crossed them, so maker fills are undercounted")
		}
	}
	return r
}

// smallestSell is the fewest shares a sell order of the replay offered
// when that is under least: an EXIT other than the MARKET_END settlement
// (which takes no order), or a resting SELL placed; ok is false when none
// is under it. The engine notes both as it goes (leastSold,
// resting.leastSell), where a pass over a trade-heavy replay's events
// here cost its answer some 7%.
func (e *engine) smallestSell(least float64) (q float64, ok bool) {
	q = e.leastSold
	if s := e.rest.leastSell; s > 0 && (q == 0 || s < q) {
		q = s
	}
	return q, q > 0 && q < least-tolerance
}

func (e *engine) tradeEvent(m store.Market, ev event) TradeEvent {
	t := TradeEvent{
		Type:          TradeEntry,
		Reason:        ev.reason.String(),
		Price:         round6(ev.price),
		FillPrice:     round6(ev.fill),
		Shares:        round6(ev.shares),
		Slippage:      round6(ev.fill - ev.price), // a buy pays above the price
		PositionPnL:   round6(ev.pnl),
		CumulativePnL: round6(ev.cum),
		CoinPrice:     round6(ev.coin),
		Fee:           round6(ev.fee),
	}
	if ev.exit {
		t.Type = TradeExit
		t.Slippage = round6(ev.price - ev.fill) // a sell receives below it
	}
	if ev.idx < len(e.ticks) {
		t.Time = formatTime(time.Unix(0, ev.ns))
	} else {
		t.Time = formatTime(e.settleAt)
	}
	if e.rest.on && ev.reason != evMarketEnd {
		t.Liquidity = LiquidityTaker
		if ev.maker {
			t.Liquidity = LiquidityMaker
			rebate := round6(ev.rebate)
			t.MakerRebate = &rebate
		}
	}
	return t
}

func (e *engine) performance(m store.Market) Performance {
	p := Performance{FinalMarketOutcome: *m.Winner}
	t := &e.sums
	total, entryCosts, best, worst, fees, rebates, inPosNs := t.total, t.entryCosts, t.best, t.worst, t.fees, t.rebates, t.inPosNs
	p.TotalTrades, p.WinningTrades, p.LosingTrades = t.trades, t.wins, t.losses
	first, last := e.ticks[0].Nanos, e.ticks[len(e.ticks)-1].Nanos
	p.TotalPnL = round6(total)
	p.TotalFees = round6(fees)
	if e.rest.on {
		c := e.rest.counts
		placed, filled, rejected, cancelled, expired, rb := c[0], c[1], c[2], c[3], c[4], round6(rebates)
		p.OrdersPlaced, p.OrdersFilled, p.OrdersRejected, p.OrdersCancelled, p.OrdersExpired = &placed, &filled, &rejected, &cancelled, &expired
		p.TotalMakerRebates = &rb
	}
	p.BestTrade = round6(best)
	p.WorstTrade = round6(worst)
	if entryCosts > 0 {
		p.TotalPnLPercent = round6(total / entryCosts * 100)
	}
	if p.TotalTrades > 0 {
		p.WinRate = round6(float64(p.WinningTrades) / float64(p.TotalTrades) * 100)
		p.AvgTradePnL = round6(total / float64(p.TotalTrades))
	}
	p.MaxDrawdown = round6(e.dd.max)
	if e.dd.max > 0 {
		p.MaxDrawdownPercent = round6(e.dd.max / e.dd.atPeak * 100)
	}
	switch span := last - first; {
	case span > 0:
		p.TimeInPositionPct = round6(float64(inPosNs) / float64(span) * 100)
	case e.entries > 0:
		// The recorded span is one instant, and the position held it.
		p.TimeInPositionPct = 100
	}
	return p
}

// curve samples the equity after the action at selected snapshots (see
// curveIndices), plus a final point at end_time when a position settled at
// MARKET_END. The inner loop keeps no per-snapshot history, so each point's
// state is rebuilt from the trade events before it; the same bestBid mark
// gives the same numbers the loop saw.
func (e *engine) curve(m store.Market) []EquityPoint {
	n, vis := len(e.events), e.vis
	// The last event came after the last snapshot: a MARKET_END, or a
	// maker exit filled by a trade recorded after it.
	settled := n > 0 && int(vis[n-1]) >= len(e.ticks)
	budget := MaxCurvePoints
	if settled {
		budget--
	}
	idx := curveIndices(len(e.ticks), vis, budget)
	points := make([]EquityPoint, 0, len(idx)+1)
	var (
		k                            int
		inPos                        bool
		shares, entry, fee, realized float64
	)
	for _, i := range idx {
		// The state is the last event visible at i: only its snapshot
		// indices are read on the way, not the events themselves.
		j := k
		for ; k < n && int(vis[k]) <= i; k++ {
		}
		if k > j {
			ev := &e.events[k-1]
			inPos, realized = !ev.exit, ev.cum
			shares, entry, fee = ev.shares, ev.fill, ev.fee
		}
		sn := &e.ticks[i]
		price := e.price(sn)
		unrealized := 0.0
		if inPos {
			unrealized = shares*(mark(sn, price)-entry) - fee
		}
		points = append(points, EquityPoint{
			Time:          formatTime(e.tape.Time(i)),
			PnL:           round6(realized + unrealized),
			UnrealizedPnL: round6(unrealized),
			Price:         round6(price),
			CoinPrice:     round6(sn.CoinPrice),
			InPosition:    inPos,
		})
	}
	if settled {
		ev := &e.events[n-1]
		at := e.settleAt
		if ev.idx < len(e.ticks) {
			at = time.Unix(0, ev.ns)
		}
		points = append(points, EquityPoint{
			Time:      formatTime(at),
			PnL:       round6(ev.cum),
			Price:     round6(ev.price),
			CoinPrice: round6(ev.coin),
		})
	}
	return points
}

// curveIndices picks at most budget snapshot indices out of n, ascending:
// every snapshot with a trade event and the last snapshot, topped up with
// evenly spaced ones (the first always among them), and where some of
// those fell on trade snapshots, with others evenly spaced among the
// snapshots left out (topUp), so that the budget is used. All n when they fit. If
// the trade snapshots alone exceed the budget, half the points are evenly
// spaced over the market and the other half an evenly spaced selection of
// the trade snapshots, ending with the last snapshot: the bound holds, the
// curve starts where the market's recording does, and no stretch of the
// market (a position held after a burst of trades) goes without points.
func curveIndices(n int, vis []int32, budget int) []int {
	if n <= budget {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	must := make([]int, 0, len(vis)+1)
	for _, v := range vis {
		if at := int(v); at < n-1 && (len(must) == 0 || must[len(must)-1] != at) {
			must = append(must, at)
		}
	}
	must = append(must, n-1)
	if len(must) >= budget {
		// More trade snapshots than points: half the points evenly spaced
		// over the market, from its first snapshot, so that a stretch
		// without trades (a position held for hours) still shows on the
		// curve; the other half an evenly spaced selection of the other
		// trade snapshots, the last snapshot the last of them. n > budget
		// here, so the evenly spaced points are distinct and miss n-1, and
		// at least budget/2 trade snapshots are left to select from.
		even := budget / 2
		rest := make([]int, 0, len(must))
		for i, k := 0, 0; i < len(must); i++ {
			for k < even && k*n/even < must[i] {
				k++
			}
			if k < even && k*n/even == must[i] {
				continue
			}
			rest = append(rest, must[i])
		}
		picks := budget - even
		out := make([]int, 0, budget)
		j := 0
		for k := range even {
			i := k * n / even
			for ; j < picks && rest[(j+1)*len(rest)/picks-1] < i; j++ {
				out = append(out, rest[(j+1)*len(rest)/picks-1])
			}
			out = append(out, i)
		}
		for ; j < picks; j++ {
			out = append(out, rest[(j+1)*len(rest)/picks-1])
		}
		return out
	}
	r := budget - len(must) // evenly spaced points, k·n/r for k < r < n
	out := make([]int, 0, budget)
	j := 0
	for k := range r {
		i := k * n / r
		for ; j < len(must) && must[j] < i; j++ {
			out = append(out, must[j])
		}
		if j < len(must) && must[j] == i {
			continue
		}
		out = append(out, i)
	}
	return topUp(append(out, must[j:]...), n, budget)
}

// topUp adds to picked (ascending indices out of n) as many of the
// snapshots it left out as the budget has room for, evenly spaced among
// those left out. An evenly spaced point that fell on a trade snapshot
// was a point lost: with trades on every other snapshot every one of them
// fell there, and a market of 1,332 snapshots got a curve of 667 points,
// none between the trades.
func topUp(picked []int, n, budget int) []int {
	free := n - len(picked)
	add := min(budget-len(picked), free)
	if add <= 0 {
		return picked
	}
	out := make([]int, 0, len(picked)+add)
	j, rank, k := 0, 0, 0
	for i := 0; i < n && (k < add || j < len(picked)); i++ {
		if j < len(picked) && picked[j] == i {
			out = append(out, i)
			j++
			continue
		}
		if k < add && rank == k*free/add {
			out = append(out, i)
			k++
		}
		rank++
	}
	return out
}

// round6 rounds to 6 decimals for the wire. It also keeps the promise that
// no NaN, Inf or -0 reaches JSON: validated input cannot produce a
// non-finite number, but a corrupt book level could overflow a sum.
func round6(x float64) float64 {
	switch {
	case !finite(x):
		return 0
	case math.Abs(x) >= 1e15: // beyond float64's sixth decimal already
		return x
	}
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0
	}
	return r
}

// formatTime writes t as timeLayout does, by hand for the years 0 to
// 9999: a replay formats a time for every trade and curve point, and
// time.Format's layout walk costs several times the digits.
func formatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeLayout)
	}
	hour, minute, sec := t.Clock()
	var b [27]byte // 2006-01-02T15:04:05.000000Z
	put := func(at, v, digits int) {
		for i := at + digits - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/1000, 6)
	b[26] = 'Z'
	return string(b[:])
}
