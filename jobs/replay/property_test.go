package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// randomMarket builds a resolved market of n snapshots: prices on a 0.01
// grid so that == and crosses meet their values, books that are sometimes
// missing, one-sided, thin or carry levels of size ≤ 0, and times a few
// hundred milliseconds apart.
func randomMarket(rng *rand.Rand, n int) (store.Market, []store.Snapshot) {
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(1e6)) * time.Second)
	winner := store.OutcomeUp
	if rng.IntN(2) == 0 {
		winner = store.OutcomeDown
	}
	snaps := make([]store.Snapshot, n)
	t := start.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
	up, coin := 0.5, 60000.0
	for i := range snaps {
		up = math.Round(min(0.99, max(0.01, up+float64(rng.IntN(7)-3)/100))*100) / 100
		down := math.Round(min(0.99, max(0.01, 1-up+float64(rng.IntN(3))/100))*100) / 100
		coin += float64(rng.IntN(201)-100) / 10
		snaps[i] = store.Snapshot{Time: t, CoinPrice: coin, PriceUp: up, PriceDown: down,
			BookUp: randomBook(rng, up), BookDown: randomBook(rng, down)}
		t = t.Add(time.Duration(1+rng.IntN(600)) * time.Millisecond)
	}
	end := t.Add(time.Duration(rng.IntN(3000)-1000) * time.Millisecond) // now and then before the last snapshot
	m := store.Market{Slug: fmt.Sprintf("btc-updown-15m-%d", start.Unix()), Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: end, Winner: &winner}
	if rng.IntN(2) == 0 {
		m.CoinPriceEnd = &coin
	}
	return m, snaps
}

func randomBook(rng *rand.Rand, mid float64) *store.Book {
	if rng.IntN(5) == 0 {
		return nil
	}
	side := func(dir float64) []store.Level {
		n := rng.IntN(11)
		ls := make([]store.Level, n)
		p := mid + dir*float64(rng.IntN(3))/100
		for i := range ls {
			size := float64(rng.IntN(300))
			if rng.IntN(10) == 0 {
				size = -size
			}
			if rng.IntN(4) == 0 {
				size += float64(rng.IntN(1000)) / 1000 // fractional sizes
			}
			ls[i] = store.Level{Price: math.Round(p*100) / 100, Size: size}
			p += dir * float64(1+rng.IntN(2)) / 100
		}
		return ls
	}
	return &store.Book{Bids: side(-1), Asks: side(1)}
}

// randomStrategy draws a strategy on SPEC's five fields, as the golden
// cases were drawn before the other fields existed.
func randomStrategy(rng *rand.Rand, coin float64) Strategy { return drawStrategy(rng, coin, false) }

// randomStrategyExtended draws on every field, with re-entry control now
// and then.
func randomStrategyExtended(rng *rand.Rand, coin float64) Strategy {
	s := drawStrategy(rng, coin, true)
	if rng.IntN(3) == 0 {
		s.ReentryCooldownMs = []int{1, 300, 1000, 5000, 60_000}[rng.IntN(5)]
	}
	if rng.IntN(3) == 0 {
		s.MaxEntriesPerMarket = 1 + rng.IntN(4)
	}
	return s
}

func drawStrategy(rng *rand.Rand, coin float64, extended bool) Strategy {
	conditions := func() []Condition {
		cs := make([]Condition, 1+rng.IntN(3))
		for i := range cs {
			f := Fields()[rng.IntN(5)]
			if extended && rng.IntN(3) == 0 {
				f = Fields()[rng.IntN(len(Fields()))]
			}
			var v float64
			switch f {
			case FieldPriceUp, FieldPriceDown, FieldBidUp, FieldBidDown, FieldMidUp, FieldMidDown, FieldDisplayUp, FieldDisplayDown:
				v = float64(rng.IntN(101)) / 100
			case FieldImbalanceUp, FieldImbalanceDown:
				v = float64(rng.IntN(21)-10) / 10
			case FieldCoinMovePct, FieldCoinReturn60s:
				v = float64(rng.IntN(21)-10) / 100
			case FieldTimeRemaining:
				v = float64(rng.IntN(300))
			case FieldSpread:
				v = float64(rng.IntN(41)) / 100
			case FieldCoinPrice:
				v = coin + float64(rng.IntN(401)-200)
			case FieldTimeRemainingPct:
				v = float64(rng.IntN(101))
			}
			cs[i] = Condition{Field: f, Operator: Operators()[rng.IntN(7)], Value: v}
		}
		return cs
	}
	s := Strategy{
		Side:            Sides()[rng.IntN(2)],
		EntryConditions: conditions(),
		ExitConditions:  conditions(),
		PositionSize:    float64(1 + rng.IntN(500)),
		OrderType:       []string{"", OrderMarket, OrderLimit}[rng.IntN(3)],
	}
	if rng.IntN(3) == 0 {
		s.PositionSize += float64(rng.IntN(1000)) / 1000
	}
	if rng.IntN(2) == 0 {
		s.MaxLossPercent = float64(1 + rng.IntN(100))
	}
	return s
}

