package stats

// TradeSums is what the per-trade statistics (ev_ci95, sqn, calibration
// and brier_*) read of a set of round trips, in a form of fixed size that
// adds up: a shard keeps a market's sums in place of its trades, which a
// strategy trading on every other snapshot of a 24hr market makes by the
// hundred thousand, for every trial of a sweep.
type TradeSums struct {
	// N counts the round trips; Mean is the mean of their pnl and M2 the
	// sum of squared deviations from it (Welford's running form, added
	// by Chan's rule), from which the interval's sd comes.
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	M2   float64 `json:"m2"`
	// SumSq is Σ pnl², summed in the trades' order. Stored shards carry
	// it; the sqn objective reads Mean and M2 instead (Tally), whose
	// spread is exactly 0 for trades of one pnl.
	SumSq float64 `json:"sum_sq"`
	// Buckets are the calibration buckets' sums, [0, 0.1) … [0.9, 1.0]
	// by entry fill price.
	Buckets [10]BucketSums `json:"buckets"`
	// SqErrEntry and SqErrMid are Σ (entry price − won)² and
	// Σ (entry mid − won)², the Brier scores' sums.
	SqErrEntry float64 `json:"sq_err_entry"`
	SqErrMid   float64 `json:"sq_err_mid"`
}

// BucketSums is one calibration bucket's entries, and their entry prices
// and outcomes (Won) summed.
type BucketSums struct {
	N     int     `json:"n"`
	Price float64 `json:"price"`
	Won   float64 `json:"won"`
}

// SumTrades is the trades' sums.
func SumTrades(trades []Trade) TradeSums {
	var s TradeSums
	for _, t := range trades {
		s.AddTrade(t)
	}
	return s
}

// AddTrade adds one round trip.
func (s *TradeSums) AddTrade(t Trade) {
	s.N++
	d := t.PnL - s.Mean
	s.Mean += d / float64(s.N)
	s.M2 += d * (t.PnL - s.Mean)
	s.SumSq += t.PnL * t.PnL
	b := &s.Buckets[bucketOf(t.EntryPrice)]
	b.N++
	b.Price += t.EntryPrice
	b.Won += t.Won
	s.SqErrEntry += (t.EntryPrice - t.Won) * (t.EntryPrice - t.Won)
	s.SqErrMid += (t.EntryMid - t.Won) * (t.EntryMid - t.Won)
}

// Add is the sums of the trades of s and of u together.
func (s TradeSums) Add(u TradeSums) TradeSums {
	switch {
	case u.N == 0:
		return s
	case s.N == 0:
		return u
	}
	n := s.N + u.N
	d := u.Mean - s.Mean
	out := TradeSums{N: n,
		Mean:       s.Mean + d*float64(u.N)/float64(n),
		M2:         s.M2 + u.M2 + d*d*float64(s.N)*float64(u.N)/float64(n),
		SumSq:      s.SumSq + u.SumSq,
		SqErrEntry: s.SqErrEntry + u.SqErrEntry,
		SqErrMid:   s.SqErrMid + u.SqErrMid,
	}
	for k := range out.Buckets {
		a, b := s.Buckets[k], u.Buckets[k]
		out.Buckets[k] = BucketSums{N: a.N + b.N, Price: a.Price + b.Price, Won: a.Won + b.Won}
	}
	return out
}

// EV is the expectancy of the trades (see EV).
func (s TradeSums) EV() Expectancy {
	if s.N == 0 {
		return Expectancy{}
	}
	if s.N < 2 {
		return Expectancy{Mean: finite(s.Mean)}
	}
	return expectancy(float64(s.N), s.Mean, sqrtNonNeg(s.M2/float64(s.N-1)))
}

// Calibration is Calibration of the trades.
func (s TradeSums) Calibration() (buckets []Bucket, brierEntry, brierMarket *float64) {
	buckets = make([]Bucket, len(s.Buckets))
	for k, b := range s.Buckets {
		buckets[k].From, buckets[k].To = float64(k)/10, float64(k+1)/10
		buckets[k].Entries = b.N
		if n := float64(b.N); n > 0 {
			buckets[k].MeanPrice = finite(b.Price / n)
			buckets[k].SideWon = finite(b.Won / n)
			buckets[k].SideWonCI95 = Wilson(b.Won, n)
		}
	}
	if n := float64(s.N); n > 0 {
		brierEntry, brierMarket = finite(s.SqErrEntry/n), finite(s.SqErrMid/n)
	}
	return buckets, brierEntry, brierMarket
}

// bucketOf is the calibration bucket of an entry price: the buckets whose
// lower bound the price reaches, less one (a price outside [0, 1] in the
// nearest end bucket).
func bucketOf(price float64) int {
	k := 0
	for k < 9 && price >= float64(k+1)/10 {
		k++
	}
	return k
}
