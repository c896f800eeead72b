package stats

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Market is one market's replay as the statistics read it.
type Market struct {
	Slug string
	// End is the market's end_time; zero when unknown, which leaves the
	// daily figures and the portfolio drawdown null.
	End time.Time
	// PnL and Fees are the replay's total_pnl and total_fees.
	PnL, Fees float64
	// NTrades counts the round trips, Wins those with a positive pnl (the
	// replay's total_trades and winning_trades).
	NTrades, Wins int
	// Trades are the round trips themselves, in order, when the caller
	// has them, or Sums their sums (a shard keeps those): neither, or a
	// count other than NTrades, leaves the figures that need them null
	// (ev_ci95, sqn, calibration, brier_*). Sums wins over Trades.
	Trades []Trade
	Sums   *TradeSums
	// PositionSize is the positionSize of the strategy that replayed the
	// market, which scales its pnl into the day's return (daily); 0 is
	// Aggregate's. Markets of one summary may differ in it: a walk
	// forward's test path joins each fold's chosen trial, and a sweep
	// may sweep /positionSize.
	PositionSize float64
}

// detailed reports whether m carries all its trades, or their sums.
func (m Market) detailed() bool {
	if m.Sums != nil {
		return m.Sums.N == m.NTrades
	}
	return len(m.Trades) == m.NTrades
}

// tradeSums is the sums of m's trades.
func (m Market) tradeSums() TradeSums {
	if m.Sums != nil {
		return *m.Sums
	}
	return SumTrades(m.Trades)
}

// Trade is one round trip.
type Trade struct {
	// PnL is the trade's pnl, fees included (the exit's position_pnl).
	PnL float64
	// EntryPrice is the entry's fill price per share, the probability
	// the strategy paid for its side.
	EntryPrice float64
	// EntryMid is the side's mid, (best bid + best ask)/2, at the entry
	// snapshot: the market's own forecast then. (A replay's entry event
	// carries the side's recorded price, its best ask, not the mid.)
	EntryMid float64
	// Won is 1 when the side bought won the market, 0 when it lost, 0.5
	// for a 50-50 resolution.
	Won float64
}

// Summary is DESIGN 14's aggregate statistics of a strategy over markets.
type Summary struct {
	NMarkets       int `json:"n_markets" doc:"Markets replayed."`
	NMarketsTraded int `json:"n_markets_traded" doc:"Markets with at least one trade."`
	NTrades        int `json:"n_trades" doc:"Round trips."`
	// TotalPnL and TotalFees saturate at ±math.MaxFloat64 rather than
	// overflow.
	TotalPnL  float64  `json:"total_pnl"`
	TotalFees float64  `json:"total_fees"`
	WinRate   *float64 `json:"win_rate" doc:"Winning trades over trades, ×100; null without trades."`
	Edge
}

// Edge is the statistics of a Summary beyond its counts and totals, which
// the agent's aggregate carries beside its own (DESIGN 8) figures.
type Edge struct {
	EVPerTrade      *float64      `json:"ev_per_trade" doc:"Mean pnl a trade; null without trades."`
	EVCI95          *Interval     `json:"ev_ci95" doc:"ev_per_trade ± t(0.975, n−1)·sd/√n (Student t, sd with n−1); null below 2 trades or without per-trade results."`
	SQN             *float64      `json:"sqn" doc:"√n·mean/sd of trade pnl; null below 2 trades or without per-trade results."`
	WinRateCI95     *Interval     `json:"win_rate_ci95" doc:"Wilson score interval of win_rate (z = 1.96), ×100; null without trades."`
	PnLPerMarket    *Distribution `json:"pnl_per_market" doc:"Mean, sd (n−1), p5, p50 and p95 (linear interpolation) of the traded markets' pnl; null without a traded market."`
	SharpePerMarket *float64      `json:"sharpe_per_market" doc:"pnl_per_market's mean/sd; null below 2 traded markets or with no spread."`
	Daily           []Day         `json:"daily" doc:"pnl per UTC day of the markets' end_time, oldest first; null when an end_time is unknown."`
	SharpeDailyAnn  *float64      `json:"sharpe_daily_ann" doc:"mean/sd of day pnl / positionSize (each market's own, where a walk forward's test path joins trials of different stakes), ×√365; null below 20 days."`
	SortinoDailyAnn *float64      `json:"sortino_daily_ann" doc:"mean of day pnl / positionSize (as sharpe_daily_ann) over √mean(min(r,0)²), ×√365; null below 20 days or without a losing day."`
	// PortfolioMaxDrawdown is the largest fall of the markets' cumulative
	// pnl, from 0 and in end_time order (a tie in input order).
	PortfolioMaxDrawdown *float64 `json:"portfolio_max_drawdown" doc:"Largest fall of the markets' cumulative pnl in end_time order; null when an end_time is unknown."`
	Calibration          []Bucket `json:"calibration" doc:"Ten buckets of entry fill price; null without trades or per-trade results."`
	BrierEntry           *float64 `json:"brier_entry" doc:"Mean (entry fill price − won)²; null without trades or per-trade results."`
	BrierMarket          *float64 `json:"brier_market" doc:"Mean (the side's mid at the entry snapshot − won)², the market's own forecast; null as brier_entry."`
	PSR0                 *float64 `json:"psr0" doc:"Probabilistic Sharpe ratio of sharpe_per_market against 0; null when sharpe_per_market is."`
}