// TestRunProperties replays random strategies over random markets and
// checks the invariants every replay keeps, and the engine against
// reference, a slow transcription of DESIGN 6 that keeps every snapshot's
// equity.
func TestRunProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	cases := propertyCases(400, 120)
	var traded, trades, overCap int
	for c := range cases {
		n := 1 + rng.IntN(60)
		if c%4 == 0 {
			n = 900 + rng.IntN(2500) // past the curve's cap
		}
		m, snaps := randomMarket(rng, n)
		s := randomStrategyExtended(rng, snaps[0].CoinPrice)
		name := fmt.Sprintf("case %d (n=%d)", c, n)
		r, err := runFull(t, m, snaps, nil, s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkInvariants(t, name, m, snaps, r)
		checkAgainstReference(t, name, m, snaps, s, r)

		// A backtest's replay, the performance alone, reports the very
		// same figures, and a sweep's the same round trips.
		checkUnlisted(t, name, inputOf(t, m, snaps, nil, s), s, r)

		// Determinism: the same input, also via JSON and copies, gives the same bytes.
		want := mustJSON(t, r)
		var s2 Strategy
		if err := json.Unmarshal(mustJSON(t, s), &s2); err != nil {
			t.Fatal(err)
		}
		r2, err := runFull(t, m, deepCopy(snaps), nil, s2)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, r2); !bytes.Equal(got, want) {
			t.Fatalf("%s: not deterministic:\n%s\n%s", name, got, want)
		}
		if len(r.Trades) > 0 {
			traded++
		}
		trades += len(r.Trades) / 2
		if n > MaxCurvePoints {
			overCap++
		}
	}
	// The generator must exercise the engine, not just run it.
	if traded < cases/4 || trades < cases || overCap < cases/8 {
		t.Errorf("weak generator: %d of %d cases traded, %d trades, %d markets over the curve cap", traded, cases, trades, overCap)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// near compares rounded figures: each side of a sum or product may be off
// by half a unit in the sixth decimal per term.
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func checkInvariants(t *testing.T, name string, m store.Market, snaps []store.Snapshot, r Result) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{name}, args...)...)
	}
	checkFinite(t, name, reflect.ValueOf(r))
	if r.TotalSnapshots != len(snaps) {
		fail("total_snapshots %d, want %d", r.TotalSnapshots, len(snaps))
	}

	// Trades alternate ENTRY, EXIT and end closed; pnl and cumulative pnl add up.
	var cum, sum float64
	var entry TradeEvent
	for k, tr := range r.Trades {
		if wantEntry := k%2 == 0; (tr.Type == TradeEntry) != wantEntry {
			fail("trade %d is %s", k, tr.Type)
		}
		if tr.Type == TradeEntry {
			if tr.Reason != ReasonSignal || tr.PositionPnL != 0 || !near(tr.CumulativePnL, cum, 1e-6) {
				fail("entry %d: %+v, cumulative before %v", k, tr, cum)
			}
			entry = tr
			continue
		}
		if tr.Shares != entry.Shares {
			fail("exit %d sells %v of %v shares", k, tr.Shares, entry.Shares)
		}
		// Round trip: pnl = (exit fill - entry fill) × shares less both
		// fees, up to the rounding of each fill.
		want := (tr.FillPrice-entry.FillPrice)*tr.Shares - feeOf(entry) - feeOf(tr)
		if r.Strategy.IncludeRebates {
			want += rebateOf(entry) + rebateOf(tr)
		}
		if !near(tr.PositionPnL, want, 1e-6*(tr.Shares+3)) {
			fail("exit %d: pnl %v, want (%v-%v)×%v = %v", k, tr.PositionPnL, tr.FillPrice, entry.FillPrice, tr.Shares, want)
		}
		cum = tr.CumulativePnL
		sum += tr.PositionPnL
		if !near(cum, sum, 1e-6*float64(k+1)) {
			fail("exit %d: cumulative %v, sum of pnl %v", k, cum, sum)
		}
		if tr.Reason == ReasonMarketEnd && (k != len(r.Trades)-1 || tr.Time < formatTime(m.EndTime) || tr.Slippage != 0) {
			fail("MARKET_END %d: %+v", k, tr)
		}
	}
	if len(r.Trades)%2 != 0 {
		fail("%d trade events: a position was left open", len(r.Trades))
	}
	p := r.Performance
	if p.TotalTrades != len(r.Trades)/2 || p.WinningTrades+p.LosingTrades > p.TotalTrades {
		fail("trade counts %+v for %d events", p, len(r.Trades))
	}
	if !near(p.TotalPnL, sum, 1e-6*float64(len(r.Trades)+1)) {
		fail("total_pnl %v, sum of position_pnl %v", p.TotalPnL, sum)
	}
	if p.MaxDrawdown < 0 || p.MaxDrawdownPercent < 0 || p.TimeInPositionPct < 0 || p.TimeInPositionPct > 100 ||
		p.WinRate < 0 || p.WinRate > 100 || p.FinalMarketOutcome != *m.Winner {
		fail("performance out of range: %+v", p)
	}

	// The curve: at most 1000 points, ascending, every trade time and the
	// last snapshot among them, and each point's state agrees with the trades.
	c := r.PnLCurve
	if len(c) == 0 || len(c) > MaxCurvePoints {
		fail("%d curve points", len(c))
	}
	have := map[string]int{} // the first point at each time
	for i, pt := range c {
		// Only a settlement can share its time with a snapshot: the last one,
		// when snapshots were recorded past end_time.
		if i > 0 && (pt.Time < c[i-1].Time || pt.Time == c[i-1].Time && i != len(c)-1) {
			fail("curve not ascending at %d: %s after %s", i, pt.Time, c[i-1].Time)
		}
		if _, ok := have[pt.Time]; !ok {
			have[pt.Time] = i
		}
	}
	last := formatTime(snaps[len(snaps)-1].Time)
	if _, ok := have[last]; !ok {
		fail("curve misses the last snapshot %s", last)
	}
	if len(r.Trades) >= MaxCurvePoints-1 {
		// More trade snapshots than points: the curve is a selection of
		// them, full to the cap.
		if len(c) != MaxCurvePoints && len(c) != len(snaps)+1 {
			fail("%d curve points for %d trade events", len(c), len(r.Trades))
		}
		return
	}
	for _, tr := range r.Trades {
		i, ok := have[tr.Time]
		if tr.Reason == ReasonMarketEnd {
			i = len(c) - 1
			ok = c[i].Time == tr.Time
		}
		if !ok && tr.Liquidity == LiquidityMaker {
			continue // a maker fill between snapshots: the next point shows it
		}
		if !ok {
			fail("curve misses the trade at %s", tr.Time)
		}
		// After an ENTRY the point is in position and its realized part is the
		// cumulative pnl before; after an EXIT it is out, with pnl the cumulative.
		pt := c[i]
		if pt.InPosition != (tr.Type == TradeEntry) || !near(pt.PnL-pt.UnrealizedPnL, tr.CumulativePnL, 2e-6) {
			fail("curve point %+v disagrees with trade %+v", pt, tr)
		}
		if tr.Type == TradeExit && pt.UnrealizedPnL != 0 {
			fail("curve point %+v after an exit has unrealized pnl", pt)
		}
	}
}

