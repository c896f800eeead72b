package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// refRested is what referenceResting finds: the trade events (numbers
// unrounded) and the orders list, with the counters.
type refRested struct {
	trades  []TradeEvent
	orders  []OrderEvent
	counts  map[string]int
	rebates float64
}

// referenceResting is DESIGN 6's resting orders transcribed as plainly as
// possible, over one timeline of snapshots and trades. It shares no code
// with the engine but the strategy's defaults and the field values of
// refField.
func referenceResting(m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, s Strategy) refRested {
	s.applyDefaults()
	out := refRested{counts: map[string]int{}}
	n := len(snaps)
	up := s.Side == SideUp
	outcome := store.OutcomeDown
	if up {
		outcome = store.OutcomeUp
	}
	latency := time.Duration(s.LatencyMs) * time.Millisecond
	real := func(ls []store.Level) (out []store.Level) {
		for _, l := range ls {
			if l.Size > 0 && !math.IsNaN(l.Price) && !math.IsInf(l.Price, 0) {
				out = append(out, l)
			}
		}
		return out
	}
	side := func(i int) (price float64, bids, asks []store.Level) {
		sn := snaps[i]
		b, price := sn.BookDown, sn.PriceDown
		if up {
			b, price = sn.BookUp, sn.PriceUp
		}
		if b == nil {
			return price, nil, nil
		}
		return price, real(b.Bids), real(b.Asks)
	}
	mark := func(i int) float64 {
		price, bids, _ := side(i)
		if len(bids) > 0 {
			return bids[0].Price
		}
		return price
	}
	holds := refHolds(m, snaps, trades)

	// Fees, taker only, and the maker rebate.
	rate, exp := 0.0, 1.0
	switch s.FeeModel {
	case FeeCustom:
		rate, exp = *s.FeeRate, float64(s.FeeExponent)
	case FeeMarket:
		if m.TakerFeeRate != nil && *m.TakerFeeRate > 0 {
			rate = *m.TakerFeeRate
		}
		if m.FeeExponent != nil && *m.FeeExponent >= 0 {
			exp = float64(*m.FeeExponent)
		}
	}
	floor5 := func(x float64) float64 { return math.Floor(x*1e5+math.Max(1e-9, x*1e-8)) / 1e5 } // 1e-13 of the fee in units
	// The early-2026 crypto curve multiplies by the price once more.
	priceFactor := func(p float64) float64 {
		if s.FeeModel == FeeMarket && m.FeeType == "crypto_fees" {
			return p
		}
		return 1
	}
	type pair struct{ p, q float64 }
	feeOf := func(pairs []pair) float64 {
		var sum float64
		for _, pq := range pairs {
			sum += pq.q * rate * math.Pow(math.Max(0, pq.p*(1-pq.p)), exp) * priceFactor(pq.p)
		}
		return floor5(sum)
	}
	rebateOf := func(p, q float64) float64 {
		if m.MakerRebateRate == nil || *m.MakerRebateRate <= 0 || m.TakerFeeRate == nil || *m.TakerFeeRate <= 0 {
			return 0
		}
		e := 1.0
		if m.FeeExponent != nil && *m.FeeExponent >= 0 {
			e = float64(*m.FeeExponent)
		}
		timesP := 1.0
		if m.FeeType == "crypto_fees" {
			timesP = p
		}
		return floor5(q * *m.TakerFeeRate * math.Pow(math.Max(0, p*(1-p)), e) * timesP * *m.MakerRebateRate)
	}
	// tickAt is the latest change at or before t, in whatever order the
	// market lists them (at one instant, the one listed last).
	tickAt := func(t time.Time) float64 {
		tick, since := 0.01, time.Time{}
		for _, c := range m.TickSizeChanges {
			if !c.Time.After(t) && c.TickSize > 0 && (since.IsZero() || !c.Time.Before(since)) {
				tick, since = c.TickSize, c.Time
			}
		}
		return tick
	}
	// grid puts a limit on the tick grid: a price off it goes to the
	// passive side, down for a BUY and up for a SELL.
	grid := func(x, tick float64, buy bool) float64 {
		str := strconv.FormatFloat(tick, 'f', -1, 64)
		d := 0
		if k := strings.IndexByte(str, '.'); k >= 0 {
			d = len(str) - k - 1
		}
		scale := math.Pow(10, float64(d))
		switch u := x * scale; {
		case math.Abs(u-math.Round(u)) <= 1e-9*scale:
			return math.Round(u) / scale
		case buy:
			return math.Floor(u) / scale
		default:
			return math.Ceil(u) / scale
		}
	}

	// Trades in time order, the side's own first at equal times.
	tr := slices.Clone(trades)
	slices.SortStableFunc(tr, func(a, b store.MarketTrade) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		switch {
		case a.Outcome == outcome && b.Outcome != outcome:
			return -1
		case b.Outcome == outcome && a.Outcome != outcome:
			return 1
		}
		return 0
	})

	var (
		open                           bool
		shares, entryFill, entryFee    float64
		entryRebate, realized          float64
		entries                        int
		lastExit                       *time.Time
		pending                        string // "", "rest", "entry", "exit", MAX_LOSS
		dueAt                          time.Time
		decided, pendingLimit          float64
		live, active, buy              bool
		limit, oShares, queue, counted float64
		placed, cancelAt               time.Time
		hasCancel                      bool
		hashes                         map[string]bool
	)
	settleTime := m.EndTime
	if settleTime.Before(snaps[n-1].Time) {
		settleTime = snaps[n-1].Time
	}
	sideName := func(b bool) string {
		if b {
			return OrderBuy
		}
		return OrderSell
	}
	act := func(at time.Time, action string, b bool, price, q float64, reason string) {
		out.counts[action]++
		if len(out.orders) < MaxOrders {
			out.orders = append(out.orders, OrderEvent{Time: formatTime(at), Action: action, Side: sideName(b), Price: price, Shares: q, Reason: reason})
		}
	}
	endOrder := func(at time.Time, action, reason string) {
		act(at, action, buy, limit, oShares, reason)
		live, active = false, false
	}
	event := func(typ, reason string, at time.Time, coin, price, fill, q, fee, pnl float64, liq string, rebate *float64) {
		slip := fill - price
		if typ == TradeExit {
			slip = price - fill
		}
		out.trades = append(out.trades, TradeEvent{Type: typ, Reason: reason, Time: formatTime(at), Price: price, FillPrice: fill,
			Shares: q, Slippage: slip, Fee: fee, PositionPnL: pnl, CumulativePnL: realized, CoinPrice: coin, Liquidity: liq, MakerRebate: rebate})
	}
	closeWith := func(reason string, at time.Time, coin, price, fill, fee, rebate float64, liq string, rb *float64) {
		pnl := shares*(fill-entryFill) - entryFee - fee
		if s.IncludeRebates {
			pnl += entryRebate + rebate
		}
		realized += pnl
		open = false
		entryRebate = 0
		lastExit = &at
		event(TradeExit, reason, at, coin, price, fill, shares, fee, pnl, liq, rb)
	}
	// taker executes a GTC that does not rest at snapshot j: an entry
	// buys asks at or under lim; an exit sells the whole position at or
	// over it, or nothing. It reports whether it filled.
	taker := func(j int, b bool, lim, shown float64) bool {
		price, bids, asks := side(j)
		t, coin := snaps[j].Time, snaps[j].CoinPrice
		// Post only, an order that would take liquidity is rejected: one
		// at or through the other side's best level, or one with no level
		// there (it would fill at the snapshot's price).
		if s.PostOnly && (b && (len(asks) == 0 || lim >= asks[0].Price-1e-9) || !b && (len(bids) == 0 || lim <= bids[0].Price+1e-9)) {
			q := s.PositionSize
			if !b {
				q = shares
			}
			act(t, OrderRejected, b, lim, q, OrderReasonPostOnly)
			return false
		}
		if b {
			fill, got, fee := price, s.PositionSize, feeOf([]pair{{price, s.PositionSize}})
			if len(asks) > 0 {
				cost, left := 0.0, s.PositionSize
				var pairs []pair
				for _, l := range asks {
					if l.Price > lim+1e-9 {
						break
					}
					q := math.Min(left, l.Size)
					cost += q * l.Price
					pairs = append(pairs, pair{l.Price, q})
					left -= q
					if left <= 0 {
						break
					}
				}
				got = s.PositionSize - max(left, 0)
				if got <= 0 {
					act(t, OrderCancelled, true, lim, s.PositionSize, OrderReasonNoFill)
					return false
				}
				fill, fee = cost/got, feeOf(pairs)
			}
			open, shares, entryFill, entryFee, entryRebate = true, got, fill, fee, 0
			entries++
			event(TradeEntry, ReasonSignal, t, coin, shown, fill, got, fee, 0, LiquidityTaker, nil)
			act(t, OrderFilled, true, fill, got, OrderReasonTaker)
			return true
		}
		fill, fee := price, feeOf([]pair{{price, shares}})
		if len(bids) > 0 {
			left, proceeds := shares, 0.0
			var pairs []pair
			for _, l := range bids {
				if l.Price < lim-1e-9 {
					break
				}
				q := math.Min(left, l.Size)
				proceeds += q * l.Price
				pairs = append(pairs, pair{l.Price, q})
				left -= q
				if left <= 0 {
					break
				}
			}
			if left > 1e-9 {
				act(t, OrderCancelled, false, lim, shares, OrderReasonNoFill)
				return false
			}
			if left > 0 {
				proceeds += left * pairs[len(pairs)-1].p
				pairs = append(pairs, pair{pairs[len(pairs)-1].p, left})
			}
			fill, fee = proceeds/shares, feeOf(pairs)
		}
		q := shares
		closeWith(ReasonSignal, t, coin, shown, fill, fee, 0, LiquidityTaker, nil)
		act(t, OrderFilled, false, fill, q, OrderReasonTaker)
		return true
	}
	sellMarket := func(j int, shown float64) {
		price, bids, _ := side(j)
		fill, fee := price, feeOf([]pair{{price, shares}})
		if len(bids) > 0 {
			left, proceeds := shares, 0.0
			var pairs []pair
			for _, l := range bids {
				q := math.Min(left, l.Size)
				proceeds += q * l.Price
				pairs = append(pairs, pair{l.Price, q})
				left -= q
				if left <= 0 {
					break
				}
			}
			if left > 0 {
				w := bids[len(bids)-1].Price
				proceeds += left * w
				pairs = append(pairs, pair{w, left})
			}
			fill, fee = proceeds/shares, feeOf(pairs)
		}
		closeWith(ReasonMaxLoss, snaps[j].Time, snaps[j].CoinPrice, shown, fill, fee, 0, LiquidityTaker, nil)
	}
	queueAt := func(levels []store.Level) float64 {
		if len(levels) == 0 {
			return 0
		}
		best, worst := levels[0].Price, levels[len(levels)-1].Price
		if buy && limit > best+1e-9 || !buy && limit < best-1e-9 {
			return 0
		}
		if buy && limit < worst-1e-9 || !buy && limit > worst+1e-9 {
			return math.Inf(1)
		}
		var q float64
		for _, l := range levels {
			if math.Abs(l.Price-limit) <= 1e-9 {
				q += l.Size
			}
		}
		return q
	}
	makerFill := func(at time.Time, coin float64, reason string) {
		rebate := rebateOf(limit, oShares)
		rb := rebate
		endOrder(at, OrderFilled, reason)
		if buy {
			open, shares, entryFill, entryFee, entryRebate = true, oShares, limit, 0, rebate
			entries++
			event(TradeEntry, ReasonSignal, at, coin, limit, limit, oShares, 0, 0, LiquidityMaker, &rb)
			return
		}
		closeWith(ReasonSignal, at, coin, limit, limit, 0, rebate, LiquidityMaker, &rb)
	}
	// recorded is whether snapshot i has a book of the side, with levels
	// or none: one that lists no level (or only levels of size 0) shows
	// no level on the order's side (queue 0), where a snapshot without a
	// book shows nothing.
	recorded := func(i int) bool {
		b := snaps[i].BookDown
		if up {
			b = snaps[i].BookUp
		}
		return b != nil
	}
	activate := func(j int) bool {
		_, bids, asks := side(j)
		book := recorded(j)
		if book {
			cross := buy && len(asks) > 0 && limit >= asks[0].Price-1e-9 || !buy && len(bids) > 0 && limit <= bids[0].Price+1e-9
			if cross {
				if s.PostOnly {
					endOrder(snaps[j].Time, OrderRejected, OrderReasonPostOnly)
					return false
				}
				live = false
				return taker(j, buy, limit, decided)
			}
		}
		active = true
		switch {
		case s.QueueModel == QueueFront:
			queue = 0
		case book && buy:
			queue = queueAt(bids)
		case book:
			queue = queueAt(asks)
		default:
			queue = math.Inf(1)
		}
		return false
	}
	place := func(i int, b bool) bool {
		price, bids, asks := side(i)
		t := snaps[i].Time
		buy, oShares, placed, decided, hasCancel, counted, hashes = b, s.PositionSize, t, price, false, 0, map[string]bool{}
		if !b {
			oShares = shares
		}
		if b && len(bids) == 0 || !b && len(asks) == 0 {
			lim := price
			if !b && len(bids) > 0 {
				lim = bids[0].Price
			}
			act(t, OrderPlaced, b, lim, oShares, OrderReasonSignal)
			if latency > 0 {
				pending, dueAt, pendingLimit = "entry", t.Add(latency), lim
				if !b {
					pending = "exit"
				}
				return false
			}
			return taker(i, b, lim, price)
		}
		tick := tickAt(t)
		if b {
			limit = grid(math.Min(bids[0].Price+float64(s.LimitOffsetTicks)*tick, 1-tick), tick, true)
		} else {
			limit = grid(math.Max(asks[0].Price-float64(s.LimitOffsetTicks)*tick, tick), tick, false)
		}
		if s.CancelAfterMs > 0 {
			hasCancel, cancelAt = true, t.Add(time.Duration(s.CancelAfterMs)*time.Millisecond+latency)
		}
		live, active = true, false
		act(t, OrderPlaced, b, limit, oShares, OrderReasonSignal)
		if latency > 0 {
			pending, dueAt = "rest", t.Add(latency)
			return false
		}
		return activate(i)
	}
	expireAt := func() time.Time {
		if placed.After(m.EndTime) {
			return placed
		}
		return m.EndTime
	}

	// evidence counts trade x for the active order; coin is the coin
	// price of the last snapshot at or before it.
	evidence := func(x store.MarketTrade, coin float64) {
		if !live || !active {
			return
		}
		// A cancel due after end_time never takes effect: the order
		// expired with the market first.
		if hasCancel && !x.Time.Before(cancelAt) && !cancelAt.After(m.EndTime) {
			endOrder(cancelAt, OrderCancelled, OrderReasonCancelAfter)
			return
		}
		if !x.Time.Before(m.EndTime) {
			endOrder(expireAt(), OrderExpired, OrderReasonMarketEnd)
			return
		}
		p, takerSold, same := x.Price, x.Side == store.SideSell, x.Outcome == outcome
		if x.TxHash != "" {
			// One match on both outcomes counts once, whichever came first.
			if mirror, ok := hashes[x.TxHash]; ok && mirror == same {
				return
			}
		}
		if !same {
			p, takerSold = 1-p, !takerSold
		}
		if takerSold != buy {
			return
		}
		through := buy && p < limit-1e-9 || !buy && p > limit+1e-9
		at := math.Abs(p-limit) <= 1e-9
		if !through && !at {
			return
		}
		if _, ok := hashes[x.TxHash]; x.TxHash != "" && !ok {
			hashes[x.TxHash] = !same
		}
		if through {
			counted += x.Size
		} else {
			if excess := x.Size - queue; excess > 0 {
				counted += excess
			}
			queue = math.Max(0, queue-x.Size)
		}
		if counted >= oShares-1e-9 {
			makerFill(x.Time, coin, OrderReasonTrade)
		}
	}
	k := 0
	for i := range snaps {
		t := snaps[i].Time
		for ; k < len(tr) && !tr[k].Time.After(t); k++ {
			coin := snaps[max(i-1, 0)].CoinPrice
			if tr[k].Time.Equal(t) {
				coin = snaps[i].CoinPrice
			}
			evidence(tr[k], coin)
		}
		if live {
			switch {
			case hasCancel && !t.Before(cancelAt) && !cancelAt.After(m.EndTime):
				endOrder(cancelAt, OrderCancelled, OrderReasonCancelAfter)
			case !t.Before(m.EndTime):
				endOrder(expireAt(), OrderExpired, OrderReasonMarketEnd)
			}
		}
		price, bids, asks := side(i)
		if pending != "" {
			if t.Before(dueAt) {
				continue
			}
			kind := pending
			pending = ""
			switch kind {
			case "rest":
				if live {
					activate(i)
				}
			case "entry":
				taker(i, true, pendingLimit, decided)
			case "exit":
				taker(i, false, pendingLimit, decided)
			case ReasonMaxLoss:
				sellMarket(i, decided)
			}
			continue
		}
		if live && active {
			c := 0.0
			for _, l := range asks {
				if buy && l.Price < limit-1e-9 {
					c += l.Size
				}
			}
			for _, l := range bids {
				if !buy && l.Price > limit+1e-9 {
					c += l.Size
				}
			}
			if counted+c >= oShares-1e-9 {
				makerFill(t, snaps[i].CoinPrice, OrderReasonCross)
				continue
			}
			if s.QueueModel != QueueFront && recorded(i) {
				if buy {
					queue = math.Min(queue, queueAt(bids))
				} else {
					queue = math.Min(queue, queueAt(asks))
				}
			}
			if buy {
				continue
			}
			cost := shares*entryFill + entryFee
			if cost > 0 && cost-shares*mark(i) >= s.MaxLossPercent/100*cost-1e-9 {
				endOrder(t, OrderCancelled, OrderReasonMaxLoss)
				if latency > 0 {
					pending, dueAt, decided = ReasonMaxLoss, t.Add(latency), price
				} else {
					sellMarket(i, price)
				}
			}
			continue
		}
		if !open {
			ok := (s.MaxEntriesPerMarket == 0 || entries < s.MaxEntriesPerMarket) &&
				(lastExit == nil || !t.Before(lastExit.Add(time.Duration(s.ReentryCooldownMs)*time.Millisecond)))
			for _, c := range s.EntryConditions {
				ok = ok && holds(i, c)
			}
			if ok {
				place(i, true)
			}
			continue
		}
		cost := shares*entryFill + entryFee
		if cost > 0 && cost-shares*mark(i) >= s.MaxLossPercent/100*cost-1e-9 {
			if latency > 0 {
				pending, dueAt, decided = ReasonMaxLoss, t.Add(latency), price
			} else {
				sellMarket(i, price)
			}
			continue
		}
		for _, c := range s.ExitConditions {
			if holds(i, c) {
				place(i, false)
				break
			}
		}
	}
	// After the last snapshot the order rests on until it ends: the
	// trades recorded before its cancel and end_time are evidence, and a
	// cancel at or before end_time takes effect (the cancel is asked about
	// first, as at a snapshot).
	for ; k < len(tr) && tr[k].Time.Before(m.EndTime) && !(hasCancel && !tr[k].Time.Before(cancelAt)); k++ {
		evidence(tr[k], snaps[n-1].CoinPrice)
	}
	if live && hasCancel && !cancelAt.After(m.EndTime) {
		endOrder(cancelAt, OrderCancelled, OrderReasonCancelAfter)
	}
	if live {
		endOrder(expireAt(), OrderExpired, OrderReasonMarketEnd)
	}
	if pending == "entry" || pending == "exit" {
		// A GTC acting as LIMIT that never executed never activated.
		act(expireAt(), OrderExpired, buy, pendingLimit, oShares, OrderReasonMarketEnd)
	}
	if open {
		settle := 0.0
		switch {
		case *m.Winner == store.OutcomeFiftyFifty:
			settle = 0.5
		case (*m.Winner == store.OutcomeUp) == up:
			settle = 1
		}
		coin := snaps[n-1].CoinPrice
		if m.CoinPriceEnd != nil {
			coin = *m.CoinPriceEnd
		}
		closeWith(ReasonMarketEnd, settleTime, coin, settle, settle, 0, 0, "", nil)
	}
	for _, e := range out.trades {
		if e.MakerRebate != nil {
			out.rebates += *e.MakerRebate
		}
	}
	return out
}