// Day is one UTC day's markets.
type Day struct {
	Date    string  `json:"date" doc:"UTC date, YYYY-MM-DD."`
	Markets int     `json:"markets"`
	PnL     float64 `json:"pnl"`
}

// Bucket is one tenth of entry prices: [From, To), the last [0.9, 1.0].
type Bucket struct {
	From    float64 `json:"from" doc:"Lowest entry fill price of the bucket."`
	To      float64 `json:"to" doc:"Entry fill prices below this (up to 1 in the last bucket)."`
	Entries int     `json:"entries"`
	// MeanPrice is the mean entry fill price, SideWon the share of
	// entries whose side won (a 50-50 counts half) with its Wilson
	// interval; nil for an empty bucket.
	MeanPrice   *float64  `json:"mean_price" doc:"Mean entry fill price; null for an empty bucket."`
	SideWon     *float64  `json:"side_won" doc:"Share of entries whose side won (a 50-50 counts half), 0 to 1; null for an empty bucket."`
	SideWonCI95 *Interval `json:"side_won_ci95" doc:"Wilson score interval of side_won (z = 1.96); null for an empty bucket."`
}

// MinDays is how many days the daily ratios need (DESIGN 14).
const MinDays = 20

// Aggregate computes every statistic of DESIGN 14 over the markets'
// replays (each replayed once; failed replays left out), positionSize the
// strategy's, which scales the daily returns. Every figure is finite,
// rounded to 6 decimals, or nil where DESIGN 14 or the data leave it
// undefined.
func Aggregate(markets []Market, positionSize float64) Summary {
	s := Summary{NMarkets: len(markets)}
	var traded []float64
	detailed := true
	wins := 0
	for _, m := range markets {
		s.NTrades += m.NTrades
		wins += m.Wins
		s.TotalPnL += m.PnL
		s.TotalFees += m.Fees
		if m.NTrades > 0 {
			s.NMarketsTraded++
			traded = append(traded, m.PnL)
		}
		detailed = detailed && m.detailed()
	}
	s.TotalPnL, s.TotalFees = saturate(s.TotalPnL), saturate(s.TotalFees)
	if s.NTrades > 0 {
		s.WinRate = finite(100 * float64(wins) / float64(s.NTrades))
		if ci := Wilson(float64(wins), float64(s.NTrades)); ci != nil {
			s.WinRateCI95 = &Interval{100 * ci[0], 100 * ci[1]}
		}
	}
	if detailed && s.NTrades > 0 {
		var sums TradeSums
		for _, m := range markets {
			sums = sums.Add(m.tradeSums())
		}
		ev := sums.EV()
		s.EVPerTrade, s.EVCI95, s.SQN = ev.Mean, ev.CI95, ev.SQN
		s.Calibration, s.BrierEntry, s.BrierMarket = sums.Calibration()
	} else if s.NTrades > 0 {
		s.EVPerTrade = finite(s.TotalPnL / float64(s.NTrades))
	}
	s.PnLPerMarket = Describe(traded)
	s.SharpePerMarket = Sharpe(traded)
	s.PSR0 = PSR0(traded)
	s.Daily, s.SharpeDailyAnn, s.SortinoDailyAnn = daily(markets, positionSize)
	s.PortfolioMaxDrawdown = portfolioDrawdown(markets)
	s.round()
	return s
}