// rebateOf is a trade event's maker rebate, 0 for a taker fill.
func rebateOf(tr TradeEvent) float64 {
	if tr.MakerRebate == nil {
		return 0
	}
	return *tr.MakerRebate
}

// feeOf is a trade event's fee.
func feeOf(tr TradeEvent) float64 {
	return tr.Fee
}

// checkFinite fails on any NaN or Inf in v.
func checkFinite(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64:
		if !finite(v.Float()) {
			t.Fatalf("%s: non-finite number", name)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			checkFinite(t, name, v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			checkFinite(t, name, v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			checkFinite(t, name, v.Elem())
		}
	}
}

func checkAgainstReference(t *testing.T, name string, m store.Market, snaps []store.Snapshot, s Strategy, r Result) {
	t.Helper()
	ref := reference(m, snaps, s)
	if len(ref.trades) != len(r.Trades) {
		t.Fatalf("%s: %d trade events, reference %d\n got %+v\nwant %+v", name, len(r.Trades), len(ref.trades), r.Trades, ref.trades)
	}
	for k, want := range ref.trades {
		got := r.Trades[k]
		if got.Type != want.Type || got.Reason != want.Reason || got.Time != want.Time || !near(got.Price, want.Price, 1e-6) ||
			!near(feeOf(got), feeOf(want), 1e-6) || !near(got.CoinPrice, want.CoinPrice, 1e-6) ||
			!near(got.FillPrice, want.FillPrice, 1e-6) || !near(got.Shares, want.Shares, 1e-6) ||
			!near(got.PositionPnL, want.PositionPnL, 1e-6) || !near(got.Slippage, want.Slippage, 1e-6) {
			t.Fatalf("%s: trade %d\n got %+v\nwant %+v", name, k, got, want)
		}
	}
	p := r.Performance
	if !near(p.MaxDrawdown, ref.maxDD, 1e-6) || !near(p.MaxDrawdownPercent, ref.maxDDPct, 1e-6) {
		t.Fatalf("%s: drawdown %v (%v%%), reference %v (%v%%)", name, p.MaxDrawdown, p.MaxDrawdownPercent, ref.maxDD, ref.maxDDPct)
	}
	byTime := map[string]int{}
	for i, sn := range snaps {
		byTime[formatTime(sn.Time)] = i
	}
	for k, pt := range r.PnLCurve {
		i, ok := byTime[pt.Time]
		if !ok || k == len(r.PnLCurve)-1 && len(r.Trades) > 0 && r.Trades[len(r.Trades)-1].Reason == ReasonMarketEnd {
			continue // the MARKET_END point
		}
		if pt.InPosition != ref.inPos[i] || !near(pt.PnL, ref.pnl[i], 1e-6) || !near(pt.UnrealizedPnL, ref.unrealized[i], 1e-6) {
			t.Fatalf("%s: curve point %+v, reference pnl %v unrealized %v in position %v",
				name, pt, ref.pnl[i], ref.unrealized[i], ref.inPos[i])
		}
	}
}

type referenceResult struct {
	trades          []TradeEvent // numbers unrounded
	pnl             []float64    // per snapshot, after its action: realized + unrealized
	unrealized      []float64
	inPos           []bool
	maxDD, maxDDPct float64
}

// reference is DESIGN 6 transcribed as plainly as possible, in one pass that
// keeps every snapshot's state. It shares no code with the engine but the
// strategy's defaults.
func reference(m store.Market, snaps []store.Snapshot, s Strategy) referenceResult {
	return referenceWith(m, snaps, nil, s)
}

// referenceWith is reference over a market with recorded trades, which
// the display fields read.
func referenceWith(m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, s Strategy) referenceResult {
	s.applyDefaults()
	n := len(snaps)
	out := referenceResult{pnl: make([]float64, n), unrealized: make([]float64, n), inPos: make([]bool, n)}
	holds := refHolds(m, snaps, trades)
	side := func(i int) (price float64, bids, asks []store.Level) {
		sn := snaps[i]
		b := sn.BookDown
		price = sn.PriceDown
		if s.Side == SideUp {
			b, price = sn.BookUp, sn.PriceUp
		}
		if b == nil {
			return price, nil, nil
		}
		real := func(ls []store.Level) (out []store.Level) {
			for _, l := range ls {
				if l.Size > 0 {
					out = append(out, l)
				}
			}
			return out
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

	// Fees: the schedule the model names, and a fill's fee over the
	// (price, shares) pairs it took, rounded down to 5 decimals.
	rate, exp := 0.0, 1.0
	switch s.FeeModel {
	case FeeCustom:
		rate, exp = *s.FeeRate, float64(s.FeeExponent)
	case FeeMarket:
		if m.TakerFeeRate != nil {
			rate = *m.TakerFeeRate
		}
		if m.FeeExponent != nil {
			exp = float64(*m.FeeExponent)
		}
	}
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
		return math.Floor(sum*1e5+math.Max(1e-9, sum*1e-8)) / 1e5 // 1e-13 of the fee in units
	}
	latency := time.Duration(s.LatencyMs) * time.Millisecond

	var (
		open                        bool
		shares, entryFill, realized float64
		entryFee                    float64
		peak                        = s.PositionSize
		entries                     int        // ENTRY events so far
		lastExit                    *time.Time // the last EXIT event's time
	)
	observe := func(equity float64) {
		if equity > peak {
			peak = equity
		}
		if dd := peak - equity; dd > out.maxDD+1e-9 { // equal falls: the first (sameFall)
			out.maxDD, out.maxDDPct = dd, dd/peak*100
		}
	}
	event := func(typ, reason string, i int, price, fill, sh, fee, pnl float64) {
		tm, coin := m.EndTime, snaps[n-1].CoinPrice
		if tm.Before(snaps[n-1].Time) {
			tm = snaps[n-1].Time
		}
		if m.CoinPriceEnd != nil {
			coin = *m.CoinPriceEnd
		}
		if i < n {
			tm, coin = snaps[i].Time, snaps[i].CoinPrice
		}
		slip := fill - price
		if typ == TradeExit {
			slip = price - fill
		}
		out.trades = append(out.trades, TradeEvent{Type: typ, Reason: reason, Time: formatTime(tm), Price: price,
			FillPrice: fill, Shares: sh, Slippage: slip, Fee: fee, PositionPnL: pnl, CumulativePnL: realized, CoinPrice: coin})
	}
	// sellAll sells the position into bids, LIMIT orders at limit or
	// better and all or none; without bids at price.
	sellAll := func(bids []store.Level, price, limit float64, isLimit bool) (float64, float64, bool) {
		if len(bids) == 0 {
			return price, feeOf([]pair{{price, shares}}), true
		}
		left, proceeds := shares, 0.0
		var pairs []pair
		for _, l := range bids {
			if isLimit && l.Price < limit-1e-9 {
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
		if isLimit && left > 1e-9 {
			return 0, 0, false // all or none
		}
		if left > 0 { // beyond the recorded levels: at the worst one
			proceeds += left * bids[len(bids)-1].Price
			pairs = append(pairs, pair{bids[len(bids)-1].Price, left})
		}
		return proceeds / shares, feeOf(pairs), true
	}
	// buy enters at snapshot j, a LIMIT at limit or better; shown is the
	// price the event shows.
	buy := func(j int, limit, shown float64) {
		price, _, asks := side(j)
		fill, got, fee := price, s.PositionSize, feeOf([]pair{{price, s.PositionSize}})
		if len(asks) > 0 {
			cost, left := 0.0, s.PositionSize
			var pairs []pair
			for _, l := range asks {
				if s.OrderType == OrderLimit && l.Price > limit+1e-9 {
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
				return
			}
			fill, fee = cost/got, feeOf(pairs)
		}
		open, shares, entryFill, entryFee = true, got, fill, fee
		entries++
		event(TradeEntry, ReasonSignal, j, shown, fill, got, fee, 0)
	}
	sell := func(j int, reason string, limit, shown float64, isLimit bool) {
		price, bids, _ := side(j)
		fill, fee, ok := sellAll(bids, price, limit, isLimit)
		if !ok {
			return
		}
		pnl := shares*(fill-entryFill) - entryFee - fee
		realized += pnl
		open = false
		exitAt := snaps[j].Time
		lastExit = &exitAt
		event(TradeExit, reason, j, shown, fill, shares, fee, pnl)
	}

	// A decision waiting for its snapshot (latency).
	var (
		waiting   string // "", "entry", SIGNAL or MAX_LOSS
		decidedAt time.Time
		decided   float64
		limitAt   float64 // a LIMIT exit's limit: the best bid at the decision
	)
	for i := range snaps {
		price, _, _ := side(i)
		switch {
		case waiting != "":
			if snaps[i].Time.Before(decidedAt.Add(latency)) {
				break
			}
			switch waiting {
			case "entry":
				buy(i, decided, decided)
			case ReasonMaxLoss:
				sell(i, ReasonMaxLoss, 0, decided, false)
			default:
				sell(i, ReasonSignal, limitAt, decided, s.OrderType == OrderLimit)
			}
			waiting = ""
		case !open:
			all := (s.MaxEntriesPerMarket == 0 || entries < s.MaxEntriesPerMarket) &&
				(lastExit == nil || !snaps[i].Time.Before(lastExit.Add(time.Duration(s.ReentryCooldownMs)*time.Millisecond)))
			for _, c := range s.EntryConditions {
				all = all && holds(i, c)
			}
			if all {
				waiting, decidedAt, decided = "entry", snaps[i].Time, price
			}
		default:
			cost := shares*entryFill + entryFee
			loss := cost - shares*mark(i)
			if cost > 0 && loss >= s.MaxLossPercent/100*cost-1e-9 {
				waiting, decidedAt, decided = ReasonMaxLoss, snaps[i].Time, price
				break
			}
			for _, c := range s.ExitConditions {
				if holds(i, c) {
					waiting, decidedAt, decided, limitAt = ReasonSignal, snaps[i].Time, price, mark(i)
					break
				}
			}
		}
		if waiting != "" && latency == 0 {
			// No delay: the decision executes on its own snapshot.
			switch waiting {
			case "entry":
				buy(i, price, price)
			case ReasonMaxLoss:
				sell(i, ReasonMaxLoss, 0, price, false)
			default:
				sell(i, ReasonSignal, mark(i), price, s.OrderType == OrderLimit)
			}
			waiting = ""
		}
		out.inPos[i] = open
		if open {
			out.unrealized[i] = shares*(mark(i)-entryFill) - entryFee
		}
		out.pnl[i] = realized + out.unrealized[i]
		observe(s.PositionSize + out.pnl[i])
	}
	if open {
		settle := 0.0
		switch {
		case *m.Winner == store.OutcomeFiftyFifty:
			settle = 0.5
		case (*m.Winner == store.OutcomeUp) == (s.Side == SideUp):
			settle = 1
		}
		pnl := shares*(settle-entryFill) - entryFee
		realized += pnl
		event(TradeExit, ReasonMarketEnd, n, settle, settle, shares, 0, pnl)
		observe(s.PositionSize + realized)
	}
	return out
}

// decimalRat is x, a recorded price, as the decimal it was written as:
// to 10 decimals, which no recorded price exceeds (0.33999999999999997,
// a float sum's neighbour, is 0.34).
func decimalRat(x float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(x, 'f', 10, 64))
	return r
}

// refField is DESIGN 6's fields beyond SPEC's five at snapshot i, written
// from the text: ok is false for SPEC's own fields, and a field without a
// value is NaN.
func refField(m store.Market, snaps []store.Snapshot, trades []store.MarketTrade, i int, f string) (float64, bool) {
	sn := snaps[i]
	nan := math.NaN()
	outcome := func(up bool) (b *store.Book, price float64, name string) {
		if up {
			return sn.BookUp, sn.PriceUp, store.OutcomeUp
		}
		return sn.BookDown, sn.PriceDown, store.OutcomeDown
	}
	type top struct {
		bid, ask       float64
		hasBid, hasAsk bool
		bids, asks     float64
	}
	topOf := func(b *store.Book) (t top) {
		if b == nil {
			return t
		}
		for _, l := range b.Bids {
			if l.Size > 0 && !math.IsInf(l.Price, 0) && !math.IsNaN(l.Price) {
				if !t.hasBid {
					t.bid, t.hasBid = l.Price, true
				}
				t.bids += l.Size
			}
		}
		for _, l := range b.Asks {
			if l.Size > 0 && !math.IsInf(l.Price, 0) && !math.IsNaN(l.Price) {
				if !t.hasAsk {
					t.ask, t.hasAsk = l.Price, true
				}
				t.asks += l.Size
			}
		}
		return t
	}
	lastTrade := func(name string) (float64, bool) {
		p, ok := 0.0, false
		for _, tr := range trades {
			if tr.Outcome == name && !tr.Time.After(sn.Time) {
				p, ok = tr.Price, true
			}
		}
		return p, ok
	}
	var up bool
	switch f {
	case FieldBidUp, FieldMidUp, FieldDisplayUp, FieldImbalanceUp:
		up = true
	case FieldBidDown, FieldMidDown, FieldDisplayDown, FieldImbalanceDown:
	case FieldTimeRemaining:
		return m.EndTime.Sub(sn.Time).Seconds(), true
	case FieldCoinMovePct:
		var base float64
		switch {
		case m.PriceToBeat != nil && *m.PriceToBeat > 0:
			base = *m.PriceToBeat
		case m.CoinPriceStart != nil && *m.CoinPriceStart > 0:
			base = *m.CoinPriceStart
		case snaps[0].CoinPrice > 0:
			base = snaps[0].CoinPrice
		default:
			return nan, true
		}
		return 100 * (sn.CoinPrice - base) / base, true
	case FieldCoinReturn60s:
		back := -1
		for j := 0; j <= i; j++ {
			if !snaps[j].Time.After(sn.Time.Add(-60 * time.Second)) {
				back = j
			}
		}
		if back < 0 || snaps[back].CoinPrice == 0 {
			return nan, true
		}
		return 100 * (sn.CoinPrice - snaps[back].CoinPrice) / snaps[back].CoinPrice, true
	default:
		return 0, false
	}
	b, price, name := outcome(up)
	t := topOf(b)
	mid := price
	if t.hasBid && t.hasAsk {
		// The decimal mid of the recorded prices, as the float nearest it.
		mid, _ = new(big.Rat).Quo(new(big.Rat).Add(decimalRat(t.bid), decimalRat(t.ask)), big.NewRat(2, 1)).Float64()
	}
	switch f {
	case FieldBidUp, FieldBidDown:
		if t.hasBid {
			return t.bid, true
		}
		return price, true
	case FieldMidUp, FieldMidDown:
		return mid, true
	case FieldDisplayUp, FieldDisplayDown:
		if t.hasBid && t.hasAsk && t.ask-t.bid <= 0.10+1e-9 {
			return mid, true
		}
		if p, ok := lastTrade(name); ok {
			return p, true
		}
		return mid, true
	}
	if t.bids+t.asks == 0 {
		return nan, true
	}
	return (t.bids - t.asks) / (t.bids + t.asks), true
}

// refHolds is DESIGN 6's condition test at snapshot i, from the text: a
// field's value (SPEC's five, or refField's), compared as the operator says;
// on the first snapshot nothing crosses.
func refHolds(m store.Market, snaps []store.Snapshot, trades []store.MarketTrade) func(i int, c Condition) bool {
	value := func(i int, f string) float64 {
		if v, ok := refField(m, snaps, trades, i, f); ok {
			return v
		}
		sn := snaps[i]
		switch f {
		case FieldPriceUp:
			return sn.PriceUp
		case FieldPriceDown:
			return sn.PriceDown
		case FieldCoinPrice:
			return sn.CoinPrice
		case FieldSpread:
			// The decimal difference of the recorded prices, as the
			// float nearest it.
			d, _ := new(big.Rat).Sub(decimalRat(sn.PriceUp), decimalRat(sn.PriceDown)).Float64()
			return math.Abs(d)
		}
		span := m.EndTime.Sub(m.StartTime)
		if span <= 0 {
			return 0
		}
		return float64(m.EndTime.Sub(sn.Time)) * 100 / float64(span) // DESIGN 6, as written
	}
	return func(i int, c Condition) bool {
		v, x := value(i, c.Field), c.Value
		switch c.Operator {
		case OpLess:
			return v < x
		case OpGreater:
			return v > x
		case OpLessOrEqual:
			return v <= x
		case OpGreaterOrEqual:
			return v >= x
		case OpEqual:
			return math.Abs(v-x) <= 1e-9
		case OpCrossesAbove:
			return i > 0 && value(i-1, c.Field) <= x && v > x
		case OpCrossesBelow:
			return i > 0 && value(i-1, c.Field) >= x && v < x
		}
		panic("operator " + c.Operator)
	}
}

// propertyCases is how many random cases a property test draws: full
// without -race, half under it (make test), a few with -short.
func propertyCases(full, short int) int {
	switch {
	case testing.Short():
		return short
	case raceEnabled:
		return full / 2
	}
	return full
}