// randomTrades draws recorded trades between a market's snapshots, and
// after the last one (up to 3 s, before and after end_time): both
// outcomes, both taker sides, at and around the books' touch, with
// repeated hashes, mirrored twins and trades without a hash.
func randomTrades(rng *rand.Rand, snaps []store.Snapshot) []store.MarketTrade {
	var out []store.MarketTrade
	for i := range snaps {
		if rng.IntN(3) == 0 {
			continue
		}
		for range 1 + rng.IntN(3) {
			at := snaps[i].Time
			if i+1 < len(snaps) {
				if gap := snaps[i+1].Time.Sub(at); gap > 0 {
					at = at.Add(time.Duration(rng.Int64N(int64(gap) + 1)))
				}
			} else {
				at = at.Add(time.Duration(rng.Int64N(int64(3*time.Second) + 1)))
			}
			// To the microsecond, as every store keeps times: a trade a
			// few nanoseconds after a snapshot would show that snapshot's
			// time, which no recorded trade can.
			at = at.Truncate(time.Microsecond)
			o, price := store.OutcomeUp, snaps[i].PriceUp
			if rng.IntN(2) == 0 {
				o, price = store.OutcomeDown, snaps[i].PriceDown
			}
			p := math.Round((price+float64(rng.IntN(7)-4)/100)*100) / 100
			side := store.SideSell
			if rng.IntN(2) == 0 {
				side = store.SideBuy
			}
			hash := fmt.Sprintf("0x%02x", rng.IntN(40))
			if rng.IntN(8) == 0 {
				hash = ""
			}
			size := float64(1 + rng.IntN(200))
			out = append(out, store.MarketTrade{Time: at, Outcome: o, Side: side, Price: p, Size: size, TxHash: hash})
			if rng.IntN(4) == 0 { // the match's twin on the other outcome
				twin := store.OutcomeUp
				if o == store.OutcomeUp {
					twin = store.OutcomeDown
				}
				other := store.SideBuy
				if side == store.SideBuy {
					other = store.SideSell
				}
				out = append(out, store.MarketTrade{Time: at, Outcome: twin, Side: other, Price: math.Round((1-p)*100) / 100, Size: size, TxHash: hash})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b store.MarketTrade) int { return a.Time.Compare(b.Time) })
	return out
}

// repeatBooks gives many snapshots the book sides of the one before, as
// recorded books repeat between snapshots: the tape then shares the side,
// and the engine skips a resting order's check on a book it has seen.
func repeatBooks(rng *rand.Rand, snaps []store.Snapshot) {
	for i := 1; i < len(snaps); i++ {
		if rng.IntN(3) == 0 {
			continue
		}
		prev, sn := &snaps[i-1], &snaps[i]
		for _, p := range [2][2]**store.Book{{&sn.BookUp, &prev.BookUp}, {&sn.BookDown, &prev.BookDown}} {
			cur, before := p[0], p[1]
			switch {
			case *before == nil || *cur == nil:
			case rng.IntN(2) == 0:
				*cur = *before // the whole book
			case rng.IntN(3) == 0:
				// The sizes changed and the prices did not: a side as long
				// as the one before, not the same.
				*cur = &store.Book{Bids: resized(rng, (*before).Bids), Asks: resized(rng, (*before).Asks)}
			default:
				*cur = &store.Book{Bids: (*before).Bids, Asks: (*cur).Asks} // one side
			}
		}
	}
}

// resized is levels at their prices with new sizes.
func resized(rng *rand.Rand, levels []store.Level) []store.Level {
	out := slices.Clone(levels)
	for k := range out {
		out[k].Size = float64(1 + rng.IntN(300))
	}
	return out
}

// TestRestingAgainstReference replays random GTC strategies over random
// markets with books and recorded trades, and checks the engine against
// referenceResting: both queue models, postOnly, offsets, cancels,
// latency, fees, rebates, cooldowns and 50-50.
func TestRestingAgainstReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 23))
	cases := 500
	if testing.Short() {
		cases = 80
	}
	var filled, makerFills, rejected, cancelled, expired int
	for c := range cases {
		n := 2 + rng.IntN(80)
		if c%10 == 0 {
			n = 500 + rng.IntN(1000)
		}
		m, snaps := randomMarket(rng, n)
		if rng.IntN(2) == 0 {
			repeatBooks(rng, snaps)
		}
		trades := randomTrades(rng, snaps)
		if rng.IntN(6) == 0 {
			trades = nil
		}
		if rng.IntN(2) == 0 {
			m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate = ptr(0.07), ptr(1), ptr(0.2)
			if rng.IntN(3) == 0 { // Polymarket's first crypto curve
				m.TakerFeeRate, m.FeeExponent, m.FeeType = ptr(store.FeeTypeCryptoRate), ptr(store.FeeTypeCryptoExponent), store.FeeTypeCrypto
			}
		}
		if rng.IntN(5) == 0 {
			m.TickSizeChanges = []store.TickSizeChange{{Time: snaps[rng.IntN(n)].Time, TickSize: 0.001}}
		}
		if rng.IntN(6) == 0 {
			tie := store.OutcomeFiftyFifty
			m.Winner = &tie
		}
		s := randomStrategyExtended(rng, snaps[0].CoinPrice)
		s.OrderType = OrderGTC
		s.PostOnly = rng.IntN(3) == 0
		s.LimitOffsetTicks = []int{0, 0, 1, 2, 5}[rng.IntN(5)]
		if rng.IntN(3) == 0 {
			s.CancelAfterMs = []int{1, 500, 2000, 10_000}[rng.IntN(4)]
		}
		s.QueueModel = []string{"", QueueRiskAverse, QueueFront}[rng.IntN(3)]
		s.IncludeRebates = rng.IntN(2) == 0
		if rng.IntN(3) == 0 {
			s.LatencyMs = []int{1, 300, 1000, 5000}[rng.IntN(4)]
		}
		s.FeeModel = []string{"", FeeMarket}[rng.IntN(2)]
		name := fmt.Sprintf("case %d (n=%d, %d trades)", c, n, len(trades))
		r, err := runFull(t, m, snaps, trades, s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkFinite(t, name, reflect.ValueOf(r))
		checkInvariants(t, name, m, snaps, r)
		checkUnlisted(t, name, inputOf(t, m, snaps, trades, s), s, r)
		ref := referenceResting(m, snaps, trades, s)
		if len(ref.trades) != len(r.Trades) {
			t.Fatalf("%s: %d trade events, reference %d\n got %v\nwant %v", name, len(r.Trades), len(ref.trades), r.Trades, ref.trades)
		}
		for k, want := range ref.trades {
			got := r.Trades[k]
			if got.Type != want.Type || got.Reason != want.Reason || got.Time != want.Time || got.Liquidity != want.Liquidity ||
				!near(got.Price, want.Price, 1e-6) || !near(got.FillPrice, want.FillPrice, 1e-6) || !near(got.Shares, want.Shares, 1e-6) ||
				!near(got.Fee, want.Fee, 1e-6) || !near(got.PositionPnL, want.PositionPnL, 1e-6) || !near(got.CoinPrice, want.CoinPrice, 1e-6) ||
				(got.MakerRebate == nil) != (want.MakerRebate == nil) || got.MakerRebate != nil && !near(*got.MakerRebate, *want.MakerRebate, 1e-6) {
				t.Fatalf("%s: trade %d\n got %+v\nwant %+v", name, k, got, want)
			}
			if got.Liquidity == LiquidityMaker {
				makerFills++
			}
		}
		if len(ref.orders) != len(r.Orders) {
			t.Fatalf("%s: %d orders, reference %d\n got %v\nwant %v", name, len(r.Orders), len(ref.orders), r.Orders, ref.orders)
		}
		for k, want := range ref.orders {
			got := r.Orders[k]
			if got.Time != want.Time || got.Action != want.Action || got.Side != want.Side || got.Reason != want.Reason ||
				!near(got.Price, want.Price, 1e-6) || !near(got.Shares, want.Shares, 1e-6) {
				t.Fatalf("%s: order %d\n got %+v\nwant %+v", name, k, got, want)
			}
		}
		p := r.Performance
		if *p.OrdersPlaced != ref.counts[OrderPlaced] || *p.OrdersFilled != ref.counts[OrderFilled] ||
			*p.OrdersRejected != ref.counts[OrderRejected] || *p.OrdersCancelled != ref.counts[OrderCancelled] ||
			*p.OrdersExpired != ref.counts[OrderExpired] || !near(*p.TotalMakerRebates, ref.rebates, 1e-6*float64(len(r.Trades)+1)) {
			t.Fatalf("%s: counters %+v, reference %v rebates %v", name, p, ref.counts, ref.rebates)
		}
		noTrades := slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "no recorded trades") })
		if (len(trades) == 0) != noTrades {
			t.Fatalf("%s: warnings %q with %d trades", name, r.Warnings, len(trades))
		}
		filled += ref.counts[OrderFilled]
		rejected += ref.counts[OrderRejected]
		cancelled += ref.counts[OrderCancelled]
		expired += ref.counts[OrderExpired]
	}
	// The generator must reach every path, not just run.
	if makerFills < cases/5 || filled < cases/2 || rejected < cases/20 || cancelled < cases/20 || expired < cases/20 {
		t.Errorf("weak generator: %d fills (%d maker), %d rejected, %d cancelled, %d expired in %d cases",
			filled, makerFills, rejected, cancelled, expired, cases)
	}
}