// daily groups the markets by the UTC date of their end time and, with
// MinDays days or more, annualizes the days' returns r = pnl/positionSize:
// Sharpe mean(r)/sd(r)·√365 (sd with n − 1), Sortino
// mean(r)/√mean(min(r, 0)²)·√365. A market with a PositionSize of its own
// adds its pnl over that to its day's return, where markets of one summary
// differ in it (a walk forward's test path of the trials its folds chose,
// of a sweep over /positionSize): a day of a fold that staked ten times as
// much is not ten times the return.
func daily(markets []Market, positionSize float64) (days []Day, sharpe, sortino *float64) {
	if len(markets) == 0 {
		return nil, nil, nil
	}
	sizeOf := func(m Market) float64 {
		if m.PositionSize != 0 {
			return m.PositionSize
		}
		return positionSize
	}
	uniform := true                // one size for every market: r is the day's pnl over it
	byDate := make(map[string]int) // index into days
	var ret []float64              // per day, Σ pnl/size of its markets
	for _, m := range markets {
		if m.End.IsZero() {
			return nil, nil, nil
		}
		date := m.End.UTC().Format(time.DateOnly)
		i, ok := byDate[date]
		if !ok {
			i = len(days)
			byDate[date] = i
			days = append(days, Day{Date: date})
			ret = append(ret, 0)
		}
		days[i].Markets++
		days[i].PnL = saturate(days[i].PnL + m.PnL)
		size := sizeOf(m)
		uniform = uniform && size == sizeOf(markets[0])
		ret[i] = saturate(ret[i] + m.PnL/size)
	}
	order := make([]int, len(days))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(days[a].Date, days[b].Date) })
	sorted := make([]Day, len(days))
	r := make([]float64, len(days))
	for k, i := range order {
		sorted[k], r[k] = days[i], ret[i]
	}
	days = sorted
	if len(days) < MinDays {
		return days, nil, nil
	}
	for _, m := range markets {
		if size := sizeOf(m); !(size > 0) || math.IsInf(size, 0) {
			return days, nil, nil
		}
	}
	if uniform {
		for i, d := range days {
			r[i] = d.PnL / sizeOf(markets[0])
		}
	}
	var down float64
	mean, sd, _ := meanSD(r)
	s := scale(r) // √mean(min(r,0)²) without overflowing the squares
	for _, x := range r {
		if x < 0 {
			down += (x / s) * (x / s)
		}
	}
	ann := math.Sqrt(365)
	if sd > 0 {
		sharpe = finite(mean / sd * ann)
	}
	if down > 0 {
		sortino = finite(mean / (math.Sqrt(down/float64(len(r))) * s) * ann)
	}
	return days, sharpe, sortino
}

// portfolioDrawdown is the largest fall of the cumulative pnl from its
// running peak (which starts at 0), the markets in end_time order.
func portfolioDrawdown(markets []Market) *float64 {
	if len(markets) == 0 {
		return nil
	}
	ordered := slices.Clone(markets)
	for _, m := range ordered {
		if m.End.IsZero() {
			return nil
		}
	}
	slices.SortStableFunc(ordered, func(a, b Market) int { return a.End.Compare(b.End) })
	var cum, peak, dd float64
	for _, m := range ordered {
		cum += m.PnL
		peak = math.Max(peak, cum)
		dd = math.Max(dd, peak-cum)
	}
	return finite(dd)
}

// Calibration sorts the trades' entries into ten buckets of entry fill
// price, [0, 0.1) … [0.8, 0.9) and [0.9, 1.0] (a price outside [0, 1] in
// the nearest end bucket), each with its entries, mean price and the share
// whose side won (Won summed, so a 50-50 counts half) with its Wilson
// interval; and the Brier scores of the entry prices, mean (price − won)²,
// and of the side's mid at the entry snapshots, the same with EntryMid
// (nil without trades).
func Calibration(trades []Trade) (buckets []Bucket, brierEntry, brierMarket *float64) {
	return SumTrades(trades).Calibration()
}

// round rounds every figure to 6 decimals at the edge, as the replay
// rounds money, and drops any that is not finite.
func (s *Summary) round() {
	s.TotalPnL, s.TotalFees = round6(s.TotalPnL), round6(s.TotalFees)
	for _, p := range []**float64{&s.WinRate, &s.EVPerTrade, &s.SQN, &s.SharpePerMarket, &s.SharpeDailyAnn,
		&s.SortinoDailyAnn, &s.PortfolioMaxDrawdown, &s.BrierEntry, &s.BrierMarket, &s.PSR0} {
		*p = roundPtr(*p)
	}
	for _, p := range []**Interval{&s.EVCI95, &s.WinRateCI95} {
		*p = roundInterval(*p)
	}
	if d := s.PnLPerMarket; d != nil {
		d.Mean, d.P5, d.P50, d.P95 = round6(d.Mean), round6(d.P5), round6(d.P50), round6(d.P95)
		d.SD = roundPtr(d.SD)
	}
	for i := range s.Daily {
		s.Daily[i].PnL = round6(s.Daily[i].PnL)
	}
	for i := range s.Calibration {
		b := &s.Calibration[i]
		b.MeanPrice, b.SideWon, b.SideWonCI95 = roundPtr(b.MeanPrice), roundPtr(b.SideWon), roundInterval(b.SideWonCI95)
	}
}

func roundPtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return finite(round6(*p))
}

func roundInterval(p *Interval) *Interval {
	if p == nil || finite(p[0]) == nil || finite(p[1]) == nil {
		return nil
	}
	return &Interval{round6(p[0]), round6(p[1])}
}

// round6 rounds to 6 decimals (no −0); a magnitude past 1e15 has no
// sixth decimal to round and is left as it is.
func round6(x float64) float64 {
	if math.Abs(x) >= 1e15 || math.IsNaN(x) {
		return x
	}
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0
	}
	return r
}

// saturate clamps an overflowed sum to the largest finite float64.
func saturate(x float64) float64 {
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, x))
}
